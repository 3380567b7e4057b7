// Every CPU kernel path that splits work over the thread pool (NOTE: [Threads]): contiguous,
// strided, broadcast, transposed and permuted operands, empty and one-element tensors, every
// dtype; results checked against plain loops over the inputs' elements, and bitwise equal with
// 1, 2 and 3 threads (sizes above the parallel threshold, odd extents).
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <xfunc/xfunc.hpp>

#include "../support/bitwise.hpp"

namespace xf = xfunc;
using xfunc_test::bitwise_equal;

namespace {

/// Reads the elements of a tensor (any layout) by row-major position, as doubles.
struct reader {
  xf::tensor t;  // kept alive: the cache below is keyed by its impl
  xf::shape_t shape, strides;
  const void* p = nullptr;
  explicit reader(const xf::tensor& x) : t(x), shape(x.shape()), strides(x.strides()) {
    switch (x.dtype()) {
      case xf::dtype::float32: p = x.impl()->data<float>(); break;
      case xf::dtype::float64: p = x.impl()->data<double>(); break;
      case xf::dtype::int64: p = x.impl()->data<std::int64_t>(); break;
      case xf::dtype::boolean: p = x.impl()->data<bool>(); break;
    }
  }
  double operator()(std::int64_t i) const {
    std::int64_t off = 0;
    for (std::size_t d = shape.size(); d-- > 0;) {
      off += (i % shape[d]) * strides[d];
      i /= shape[d];
    }
    switch (t.dtype()) {
      case xf::dtype::float32: return static_cast<const float*>(p)[off];
      case xf::dtype::float64: return static_cast<const double*>(p)[off];
      case xf::dtype::int64: return static_cast<double>(static_cast<const std::int64_t*>(p)[off]);
      case xf::dtype::boolean: return static_cast<const bool*>(p)[off] ? 1.0 : 0.0;
    }
    return 0;
  }
};

/// The element of t at row-major position i, read through its strides, as a double (the
/// readers of the last few tensors asked for are kept).
double value_at(const xf::tensor& t, std::int64_t i) {
  static std::vector<reader> cache;
  for (const reader& r : cache)
    if (r.t.impl() == t.impl()) return r(i);
  if (cache.size() == 8) cache.erase(cache.begin());
  cache.emplace_back(t);
  return cache.back()(i);
}

/// The multi-index of row-major position i in shape (a shape_t: no heap allocation per element,
/// which matters under ASan).
xf::shape_t unravel(std::int64_t i, const xf::shape_t& shape) {
  xf::shape_t idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}
template <class Index>
std::int64_t ravel_of(const Index& idx, const xf::shape_t& shape) {
  std::int64_t i = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx.begin()[d];
  return i;
}
std::int64_t ravel(const xf::shape_t& idx, const xf::shape_t& shape) { return ravel_of(idx, shape); }
// (a braced index stays a list: GCC 12 warns about copying a braced shape_t at -O2)
std::int64_t ravel(std::initializer_list<std::int64_t> idx, const xf::shape_t& shape) { return ravel_of(idx, shape); }

/// f() with 1 thread, checked bitwise equal to f() with 2 and 3 threads.
xf::tensor same_at_every_thread_count(const std::function<xf::tensor()>& f) {
  xf::set_num_threads(1);
  const xf::tensor r1 = f().contiguous();
  for (int n : {2, 3}) {
    xf::set_num_threads(n);
    const xf::tensor rn = f();
    INFO("threads " << n);
    CHECK(bitwise_equal(r1, rn));
  }
  xf::set_num_threads(2);
  return r1;
}

/// Checks got[i] == expect(i) for every element (exactly, or within rtol).
template <class E>
void check_elements(const xf::tensor& got, E expect, double rtol = 0) {
  std::int64_t bad = 0, first = -1;
  for (std::int64_t i = 0, n = got.numel(); i < n; ++i) {
    const double g = value_at(got, i), e = expect(i);
    const bool ok = rtol == 0 ? g == e : std::abs(g - e) <= rtol * (1 + std::abs(e));
    if (!ok && bad++ == 0) first = i;
  }
  INFO("first mismatch at " << first << " of " << got.numel());
  CHECK(bad == 0);
}

xf::tensor random_of(const xf::shape_t& shape, xf::dtype dt) {
  switch (dt) {
    case xf::dtype::float32:
    case xf::dtype::float64: return xf::randn(shape, dt);
    case xf::dtype::int64: return (xf::randn(shape, xf::f64) * 1000.0).to(xf::i64);
    case xf::dtype::boolean: return xf::randn(shape) > 0.0;
  }
  return {};
}

const xf::dtype all_dtypes[] = {xf::f32, xf::f64, xf::i64, xf::b8};

double as_dtype(double v, xf::dtype dt) {
  switch (dt) {
    case xf::dtype::float32: return static_cast<float>(v);
    case xf::dtype::int64: return static_cast<double>(static_cast<std::int64_t>(v));
    case xf::dtype::boolean: return v != 0 ? 1.0 : 0.0;
    default: return v;
  }
}

}  // namespace

TEST_CASE("copies of every layout into contiguous buffers (clone, contiguous, to)", "[backend][copy]") {
  struct layout {
    const char* name;
    std::function<xf::tensor(const xf::tensor&)> view;
    xf::shape_t base;
  };
  const std::vector<layout> layouts = {
      {"contiguous", [](const xf::tensor& x) { return x; }, {257, 263}},
      {"transposed 2-d", [](const xf::tensor& x) { return x.t(); }, {257, 263}},
      // whole register blocks and tiles only, power-of-two rows (NOTE: [Register transposes])
      {"transposed 2-d, whole blocks", [](const xf::tensor& x) { return x.t(); }, {64, 96}},
      {"permute {2,0,1}", [](const xf::tensor& x) { return x.permute({2, 0, 1}); }, {17, 65, 61}},
      {"permute {1,2,0}", [](const xf::tensor& x) { return x.permute({1, 2, 0}); }, {17, 65, 61}},
      {"permute {0,2,1}", [](const xf::tensor& x) { return x.permute({0, 2, 1}); }, {17, 65, 61}},
      // several units of copy_band^2 per outer position, the last band and run partial
      // (NOTE: [Transposed copy order])
      {"permute {0,2,1}, several units", [](const xf::tensor& x) { return x.permute({0, 2, 1}); }, {2, 579, 521}},
      {"narrow (strided rows)", [](const xf::tensor& x) { return x.narrow(1, 3, 250); }, {257, 263}},
      {"narrow then transpose", [](const xf::tensor& x) { return x.narrow(0, 1, 255).t(); }, {257, 263}},
      {"select (strided 1-d)", [](const xf::tensor& x) { return x.select(1, 1); }, {70001, 2}},
      {"expand (broadcast rows)", [](const xf::tensor& x) { return x.expand({301, 263}); }, {1, 263}},
      {"expand (broadcast columns)", [](const xf::tensor& x) { return x.expand({301, 263}); }, {301, 1}},
      {"transposed narrow column", [](const xf::tensor& x) { return x.t().narrow(0, 2, 1); }, {70001, 5}},
      {"empty", [](const xf::tensor& x) { return x.t(); }, {0, 7}},
      {"one element", [](const xf::tensor& x) { return x.t(); }, {1, 1}},
      {"0-d", [](const xf::tensor& x) { return x; }, {}},
  };
  for (const auto& l : layouts)
    for (xf::dtype dt : all_dtypes) {
      INFO(l.name << ", " << dt);
      const xf::tensor x = random_of(l.base, dt);
      const xf::tensor v = l.view(x);
      const xf::tensor c = same_at_every_thread_count([&] { return v.clone(); });
      CHECK(c.dtype() == dt);
      if (c.numel() > 0) CHECK(c.is_contiguous());  // (a fresh empty tensor's strides are not contiguous ones)
      check_elements(c, [&](std::int64_t i) { return value_at(v, i); });
      const xf::tensor k = same_at_every_thread_count([&] { return v.contiguous(); });
      check_elements(k, [&](std::int64_t i) { return value_at(v, i); });
      for (xf::dtype to : all_dtypes) {
        if (to == dt) continue;
        INFO("to " << to);
        const xf::tensor y = same_at_every_thread_count([&] { return v.to(to); });
        CHECK(y.dtype() == to);
        check_elements(y, [&](std::int64_t i) { return as_dtype(value_at(v, i), to); });
      }
    }
  // flip reads with negative strides
  const xf::tensor x = xf::randn({131, 1029});
  const xf::tensor f = same_at_every_thread_count([&] { return xf::flip(x, {0, 1}); });
  check_elements(f, [&](std::int64_t i) {
    auto idx = unravel(i, f.shape());
    return value_at(x, ravel({130 - idx[0], 1028 - idx[1]}, x.shape()));
  });
  const xf::tensor ft = same_at_every_thread_count([&] { return xf::flip(x.t(), {1}); });
  check_elements(ft, [&](std::int64_t i) {
    auto idx = unravel(i, ft.shape());
    return value_at(x, ravel({130 - idx[1], idx[0]}, x.shape()));
  });
}

