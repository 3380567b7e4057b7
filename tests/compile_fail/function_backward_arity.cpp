// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::autograd::function<Derived>::apply: backward must return one gradient per tensor argument of forward
#include <tuple>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
namespace cf_function_backward_arity {
struct product : xf::autograd::function<product> {
  static xf::tensor forward(const xf::tensor& x, const xf::tensor& y) { return x * y; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<xf::tensor, xf::tensor>& in, const xf::tensor&) {
    ctx.save_for_backward(std::get<0>(in), std::get<1>(in));
  }
#ifdef XFUNC_CF_FAIL
  // one gradient for two tensor arguments
  static xf::tensor backward(xf::autograd::context& ctx, const xf::tensor& g) { return g * ctx.saved_tensors()[1]; }
#else
  static std::tuple<xf::tensor, xf::tensor> backward(xf::autograd::context& ctx, const xf::tensor& g) {
    const auto s = ctx.saved_tensors();
    return {g * s[1], g * s[0]};
  }
#endif
};
}  // namespace cf_function_backward_arity
int main() {
  xf::tensor x{1.0, 2.0};
  // a plain statement: the static_assert is the only error (no follow-up on the result)
  (void)cf_function_backward_arity::product::apply(x, x);
  return 0;
}
