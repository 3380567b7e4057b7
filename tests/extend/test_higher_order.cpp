// Higher-order operators (API.md §4.3): xf::interpreter and xf::layers::top(), user-defined
// xf::higher_order_op rules (vmap, jvp, a grad rule with single_level_function, the "no rule"
// error), and the built-ins cond, map, scan and while_loop under every transform.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>
// after xfunc.hpp: single_level_function (API.md §4.2)
#include <xfunc/extend/function.hpp>

namespace xf = xfunc;
using Catch::Matchers::Contains;

namespace {
xf::tensor rows_stacked(const std::vector<xf::tensor>& rows) { return xf::stack(rows, 0); }
}  // namespace

// ---- interpreter ---------------------------------------------------------------------------

TEST_CASE("layers::top outside any transform throws", "[hop][interpreter]") {
  CHECK(xf::layers::depth() == 0);
  CHECK_THROWS_WITH(xf::layers::top(), Contains("no transform is active"));
}

TEST_CASE("interpreter of a vmap layer", "[hop][interpreter]") {
  const xf::tensor x = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({2, 3});
  const xf::tensor captured{7.0, 8.0, 9.0};
  auto y = xf::vmap(
      [&](const xf::tensor& r) {
        xf::interpreter I = xf::layers::top();
        CHECK(I.kind() == xf::transform_kind::vmap);
        CHECK(I.batch_size() == 2);
        CHECK(I.randomness() == xf::randomness::same);
        xf::unwrapped u = I.unwrap(r);
        REQUIRE(u.bdim.has_value());
        CHECK(*u.bdim == 0);
        CHECK(u.value.shape() == xf::shape_t{2, 3});
        CHECK(!u.tangent.defined());
        xf::unwrapped c = I.unwrap(captured);  // not of this layer: itself, no bdim
        CHECK(!c.bdim.has_value());
        CHECK(c.value.impl() == captured.impl());
        {
          auto lowered = I.lower();
          CHECK(xf::layers::depth() == 0);
        }
        CHECK(xf::layers::depth() == 1);
        CHECK_THROWS_WITH(I.wrap(xf::ones({5, 3}, xf::f64), 0), Contains("batch size"));
        CHECK(I.wrap(captured).impl() == captured.impl());  // unbatched: the value itself
        // the batch dim may sit anywhere in the physical value
        return I.wrap(u.value.t() * 2.0, 1);
      },
      xf::randomness::same)(x);
  CHECK(xf::allclose(y, x * 2.0));
}

TEST_CASE("interpreter of a jvp layer", "[hop][interpreter]") {
  const xf::tensor x{1.0, 2.0}, t{0.5, -1.0};
  auto [out, tan] = xf::jvp(
      [&](const xf::tensor& p) {
        xf::interpreter I = xf::layers::top();
        CHECK(I.kind() == xf::transform_kind::jvp);
        CHECK_THROWS_WITH(I.batch_size(), Contains("only defined for vmap"));
        CHECK_THROWS_WITH(I.wrap(p, 0), Contains("only defined for vmap"));
        xf::unwrapped u = I.unwrap(p);
        CHECK(!u.bdim.has_value());
        CHECK(xf::allclose(u.value, x));
        CHECK(xf::allclose(u.tangent, t));
        return I.wrap(u.value * 3.0, u.tangent * 5.0);
      },
      x, t);
  CHECK(xf::allclose(out, x * 3.0));
  CHECK(xf::allclose(tan, t * 5.0));
  // wrap(value): a zero tangent
  auto [o2, t2] = xf::jvp([](const xf::tensor& p) { return p + xf::layers::top().wrap(xf::tensor{1.0, 1.0}); }, x, t);
  CHECK(xf::allclose(t2, t));
}

