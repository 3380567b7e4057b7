// Conformance rows: shape ops, views and indexing. References use xtensor's own shape functions
// (xt::transpose, xt::view, xt::concatenate, ...) or plain loops.
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include <catch2/catch.hpp>

#include "conformance.hpp"

namespace conformance {
namespace {
using T = tensors;
using X = xt::xarray<double>;
using sv = std::vector<std::size_t>;

template <class F>
op_fn ref(F f) {
  return [f](const T& in) { return from_x(X(f(to_x(in[0])))); };
}
/// Stacks equally shaped arrays along a new dim d, by loops.
X stacked(const std::vector<X>& v, std::size_t d) {
  sv s(v[0].shape().begin(), v[0].shape().end());
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < s.size(); ++i) (i < d ? outer : inner) *= s[i];
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(d), v.size());
  X out = xt::zeros<double>(s);
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t k = 0; k < v.size(); ++k)
      for (std::size_t j = 0; j < inner; ++j) out.flat((o * v.size() + k) * inner + j) = v[k].flat(o * inner + j);
  return out;
}
X reshaped(X a, sv s) {
  a.reshape(s);
  return a;
}

xf::tensor ref_gather(const T& in, std::size_t dim) {
  const X t = to_x(in[0]);
  const auto idx = xf::to_xtensor<std::int64_t>(in[1]);
  X out = xt::zeros<double>(idx.shape());
  std::vector<std::size_t> pos(idx.dimension());
  for (std::size_t flat = 0; flat < idx.size(); ++flat) {
    std::size_t rem = flat;
    for (std::size_t d = idx.dimension(); d-- > 0;) {
      pos[d] = rem % idx.shape()[d];
      rem /= idx.shape()[d];
    }
    std::vector<std::size_t> src = pos;
    src[dim] = static_cast<std::size_t>(idx.flat(flat));
    out.flat(flat) = t.element(src.begin(), src.end());
  }
  return from_x(out);
}

xf::tensor ref_index_select(const T& in, std::size_t dim) {
  const X t = to_x(in[0]);
  const auto idx = xf::to_xtensor<std::int64_t>(in[1]);
  sv s(t.shape().begin(), t.shape().end());
  s[dim] = idx.size();
  X out = xt::zeros<double>(s);
  std::vector<std::size_t> pos(s.size());
  for (std::size_t flat = 0; flat < out.size(); ++flat) {
    std::size_t rem = flat;
    for (std::size_t d = s.size(); d-- > 0;) {
      pos[d] = rem % s[d];
      rem /= s[d];
    }
    std::vector<std::size_t> src = pos;
    src[dim] = static_cast<std::size_t>(idx.flat(pos[dim]));
    out.flat(flat) = t.element(src.begin(), src.end());
  }
  return from_x(out);
}

