// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: an integer in_dim is given for an argument with no tensor
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto y = xf::vmap([](const xf::tensor& a, double s) { return a * s; }, xf::in_dims(0, 0))(x, 2.0);
#else
  auto y = xf::vmap([](const xf::tensor& a, double s) { return a * s; }, xf::in_dims(0, xf::none))(x, 2.0); (void)y;
#endif
  return 0;
}