TEST_CASE("deferred programs with large results (streaming stores where the build has them) equal eager ops",
          "[backend][pointwise]") {
  // NOTE: [Streaming deferred results]: results of 32 MiB and more are written by streaming
  // stores in AVX builds (the *_native test build), by the last step's block function in each
  // operand form; sizes that are not whole registers end in a partial one written by ordinary
  // stores
  const std::int64_t saved = xf::detail::set_deferred_min_numel(std::int64_t(1) << 15);
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    INFO(dt);
    const std::int64_t n = (std::int64_t(32) << 20) / static_cast<std::int64_t>(xf::dtype_size(dt)) + 5;
    const xf::tensor x = xf::randn({n}, dt), y = xf::randn({n}, dt);
    const std::function<xf::tensor()> programs[] = {
        [&] { return x * 1.5 + y; },          // binary last step
        [&] { return 2.0 - x * 1.5; },        // scalar on the left
        [&] { return (x + y) * 0.25; },       // scalar on the right
        [&] { return xf::sin(x * 1.5 + y); }  // unary
    };
    for (std::size_t k = 0; k < std::size(programs); ++k) {
      INFO("program " << k);
      const xf::tensor lazy = same_at_every_thread_count([&] {
        xf::tensor r = programs[k]();
        CHECK(r.impl()->deferred.load());
        return r;
      });
      xf::detail::set_deferred_min_numel(0);
      const xf::tensor eager = programs[k]();
      CHECK_FALSE(eager.impl()->deferred.load());
      CHECK(bitwise_equal(lazy, eager));
      xf::detail::set_deferred_min_numel(std::int64_t(1) << 15);
    }
  }
  xf::detail::set_deferred_min_numel(saved);
}

TEST_CASE("pointwise kernels: contiguous, strided, broadcast, transposed, every dtype", "[backend][pointwise]") {
  // outside the deferral (XFUNC_DEFERRED_MIN_NUMEL may defer everything): these are the eager kernels
  const std::int64_t saved = xf::detail::set_deferred_min_numel(0);
  const xf::shape_t shape{257, 263};
  for (xf::dtype dt : all_dtypes) {
    INFO(dt);
    const xf::tensor a = random_of(shape, dt), b = random_of(shape, dt);
    const xf::tensor col = random_of({257, 1}, dt), row = random_of({1, 263}, dt);
    // (two booleans add to a boolean, their or, as in torch)
    auto sum_of = [&](double x, double y) { return as_dtype(x + y, dt); };
    const xf::tensor s1 = same_at_every_thread_count([&] { return a + b; });
    CHECK(s1.dtype() == dt);
    check_elements(s1, [&](std::int64_t i) { return sum_of(value_at(a, i), value_at(b, i)); });
    const xf::tensor s2 = same_at_every_thread_count([&] { return col + row; });  // broadcast
    check_elements(s2, [&](std::int64_t i) {
      auto idx = unravel(i, shape);
      return sum_of(value_at(col, idx[0]), value_at(row, idx[1]));
    });
    const xf::tensor sq = random_of({263, 263}, dt);
    const xf::tensor s3 = same_at_every_thread_count([&] { return sq.t() + sq; });  // transposed
    check_elements(s3, [&](std::int64_t i) {
      auto idx = unravel(i, sq.shape());
      return sum_of(value_at(sq, ravel({idx[1], idx[0]}, sq.shape())), value_at(sq, i));
    });
    const xf::tensor s4 = same_at_every_thread_count([&] { return a.narrow(1, 1, 250) * 3.0; });  // strided
    const xf::dtype mul_dt = xf::is_floating(dt) ? dt : xf::i64;  // (a double scalar does not widen)
    check_elements(s4, [&](std::int64_t i) {
      auto idx = unravel(i, {257, 250});
      return as_dtype(value_at(a, ravel({idx[0], idx[1] + 1}, shape)) * 3.0, mul_dt);
    });
    // comparisons: boolean output
    const xf::tensor c = same_at_every_thread_count([&] { return a < b; });
    CHECK(c.dtype() == xf::b8);
    check_elements(c, [&](std::int64_t i) { return value_at(a, i) < value_at(b, i) ? 1.0 : 0.0; });
    // neg keeps integers, exp computes in floating point
    if (dt != xf::b8) {
      const xf::tensor n = same_at_every_thread_count([&] { return -a.t(); });
      check_elements(n, [&](std::int64_t i) { return -value_at(a.t(), i); });
    }
    const xf::tensor scaled = a.t() * 0.001;
    const xf::tensor e = same_at_every_thread_count([&] { return xf::exp(a.t() * 0.001); });
    check_elements(e, [&](std::int64_t i) { return std::exp(value_at(scaled, i)); }, 1e-5);
  }
  // empty and one element
  for (xf::dtype dt : all_dtypes) {
    const xf::tensor z = random_of({0, 3}, dt), one = random_of({1}, dt);
    CHECK((z + z).numel() == 0);
    CHECK(xf::exp(z).shape() == xf::shape_t{0, 3});
    check_elements(one * one, [&](std::int64_t) { return as_dtype(value_at(one, 0) * value_at(one, 0), dt == xf::b8 ? xf::i64 : dt); });
  }
  xf::detail::set_deferred_min_numel(saved);
}

