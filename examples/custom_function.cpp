// Custom autograd functions (xf::autograd::function): a computation whose derivative we state
// ourselves because the one autograd would derive is numerically poor.
//   softplus(x) = log(1 + exp(x)), computed stably as relu(x) + log1p(exp(-|x|)), with the
//   backward g * sigmoid(x) and a generated vmap rule;
//   logsumexp over the last dim, with a backward, a jvp and a hand-written vmap rule.
// The naive composites overflow at x = 1000 (inf values, nan gradients); the custom functions
// do not, and their rules hold under grad, vmap(grad), jacfwd and hessian. Every result is
// checked; the program exits non-zero if one is wrong.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <xfunc/xfunc.hpp>

#include "example_check.hpp"

namespace xf = xfunc;

namespace {
using example::check;
using example::failures;

bool all_finite(const xf::tensor& t) {
  for (double v : xf::to_xtensor<double>(t))
    if (!std::isfinite(v)) return false;
  return true;
}

// softplus with a stable forward and the backward g * sigmoid(x).
struct softplus : xf::autograd::function<softplus> {
  static constexpr const char* name = "mylib::softplus";  // used in error messages (optional)

  static xf::tensor forward(const xf::tensor& x) { return xf::relu(x) + xf::log1p(xf::exp(-xf::abs(x))); }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<xf::tensor>& inputs, const xf::tensor&) {
    ctx.save_for_backward(std::get<0>(inputs));
  }
  // Written with xfunc ops, so it is differentiable (hessian) and batchable (vmap) in turn.
  static xf::tensor backward(xf::autograd::context& ctx, const xf::tensor& g) {
    return g * xf::sigmoid(ctx.saved_tensors()[0]);
  }
  // No jvp: forward mode transposes backward. No hand-written vmap rule: forward, backward
  // (and jvp) are batched by running them under vmap.
  static constexpr bool generate_vmap_rule = true;
};

// logsumexp over the last dim: stable forward, backward g * softmax(x), jvp sum(softmax(x) * t),
// and a manual vmap rule.
struct logsumexp_last : xf::autograd::function<logsumexp_last> {
  static constexpr const char* name = "mylib::logsumexp_last";

  static xf::tensor forward(const xf::tensor& x) {
    const xf::tensor m = xf::amax(x, {-1}, /*keepdim=*/true);
    return m.squeeze(-1) + xf::log(xf::sum(xf::exp(x - m), {-1}));
  }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<xf::tensor>& inputs, const xf::tensor& out) {
    ctx.save_for_backward(std::get<0>(inputs), out);
    ctx.save_for_forward(std::get<0>(inputs), out);
  }
  static xf::tensor softmax_of(const std::vector<xf::tensor>& saved) {
    return xf::exp(saved[0] - saved[1].unsqueeze(-1));
  }
  static xf::tensor backward(xf::autograd::context& ctx, const xf::tensor& g) {
    return g.unsqueeze(-1) * softmax_of(ctx.saved_tensors());
  }
  static xf::tensor jvp(xf::autograd::context& ctx, const xf::tensor& t) {
    return xf::sum(softmax_of(ctx.saved_tensors()) * t, {-1});  // inside jvp: the save_for_forward tensors
  }
  // The rule sees the physical value and where its batch dim is. Reducing over the last dim
  // batches trivially once the batch dim is in front; the call made here lands one layer down.
  static std::pair<xf::tensor, std::optional<std::int64_t>> vmap(const xf::vmap_info&,
                                                                 const std::array<std::optional<std::int64_t>, 1>& in_dims,
                                                                 const xf::tensor& x) {
    return {apply(x.movedim(*in_dims[0], 0)), 0};
  }
};

}  // namespace

