// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: out_dims needs one entry per output
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto y = xf::vmap([](const xf::tensor& a) { return std::tuple{a, a}; }, xf::out_dims(0, 0, 0))(x);
#else
  auto y = xf::vmap([](const xf::tensor& a) { return std::tuple{a, a}; }, xf::out_dims(0, 0))(x); (void)y;
#endif
  return 0;
}