TEST_CASE("interpreter of a grad layer: wrap(value) records no derivative", "[hop][interpreter]") {
  const xf::tensor x{1.0, 2.0, 3.0};
  auto g = xf::grad([&](const xf::tensor& p) {
    xf::interpreter I = xf::layers::top();
    CHECK(I.kind() == xf::transform_kind::grad);
    xf::unwrapped u = I.unwrap(p);
    CHECK(u.value.impl()->is_dense());
    CHECK(!u.bdim.has_value());
    xf::tensor c = I.wrap(xf::tensor{1.0, 2.0, 3.0});
    c.add_(p);  // a tensor of this layer: in-place is allowed, and now depends on p
    return xf::sum(p * c);
  })(x);
  // d/dp sum(p * (k + p)) = k + 2p
  CHECK(xf::allclose(g, xf::tensor{1.0, 2.0, 3.0} + 2.0 * x));
}

TEST_CASE("interpreter of a functionalize layer", "[hop][interpreter]") {
  const xf::tensor x{1.0, 2.0};
  auto y = xf::functionalize([](const xf::tensor& p) {
    xf::interpreter I = xf::layers::top();
    CHECK(I.kind() == xf::transform_kind::functionalize);
    xf::tensor acc = I.wrap(xf::zeros({2}, xf::f64));
    acc.add_(p);
    acc.mul_(3.0);
    return acc;
  })(x);
  CHECK(xf::allclose(y, x * 3.0));
}

TEST_CASE("levels and lower() across nested layers", "[hop][interpreter]") {
  const xf::tensor x = xf::ones({2, 3}, xf::f64);
  xf::vmap(xf::grad([](const xf::tensor& r) {
    xf::interpreter top = xf::layers::top();
    CHECK(top.kind() == xf::transform_kind::grad);
    {
      auto lowered = top.lower();
      xf::interpreter below = xf::layers::top();
      CHECK(below.kind() == xf::transform_kind::vmap);
      CHECK(below.level() < top.level());
      CHECK(xf::layers::depth() == 1);
    }
    CHECK(xf::layers::depth() == 2);
    return xf::sum(r);
  }))(x);
}

// ---- user-defined higher-order ops -----------------------------------------------------------

TEST_CASE("a user higher_order_op with vmap and jvp rules", "[hop][user]") {
  int vmap_calls = 0, jvp_calls = 0;
  // y = k x^2
  xf::higher_order_op<xf::tensor(const xf::tensor&, double)> sq_scale{
      "test::sq_scale", [](const xf::tensor& x, double k) { return x * x * k; }};
  sq_scale.impl(xf::transform_kind::vmap, [&](xf::interpreter& I, const xf::tensor& x, double k) {
    ++vmap_calls;
    xf::unwrapped u = I.unwrap(x);
    xf::tensor out;
    {
      auto lowered = I.lower();
      out = sq_scale(u.value, k);  // the whole batch at once, one layer down
    }
    return I.wrap(out, u.bdim);
  });
  sq_scale.impl(xf::transform_kind::jvp, [&](xf::interpreter& I, const xf::tensor& x, double k) {
    ++jvp_calls;
    xf::unwrapped u = I.unwrap(x);
    auto lowered = I.lower();
    xf::tensor out = sq_scale(u.value, k);
    xf::tensor tan = u.tangent.defined() ? u.value * u.tangent * (2.0 * k) : xf::tensor();
    return I.wrap(out, tan);
  });
  CHECK(sq_scale.name() == "test::sq_scale");
  CHECK(sq_scale.has_impl(xf::transform_kind::vmap));
  CHECK(!sq_scale.has_impl(xf::transform_kind::grad));

  const xf::tensor x{1.0, -2.0, 3.0}, t{1.0, 0.5, -1.0};
  CHECK(xf::allclose(sq_scale(x, 3.0), 3.0 * x * x));

  const xf::tensor X = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({2, 3});
  auto f = [&](const xf::tensor& r) { return sq_scale(r, 2.0); };
  CHECK(xf::allclose(xf::vmap(f)(X), 2.0 * X * X));
  CHECK(vmap_calls == 1);
  CHECK(xf::allclose(xf::vmap(f, xf::in_dims(1))(X), 2.0 * X.t() * X.t()));
  CHECK(xf::allclose(xf::vmap(xf::vmap(f))(X.reshape({2, 3, 1})), (2.0 * X * X).reshape({2, 3, 1})));

  auto [out, tan] = xf::jvp([&](const xf::tensor& p) { return sq_scale(p, 3.0); }, x, t);
  CHECK(xf::allclose(out, 3.0 * x * x));
  CHECK(xf::allclose(tan, 6.0 * x * t));
  CHECK(jvp_calls == 1);

  // jacfwd = vmap(jvp): the jvp rule runs at the jvp layer, its lowered call at the vmap layer
  xf::tensor J = xf::jacfwd([&](const xf::tensor& p) { return sq_scale(p, 3.0); })(x);
  CHECK(xf::allclose(J, xf::eye(3, xf::f64) * (6.0 * x)));
  // per-example jvp: jvp inside vmap
  auto per_example = xf::vmap([&](const xf::tensor& p, const xf::tensor& tp) {
    return xf::jvp([&](const xf::tensor& q) { return sq_scale(q, 1.0); }, p, tp).second;
  })(X, X + 1.0);
  CHECK(xf::allclose(per_example, 2.0 * X * (X + 1.0)));

  // no grad rule: a clear error naming the op and the transform
  CHECK_THROWS_WITH(xf::grad([&](const xf::tensor& p) { return xf::sum(sq_scale(p, 1.0)); })(x),
                    Contains("test::sq_scale") && Contains("no rule for the grad transform"));
  // replacing a rule
  const int calls_before = vmap_calls;
  sq_scale.impl(xf::transform_kind::vmap, [](xf::interpreter&, const xf::tensor& p, double k) { return p * p * k; });
  CHECK(xf::allclose(xf::vmap(f)(X), 2.0 * X * X));
  CHECK(vmap_calls == calls_before);  // the old rule no longer runs
}

