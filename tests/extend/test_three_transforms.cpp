// Three-transform compositions of custom functions and custom ops, as torch.func tests its
// custom functions: a small database of entries (xf::autograd::function with a generated and a
// manual vmap rule, xf::custom_op with and without register_vmap, some with a backward that is
// deliberately not the true derivative). Every composition is checked against its loop
// equivalent (vmap replaced by a loop over the batch); entries with correct derivatives are
// also checked against finite differences, fake ones against the values their rules imply.
#include <catch2/catch.hpp>

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>

#include "custom_functions.hpp"

namespace xf = xfunc;
using xf::tensor;

namespace {

using fn_t = std::function<tensor(const tensor&)>;
using fn2_t = std::function<tensor(const tensor&, const tensor&)>;

bool close(const tensor& a, const tensor& b) {
  return a.defined() && b.defined() && a.shape() == b.shape() && xf::allclose(a, b, 1e-8, 1e-10);
}

// ---- custom functions --------------------------------------------------------------------------

/// Stable softplus, correct derivative (sigmoid), with a jvp rule; generated vmap rule.
struct t3_softplus : xf::autograd::function<t3_softplus> {
  static tensor forward(const tensor& x) { return xf::relu(x) + xf::log1p(xf::exp(-xf::abs(x))); }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
    ctx.save_for_backward(std::get<0>(in));
    ctx.save_for_forward(std::get<0>(in));
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) { return g * xf::sigmoid(ctx.saved_tensors()[0]); }
  static tensor jvp(xf::autograd::context& ctx, const tensor& t) { return t * xf::sigmoid(ctx.saved_tensors()[0]); }
  static constexpr bool generate_vmap_rule = true;
};

/// x * x whose backward claims 10 x (not the truth); forward mode transposes backward.
using t3_fake_square = extend_tests::fake_square;

/// x * sum(x) over a vector (not elementwise), correct backward, manual vmap rule.
struct t3_times_sum : xf::autograd::function<t3_times_sum> {
  static inline int vmap_calls = 0;
  static tensor forward(const tensor& x) { return x * xf::sum(x, {-1}, true); }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
    ctx.save_for_backward(std::get<0>(in));
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) {
    const tensor x = ctx.saved_tensors()[0];
    return g * xf::sum(x, {-1}, true) + xf::sum(g * x, {-1}, true);
  }
  static std::pair<tensor, std::optional<std::int64_t>> vmap(const xf::vmap_info&,
                                                               const std::array<std::optional<std::int64_t>, 1>& in_dims,
                                                               const tensor& x) {
    ++vmap_calls;
    const tensor xb = x.movedim(*in_dims[0], 0);  // only called when x is batched here
    return {xb * xf::sum(xb, {-1}, true), std::optional<std::int64_t>{0}};
  }
};

// ---- custom ops -------------------------------------------------------------------------------

using unary_op = xf::custom_op_handle<tensor(const tensor&)>;
using scaled_op = xf::custom_op_handle<tensor(const tensor&, double)>;

/// x^3 with the correct backward; no vmap rule (vmap loops over the batch).
unary_op& cube_op() {
  static unary_op op = [] {
    auto o = xf::custom_op("test3::cube", [](const tensor& x) { return x * x * x; });
    o.register_autograd([](xf::autograd::context& ctx, const tensor& g) {
      const tensor x = ctx.saved_tensors()[0];
      return g * 3.0 * x * x;
    },
                        [](xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
                          ctx.save_for_backward(std::get<0>(in));
                        });
    return o;
  }();
  return op;
}

/// sin(x) whose backward claims 2 cos(x) (not the truth); elementwise vmap rule.
int fake_sin_vmap_calls = 0;
unary_op& fake_sin_op() {
  static unary_op op = [] {
    auto o = xf::custom_op("test3::fake_sin", [](const tensor& x) { return xf::sin(x); });
    o.register_autograd([](xf::autograd::context& ctx, const tensor& g) { return g * 2.0 * xf::cos(ctx.saved_tensors()[0]); },
                        [](xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
                          ctx.save_for_backward(std::get<0>(in));
                        });
    o.register_vmap([](const xf::vmap_info&, const std::array<std::optional<std::int64_t>, 1>& in_dims, const tensor& x) {
      ++fake_sin_vmap_calls;
      return std::pair{fake_sin_op()(x), in_dims[0]};  // elementwise: the op on the physical value
    });
    return o;
  }();
  return op;
}