TEST_CASE("per-element math: every pointwise op on SIMD registers and on the scalar tail", "[backend][pointwise]") {
  // Lengths around the SIMD widths (4 to 16 lanes) put elements both in whole registers and in
  // the tail (NOTE: [Element math]); every op is checked against the C++ standard library.
  const std::int64_t saved = xf::detail::set_deferred_min_numel(0);
  using unary_ref = double (*)(double);
  struct unary_case {
    const char* name;
    xf::tensor (*op)(const xf::tensor&);
    unary_ref ref;
    double lo, hi;  // the domain sampled
  };
  const unary_case unary_cases[] = {
      {"exp", [](const xf::tensor& x) { return xf::exp(x); }, [](double x) { return std::exp(x); }, -5, 5},
      {"log", [](const xf::tensor& x) { return xf::log(x); }, [](double x) { return std::log(x); }, 0.01, 9},
      {"sin", [](const xf::tensor& x) { return xf::sin(x); }, [](double x) { return std::sin(x); }, -9, 9},
      {"cos", [](const xf::tensor& x) { return xf::cos(x); }, [](double x) { return std::cos(x); }, -9, 9},
      {"tan", [](const xf::tensor& x) { return xf::tan(x); }, [](double x) { return std::tan(x); }, -1.4, 1.4},
      {"tanh", [](const xf::tensor& x) { return xf::tanh(x); }, [](double x) { return std::tanh(x); }, -5, 5},
      {"sigmoid", [](const xf::tensor& x) { return xf::sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }, -9, 9},
      {"relu", [](const xf::tensor& x) { return xf::relu(x); }, [](double x) { return x > 0 ? x : 0.0; }, -3, 3},
      {"abs", [](const xf::tensor& x) { return xf::abs(x); }, [](double x) { return std::abs(x); }, -3, 3},
      {"sqrt", [](const xf::tensor& x) { return xf::sqrt(x); }, [](double x) { return std::sqrt(x); }, 0, 9},
      {"rsqrt", [](const xf::tensor& x) { return xf::rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 0.01, 9},
      {"square", [](const xf::tensor& x) { return xf::square(x); }, [](double x) { return x * x; }, -3, 3},
      {"log1p", [](const xf::tensor& x) { return xf::log1p(x); }, [](double x) { return std::log1p(x); }, -0.9, 9},
      {"expm1", [](const xf::tensor& x) { return xf::expm1(x); }, [](double x) { return std::expm1(x); }, -3, 3},
      {"sign", [](const xf::tensor& x) { return xf::sign(x); }, [](double x) { return double((x > 0) - (x < 0)); }, -3, 3},
      {"reciprocal", [](const xf::tensor& x) { return xf::reciprocal(x); }, [](double x) { return 1 / x; }, 0.1, 9},
      {"erf", [](const xf::tensor& x) { return xf::erf(x); }, [](double x) { return std::erf(x); }, -3, 3},
      {"pow(x, 2.5)", [](const xf::tensor& x) { return xf::pow(x, 2.5); }, [](double x) { return std::pow(x, 2.5); }, 0, 3},
      {"clamp", [](const xf::tensor& x) { return xf::clamp(x, -0.5, 0.25); }, [](double x) { return std::clamp(x, -0.5, 0.25); }, -1, 1},
  };
  struct binary_case {
    const char* name;
    xf::tensor (*op)(const xf::tensor&, const xf::tensor&);
    double (*ref)(double, double);
  };
  const binary_case binary_cases[] = {
      {"add", [](const xf::tensor& a, const xf::tensor& b) { return a + b; }, [](double a, double b) { return a + b; }},
      {"mul", [](const xf::tensor& a, const xf::tensor& b) { return a * b; }, [](double a, double b) { return a * b; }},
      {"div", [](const xf::tensor& a, const xf::tensor& b) { return a / b; }, [](double a, double b) { return a / b; }},
      {"pow", [](const xf::tensor& a, const xf::tensor& b) { return xf::pow(xf::abs(a) + 0.5, b); },
       [](double a, double b) { return std::pow(std::abs(a) + 0.5, b); }},
      {"maximum", [](const xf::tensor& a, const xf::tensor& b) { return xf::maximum(a, b); }, [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](const xf::tensor& a, const xf::tensor& b) { return xf::minimum(a, b); }, [](double a, double b) { return std::min(a, b); }},
      {"atan2", [](const xf::tensor& a, const xf::tensor& b) { return xf::atan2(a, b); }, [](double a, double b) { return std::atan2(a, b); }},
  };
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    INFO(dt);
    const double rtol = dt == xf::f32 ? 2e-6 : 1e-13;
    for (std::int64_t n : {1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 47, 64, 100}) {
      INFO("n = " << n);
      const xf::tensor u = xf::rand({n}, dt);
      for (const unary_case& c : unary_cases) {
        INFO(c.name);
        const xf::tensor x = u * (c.hi - c.lo) + c.lo;
        check_elements(c.op(x), [&](std::int64_t i) { return as_dtype(c.ref(value_at(x, i)), dt); }, rtol);
      }
      const xf::tensor a = xf::randn({n}, dt), b = xf::randn({n}, dt);
      for (const binary_case& c : binary_cases) {
        INFO(c.name);
        check_elements(c.op(a, b), [&](std::int64_t i) { return as_dtype(c.ref(value_at(a, i), value_at(b, i)), dt); }, rtol);
        // a scalar on either side
        const xf::tensor s = xf::full({}, 0.75, dt);
        check_elements(c.op(a, s), [&](std::int64_t i) { return as_dtype(c.ref(value_at(a, i), 0.75), dt); }, rtol);
        check_elements(c.op(s, b), [&](std::int64_t i) { return as_dtype(c.ref(0.75, value_at(b, i)), dt); }, rtol);
      }
    }
  }
  xf::detail::set_deferred_min_numel(saved);
}

TEST_CASE("per-element math: NaN, infinities and signed zeros, in registers and in the tail", "[backend][pointwise]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    INFO(dt);
    // 37 elements: the special values sit at the start (a whole register) and at the end (the tail)
    for (std::int64_t at : {0, 36}) {
      INFO("at " << at);
      auto with = [&](double v) {
        xf::tensor t = xf::ones({37}, dt);
        t.narrow(0, at, 1).copy_(xf::full({1}, v, dt));
        return t;
      };
      auto value = [&](const xf::tensor& t) { return value_at(t, at); };
      // NaN propagates through relu, maximum, minimum, clamp and sign, as in torch
      CHECK(std::isnan(value(xf::relu(with(nan)))));
      CHECK(std::isnan(value(xf::maximum(with(nan), xf::ones({37}, dt)))));
      CHECK(std::isnan(value(xf::maximum(xf::ones({37}, dt), with(nan)))));
      CHECK(std::isnan(value(xf::minimum(with(nan), xf::ones({37}, dt)))));
      CHECK(std::isnan(value(xf::minimum(xf::ones({37}, dt), with(nan)))));
      CHECK(std::isnan(value(xf::clamp(with(nan), -1, 1))));
      CHECK(std::isnan(value(xf::sign(with(nan)))));
      CHECK(std::isnan(value(xf::exp(with(nan)))));
      // comparisons with NaN as IEEE defines them (xsimd 8's AVX-512 `!=` is ordered: NOTE in
      // element::is_nan), and NaN is truthy
      const xf::tensor n1 = with(nan), n2 = with(nan);
      CHECK(value(xf::ne(n1, n2)) == 1);
      CHECK(value(xf::ne(n1, xf::ones({37}, dt))) == 1);
      CHECK(value(xf::eq(n1, n2)) == 0);
      CHECK(value(xf::lt(n1, xf::ones({37}, dt))) == 0);
      CHECK(value(xf::ge(n1, xf::ones({37}, dt))) == 0);
      CHECK(value(xf::logical_and(n1, xf::ones({37}, dt))) == 1);
      CHECK(value(xf::logical_or(n1, xf::zeros({37}, dt))) == 1);
      CHECK(value(xf::logical_not(n1)) == 0);
      // infinities
      CHECK(value(xf::exp(with(-inf))) == 0);
      CHECK(value(xf::exp(with(inf))) == inf);
      CHECK(value(xf::sigmoid(with(-inf))) == 0);
      CHECK(value(xf::sigmoid(with(inf))) == 1);
      CHECK(value(xf::tanh(with(inf))) == 1);
      CHECK(value(xf::relu(with(inf))) == inf);
      CHECK(value(xf::clamp(with(-inf), -1, 1)) == -1);
      CHECK(value(xf::sign(with(-inf))) == -1);
      CHECK(value(xf::maximum(with(-inf), xf::zeros({37}, dt))) == 0);
      // a zero keeps its sign through sign and abs drops it
      CHECK(std::signbit(value(xf::sign(with(-0.0)))));
      CHECK(value(xf::sign(with(-0.0))) == 0);
      CHECK(!std::signbit(value(xf::abs(with(-0.0)))));
      CHECK(value(xf::log(with(0.0))) == -inf);
      CHECK(std::isnan(value(xf::sqrt(with(-1.0)))));
    }
  }
}

