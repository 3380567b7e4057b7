// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::jacrev.f.: f must return an xf::tensor or a std::tuple of tensors
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto j = xf::jacrev([](const xf::tensor& a) { return std::vector<xf::tensor>{a}; })(x);
#else
  auto j = xf::jacrev([](const xf::tensor& a) { return std::tuple{a, a}; })(x); (void)j;
#endif
  return 0;
}
