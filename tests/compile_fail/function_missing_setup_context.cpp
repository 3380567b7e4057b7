// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::autograd::function<Derived>::apply: Derived must define static void setup_context
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
namespace cf_function_missing_setup_context {
struct twice : xf::autograd::function<twice> {
  static xf::tensor forward(const xf::tensor& x) { return x * 2.0; }
#ifndef XFUNC_CF_FAIL
  static void setup_context(xf::autograd::context&, const std::tuple<xf::tensor>&, const xf::tensor&) {}
#endif
  static xf::tensor backward(xf::autograd::context&, const xf::tensor& g) { return g * 2.0; }
};
}  // namespace cf_function_missing_setup_context
int main() {
  xf::tensor x{1.0, 2.0};
  // a plain statement: the static_assert is the only error (no follow-up on the result)
  (void)cf_function_missing_setup_context::twice::apply(x);
  return 0;
}
