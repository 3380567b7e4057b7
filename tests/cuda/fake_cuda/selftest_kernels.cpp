// The self-test's kernels (selftest.cpp), written as xfunc's are (src/cuda/kernel_support.hpp)
// and compiled only into the self-test's build of the fake driver.
#include "cuda/kernel_support.hpp"

// selftest.cpp has the same argument structs.
struct axpy_args {
  long long n;
  float a;
  const float* x;
  float* y;
};
struct ids_args {
  long long n;
  long long* runs;   // how many emulated threads had each id
  long long* count;  // the thread count each one saw (the last one's)
};

// y += a * x
XFUNC_KERNEL(xf_test_axpy, axpy_args) {
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT) a.y[i] += a.a * a.x[i];
}

// records which thread ids ran: the grid-stride mapping itself
XFUNC_KERNEL(xf_test_ids, ids_args) {
  if (XFUNC_THREAD_ID < a.n) a.runs[XFUNC_THREAD_ID] += 1;
  *a.count = XFUNC_THREAD_COUNT;
}
