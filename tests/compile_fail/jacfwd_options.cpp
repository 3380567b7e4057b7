// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::jacfwd.f, opts....: the only options are xf::argnums
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto j = xf::jacfwd([](const xf::tensor& a) { return a * 2.0; }, xf::in_dims(0));
#else
  auto j = xf::jacfwd([](const xf::tensor& a) { return a * 2.0; }, xf::randomness::same); (void)j;
#endif
  return 0;
}
