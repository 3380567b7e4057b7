// Deferred pointwise results (NOTE: [Deferred elementwise]): which calls are deferred, that a
// deferred chain gives bitwise the eager result, and that no access pattern (writes into its
// inputs, writes into it, views, transforms, printing) can observe the difference.
#include <catch2/catch.hpp>

#include <sstream>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using xf::detail::set_deferred_min_numel;

namespace {

bool is_deferred(const xf::tensor& t) { return t.impl()->deferred.load(); }

/// Runs f with deferral at the given threshold, restoring the previous one afterwards.
template <class F>
auto with_threshold(std::int64_t n, F f) {
  struct restore {
    std::int64_t prev;
    ~restore() { set_deferred_min_numel(prev); }
  } r{set_deferred_min_numel(n)};
  return f();
}
template <class F>
auto eager(F f) { return with_threshold(0, f); }
template <class F>
auto deferred(F f) { return with_threshold(1024, f); }

constexpr std::int64_t N = 5000;  // not a multiple of the block size: the last block is partial

}  // namespace

TEST_CASE("large pointwise results are deferred; small ones, other ops and integers are not", "[deferred]") {
  deferred([] {
    xf::tensor x = xf::randn({N}), small = xf::randn({8});
    CHECK(is_deferred(x * 2.0));
    CHECK(is_deferred(xf::exp(x)));
    CHECK(is_deferred(x + x));
    CHECK(is_deferred(3.0 - x));
    CHECK_FALSE(is_deferred(small * 2.0));
    CHECK_FALSE(is_deferred(xf::sum(x)));
    CHECK_FALSE(is_deferred(x.reshape({50, 100}).t() * 2.0));  // a strided view: eager
    CHECK(is_deferred(x.narrow(0, 1, N - 1) * 2.0));             // a contiguous view is read in place
    CHECK_FALSE(is_deferred(xf::arange(N) * 2));                 // integer dtype
    CHECK_FALSE(is_deferred(x.to(xf::f64) + x));                 // mixed dtypes promote: eager
    CHECK((x * xf::empty({}, xf::f32, xf::meta)).device() == xf::meta);  // a meta scalar: eager (meta)
    CHECK((xf::empty({}, xf::f32, xf::meta) - x).device() == xf::meta);
  });
}

TEST_CASE("deferred chains are bitwise equal to eager evaluation", "[deferred]") {
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    INFO(dt);
    xf::manual_seed(3);
    xf::tensor x = xf::randn({N}, dt), y = xf::rand({N}, dt) + 0.5;
    auto chain = [&] {
      xf::tensor a = x * 1.7 + (-0.3);                           // scalar forms
      xf::tensor b = xf::exp(a * 0.25) - xf::sin(x) / (y + 3.0);  // two deferred operands
      xf::tensor c = xf::tanh(b) * b + x * y;                     // shared subexpressions, shared leaves
      xf::tensor d = xf::sqrt(y) / (2.0 - xf::neg(c));            // scalar on the left
      return std::vector<xf::tensor>{a, b, c, d};
    };
    auto lazy = deferred(chain);
    auto ref = eager(chain);
    for (std::size_t i = 0; i < lazy.size(); ++i) {
      CHECK(lazy[i].shape() == ref[i].shape());
      CHECK(lazy[i].dtype() == dt);
      CHECK(xf::equal(lazy[i], ref[i]));
    }
  }
}

TEST_CASE("programs too large to fuse fall back to evaluating their inputs", "[deferred]") {
  auto long_chain = [] {
    xf::manual_seed(4);
    xf::tensor x = xf::randn({N});
    xf::tensor t = x;
    for (int i = 0; i < 30; ++i) t = t * 1.01 + 0.01;  // more steps than one program holds
    xf::tensor many = xf::randn({N});
    for (int i = 0; i < 6; ++i) many = many + xf::randn({N});  // more leaves than one program holds
    xf::tensor doubling = x;
    for (int i = 0; i < 5; ++i) doubling = doubling * doubling + 0.5;  // the program would double each step
    return std::vector<xf::tensor>{t, many, doubling};
  };
  auto lazy = deferred(long_chain);
  auto ref = eager(long_chain);
  for (std::size_t i = 0; i < lazy.size(); ++i) CHECK(xf::equal(lazy[i], ref[i]));
}

