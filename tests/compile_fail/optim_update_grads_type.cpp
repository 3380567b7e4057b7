// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: grads must have the pytree type of params
#include <xfunc/optim.hpp>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  const std::pair<xf::tensor, xf::tensor> params{xf::tensor{1.0, 2.0}, xf::tensor{3.0}};
  const xf::optim::adam opt(1e-3);
  const auto state = opt.init(params);
#ifdef XFUNC_CF_FAIL
  const std::tuple<xf::tensor, xf::tensor> grads{xf::tensor{0.1, 0.2}, xf::tensor{0.3}};  // a tuple, not a pair
#else
  const std::pair<xf::tensor, xf::tensor> grads{xf::tensor{0.1, 0.2}, xf::tensor{0.3}};
#endif
  auto [new_params, new_state] = opt.update(params, grads, state);
  (void)new_params, (void)new_state;
  return 0;
}