// NOTE: [Exponentials of double registers]: xsimd's double exp, expm1, tanh, erf and pow must not
// see NaN, infinite or huge arguments (a cast to int64 that is undefined there; clang's UBSan in
// the sanitizer build reports it), and the clamping that prevents it must not change a result.
TEST_CASE("per-element math: exponentials at NaN, infinite, huge and edge arguments", "[backend][pointwise]") {
  using reg = xsimd::batch<double>;
  namespace el = xf::detail::element;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const double big = std::numeric_limits<double>::max();
  // (xsimd's pow loses up to ~100 ulp where b * log(a) is large)
  auto same = [](double got, double want, double rtol = 1e-14) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want) || want == 0) return got == want;
    return std::abs(got - want) <= rtol * std::abs(want);
  };
  // a register of one value, and one whose other lanes hold an ordinary value
  auto lanes = [](double v, double other) {
    alignas(64) double buf[reg::size];
    std::fill(buf, buf + reg::size, other);
    buf[0] = v;
    return reg::load_aligned(buf);
  };
  auto first = [](const reg& r) { return r.get(0); };
  for (double v : {nan, inf, -inf, 1e30, -1e30, big, -big, 800.0, -800.0, 709.7, 709.8, -745.0, -746.0, 20.0, -20.0, 0.5}) {
    INFO("x = " << v);
    for (double other : {v, 0.25}) {
      CHECK(same(first(el::exp(lanes(v, other))), std::exp(v)));
      CHECK(same(first(el::expm1(lanes(v, other))), std::expm1(v)));
      CHECK(same(first(el::tanh(lanes(v, other))), std::tanh(v)));
      CHECK(same(first(el::erf(lanes(v, other))), std::erf(v)));
      CHECK(same(first(el::pow(lanes(2.5, 2.5), lanes(v, other))), std::pow(2.5, v), 1e-13));
      CHECK(same(first(el::pow(lanes(v, other), lanes(3.0, 3.0))), std::pow(v, 3.0), 1e-13));
      CHECK(same(first(el::pow(lanes(v, other), lanes(0.5, 0.5))), std::pow(v, 0.5), 1e-13));
    }
  }
  // float registers: the same early overflow and flushed subnormals are mended, and lanes beyond
  // them still reach xsimd's own limits (not the in-range path)
  const float finf = std::numeric_limits<float>::infinity();
  for (float v : {88.5f, 88.72f, -88.0f, -95.0f, -103.0f, -104.0f, 100.0f, -150.0f, 1e30f, -1e30f, finf, -finf}) {
    INFO("float x = " << v);
    const xsimd::batch<float> r(v);
    CHECK(same(el::exp(r).get(0), std::exp(v), 1e-6));
    CHECK(same(el::expm1(r).get(0), std::expm1(v), 1e-6));
    CHECK(same(el::pow(xsimd::batch<float>(2.0f), r).get(0), std::pow(2.0f, v), 1e-5));
  }
  CHECK(std::isnan(el::exp(xsimd::batch<float>(std::numeric_limits<float>::quiet_NaN())).get(0)));
  // registers whose lanes all lie in the ordinary range take a shorter path with xsimd's bits
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> in_range(-87.0f, 88.0f);
  std::int64_t differ = 0;
  for (int i = 0; i < 20000; ++i) {
    alignas(64) float v[xsimd::batch<float>::size];
    for (float& f : v) f = in_range(gen);
    const auto r = xsimd::batch<float>::load_aligned(v);
    differ += xsimd::any(el::exp(r) != xsimd::exp(r));
  }
  CHECK(differ == 0);
  CHECK(first(el::pow(lanes(1.0, 1.0), lanes(nan, nan))) == 1);  // as std::pow
  CHECK(first(el::pow(lanes(0.5, 0.5), lanes(inf, inf))) == 0);
  // and through the ops, where registers and the scalar tail meet
  const xf::tensor x{nan, inf, -inf, 1e30, -1e30, 800.0, -800.0, 0.5, 3.0};
  const xf::tensor e = xf::exp(x), t = xf::tanh(x), s = xf::softmax(x, 0);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double v = value_at(x, i);
    INFO("x = " << v);
    CHECK(same(value_at(e, i), std::exp(v)));
    CHECK(same(value_at(t, i), std::tanh(v)));
    CHECK(std::isnan(value_at(s, i)));  // a NaN (and inf - inf) poisons the whole softmax
  }
}

TEST_CASE("deferred pointwise programs: parallel blocks, bitwise those of eager evaluation", "[backend][deferred]") {
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    INFO(dt);
    for (std::int64_t n : {std::int64_t(1) << 17, (std::int64_t(1) << 17) + 37, std::int64_t(70001)}) {
      INFO(n);
      const xf::tensor x = xf::randn({n}, dt), y = xf::randn({n}, dt);
      auto chain = [&] { return xf::exp((x * 1.5 + 0.25) * y - x) / 3.0; };  // one program of 6 steps
      auto single = [&] { return xf::sin(x); };                               // one step
      const std::int64_t saved = xf::detail::set_deferred_min_numel(1 << 15);
      const xf::tensor deferred_chain = same_at_every_thread_count(chain);
      const xf::tensor deferred_single = same_at_every_thread_count(single);
      xf::detail::set_deferred_min_numel(0);  // eager, op by op
      const xf::tensor eager_chain = same_at_every_thread_count(chain);
      const xf::tensor eager_single = same_at_every_thread_count(single);
      xf::detail::set_deferred_min_numel(saved);
      CHECK(bitwise_equal(deferred_chain, eager_chain));
      CHECK(bitwise_equal(deferred_single, eager_single));
      check_elements(eager_single, [&](std::int64_t i) { return std::sin(value_at(x, i)); }, 1e-5);
    }
  }
}

TEST_CASE("transposed copies into large destinations take streaming stores", "[backend][copy]") {
  // NOTE: [Streaming stores]: destinations of 4 MiB and more, whole register blocks and edges, a
  // fresh buffer and views whose rows are (or are not) aligned to a register's width
  auto check = [](const xf::tensor& x, const xf::tensor& got, std::int64_t ld, std::int64_t from) {
    xf::detail::visit_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const std::int64_t r = x.size(0), c = x.size(1);
      const T* s = x.impl()->template data<T>();
      const T* d = got.impl()->template data<T>();
      std::int64_t bad = 0;
      for (std::int64_t i = 0; i < c; ++i)
        for (std::int64_t j = 0; j < r; ++j) bad += d[i * ld + from + j] != s[j * c + i];
      CHECK(bad == 0);
    });
  };
  for (xf::dtype dt : {xf::f32, xf::f64, xf::i64})
    for (const xf::shape_t& shape : {xf::shape_t{1024, 1024}, xf::shape_t{1031, 1030}}) {
      INFO(dt << ", " << shape[0] << " x " << shape[1]);
      const xf::tensor x = random_of(shape, dt);
      const xf::tensor k = same_at_every_thread_count([&] { return x.t().contiguous(); });
      check(x, k, shape[0], 0);
      for (std::int64_t pad : {16, 7}) {  // rows of ld = n + pad elements, from column pad
        INFO("into a view, row length " << shape[0] + pad);
        const xf::tensor big = same_at_every_thread_count([&] {
          xf::tensor b = xf::zeros({shape[1], shape[0] + pad}, dt);
          b.narrow(1, pad, shape[0]).copy_(x.t());
          return b;
        });
        check(x, big, shape[0] + pad, pad);
      }
    }
  // NOTE: [Staged transposes]: a task's whole units pipelined across outer positions, with
  // partial units (the last band, the last column of tiles) copied in between; destination rows
  // of 1096 floats, whole 32-byte registers
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    INFO(dt << ", permute {0, 2, 1} of [3, 1096, 700]");
    const xf::tensor x = random_of({3, 1096, 700}, dt);
    const xf::tensor v = x.permute({0, 2, 1});
    const xf::tensor k = same_at_every_thread_count([&] { return v.contiguous(); });
    check_elements(k, [&](std::int64_t i) { return value_at(v, i); });
  }
}

