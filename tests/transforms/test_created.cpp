// Tensors made inside a transformed function (NOTE: [Tensors created inside transforms]): they
// are not "captured", so in-place writes into them are allowed under grad, vjp, jvp and
// functionalize; the *_like factories follow their argument's batching under vmap.
#include <catch2/catch.hpp>

#include <functional>
#include <vector>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Matchers::Contains;

namespace {
const xf::tensor x0{0.3, -1.2, 2.0};

// r = factory(x); r += x * x; sum(r)  ->  gradient 2x
template <class Make>
auto accumulate_into(Make make) {
  return [make](const xf::tensor& x) {
    xf::tensor r = make(x);
    r.add_(x * x);
    return xf::sum(r);
  };
}
}  // namespace

TEST_CASE("a factory's result inside grad, vjp and jvp can be written in place", "[created][grad][jvp]") {
  const auto like = accumulate_into([](const xf::tensor& x) { return xf::zeros_like(x); });
  const auto plain = accumulate_into([](const xf::tensor& x) { return xf::zeros(x.shape(), x.dtype()); });
  const auto full = accumulate_into([](const xf::tensor& x) { return xf::full(x.shape(), 1.5, x.dtype()); });
  for (const auto& f : {std::function<xf::tensor(const xf::tensor&)>(like), std::function<xf::tensor(const xf::tensor&)>(plain),
                        std::function<xf::tensor(const xf::tensor&)>(full)}) {
    CHECK(xf::allclose(xf::grad(f)(x0), 2.0 * x0));
    auto [out, pullback] = xf::vjp(f, x0);
    CHECK(xf::allclose(std::get<0>(pullback(xf::scalar(2.0))), 4.0 * x0));
    auto [o, t] = xf::jvp(f, x0, xf::ones_like(x0));
    CHECK(xf::allclose(t, xf::sum(2.0 * x0)));
    // nested: the second derivative of sum(x^2) is 2 on the diagonal
    auto g = [&f](const xf::tensor& x) { return xf::sum(xf::grad(f)(x) * x); };  // sum(2x * x)
    CHECK(xf::allclose(xf::grad(g)(x0), 4.0 * x0));
    CHECK(xf::allclose(xf::hessian(f)(x0), 2.0 * xf::eye(3, xf::f64)));
  }
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("writes into views of a factory's result reach it under grad and jvp", "[created][views]") {
  // r = zeros(3, 3); diag(r) = x; sum(r * r) = sum(x^2)
  auto f = [](const xf::tensor& x) {
    xf::tensor r = xf::zeros({3, 3}, xf::f64);
    r.diagonal().copy_(x);
    r.select(0, 0).narrow(0, 1, 2).add_(x.narrow(0, 1, 2));  // r[0, 1:3] = x[1:3]
    return xf::sum(r * r);
  };
  const xf::tensor expect = xf::tensor{2 * 0.3, 4 * -1.2, 4 * 2.0};
  CHECK(xf::allclose(xf::grad(f)(x0), expect));
  auto [o, t] = xf::jvp(f, x0, xf::tensor{1.0, 0.0, 0.0});
  CHECK(xf::allclose(t, xf::scalar(2 * 0.3)));
  CHECK(xf::allclose(xf::jacfwd(f)(x0), expect));
}

TEST_CASE("a factory's result inside functionalize can be written in place", "[created][functionalize]") {
  auto f = [](const xf::tensor& x) {
    xf::tensor r = xf::zeros_like(x);
    r.narrow(0, 0, 2).copy_(x.narrow(0, 1, 2));
    r.mul_(2.0);
    return r;
  };
  const xf::tensor expect{-2.4, 4.0, 0.0};
  CHECK(xf::allclose(xf::functionalize(f)(x0), expect));
  CHECK(xf::allclose(xf::functionalize(f, xf::remove::mutations_and_views)(x0), expect));
  CHECK(xf::allclose(xf::grad([&](const xf::tensor& x) { return xf::sum(xf::functionalize(f)(x)); })(x0),
                     xf::tensor{0.0, 2.0, 2.0}));
}

TEST_CASE("the result of an op on captured tensors can be written in place", "[created][grad]") {
  const xf::tensor w{1.0, 2.0, 3.0};
  auto f = [&](const xf::tensor& x) {
    xf::tensor y = w * 2.0;  // made inside, from a captured tensor only: a plain tensor
    y.add_(x * x);
    xf::tensor lit{0.5, 0.5, 0.5};  // a literal, likewise
    lit.mul_(x);
    return xf::sum(y) + xf::sum(lit);
  };
  CHECK(xf::allclose(xf::grad(f)(x0), 2.0 * x0 + 0.5));
  auto [o, t] = xf::jvp(f, x0, xf::ones_like(x0));
  CHECK(xf::allclose(t, xf::sum(2.0 * x0 + 0.5)));
  CHECK(xf::equal(w, xf::tensor{1.0, 2.0, 3.0}));  // untouched
  // a view of such a tensor (or a tensor with views) cannot follow the write: a clear error
  auto aliased = [&](const xf::tensor& x) {
    xf::tensor y = w * 2.0;
    y.narrow(0, 0, 2).add_(x.narrow(0, 0, 2));
    return xf::sum(y);
  };
  CHECK_THROWS_WITH(xf::grad(aliased)(x0), Contains("made inside it") && Contains("zeros_like"));
  // a tensor captured from outside stays an error, also when it was made just before the call
  xf::tensor before = xf::zeros({3}, xf::f64);
  auto captured = [&](const xf::tensor& x) {
    before.add_(x);
    return xf::sum(x);
  };
  CHECK_THROWS_WITH(xf::grad(captured)(x0), Contains("captured"));
  CHECK_THROWS_WITH(xf::jvp(captured, x0, x0), Contains("captured"));
  CHECK_THROWS_WITH(xf::functionalize(captured)(x0), Contains("captured"));
  CHECK(xf::equal(before, xf::zeros({3}, xf::f64)));
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("writing a captured tensor with plain values, or through a view, is captured too", "[created][grad]") {
  // NOTE: [Tensors created inside transforms]: as in torch.func, the grad or jvp layer refuses the
  // write whatever the other operands are; before, a write with no value of the transform in it
  // went straight through into the caller's tensor
  xf::tensor outside = xf::zeros({3}, xf::f64);
  const xf::tensor plain{1.0, 2.0, 3.0};
  auto writes = std::vector<std::function<void()>>{
      [&] { outside.add_(1.0); },
      [&] { outside.fill_(5.0); },
      [&] { outside.copy_(plain); },
      [&] { outside.narrow(0, 0, 2).add_(1.0); },  // a view made inside, of captured data
      [&] { outside.select(0, 1).mul_(2.0); },
      [&] { outside.reshape({3, 1}).add_(plain.reshape({3, 1})); }};
  for (std::size_t k = 0; k < writes.size(); ++k) {
    INFO("write " << k);
    auto f = [&](const xf::tensor& x) {
      writes[k]();
      return xf::sum(x * x);
    };
    CHECK_THROWS_WITH(xf::grad(f)(x0), Contains("captured"));
    CHECK_THROWS_WITH(xf::vjp(f, x0), Contains("captured"));
    CHECK_THROWS_WITH(xf::jvp(f, x0, x0), Contains("captured"));
    CHECK(xf::equal(outside, xf::zeros({3}, xf::f64)));  // untouched
    CHECK(xf::layers::depth() == 0);
  }
  // an outer transform's value is captured by an inner grad
  auto nested = [&](const xf::tensor& w) {
    xf::tensor v = w * 1.0;  // the outer layer's value
    return xf::sum(xf::grad([&](const xf::tensor& x) {
      v.add_(1.0);
      return xf::sum(x * v);
    })(w));
  };
  CHECK_THROWS_WITH(xf::grad(nested)(x0), Contains("captured"));
  // allowed: plain tensors made inside (and their views), under vmap or functionalize alone, and
  // outside every transform
  auto made_inside = [&](const xf::tensor& x) {
    xf::tensor buf = plain * 1.0;
    buf.add_(1.0);
    buf.narrow(0, 1, 2).mul_(2.0);
    xf::tensor z = xf::zeros({3}, xf::f64);
    z.copy_(plain);
    return xf::sum(x * buf) + xf::sum(z);
  };
  CHECK(xf::allclose(xf::grad(made_inside)(x0), xf::tensor{2.0, 6.0, 8.0}));
  xf::vmap([&](const xf::tensor& x) {
    outside.add_(1.0);  // vmap does not refuse an unbatched write of unbatched values
    return x;
  })(xf::zeros({2, 3}));
  CHECK(xf::equal(outside, xf::full({3}, 1.0, xf::f64)));  // f runs once for the batch
  outside.zero_();
  CHECK(xf::equal(outside, xf::zeros({3}, xf::f64)));
}

TEST_CASE("tensors made inside an inner transform are writable there (nested)", "[created][nested]") {
  // outer grad over w, inner grad over x; the inner function writes into its own buffers
  auto inner = [](const xf::tensor& w) {
    return [w](const xf::tensor& x) {
      xf::tensor r = xf::zeros_like(w);  // w is the outer layer's value
      r.add_(w * x);
      xf::tensor s = xf::ones({3}, xf::f64);
      s.mul_(x);
      return xf::sum(r * s);  // sum(w x^2)
    };
  };
  auto outer = [&](const xf::tensor& w) { return xf::sum(xf::grad(inner(w))(x0)); };  // sum(2 w x)
  CHECK(xf::allclose(xf::grad(outer)(xf::ones({3}, xf::f64)), 2.0 * x0));
}

TEST_CASE("*_like factories follow their argument's batching under vmap", "[created][vmap]") {
  const xf::tensor v = xf::tensor{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}};
  // the program: a batched buffer written through a view
  auto diag = [](const xf::tensor& a) {
    xf::tensor r = xf::zeros_like(xf::outer(a, a));
    r.diagonal().copy_(a);
    return r;
  };
  const xf::tensor d = xf::vmap(diag)(v);
  REQUIRE(d.shape() == xf::shape_t{2, 3, 3});
  CHECK(xf::equal(d.select(0, 1).diagonal(), v.select(0, 1)));
  CHECK(xf::equal(xf::sum(d), xf::sum(v)));
  // every deterministic *_like, at in_dims 1 too, and nested vmaps
  auto makers = [](const xf::tensor& a) {
    xf::tensor z = xf::zeros_like(a), o = xf::ones_like(a), e = xf::empty_like(a), f = xf::full_like(a, 2.5);
    z.add_(a);
    o.mul_(a);
    e.copy_(a);
    f.sub_(a);
    return z + o + e + f;  // a + a + a + (2.5 - a)
  };
  CHECK(xf::allclose(xf::vmap(makers, xf::in_dims(1))(v.t()), 2.0 * v + 2.5));
  CHECK(xf::allclose(xf::vmap(xf::vmap(makers))(v), 2.0 * v + 2.5));
  CHECK(xf::allclose(xf::vmap(xf::vmap(makers), xf::in_dims(1))(v), (2.0 * v + 2.5).t()));
  // under vmap of grad and grad of vmap
  auto loss = [](const xf::tensor& a) {
    xf::tensor r = xf::zeros_like(a);
    r.add_(a * a);
    return xf::sum(r);
  };
  CHECK(xf::allclose(xf::vmap(xf::grad(loss))(v), 2.0 * v));
  CHECK(xf::allclose(xf::grad([&](const xf::tensor& b) { return xf::sum(xf::vmap(loss)(b)); })(v), 2.0 * v));
  // a plain factory stays unbatched: writing a batched value into it is the in-place error
  auto plain = [](const xf::tensor& a) {
    xf::tensor r = xf::zeros({3}, xf::f64);
    r.add_(a);
    return r;
  };
  CHECK_THROWS_WITH(xf::vmap(plain)(v), Contains("in-place"));
  // on another device they are batched like their argument too
  auto on_meta = [](const xf::tensor& a) { return xf::full_like(a, 1.0, xf::meta) + xf::randn_like(a, xf::meta); };
  const xf::tensor m = xf::vmap(on_meta, xf::in_dims(1), xf::randomness::different)(v);
  CHECK((m.device() == xf::meta && m.shape() == xf::shape_t{3, 2}));
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("rand_like and randn_like under vmap follow the randomness option", "[created][vmap][random]") {
  const xf::tensor v = xf::zeros({4, 3}, xf::f64);
  auto draw = [](const xf::tensor& a) { return xf::randn_like(a) + xf::rand_like(a) + a; };
  CHECK_THROWS_WITH(xf::vmap(draw)(v), Contains("randomness"));
  xf::manual_seed(3);
  const xf::tensor same = xf::vmap(draw, xf::randomness::same)(v);
  REQUIRE(same.shape() == xf::shape_t{4, 3});
  CHECK(xf::equal(same.select(0, 0), same.select(0, 3)));
  const xf::tensor diff = xf::vmap(draw, xf::randomness::different)(v);
  REQUIRE(diff.shape() == xf::shape_t{4, 3});
  CHECK_FALSE(xf::allclose(diff.select(0, 0), diff.select(0, 3)));
  CHECK(diff.dtype() == xf::f64);
  // writable like any batched value
  auto fill = [](const xf::tensor& a) {
    xf::tensor r = xf::rand_like(a);
    r.copy_(a);
    return r;
  };
  CHECK(xf::equal(xf::vmap(fill, xf::randomness::different)(xf::ones({2, 3})), xf::ones({2, 3})));
}
