// xf::optim: SGD, Adam, AdamW and clip_by_global_norm against torch.optim (reference values from
// generate_reference.py, committed as reference_trajectories.inc), on every pytree kind, through
// grad (meta-learning), jvp and vmap (ensembles), and every documented error.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/hana/define_struct.hpp>
#include <xtensor/xadapt.hpp>

#include <xfunc/optim.hpp>
#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>

#include "reference_trajectories.inc"

namespace xf = xfunc;
namespace opt = xf::optim;

namespace {

using params_t = std::pair<xf::tensor, xf::tensor>;  // (w [2, 3], b [3])

struct model_params {
  BOOST_HANA_DEFINE_STRUCT(model_params, (xf::tensor, w), (double, scale), (xf::tensor, b));
};

xf::tensor make(const std::vector<double>& v, const xf::shape_t& shape) {
  return xf::from_xtensor(xt::adapt(v, {v.size()})).reshape(shape);
}
xf::tensor w_of(const std::vector<double>& v) { return make(v, {2, 3}); }
xf::tensor b_of(const std::vector<double>& v) { return make(v, {3}); }
params_t initial_params() { return {w_of(optim_ref::w0), b_of(optim_ref::b0)}; }
params_t fixed_grads(int k) {
  return {w_of(optim_ref::grads_w[static_cast<std::size_t>(k)]), b_of(optim_ref::grads_b[static_cast<std::size_t>(k)])};
}

// torch's results are float64 computed with the same formulas; only rounding may differ.
bool near(const xf::tensor& got, const std::vector<double>& expect, double rtol = 1e-11, double atol = 1e-13) {
  return xf::allclose(got.to(xf::f64), make(expect, got.shape()), rtol, atol);
}

// loss(w, b) = mean((x w + b - y)^2), as in generate_reference.py
xf::tensor mse(const params_t& p, const xf::tensor& x, const xf::tensor& y) {
  return xf::mean(xf::square(xf::matmul(x, p.first) + p.second - y));
}
xf::tensor train_loss(const params_t& p) { return mse(p, make(optim_ref::x, {4, 2}), make(optim_ref::y, {4, 3})); }
xf::tensor val_loss(const params_t& p) { return mse(p, make(optim_ref::x_val, {4, 2}), make(optim_ref::y_val, {4, 3})); }

// Calls f with the optimizer a reference case describes.
template <class Case, class F>
void with_optimizer(const Case& c, F&& f) {
  if (std::strcmp(c.kind, "sgd") == 0) f(opt::sgd(c.lr, c.momentum));
  else if (std::strcmp(c.kind, "adam") == 0) f(opt::adam(c.lr, c.b1, c.b2, c.eps));
  else f(opt::adamw(c.lr, c.b1, c.b2, c.eps, c.weight_decay));
}

// (a plain function: inside the generic lambdas below, t.item<double>() would need `template`)
double value_of(const xf::tensor& t) { return t.item<double>(); }

}  // namespace

TEST_CASE("sgd, adam and adamw follow torch.optim's trajectories", "[optim]") {
  for (const auto& c : optim_ref::trajectories) {
    INFO("case " << c.name);
    with_optimizer(c, [&](const auto& o) {
      params_t p = initial_params();
      auto state = o.init(p);
      for (int k = 0; k < optim_ref::steps; ++k) {
        INFO("step " << k + 1);
        const params_t g = c.from_loss ? xf::grad(train_loss)(p) : fixed_grads(k);
        std::tie(p, state) = o.update(p, g, state);
        CHECK(near(p.first, c.w[static_cast<std::size_t>(k)]));
        CHECK(near(p.second, c.b[static_cast<std::size_t>(k)]));
      }
      // the state mirrors torch's state dict
      REQUIRE(state.step.dim() == 0);
      CHECK(value_of(state.step) == optim_ref::steps);
      if constexpr (std::is_same_v<std::decay_t<decltype(state)>, opt::sgd_state<params_t>>) {
        CHECK(near(state.momentum_buffer.first, c.first_w));
        CHECK(near(state.momentum_buffer.second, c.first_b));
      } else {
        CHECK(value_of(state.step) == c.step);
        CHECK(near(state.exp_avg.first, c.first_w));
        CHECK(near(state.exp_avg.second, c.first_b));
        CHECK(near(state.exp_avg_sq.first, c.second_w));
        CHECK(near(state.exp_avg_sq.second, c.second_b));
      }
    });
  }
}

