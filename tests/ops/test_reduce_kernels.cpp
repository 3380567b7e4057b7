// The reduction engine (NOTE: [Reduction engine]) on every path: reduced elements contiguous
// (rows, a whole tensor) or strided (columns, middle dims, several groups), permuted and
// broadcast inputs, empty and one-element tensors, every dtype; results bitwise identical for
// 1, 2 and 3 threads; float32 sums accurate to a few units of rounding.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include <catch2/catch.hpp>

#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

namespace {
/// Deterministic values in [-1, 1) of `shape` and dtype dt.
xf::tensor values(const xf::shape_t& shape, xf::dtype dt = xf::f32, std::uint32_t seed = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  xf::tensor t = xf::zeros(shape, xf::f64);
  double* p = t.impl()->data<double>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = u(gen);
  return t.to(dt);
}

/// sum / amax / amin / prod / norm over `dims` by plain loops in double, for comparison.
xf::tensor reference(const xf::tensor& x, const std::vector<std::int64_t>& dims, const std::string& op) {
  xf::tensor xd = x.to(xf::f64).contiguous();
  // move reduced dims last and view as [kept, reduced]
  std::vector<std::int64_t> perm, kept_shape;
  std::int64_t r = 1;
  for (std::int64_t i = 0; i < x.dim(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) {
      perm.push_back(i);
      kept_shape.push_back(x.size(i));
    }
  for (auto d : dims) {
    perm.push_back(d);
    r *= x.size(d);
  }
  xf::tensor m = xd.permute(perm).contiguous().reshape({-1, r});
  const std::int64_t k = m.size(0);
  xf::tensor out = xf::zeros({k}, xf::f64);
  const double* p = m.impl()->data<double>();
  double* o = out.impl()->data<double>();
  for (std::int64_t i = 0; i < k; ++i) {
    double acc = op == "prod" ? 1.0 : op == "amax" ? -INFINITY : op == "amin" ? INFINITY : 0.0;
    for (std::int64_t j = 0; j < r; ++j) {
      const double v = p[i * r + j];
      if (op == "sum") acc += v;
      else if (op == "prod") acc *= v;
      else if (op == "amax") acc = std::max(acc, v);
      else if (op == "amin") acc = std::min(acc, v);
      else acc += v * v;
    }
    o[i] = op == "norm" ? std::sqrt(acc) : acc;
  }
  return out.reshape(xf::shape_t(kept_shape));
}

xf::tensor run(const xf::tensor& x, const std::vector<std::int64_t>& dims, const std::string& op) {
  if (op == "sum") return xf::sum(x, dims);
  if (op == "amax") return xf::amax(x, dims);
  if (op == "amin") return xf::amin(x, dims);
  return xf::norm(x);  // every dim
}

struct thread_count_guard {
  int saved = xf::get_num_threads();
  ~thread_count_guard() { xf::set_num_threads(saved); }
};
}  // namespace

TEST_CASE("reduction kernels: every layout against plain loops, bitwise equal for 1, 2 and 3 threads",
          "[ops][reduction][threads]") {
  thread_count_guard guard;
  struct reduction_case {
    xf::shape_t shape;
    std::vector<std::int64_t> dims;
  };
  // shapes above the parallel threshold (2^16 element-operations) and odd sizes
  const std::vector<reduction_case> cases = {
      {{1000, 333}, {1}},          // rows (contiguous runs)
      {{1000, 333}, {0}},          // columns
      {{97, 1000, 5}, {1}},        // a middle dim
      {{7, 9000}, {0, 1}},         // everything
      {{300001}, {0}},             // one long run: chunks in parallel
      {{33, 40, 50}, {0, 2}},      // two groups of reduced dims
      {{3, 50000}, {1}},           // few long rows
      {{50000, 3}, {0}},           // many rows, few columns
      {{6, 7, 8, 9}, {1, 3}},
      {{203, 9001}, {0}},          // columns wider than a stripe (NOTE: [Row streaming]), a scalar tail
      {{19, 4100}, {0}},           // groups of 8 rows and 3 left over
  };
  for (const auto& c : cases) {
    for (const std::string op : {"sum", "amax", "amin", "norm"}) {
      std::vector<std::int64_t> dims = c.dims;
      if (op == "norm") {  // xf::norm reduces every dim
        dims.clear();
        for (std::int64_t d = 0; d < static_cast<std::int64_t>(c.shape.size()); ++d) dims.push_back(d);
      }
      INFO(op << " over " << dims.size() << " dims of " << c.shape);
      const xf::tensor x = values(c.shape);
      const xf::tensor expect = reference(x, dims, op);
      xf::set_num_threads(1);
      const xf::tensor one = run(x, dims, op);
      CHECK(xf::allclose(one.to(xf::f64).reshape(expect.shape()), expect, 2e-5, 2e-4));
      for (int n : {2, 3}) {
        xf::set_num_threads(n);
        CHECK(xf::equal(run(x, dims, op), one));
      }
    }
  }
}

TEST_CASE("reduction kernels: permuted, transposed, broadcast and sliced inputs", "[ops][reduction]") {
  const xf::tensor base = values({40, 60, 30}, xf::f64);
  const std::vector<xf::tensor> inputs = {
      base.permute({2, 0, 1}),                       // a permuted dense layout (no copy)
      base.transpose(0, 2),
      base.narrow(1, 5, 40),                          // gapped strides (copied first)
      base.select(2, 3).unsqueeze(2).expand({40, 60, 7}),  // broadcast
      xf::flip(base, {1}),
  };
  for (const auto& x : inputs) {
    for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}}) {
      INFO("shape " << x.shape() << ", " << dims.size() << " dims");
      const xf::tensor expect = reference(x, dims, "sum");
      CHECK(xf::allclose(xf::sum(x, dims), expect, 1e-12, 1e-11));
      CHECK(xf::allclose(xf::amax(x, dims), reference(x, dims, "amax")));
      // keepdim keeps every reduced dim as 1, in the logical order
      const xf::tensor k = xf::sum(x, dims, true);
      for (auto d : dims) CHECK(k.size(d) == 1);
      CHECK(xf::allclose(k.reshape(expect.shape()), expect, 1e-12, 1e-11));
    }
  }
}

