// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: params must be a pytree of xf::tensor leaves
#include <xfunc/optim.hpp>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  const xf::optim::adamw opt(1e-3);
#ifdef XFUNC_CF_FAIL
  const auto state = opt.init(std::vector<double>{1.0, 2.0});  // no tensor leaves
#else
  const auto state = opt.init(std::vector<xf::tensor>{xf::tensor{1.0, 2.0}});
#endif
  (void)state;
  return 0;
}
