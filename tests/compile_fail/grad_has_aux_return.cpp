// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: f must return an xf::tensor .a 0-d floating tensor., or std::pair<xf::tensor, Aux> when xf::has_aux
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum(t); }, xf::has_aux)(x);
#else
  auto g = xf::grad([](const xf::tensor& t) { return std::pair{xf::sum(t), t}; }, xf::has_aux)(x); (void)g;
#endif
  return 0;
}