TEST_CASE("reduction kernels: kept dims in another order than the input's memory", "[ops][reduction]") {
  // the accumulators come out in memory order and are placed in logical order by a tiled copy
  // (register blocks and edges: 70 and 130 are not multiples of a block), finished and converted
  const xf::tensor base = values({3, 130, 70}, xf::f64);
  const xf::tensor x = base.permute({0, 2, 1});  // logical [3, 70, 130], memory [3, 130, 70]
  for (xf::dtype dt : {xf::f32, xf::f64, xf::i64, xf::b8}) {
    INFO("dtype " << dt);
    const xf::tensor xt = (dt == xf::b8 ? base > 0.5 : (base * 100.0).to(dt)).permute({0, 2, 1});
    const xf::tensor expect = reference(xt.to(xf::f64), {0}, "sum");
    const xf::tensor got = xf::sum(xt, {0});
    CHECK(got.shape() == xf::shape_t{70, 130});
    CHECK(got.is_contiguous());
    CHECK(xf::allclose(got.to(xf::f64), expect, 1e-6, 1e-4));
    const xf::tensor kept = xf::sum(xt, {0}, true);
    CHECK(kept.shape() == xf::shape_t{1, 70, 130});
    CHECK(xf::equal(kept.reshape({70, 130}), got));
  }
  CHECK(xf::allclose(xf::amax(x, {0}), reference(x, {0}, "amax")));
  CHECK(xf::allclose(xf::mean(x, {0}), reference(x, {0}, "sum") / 3.0, 1e-12, 1e-12));
  CHECK(xf::allclose(xf::sum(x.permute({2, 1, 0}), {1}), reference(x.permute({2, 1, 0}), {1}, "sum"), 1e-12, 1e-11));
}

