// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: an argnum appears twice
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto g = xf::grad([](const xf::tensor& a, const xf::tensor& b) { return xf::sum(a * b); }, xf::argnums<0, -2>)(x, x);
#else
  auto g = xf::grad([](const xf::tensor& a, const xf::tensor& b) { return xf::sum(a * b); }, xf::argnums<0, -1>)(x, x); (void)g;
#endif
  return 0;
}