/// a * tanh(x) with a double parameter, correct backward (from the saved output), vmap rule.
int scaled_tanh_vmap_calls = 0;
scaled_op& scaled_tanh_op() {
  static scaled_op op = [] {
    auto o = xf::custom_op("test3::scaled_tanh", [](const tensor& x, double a) { return xf::tanh(x) * a; });
    o.register_autograd(
        [](xf::autograd::context& ctx, const tensor& g) {
          const double a = ctx.get<double>("a");
          const tensor y = ctx.saved_tensors()[0];  // a tanh(x)
          return g * (a - y * y / a);
        },
        [](xf::autograd::context& ctx, const std::tuple<tensor, double>& in, const tensor& out) {
          ctx.save_for_backward(out);
          ctx.set("a", std::get<1>(in));
        });
    o.register_vmap([](const xf::vmap_info&, const std::array<std::optional<std::int64_t>, 2>& in_dims, const tensor& x,
                       double a) {
      ++scaled_tanh_vmap_calls;
      return std::pair{scaled_tanh_op()(x, a), in_dims[0]};
    });
    return o;
  }();
  return op;
}

// ---- the database -------------------------------------------------------------------------------

struct entry {
  std::string name;
  fn_t f;
  bool correct;      // backward (and jvp) are the true derivatives
  fn_t implied;      // elementwise entries: the derivative the rules imply, d f / dx at x
};

std::vector<entry> database() {
  return {
      {"function softplus (jvp rule, generated vmap)", [](const tensor& x) { return t3_softplus::apply(x); }, true,
       [](const tensor& x) { return xf::sigmoid(x); }},
      {"function fake square (backward 10x, generated vmap)", [](const tensor& x) { return t3_fake_square::apply(x); },
       false, [](const tensor& x) { return x * 10.0; }},
      {"function x*sum(x) (manual vmap)", [](const tensor& x) { return t3_times_sum::apply(x); }, true, fn_t{}},
      {"custom_op test3::cube (loop vmap)", [](const tensor& x) { return cube_op()(x); }, true,
       [](const tensor& x) { return x * x * 3.0; }},
      {"custom_op test3::fake_sin (backward 2cos, vmap rule)", [](const tensor& x) { return fake_sin_op()(x); }, false,
       [](const tensor& x) { return xf::cos(x) * 2.0; }},
      {"custom_op test3::scaled_tanh (double arg, vmap rule)", [](const tensor& x) { return scaled_tanh_op()(x, 1.5); },
       true, [](const tensor& x) { return (1.0 - xf::tanh(x) * xf::tanh(x)) * 1.5; }},
  };
}

// ---- loops and transforms as std::functions (one instantiation for every entry) -----------------

