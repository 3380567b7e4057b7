// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: state must be the xf::optim::sgd_state<Params>
#include <xfunc/optim.hpp>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  const xf::tensor params{1.0, 2.0}, grads{0.1, 0.2};
  const xf::optim::sgd opt(0.1, 0.9);
#ifdef XFUNC_CF_FAIL
  const auto state = xf::optim::adam(1e-3).init(params);  // another optimizer's state
#else
  const auto state = opt.init(params);
#endif
  auto [new_params, new_state] = opt.update(params, grads, state);
  (void)new_params, (void)new_state;
  return 0;
}