namespace {
xf::tensor cube_dense(const xf::tensor& x) { return x * x * x; }

xf::higher_order_op<xf::tensor(const xf::tensor&)>& cube_op();

/// cube's derivative stated at the grad layer: forward runs the op one layer down.
struct cube_slf : xf::autograd::single_level_function<cube_slf> {
  static xf::tensor forward(const xf::tensor& x) { return cube_op()(x); }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<xf::tensor>& inputs, const xf::tensor&) {
    ctx.save_for_backward(std::get<0>(inputs));
  }
  static xf::tensor backward(xf::autograd::context& ctx, const xf::tensor& g) {
    const xf::tensor x = ctx.saved_tensors()[0];
    return g * 3.0 * x * x;
  }
};

int cube_grad_rule_calls = 0;

xf::higher_order_op<xf::tensor(const xf::tensor&)>& cube_op() {
  static xf::higher_order_op<xf::tensor(const xf::tensor&)> op{"test::cube", cube_dense};
  static const bool registered = [] {
    op.impl(xf::transform_kind::grad, [](xf::interpreter&, const xf::tensor& x) {
      ++cube_grad_rule_calls;
      return cube_slf::apply(x);
    });
    // vmap: run at this layer; the ops batch themselves
    op.impl(xf::transform_kind::vmap, [](xf::interpreter&, const xf::tensor& x) { return cube_dense(x); });
    return true;
  }();
  (void)registered;
  return op;
}
}  // namespace

TEST_CASE("a user higher_order_op whose grad rule is a single_level_function", "[hop][user][grad]") {
  const xf::tensor x{1.0, -2.0, 0.5};
  CHECK(xf::allclose(cube_op()(x), x * x * x));
  cube_grad_rule_calls = 0;
  auto g = xf::grad([](const xf::tensor& p) { return xf::sum(cube_op()(p)); })(x);
  CHECK(xf::allclose(g, 3.0 * x * x));
  CHECK(cube_grad_rule_calls == 1);
  // the backward is written with ops: it is differentiable (grad of grad) and batchable
  auto gg = xf::grad([](const xf::tensor& p) {
    return xf::sum(xf::grad([](const xf::tensor& q) { return xf::sum(cube_op()(q)); })(p));
  })(x);
  CHECK(xf::allclose(gg, 6.0 * x));
  const xf::tensor X = xf::arange(1.0, 7.0, 1.0, xf::f64).reshape({2, 3});
  auto pe = xf::vmap(xf::grad([](const xf::tensor& r) { return xf::sum(cube_op()(r)); }))(X);
  CHECK(xf::allclose(pe, 3.0 * X * X));
  // outside a higher-order op's grad rule it is refused
  CHECK_THROWS_WITH(xf::grad([](const xf::tensor& p) { return xf::sum(cube_slf::apply(p)); })(x),
                    Contains("single-level"));
}