TEST_CASE("reduction kernels: dtypes, empty and one-element tensors, NaN", "[ops][reduction]") {
  const xf::tensor i = xf::arange(0.0, 120000.0, 1.0, xf::i64).reshape({300, 400});
  CHECK(xf::sum(i).item<std::int64_t>() == 119999LL * 120000LL / 2);
  CHECK(xf::sum(i, {0}).dtype() == xf::i64);
  CHECK(xf::amax(i, {1}).select(0, 299).item<std::int64_t>() == 119999);
  CHECK(xf::sum(xf::ones({70000}, xf::b8)).item<std::int64_t>() == 70000);
  // the extremes of booleans are booleans (any, all), as in torch; their sums count (int64)
  const xf::tensor mask = xf::tensor{{true, false, false}, {false, false, false}};
  CHECK(xf::amax(mask, {1}).dtype() == xf::b8);
  CHECK(xf::equal(xf::amax(mask, {1}), xf::tensor{true, false}));
  CHECK(xf::equal(xf::amin(xf::logical_not(mask), {1}), xf::tensor{false, true}));
  CHECK(xf::equal(xf::amax(mask.t(), {0}, true), xf::tensor{{true, false}}));
  CHECK(xf::amax(xf::empty({2, 3}, xf::b8, xf::meta), {1}).dtype() == xf::b8);
  CHECK(xf::prod(xf::full({5, 3}, 2.0, xf::f32), 0).select(0, 1).item<float>() == 32.0f);
  // empty: sums are zero, products one
  CHECK(xf::equal(xf::sum(xf::zeros({3, 0}), {1}), xf::zeros({3})));
  CHECK(xf::equal(xf::sum(xf::zeros({0, 4}), {0}), xf::zeros({4})));
  CHECK(xf::equal(xf::prod(xf::zeros({2, 0}), 1), xf::ones({2})));
  CHECK(xf::sum(xf::zeros({0})).item<float>() == 0.0f);
  // one element, and dims of extent 1 only
  CHECK(xf::sum(xf::full({1, 1}, 3.5)).item<float>() == 3.5f);
  CHECK(xf::equal(xf::amax(xf::full({1, 4}, 2.0), {0}), xf::full({4}, 2.0)));
  // NaN propagates through amax / amin, wherever it is (every lane and chunk)
  for (std::int64_t at : {0LL, 5LL, 4095LL, 4096LL, 70000LL}) {
    xf::tensor x = values({70001});
    x.narrow(0, at, 1).fill_(NAN);
    CHECK(std::isnan(xf::amax(x, {0}).item<float>()));
    CHECK(std::isnan(xf::amin(x, {0}).item<float>()));
  }
  // infinities (they send a chunk to the exact fold: NOTE: [Unchecked folds]) and NaN in rows
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    for (std::int64_t at : {0LL, 77LL, 2047LL}) {
      xf::tensor rows = values({6, 2048}, dt);
      rows.select(0, 1).narrow(0, at, 1).fill_(INFINITY);
      rows.select(0, 2).narrow(0, at, 1).fill_(-INFINITY);
      rows.select(0, 3).narrow(0, at, 1).fill_(NAN);
      rows.select(0, 4).narrow(0, at, 1).fill_(INFINITY);
      rows.select(0, 4).narrow(0, 2047 - at, 1).fill_(NAN);
      const xf::tensor mx = xf::amax(rows, {1}), mn = xf::amin(rows, {1});
      const xf::tensor ref_mx = reference(rows.narrow(0, 0, 3), {1}, "amax");
      CHECK(mx.select(0, 1).item<double>() == INFINITY);
      CHECK(mn.select(0, 2).item<double>() == -INFINITY);
      CHECK(mx.select(0, 2).item<double>() == ref_mx.select(0, 2).item<double>());  // -inf does not win
      CHECK(std::isnan(mx.select(0, 3).item<double>()));
      CHECK(std::isnan(mn.select(0, 3).item<double>()));
      CHECK(std::isnan(mx.select(0, 4).item<double>()));
      CHECK(mx.select(0, 0).item<double>() == ref_mx.select(0, 0).item<double>());
    }
  }
  xf::tensor col = values({5000, 3}, xf::f64);
  col.select(0, 4321).select(0, 1).fill_(NAN);
  const xf::tensor m = xf::amax(col, {0});
  CHECK(std::isnan(m.select(0, 1).item<double>()));
  CHECK_FALSE(std::isnan(m.select(0, 0).item<double>()));
}

TEST_CASE("reduction kernels: float32 sums are accurate (blocked, pairwise)", "[ops][reduction][accuracy]") {
  // 2^24 values of 0.1: a sequential float32 sum stops growing at 2^21 or so; blocked pairwise
  // summation keeps a few units of rounding
  const std::int64_t n = 1 << 24;
  const xf::tensor x = xf::full({n}, 0.1, xf::f32);
  const double exact = 0.1f * static_cast<double>(n);
  CHECK(std::abs(xf::sum(x).item<float>() - exact) / exact < 1e-6);
  const xf::tensor cols = xf::full({n / 16, 16}, 0.1, xf::f32);
  // columns: blocks of max(64, 4096 / columns) rows summed in order, the blocks pairwise
  CHECK(std::abs(xf::sum(cols, {0}).select(0, 7).item<float>() - exact / 16) / (exact / 16) < 2e-5);
}