TEST_CASE("write_through: in-place writes through strided views", "[backend][inplace]") {
  for (xf::dtype dt : all_dtypes) {
    INFO(dt);
    const xf::tensor a = random_of({257, 263}, dt);
    // into a transposed view
    const xf::tensor into_t = same_at_every_thread_count([&] {
      xf::tensor b = xf::zeros({263, 257}, dt);
      xf::tensor bt = b.t();
      bt.copy_(a);
      return b;
    });
    check_elements(into_t, [&](std::int64_t i) {
      auto idx = unravel(i, {263, 257});
      return value_at(a, ravel({idx[1], idx[0]}, {257, 263}));
    });
    // from a view of itself: the source is read before anything is written
    const xf::tensor sq = random_of({281, 281}, dt);
    const xf::tensor self_t = same_at_every_thread_count([&] {
      xf::tensor s = sq.clone();
      s.copy_(s.t());
      return s;
    });
    check_elements(self_t, [&](std::int64_t i) { return value_at(sq.t(), i); });
    const xf::tensor shifted = same_at_every_thread_count([&] {  // overlapping rows
      xf::tensor s = sq.clone();
      xf::tensor dst = s.narrow(0, 1, 280);
      dst.copy_(s.narrow(0, 0, 280));
      return s;
    });
    check_elements(shifted, [&](std::int64_t i) {
      auto idx = unravel(i, sq.shape());
      return value_at(sq, idx[0] == 0 ? i : ravel({idx[0] - 1, idx[1]}, sq.shape()));
    });
    // broadcast source row, converted from another dtype
    const xf::tensor row = random_of({1, 263}, dt == xf::f64 ? xf::f32 : dt);
    const xf::tensor bc = same_at_every_thread_count([&] {
      xf::tensor b = xf::zeros({257, 263}, dt);
      xf::tensor v = b.narrow(0, 2, 200);
      v.copy_(row);
      return b;
    });
    check_elements(bc, [&](std::int64_t i) {
      auto idx = unravel(i, {257, 263});
      return idx[0] >= 2 && idx[0] < 202 ? as_dtype(value_at(row, idx[1]), dt) : 0.0;
    });
    // a transposed source of another dtype into a strided view: the tiled copy into a buffer in
    // the destination's order, then converted row by row (NOTE: [Copies by element size])
    const xf::dtype other = dt == xf::f32 ? xf::i64 : xf::f32;
    const xf::tensor src = random_of({263, 257}, other);
    const xf::tensor converted = same_at_every_thread_count([&] {
      xf::tensor b = xf::zeros({257, 270}, dt);
      xf::tensor v = b.narrow(1, 3, 263);
      v.copy_(src.t());
      return b;
    });
    check_elements(converted, [&](std::int64_t i) {
      auto idx = unravel(i, {257, 270});
      return idx[1] >= 3 && idx[1] < 266 ? as_dtype(value_at(src, ravel({idx[1] - 3, idx[0]}, {263, 257})), dt) : 0.0;
    });
  }
  // an in-place op on a strided view of a large tensor
  const xf::tensor base = xf::randn({300, 500});
  const xf::tensor r = same_at_every_thread_count([&] {
    xf::tensor b = base.clone();
    xf::tensor v = b.t().narrow(0, 100, 300);
    v.mul_(2.0);
    return b;
  });
  check_elements(r, [&](std::int64_t i) {
    auto idx = unravel(i, base.shape());
    const double x = value_at(base, i);
    return idx[1] >= 100 && idx[1] < 400 ? static_cast<double>(static_cast<float>(x) * 2.0f) : x;
  });
  // fill_ and zero_ on a transposed view
  const xf::tensor filled = same_at_every_thread_count([&] {
    xf::tensor b = base.clone();
    xf::tensor v = b.t();
    v.fill_(0.5);
    return b;
  });
  check_elements(filled, [](std::int64_t) { return 0.5; });
}

TEST_CASE("cat and stack: mixed layouts and dtypes, every dim", "[backend][cat]") {
  const xf::tensor a = xf::randn({201, 263}), e = xf::randn({201, 0});
  for (std::int64_t dim : {0, 1, -1}) {
    INFO("dim " << dim);
    // dim 0: an int64 input below (the result is float32); dims 1, -1: a transposed float64 one beside
    const xf::tensor b2 = dim == 0 ? random_of({112, 263}, xf::i64) : random_of({212, 201}, xf::f64).t();
    const xf::tensor c = same_at_every_thread_count([&] { return xf::cat({a, b2}, dim); });
    const std::int64_t d = dim < 0 ? dim + 2 : dim;
    CHECK(c.dtype() == (dim == 0 ? xf::f32 : xf::f64));
    check_elements(c, [&](std::int64_t i) {
      auto idx = unravel(i, c.shape());
      const std::int64_t split = a.size(d);
      if (idx[static_cast<std::size_t>(d)] < split) return value_at(a, ravel(idx, a.shape()));
      idx[static_cast<std::size_t>(d)] -= split;
      return as_dtype(value_at(b2, ravel(idx, b2.shape())), c.dtype());
    });
  }
  const xf::tensor ce = same_at_every_thread_count([&] { return xf::cat({e, a, e}, 1); });
  CHECK(bitwise_equal(ce, a));
  for (std::int64_t dim : {0, 1, 2}) {
    INFO("stack dim " << dim);
    const xf::tensor x = xf::randn({151, 263}), y = xf::randn({263, 151}).t();
    const xf::tensor s = same_at_every_thread_count([&] { return xf::stack({x, y, x}, dim); });
    check_elements(s, [&](std::int64_t i) {
      auto idx = unravel(i, s.shape());
      const std::int64_t which = idx[static_cast<std::size_t>(dim)];
      idx.erase(static_cast<std::size_t>(dim));
      return value_at(which == 1 ? y : x, ravel(idx, x.shape()));
    });
  }
  for (xf::dtype dt : all_dtypes) {
    const xf::tensor x = random_of({1, 1}, dt);
    check_elements(xf::cat({x, x.t()}, 0), [&](std::int64_t) { return value_at(x, 0); });
  }
}

TEST_CASE("where and clamp: broadcast, transposed, every dtype", "[backend][pointwise]") {
  const std::int64_t saved = xf::detail::set_deferred_min_numel(0);
  const xf::tensor cond = xf::randn({257, 1}) > 0.0;
  for (xf::dtype dt : all_dtypes) {
    INFO(dt);
    const xf::tensor a = random_of({263, 257}, dt).t(), b = random_of({257, 263}, dt);
    const xf::tensor w = same_at_every_thread_count([&] { return xf::where(cond, a, b); });
    check_elements(w, [&](std::int64_t i) {
      auto idx = unravel(i, {257, 263});
      return value_at(cond, idx[0]) != 0 ? value_at(a, i) : value_at(b, i);
    });
    const xf::tensor full_cond = xf::randn({257, 263}) > 0.0;
    const xf::tensor w2 = same_at_every_thread_count([&] { return xf::where(full_cond.t(), b.t(), a.t()); });
    check_elements(w2, [&](std::int64_t i) {
      return value_at(full_cond.t(), i) != 0 ? value_at(b.t(), i) : value_at(a.t(), i);
    });
    // a one-element side is read as a scalar (either side, both, with or without dims)
    const xf::tensor s1 = random_of({1, 1}, dt), s0 = random_of({}, dt);
    const xf::tensor ws = same_at_every_thread_count([&] { return xf::where(full_cond, s1, a); });
    check_elements(ws, [&](std::int64_t i) { return value_at(full_cond, i) != 0 ? value_at(s1, 0) : value_at(a, i); });
    const xf::tensor wt = same_at_every_thread_count([&] { return xf::where(full_cond, b, s0); });
    check_elements(wt, [&](std::int64_t i) { return value_at(full_cond, i) != 0 ? value_at(b, i) : value_at(s0, 0); });
    const xf::tensor wb = same_at_every_thread_count([&] { return xf::where(full_cond, s0, s1); });
    CHECK(wb.shape() == xf::shape_t{257, 263});
    check_elements(wb, [&](std::int64_t i) { return value_at(full_cond, i) != 0 ? value_at(s0, 0) : value_at(s1, 0); });
    if (dt != xf::b8) {
      const double lo = dt == xf::i64 ? -300 : -0.5, hi = dt == xf::i64 ? 200 : 0.75;
      const xf::tensor c = same_at_every_thread_count([&] { return xf::clamp(a, lo, hi); });
      const xf::dtype cdt = dt == xf::i64 ? xf::f32 : dt;  // (an integer tensor with double bounds)
      CHECK(c.dtype() == cdt);
      check_elements(c, [&](std::int64_t i) { return as_dtype(std::min(std::max(as_dtype(value_at(a, i), cdt), lo), hi), cdt); });
    }
  }
  const xf::tensor one = xf::where(xf::full({}, 1.0) > 0.0, xf::full({1}, 2.0), xf::full({1}, 3.0));
  CHECK(one.item<double>() == 2.0);
  CHECK(xf::where(xf::zeros({0}) > 0.0, xf::zeros({0}), xf::zeros({0})).numel() == 0);
  xf::detail::set_deferred_min_numel(saved);
}

