// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::vjp.f, xf::has_aux, ....: f must return std::pair<Out, Aux>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto r = xf::vjp([](const xf::tensor& a) { return a * 2.0; }, xf::has_aux, x);
#else
  auto r = xf::vjp([](const xf::tensor& a) { return std::pair{a * 2.0, a}; }, xf::has_aux, x); (void)r;
#endif
  return 0;
}