// ---- cond ------------------------------------------------------------------------------------

namespace {
auto twice = [](const xf::tensor& a) { return a * 2.0; };
auto negate = [](const xf::tensor& a) { return -a; };
}  // namespace

TEST_CASE("cond picks a branch", "[hop][cond]") {
  const xf::tensor x{1.0, 2.0};
  CHECK(xf::allclose(xf::cond(xf::scalar(true), twice, negate, x), x * 2.0));
  CHECK(xf::allclose(xf::cond(xf::scalar(false), twice, negate, x), -x));
  CHECK(xf::allclose(xf::cond(xf::scalar(0.0), twice, negate, x), -x));  // numeric pred
  CHECK(xf::allclose(xf::cond(xf::scalar(3), twice, negate, x), x * 2.0));
  // several operands, a pytree result, and the branch not taken sees meta tensors only
  bool untaken_on_meta = false;
  auto [s, d] = xf::cond(
      xf::sum(x) > 0.0, [](const xf::tensor& a, const xf::tensor& b) { return std::pair{a + b, a - b}; },
      [&](const xf::tensor& a, const xf::tensor& b) {
        untaken_on_meta = a.device() == xf::meta && b.device() == xf::meta;
        return std::pair{a * b, a / b};
      },
      x, xf::tensor{3.0, 4.0});
  CHECK(xf::allclose(s, xf::tensor{4.0, 6.0}));
  CHECK(xf::allclose(d, xf::tensor{-2.0, -2.0}));
  CHECK(untaken_on_meta);
}

TEST_CASE("checking the branch not taken changes no tensor and draws no random number", "[hop][cond]") {
  const xf::tensor x{1.0, 2.0, 3.0};
  xf::tensor counter = xf::zeros({1}, xf::f64), buf = xf::zeros({3}, xf::f64);
  auto writes = [&](const xf::tensor& a) {
    counter.add_(1.0);  // a captured tensor with data, written with a plain value
    buf.copy_(a);       // ... and with the (meta) operand
    return a * 3.0 + xf::randn({3}, xf::f64);
  };
  xf::manual_seed(5);
  const xf::tensor expect_draw = xf::randn({3}, xf::f64);
  xf::manual_seed(5);
  const xf::tensor y = xf::cond(xf::scalar(true), twice, writes, x);
  CHECK(xf::allclose(y, x * 2.0));
  CHECK(xf::equal(counter, xf::zeros({1}, xf::f64)));
  CHECK(xf::equal(buf, xf::zeros({3}, xf::f64)));
  CHECK(xf::equal(xf::randn({3}, xf::f64), expect_draw));  // the generator is where it was
  // when that branch is taken, its effects happen
  const xf::tensor z = xf::cond(xf::scalar(false), twice, writes, x);
  CHECK(xf::equal(counter, xf::ones({1}, xf::f64)));
  CHECK(xf::equal(buf, x));
  CHECK(z.shape() == xf::shape_t{3});
  // the checked writes still check shapes: a write that cannot fit is the cond error
  auto bad_write = [&](const xf::tensor& a) {
    counter.add_(xf::ones({2}, xf::f64));
    return a;
  };
  CHECK_THROWS_WITH(xf::cond(xf::scalar(true), twice, bad_write, x), Contains("cond") && Contains("xf::add_"));
  CHECK(xf::equal(counter, xf::ones({1}, xf::f64)));
}