namespace {
/// combine_lanes (the lanes of a register joined inside it, by swizzles) against
/// combine_pairwise over the stored lanes, bit for bit, on `lanes` values.
template <class M, class T>
bool lane_tree_matches(const std::vector<T>& lanes) {
  namespace be = xf::detail::backend;
  using V = be::simd<T>;
  std::vector<T> parts(lanes);
  be::combine_pairwise<M>(parts.data(), static_cast<std::int64_t>(parts.size()));
  const T got = be::combine_lanes<M>(V::load_unaligned(lanes.data())).get(0);
  return std::memcmp(&got, &parts[0], sizeof(T)) == 0;
}

template <class T>
void check_lane_tree() {
  namespace be = xf::detail::backend;
  constexpr std::size_t W = be::simd<T>::size;
  std::mt19937 gen(7);
  // magnitudes spread over many binades, so that another tree would round differently
  std::uniform_real_distribution<double> u(-1.0, 1.0), e(-20.0, 20.0);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<T> lanes(W);
    for (auto& v : lanes) v = static_cast<T>(u(gen) * std::exp2(e(gen)));
    CHECK(lane_tree_matches<be::sum_math>(lanes));
    CHECK(lane_tree_matches<be::prod_math>(lanes));
    CHECK(lane_tree_matches<be::norm_math>(lanes));
    CHECK(lane_tree_matches<be::extreme_math<true>>(lanes));
    CHECK(lane_tree_matches<be::extreme_math<false>>(lanes));
  }
  // a NaN, or an infinity, in each lane: the same lane wins as in the scalar tree
  for (T special : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity()})
    for (std::size_t at = 0; at < W; ++at) {
      std::vector<T> lanes(W, T(0.5));
      lanes[at] = special;
      CHECK(lane_tree_matches<be::sum_math>(lanes));
      CHECK(lane_tree_matches<be::extreme_math<true>>(lanes));
      CHECK(lane_tree_matches<be::extreme_math<false>>(lanes));
    }
}
}  // namespace

TEST_CASE("reduction kernels: a register's lanes are joined in the documented pairwise tree", "[ops][reduction]") {
  // the in-register tree (NOTE: [Reduction engine]) must give the scalar tree's bits, or results
  // would depend on which of the two a row's length sends it to
  check_lane_tree<float>();
  check_lane_tree<double>();
  // rows whose tails take the scalar lanes first, and rows without a tail, agree with the
  // double-precision loops
  for (std::int64_t n : {1, 3, 15, 16, 17, 63, 64, 65, 2047, 2048, 4097}) {
    INFO("rows of " << n);
    const xf::tensor x = values({5, n});
    CHECK(xf::allclose(xf::sum(x, {1}).to(xf::f64), reference(x, {1}, "sum"), 1e-5, 1e-5));
    CHECK(xf::equal(xf::amax(x, {1}).to(xf::f64), reference(x, {1}, "amax")));
    CHECK(xf::equal(xf::amin(x, {1}).to(xf::f64), reference(x, {1}, "amin")));
  }
}

