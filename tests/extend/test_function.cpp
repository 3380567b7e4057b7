// xf::autograd::function (API.md §4.2): forward at depth 0; every context API (saved tensors
// for backward and forward, mark_dirty, mark_non_differentiable, materialize_grads,
// needs_input_grad, typed state); custom rules honoured under every composition (a backward
// that is deliberately not the true derivative proves the rule is used); gradcheck of correct
// functions; vmap (generated rule, manual rule, neither); tuple outputs and non-tensor
// arguments; errors; single_level_function outside a higher-order op.
#include <catch2/catch.hpp>

#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>

#include "custom_functions.hpp"

namespace xf = xfunc;
using Catch::Matchers::Contains;
using xf::tensor;

namespace {

/// Same shape and values (float64 tolerances).
bool close(const tensor& a, const tensor& b) {
  return a.defined() && b.defined() && a.shape() == b.shape() && xf::allclose(a, b, 1e-9, 1e-12);
}

tensor vec3() { return tensor{0.5, -1.0, 2.0}; }
tensor mat23() { return tensor{{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}}; }

// ---- functions --------------------------------------------------------------------------------

/// Only forward and setup_context: usable at depth 0 (and under transforms that need no rule).
struct forward_only : xf::autograd::function<forward_only> {
  static inline int forward_calls = 0;
  static tensor forward(const tensor& x) {
    ++forward_calls;
    return x * 3.0 + 1.0;
  }
  static void setup_context(xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {}
};

using extend_tests::fake_square;  // x*x with a backward of 10 x (custom_functions.hpp)

/// As fake_square, plus a jvp rule that says 7 x t (again not the truth, and unlike backward).
/// setup_context saves different tensors for backward (x) and forward (x and the output).
struct fake_square_jvp : xf::autograd::function<fake_square_jvp> {
  static inline std::size_t saved_in_backward = 0, saved_in_jvp = 0;
  static tensor forward(const tensor& x) { return x * x; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor& out) {
    ctx.save_for_backward(std::get<0>(in));
    ctx.save_for_forward(std::get<0>(in), out);
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) {
    saved_in_backward = ctx.saved_tensors().size();
    return g * 10.0 * ctx.saved_tensors()[0];
  }
  static tensor jvp(xf::autograd::context& ctx, const tensor& t) {
    const auto saved = ctx.saved_tensors();
    saved_in_jvp = saved.size();
    return t * 7.0 * saved[0];
  }
  static constexpr bool generate_vmap_rule = true;
};

/// In place: doubles its input and returns it (mark_dirty).
struct inplace_double : xf::autograd::function<inplace_double> {
  static tensor forward(const tensor& x) {
    tensor y = x;
    y.mul_(2.0);
    return y;
  }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
    ctx.mark_dirty(std::get<0>(in));
  }
  static tensor backward(xf::autograd::context&, const tensor& g) { return g * 2.0; }
};

/// inplace_double with a generated vmap rule.
struct inplace_double_batched : xf::autograd::function<inplace_double_batched> {
  static tensor forward(const tensor& x) { return inplace_double::forward(x); }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
    ctx.mark_dirty(std::get<0>(in));
  }
  static tensor backward(xf::autograd::context&, const tensor& g) { return g * 2.0; }
  static constexpr bool generate_vmap_rule = true;
};

/// Row maxima and their indices (i64), marked non-differentiable.
struct row_max : xf::autograd::function<row_max> {
  static std::tuple<tensor, tensor> forward(const tensor& x) {
    return {xf::amax(x, {-1}, false), xf::argmax(x, -1, false)};
  }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in,
                            const std::tuple<tensor, tensor>& out) {
    ctx.mark_non_differentiable(std::get<1>(out));
    ctx.save_for_backward(std::get<0>(in), std::get<1>(out));
  }
  static inline tensor index_grad;  // what backward got for the indices
  static tensor backward(xf::autograd::context& ctx, const tensor& g, const tensor& gi) {
    index_grad = gi;
    const auto s = ctx.saved_tensors();
    const tensor& x = s[0];
    const tensor onehot = xf::eq(xf::arange(x.size(-1)), s[1].unsqueeze(-1)).to(x.dtype());
    return g.unsqueeze(-1) * onehot;
  }
  static constexpr bool generate_vmap_rule = true;
};

/// (3 x, mask) where the floating mask (x > 0) is marked non-differentiable. backward adds 100
/// g_mask, which must be zeros (torch: "it's always going to be a zero tensor"); it reads g_mask
/// unconditionally, as torch users do.
struct with_mask : xf::autograd::function<with_mask> {
  static inline tensor mask_grad;
  static std::tuple<tensor, tensor> forward(const tensor& x) { return {x * 3.0, xf::gt(x, 0.0).to(x.dtype())}; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>&, const std::tuple<tensor, tensor>& out) {
    ctx.mark_non_differentiable(std::get<1>(out));
  }
  static tensor backward(xf::autograd::context&, const tensor& g, const tensor& gm) {
    mask_grad = gm;
    return g * 3.0 + gm * 100.0;
  }
};

/// (2 x, 3 x); backward records which output gradients it was given.
template <bool Materialize>
struct two_outputs : xf::autograd::function<two_outputs<Materialize>> {
  static inline bool a_defined = false, b_defined = false;
  static inline tensor b_seen;
  static std::tuple<tensor, tensor> forward(const tensor& x) { return {x * 2.0, x * 3.0}; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>&, const std::tuple<tensor, tensor>&) {
    if (!Materialize) ctx.set_materialize_grads(false);
  }
  static tensor backward(xf::autograd::context&, const tensor& ga, const tensor& gb) {
    a_defined = ga.defined();
    b_defined = gb.defined();
    b_seen = gb;
    tensor r;
    if (ga.defined()) r = ga * 2.0;
    if (gb.defined()) r = r.defined() ? r + gb * 3.0 : gb * 3.0;
    return r;
  }
};

