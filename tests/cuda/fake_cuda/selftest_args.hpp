#pragma once
// The argument structs of the self-test's kernels, shared by selftest_kernels.cpp (the kernels)
// and selftest.cpp (which launches them).
namespace fake_cuda_selftest {
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
}  // namespace fake_cuda_selftest