const bool registered_views = add({
    {"reshape", {sample({2, 3})}, [](const T& x) { return x[0].reshape({3, 2}); }, ref([](X a) { return reshaped(a, {3, 2}); })},
    {"reshape (-1)", {sample({2, 3, 2})}, [](const T& x) { return x[0].reshape({-1, 4}); },
     ref([](X a) { return reshaped(a, {3, 4}); })},
    {"reshape (non-viewable: copies)", {sample({3, 2}).t()}, [](const T& x) { return x[0].reshape({6}); },
     ref([](X a) { return reshaped(a, {6}); })},
    {"reshape (to 0-d)", {sample({1, 1})}, [](const T& x) { return x[0].reshape({}); },
     ref([](X a) { return reshaped(a, {}); })},
    {"view", {sample({2, 6})}, [](const T& x) { return x[0].contiguous().view({3, -1, 2}); },
     ref([](X a) { return reshaped(a, {3, 2, 2}); })},
    {"view (split a dim of a transposed tensor)", {sample({4, 3})}, [](const T& x) { return x[0].t().view({3, 2, 2}); },
     ref([](X a) { return reshaped(X(xt::transpose(a)), {3, 2, 2}); })},
    {"transpose", {sample({2, 3})}, [](const T& x) { return x[0].transpose(0, 1); }, ref([](X a) { return xt::transpose(a); })},
    {"transpose (negative dims, 3-d)", {sample({2, 3, 4})}, [](const T& x) { return x[0].transpose(-1, 0); },
     ref([](X a) { return xt::transpose(a, {2, 1, 0}); })},
    {"t", {sample({2, 3})}, [](const T& x) { return x[0].t(); }, ref([](X a) { return xt::transpose(a); })},
    {"permute", {sample({2, 3, 4})}, [](const T& x) { return x[0].permute({1, 2, 0}); },
     ref([](X a) { return xt::transpose(a, {1, 2, 0}); })},
    {"permute (negative dims)", {sample({2, 3, 4})}, [](const T& x) { return x[0].permute({-1, 0, 1}); },
     ref([](X a) { return xt::transpose(a, {2, 0, 1}); })},
    {"unsqueeze (0)", {sample({2, 3})}, [](const T& x) { return x[0].unsqueeze(0); },
     ref([](X a) { return xt::expand_dims(a, 0); })},
    {"unsqueeze (-1)", {sample({2, 3})}, [](const T& x) { return x[0].unsqueeze(-1); },
     ref([](X a) { return xt::expand_dims(a, 2); })},
    {"unsqueeze (1)", {sample({2, 3})}, [](const T& x) { return x[0].unsqueeze(1); },
     ref([](X a) { return xt::expand_dims(a, 1); })},
    {"squeeze ()", {sample({2, 1, 3, 1})}, [](const T& x) { return x[0].squeeze(); },
     ref([](X a) { return reshaped(a, {2, 3}); })},
    {"squeeze (d)", {sample({2, 1, 3})}, [](const T& x) { return x[0].squeeze(1); },
     ref([](X a) { return reshaped(a, {2, 3}); })},
    {"squeeze (-1)", {sample({2, 3, 1})}, [](const T& x) { return x[0].squeeze(-1); },
     ref([](X a) { return reshaped(a, {2, 3}); })},
    {"squeeze (d of size > 1: no-op)", {sample({2, 3})}, [](const T& x) { return x[0].squeeze(0); },
     ref([](X a) { return a; })},
    {"expand", {sample({3, 1})}, [](const T& x) { return x[0].expand({3, 4}); },
     ref([](X a) { return xt::broadcast(a, sv{3, 4}); })},
    {"expand (new leading dims, -1)", {sample({1, 3})}, [](const T& x) { return x[0].expand({2, 4, -1}); },
     ref([](X a) { return xt::broadcast(a, sv{2, 4, 3}); })},
    {"expand (0-d)", {xf::scalar(0.4)}, [](const T& x) { return x[0].expand({2, 3}); },
     ref([](X a) { return xt::broadcast(a, sv{2, 3}); })},
    {"flatten", {sample({2, 3, 2})}, [](const T& x) { return x[0].flatten(); }, ref([](X a) { return xt::flatten(a); })},
    {"flatten (non-contiguous)", {sample({2, 3})}, [](const T& x) { return x[0].t().flatten(); },
     ref([](X a) { return xt::flatten(X(xt::transpose(a))); })},
    {"select", {sample({3, 4})}, [](const T& x) { return x[0].select(0, 1); },
     ref([](X a) { return xt::view(a, 1, xt::all()); })},
    {"select (dim 1, negative index)", {sample({3, 4})}, [](const T& x) { return x[0].select(1, -1); },
     ref([](X a) { return xt::view(a, xt::all(), 3); })},
    {"select (negative dim, 3-d)", {sample({2, 3, 4})}, [](const T& x) { return x[0].select(-2, 2); },
     ref([](X a) { return xt::view(a, xt::all(), 2, xt::all()); })},
    {"narrow", {sample({4, 3})}, [](const T& x) { return x[0].narrow(0, 1, 2); },
     ref([](X a) { return xt::view(a, xt::range(1, 3), xt::all()); })},
    {"narrow (dim -1, negative start)", {sample({2, 5})}, [](const T& x) { return x[0].narrow(-1, -3, 2); },
     ref([](X a) { return xt::view(a, xt::all(), xt::range(2, 4)); })},
    {"diagonal (square)", {sample({3, 3})}, [](const T& x) { return x[0].diagonal(); },
     ref([](X a) { return xt::diagonal(a); })},
    {"diagonal (wide)", {sample({2, 4})}, [](const T& x) { return x[0].diagonal(); },
     ref([](X a) { return xt::diagonal(a); })},
    {"diagonal (tall)", {sample({4, 2})}, [](const T& x) { return x[0].diagonal(); },
     ref([](X a) { return xt::diagonal(a); })},
    {"diagonal (3-d)", {sample({3, 2, 4})}, [](const T& x) { return x[0].diagonal(); },
     ref([](X a) { return xt::diagonal(a); })},
    {"movedim", {sample({2, 3, 4})}, [](const T& x) { return x[0].movedim(0, 2); },
     ref([](X a) { return xt::transpose(a, {1, 2, 0}); })},
    {"movedim (negative)", {sample({2, 3, 4})}, [](const T& x) { return x[0].movedim(-1, 0); },
     ref([](X a) { return xt::transpose(a, {2, 0, 1}); })},
    {"contiguous", {sample({3, 2}).t()}, [](const T& x) { return x[0].contiguous(); }, ref([](X a) { return a; })},
    {"clone", {sample({2, 3})}, [](const T& x) { return x[0].clone(); }, ref([](X a) { return a; })},
    {"clone (non-contiguous)", {sample({3, 2}).t()}, [](const T& x) { return x[0].clone(); }, ref([](X a) { return a; })},
    {"detach", {sample({2, 3})}, [](const T& x) { return x[0].detach(); }, ref([](X a) { return a; }), false},
    {"stop_gradient", {sample({2, 3})}, [](const T& x) { return xf::stop_gradient(x[0]); }, ref([](X a) { return a; }),
     false},
    // to(dtype): float64 is the identity on the f64 samples and a real conversion for the f32 run
    {"to(float64)", {sample({2, 3})}, [](const T& x) { return x[0].to(xf::f64); }, ref([](X a) { return a; }), true, {},
     xf::f64},
    {"to(float64) of a product (f32 run converts)", {sample({2, 3}), sample({2, 3}, -1, 1, 2)},
     [](const T& x) { return (x[0] * x[1]).to(xf::f64); }, [](const T& in) { return from_x(to_x(in[0]) * to_x(in[1])); },
     true, {}, xf::f64},
    {"to(int64) (not differentiable)", {sample({2, 3}, -3, 3)}, [](const T& x) { return x[0].to(xf::i64); },
     ref([](X a) { return xt::trunc(a); }), false},
    {"to(bool) (not differentiable)", {xf::tensor{{0.0, 1.5, -2.0}, {0.25, 0.0, 3.0}}},
     [](const T& x) { return x[0].to(xf::b8); }, ref([](X a) { return X(xt::cast<double>(xt::not_equal(a, 0.0))); }),
     false},
});