TEST_CASE("default hyper-parameters are torch's", "[optim]") {
  CHECK(opt::sgd(0.1).momentum() == optim_ref::sgd_momentum_default);
  const opt::adam a(0.1);
  CHECK(a.b1() == optim_ref::adam_b1_default);
  CHECK(a.b2() == optim_ref::adam_b2_default);
  CHECK(a.eps() == optim_ref::adam_eps_default);
  const opt::adamw w(0.1);
  CHECK(w.b1() == optim_ref::adamw_b1_default);
  CHECK(w.b2() == optim_ref::adamw_b2_default);
  CHECK(w.eps() == optim_ref::adamw_eps_default);
  CHECK(w.weight_decay() == optim_ref::adamw_weight_decay_default);
  CHECK(w.lr() == 0.1);
}

TEST_CASE("clip_by_global_norm matches torch.nn.utils.clip_grad_norm_", "[optim][clip]") {
  const params_t g = fixed_grads(0);
  for (const auto& c : optim_ref::clips) {
    INFO("max_norm " << c.max_norm);
    CHECK(xf::optim::global_norm(g).item<double>() == Approx(c.total_norm).epsilon(1e-13));
    const params_t clipped = opt::clip_by_global_norm(g, c.max_norm);
    CHECK(near(clipped.first, c.w));
    CHECK(near(clipped.second, c.b));
    // out of place: the input is untouched
    CHECK(near(g.first, optim_ref::grads_w[0], 0.0, 0.0));
  }
  // no tensor leaves: nothing to clip, and the norm of nothing is 0
  CHECK(opt::clip_by_global_norm(std::vector<xf::tensor>{}, 1.0).empty());
  CHECK(opt::global_norm(std::vector<xf::tensor>{}).item<double>() == 0.0);
}

TEST_CASE("a NaN gradient gives a NaN norm and NaN clipped gradients, as in torch", "[optim][clip]") {
  // torch.nn.utils.clip_grad_norm_ (error_if_nonfinite=False): total_norm NaN, every gradient
  // multiplied by clamp(max_norm / (NaN + 1e-6), max=1) = NaN. A norm of 0 would hide the NaN
  // from whoever watches the norm, and leave the gradients unclipped.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<xf::tensor> g{xf::tensor{1.0, nan, 3.0}, xf::tensor{4.0}};
  CHECK(std::isnan(opt::global_norm(g).item<double>()));
  for (const xf::tensor& c : opt::clip_by_global_norm(g, 1.0))
    for (std::int64_t i = 0; i < c.numel(); ++i) CHECK(std::isnan(c.reshape({-1}).select(0, i).item<double>()));
  // an infinite entry: the norm is infinite; the finite entries are scaled by 0
  const std::vector<xf::tensor> h{xf::tensor{1.0, std::numeric_limits<double>::infinity()}};
  CHECK(std::isinf(opt::global_norm(h).item<double>()));
  CHECK(opt::clip_by_global_norm(h, 1.0)[0].select(0, 0).item<double>() == 0.0);
  // the derivative of the norm at an all-zero gradient stays 0
  const xf::tensor d = xf::grad([](const xf::tensor& x) { return opt::global_norm(std::vector<xf::tensor>{x}); })(
      xf::zeros({3}, xf::f64));
  CHECK(xf::equal(d, xf::zeros({3}, xf::f64)));
}