/// f applied to each slice along dim 0, stacked: vmap written as a loop.
fn_t looped(fn_t f) {
  return [f](const tensor& X) {
    std::vector<tensor> r;
    for (std::int64_t i = 0; i < X.size(0); ++i) r.push_back(f(X.select(0, i)));
    return xf::stack(r, 0);
  };
}
fn2_t looped2(fn2_t f) {
  return [f](const tensor& X, const tensor& Y) {
    std::vector<tensor> r;
    for (std::int64_t i = 0; i < X.size(0); ++i) r.push_back(f(X.select(0, i), Y.select(0, i)));
    return xf::stack(r, 0);
  };
}
fn_t vmapped(fn_t f) { return xf::vmap(f); }
fn2_t vmapped2(fn2_t f) { return xf::vmap(f); }
/// (x, v) -> the vjp of f at x applied to v.
fn2_t vjp_of(fn_t f) {
  return [f](const tensor& x, const tensor& v) {
    auto [y, pullback] = xf::vjp(f, x);
    return std::get<0>(pullback(v));
  };
}
/// (x, t) -> the jvp of f at x along t.
fn2_t jvp_of(fn_t f) {
  return [f](const tensor& x, const tensor& t) { return xf::jvp(f, x, t).second; };
}
/// x -> grad of sum(f(x) * w).
fn_t grad_of(fn_t f, tensor w) {
  return [f, w](const tensor& x) { return xf::grad([&](const tensor& p) { return xf::sum(f(p) * w); })(x); };
}
fn_t grad_of_sum(fn_t f) {
  return [f](const tensor& x) { return xf::grad([&](const tensor& p) { return xf::sum(f(p)); })(x); };
}
fn_t bind_second(fn2_t f, tensor v) {
  return [f, v](const tensor& x) { return f(x, v); };
}

// inputs: outer batch 2, inner batch 2, vectors of 3, float64
tensor X3() { return tensor{{{0.3, -1.2, 2.0}, {0.7, 0.1, -0.4}}, {{1.1, -0.6, 0.25}, {-1.5, 0.9, 0.45}}}; }
tensor V3() { return tensor{{{1.0, -0.5, 0.25}, {0.2, 0.4, -1.0}}, {{-0.3, 0.8, 1.5}, {0.6, -0.7, 0.1}}}; }
tensor T3() { return tensor{{{0.5, 1.0, -1.0}, {-0.25, 0.3, 0.9}}, {{0.4, -0.2, 0.7}, {1.2, 0.05, -0.6}}}; }

}  // namespace

TEST_CASE("three transforms: vmap(vjp(vmap(F))) equals map(vjp(map(F)))", "[three][vmap][vjp]") {
  const tensor X = X3(), V = V3();
  for (const entry& e : database()) {
    INFO(e.name);
    const tensor got = vmapped2(vjp_of(vmapped(e.f)))(X, V);
    const tensor ref = looped2(vjp_of(looped(e.f)))(X, V);
    CHECK(close(got, ref));
    if (e.implied) CHECK(close(got, V * e.implied(X)));  // the registered rule is what ran
  }
}

TEST_CASE("three transforms: vjp(vjp(vmap(F))) equals vjp(vjp(map(F)))", "[three][vjp]") {
  const tensor x = X3().select(0, 0), v = V3().select(0, 0), w = T3().select(0, 1);
  for (const entry& e : database()) {
    INFO(e.name);
    const tensor got = vjp_of(bind_second(vjp_of(vmapped(e.f)), v))(x, w);
    const tensor ref = vjp_of(bind_second(vjp_of(looped(e.f)), v))(x, w);
    CHECK(close(got, ref));
  }
}

TEST_CASE("three transforms: jvp(vmap(vmap(F))) equals jvp(map(map(F)))", "[three][jvp][vmap]") {
  const tensor X = X3(), T = T3();
  for (const entry& e : database()) {
    INFO(e.name);
    auto [y, ty] = xf::jvp(vmapped(vmapped(e.f)), X, T);
    auto [y_ref, ty_ref] = xf::jvp(looped(looped(e.f)), X, T);
    CHECK(close(y, y_ref));
    CHECK(close(ty, ty_ref));
    if (e.implied) CHECK(close(ty, T * e.implied(X)));
  }
}

TEST_CASE("three transforms: vmap(jvp(vmap(F))) equals map(jvp(map(F)))", "[three][jvp][vmap]") {
  const tensor X = X3(), T = T3();
  for (const entry& e : database()) {
    INFO(e.name);
    const tensor got = vmapped2(jvp_of(vmapped(e.f)))(X, T);
    const tensor ref = looped2(jvp_of(looped(e.f)))(X, T);
    CHECK(close(got, ref));
    if (e.implied) CHECK(close(got, T * e.implied(X)));
  }
}