TEST_CASE("index_select: every dim, strided inputs, repeated indices; negative ones refused", "[backend][index]") {
  std::mt19937 g(7);
  for (xf::dtype dt : all_dtypes) {
    INFO(dt);
    const xf::tensor base = random_of({61, 67, 37}, dt);
    for (const xf::tensor& t : {base, base.permute({2, 0, 1}), base.narrow(2, 1, 30)}) {
      for (std::int64_t dim = 0; dim < 3; ++dim) {
        INFO("dim " << dim << ", input " << t.shape());
        const std::int64_t n = t.size(dim);
        std::vector<std::int64_t> iv(static_cast<std::size_t>(2 * n + 3));
        for (auto& v : iv) v = std::uniform_int_distribution<std::int64_t>(0, n - 1)(g);
        xf::tensor idx = xf::zeros({static_cast<std::int64_t>(iv.size())}, xf::i64);
        std::memcpy(idx.impl()->data<std::int64_t>(), iv.data(), iv.size() * sizeof(std::int64_t));
        const xf::tensor r = same_at_every_thread_count([&] { return xf::index_select(t, dim, idx); });
        check_elements(r, [&](std::int64_t i) {
          auto pos = unravel(i, r.shape());
          std::int64_t& k = pos[static_cast<std::size_t>(dim)];
          k = iv[static_cast<std::size_t>(k)];
          return value_at(t, ravel(pos, t.shape()));
        });
      }
    }
  }
  const xf::tensor t = xf::randn({600, 500});
  CHECK_THROWS_WITH(xf::index_select(t, 1, xf::tensor{std::int64_t(3), std::int64_t(500)}),
                    Catch::Contains("index 500 is out of range for dimension 1 of size 500"));
  // (torch 1.13 refuses negative indices; xfunc counted them from the end before 2026-12-04)
  CHECK_THROWS_WITH(xf::index_select(t, 1, xf::tensor{std::int64_t(3), std::int64_t(-1)}),
                    "xf::index_select: index -1 is out of range for dimension 1 of size 500 (indices count from 0; "
                    "negative ones are refused, as in torch)");
  CHECK(xf::index_select(t, 0, xf::zeros({0}, xf::i64)).shape() == xf::shape_t{0, 500});
  CHECK(xf::index_select(xf::full({}, 4.0), 0, xf::tensor{std::int64_t(0)}).item<double>() == 4.0);
}

TEST_CASE("index_select into large results takes streaming stores: every row length and dtype", "[backend][index]") {
  // NOTE: [Streaming index_select]: results of 4 MiB and more (and a few smaller: boolean and some
  // float32 ones); rows whose length is (or is not) a
  // whole number of registers, so that their streamed middles start at every alignment; an outer
  // dim, so that the next row's prefetch wraps to the next outer position
  std::mt19937 g(11);
  struct layout {
    xf::shape_t shape;
    std::int64_t dim, count;
  };
  for (const layout& l : {layout{{600, 1031}, 0, 1100}, layout{{300, 1024}, 0, 700}, layout{{4, 300, 515}, 1, 600},
                          layout{{2000, 2051}, 0, 2100}})
    for (xf::dtype dt : all_dtypes) {
      const xf::tensor t = random_of(l.shape, dt);
      const std::int64_t n = t.size(l.dim);
      std::vector<std::int64_t> iv(static_cast<std::size_t>(l.count));
      for (auto& v : iv) v = std::uniform_int_distribution<std::int64_t>(0, n - 1)(g);
      xf::tensor idx = xf::zeros({l.count}, xf::i64);
      std::memcpy(idx.impl()->data<std::int64_t>(), iv.data(), iv.size() * sizeof(std::int64_t));
      const xf::tensor r = same_at_every_thread_count([&] { return xf::index_select(t, l.dim, idx); });
      const std::size_t elem = xf::dtype_size(dt);
      INFO(dt << ", input " << t.shape() << ", dim " << l.dim << ", result of "
              << r.numel() * static_cast<std::int64_t>(elem) << " bytes");
      // each selected row compared bitwise with the input's (no per-element reader: 10^7 elements)
      std::int64_t outer = 1, inner = 1;
      for (std::int64_t d = 0; d < static_cast<std::int64_t>(t.shape().size()); ++d)
        if (d != l.dim) (d < l.dim ? outer : inner) *= t.size(d);
      const auto row = static_cast<std::int64_t>(static_cast<std::size_t>(inner) * elem);
      const xf::tensor tc = t.contiguous();
      const auto* in = tc.impl()->data<unsigned char>();  // (offset 0: fresh buffers)
      const auto* out = r.impl()->data<unsigned char>();
      std::int64_t bad = 0;
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t j = 0; j < l.count; ++j)
          bad += std::memcmp(out + (o * l.count + j) * row, in + (o * n + iv[static_cast<std::size_t>(j)]) * row,
                             static_cast<std::size_t>(row)) != 0;
      CHECK(bad == 0);
    }
}