TEST_CASE("cond errors", "[hop][cond]") {
  const xf::tensor x{1.0, 2.0};
  auto to_sum = [](const xf::tensor& a) { return xf::sum(a); };
  // shape mismatch, whichever branch is taken (the other is checked on meta tensors)
  CHECK_THROWS_WITH(xf::cond(xf::scalar(true), twice, to_sum, x), Contains("cond"));
  CHECK_THROWS_WITH(xf::cond(xf::scalar(false), twice, to_sum, x), Contains("cond") && Contains("shape"));
  CHECK_THROWS_WITH(xf::cond(xf::scalar(true), twice, [](const xf::tensor& a) { return a.to(xf::f32); }, x),
                    Contains("cond") && Contains("dtype"));
  // under vmap with a batched pred (both branches run)
  CHECK_THROWS_WITH(
      xf::vmap([&](const xf::tensor& r) { return xf::cond(xf::sum(r) > 1.5, twice, to_sum, r); })(xf::ones({3, 2})),
      Contains("cond"));
  CHECK_THROWS_WITH(xf::cond(x > 0.0, twice, negate, x), Contains("cond") && Contains("0-d"));
}

TEST_CASE("grad of cond differentiates the taken branch", "[hop][cond][grad]") {
  auto f = [](const xf::tensor& p) {
    return xf::sum(xf::cond(
        xf::sum(p) > 0.0, [](const xf::tensor& a) { return xf::sin(a) * a; }, [](const xf::tensor& a) { return xf::exp(a); },
        p));
  };
  const xf::tensor pos{0.5, 1.0, -0.2}, neg{-0.5, -1.0, 0.2};
  CHECK(xf::allclose(xf::grad(f)(pos), xf::sin(pos) + pos * xf::cos(pos)));
  CHECK(xf::allclose(xf::grad(f)(neg), xf::exp(neg)));
  CHECK(xf::testing::gradcheck(f, pos));
  CHECK(xf::testing::gradcheck(f, neg));
  // jacrev of a vector-valued cond
  auto h = [](const xf::tensor& p) {
    return xf::cond(p.select(0, 0) > 0.0, [](const xf::tensor& a) { return a * a; }, [](const xf::tensor& a) { return a * 3.0; },
                    p);
  };
  CHECK(xf::allclose(xf::jacrev(h)(pos), xf::eye(3, xf::f64) * (2.0 * pos)));
  CHECK(xf::allclose(xf::jacrev(h)(neg), xf::eye(3, xf::f64) * 3.0));
  CHECK(xf::allclose(xf::jacfwd(h)(pos), xf::jacrev(h)(pos)));
}

TEST_CASE("cond under vmap", "[hop][cond][vmap]") {
  const xf::tensor X{{1.0, 2.0}, {-3.0, 0.5}, {0.0, -1.0}};
  auto f = [](const xf::tensor& r) {
    return xf::cond(xf::sum(r) > 0.0, [](const xf::tensor& a) { return a * a; }, [](const xf::tensor& a) { return -a; }, r);
  };
  // batched pred: both branches, selected per example
  std::vector<xf::tensor> rows;
  for (std::int64_t i = 0; i < 3; ++i) rows.push_back(f(X.select(0, i)));
  CHECK(xf::allclose(xf::vmap(f)(X), rows_stacked(rows)));
  CHECK(xf::testing::vmap_matches_loop(f, xf::in_dims(0), X));
  // unbatched pred: one branch for the whole batch
  const xf::tensor flag = xf::scalar(true);
  auto g = [&](const xf::tensor& r) { return xf::cond(flag, twice, negate, r); };
  CHECK(xf::allclose(xf::vmap(g)(X), X * 2.0));
  // a pred batched at an outer vmap layer, cond called under an inner one
  auto nested = xf::vmap([](const xf::tensor& r) {
    const xf::tensor p = xf::sum(r) > 0.0;
    return xf::vmap([&](const xf::tensor& e) { return xf::cond(p, twice, negate, e); })(r);
  })(X);
  CHECK(xf::allclose(nested.select(0, 0), X.select(0, 0) * 2.0));
  CHECK(xf::allclose(nested.select(0, 1), -X.select(0, 1)));
  // grad of vmap and vmap of grad: per-row derivative 2a (positive rows) or -1
  auto loss = [&](const xf::tensor& M) { return xf::sum(xf::vmap(f)(M)); };
  const xf::tensor expected{{2.0, 4.0}, {-1.0, -1.0}, {-1.0, -1.0}};
  CHECK(xf::allclose(xf::grad(loss)(X), expected));
  CHECK(xf::allclose(xf::vmap(xf::grad([&](const xf::tensor& r) { return xf::sum(f(r)); }))(X), expected));
  CHECK(xf::testing::gradcheck(loss, X));
}