TEST_CASE("optimizers work on every pytree kind", "[optim][pytree]") {
  // adam_custom on fixed gradients, with the parameters held in different containers; the update is
  // leaf-wise, so each leaf follows torch's trajectory for that leaf.
  const auto& c = optim_ref::trajectories[3];
  REQUIRE(std::string(c.name) == "adam_custom");
  const opt::adam o(c.lr, c.b1, c.b2, c.eps);
  const auto last = static_cast<std::size_t>(optim_ref::steps - 1);

  SECTION("a single tensor") {
    xf::tensor w = initial_params().first;
    auto s = o.init(w);
    for (int k = 0; k < optim_ref::steps; ++k) std::tie(w, s) = o.update(w, fixed_grads(k).first, s);
    CHECK(near(w, c.w[last]));
    CHECK(near(s.exp_avg_sq, c.second_w));
  }
  SECTION("std::vector") {
    std::vector<xf::tensor> p{initial_params().first, initial_params().second};
    auto s = o.init(p);
    for (int k = 0; k < optim_ref::steps; ++k) {
      const params_t g = fixed_grads(k);
      std::tie(p, s) = o.update(p, std::vector<xf::tensor>{g.first, g.second}, s);
    }
    REQUIRE(p.size() == 2);
    CHECK(near(p[0], c.w[last]));
    CHECK(near(p[1], c.b[last]));
    CHECK(near(s.exp_avg[1], c.first_b));
  }
  SECTION("nested std::tuple and std::array") {
    using tree = std::tuple<std::array<xf::tensor, 1>, xf::tensor>;
    tree p{{initial_params().second}, initial_params().first};
    auto s = o.init(p);
    for (int k = 0; k < optim_ref::steps; ++k) {
      const params_t g = fixed_grads(k);
      std::tie(p, s) = o.update(p, tree{{g.second}, g.first}, s);
    }
    CHECK(near(std::get<0>(p)[0], c.b[last]));
    CHECK(near(std::get<1>(p), c.w[last]));
  }
  SECTION("a Boost.Hana struct, whose non-tensor leaves pass through") {
    model_params p{initial_params().first, 2.5, initial_params().second};
    auto s = o.init(p);
    CHECK(s.exp_avg.scale == 2.5);
    for (int k = 0; k < optim_ref::steps; ++k) {
      const params_t g = fixed_grads(k);
      std::tie(p, s) = o.update(p, model_params{g.first, 0.0, g.second}, s);
    }
    CHECK(near(p.w, c.w[last]));
    CHECK(near(p.b, c.b[last]));
    CHECK(p.scale == 2.5);
  }
  SECTION("float32 leaves stay float32 and follow the float64 trajectory closely") {
    params_t p{initial_params().first.to(xf::f32), initial_params().second.to(xf::f32)};
    auto s = o.init(p);
    for (int k = 0; k < optim_ref::steps; ++k) {
      const params_t g = fixed_grads(k);
      std::tie(p, s) = o.update(p, params_t{g.first.to(xf::f32), g.second.to(xf::f32)}, s);
    }
    CHECK(p.first.dtype() == xf::f32);
    CHECK(s.exp_avg.second.dtype() == xf::f32);
    CHECK(near(p.first, c.w[last], 1e-5, 1e-6));
    CHECK(near(p.second, c.b[last], 1e-5, 1e-6));
  }
}

TEST_CASE("update is out of place", "[optim]") {
  const params_t p = initial_params(), g = fixed_grads(0);
  const opt::sgd o(0.1, 0.9);
  const auto s0 = o.init(p);
  auto [p1, s1] = o.update(p, g, s0);
  auto [p2, s2] = o.update(p1, g, s1);
  CHECK(near(p.first, optim_ref::w0, 0.0, 0.0));
  CHECK(s0.step.item<double>() == 0.0);
  CHECK(s1.step.item<double>() == 1.0);
  CHECK(s2.step.item<double>() == 2.0);
  CHECK(xf::equal(s0.momentum_buffer.first, xf::zeros_like(p.first)));
  CHECK(xf::equal(s1.momentum_buffer.first, g.first));  // torch: the first buffer is the gradient
  CHECK_FALSE(xf::same_storage(p1.first, p.first));
  CHECK_FALSE(xf::same_storage(p2.first, p1.first));
}

TEST_CASE("grad through optimizer updates (MAML) matches torch autograd", "[optim][grad]") {
  for (const auto& c : optim_ref::metas) {
    INFO("case " << c.name);
    with_optimizer(c, [&](const auto& o) {
      // the validation loss after c.inner_steps updates on the training loss, as a function of p0
      auto meta_loss = [&](const params_t& p0) {
        params_t p = p0;
        auto s = o.init(p);
        for (int k = 0; k < c.inner_steps; ++k) std::tie(p, s) = o.update(p, xf::grad(train_loss)(p), s);
        return val_loss(p);
      };
      const auto [g, value] = xf::grad_and_value(meta_loss)(initial_params());
      CHECK(value_of(value) == Approx(c.meta_loss).epsilon(1e-12));
      CHECK(near(g.first, c.grad_w, 1e-9, 1e-12));
      CHECK(near(g.second, c.grad_b, 1e-9, 1e-12));
    });
  }
}