TEST_CASE("registers sit clear of the result and the leaves within a page, values unchanged", "[deferred]") {
  // NOTE: [Register placement]: from the result's offset within a 4 KiB page, in steps of 1 KiB,
  // the first place that no leaf starts less than 1 KiB behind. Leaves at odd offsets are views.
  constexpr std::uintptr_t page = 4096, near = 1024;
  const auto page_offset = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % page; };
  xf::manual_seed(6);
  const xf::tensor base = xf::randn({N + 2048});
  // read before any program reads `base`: an access to a leaf's storage evaluates its readers
  const float* base_data = base.impl()->template data<float>();
  for (std::int64_t shift_a : {0, 16, 240, 1008})
    for (std::int64_t shift_b : {0, 32, 512, 1000}) {
      INFO("leaf offsets " << shift_a << ", " << shift_b << " floats");
      const xf::tensor a = base.narrow(0, shift_a, N), b = base.narrow(0, shift_b, N);
      auto program = [&] { return xf::exp(a * 0.5) + b; };
      const xf::tensor lazy = deferred(program);
      REQUIRE(is_deferred(lazy));
      const std::shared_ptr<xf::detail::deferred_value> p = lazy.impl()->pending;
      for (std::uintptr_t result : {std::uintptr_t(0), std::uintptr_t(64), std::uintptr_t(3072)}) {
        const auto* out = reinterpret_cast<const std::byte*>(page * 16 + result);  // an address, never written
        const std::uintptr_t r = p->register_page_offset(out, 0);
        CHECK(r % 64 == 0);
        CHECK((r + page - result) % near == 0);  // the result's offset, moved on by whole KiB
        for (std::int64_t shift : {shift_a, shift_b}) {
          const std::uintptr_t behind = (r + page - page_offset(base_data + shift)) % page;
          CHECK((behind == 0 || behind >= near));
        }
      }
      REQUIRE(is_deferred(lazy));  // the checks above did not evaluate it
      CHECK(xf::equal(lazy, eager(program)));
    }
}

TEST_CASE("writes into an input after deferral do not reach the deferred result", "[deferred]") {
  deferred([] {
    xf::tensor x = xf::randn({N});
    const xf::tensor x0 = x.clone();
    xf::tensor y = xf::exp(x) * 2.0;
    xf::tensor z = x + 1.0;
    REQUIRE(is_deferred(y));
    x.mul_(3.0);  // in-place op on the leaf
    CHECK(xf::allclose(y, eager([&] { return xf::exp(x0) * 2.0; })));
    CHECK(xf::equal(z, eager([&] { return x0 + 1.0; })));

    xf::tensor w = xf::cos(x);
    x.narrow(0, 10, 5).zero_();  // a write through a view of the leaf
    CHECK(xf::equal(w, eager([&] { return xf::cos(x0 * 3.0); })));

    const xf::tensor x1 = x.clone();
    xf::tensor v = x * x;
    x.copy_(xf::zeros({N}));
    CHECK(xf::equal(v, eager([&] { return x1 * x1; })));
  });
}

TEST_CASE("a deferred tensor can be written, viewed, printed and compared", "[deferred]") {
  deferred([] {
    xf::tensor x = xf::randn({N});
    xf::tensor y = x * 2.0;
    xf::tensor view = y.narrow(0, 100, 10);  // a view evaluates its base first
    CHECK_FALSE(is_deferred(y));
    CHECK(xf::same_storage(view, y));
    CHECK(xf::equal(view, eager([&] { return (x * 2.0).narrow(0, 100, 10); })));
    CHECK_FALSE(xf::same_storage(x * 3.0, x));
    xf::tensor d = x * 4.0, d_handle = d;
    REQUIRE(is_deferred(d));
    CHECK(xf::same_storage(d, d_handle));  // one tensor, not evaluated yet
    CHECK(is_deferred(d));
    CHECK_FALSE(xf::same_storage(d, x * 4.0));

    xf::tensor z = xf::sin(x);
    z.add_(1.0);  // in-place on a deferred tensor
    CHECK(xf::equal(z, eager([&] { return xf::sin(x) + 1.0; })));

    xf::tensor r = (x + 1.0).reshape({50, 100}).transpose(0, 1);
    CHECK(xf::equal(r, eager([&] { return (x + 1.0).reshape({50, 100}).transpose(0, 1); })));

    std::ostringstream a, b;
    a << (x * 0.5);
    b << eager([&] { return x * 0.5; });
    CHECK(a.str() == b.str());
    const bool same_xtensor = xf::to_xtensor<float>(x - 1.0) == xf::to_xtensor<float>(eager([&] { return x - 1.0; }));
    CHECK(same_xtensor);
  });
}

TEST_CASE("deferred tensors enter transforms; inside transforms nothing is deferred", "[deferred]") {
  deferred([] {
    xf::tensor x = xf::randn({N}, xf::f64);
    auto f = [](const xf::tensor& v) {
      xf::tensor inner = xf::exp(v) * 2.0;
      CHECK_FALSE(xf::detail::dense_of(inner)->deferred.load());
      return xf::sum(inner * v);
    };
    xf::tensor y = x * 0.5;  // deferred argument
    REQUIRE(is_deferred(y));
    xf::tensor g = xf::grad(f)(y);
    xf::tensor y_ref = eager([&] { return x * 0.5; });
    CHECK(xf::allclose(g, eager([&] { return xf::exp(y_ref) * 2.0 * (y_ref + 1.0); })));
    xf::tensor rows = (x + 1.0).reshape({50, 100});
    xf::tensor v = xf::vmap([](const xf::tensor& r) { return xf::sum(xf::sin(r)); })(rows);
    CHECK(xf::allclose(v, eager([&] { return xf::sum(xf::sin((x + 1.0).reshape({50, 100})), {1}); })));
  });
}

TEST_CASE("XFUNC_DEFERRED_MIN_NUMEL = 0 turns deferral off", "[deferred]") {
  eager([] {
    xf::tensor x = xf::randn({N});
    CHECK_FALSE(is_deferred(x * 2.0));
  });
}
