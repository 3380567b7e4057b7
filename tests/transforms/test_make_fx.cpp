// make_fx traces on the example values (torch's tracing_mode="real"); meta inputs give a
// shape-only trace. cond and while_loop are one node each, holding their subgraphs, so that
// replay follows the replayed values; names of in-place and view ops in graphs.
#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Matchers::Contains;

TEST_CASE("make_fx traces real values: a custom op needs no fake kernel", "[make_fx][custom_op]") {
  auto op = xf::custom_op("xftest::fx_no_fake", [](const xf::tensor& t, double s) { return xf::sin(t) * s; });
  auto f = [&](const xf::tensor& t) { return xf::exp(op(t, 2.0)); };
  const xf::tensor x{0.1, 0.2, 0.3};
  const xf::graph g = xf::make_fx(f)(x);
  CHECK(g.count("xftest::fx_no_fake") == 1);
  const xf::tensor x2{1.0, -2.0, 0.5};
  CHECK(xf::allclose(g(x2)[0], f(x2)));
  // a shape-only trace (meta inputs) needs the fake kernel
  CHECK_THROWS_WITH(xf::make_fx(f)(x.to(xf::meta)), Contains("register_fake"));
  op.register_fake([](const xf::tensor& t, double) { return xf::empty_like(t); });
  const xf::graph gm = xf::make_fx(f)(x.to(xf::meta));
  CHECK(gm.count("xftest::fx_no_fake") == 1);
  CHECK(xf::allclose(gm(x2)[0], f(x2)));
}

TEST_CASE("make_fx does not change the caller's tensors and records factories", "[make_fx]") {
  auto f = [](const xf::tensor& t) {
    t.select(0, 0).add_(1.0);  // f writes into its input
    xf::tensor noise = xf::randn({3}, xf::f64);
    xf::tensor buf = xf::zeros_like(t);
    buf.copy_(t * 2.0);
    return buf + noise * 0.0 + xf::arange(0.0, 3.0, 1.0, xf::f64);
  };
  xf::tensor x{1.0, 2.0, 3.0};
  const xf::graph g = xf::make_fx(f)(x);
  CHECK(xf::equal(x, xf::tensor{1.0, 2.0, 3.0}));  // traced on a copy
  CHECK(g.count("xf::randn") == 1);
  CHECK(g.count("xf::zeros_like") == 1);
  CHECK(g.count("xf::arange") == 1);
  CHECK(g.count("xf::add_") == 1);
  xf::tensor y{0.0, 0.0, 0.0};
  CHECK(xf::allclose(g(y)[0], xf::tensor{2.0, 1.0, 2.0}));
  CHECK(xf::equal(y, xf::tensor{1.0, 0.0, 0.0}));  // the replay writes into its input as f does
  // random factories draw anew on every replay
  const xf::graph gr = xf::make_fx([](const xf::tensor& t) { return t + xf::randn({3}, xf::f64); })(x);
  CHECK_FALSE(xf::equal(gr(x)[0], gr(x)[0]));
}

TEST_CASE("make_fx records cond as one node with both branches", "[make_fx][cond]") {
  const xf::tensor w{0.5, -1.0, 2.0};
  auto f = [&](const xf::tensor& x) {
    xf::tensor scale = xf::sum(x) * 0.5;  // a traced value the branches capture
    return xf::cond(
        xf::sum(x) > 0.0, [&](const xf::tensor& a) { return xf::sin(a) * scale + w; },
        [&](const xf::tensor& a) { return xf::cos(a) - scale; }, x);
  };
  const xf::tensor pos{1.0, 2.0, 3.0}, neg{-1.0, -2.0, 0.5};
  const xf::graph g = xf::make_fx(f)(pos);
  CHECK(g.count("xf::cond") == 1);
  CHECK(g.count("xf::sin") == 1);  // inside true_fn
  CHECK(g.count("xf::cos") == 1);  // inside false_fn
  const std::string s = g.str();
  CHECK_THAT(s, Contains("= xf::cond(%") && Contains("true_fn: graph(%a0") && Contains("false_fn: graph(%a0"));
  // replay on inputs that flip the predicate takes the other branch
  CHECK(xf::allclose(g(pos)[0], f(pos)));
  CHECK(xf::allclose(g(neg)[0], f(neg)));
  CHECK(xf::allclose(xf::make_fx(f)(neg)(pos)[0], f(pos)));
  // tuple results: one node per output
  auto two = [](const xf::tensor& x) {
    return xf::cond(
        xf::sum(x) > 0.0, [](const xf::tensor& a) { return std::tuple{a * 2.0, xf::sum(a)}; },
        [](const xf::tensor& a) { return std::tuple{-a, xf::sum(a) * 0.0}; }, x);
  };
  const xf::graph g2 = xf::make_fx(two)(pos);
  CHECK(g2.count("xf::cond") == 1);
  CHECK(g2.count("xf::cond[1]") == 1);
  const auto r = g2(neg);
  REQUIRE(r.size() == 2);
  CHECK(xf::allclose(r[0], -neg));
  CHECK(xf::allclose(r[1], xf::scalar(0.0)));
}