// ---- map -------------------------------------------------------------------------------------

TEST_CASE("map applies fn to slices and stacks", "[hop][map]") {
  const xf::tensor X = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({3, 2}) - 2.0;
  auto fn = [](const xf::tensor& r) { return xf::sin(r) * xf::sum(r); };
  std::vector<xf::tensor> rows;
  for (std::int64_t i = 0; i < 3; ++i) rows.push_back(fn(X.select(0, i)));
  CHECK(xf::allclose(xf::map(fn, X), rows_stacked(rows)));
  // several xs and a pytree result
  const xf::tensor w{1.0, 2.0, 3.0};
  auto [a, b] = xf::map([](const xf::tensor& r, const xf::tensor& s) { return std::pair{r * s, xf::sum(r)}; }, X, w);
  CHECK(xf::allclose(a, X * w.unsqueeze(1)));
  CHECK(xf::allclose(b, xf::sum(X, {1})));
  CHECK_THROWS_WITH(xf::map([](const xf::tensor& r, const xf::tensor& s) { return r * s; }, X, xf::ones({4})),
                    Contains("xf::map") && Contains("same size"));
  CHECK_THROWS_WITH(xf::map(fn, xf::scalar(1.0)), Contains("xf::map"));
}

TEST_CASE("map is differentiable and batchable", "[hop][map]") {
  const xf::tensor X = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({3, 2}) * 0.3 - 0.7;
  auto fn = [](const xf::tensor& r) { return xf::sin(r) * r; };
  auto loss = [&](const xf::tensor& M) { return xf::sum(xf::map(fn, M)); };
  CHECK(xf::allclose(xf::grad(loss)(X), xf::sin(X) + X * xf::cos(X)));
  CHECK(xf::testing::gradcheck(loss, X));
  // jvp
  const xf::tensor T = xf::ones({3, 2}, xf::f64) * 0.5;
  auto [out, tan] = xf::jvp([&](const xf::tensor& M) { return xf::map(fn, M); }, X, T);
  CHECK(xf::allclose(out, fn(X)));
  CHECK(xf::allclose(tan, (xf::sin(X) + X * xf::cos(X)) * T));
  // vmap over another dim of the stacked input
  const xf::tensor B = xf::stack({X, X * 2.0}, 0);  // [2, 3, 2]
  auto per = xf::vmap([&](const xf::tensor& M) { return xf::map(fn, M); })(B);
  CHECK(xf::allclose(per, fn(B)));
  CHECK(xf::testing::vmap_matches_loop([&](const xf::tensor& M) { return xf::map(fn, M); }, xf::in_dims(1), B));
}

// ---- scan ------------------------------------------------------------------------------------

namespace {
auto cumsum_step = [](const xf::tensor& c, const xf::tensor& x) {
  xf::tensor n = c + x;
  return std::pair{n, n};
};
auto cumprod_step = [](const xf::tensor& c, const xf::tensor& x) {
  xf::tensor n = c * x;
  return std::pair{n, n};
};
}  // namespace

