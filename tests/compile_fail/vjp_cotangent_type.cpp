// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: the cotangent passed to vjp_fn must have the same type
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto [o, pb] = xf::vjp([](const xf::tensor& a) { return a * 2.0; }, x); auto g = pb(std::tuple{o});
#else
  auto [o, pb] = xf::vjp([](const xf::tensor& a) { return a * 2.0; }, x); auto g = pb(o); (void)g;
#endif
  return 0;
}