TEST_CASE("make_fx records while_loop as one node with its condition and body", "[make_fx][while_loop]") {
  // halve until the norm is below 1, counting the steps
  auto f = [](const xf::tensor& x) {
    return xf::while_loop([](const std::tuple<xf::tensor, xf::tensor>& c) { return xf::norm(std::get<0>(c)) > 1.0; },
                          [](const std::tuple<xf::tensor, xf::tensor>& c) {
                            return std::tuple{std::get<0>(c) * 0.5, std::get<1>(c) + 1.0};
                          },
                          std::tuple{x, xf::scalar(0.0)});
  };
  const xf::tensor x{3.0, 4.0};  // norm 5: 3 steps
  const xf::graph g = xf::make_fx(f)(x);
  CHECK(g.count("xf::while_loop") == 1);
  CHECK(g.count("xf::while_loop[1]") == 1);
  CHECK_THAT(g.str(), Contains("cond_fn: graph(") && Contains("body_fn: graph("));
  auto steps = [&](const xf::tensor& v) { return g(v)[1].item<double>(); };
  CHECK(steps(x) == 3.0);
  CHECK(steps(xf::tensor{0.3, 0.4}) == 0.0);   // no step
  CHECK(steps(xf::tensor{30.0, 40.0}) == 6.0);  // more steps than traced
  CHECK(xf::allclose(g(xf::tensor{30.0, 40.0})[0], xf::tensor{30.0, 40.0} / 64.0));
  // a cond inside the body: nested subgraphs
  auto h = [](const xf::tensor& x) {
    return xf::while_loop([](const xf::tensor& c) { return xf::sum(c) < 10.0; },
                          [](const xf::tensor& c) {
                            return xf::cond(
                                xf::sum(c) > 4.0, [](const xf::tensor& a) { return a * 2.0; },
                                [](const xf::tensor& a) { return a + 1.0; }, c);
                          },
                          x);
  };
  const xf::graph gh = xf::make_fx(h)(xf::tensor{1.0});
  CHECK(gh.count("xf::while_loop") == 1);
  CHECK(gh.count("xf::cond") == 1);
  for (double v : {1.0, 3.5, 12.0}) CHECK(xf::allclose(gh(xf::tensor{v})[0], h(xf::tensor{v})));
}

TEST_CASE("cond under a transform inside make_fx: the taken branch, guarded", "[make_fx][cond]") {
  auto f = [](const xf::tensor& x) {
    return xf::cond(
        xf::sum(x) > 0.0, [](const xf::tensor& a) { return xf::sum(xf::sin(a)); },
        [](const xf::tensor& a) { return xf::sum(a * a); }, x);
  };
  const xf::tensor pos{1.0, 2.0}, pos2{0.5, 0.25}, neg{-1.0, -2.0};
  const xf::graph g = xf::make_fx(xf::grad(f))(pos);
  CHECK(g.count("xf::guard") == 1);
  CHECK(g.count("xf::cond") == 0);
  CHECK(xf::allclose(g(pos2)[0], xf::cos(pos2)));
  CHECK_THROWS_WITH(g(neg), Contains("another path through xf::cond"));
}

TEST_CASE("graph names: in-place ops by their own name, views as copies without views", "[make_fx][names]") {
  auto f = [](const xf::tensor& x) {  // x: [2, 3]
    xf::tensor y = x.clone();
    y.zero_();
    y.fill_(2.0);
    return y.narrow(1, 0, 2) + x.select(1, 1) + x.t().t().narrow(1, 1, 2) + x.detach().narrow(1, 0, 2) +
           x.view({-1}).narrow(0, 0, 2);
  };
  const xf::tensor x{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}};
  const xf::graph g = xf::make_fx(f)(x);
  CHECK(g.count("xf::zero_") == 1);
  CHECK(g.count("xf::fill_") == 1);
  CHECK(g.count("xf::narrow") == 4);
  const xf::graph gf = xf::make_fx(xf::functionalize(f, xf::remove::mutations_and_views))(x);
  INFO(gf);
  for (const char* op : {"xf::narrow", "xf::select", "xf::permute", "xf::view", "xf::detach", "xf::expand",
                         "xf::zero_", "xf::fill_"})
    CHECK(gf.count(op) == 0);
  CHECK(gf.count("xf::narrow_copy") == 4);
  CHECK(gf.count("xf::select_copy") == 1);
  CHECK(gf.count("xf::permute_copy") == 2);
  CHECK(gf.count("xf::detach_copy") == 1);
  CHECK(gf.count("xf::view_copy") == 1);
  const xf::tensor x2 = x * -0.5;
  CHECK(xf::allclose(gf(x2)[0], f(x2)));
  CHECK(xf::allclose(g(x2)[0], f(x2)));
}