TEST_CASE("gather and scatter_add: every dim, strided and expanded operands, bitwise sums", "[backend][index]") {
  std::mt19937 g(11);
  auto random_index = [&](const xf::shape_t& shape, std::int64_t n) {
    xf::tensor idx = xf::zeros(shape, xf::i64);
    std::int64_t* p = idx.impl()->data<std::int64_t>();
    for (std::int64_t i = 0; i < idx.numel(); ++i) p[i] = std::uniform_int_distribution<std::int64_t>(0, n - 1)(g);
    return idx;
  };
  for (xf::dtype dt : all_dtypes) {
    INFO(dt);
    const xf::tensor base = random_of({263, 271}, dt);
    for (const xf::tensor& t : {base, base.t()}) {
      for (std::int64_t dim : {0, 1}) {
        INFO("dim " << dim << ", input " << t.shape());
        const std::int64_t n = t.size(dim);
        // smaller than the input in the other dim
        xf::shape_t ishape(2);  // (filled, not braced: GCC 12 -O1 warns about copying a braced shape_t)
        ishape[0] = t.size(0) - (dim == 0 ? 0 : 3);
        ishape[1] = t.size(1) - (dim == 0 ? 3 : 0);
        const xf::tensor idx = random_index(ishape, n);
        const xf::tensor r = same_at_every_thread_count([&] { return xf::gather(t, dim, idx); });
        check_elements(r, [&](std::int64_t i) {
          auto pos = unravel(i, ishape);
          pos[static_cast<std::size_t>(dim)] = static_cast<std::int64_t>(value_at(idx, i));
          return value_at(t, ravel(pos, t.shape()));
        });
      }
    }
  }
  // an expanded (stride 0) index, as index_select's batch rule makes
  const xf::tensor t = xf::randn({200, 500});
  const xf::tensor row_idx = random_index({1, 500}, 200).expand({150, 500});
  const xf::tensor ge = same_at_every_thread_count([&] { return xf::gather(t, 0, row_idx); });
  check_elements(ge, [&](std::int64_t i) {
    auto pos = unravel(i, {150, 500});
    const std::int64_t k = static_cast<std::int64_t>(value_at(row_idx, i));
    return value_at(t, ravel({k, pos[1]}, t.shape()));
  });
  // a negative index is refused wherever it falls in the chunks that gather checks before it
  // reads (NOTE: [Index kernels]): in the last chunk of a row, at a row's first position; along
  // a contiguous dim and a strided one
  {
    const xf::tensor src = xf::randn({3, 1000}, xf::f64);
    for (std::int64_t at : {1000 + 900, 2000}) {
      xf::tensor idx = random_index({3, 1000}, 1000);
      idx.impl()->data<std::int64_t>()[at] = -1;
      for (const xf::tensor& x : {src, src.t().contiguous().t()})
        CHECK_THROWS_WITH(xf::gather(x, 1, idx), "xf::gather: index -1 is out of range for dimension 1 of size 1000 "
                                                 "(indices count from 0; negative ones are refused, as in torch)");
    }
  }
  // the first bad index in row-major order is reported, at every thread count
  xf::tensor bad = xf::zeros({512, 512}, xf::i64);
  bad.impl()->data<std::int64_t>()[400 * 512 + 3] = 999;
  bad.impl()->data<std::int64_t>()[20 * 512 + 500] = -777;
  bad.impl()->data<std::int64_t>()[20 * 512 + 501] = 600;
  for (int threads : {1, 2, 3}) {
    xf::set_num_threads(threads);
    const std::string msg = " index -777 is out of range for dimension 1 of size 512 (indices count from 0; negative "
                            "ones are refused, as in torch)";
    CHECK_THROWS_WITH(xf::gather(xf::randn({512, 512}), 1, bad), "xf::gather:" + msg);
    CHECK_THROWS_WITH(xf::detail::call<xf::detail::scatter_add_op>({1}, xf::zeros({512, 512}), bad, xf::ones({512, 512})),
                      "xf::scatter_add:" + msg);
  }
  xf::set_num_threads(2);
  // extreme values (the range check must not wrap) and an empty dim (nothing to read instead)
  for (std::int64_t v : {INT64_MIN, INT64_MAX, std::int64_t(-513), std::int64_t(512)}) {
    xf::tensor e = xf::zeros({4, 37}, xf::i64);
    e.impl()->data<std::int64_t>()[2 * 37 + 35] = v;
    const std::string msg = std::string(" is out of range for dimension 1 of size 512") +
                            (v < 0 ? " (indices count from 0; negative ones are refused, as in torch)" : "");
    CHECK_THROWS_WITH(xf::gather(xf::randn({4, 512}), 1, e), "xf::gather: index " + std::to_string(v) + msg);
    CHECK_THROWS_WITH(xf::detail::call<xf::detail::scatter_add_op>({1}, xf::zeros({4, 512}), e, xf::ones({4, 37})),
                      "xf::scatter_add: index " + std::to_string(v) + msg);
  }
  CHECK_THROWS_WITH(xf::gather(xf::randn({4, 0}), 1, xf::zeros({4, 3}, xf::i64)),
                    "xf::gather: index 0 is out of range for dimension 1 of size 0");

  // scatter_add: sums in the order of the index, the same at every thread count; compared with
  // a serial loop that adds in row-major order
  for (xf::dtype dt : {xf::f32, xf::f64, xf::i64}) {
    for (std::int64_t dim : {0, 1}) {
      INFO(dt << ", dim " << dim);
      const xf::shape_t bshape{211, 307};
      const std::int64_t n = bshape[static_cast<std::size_t>(dim)];
      xf::shape_t ishape(2);
      ishape[0] = dim == 0 ? 600 : 205;
      ishape[1] = dim == 0 ? 300 : 600;
      const xf::tensor idx = random_index(ishape, n);
      const xf::tensor src = random_of(ishape, dt), b0 = random_of(bshape, dt);
      const xf::tensor r = same_at_every_thread_count(
          [&] { return xf::detail::call<xf::detail::scatter_add_op>({dim}, b0, idx, src); });
      std::vector<double> expect(static_cast<std::size_t>(b0.numel()));
      if (dt == xf::f32) {  // accumulate in the op's own precision
        std::vector<float> acc(expect.size());
        for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = static_cast<float>(value_at(b0, static_cast<std::int64_t>(i)));
        for (std::int64_t i = 0; i < idx.numel(); ++i) {
          auto pos = unravel(i, ishape);
          pos[static_cast<std::size_t>(dim)] = static_cast<std::int64_t>(value_at(idx, i));
          acc[static_cast<std::size_t>(ravel(pos, bshape))] += static_cast<float>(value_at(src, i));
        }
        for (std::size_t i = 0; i < acc.size(); ++i) expect[i] = acc[i];
      } else {
        for (std::size_t i = 0; i < expect.size(); ++i) expect[i] = value_at(b0, static_cast<std::int64_t>(i));
        for (std::int64_t i = 0; i < idx.numel(); ++i) {
          auto pos = unravel(i, ishape);
          pos[static_cast<std::size_t>(dim)] = static_cast<std::int64_t>(value_at(idx, i));
          expect[static_cast<std::size_t>(ravel(pos, bshape))] += value_at(src, i);
        }
      }
      check_elements(r, [&](std::int64_t i) { return expect[static_cast<std::size_t>(i)]; });
    }
  }
  // index_add through the gradient of index_select (an expanded index), and of gather
  const xf::tensor w = xf::randn({1500, 64});
  const xf::tensor rows = random_index({2500}, 1500);
  const xf::tensor gw = same_at_every_thread_count(
      [&] { return xf::grad([&](const xf::tensor& x) { return xf::sum(xf::index_select(x, 0, rows) * 2.0); })(w); });
  std::vector<double> counts(1500);
  for (std::int64_t i = 0; i < 2500; ++i) {
    std::int64_t k = static_cast<std::int64_t>(value_at(rows, i));
    counts[static_cast<std::size_t>(k < 0 ? k + 1500 : k)] += 2.0;
  }
  check_elements(gw, [&](std::int64_t i) { return counts[static_cast<std::size_t>(i / 64)]; });
}

TEST_CASE("matmul through BLAS: transposed operands, bmm and vmap, the same at every thread count",
          "[backend][linalg]") {
  const xf::tensor a = xf::randn({300, 257}), b = xf::randn({257, 301});
  const xf::tensor ref = xf::mm(a.contiguous(), b.contiguous());
  const xf::tensor r1 = same_at_every_thread_count([&] { return xf::mm(a.t().contiguous().t(), b); });
  CHECK(xf::allclose(r1, ref, 1e-4, 1e-4));
  const xf::tensor r2 = same_at_every_thread_count([&] { return xf::mm(a, b.t().contiguous().t()); });
  CHECK(xf::allclose(r2, ref, 1e-4, 1e-4));
  const xf::tensor x = xf::randn({24, 128, 96}), y = xf::randn({24, 96, 130});
  const xf::tensor bm = same_at_every_thread_count([&] { return xf::bmm(x, y); });
  const xf::tensor vm = same_at_every_thread_count(
      [&] { return xf::vmap([](const xf::tensor& p, const xf::tensor& q) { return xf::matmul(p, q); })(x, y); });
  CHECK(bitwise_equal(bm, vm));
  for (std::int64_t p = 0; p < 24; p += 7) CHECK(xf::allclose(bm.select(0, p), xf::mm(x.select(0, p), y.select(0, p)), 1e-4, 1e-4));
  const xf::tensor bt = same_at_every_thread_count([&] { return xf::bmm(x.transpose(1, 2).contiguous().transpose(1, 2), y); });
  CHECK(xf::allclose(bt, bm, 1e-4, 1e-4));
}