const bool registered_free = add({
    {"cat (dim 0)", {sample({2, 3}), sample({1, 3}, -1, 1, 2), sample({3, 3}, -1, 1, 3)},
     [](const T& x) { return xf::cat({x[0], x[1], x[2]}, 0); },
     [](const T& in) { return from_x(X(xt::concatenate(xt::xtuple(to_x(in[0]), to_x(in[1]), to_x(in[2])), 0))); }},
    {"cat (dim -1)", {sample({2, 3}), sample({2, 1}, -1, 1, 2)}, [](const T& x) { return xf::cat({x[0], x[1]}, -1); },
     [](const T& in) { return from_x(X(xt::concatenate(xt::xtuple(to_x(in[0]), to_x(in[1])), 1))); }},
    {"cat (1-d)", {sample({2}), sample({3}, -1, 1, 2)}, [](const T& x) { return xf::cat({x[0], x[1]}, 0); },
     [](const T& in) { return from_x(X(xt::concatenate(xt::xtuple(to_x(in[0]), to_x(in[1])), 0))); }},
    {"stack (dim 0)", {sample({2, 3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return xf::stack({x[0], x[1]}, 0); },
     [](const T& in) { return from_x(stacked({to_x(in[0]), to_x(in[1])}, 0)); }},
    {"stack (dim -1, three tensors)", {sample({2, 3}), sample({2, 3}, -1, 1, 2), sample({2, 3}, -1, 1, 3)},
     [](const T& x) { return xf::stack({x[0], x[1], x[2]}, -1); },
     [](const T& in) {
       return from_x(stacked({to_x(in[0]), to_x(in[1]), to_x(in[2])}, 2));
     }},
    {"stack (dim 1)", {sample({2, 3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return xf::stack({x[0], x[1]}, 1); },
     [](const T& in) { return from_x(stacked({to_x(in[0]), to_x(in[1])}, 1)); }},
    {"split (last, shorter piece)", {sample({5, 2})}, [](const T& x) { return xf::split(x[0], 2, 0).back(); },
     ref([](X a) { return xt::view(a, xt::range(4, 5), xt::all()); })},
    {"split (stack of pieces, dim 1)", {sample({2, 6})},
     [](const T& x) {
       auto p = xf::split(x[0], 2, 1);
       return xf::stack({p[0], p[1], p[2]}, 0);
     },
     ref([](X a) {
       return stacked({X(xt::view(a, xt::all(), xt::range(0, 2))), X(xt::view(a, xt::all(), xt::range(2, 4))),
                       X(xt::view(a, xt::all(), xt::range(4, 6)))},
                      0);
     })},
    {"split (middle piece, dim -1)", {sample({2, 3, 4})}, [](const T& x) { return xf::split(x[0], 3, -1)[1]; },
     ref([](X a) { return xt::view(a, xt::all(), xt::all(), xt::range(3, 4)); })},
    {"flip (dim 0)", {sample({3, 2})}, [](const T& x) { return xf::flip(x[0], {0}); }, ref([](X a) { return xt::flip(a, 0); })},
    {"flip (dims {0, -1}, 3-d)", {sample({2, 3, 2})}, [](const T& x) { return xf::flip(x[0], {0, -1}); },
     ref([](X a) { return xt::flip(X(xt::flip(a, 0)), 2); })},
    {"flip (1-d)", {sample({4})}, [](const T& x) { return xf::flip(x[0], {0}); }, ref([](X a) { return xt::flip(a, 0); })},
    {"index_select (dim 0, repeated index)", {sample({4, 3}), xf::tensor{2, 0, 2}},
     [](const T& x) { return xf::index_select(x[0], 0, x[1]); }, [](const T& in) { return ref_index_select(in, 0); },
     true, {sample({4, 3}, -1, 1, 5), xf::tensor{1, 3, 0}}},
    {"index_select (dim -1)", {sample({2, 4}), xf::tensor{3, 1}},
     [](const T& x) { return xf::index_select(x[0], -1, x[1]); }, [](const T& in) { return ref_index_select(in, 1); },
     true, {sample({2, 4}, -1, 1, 5), xf::tensor{0, 0}}},
    {"gather (dim 1)", {sample({2, 3}), xf::tensor{{0, 2, 1, 2}, {1, 1, 0, 0}}},
     [](const T& x) { return xf::gather(x[0], 1, x[1]); }, [](const T& in) { return ref_gather(in, 1); }, true,
     {sample({2, 3}, -1, 1, 5), xf::tensor{{2, 2, 0, 1}, {0, 1, 2, 1}}}},
    {"gather (dim 0, smaller index)", {sample({3, 4}), xf::tensor{{2, 0, 1}, {1, 1, 2}}},
     [](const T& x) { return xf::gather(x[0], 0, x[1]); }, [](const T& in) { return ref_gather(in, 0); }, true,
     {sample({3, 4}, -1, 1, 5), xf::tensor{{0, 0, 0}, {2, 1, 0}}}},
    {"gather (dim -1, 1-d)", {sample({5}), xf::tensor{4, 0, 0, 3}},
     [](const T& x) { return xf::gather(x[0], -1, x[1]); }, [](const T& in) { return ref_gather(in, 0); }, true,
     {sample({5}, -1, 1, 5), xf::tensor{1, 2, 3, 4}}},
});

TEST_CASE("view: views share storage where torch's do", "[ops][view]") {
  const xf::tensor x = sample({2, 3, 4});
  const xf::tensor m = sample({3, 4});
  SECTION("views") {
    CHECK(xf::same_storage(x, x.reshape({6, 4})));
    CHECK(xf::same_storage(x, x.view({4, -1})));
    CHECK(xf::same_storage(x, x.transpose(0, 2)));
    CHECK(xf::same_storage(m, m.t()));
    CHECK(xf::same_storage(x, x.permute({2, 0, 1})));
    CHECK(xf::same_storage(x, x.unsqueeze(1)));
    CHECK(xf::same_storage(x, x.unsqueeze(1).squeeze()));
    CHECK(xf::same_storage(x, x.unsqueeze(0).squeeze(0)));
    CHECK(xf::same_storage(m, m.unsqueeze(0).expand({5, 3, 4})));
    CHECK(xf::same_storage(x, x.flatten()));
    CHECK(xf::same_storage(x, x.select(1, 2)));
    CHECK(xf::same_storage(x, x.narrow(2, 1, 2)));
    CHECK(xf::same_storage(m, m.diagonal()));
    CHECK(xf::same_storage(x, x.movedim(0, -1)));
    CHECK(xf::same_storage(x, x.contiguous()));
    CHECK(xf::same_storage(x, x.detach()));
    CHECK(xf::same_storage(x, xf::stop_gradient(x)));
    CHECK(xf::same_storage(x, x.to(xf::f64)));
    for (const auto& p : xf::split(x, 2, 1)) CHECK(xf::same_storage(x, p));
    // a dim of size 0 splits into one empty chunk, as torch
    const xf::tensor e = xf::zeros({2, 0});
    const auto pieces = xf::split(e, 2, 1);
    REQUIRE(pieces.size() == 1);
    CHECK((pieces[0].shape() == xf::shape_t{2, 0} && xf::same_storage(e, pieces[0])));
    CHECK(xf::same_storage(x, x.transpose(0, 1).reshape({3, 2, 2, 2})));  // splitting a dim stays a view
  }
  SECTION("copies") {
    CHECK_FALSE(xf::same_storage(x, x.clone()));
    CHECK_FALSE(xf::same_storage(m, m.t().contiguous()));
    CHECK_FALSE(xf::same_storage(m, m.t().reshape({12})));
    CHECK_FALSE(xf::same_storage(m, m.t().flatten()));
    CHECK_FALSE(xf::same_storage(x, xf::flip(x, {0})));
    CHECK_FALSE(xf::same_storage(x, xf::cat({x, x}, 0)));
    CHECK_FALSE(xf::same_storage(x, xf::stack({x}, 0)));
    CHECK_FALSE(xf::same_storage(m, xf::index_select(m, 0, xf::tensor{0, 1})));
    CHECK_FALSE(xf::same_storage(m, xf::gather(m, 0, xf::tensor{{0, 1, 2, 0}})));
    CHECK_FALSE(xf::same_storage(x, x.to(xf::f32)));
  }
  SECTION("writes through a view reach the base") {
    xf::tensor base = xf::zeros({2, 3}, xf::f64);
    base.select(0, 1).fill_(2.0);
    base.t().narrow(0, 0, 1).fill_(1.0);
    CHECK(xf::equal(base, xf::tensor{{1.0, 0.0, 0.0}, {1.0, 2.0, 2.0}}));
  }
}

TEST_CASE("view: to(dtype) gradients come back in the input's dtype", "[ops][view]") {
  const xf::tensor x32 = sample({2, 3}).to(xf::f32);
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum(t.to(xf::f64) * 3.0); })(x32);
  CHECK(g.dtype() == xf::f32);
  CHECK(xf::allclose(g, xf::full({2, 3}, 3.0, xf::f32)));
  auto g64 = xf::grad([](const xf::tensor& t) { return xf::sum(t.to(xf::f32)).to(xf::f64); })(sample({2, 3}));
  CHECK(g64.dtype() == xf::f64);
  CHECK(xf::allclose(g64, xf::ones({2, 3}, xf::f64)));
  auto [out, tan] = xf::jvp([](const xf::tensor& t) { return t.to(xf::f64); }, x32, xf::ones({2, 3}, xf::f32));
  CHECK(tan.dtype() == xf::f64);
  CHECK(xf::allclose(tan, xf::ones({2, 3}, xf::f64)));
}

TEST_CASE("view: detach and stop_gradient have zero derivative", "[ops][view]") {
  const xf::tensor x = sample({3});
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum(t * xf::stop_gradient(t)); })(x);
  CHECK(xf::allclose(g, x));
  auto g2 = xf::grad([](const xf::tensor& t) { return xf::sum(t.detach() * 2.0 + t); })(x);
  CHECK(xf::allclose(g2, xf::ones({3}, xf::f64)));
}