TEST_CASE("scan: cumulative sum and product", "[hop][scan]") {
  const xf::tensor x{1.0, 2.0, 3.0, 4.0};
  auto [total, sums] = xf::scan(cumsum_step, xf::scalar(0.0), x);
  CHECK(xf::allclose(total, xf::scalar(10.0)));
  CHECK(xf::allclose(sums, xf::tensor{1.0, 3.0, 6.0, 10.0}));
  auto [p, prods] = xf::scan(cumprod_step, xf::scalar(1.0), x);
  CHECK(xf::allclose(p, xf::scalar(24.0)));
  CHECK(xf::allclose(prods, xf::tensor{1.0, 2.0, 6.0, 24.0}));
  // a pytree carry, rows of a matrix as xs
  const xf::tensor M = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({3, 2});
  auto [carry, ys] = xf::scan(
      [](const std::pair<xf::tensor, xf::tensor>& c, const xf::tensor& row) {
        std::pair<xf::tensor, xf::tensor> n{c.first + row, c.second + xf::sum(row)};
        return std::pair{n, n.second};
      },
      std::pair{xf::zeros({2}, xf::f64), xf::scalar(0.0)}, M);
  CHECK(xf::allclose(carry.first, xf::sum(M, {0})));
  CHECK(xf::allclose(carry.second, xf::scalar(15.0)));
  CHECK(xf::allclose(ys, xf::tensor{1.0, 6.0, 15.0}));
  CHECK_THROWS_WITH(xf::scan(cumsum_step, xf::scalar(0.0), xf::zeros({0}, xf::f64)), Contains("xf::scan"));
}

TEST_CASE("scan is differentiable in both modes and batchable", "[hop][scan]") {
  const xf::tensor x{1.5, -2.0, 0.5, 3.0};
  auto final_prod = [](const xf::tensor& v) { return xf::scan(cumprod_step, xf::scalar(1.0), v).first; };
  const double prod = 1.5 * -2.0 * 0.5 * 3.0;
  CHECK(xf::allclose(xf::grad(final_prod)(x), prod / x));
  auto sum_of_sums = [](const xf::tensor& v) { return xf::sum(xf::scan(cumsum_step, xf::scalar(0.0), v).second); };
  CHECK(xf::allclose(xf::grad(sum_of_sums)(x), xf::tensor{4.0, 3.0, 2.0, 1.0}));
  // jvp: the tangent of a cumulative sum is the cumulative sum of the tangent
  const xf::tensor t{1.0, 0.0, -1.0, 2.0};
  auto ys = [](const xf::tensor& v) { return xf::scan(cumsum_step, xf::scalar(0.0), v).second; };
  auto [out, tan] = xf::jvp(ys, x, t);
  CHECK(xf::allclose(out, xf::tensor{1.5, -0.5, 0.0, 3.0}));
  CHECK(xf::allclose(tan, xf::tensor{1.0, 1.0, 0.0, 2.0}));
  // jacrev == jacfwd for the cumulative product
  auto prods = [](const xf::tensor& v) { return xf::scan(cumprod_step, xf::scalar(1.0), v).second; };
  const xf::tensor Jr = xf::jacrev(prods)(x), Jf = xf::jacfwd(prods)(x);
  CHECK(Jr.shape() == xf::shape_t{4, 4});
  CHECK(xf::allclose(Jr, Jf));
  CHECK(xf::allclose(Jr.select(0, 3), prod / x));
  CHECK(xf::testing::gradcheck([&](const xf::tensor& v) { return xf::sum(prods(v)); }, x));
  // vmap vs a loop, with the carry starting unbatched
  const xf::tensor X{{1.0, 2.0, 3.0}, {0.5, -1.0, 4.0}};
  std::vector<xf::tensor> rows;
  for (std::int64_t i = 0; i < 2; ++i) rows.push_back(prods(X.select(0, i)));
  CHECK(xf::allclose(xf::vmap(prods)(X), rows_stacked(rows)));
  CHECK(xf::testing::vmap_matches_loop(prods, xf::in_dims(1), X.t().contiguous()));
}

// ---- while_loop ------------------------------------------------------------------------------

namespace {
auto below_ten = [](const xf::tensor& c) { return xf::sum(c) < 10.0; };
auto doubled = [](const xf::tensor& c) { return c * 2.0; };
}  // namespace