TEST_CASE("reduction kernels: an outer dim is folded row by row in blocks, the blocks pairwise", "[ops][reduction]") {
  // NOTE: [Reduction engine], NOTE: [Row streaming]: each column of a block of max(64, 4096 / B)
  // rows is folded in row order from the identity, and the blocks' partials are joined in
  // combine_pairwise's tree; the result must have exactly those bits (stripes, groups of rows and
  // the scalar tail columns change how the rows are read, not the order of the additions)
  thread_count_guard guard;
  for (const xf::shape_t& shape : {xf::shape_t{203, 9001}, xf::shape_t{300, 20}, xf::shape_t{70, 8200}}) {
    INFO(shape);
    const std::int64_t R = shape[0], B = shape[1], rows = std::max<std::int64_t>(64, 4096 / B);
    const xf::tensor x = values(shape, xf::f32, 3) * 1000.0;
    const float* p = x.impl()->data<float>();
    std::vector<float> expect(static_cast<std::size_t>(B)), parts;
    for (std::int64_t j = 0; j < B; ++j) {
      parts.clear();
      for (std::int64_t r0 = 0; r0 < R; r0 += rows) {
        float acc = 0.0f;
        for (std::int64_t r = r0; r < std::min(R, r0 + rows); ++r) acc += p[r * B + j];
        parts.push_back(acc);
      }
      xf::detail::backend::combine_pairwise<xf::detail::backend::sum_math>(parts.data(),
                                                                            static_cast<std::int64_t>(parts.size()));
      expect[static_cast<std::size_t>(j)] = parts[0];
    }
    for (int n : {1, 2}) {
      xf::set_num_threads(n);
      const xf::tensor got = xf::sum(x, {0});
      CHECK(std::memcmp(got.impl()->data<float>(), expect.data(), expect.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("special values as torch 1.13 gives them", "[ops][reduction][nan]") {
  const double inf = INFINITY;
  auto isnan_all = [](const xf::tensor& t) { return xf::equal(xf::ne(t, t), xf::ones(t.shape(), xf::b8)); };
  // a row of -inf: softmax and log_softmax are NaN, logsumexp is -inf
  const xf::tensor row = xf::full({1, 3}, -inf, xf::f64);
  CHECK(isnan_all(xf::softmax(row, 1)));
  CHECK(isnan_all(xf::log_softmax(row, 1)));
  CHECK(xf::logsumexp(row, {1}).item<double>() == -inf);
  // +inf in a row: logsumexp is +inf, softmax [0, nan]
  const xf::tensor with_inf = xf::tensor{1.0, inf};
  CHECK(xf::logsumexp(with_inf, {0}).item<double>() == inf);
  const xf::tensor s = xf::softmax(with_inf, 0);
  CHECK(s.select(0, 0).item<double>() == 0.0);
  CHECK(std::isnan(s.select(0, 1).item<double>()));
  // the same along a dim with elements after it (columns: the kernels' B > 1 path)
  CHECK(isnan_all(xf::softmax(xf::full({3, 2}, -inf, xf::f64), 0)));
  const xf::tensor cols = xf::stack({with_inf, with_inf}, 1);  // [2, 2], each column [1, inf]
  const xf::tensor sc = xf::softmax(cols, 0);
  for (std::int64_t j = 0; j < 2; ++j) {
    CHECK(sc.select(1, j).select(0, 0).item<double>() == 0.0);
    CHECK(std::isnan(sc.select(1, j).select(0, 1).item<double>()));
  }
  // the mean of nothing, the unbiased variance of one value: NaN
  CHECK(std::isnan(xf::mean(xf::zeros({0})).item<float>()));
  CHECK(std::isnan(xf::var(xf::tensor{1.0}, {0}).item<double>()));
  // the gradient of sqrt at 0 is +inf
  CHECK(xf::grad([](const xf::tensor& x) { return xf::sum(xf::sqrt(x)); })(xf::zeros({1}, xf::f64)).item<double>() == inf);
  // integer division is true division: 1 / 0 = inf, 0 / 0 = nan, -1 / 0 = -inf
  const xf::tensor q = xf::tensor{1, 0, -1} / xf::tensor{0, 0, 0};
  CHECK(q.dtype() == xf::f32);
  CHECK(q.select(0, 0).item<float>() == INFINITY);
  CHECK(std::isnan(q.select(0, 1).item<float>()));
  CHECK(q.select(0, 2).item<float>() == -INFINITY);
  // NaN prints as "nan", whatever its sign bit
  std::ostringstream os;
  os << xf::softmax(row, 1);
  CHECK(os.str().find("[[nan, nan, nan]]") != std::string::npos);
  CHECK(os.str().find("-nan") == std::string::npos);
}

// Found by the fuzzer (tests/fuzz): an extreme over a non-empty dim of a tensor with an empty
// other dim is an empty result, as in torch 1.13 (torch.zeros(0, 2, 3).amin(-1) has shape
// [0, 2]); only reducing over an empty dim is an error.
TEST_CASE("amax, amin, argmax of an empty tensor over a non-empty dim", "[ops][reduction][empty]") {
  const xf::tensor x = xf::zeros({0, 2, 3}, xf::f64);
  CHECK(xf::amin(x, {-1}).shape() == xf::shape_t{0, 2});
  CHECK(xf::amax(x, {2}, true).shape() == xf::shape_t{0, 2, 1});
  CHECK(xf::argmax(x, -1).shape() == xf::shape_t{0, 2});
  CHECK(xf::grad([](const xf::tensor& t) { return xf::sum(xf::amax(t, {2})); })(x).shape() == x.shape());
  CHECK_THROWS_WITH(xf::amax(x, {0}), Catch::Contains("xf::amax: cannot reduce over dim 0") && Catch::Contains("no elements"));
  CHECK_THROWS_WITH(xf::amin(x, {}), Catch::Contains("no elements"));
  CHECK_THROWS_WITH(xf::argmax(xf::zeros({3, 0}), 1), Catch::Contains("xf::argmax: cannot reduce over dim 1"));
}

// Found by the fuzzer: logsumexp over a non-empty dim of a tensor whose kept dim is empty divided
// by zero (SIGFPE) in the column kernel.
TEST_CASE("logsumexp, softmax, log_softmax with an empty kept dim", "[ops][reduction][empty]") {
  CHECK(xf::logsumexp(xf::zeros({3, 0}, xf::f64), {0}).shape() == xf::shape_t{0});
  CHECK(xf::logsumexp(xf::zeros({2, 3, 0}), {1}, true).shape() == xf::shape_t{2, 1, 0});
  CHECK(xf::softmax(xf::zeros({3, 0}, xf::f64), 0).shape() == xf::shape_t{3, 0});
  CHECK(xf::log_softmax(xf::zeros({0, 4}), 1).shape() == xf::shape_t{0, 4});
  // and over an empty dim: log(0) = -inf, as torch gives
  const xf::tensor lse = xf::logsumexp(xf::zeros({0, 2}, xf::f64), {0});
  CHECK(lse.shape() == xf::shape_t{2});
  CHECK(std::isinf(lse.select(0, 1).item<double>()));
  CHECK(lse.select(0, 1).item<double>() < 0);
}

// Found by the fuzzer: the derivatives of prod used an [n, n] intermediate per row, so the
// gradient of a prod over 60000 elements asked for 28 GB (NOTE: [Products of the others]).
TEST_CASE("prod's derivatives over long rows: exact with zeros, linear memory", "[ops][reduction][prod]") {
  for (std::int64_t n : {33, 100, 1025}) {
    xf::manual_seed(static_cast<std::uint64_t>(n));
    xf::tensor x = 0.9 + 0.2 * xf::rand({2, n}, xf::f64);
    x.select(0, 1).select(0, 3).fill_(0.0);  // one zero in row 1
    const xf::tensor g = xf::grad([](const xf::tensor& v) { return xf::sum(xf::prod(v, 1)); })(x);
    CHECK(xf::allclose(g.select(0, 0), xf::prod(x.select(0, 0), 0) / x.select(0, 0), 1e-10, 1e-14));
    xf::tensor ones_at_zero = x.select(0, 1).clone();
    ones_at_zero.select(0, 3).fill_(1.0);
    CHECK(g.select(0, 1).select(0, 3).item<double>() == Approx(xf::prod(ones_at_zero, 0).item<double>()).epsilon(1e-12));
    CHECK(g.select(0, 1).select(0, 4).item<double>() == 0.0);
    if (n <= 100) CHECK(xf::testing::gradgradcheck([](const xf::tensor& v) { return xf::prod(v, 1); }, x));
  }
  const xf::tensor big = xf::tanh(xf::rand({60000}, xf::f64));
  CHECK(xf::grad([](const xf::tensor& v) { return xf::prod(v, 0); })(big).shape() == xf::shape_t{60000});
  // every further derivative costs O(n log n) too (found by the fuzzer: a third derivative over
  // 46 elements per row asked for 18 GB when each level multiplied the intermediate by n);
  // the third derivative checked against finite differences of the second
  xf::manual_seed(46);
  const xf::tensor x = 0.9 + 0.2 * xf::rand({3, 46}, xf::f64);
  auto second_along = [](const xf::tensor& w) {  // the derivative of <grad(sum prod), w>
    return [w](const xf::tensor& v) {
      auto first = xf::grad([](const xf::tensor& u) { return xf::sum(xf::prod(u, 1)); });
      return xf::grad([&](const xf::tensor& u) { return xf::sum(first(u) * w); })(v);
    };
  };
  CHECK(xf::testing::gradcheck(second_along(xf::cos(xf::arange(0.0, 138.0, 1.0, xf::f64)).reshape({3, 46})), x));
  const xf::tensor w = xf::cos(xf::arange(0.0, 2000.0, 1.0, xf::f64)).reshape({1, 2000});
  const xf::tensor x4 = 0.9 + 0.2 * xf::rand({1, 2000}, xf::f64);
  const auto second = second_along(w);
  CHECK(xf::grad([&](const xf::tensor& v) { return xf::sum(second(v) * w); })(x4).shape() == xf::shape_t{1, 2000});
}