/// x * s + y with a double in the middle; records needs_input_grad for every parameter.
struct needs_grad_probe : xf::autograd::function<needs_grad_probe> {
  static inline std::vector<bool> seen_setup, seen_backward;
  static tensor forward(const tensor& x, double s, const tensor& y) { return x * s + y; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor, double, tensor>& in, const tensor&) {
    seen_setup = {ctx.needs_input_grad(0), ctx.needs_input_grad(1), ctx.needs_input_grad(2)};
    ctx.set("s", std::get<1>(in));
  }
  static std::tuple<tensor, tensor> backward(xf::autograd::context& ctx, const tensor& g) {
    seen_backward = {ctx.needs_input_grad(0), ctx.needs_input_grad(1), ctx.needs_input_grad(2)};
    tensor gx, gy;
    if (ctx.needs_input_grad(0)) gx = g * ctx.get<double>("s");
    if (ctx.needs_input_grad(2)) gy = g;
    return {gx, gy};
  }
};

/// Typed state: a double and a string from setup_context, read back in backward.
struct stateful : xf::autograd::function<stateful> {
  static inline std::string tag_seen;
  static tensor forward(const tensor& x, double s) { return x * s; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor, double>& in, const tensor&) {
    ctx.set("scale", std::get<1>(in));
    ctx.set("tag", std::string("hello"));
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) {
    tag_seen = ctx.get<std::string>("tag");
    return g * ctx.get<double>("scale");
  }
};

/// backward asks for state that is missing (Which == 0) or has another type (Which == 1).
template <int Which>
struct bad_state : xf::autograd::function<bad_state<Which>> {
  static tensor forward(const tensor& x) { return x * 2.0; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>&, const tensor&) {
    ctx.set("scale", 2.0);
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) {
    if constexpr (Which == 0) return g * ctx.get<double>("absent_key");
    else return g * static_cast<double>(ctx.get<int>("scale"));
  }
};

/// Numerically stable softplus with the correct derivative (sigmoid); softplus_jvp adds a jvp.
struct softplus_fn : xf::autograd::function<softplus_fn> {
  static tensor forward(const tensor& x) { return xf::relu(x) + xf::log1p(xf::exp(-xf::abs(x))); }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
    ctx.save_for_backward(std::get<0>(in));
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) { return g * xf::sigmoid(ctx.saved_tensors()[0]); }
  static constexpr bool generate_vmap_rule = true;
};
struct softplus_jvp : xf::autograd::function<softplus_jvp> {
  static tensor forward(const tensor& x) { return softplus_fn::forward(x); }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
    ctx.save_for_backward(std::get<0>(in));
    ctx.save_for_forward(std::get<0>(in));
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) { return g * xf::sigmoid(ctx.saved_tensors()[0]); }
  static tensor jvp(xf::autograd::context& ctx, const tensor& t) { return t * xf::sigmoid(ctx.saved_tensors()[0]); }
  static constexpr bool generate_vmap_rule = true;
};

/// log-sum-exp over the last dim, stable, backward from the saved output (softmax).
struct lse_fn : xf::autograd::function<lse_fn> {
  static tensor forward(const tensor& x) {
    const tensor m = xf::amax(x, {-1}, true);
    return m.squeeze(-1) + xf::log(xf::sum(xf::exp(x - m), {-1}, false));
  }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor& out) {
    ctx.save_for_backward(std::get<0>(in), out);
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) {
    const auto s = ctx.saved_tensors();
    return g.unsqueeze(-1) * xf::exp(s[0] - s[1].unsqueeze(-1));
  }
  static constexpr bool generate_vmap_rule = true;
};

/// x * y (elementwise) whose backward is 10 times the truth, generated vmap rule: under vmap
/// with y unbatched the generated backward must sum y's gradient over the batch.
struct fake_mul : xf::autograd::function<fake_mul> {
  static tensor forward(const tensor& x, const tensor& y) { return x * y; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor, tensor>& in, const tensor&) {
    ctx.save_for_backward(std::get<0>(in), std::get<1>(in));
  }
  static std::tuple<tensor, tensor> backward(xf::autograd::context& ctx, const tensor& g) {
    const auto s = ctx.saved_tensors();
    return {g * s[1] * 10.0, g * s[0] * 10.0};
  }
  static constexpr bool generate_vmap_rule = true;
};

/// x * s + y with a manual vmap rule that records how it was called.
struct manual_vmap_fn : xf::autograd::function<manual_vmap_fn> {
  static inline int calls = 0;
  static inline std::array<std::optional<std::int64_t>, 3> last_in_dims{};
  static inline std::int64_t last_batch = -1;
  static inline xf::randomness last_randomness = xf::randomness::error;

  static tensor forward(const tensor& x, double s, const tensor& y) { return x * s + y; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor, double, tensor>& in, const tensor&) {
    ctx.set("s", std::get<1>(in));
  }
  static std::tuple<tensor, tensor> backward(xf::autograd::context& ctx, const tensor& g) {
    return {g * ctx.get<double>("s"), g};
  }
  static std::pair<tensor, std::optional<std::int64_t>> vmap(const xf::vmap_info& info,
                                                               const std::array<std::optional<std::int64_t>, 3>& in_dims,
                                                               const tensor& x, double s, const tensor& y) {
    ++calls;
    last_in_dims = in_dims;
    last_batch = info.batch_size();
    last_randomness = info.randomness();
    auto front = [](const tensor& t, const std::optional<std::int64_t>& d) { return d ? t.movedim(*d, 0) : t.unsqueeze(0); };
    return {front(x, in_dims[0]) * s + front(y, in_dims[2]), std::optional<std::int64_t>{0}};
  }
  static constexpr bool generate_vmap_rule = false;  // torch's default, written beside a manual rule
};

