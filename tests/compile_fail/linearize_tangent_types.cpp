// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: jvp_fn takes one tangent per primal
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto [y, jf] = xf::linearize([](const xf::tensor& a) { return a; }, x); auto t = jf(x, x);
#else
  auto [y, jf] = xf::linearize([](const xf::tensor& a) { return a; }, x); auto t = jf(x); (void)t;
#endif
  return 0;
}