TEST_CASE("three transforms: grad(vmap(grad(F))) equals grad(map(grad(F)))", "[three][grad][vmap]") {
  const tensor x = X3().select(0, 1), w = V3().select(0, 0);
  for (const entry& e : database()) {
    INFO(e.name);
    const fn_t inner = grad_of_sum(e.f);
    const tensor got = grad_of(vmapped(inner), w)(x);
    const tensor ref = grad_of(looped(inner), w)(x);
    CHECK(close(got, ref));
    // and vmap(grad(vmap(grad))): per outer example
    const tensor W = xf::stack({w, w * -0.5}, 0);
    const tensor got2 = vmapped2([&](const tensor& xb, const tensor& wb) { return grad_of(vmapped(inner), wb)(xb); })(X3(), W);
    const tensor ref2 = looped2([&](const tensor& xb, const tensor& wb) { return grad_of(looped(inner), wb)(xb); })(X3(), W);
    CHECK(close(got2, ref2));
  }
}

TEST_CASE("three transforms: jacrev and jacfwd of vmap(F) agree with their loops", "[three][jacobian]") {
  const tensor x = X3().select(0, 0);  // [2, 3]
  for (const entry& e : database()) {
    INFO(e.name);
    const tensor jr = xf::jacrev(vmapped(e.f))(x);
    const tensor jf = xf::jacfwd(vmapped(e.f))(x);
    const tensor jr_ref = xf::jacrev(looped(e.f))(x);
    CHECK(jr.shape() == xf::shape_t{2, 3, 2, 3});
    CHECK(close(jr, jr_ref));
    // none of the entries has a jvp rule that disagrees with its backward
    CHECK(close(jf, jr_ref));
    // vmap(jacrev(F)) per example
    const tensor vj = xf::vmap(xf::jacrev(e.f))(x);
    CHECK(close(vj, looped([&](const tensor& r) { return xf::jacrev(e.f)(r); })(x)));
  }
}

TEST_CASE("three transforms: correct entries against finite differences", "[three][gradcheck]") {
  const tensor x = X3().select(0, 0), v = V3().select(0, 0), X = X3();
  for (const entry& e : database()) {
    if (!e.correct) continue;
    INFO(e.name);
    CHECK(xf::testing::gradcheck(e.f, x.select(0, 0)));
    CHECK(xf::testing::gradgradcheck(e.f, x.select(0, 0)));
    CHECK(xf::testing::gradcheck(vmapped(e.f), x));
    CHECK(xf::testing::gradcheck(vmapped(vmapped(e.f)), X));
    // vjp and jvp of x -> vjp(vmap(F))(x, v): second derivatives through vmap
    CHECK(xf::testing::gradcheck(bind_second(vjp_of(vmapped(e.f)), v), x));
    CHECK(xf::testing::gradgradcheck(vmapped(e.f), x));
  }
}

TEST_CASE("three transforms: fake entries fail gradcheck (their rules are used)", "[three][gradcheck]") {
  const tensor x = X3().select(0, 0);
  for (const entry& e : database()) {
    if (e.correct) continue;
    INFO(e.name);
    CHECK_FALSE(xf::testing::gradcheck(vmapped(e.f), x));
  }
}

TEST_CASE("three transforms: the vmap rules were used", "[three][vmap]") {
  const tensor X = X3();
  t3_times_sum::vmap_calls = 0;
  fake_sin_vmap_calls = 0;
  scaled_tanh_vmap_calls = 0;
  (void)vmapped2(vjp_of(vmapped([](const tensor& x) { return t3_times_sum::apply(x); })))(X, V3());
  (void)vmapped2(vjp_of(vmapped([](const tensor& x) { return fake_sin_op()(x); })))(X, V3());
  (void)xf::jvp(vmapped(vmapped([](const tensor& x) { return scaled_tanh_op()(x, 1.5); })), X, T3());
  CHECK(t3_times_sum::vmap_calls >= 1);
  CHECK(fake_sin_vmap_calls >= 1);
  CHECK(scaled_tanh_vmap_calls >= 2);  // once per vmap level
  CHECK(xf::layers::depth() == 0);
}