TEST_CASE("vjp and jvp of an update match finite differences", "[optim][grad][jvp]") {
  // d(new params, new state) / d(params, grads, state) after one warm-up step, so that every state
  // leaf is non-zero; in float64 against central differences (vjp and jvp both).
  const params_t p0 = initial_params();
  const auto check = [&](const auto& o) {
    const auto s1 = o.update(p0, fixed_grads(0), o.init(p0)).second;
    auto f = [&](const xf::tensor& w, const xf::tensor& gw, const xf::tensor& b) {
      return o.update(params_t{w, b}, params_t{gw, fixed_grads(1).second}, s1);
    };
    CHECK(xf::testing::gradcheck(f, xf::testing::raise, p0.first, fixed_grads(1).first, p0.second));
  };
  check(opt::sgd(0.1, 0.9));
  check(opt::adam(0.05, 0.8, 0.9, 1e-3));
  check(opt::adamw(0.05, 0.8, 0.9, 1e-3, 0.1));
  // the state itself is differentiable input too (jvp of the Adam update along the moments)
  const opt::adam a(0.05, 0.8, 0.9, 1e-3);
  const auto s1 = a.update(p0, fixed_grads(0), a.init(p0)).second;
  auto through_state = [&](const xf::tensor& m, const xf::tensor& v) {
    return a.update(p0, fixed_grads(1), opt::adam_state<params_t>{s1.step, {m, s1.exp_avg.second}, {v, s1.exp_avg_sq.second}})
        .first;
  };
  CHECK(xf::testing::gradcheck(through_state, xf::testing::raise, s1.exp_avg.first, s1.exp_avg_sq.first));
  // jvp directly: the tangent of the new parameters along a direction in w
  const xf::tensor dir = w_of(optim_ref::grads_w[2]);
  auto step_w = [&](const xf::tensor& w) { return a.update(params_t{w, p0.second}, fixed_grads(1), s1).first.first; };
  const auto [out, tangent] = xf::jvp(step_w, std::tuple{p0.first}, std::tuple{dir});
  const double h = 1e-6;
  const xf::tensor fd = (step_w(p0.first + h * dir) - step_w(p0.first - h * dir)) / (2 * h);
  CHECK(xf::allclose(out, step_w(p0.first)));
  CHECK(xf::allclose(tangent, fd, 1e-6, 1e-8));
}

TEST_CASE("vmap of update over an ensemble equals a loop over its members", "[optim][vmap]") {
  constexpr std::int64_t E = 3;
  xf::manual_seed(11);
  const params_t stacked{xf::randn({E, 2, 3}, xf::f64), xf::randn({E, 3}, xf::f64)};
  std::vector<params_t> grads;
  for (int k = 0; k < 3; ++k) grads.push_back({xf::randn({E, 2, 3}, xf::f64), xf::randn({E, 3}, xf::f64)});
  const auto member = [](const params_t& p, std::int64_t e) { return params_t{p.first.select(0, e), p.second.select(0, e)}; };

  const auto check = [&](const auto& o) {
    using state_t = decltype(o.init(stacked));
    auto init = xf::vmap([&](const params_t& p) { return o.init(p); });
    auto update = xf::vmap([&](const params_t& p, const params_t& g, const state_t& s) { return o.update(p, g, s); });
    params_t p = stacked;
    auto s = init(p);
    REQUIRE(s.step.shape() == xf::shape_t{E});  // one count per member
    for (const auto& g : grads) std::tie(p, s) = update(p, g, s);
    for (std::int64_t e = 0; e < E; ++e) {
      INFO("member " << e);
      params_t q = member(stacked, e);
      auto t = o.init(q);
      for (const auto& g : grads) std::tie(q, t) = o.update(q, member(g, e), t);
      CHECK(xf::allclose(p.first.select(0, e), q.first, 1e-12, 1e-14));
      CHECK(xf::allclose(p.second.select(0, e), q.second, 1e-12, 1e-14));
      CHECK(value_of(s.step.select(0, e)) == value_of(t.step));
    }
  };
  check(opt::sgd(0.1, 0.9));
  check(opt::adam(0.05));
  check(opt::adamw(0.05, 0.8, 0.99, 1e-6, 0.1));
}