int main() try {
  const xf::tensor x{-1000.0, -3.0, 0.0, 2.0, 1000.0};

  // 1. Stability: the naive composite overflows at 1000, the custom function does not.
  std::cout << "1. softplus: stable forward\n";
  auto naive = [](const xf::tensor& t) { return xf::log(1.0 + xf::exp(t)); };
  const xf::tensor y_naive = naive(x), y = softplus::apply(x);
  std::cout << "   naive  = " << y_naive << "\n   custom = " << y << '\n';
  check(!all_finite(y_naive), "naive log(1 + exp(x)) overflows at x = 1000");
  check(all_finite(y), "softplus::apply(x) is finite");
  check(xf::allclose(y.narrow(0, 4, 1), xf::tensor{1000.0}) && xf::allclose(y.narrow(0, 0, 1), xf::tensor{0.0}),
        "softplus(1000) == 1000, softplus(-1000) == 0");
  check(xf::allclose(y.narrow(0, 1, 3), naive(x.narrow(0, 1, 3))), "agrees with the naive form where it is finite");

  // 2. grad: the custom backward g * sigmoid(x); autograd through the naive form gives nan.
  std::cout << "2. grad\n";
  const xf::tensor g_naive = xf::grad([&](const xf::tensor& t) { return xf::sum(naive(t)); })(x);
  const xf::tensor g = xf::grad([](const xf::tensor& t) { return xf::sum(softplus::apply(t)); })(x);
  std::cout << "   naive grad  = " << g_naive << "\n   custom grad = " << g << '\n';
  check(!all_finite(g_naive), "autograd of the naive form is not finite at x = 1000");
  check(all_finite(g) && xf::allclose(g, xf::sigmoid(x)), "grad == sigmoid(x), finite everywhere");

  // 3. vmap(grad) with the generated vmap rule: per-example gradients of a batch.
  std::cout << "3. vmap(grad), generated vmap rule\n";
  const xf::tensor batch = xf::stack({x, 0.5 * x, -x}, 0);  // [3, 5]
  auto per_example = xf::vmap(xf::grad([](const xf::tensor& t) { return xf::sum(softplus::apply(t)); }));
  const xf::tensor pg = per_example(batch);
  check(pg.shape() == xf::shape_t{3, 5} && xf::allclose(pg, xf::sigmoid(batch)), "vmap(grad) == sigmoid per example");
  check(xf::allclose(xf::vmap([](const xf::tensor& t) { return softplus::apply(t); }, xf::in_dims(1))(batch), softplus::apply(batch).t()),
        "vmap over dim 1");

  // 4. Forward mode by transposing backward, and second derivatives.
  std::cout << "4. jacfwd and hessian (no jvp defined: backward is transposed)\n";
  const xf::tensor s = xf::sigmoid(x);
  const xf::tensor jf = xf::jacfwd([](const xf::tensor& t) { return softplus::apply(t); })(x);
  check(xf::allclose(jf, xf::eye(5, xf::f64) * s), "jacfwd == diag(sigmoid(x))");
  const xf::tensor h = xf::hessian([](const xf::tensor& t) { return xf::sum(softplus::apply(t)); })(x);
  check(all_finite(h) && xf::allclose(h, xf::eye(5, xf::f64) * (s * (1.0 - s))),
        "hessian == diag(sigmoid(x) (1 - sigmoid(x)))");

  // 5. logsumexp: stable where log(sum(exp(x))) overflows; backward, jvp and manual vmap rule.
  std::cout << "5. logsumexp_last: backward, jvp, manual vmap rule\n";
  const xf::tensor z{{1000.0, 1000.0, 998.0}, {-1.0, 0.0, 1.0}};  // [2, 3]
  const xf::tensor lse = logsumexp_last::apply(z);
  std::cout << "   naive  = " << xf::log(xf::sum(xf::exp(z), {-1})) << "\n   custom = " << lse << '\n';
  check(!all_finite(xf::log(xf::sum(xf::exp(z), {-1}))), "naive log(sum(exp(x))) overflows");
  check(xf::allclose(lse, xf::logsumexp(z, {-1})), "matches xf::logsumexp");
  auto lse_sum = [](const xf::tensor& t) { return xf::sum(logsumexp_last::apply(t)); };
  check(xf::allclose(xf::grad(lse_sum)(z), xf::softmax(z, -1)), "grad == softmax(x)");
  const xf::tensor tz = xf::ones_like(z) * xf::tensor{1.0, 2.0, 3.0};
  auto [out, tout] = xf::jvp([](const xf::tensor& t) { return logsumexp_last::apply(t); }, z, tz);
  check(xf::allclose(out, lse) && xf::allclose(tout, xf::sum(xf::softmax(z, -1) * tz, {-1})),
        "jvp uses the custom jvp: sum(softmax(x) * t)");
  const xf::tensor zb = xf::stack({z, z * 0.5, -z}, 2);  // batch along dim 2: [2, 3, 3]
  const xf::tensor vz = xf::vmap([](const xf::tensor& t) { return logsumexp_last::apply(t); }, xf::in_dims(2))(zb);
  check(vz.shape() == xf::shape_t{3, 2} && xf::allclose(vz, xf::logsumexp(zb.movedim(2, 0), {-1})),
        "vmap(in_dims(2)) through the manual rule");
  const xf::tensor vg = xf::vmap(xf::grad(lse_sum), xf::in_dims(2))(zb);
  check(vg.shape() == xf::shape_t{3, 2, 3} && xf::allclose(vg, xf::softmax(zb.movedim(2, 0), -1)),
        "vmap(grad) through the manual rule");

  std::cout << (failures == 0 ? "all checks passed\n" : "some checks FAILED\n");
  return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << '\n';
  return 1;
}
