// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::vmap.f, opts....: the only options are xf::in_dims
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto v = xf::vmap([](const xf::tensor& a) { return a * 2.0; }, xf::argnums<0>);
#else
  auto v = xf::vmap([](const xf::tensor& a) { return a * 2.0; }, xf::chunk_size(1)); (void)v;
#endif
  return 0;
}