TEST_CASE("vmap of clip_by_global_norm clips each example separately", "[optim][clip][vmap]") {
  xf::manual_seed(5);
  // per-example gradients [B, ...] with norms on both sides of the bound
  const params_t per_example{xf::randn({4, 2, 3}, xf::f64) * xf::tensor{0.1, 1.0, 3.0, 0.01}.reshape({4, 1, 1}),
                             xf::randn({4, 3}, xf::f64)};
  const double max_norm = 1.5;
  const params_t clipped = xf::vmap([&](const params_t& g) { return opt::clip_by_global_norm(g, max_norm); })(per_example);
  int clipped_count = 0;
  for (std::int64_t i = 0; i < 4; ++i) {
    const params_t g{per_example.first.select(0, i), per_example.second.select(0, i)};
    const params_t expect = opt::clip_by_global_norm(g, max_norm);
    CHECK(xf::allclose(clipped.first.select(0, i), expect.first, 1e-12, 1e-14));
    CHECK(xf::allclose(clipped.second.select(0, i), expect.second, 1e-12, 1e-14));
    const double n = opt::global_norm(g).item<double>(), m = opt::global_norm(expect).item<double>();
    CHECK(m <= max_norm);
    if (n > max_norm) {
      ++clipped_count;
      CHECK(m == Approx(max_norm).epsilon(1e-5));
    } else {
      CHECK(m == Approx(n).epsilon(1e-5));
    }
  }
  CHECK(clipped_count > 0);
  CHECK(clipped_count < 4);
  // differentiable: against finite differences on both sides of the bound
  auto clip2 = [](const xf::tensor& a, const xf::tensor& b) { return opt::clip_by_global_norm(params_t{a, b}, 1.5); };
  CHECK(xf::testing::gradcheck(clip2, xf::testing::raise, per_example.first.select(0, 2), per_example.second.select(0, 2)));
  CHECK(xf::testing::gradcheck(clip2, xf::testing::raise, per_example.first.select(0, 3) * 0.1,
                               per_example.second.select(0, 3) * 0.1));
}

TEST_CASE("global_norm and clip_by_global_norm have finite derivatives at a zero gradient", "[optim][clip][grad]") {
  // below the bound clipping is the identity (coefficient 1), also at 0, where sqrt's derivative is
  // infinite
  const xf::tensor zero = xf::zeros({3}, xf::f64);
  const xf::tensor g = xf::grad([](const xf::tensor& x) { return xf::sum(opt::clip_by_global_norm(x, 1.0) * xf::tensor{1.0, 2.0, 3.0}); })(zero);
  CHECK(xf::allclose(g, xf::tensor{1.0, 2.0, 3.0}));
  CHECK(xf::allclose(xf::grad([](const xf::tensor& x) { return opt::global_norm(x); })(zero), zero));
  // and the norm still has its usual derivative x / |x| elsewhere
  const xf::tensor x{3.0, 0.0, -4.0};
  CHECK(xf::allclose(xf::grad([](const xf::tensor& v) { return opt::global_norm(v); })(x), x / 5.0));
}

TEST_CASE("invalid hyper-parameters throw", "[optim][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  using Catch::Contains;
  CHECK_THROWS_WITH(opt::sgd(-0.1), Contains("optim") && Contains("lr"));
  CHECK_THROWS_WITH(opt::sgd(nan), Contains("optim") && Contains("lr"));
  CHECK_THROWS_WITH(opt::sgd(0.1, -0.5), Contains("optim") && Contains("momentum"));
  CHECK_THROWS_WITH(opt::adam(-1e-3), Contains("optim") && Contains("lr"));
  CHECK_THROWS_WITH(opt::adam(inf), Contains("optim") && Contains("lr"));
  CHECK_THROWS_WITH(opt::adam(1e-3, 1.0), Contains("optim") && Contains("b1"));
  CHECK_THROWS_WITH(opt::adam(1e-3, -0.1), Contains("optim") && Contains("b1"));
  CHECK_THROWS_WITH(opt::adam(1e-3, 0.9, 1.0), Contains("optim") && Contains("b2"));
  CHECK_THROWS_WITH(opt::adam(1e-3, 0.9, nan), Contains("optim") && Contains("b2"));
  CHECK_THROWS_WITH(opt::adam(1e-3, 0.9, 0.999, -1e-8), Contains("optim") && Contains("eps"));
  CHECK_THROWS_WITH(opt::adamw(-1e-3), Contains("optim") && Contains("lr"));
  CHECK_THROWS_WITH(opt::adamw(1e-3, 1.5), Contains("optim") && Contains("b1"));
  CHECK_THROWS_WITH(opt::adamw(1e-3, 0.9, -0.5), Contains("optim") && Contains("b2"));
  CHECK_THROWS_WITH(opt::adamw(1e-3, 0.9, 0.999, -1.0), Contains("optim") && Contains("eps"));
  CHECK_THROWS_WITH(opt::adamw(1e-3, 0.9, 0.999, 1e-8, -0.01), Contains("optim") && Contains("weight_decay"));
  const params_t g = fixed_grads(0);
  CHECK_THROWS_WITH(opt::clip_by_global_norm(g, -1.0), Contains("optim") && Contains("max_norm"));
  CHECK_THROWS_WITH(opt::clip_by_global_norm(g, inf), Contains("optim") && Contains("max_norm"));
  CHECK_THROWS_WITH(opt::clip_by_global_norm(g, nan), Contains("optim") && Contains("max_norm"));
  // the boundaries themselves are valid
  CHECK_NOTHROW(opt::sgd(0.0, 0.0));
  CHECK_NOTHROW(opt::adamw(0.0, 0.0, 0.0, 0.0, 0.0));
  CHECK_NOTHROW(opt::clip_by_global_norm(g, 0.0));
}

