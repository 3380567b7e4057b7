// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::functionalize.f, opts....: the only option is xf::remove
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto f = xf::functionalize([](const xf::tensor& a) { return a * 2.0; }, xf::has_aux);
#else
  auto f = xf::functionalize([](const xf::tensor& a) { return a * 2.0; }, xf::remove::mutations_and_views); (void)f;
#endif
  return 0;
}
