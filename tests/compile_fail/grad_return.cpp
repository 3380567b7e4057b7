// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::grad.f.: f must return an xf::tensor
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto g = xf::grad([](const xf::tensor& t) { return t.dim() * 1.0; })(x);
#else
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum(t); })(x); (void)g;
#endif
  return 0;
}