TEST_CASE("view: errors", "[ops][view]") {
  const xf::tensor x = sample({2, 3});
  CHECK_THROWS_WITH(xf::cat({x, sample({2, 4})}, 0), Catch::Contains("sizes must match"));
  CHECK_THROWS_WITH(xf::cat({x, sample({3})}, 0), Catch::Contains("same number of dimensions"));
  CHECK_THROWS_WITH(xf::cat({x, x}, 2), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::stack({x, sample({3, 2})}, 0), Catch::Contains("same shape"));
  CHECK_THROWS_WITH(xf::stack({x, x}, 3), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.transpose(0, 2), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.permute({0, 2}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.permute({0, 0}), Catch::Contains("more than once"));
  CHECK_THROWS_WITH(x.permute({0}), Catch::Contains("one entry per dimension"));
  CHECK_THROWS_WITH(x.unsqueeze(3), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.unsqueeze(-4), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.squeeze(2), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.select(2, 0), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.select(0, 2), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.select(1, -4), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.narrow(1, 2, 2), Catch::Contains("do not fit"));
  CHECK_THROWS_WITH(x.narrow(-3, 0, 1), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.movedim(0, 2), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(x.reshape({4, 2}), Catch::Contains("is invalid"));
  CHECK_THROWS_WITH(x.reshape({-1, -1}), Catch::Contains("only one dimension"));
  CHECK_THROWS_WITH(x.t().view({6}), Catch::Contains("not compatible"));
  CHECK_THROWS_WITH(x.expand({2, 4}), Catch::Contains("cannot expand"));
  CHECK_THROWS_WITH(x.expand({3}), Catch::Contains("fewer dimensions"));
  CHECK_THROWS_WITH(sample({3}).t(), Catch::Contains("2-d"));
  CHECK_THROWS_WITH(sample({3}).diagonal(), Catch::Contains("at least 2"));
  CHECK_THROWS_WITH(xf::flip(x, {2}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::split(x, 0, 0), Catch::Contains("positive"));
  CHECK_THROWS_WITH(xf::split(x, 1, 2), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::gather(x, 1, xf::tensor{{0, 3}}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::gather(x, 1, xf::tensor{{0, -4}}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::gather(x, 2, xf::tensor{{0, 1}}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::gather(x, 1, xf::tensor{0, 1}), Catch::Contains("as many dimensions"));
  CHECK_THROWS_WITH(xf::gather(x, 1, xf::tensor{{0.0, 1.0}}), Catch::Contains("int64"));
  CHECK_THROWS_WITH(xf::index_select(x, 0, xf::tensor{0, 2}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::index_select(x, 2, xf::tensor{0}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::index_select(x, 0, xf::tensor{{0}}), Catch::Contains("0-d or 1-d"));
}
}  // namespace
}  // namespace conformance