TEST_CASE("large products cut into about one band of rows per thread, or short ones into fixed bands of columns, "
          "give the same bits at every thread count",
          "[backend][linalg]") {
  // NOTE: [Batched GEMM threads]: one thread makes one GEMM call for a tall result; more cut its
  // rows at multiples of 24 (never its columns); a short result is cut into bands of columns
  // that depend on its shape alone
  using xf::detail::backend::make_gemm_bands;
  const auto g1 = make_gemm_bands(1, 520, 1060, 1000, 1), g2 = make_gemm_bands(1, 520, 1060, 1000, 2);
  const auto g3 = make_gemm_bands(1, 520, 1060, 1000, 3);
  CHECK((g1.bands == 1 && !g1.columns));
  CHECK((g2.bands == 2 && !g2.columns && g2.start(1) == 264 && g2.start(2) == 520));
  CHECK((g3.bands == 3 && g3.start(1) == 192 && g3.start(2) == 360 && g3.start(3) == 520));
  CHECK(make_gemm_bands(4, 520, 1060, 1000, 3).bands == 1);  // the batch gives the threads work
  CHECK(make_gemm_bands(1, 520, 1060, 4, 8).bands == 1);     // too little work to cut
  CHECK(make_gemm_bands(1, 200, 2000, 1000, 16).bands == 4);  // no band below 48 rows
  const auto wg = make_gemm_bands(1, 128, 784, 8192, 2);      // a weight gradient's shape
  CHECK((wg.bands == 2 && wg.start(1) == 72));
  // too short for two bands of rows: bands of at least 1024 columns, the same at every thread count
  for (int threads : {1, 2, 16}) {
    const auto layer = make_gemm_bands(1, 32, 4096, 4096, threads);
    CHECK((layer.columns && layer.bands == 4 && layer.start(1) == 1024 && layer.start(4) == 4096));
    const auto odd = make_gemm_bands(1, 40, 2100, 1000, threads);
    CHECK((odd.columns && odd.bands == 2 && odd.start(1) == 1088 && odd.start(2) == 2100));
    const auto halves = make_gemm_bands(1, 95, 2047, 1000, threads);  // too narrow for two of 1024
    CHECK((halves.columns && halves.bands == 2 && halves.start(1) == 1024));
    CHECK(make_gemm_bands(1, 95, 1023, 1000, threads).bands == 1);  // too narrow for halves
    CHECK(make_gemm_bands(1, 2, 8192, 100, threads).bands == 1);    // too little work
    CHECK(!make_gemm_bands(1, 96, 4096, 4096, threads).columns);    // two bands of 48 rows
  }
  // rows cut at 2 and 3 threads; a weight gradient's shape; short results, narrow and wide
  const std::int64_t shapes[6][2] = {{520, 1060}, {520, 400}, {128, 784}, {40, 1060}, {13, 900}, {40, 2100}};
  for (xf::dtype dt : {xf::f32, xf::f64})
    for (const auto& nm : shapes) {
      INFO(dt << ", [" << nm[0] << ", 1000] x [1000, " << nm[1] << "]");
      const xf::tensor a = xf::randn({nm[0], 1000}, dt), b = xf::randn({1000, nm[1]}, dt);
      const xf::tensor ref = xf::mm(a, b);
      for (std::int64_t i : {std::int64_t(0), nm[0] / 2, nm[0] - 1})  // rows by another kernel
        CHECK(xf::allclose(ref.select(0, i), xf::sum(a.select(0, i).unsqueeze(1) * b, {0}), 1e-3, 1e-3));
      const xf::tensor at = a.t().contiguous().t(), bt = b.t().contiguous().t();
      for (int form = 0; form < 4; ++form) {
        INFO("transposed operands: " << form);
        const xf::tensor r = same_at_every_thread_count([&] { return xf::mm(form & 1 ? at : a, form & 2 ? bt : b); });
        CHECK(xf::allclose(r, ref, 1e-3, 1e-3));
      }
    }
  const xf::tensor x = xf::randn({2, 300, 800}), y = xf::randn({2, 800, 600});
  const xf::tensor bm = same_at_every_thread_count([&] { return xf::bmm(x, y); });
  CHECK(xf::allclose(bm.select(0, 1), xf::mm(x.select(0, 1), y.select(0, 1)), 1e-3, 1e-3));
  // a batch of short products split by batch item; one of short wide products cut into columns
  const xf::tensor xs = xf::randn({3, 20, 500}), ys = xf::randn({3, 500, 900});
  const xf::tensor bs = same_at_every_thread_count([&] { return xf::bmm(xs, ys); });
  for (std::int64_t p = 0; p < 3; ++p)
    CHECK(xf::allclose(bs.select(0, p).select(0, 7), xf::sum(xs.select(0, p).select(0, 7).unsqueeze(1) * ys.select(0, p), {0}),
                       1e-3, 1e-3));
  const xf::tensor xw = xf::randn({2, 40, 300}), yw = xf::randn({2, 2100, 300}).transpose(1, 2);
  const xf::tensor bw = same_at_every_thread_count([&] { return xf::bmm(xw, yw); });
  for (std::int64_t p = 0; p < 2; ++p)
    CHECK(xf::allclose(bw.select(0, p), xf::mm(xw.select(0, p), yw.select(0, p).contiguous()), 1e-3, 1e-3));
}

TEST_CASE("matmul with k == 1 (outer products): streaming stores, strided operands, every thread count",
          "[backend][linalg]") {
  // NOTE: [Outer products]: c[p, i, j] = a[p, i] * b[p, j], one rounding as in the GEMM; results of
  // 16 MiB and more take streaming stores (the first of each pair of cases below, the second
  // ordinary ones), rows of 1001 floats start off a register boundary
  auto check = [](const xf::tensor& a, const xf::tensor& b, const xf::tensor& got) {
    const std::int64_t P = got.size(0), n = got.size(1), m = got.size(2);
    xf::detail::visit_dtype(got.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {  // (the cases are floating)
        std::int64_t bad = 0;
        for (std::int64_t p = 0; p < P; ++p)
          for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < m; ++j) {
              const T e = static_cast<T>(value_at(a, (p * n + i))) * static_cast<T>(value_at(b, p * m + j));
              bad += static_cast<T>(value_at(got, (p * n + i) * m + j)) != e;
            }
        CHECK(bad == 0);
      }
    });
  };
  struct outer_case {
    std::int64_t P, n, m;
    xf::dtype dt;
  };
  static_assert(xf::detail::backend::outer_stream_min_bytes == std::size_t(16) << 20, "resize the cases below");
  for (const outer_case& c : {outer_case{44, 100, 1001, xf::f32}, outer_case{12, 100, 1001, xf::f32},
                              outer_case{16, 65, 2050, xf::f64}, outer_case{8, 65, 2050, xf::f64},
                              outer_case{1, 1100, 4000, xf::f32}, outer_case{3, 5, 7, xf::f32}}) {
    INFO(c.P << " x " << c.n << " x " << c.m << ", " << c.dt);
    const xf::tensor a = xf::randn({c.P, c.n, 1}, c.dt), b = xf::randn({c.P, 1, c.m}, c.dt);
    const xf::tensor plain = same_at_every_thread_count([&] { return xf::bmm(a, b); });
    check(a, b, plain);
    // strided operands: a every third element of a wider tensor, b every second (read by BLAS's
    // layout rules as a transposed row with a leading dimension of 2)
    xf::tensor a3 = xf::zeros({c.P, c.n, 3}, c.dt), b2 = xf::zeros({c.P, c.m, 2}, c.dt);
    a3.narrow(2, 0, 1).copy_(a);
    b2.select(2, 1).copy_(b.squeeze(1));
    const xf::tensor sa = a3.narrow(2, 0, 1), sb = b2.select(2, 1).unsqueeze(1);
    const xf::tensor strided = same_at_every_thread_count([&] { return xf::bmm(sa, sb); });
    CHECK(bitwise_equal(strided, plain));
    // under vmap (per-example weight gradients) and without a batch dim
    const xf::tensor vm = same_at_every_thread_count(
        [&] { return xf::vmap([](const xf::tensor& u, const xf::tensor& v) { return xf::matmul(u, v); })(a, b); });
    CHECK(bitwise_equal(vm, plain));
    CHECK(bitwise_equal(xf::mm(a.select(0, c.P - 1), b.select(0, c.P - 1)), plain.select(0, c.P - 1).contiguous()));
  }
}