TEST_CASE("while_loop runs until the predicate fails", "[hop][while_loop]") {
  CHECK(xf::allclose(xf::while_loop(below_ten, doubled, xf::scalar(1.5)), xf::scalar(12.0)));
  CHECK(xf::allclose(xf::while_loop(below_ten, doubled, xf::scalar(20.0)), xf::scalar(20.0)));  // no iteration
  // a pytree carry: (step count, value)
  auto [n, v] = xf::while_loop([](const std::pair<xf::tensor, xf::tensor>& c) { return c.second > 1.0; },
                               [](const std::pair<xf::tensor, xf::tensor>& c) {
                                 return std::pair{c.first + 1.0, c.second / 2.0};
                               },
                               std::pair{xf::scalar(0.0), xf::scalar(10.0)});
  CHECK(xf::allclose(n, xf::scalar(4.0)));
  CHECK(xf::allclose(v, xf::scalar(0.625)));
}

TEST_CASE("while_loop is forward-differentiable", "[hop][while_loop]") {
  auto f = [](const xf::tensor& x) { return xf::while_loop(below_ten, doubled, x); };
  // 1.5 -> 3 -> 6 -> 12: three doublings, derivative 8
  auto [out, tan] = xf::jvp(f, xf::scalar(1.5), xf::scalar(1.0));
  CHECK(xf::allclose(out, xf::scalar(12.0)));
  CHECK(xf::allclose(tan, xf::scalar(8.0)));
  auto g = [](const xf::tensor& x) { return xf::while_loop(below_ten, [](const xf::tensor& c) { return c * c + 1.0; }, x); };
  // x = [1, 1]: [2, 2] -> [5, 5] (sum 10 stops); d/dx = (2*2) * (2*1) = 8 per element
  CHECK(xf::allclose(xf::jacfwd(g)(xf::tensor{1.0, 1.0}), xf::eye(2, xf::f64) * 8.0));
}

TEST_CASE("while_loop under vmap with a batched predicate", "[hop][while_loop][vmap]") {
  auto f = [](const xf::tensor& x) { return xf::while_loop(below_ten, doubled, x); };
  const xf::tensor xs{0.5, 3.0, 20.0, 9.0};
  std::vector<xf::tensor> loop;
  for (std::int64_t i = 0; i < 4; ++i) loop.push_back(f(xs.select(0, i)));
  const xf::tensor y = xf::vmap(f)(xs);
  CHECK(xf::allclose(y, rows_stacked(loop)));
  CHECK(xf::allclose(y, xf::tensor{16.0, 12.0, 20.0, 18.0}));
  CHECK(xf::testing::vmap_matches_loop(f, xf::in_dims(0), xs));
  // vmap of jvp and jvp under vmap
  auto per_example_tangent =
      xf::vmap([&](const xf::tensor& x) { return xf::jvp(f, x, xf::ones_like(x)).second; })(xs);
  CHECK(xf::allclose(per_example_tangent, xf::tensor{32.0, 4.0, 1.0, 2.0}));
}

TEST_CASE("while_loop refuses reverse mode", "[hop][while_loop][grad]") {
  auto f = [](const xf::tensor& x) { return xf::while_loop(below_ten, doubled, x); };
  CHECK_THROWS_WITH(xf::grad(f)(xf::scalar(1.5)), Contains("while_loop"));
  CHECK_THROWS_WITH(xf::jacrev(f)(xf::tensor{1.0, 2.0}), Contains("while_loop"));
  CHECK_THROWS_WITH(xf::vjp(f, xf::scalar(1.5)), Contains("while_loop"));
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("higher-order ops from several threads", "[hop][threads]") {
  const xf::tensor X{{1.0, 2.0}, {-3.0, 0.5}, {0.0, -1.0}};
  const xf::tensor expected{{1.0, 4.0}, {3.0, -0.5}, {0.0, 1.0}};
  auto f = [](const xf::tensor& r) {
    return xf::cond(xf::sum(r) > 0.0, [](const xf::tensor& a) { return a * a; }, [](const xf::tensor& a) { return -a; }, r);
  };
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        if (!xf::allclose(xf::vmap(f)(X), expected)) ++wrong;
        if (!xf::allclose(xf::scan(cumsum_step, xf::scalar(0.0), X.select(1, 0)).second, xf::tensor{1.0, -2.0, -2.0}))
          ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
}
