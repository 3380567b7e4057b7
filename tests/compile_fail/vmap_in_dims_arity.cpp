// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: in_dims needs exactly one entry per positional argument
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto y = xf::vmap([](const xf::tensor& a, const xf::tensor& b) { return a * b; }, xf::in_dims(0))(x, x);
#else
  auto y = xf::vmap([](const xf::tensor& a, const xf::tensor& b) { return a * b; }, xf::in_dims(0, xf::none))(x, x); (void)y;
#endif
  return 0;
}
