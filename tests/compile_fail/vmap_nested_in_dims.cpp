// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: nested in_dims does not match the argument
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto y = xf::vmap([](const std::tuple<xf::tensor, xf::tensor>& p) { return std::get<0>(p); }, xf::in_dims(xf::in_dims(0, 0, 0)))(std::tuple{x, x});
#else
  auto y = xf::vmap([](const std::tuple<xf::tensor, xf::tensor>& p) { return std::get<0>(p); }, xf::in_dims(xf::in_dims(0, 0)))(std::tuple{x, x}); (void)y;
#endif
  return 0;
}
