// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::grad.f, opts....: the only options are xf::argnums
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto g = xf::grad([](const xf::tensor& a) { return xf::sum(a); }, xf::chunk_size(2));  // an option grad would ignore
#else
  auto g = xf::grad([](const xf::tensor& a) { return xf::sum(a); }, xf::argnums<0>); (void)g;
#endif
  return 0;
}
