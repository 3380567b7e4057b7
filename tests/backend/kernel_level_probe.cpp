// Prints the SIMD target of the kernel library that the dynamic loader chose for this run, then
// the program's own (compiled for the build's baseline): kernel_levels.sh checks both.
#include <xsimd/xsimd.hpp>
#include <xfunc/xfunc.hpp>

#include <cstdio>

int main() {
  std::printf("%s %s\n", xfunc::cpu_simd_target(), xsimd::default_arch::name());
  return 0;
}