/// Neither a vmap rule nor generate_vmap_rule.
struct no_vmap_fn : xf::autograd::function<no_vmap_fn> {
  static tensor forward(const tensor& x) { return x * 2.0; }
  static void setup_context(xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {}
  static tensor backward(xf::autograd::context&, const tensor& g) { return g * 2.0; }
};

/// No derivative formula at all.
struct no_backward_fn : xf::autograd::function<no_backward_fn> {
  static tensor forward(const tensor& x) { return xf::sin(x); }
  static void setup_context(xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {}
};

/// Two outputs, a double parameter; backward returns one gradient per argument (undefined for
/// the double).
struct prod_and_sum : xf::autograd::function<prod_and_sum> {
  static std::tuple<tensor, tensor> forward(const tensor& x, const tensor& y, double s) { return {x * y * s, x + y}; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor, tensor, double>& in,
                            const std::tuple<tensor, tensor>&) {
    ctx.save_for_backward(std::get<0>(in), std::get<1>(in));
    ctx.set("s", std::get<2>(in));
  }
  static std::tuple<tensor, tensor, tensor> backward(xf::autograd::context& ctx, const tensor& gp, const tensor& gs) {
    const auto v = ctx.saved_tensors();
    const double s = ctx.get<double>("s");
    return {gp * v[1] * s + gs, gp * v[0] * s + gs, tensor{}};
  }
  static constexpr bool generate_vmap_rule = true;
};

/// A single-level function: x*x with the (fake) backward 10 x.
struct slf_square : xf::autograd::single_level_function<slf_square> {
  static tensor forward(const tensor& x) { return x * x; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
    ctx.save_for_backward(std::get<0>(in));
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) { return g * 10.0 * ctx.saved_tensors()[0]; }
};

/// Turns the single-level debugging switch on for its lifetime (off again even on failure).
struct allow_single_level {
  allow_single_level() { xf::autograd::set_single_level_function_allowed(true); }
  ~allow_single_level() { xf::autograd::set_single_level_function_allowed(false); }
};

auto sum_fake_square = [](const tensor& x) { return xf::sum(fake_square::apply(x)); };
auto apply_fake_square = [](const tensor& x) { return fake_square::apply(x); };
auto apply_fake_square_jvp = [](const tensor& x) { return fake_square_jvp::apply(x); };

}  // namespace

// ---- depth 0 -----------------------------------------------------------------------------------

TEST_CASE("function: forward only, at depth 0", "[function]") {
  forward_only::forward_calls = 0;
  const tensor y = forward_only::apply(vec3());
  CHECK(forward_only::forward_calls == 1);
  CHECK(close(y, vec3() * 3.0 + 1.0));
  CHECK(y.impl()->is_dense());
  // the other functions' forwards at depth 0
  CHECK(close(fake_square::apply(vec3()), vec3() * vec3()));
  auto [p, s] = prod_and_sum::apply(vec3(), vec3() + 1.0, 2.0);
  CHECK(close(p, vec3() * (vec3() + 1.0) * 2.0));
  CHECK(close(s, vec3() * 2.0 + 1.0));
  // a transform that needs no rule: the value under vmap of a function with a manual rule
  // falls through to forward when nothing is batched
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("function: forward-only function under transforms that need no formula", "[function]") {
  // functionalize needs no rule; grad of an input the function does not see needs none either
  const tensor y = xf::functionalize([](const tensor& x) { return forward_only::apply(x); })(vec3());
  CHECK(close(y, vec3() * 3.0 + 1.0));
  const tensor c = vec3();
  const tensor g = xf::grad([&](const tensor& x) { return xf::sum(forward_only::apply(c) * x); })(vec3());
  CHECK(close(g, c * 3.0 + 1.0));
}

// ---- context -----------------------------------------------------------------------------------

TEST_CASE("context: save_for_backward and save_for_forward are separate", "[function][context]") {
  const tensor x = vec3(), t{1.0, 0.5, -2.0};
  fake_square_jvp::saved_in_backward = fake_square_jvp::saved_in_jvp = 0;
  const tensor g = xf::grad([](const tensor& p) { return xf::sum(fake_square_jvp::apply(p)); })(x);
  CHECK(close(g, x * 10.0));
  CHECK(fake_square_jvp::saved_in_backward == 1);
  auto [y, ty] = xf::jvp(apply_fake_square_jvp, x, t);
  CHECK(close(y, x * x));
  CHECK(close(ty, x * t * 7.0));
  CHECK(fake_square_jvp::saved_in_jvp == 2);
  // and backward afterwards still sees its own saved tensors
  fake_square_jvp::saved_in_backward = 0;
  (void)xf::grad([](const tensor& p) { return xf::sum(fake_square_jvp::apply(p)); })(x);
  CHECK(fake_square_jvp::saved_in_backward == 1);
}

TEST_CASE("context: mark_dirty, at depth 0", "[function][context]") {
  tensor x = vec3();
  const tensor before = x.clone();
  const tensor y = inplace_double::apply(x);
  CHECK(close(x, before * 2.0));
  CHECK(close(y, before * 2.0));
  CHECK(xf::same_storage(x, y));
}

TEST_CASE("context: mark_dirty, under grad", "[function][context]") {
  const tensor x = vec3();
  const tensor x0 = x.clone();
  bool rebound = false, value_ok = false;
  const tensor g = xf::grad([&](const tensor& a) {
    tensor b = a * 1.0;
    tensor c = inplace_double::apply(b);
    rebound = c.impl() == b.impl();  // the output is the (rebound) input
    value_ok = xf::allclose(xf::stop_gradient(b), x0 * 2.0);
    return xf::sum(c * c);
  })(x);
  CHECK(rebound);
  CHECK(value_ok);
  CHECK(close(g, x0 * 8.0));  // d/da sum((2a)^2)
  CHECK(close(x, x0));        // the caller's tensor is untouched (the function mutated a copy)
  // later uses of the mutated input see the new value and its history
  const tensor g2 = xf::grad([](const tensor& a) {
    tensor b = a * 1.0;
    (void)inplace_double::apply(b);
    return xf::sum(b * a);  // 2 a^2 -> 4 a
  })(x);
  CHECK(close(g2, x0 * 4.0));
}

TEST_CASE("context: mark_dirty, under jvp", "[function][context]") {
  const tensor x = vec3(), t{1.0, -1.0, 0.5};
  bool rebound = false;
  auto [y, ty] = xf::jvp([&](const tensor& a) {
    tensor b = a * 1.0;
    tensor c = inplace_double::apply(b);
    rebound = c.impl() == b.impl();
    return b * 1.0;  // the input, mutated
  }, x, t);
  CHECK(rebound);
  CHECK(close(y, x * 2.0));
  CHECK(close(ty, t * 2.0));  // transposed backward
}

TEST_CASE("context: mark_dirty, under functionalize", "[function][context]") {
  tensor x = vec3();
  const tensor x0 = x.clone();
  const tensor y = xf::functionalize([](const tensor& a) {
    (void)inplace_double::apply(a);
    return a * 1.0;
  })(x);
  CHECK(close(y, x0 * 2.0));
  CHECK(close(x, x0 * 2.0));  // the mutation is copied back into the caller's tensor
}

TEST_CASE("context: mark_dirty under vmap and its compositions with grad and jvp", "[function][context][vmap]") {
  const tensor X = mat23();
  // vmap alone: the batched input is doubled in place and returned (batch dim 0 and 1)
  tensor Xc = X.clone();
  const tensor r = xf::vmap([](const tensor& a) { return inplace_double_batched::apply(a); })(Xc);
  CHECK(close(Xc, X * 2.0));
  CHECK(close(r, X * 2.0));
  tensor Xt = X.clone();
  (void)xf::vmap([](const tensor& a) { return inplace_double_batched::apply(a); }, xf::in_dims(1), xf::out_dims(1))(Xt);
  CHECK(close(Xt, X * 2.0));
  // the mutated input carries the function's derivative afterwards: d/da sum((2a) * a) = 4a,
  // and d/da sum(c * c) with c the returned input = 8a
  auto later_use = [](const tensor& a) {
    tensor b = a * 1.0;
    (void)inplace_double_batched::apply(b);
    return xf::sum(b * a);
  };
  auto returned = [](const tensor& a) {
    tensor b = a * 1.0;
    const tensor c = inplace_double_batched::apply(b);
    return xf::sum(c * c);
  };
  CHECK(close(xf::vmap(xf::grad(later_use))(X), X * 4.0));
  CHECK(close(xf::vmap(xf::grad(returned))(X), X * 8.0));
  CHECK(close(xf::vmap(xf::grad(later_use), xf::in_dims(1))(X.t().contiguous()), X * 4.0));
  auto batched_inside = [](int dim) {
    return [dim](const tensor& A) {
      tensor b = A * 1.0;
      (void)xf::vmap([](const tensor& q) { return inplace_double_batched::apply(q); }, xf::in_dims(dim))(b);
      return xf::sum(b * A);
    };
  };
  CHECK(close(xf::grad(batched_inside(0))(X), X * 4.0));
  CHECK(close(xf::grad(batched_inside(1))(X), X * 4.0));
  // forward mode, both orders: the tangent of the doubled input is doubled
  auto doubled = [](const tensor& a) {
    tensor b = a * 1.0;
    (void)inplace_double_batched::apply(b);
    return b * 1.0;
  };
  CHECK(close(std::get<1>(xf::jvp([&](const tensor& A) { return xf::vmap(doubled)(A); }, X, xf::ones_like(X))),
              xf::full_like(X, 2.0)));
  CHECK(close(xf::vmap([&](const tensor& A, const tensor& T) { return std::get<1>(xf::jvp(doubled, A, T)); })(X, xf::ones_like(X)),
              xf::full_like(X, 2.0)));
}

TEST_CASE("context: mark_non_differentiable on an index output", "[function][context]") {
  const tensor x = mat23();
  auto [v, i] = row_max::apply(x);
  CHECK(close(v, tensor{2.0, 1.5}));
  CHECK(xf::equal(i, tensor{2, 0}));
  const tensor g = xf::grad([](const tensor& p) {
    auto [vals, idx] = row_max::apply(p);
    CHECK(idx.dtype() == xf::i64);
    return xf::sum(vals * tensor{1.0, 3.0});
  })(x);
  CHECK(close(g, tensor{{0.0, 0.0, 1.0}, {3.0, 0.0, 0.0}}));
  // backward takes a gradient for the indices too: int64 zeros, as torch gives
  REQUIRE(row_max::index_grad.defined());
  CHECK((row_max::index_grad.dtype() == xf::i64 && xf::equal(row_max::index_grad, tensor{0, 0})));
  // under vmap(grad) with the generated rule: one row per example
  const tensor gv = xf::vmap(xf::grad([](const tensor& r) { return xf::sum(std::get<0>(row_max::apply(r.unsqueeze(0)))); }))(x);
  CHECK(close(gv, tensor{{0.0, 0.0, 1.0}, {1.0, 0.0, 0.0}}));
  // the generated rule batches both outputs, indices included
  CHECK(xf::testing::vmap_matches_loop([](const tensor& r) { return row_max::apply(r); }, xf::in_dims(0),
                                       xf::stack({mat23(), mat23() * -1.0}, 0)));
}

TEST_CASE("context: mark_non_differentiable on a floating output", "[function][context]") {
  const tensor x = vec3();
  const tensor mask{1.0, 0.0, 1.0};
  with_mask::mask_grad = tensor{};
  // the mask is used, but carries no derivative: d/dx [sum(3x) + sum(mask * 5)] = 3
  const tensor g = xf::grad([](const tensor& p) {
    auto [y, m] = with_mask::apply(p);
    return xf::sum(y) + xf::sum(m * 5.0);
  })(x);
  CHECK(close(g, xf::full_like(x, 3.0)));
  CHECK(close(with_mask::mask_grad, xf::zeros_like(x)));  // zeros, not the 5 it was used with
  // only the mask used: its output does not depend on x
  const tensor g0 = xf::grad([](const tensor& p) { return xf::sum(std::get<1>(with_mask::apply(p)) * p.detach()); })(x);
  CHECK(close(g0, xf::zeros_like(x)));
  // forward mode: the mask's tangent is zero
  auto [out, tan] = xf::jvp([](const tensor& p) { return with_mask::apply(p); }, x, tensor{1.0, 1.0, 1.0});
  CHECK(close(std::get<1>(out), mask));
  CHECK(close(std::get<0>(tan), xf::full_like(x, 3.0)));
  CHECK((!std::get<1>(tan).defined() || close(std::get<1>(tan), xf::zeros_like(x))));
}

TEST_CASE("context: materialize_grads default gives zeros, false gives undefined", "[function][context]") {
  const tensor x = vec3();
  using mat = two_outputs<true>;
  using raw = two_outputs<false>;
  mat::b_defined = false;
  const tensor g1 = xf::grad([](const tensor& p) { return xf::sum(std::get<0>(mat::apply(p))); })(x);
  CHECK(close(g1, xf::full_like(x, 2.0)));
  CHECK(mat::a_defined);
  REQUIRE(mat::b_defined);
  CHECK(close(mat::b_seen, xf::zeros_like(x)));

  raw::b_defined = true;
  const tensor g2 = xf::grad([](const tensor& p) { return xf::sum(std::get<0>(raw::apply(p))); })(x);
  CHECK(close(g2, xf::full_like(x, 2.0)));
  CHECK(raw::a_defined);
  CHECK_FALSE(raw::b_defined);
  // both outputs used: both defined, contributions add
  const tensor g3 = xf::grad([](const tensor& p) {
    auto [a, b] = raw::apply(p);
    return xf::sum(a) + xf::sum(b);
  })(x);
  CHECK(close(g3, xf::full_like(x, 5.0)));
  CHECK(raw::b_defined);
}

TEST_CASE("context: needs_input_grad per argument", "[function][context]") {
  const tensor x = vec3(), y{1.0, 2.0, 3.0};
  auto f = [](const tensor& a, const tensor& b) { return xf::sum(needs_grad_probe::apply(a, 2.0, b)); };
  const tensor gx = xf::grad(f, xf::argnums<0>)(x, y);
  CHECK(close(gx, xf::full_like(x, 2.0)));
  CHECK(needs_grad_probe::seen_setup == std::vector<bool>{true, false, false});
  CHECK(needs_grad_probe::seen_backward == std::vector<bool>{true, false, false});
  const tensor gy = xf::grad(f, xf::argnums<1>)(x, y);
  CHECK(close(gy, xf::ones_like(y)));
  CHECK(needs_grad_probe::seen_setup == std::vector<bool>{false, false, true});
  auto [ga, gb] = xf::grad(f, xf::argnums<0, 1>)(x, y);
  CHECK(close(ga, xf::full_like(x, 2.0)));
  CHECK(close(gb, xf::ones_like(y)));
  CHECK(needs_grad_probe::seen_backward == std::vector<bool>{true, false, true});
  CHECK_FALSE(xf::autograd::context{}.needs_input_grad(0));
}

TEST_CASE("context: typed state", "[function][context]") {
  xf::autograd::context ctx;
  ctx.set("k", 1.5);
  ctx.set("n", std::int64_t{4});
  ctx.set("name", std::string("abc"));
  CHECK(ctx.get<double>("k") == 1.5);
  CHECK(ctx.get<std::int64_t>("n") == 4);
  CHECK(ctx.get<std::string>("name") == "abc");
  ctx.set("k", 2.5);  // overwrite
  CHECK(ctx.get<double>("k") == 2.5);
  CHECK_THROWS_AS(ctx.get<double>("missing"), xf::error);
  CHECK_THROWS_WITH(ctx.get<double>("missing"), Contains("missing"));
  CHECK_THROWS_AS(ctx.get<int>("k"), xf::error);
  CHECK_THROWS_WITH(ctx.get<float>("k"), Contains("stored as"));

  stateful::tag_seen.clear();
  const tensor g = xf::grad([](const tensor& p) { return xf::sum(stateful::apply(p, 4.0)); })(vec3());
  CHECK(close(g, xf::full_like(vec3(), 4.0)));
  CHECK(stateful::tag_seen == "hello");

  auto missing = [] { return xf::grad([](const tensor& p) { return xf::sum(bad_state<0>::apply(p)); })(vec3()); };
  CHECK_THROWS_AS(missing(), xf::error);
  CHECK_THROWS_WITH(missing(), Contains("absent_key"));
  auto wrong = [] { return xf::grad([](const tensor& p) { return xf::sum(bad_state<1>::apply(p)); })(vec3()); };
  CHECK_THROWS_AS(wrong(), xf::error);
  CHECK_THROWS_WITH(wrong(), Contains("stored as"));
  CHECK(xf::layers::depth() == 0);
}

// ---- custom rules under every composition ---------------------------------------------------
// fake_square: y = x^2, backward 10 x g (no jvp -> tangent 10 x t); fake_square_jvp: jvp 7 x t.

TEST_CASE("custom rules: grad and vjp", "[function][rules]") {
  const tensor x = vec3(), v{1.0, -2.0, 0.5};
  CHECK(close(xf::grad(sum_fake_square)(x), x * 10.0));
  auto [y, pullback] = xf::vjp(apply_fake_square, x);
  CHECK(close(y, x * x));
  CHECK(close(std::get<0>(pullback(v)), x * v * 10.0));
}

TEST_CASE("custom rules: jvp with a jvp rule and with a transposed backward", "[function][rules]") {
  const tensor x = vec3(), t{1.0, 0.5, -2.0};
  auto [y, ty] = xf::jvp(apply_fake_square, x, t);
  CHECK(close(y, x * x));
  CHECK(close(ty, x * t * 10.0));  // transposed backward
  auto [y2, ty2] = xf::jvp(apply_fake_square_jvp, x, t);
  CHECK(close(y2, x * x));
  CHECK(close(ty2, x * t * 7.0));  // the jvp rule
  // linearize uses the same rules
  auto [y3, jvp_fn] = xf::linearize(apply_fake_square, x);
  CHECK(close(y3, x * x));
  CHECK(close(jvp_fn(t), x * t * 10.0));
}

TEST_CASE("custom rules: vjp of vjp", "[function][rules]") {
  const tensor x = vec3(), v{1.0, -2.0, 0.5}, w{0.3, 0.2, -1.0};
  auto first = [&](const tensor& p) {
    auto [y, pb] = xf::vjp(apply_fake_square, p);
    return std::get<0>(pb(v));  // 10 p v
  };
  auto [g, pb2] = xf::vjp(first, x);
  CHECK(close(g, x * v * 10.0));
  CHECK(close(std::get<0>(pb2(w)), v * w * 10.0));
  // grad of grad
  auto gg = xf::grad([](const tensor& p) { return xf::sum(xf::grad(sum_fake_square)(p) * p); })(x);
  CHECK(close(gg, x * 20.0));  // d/dp sum(10 p * p)
}

TEST_CASE("custom rules: nested grads of closures", "[function][rules]") {
  // d/dx sum( grad_y sum(fake_mul(x, y)) ) with backward 10 * (other argument):
  // inner = 10 x, so the outer gradient is 10 everywhere (a confused implementation differs)
  const tensor x = vec3(), y{1.0, 2.0, 3.0};
  const tensor g = xf::grad([&](const tensor& a) {
    return xf::sum(xf::grad([&](const tensor& b) { return xf::sum(fake_mul::apply(a, b)); })(y));
  })(x);
  CHECK(close(g, xf::full_like(x, 10.0)));
  // d/dx sum( x * grad_y sum(fake_mul(x, y)) ) = d/dx sum(10 x^2) = 20 x
  const tensor g2 = xf::grad([&](const tensor& a) {
    return xf::sum(a * xf::grad([&](const tensor& b) { return xf::sum(fake_mul::apply(a, b)); })(y));
  })(x);
  CHECK(close(g2, x * 20.0));
}

TEST_CASE("custom rules: vmap(grad), grad(vmap), vmap(vmap(grad))", "[function][rules][vmap]") {
  const tensor X = mat23();
  CHECK(close(xf::vmap(xf::grad(sum_fake_square))(X), X * 10.0));
  CHECK(close(xf::vmap(xf::grad(sum_fake_square), xf::in_dims(1))(X.t()), X * 10.0));
  const tensor g = xf::grad([](const tensor& P) { return xf::sum(xf::vmap(apply_fake_square)(P)); })(X);
  CHECK(close(g, X * 10.0));
  const tensor XX = xf::stack({X, X * -0.5}, 0);  // [2, 2, 3]
  CHECK(close(xf::vmap(xf::vmap(xf::grad(sum_fake_square)))(XX), XX * 10.0));
  // grad over a vmap over a vmap
  const tensor g3 = xf::grad([](const tensor& P) { return xf::sum(xf::vmap(xf::vmap(apply_fake_square))(P)); })(XX);
  CHECK(close(g3, XX * 10.0));
}

TEST_CASE("custom rules: jacrev, jacfwd, hessian", "[function][rules]") {
  const tensor x = vec3();
  const tensor I = xf::eye(3, xf::f64);
  CHECK(close(xf::jacrev(apply_fake_square)(x), I * (x * 10.0).unsqueeze(0)));
  CHECK(close(xf::jacfwd(apply_fake_square)(x), I * (x * 10.0).unsqueeze(0)));
  CHECK(close(xf::jacfwd(apply_fake_square_jvp)(x), I * (x * 7.0).unsqueeze(0)));
  CHECK(close(xf::jacrev(apply_fake_square_jvp)(x), I * (x * 10.0).unsqueeze(0)));
  CHECK(close(xf::hessian(sum_fake_square)(x), I * 10.0));
  CHECK(close(xf::jacrev(xf::jacrev(sum_fake_square))(x), I * 10.0));
  CHECK(close(xf::jacfwd(xf::jacfwd(sum_fake_square))(x), I * 10.0));
}

TEST_CASE("custom rules: forward mode with the jvp rule under vmap and grad", "[function][rules][vmap]") {
  const tensor X = mat23(), T{{1.0, 0.5, -2.0}, {0.1, 0.2, 0.3}};
  // jvp(vmap(F)) and vmap(jvp(F)) with the generated rule
  auto [y, ty] = xf::jvp(xf::vmap(apply_fake_square_jvp), X, T);
  CHECK(close(y, X * X));
  CHECK(close(ty, X * T * 7.0));
  const tensor ty2 = xf::vmap([](const tensor& x, const tensor& t) {
    return xf::jvp(apply_fake_square_jvp, x, t).second;
  })(X, T);
  CHECK(close(ty2, X * T * 7.0));
  const tensor ty3 = xf::vmap([](const tensor& x, const tensor& t) { return xf::jvp(apply_fake_square, x, t).second; })(X, T);
  CHECK(close(ty3, X * T * 10.0));
  // grad of the jvp rule's result: d/dx sum(7 x t) = 7 t
  const tensor t0 = T.select(0, 0);
  const tensor g = xf::grad([&](const tensor& x) { return xf::sum(xf::jvp(apply_fake_square_jvp, x, t0).second); })(X.select(0, 0));
  CHECK(close(g, t0 * 7.0));
  // jvp of grad: the backward formula differentiated forward: d(10 x) = 10 t
  const tensor jg = xf::jvp(xf::grad(sum_fake_square), X.select(0, 0), t0).second;
  CHECK(close(jg, t0 * 10.0));
}

TEST_CASE("custom rules: make_fx traces a function's forward op by op", "[function][rules]") {
  const xf::graph gr = xf::make_fx(apply_fake_square)(vec3());
  CHECK(gr.count("xf::mul") >= 1);
  const auto outs = gr(tensor{1.0, 2.0, 3.0});
  REQUIRE(outs.size() == 1);
  CHECK(close(outs[0], tensor{1.0, 4.0, 9.0}));
}

TEST_CASE("correct functions pass gradcheck and gradgradcheck; a fake one fails", "[function][gradcheck]") {
  const tensor x{-30.0, -1.0, 0.5, 40.0};
  // stable: no overflow at large |x|
  const tensor y = softplus_jvp::apply(tensor{-800.0, 800.0});
  CHECK(y.select(0, 0).item<double>() == Approx(0.0).margin(1e-300));
  CHECK(y.select(0, 1).item<double>() == Approx(800.0));
  auto sp_jvp = [](const tensor& t) { return softplus_jvp::apply(t); };
  auto sp = [](const tensor& t) { return softplus_fn::apply(t); };
  CHECK(xf::testing::gradcheck(sp_jvp, x));
  CHECK(xf::testing::gradcheck(sp, x));
  CHECK(xf::testing::gradgradcheck(sp_jvp, x));
  CHECK(xf::testing::gradgradcheck(sp, x));
  auto lse = [](const tensor& t) { return lse_fn::apply(t); };
  CHECK(close(lse(mat23()), xf::logsumexp(mat23(), {-1}, false)));
  CHECK(xf::testing::gradcheck(lse, mat23()));
  CHECK(xf::testing::gradgradcheck(lse, mat23()));
  CHECK(xf::testing::gradcheck(lse, tensor{1000.0, 999.0, -5.0}));
  // and under vmap
  CHECK(xf::testing::gradcheck(xf::vmap(lse), mat23()));
  CHECK(xf::testing::gradcheck(xf::vmap(sp), mat23()));
  // the fake rule is used by gradcheck too, so it fails
  CHECK_FALSE(xf::testing::gradcheck(apply_fake_square, vec3()));
  CHECK_THROWS_AS(xf::testing::gradcheck(apply_fake_square, xf::testing::raise, vec3()), xf::error);
  // NaN derivatives (outside the function's domain) are a failure, as in torch, not a match
  auto outside = [](const tensor& t) { return xf::sqrt(t - 10.0); };
  CHECK_FALSE(xf::testing::gradcheck(outside, vec3()));
  CHECK_THROWS_WITH(xf::testing::gradcheck(outside, xf::testing::raise, vec3()), Contains("nan") && Contains("NaN"));
}

// ---- vmap ------------------------------------------------------------------------------------

TEST_CASE("vmap: generated rule equals a loop", "[function][vmap]") {
  const tensor X = mat23();
  CHECK(xf::testing::vmap_matches_loop(apply_fake_square, xf::in_dims(0), X));
  CHECK(xf::testing::vmap_matches_loop(apply_fake_square, xf::in_dims(1), X));
  CHECK(xf::testing::vmap_matches_loop([](const tensor& t) { return lse_fn::apply(t); }, xf::in_dims(0), X));
  auto mul = [](const tensor& a, const tensor& b) { return fake_mul::apply(a, b); };
  CHECK(xf::testing::vmap_matches_loop(mul, xf::in_dims(0, xf::none), X, vec3()));
  CHECK(xf::testing::vmap_matches_loop(mul, xf::in_dims(1, 0), X.t().contiguous(), X));
}

TEST_CASE("vmap: generated rule keeps the custom backward", "[function][vmap]") {
  const tensor X = mat23(), w = vec3();
  auto mul = [](const tensor& a, const tensor& b) { return fake_mul::apply(a, b); };
  // vmap(grad): per example 10 * w
  const tensor g = xf::vmap(xf::grad([&](const tensor& a) { return xf::sum(mul(a, w)); }))(X);
  CHECK(close(g, xf::stack({w, w}, 0) * 10.0));
  // grad(vmap) with respect to the unbatched argument: summed over the batch
  const tensor gw = xf::grad(
      [&](const tensor& b) { return xf::sum(xf::vmap(mul, xf::in_dims(0, xf::none))(X, b)); })(w);
  CHECK(close(gw, xf::sum(X, {0}, false) * 10.0));
  // grad(vmap) with respect to the batched argument
  const tensor gx = xf::grad([&](const tensor& a) { return xf::sum(xf::vmap(mul, xf::in_dims(0, xf::none))(a, w)); })(X);
  CHECK(close(gx, xf::stack({w, w}, 0) * 10.0));
  // both batched, batch dims in different places
  const tensor Y = X * 2.0;
  auto [ga, gb] = xf::grad([&](const tensor& a, const tensor& b) { return xf::sum(xf::vmap(mul, xf::in_dims(1, 0))(a, b)); },
                           xf::argnums<0, 1>)(X.t().contiguous(), Y);
  CHECK(close(ga, Y.t() * 10.0));
  CHECK(close(gb, X * 10.0));
}

TEST_CASE("vmap: manual rule gets in_dims, batch size and randomness", "[function][vmap]") {
  const tensor X = mat23(), y = vec3();
  auto f = [](const tensor& a, const tensor& b) { return manual_vmap_fn::apply(a, 2.0, b); };
  manual_vmap_fn::calls = 0;
  const tensor r = xf::vmap(f, xf::in_dims(0, xf::none), xf::randomness::different)(X, y);
  CHECK(manual_vmap_fn::calls == 1);
  CHECK(manual_vmap_fn::last_in_dims[0] == std::optional<std::int64_t>{0});
  CHECK(!manual_vmap_fn::last_in_dims[1].has_value());
  CHECK(!manual_vmap_fn::last_in_dims[2].has_value());
  CHECK(manual_vmap_fn::last_batch == 2);
  CHECK(manual_vmap_fn::last_randomness == xf::randomness::different);
  CHECK(close(r, X * 2.0 + y.unsqueeze(0)));

  const tensor r2 = xf::vmap(f, xf::in_dims(1, 0), xf::randomness::same)(X.t().contiguous(), X);
  CHECK(manual_vmap_fn::calls == 2);
  CHECK(manual_vmap_fn::last_in_dims[0] == std::optional<std::int64_t>{1});
  CHECK(!manual_vmap_fn::last_in_dims[1].has_value());
  CHECK(manual_vmap_fn::last_in_dims[2] == std::optional<std::int64_t>{0});
  CHECK(manual_vmap_fn::last_randomness == xf::randomness::same);
  CHECK(close(r2, X * 3.0));

  // vmap(grad): the forward under the grad layer reaches the rule; backward is plain ops
  manual_vmap_fn::calls = 0;
  const tensor g = xf::vmap(xf::grad([&](const tensor& a) { return xf::sum(f(a, y)); }))(X);
  CHECK(manual_vmap_fn::calls == 1);
  CHECK(close(g, xf::full_like(X, 2.0)));
}

TEST_CASE("vmap: manual rule not called when nothing is batched at that level", "[function][vmap]") {
  const tensor X = mat23(), c = vec3();
  manual_vmap_fn::calls = 0;
  const tensor r = xf::vmap([&](const tensor& x) { return manual_vmap_fn::apply(c, 2.0, c) + x; })(X);
  CHECK(manual_vmap_fn::calls == 0);
  CHECK(close(r, X + (c * 3.0).unsqueeze(0)));
  // nested: batched only at the outer level -> one call, at the outer level
  const tensor Z = xf::stack({c, c * 2.0, c * 3.0}, 0);  // [3, 3]
  const tensor r2 = xf::vmap([&](const tensor& x) {
    return xf::vmap([&](const tensor& z) { return manual_vmap_fn::apply(x, 1.0, x) + z; })(X);
  })(Z);
  CHECK(manual_vmap_fn::calls == 1);
  CHECK(manual_vmap_fn::last_batch == 3);
  CHECK(r2.shape() == xf::shape_t{3, 2, 3});
  CHECK(close(r2, (Z * 2.0).unsqueeze(1) + X.unsqueeze(0)));
}

TEST_CASE("vmap: neither rule nor generate_vmap_rule throws", "[function][vmap]") {
  const tensor X = mat23();
  auto f = [](const tensor& x) { return no_vmap_fn::apply(x); };
  CHECK_THROWS_AS(xf::vmap(f)(X), xf::error);
  CHECK_THROWS_WITH(xf::vmap(f)(X), Contains("vmap"));
  CHECK_THROWS_WITH(xf::vmap(f)(X), Contains("no_vmap_fn has no vmap rule"));
  CHECK(xf::layers::depth() == 0);
  // fine where nothing is batched, and under grad
  CHECK(close(xf::grad([](const tensor& x) { return xf::sum(no_vmap_fn::apply(x)); })(vec3()), xf::full_like(vec3(), 2.0)));
}

// ---- tuples, non-tensor arguments ---------------------------------------------------------------

TEST_CASE("function: tuple outputs and a double argument", "[function]") {
  const tensor x = vec3(), y{1.0, 2.0, 3.0};
  auto f = [](const tensor& a, const tensor& b) { return prod_and_sum::apply(a, b, 2.0); };
  auto loss = [&](const tensor& a, const tensor& b) {
    auto [p, s] = f(a, b);
    return xf::sum(p) + xf::sum(s * 3.0);
  };
  auto [gx, gy] = xf::grad(loss, xf::argnums<0, 1>)(x, y);
  CHECK(close(gx, y * 2.0 + 3.0));
  CHECK(close(gy, x * 2.0 + 3.0));
  // only the second output used
  const tensor g2 = xf::grad([&](const tensor& a) { return xf::sum(std::get<1>(f(a, y))); })(x);
  CHECK(close(g2, xf::ones_like(x)));
  // jvp through the transposed backward, both outputs
  const tensor tx{1.0, 0.0, -1.0}, ty{0.5, 0.5, 0.5};
  auto [out, tout] = xf::jvp(f, std::tuple{x, y}, std::tuple{tx, ty});
  CHECK(close(std::get<0>(out), x * y * 2.0));
  CHECK(close(std::get<0>(tout), (tx * y + x * ty) * 2.0));
  CHECK(close(std::get<1>(tout), tx + ty));
  // vmap with the generated rule: the double passes through
  const tensor X = mat23(), Y = mat23() + 1.0;
  CHECK(xf::testing::vmap_matches_loop(f, xf::in_dims(0, 0), X, Y));
  CHECK(xf::testing::vmap_matches_loop(f, xf::in_dims(0, xf::none), X, y));
  // jacrev over both arguments
  auto J = xf::jacrev([&](const tensor& a) { return std::get<0>(f(a, y)); })(x);
  CHECK(close(J, xf::eye(3, xf::f64) * (y * 2.0).unsqueeze(0)));
  // per-example gradients
  const tensor G = xf::vmap(xf::grad([&](const tensor& a, const tensor& b) { return loss(a, b); }))(X, Y);
  CHECK(close(G, Y * 2.0 + 3.0));
}

// ---- errors --------------------------------------------------------------------------------------

TEST_CASE("errors: differentiating a function without backward names it", "[function][errors]") {
  auto f = [](const tensor& x) { return xf::sum(no_backward_fn::apply(x)); };
  CHECK_THROWS_AS(xf::grad(f)(vec3()), xf::error);
  CHECK_THROWS_WITH(xf::grad(f)(vec3()), Contains("no_backward_fn"));
  CHECK_THROWS_WITH(xf::grad(f)(vec3()), Contains("cannot differentiate"));
  CHECK_THROWS_WITH(xf::jvp([](const tensor& x) { return no_backward_fn::apply(x); }, vec3(), vec3()),
                    Contains("no_backward_fn"));
  CHECK(xf::layers::depth() == 0);
  // forward alone is fine
  CHECK(close(no_backward_fn::apply(vec3()), xf::sin(vec3())));
}

TEST_CASE("errors: single_level_function outside a higher-order op's grad rule", "[function][errors]") {
  const tensor x = vec3();
  auto f = [](const tensor& p) { return xf::sum(slf_square::apply(p)); };
  CHECK_THROWS_AS(xf::grad(f)(x), xf::error);
  CHECK_THROWS_WITH(xf::grad(f)(x), Contains("single-level"));
  CHECK_THROWS_WITH(slf_square::apply(x), Contains("single-level"));
  CHECK(xf::layers::depth() == 0);
  {
    allow_single_level allow;
    CHECK(close(xf::grad(f)(x), x * 10.0));
    // still needs a grad layer on top
    CHECK_THROWS_WITH(slf_square::apply(x), Contains("single-level"));
  }
  CHECK_THROWS_WITH(xf::grad(f)(x), Contains("single-level"));  // off again
}
