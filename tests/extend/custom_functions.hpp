#pragma once
// Custom functions shared by the tests of tests/extend.
#include <tuple>

#include <xfunc/xfunc.hpp>

namespace extend_tests {

/// forward x*x, but backward says d/dx = 10 x (not the true 2 x): results prove the rule is used.
/// No jvp: forward mode transposes backward (tangent 10 x t). Generated vmap rule.
struct fake_square : xfunc::autograd::function<fake_square> {
  static xfunc::tensor forward(const xfunc::tensor& x) { return x * x; }
  static void setup_context(xfunc::autograd::context& ctx, const std::tuple<xfunc::tensor>& in, const xfunc::tensor&) {
    ctx.save_for_backward(std::get<0>(in));
  }
  static xfunc::tensor backward(xfunc::autograd::context& ctx, const xfunc::tensor& g) {
    return g * 10.0 * ctx.saved_tensors()[0];
  }
  static constexpr bool generate_vmap_rule = true;
};

}  // namespace extend_tests