TEST_CASE("params, grads and state that do not match throw, naming the leaf", "[optim][errors]") {
  using Catch::Contains;
  using vec_t = std::vector<xf::tensor>;
  const vec_t p{xf::ones({2, 3}, xf::f64), xf::ones({3}, xf::f64)};
  const opt::adam a(0.1);
  const opt::sgd s(0.1, 0.9);
  const auto as = a.init(p);
  const auto ss = s.init(p);
  // structure: a vector of another length
  CHECK_THROWS_WITH(a.update(p, vec_t{p[0]}, as), Contains("optim") && Contains("grads") && Contains("structure"));
  CHECK_THROWS_WITH(s.update(p, p, s.init(vec_t{p[0]})),
                    Contains("optim") && Contains("state.momentum_buffer") && Contains("structure"));
  CHECK_THROWS_WITH(a.update(p, p, a.init(vec_t{p[0], p[1], p[1]})), Contains("state.exp_avg") && Contains("structure"));
  // same number of leaves, different nesting
  using nested = std::vector<vec_t>;
  const nested n{{p[0]}, {p[1], p[1]}};
  CHECK_THROWS_WITH(a.update(n, nested{{p[0], p[1]}, {p[1]}}, a.init(n)), Contains("grads") && Contains("structure"));
  // shapes and dtypes, with the leaf index
  CHECK_THROWS_WITH(a.update(p, vec_t{p[0], xf::ones({4}, xf::f64)}, as),
                    Contains("optim") && Contains("leaf 1 of grads") && Contains("shape"));
  CHECK_THROWS_WITH(s.update(p, vec_t{p[0].to(xf::f32), p[1]}, ss),
                    Contains("optim") && Contains("leaf 0 of grads") && Contains("dtype"));
  CHECK_THROWS_WITH(a.update(p, p, a.init(vec_t{p[0], xf::ones({3}, xf::f32)})),
                    Contains("leaf 1 of state.exp_avg") && Contains("dtype"));
  auto bad_sq = as;
  bad_sq.exp_avg_sq[0] = xf::zeros({3, 2}, xf::f64);
  CHECK_THROWS_WITH(a.update(p, p, bad_sq), Contains("leaf 0 of state.exp_avg_sq") && Contains("shape"));
  CHECK_THROWS_WITH(a.update(p, vec_t{p[0], xf::tensor{}}, as), Contains("leaf 1 of grads") && Contains("undefined"));
  // parameters must be floating tensors
  CHECK_THROWS_WITH(s.init(vec_t{p[0], xf::tensor{1, 2, 3}}), Contains("optim") && Contains("leaf 1 of params"));
  CHECK_THROWS_WITH(a.init(xf::tensor{}), Contains("optim") && Contains("leaf 0 of params"));
  // the step count must be the 0-d tensor init made
  auto bad_step = as;
  bad_step.step = xf::zeros({2}, xf::f64);
  CHECK_THROWS_WITH(a.update(p, p, bad_step), Contains("optim") && Contains("state.step"));
  auto no_step = ss;
  no_step.step = xf::tensor{};
  CHECK_THROWS_WITH(s.update(p, p, no_step), Contains("optim") && Contains("state.step"));
  // global_norm of integer leaves
  CHECK_THROWS_WITH(opt::clip_by_global_norm(xf::tensor{1, 2}, 1.0), Contains("optim") && Contains("floating"));
}
