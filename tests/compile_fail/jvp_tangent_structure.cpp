// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: tangents must have the same structure as primals
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto r = xf::jvp([](const xf::tensor& a, const xf::tensor& b) { return a * b; }, std::tuple{x, x}, x);
#else
  auto r = xf::jvp([](const xf::tensor& a, const xf::tensor& b) { return a * b; }, std::tuple{x, x}, std::tuple{x, x}); (void)r;
#endif
  return 0;
}
