// The self-test's kernels (selftest.cpp), written as xfunc's are (src/cuda/kernel_support.hpp)
// and compiled only into the self-test's build of the fake driver.
#include "cuda/kernel_support.hpp"

#include "selftest_args.hpp"

using fake_cuda_selftest::axpy_args;
using fake_cuda_selftest::ids_args;

// y += a * x
XFUNC_KERNEL(xf_test_axpy, axpy_args) {
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT) a.y[i] += a.a * a.x[i];
}

// records which thread ids ran: the grid-stride mapping itself
XFUNC_KERNEL(xf_test_ids, ids_args) {
  if (XFUNC_THREAD_ID < a.n) a.runs[XFUNC_THREAD_ID] += 1;
  *a.count = XFUNC_THREAD_COUNT;
}
