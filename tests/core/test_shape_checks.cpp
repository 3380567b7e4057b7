// Shape arithmetic never overflows silently (NOTE: [Checked shape arithmetic] in core/shape.hpp):
// a negative extent, or an element count, byte size or contiguous strides that do not fit in
// int64_t, throw xf::error ("shape") naming the call and the shape; allocation failure throws
// ("out of memory") naming the bytes and the device. Huge shapes that do fit work, on meta
// tensors (no data) and as views. Also run under ASan+UBSan (see docs/errors.md).
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Contains;

#if XFUNC_DETAIL_ASAN
// A failed huge allocation must come back as a null pointer (what the C allocator does) rather
// than stop the process, so that the "out of memory" path is tested under ASan too.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace {
constexpr std::int64_t k40 = std::int64_t{1} << 40;
constexpr std::int64_t k62 = std::int64_t{1} << 62;
constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
const char* const two_pow_64 = "18446744073709551616";
const char* const two_pow_80 = "1208925819614629174706176";
}  // namespace

TEST_CASE("factories: element counts that do not fit throw, naming the call and the shape", "[shape]") {
  REQUIRE_THROWS_WITH(xf::zeros({k62, 4}), Contains("xf::zeros: shape [4611686018427387904, 4] has") &&
                                               Contains(std::string(two_pow_64) + " elements") &&
                                               Contains("more than int64_t can hold"));
  REQUIRE_THROWS_WITH(xf::zeros({k40, k40}),
                      Contains("xf::zeros: shape [1099511627776, 1099511627776]") && Contains(two_pow_80));
  // the exact count, with zero digits inside (10^19)
  REQUIRE_THROWS_WITH(xf::zeros({1000000000, 1000000000, 10}), Contains("10000000000000000000 elements"));
  REQUIRE_THROWS_WITH(xf::ones({k62, 4}), Contains("xf::ones: shape"));
  REQUIRE_THROWS_WITH(xf::empty({k62, 4}), Contains("xf::empty: shape"));
  REQUIRE_THROWS_WITH(xf::full({k62, 4}, 1.0), Contains("xf::full: shape"));
  REQUIRE_THROWS_WITH(xf::rand({k62, 4}), Contains("xf::rand: shape"));
  REQUIRE_THROWS_WITH(xf::randn({k62, 4}), Contains("xf::randn: shape"));
  // the same on meta: a meta tensor has no data, but its count must still fit
  REQUIRE_THROWS_WITH(xf::zeros({k62, 4}, xf::f32, xf::meta), Contains("xf::zeros: shape") && Contains(two_pow_64));
  REQUIRE_THROWS_WITH(xf::randn({k40, k40}, xf::f32, xf::meta), Contains("xf::randn: shape"));
}

TEST_CASE("factories: a negative extent throws (shape)", "[shape]") {
  REQUIRE_THROWS_WITH(xf::zeros({-1, 3}),
                      Contains("xf::zeros: shape [-1, 3] has a negative extent (-1 in dimension 0)"));
  REQUIRE_THROWS_WITH(xf::ones({2, -5}), Contains("xf::ones: shape [2, -5]") && Contains("negative"));
  REQUIRE_THROWS_WITH(xf::empty({-2}, xf::f32, xf::meta), Contains("xf::empty: shape") && Contains("negative"));
  REQUIRE_THROWS_WITH(xf::full({-1}, 2.0), Contains("xf::full: shape") && Contains("negative"));
  REQUIRE_THROWS_WITH(xf::rand({3, -1}), Contains("xf::rand: shape") && Contains("negative"));
  REQUIRE_THROWS_WITH(xf::randn({-3}), Contains("xf::randn: shape") && Contains("negative"));
  REQUIRE_THROWS_WITH(xf::eye(-1), Contains("xf::eye: shape [-1, -1]") && Contains("negative"));
  REQUIRE_THROWS_WITH(xf::linspace(0.0, 1.0, -1), Contains("xf::linspace: shape [-1]") && Contains("negative"));
}

TEST_CASE("factories: byte sizes that do not fit throw (shape)", "[shape]") {
  // 2^62 elements fit; 2^62 * 8 bytes do not, even on meta
  REQUIRE_THROWS_WITH(xf::zeros({k62}, xf::f64, xf::meta),
                      Contains("xf::zeros: shape [4611686018427387904] with 8-byte elements needs 36893488147419103232 "
                               "bytes, more than int64_t can hold"));
  REQUIRE_THROWS_WITH(xf::full({k62}, 1.0, xf::i64), Contains("xf::full: shape") && Contains("bytes"));
  REQUIRE_THROWS_WITH(xf::zeros({i64_max}, xf::f32, xf::meta), Contains("shape") && Contains("bytes"));
  // the boundary: int64_t max one-byte elements is exactly the largest legal byte size
  xf::tensor b = xf::zeros({i64_max}, xf::b8, xf::meta);
  CHECK(b.numel() == i64_max);
}

TEST_CASE("factories: zero elements, but contiguous strides that do not fit, throw (shape)", "[shape]") {
  REQUIRE_THROWS_WITH(xf::zeros({0, k62, 4}),
                      Contains("xf::zeros: shape [0, 4611686018427387904, 4] has 0 elements, but its contiguous "
                               "strides do not fit in int64_t (dimension 0 would need a stride of ") &&
                          Contains(two_pow_64));
  REQUIRE_THROWS_WITH(xf::zeros({0, k40, k40}, xf::f32, xf::meta), Contains("strides"));
  // zero elements with the huge extents in front: the strides [4, 1, 1] fit, so this is legal
  xf::tensor e = xf::zeros({k62, 4, 0});
  CHECK(e.numel() == 0);
  CHECK(e.shape() == xf::shape_t{k62, 4, 0});
  CHECK(e.strides() == xf::shape_t{4, 1, 1});
}

TEST_CASE("eye, arange and linspace: result lengths are checked (shape)", "[shape]") {
  REQUIRE_THROWS_WITH(xf::eye(std::int64_t{1} << 32), Contains("xf::eye: shape [4294967296, 4294967296] has") &&
                                                          Contains(two_pow_64 + std::string(" elements")));
  REQUIRE_THROWS_WITH(xf::eye(std::int64_t{1} << 31, xf::f32, xf::meta), Contains("xf::eye: shape") && Contains("bytes"));
  REQUIRE_THROWS_WITH(xf::eye(std::int64_t{1} << 40, xf::f32, xf::meta), Contains("xf::eye: shape"));

  REQUIRE_THROWS_WITH(xf::arange(0.0, 1e300, 1.0, xf::f32, xf::meta),
                      Contains("xf::arange: shape [1e+300]") && Contains("more elements than int64_t can hold"));
  REQUIRE_THROWS_WITH(xf::arange(0.0, std::numeric_limits<double>::infinity(), 1.0, xf::f32, xf::cpu),
                      Contains("xf::arange: shape [inf]"));
  REQUIRE_THROWS_WITH(xf::arange(0.0, std::numeric_limits<double>::quiet_NaN(), 1.0, xf::f32, xf::cpu),
                      Contains("xf::arange: shape") && Contains("not a number"));
  REQUIRE_THROWS_WITH(xf::arange(-1e19, 1e19, 1.0, xf::f64, xf::meta), Contains("xf::arange: shape"));
  // 2^62 int64 values: the count fits, the bytes do not
  REQUIRE_THROWS_WITH(xf::arange(k62), Contains("xf::arange: shape [4611686018427387904]") && Contains("bytes"));

  REQUIRE_THROWS_WITH(xf::linspace(0.0, 1.0, k62, xf::f64, xf::meta),
                      Contains("xf::linspace: shape [4611686018427387904]") && Contains("bytes"));

  // huge but legal, on meta
  CHECK(xf::eye(std::int64_t{1} << 30, xf::f32, xf::meta).numel() == std::int64_t{1} << 60);
  CHECK(xf::arange(0.0, static_cast<double>(k40), 1.0, xf::f32, xf::meta).shape() == xf::shape_t{k40});
  CHECK(xf::linspace(0.0, 1.0, k40, xf::f32, xf::meta).shape() == xf::shape_t{k40});
  // and small ones unchanged
  CHECK(xf::equal(xf::arange(4), xf::tensor{0, 1, 2, 3}));
  CHECK(xf::arange(5.0, 5.0, 1.0, xf::f32, xf::cpu).numel() == 0);
  CHECK(xf::equal(xf::arange(5.0, 1.0, -2.0, xf::f64), xf::tensor{5.0, 3.0}));
  REQUIRE_THROWS_WITH(xf::arange(5.0, 1.0, 1.0, xf::f32, xf::cpu), Contains("against the sign of step"));  // as torch
  CHECK(xf::eye(0).shape() == xf::shape_t{0, 0});
}

TEST_CASE("huge legal shapes work on meta, with the *_like factories too", "[shape]") {
  xf::tensor m = xf::zeros({k40, std::int64_t{1} << 20}, xf::f32, xf::meta);
  CHECK(m.numel() == std::int64_t{1} << 60);
  CHECK(m.strides() == xf::shape_t{std::int64_t{1} << 20, 1});
  CHECK(m.device() == xf::meta);
  for (const xf::tensor& t : {xf::zeros_like(m), xf::ones_like(m), xf::empty_like(m), xf::full_like(m, 2.0),
                              xf::rand_like(m), xf::randn_like(m), xf::ones({k40, std::int64_t{1} << 20}, xf::f32, xf::meta),
                              xf::rand({k40, std::int64_t{1} << 20}, xf::f32, xf::meta)}) {
    CHECK(t.shape() == m.shape());
    CHECK(t.dtype() == xf::f32);
    CHECK(t.device() == xf::meta);
  }
  // the largest count: int64_t max one-byte elements
  CHECK(xf::empty_like(xf::zeros({i64_max}, xf::b8, xf::meta)).numel() == i64_max);
  CHECK(m.flatten().shape() == xf::shape_t{std::int64_t{1} << 60});
}

TEST_CASE("reshape and view: checked products, also with -1", "[shape]") {
  xf::tensor x = xf::zeros({4});
  REQUIRE_THROWS_WITH(x.reshape({k62, 4}),
                      Contains("xf::reshape: shape [4611686018427387904, 4] has") && Contains(two_pow_64));
  REQUIRE_THROWS_WITH(x.view({k62, 4}), Contains("xf::view: shape [4611686018427387904, 4] has"));
  // with -1: the other extents must multiply to a count that fits (before the division)
  REQUIRE_THROWS_WITH(x.reshape({k62, 4, -1}),
                      Contains("xf::reshape: shape [4611686018427387904, 4, -1] is invalid for a tensor of 4 elements: "
                               "its extents other than -1 multiply to 18446744073709551616") &&
                          Contains("shape"));
  REQUIRE_THROWS_WITH(x.view({-1, k40, k40}), Contains("xf::view: shape") && Contains(two_pow_80));
  REQUIRE_THROWS_WITH(x.reshape({-2, -2}), Contains("xf::reshape: invalid size -2 in shape [-2, -2]"));
  REQUIRE_THROWS_WITH(x.reshape({-1, -1}), Contains("only one dimension"));
  // a product that wraps to the right count must not pass: 2^62 * 4 * 4 wraps to 0
  xf::tensor e = xf::zeros({0});
  REQUIRE_THROWS_WITH(e.reshape({k62, 4, 4}), Contains("shape") && Contains("elements"));
  // zero elements: the count fits, the strides must too
  REQUIRE_THROWS_WITH(e.reshape({0, k62, 4}), Contains("xf::reshape: shape [0, 4611686018427387904, 4]") &&
                                                  Contains("strides"));
  REQUIRE_THROWS_WITH(e.view({-1, k62, 4}), Contains("xf::view: shape [-1, 4611686018427387904, 4]") &&
                                               Contains("multiply to 18446744073709551616"));
  CHECK(e.reshape({k62, 4, 0}).shape() == xf::shape_t{k62, 4, 0});
  CHECK(e.reshape({k62, -1}).shape() == xf::shape_t{k62, 0});

  // huge legal reshapes of a meta tensor, with -1 inferred
  xf::tensor m = xf::zeros({k40, std::int64_t{1} << 20}, xf::f32, xf::meta);
  CHECK(m.reshape({-1, 1024}).shape() == xf::shape_t{std::int64_t{1} << 50, 1024});
  CHECK(m.view({1024, -1, 4}).shape() == xf::shape_t{1024, std::int64_t{1} << 48, 4});
  CHECK(m.reshape({std::int64_t{1} << 60}).numel() == std::int64_t{1} << 60);
}

TEST_CASE("expand: the expanded count and bytes must fit (shape)", "[shape]") {
  xf::tensor one = xf::zeros({1});
  REQUIRE_THROWS_WITH(one.expand({k62, 4}), Contains("xf::expand: shape [4611686018427387904, 4] has") &&
                                                Contains(two_pow_64));
  REQUIRE_THROWS_WITH(xf::zeros({1, 1}).expand({k40, k40}), Contains("xf::expand: shape") && Contains(two_pow_80));
  REQUIRE_THROWS_WITH(xf::zeros({1}, xf::f64).expand({k62}), Contains("xf::expand: shape") && Contains("bytes"));
  REQUIRE_THROWS_WITH(one.expand({-2}), Contains("xf::expand: shape [-2]") && Contains("negative"));
  // a legal huge expand on the cpu is a view: no allocation
  xf::tensor v = one.expand({std::int64_t{1} << 60});
  CHECK(v.numel() == std::int64_t{1} << 60);
  CHECK(v.strides() == xf::shape_t{0});
  CHECK(xf::same_storage(v, one));
  // under vmap the batch joins the expanded shape (the batch rule checks it too)
  xf::tensor xs = xf::zeros({4});
  auto f = [](const xf::tensor& x) { return x.expand({std::int64_t{1} << 61}); };
  REQUIRE_THROWS_WITH(xf::vmap(f)(xs), Contains("xf::expand: shape [4, 2305843009213693952]") &&
                                           Contains("9223372036854775808 elements"));
}

TEST_CASE("cat and stack: summed extents and stacked counts are checked (shape)", "[shape]") {
  xf::tensor big = xf::zeros({k62}, xf::b8, xf::meta);
  REQUIRE_THROWS_WITH(xf::cat({big, big}, 0),
                      Contains("xf::cat: the result shape would have an extent of 9223372036854775808 in dimension 0") &&
                          Contains("more than int64_t can hold; input shapes [4611686018427387904], "
                                   "[4611686018427387904]"));
  REQUIRE_THROWS_WITH(xf::cat({big, big, big, big, big}, 0), Contains("xf::cat") && Contains("23058430092136939520"));
  // each extent fits, the count does not
  xf::tensor col = xf::zeros({k62, 1}, xf::b8, xf::meta);
  REQUIRE_THROWS_WITH(xf::cat({col, col}, 1), Contains("xf::cat: shape [4611686018427387904, 2] has") &&
                                                  Contains("9223372036854775808 elements"));
  REQUIRE_THROWS_WITH(xf::stack({big, big}, 0), Contains("xf::stack: shape [2, 4611686018427387904] has") &&
                                                    Contains("9223372036854775808 elements"));
  REQUIRE_THROWS_WITH(xf::stack({big, big}, 1), Contains("xf::stack: shape [4611686018427387904, 2]"));
  xf::tensor f = xf::zeros({std::int64_t{1} << 60}, xf::f32, xf::meta);
  REQUIRE_THROWS_WITH(xf::stack({f, f}, 0), Contains("xf::stack: shape [2, 1152921504606846976]") && Contains("bytes"));
  // legal: huge meta results, and 0-element cpu tensors with huge extents (nothing to copy)
  xf::tensor m = xf::zeros({k40}, xf::f32, xf::meta);
  CHECK(xf::cat({m, m}, 0).shape() == xf::shape_t{std::int64_t{1} << 41});
  CHECK(xf::stack({m, m, m}, 1).shape() == xf::shape_t{k40, 3});
  xf::tensor e = xf::zeros({k62, 4, 0});
  CHECK(xf::cat({e, e}, 2).shape() == xf::shape_t{k62, 4, 0});
  CHECK(xf::cat({e, e}, 1).shape() == xf::shape_t{k62, 8, 0});
  // and small ones unchanged
  CHECK(xf::equal(xf::cat({xf::tensor{1.0, 2.0}, xf::tensor{3.0}}, 0), xf::tensor{1.0, 2.0, 3.0}));
}

TEST_CASE("broadcasting binary ops: the broadcast count must fit (shape)", "[shape]") {
  xf::tensor a = xf::zeros({k40, 1}, xf::f32, xf::meta), b = xf::zeros({1, k40}, xf::f32, xf::meta);
  REQUIRE_THROWS_WITH(a + b, Contains("xf::add: shape [1099511627776, 1099511627776] has") && Contains(two_pow_80));
  REQUIRE_THROWS_WITH(xf::mul(a, b), Contains("xf::mul: shape"));
  REQUIRE_THROWS_WITH(xf::maximum(a, b), Contains("xf::maximum: shape"));
  REQUIRE_THROWS_WITH(a < b, Contains("xf::lt: shape"));
  REQUIRE_THROWS_WITH(xf::where(a > 0.0, a, b), Contains("xf::where: shape"));
  // on the cpu, with huge but legal broadcast views as operands: nothing is allocated before the check
  xf::tensor c = xf::zeros({1, 1}).expand({k40, 1}), d = xf::zeros({1, 1}).expand({1, k40});
  REQUIRE_THROWS_WITH(c - d, Contains("xf::sub: shape [1099511627776, 1099511627776]") && Contains(two_pow_80));
  REQUIRE_THROWS_WITH(c == d, Contains("xf::eq: shape"));
  REQUIRE_THROWS_WITH(xf::where(xf::zeros({1, 1}, xf::b8), c, d), Contains("xf::where: shape"));
  // legal huge broadcast on meta
  xf::tensor m = xf::zeros({std::int64_t{1} << 30, 1}, xf::f32, xf::meta);
  CHECK((m * xf::zeros({1, std::int64_t{1} << 30}, xf::f32, xf::meta)).numel() == std::int64_t{1} << 60);
}

TEST_CASE("reductions: the count of reduced elements must fit (shape)", "[shape]") {
  // 0 elements (the strides [2^40, 1, 1] fit), but 2^80 elements reduced into each result
  for (xf::device dev : {xf::meta, xf::cpu}) {
    INFO("device " << dev);
    xf::tensor t = xf::zeros({k40, k40, 0}, xf::f32, dev);
    CHECK(t.numel() == 0);
    REQUIRE_THROWS_WITH(xf::sum(t, {0, 1}), Contains("xf::sum: shape [1099511627776, 1099511627776] (the reduced "
                                                     "dimensions) has 1208925819614629174706176 elements"));
    REQUIRE_THROWS_WITH(xf::mean(t, {0, 1}), Contains("xf::mean: shape") && Contains("the reduced dimensions"));
    REQUIRE_THROWS_WITH(xf::var(t, {0, 1}), Contains("shape") && Contains("the reduced dimensions"));
    // the kept dimensions: [2^40, 2^40] results
    REQUIRE_THROWS_WITH(xf::sum(t, {2}), Contains("xf::sum: shape [1099511627776, 1099511627776] has") &&
                                             Contains(two_pow_80));
    REQUIRE_THROWS_WITH(xf::prod(t, 2, false), Contains("xf::prod: shape"));
    // fine: a reduced count of 0, and a 0-element input whose contiguous strides would not fit
    if (dev == xf::meta) CHECK(xf::sum(t, {0, 2}).shape() == xf::shape_t{k40});  // 2^40 results: meta only
    const xf::tensor s = xf::sum(xf::zeros({k40, 3, 0}, xf::f32, dev), {0, 2});
    CHECK(s.shape() == xf::shape_t{3});
    if (dev == xf::cpu) CHECK(xf::equal(s, xf::zeros({3})));
    const xf::tensor n = xf::norm(t.permute({2, 0, 1}));
    CHECK(n.dim() == 0);
    if (dev == xf::cpu) CHECK(n.item<float>() == 0.0f);
  }
  xf::tensor m = xf::zeros({k40, std::int64_t{1} << 20}, xf::f32, xf::meta);
  CHECK(xf::sum(m, {1}).shape() == xf::shape_t{k40});
  CHECK(xf::mean(m).dim() == 0);
  CHECK(xf::amax(m, {0}, true).shape() == xf::shape_t{1, std::int64_t{1} << 20});
}

TEST_CASE("matrix products: result and broadcast operand shapes are checked (shape)", "[shape]") {
  xf::tensor a = xf::zeros({k40, 1}, xf::f32, xf::meta), b = xf::zeros({1, k40}, xf::f32, xf::meta);
  REQUIRE_THROWS_WITH(xf::matmul(a, b), Contains("xf::matmul: shape [1099511627776, 1099511627776] has") &&
                                            Contains(two_pow_80));
  REQUIRE_THROWS_WITH(xf::mm(a, b), Contains("xf::mm: shape [1099511627776, 1099511627776]"));
  REQUIRE_THROWS_WITH(xf::bmm(a.unsqueeze(0), b.unsqueeze(0)), Contains("xf::bmm: shape [1, 1099511627776, "));
  xf::tensor v = xf::zeros({k40}, xf::f32, xf::meta);
  REQUIRE_THROWS_WITH(xf::outer(v, v), Contains("xf::outer: shape [1099511627776, 1099511627776]"));
  REQUIRE_THROWS_WITH(xf::linear(a, xf::zeros({k40, 1}, xf::f32, xf::meta), xf::tensor()),
                      Contains("xf::linear: shape [1099511627776, 1099511627776]"));
  // broadcast batch dims: [2^40] x [2^40] batches
  xf::tensor ba = xf::zeros({k40, 1, 1, 1}, xf::f32, xf::meta), bb = xf::zeros({1, k40, 1, 1}, xf::f32, xf::meta);
  REQUIRE_THROWS_WITH(xf::matmul(ba, bb), Contains("xf::matmul: shape [1099511627776, 1099511627776, 1, 1]"));
  // an operand broadcast to the batch would not fit, even though the result [2^20, 2^20, 1, 1] would
  const std::int64_t k20 = std::int64_t{1} << 20, k30 = std::int64_t{1} << 30;
  xf::tensor rows = xf::zeros({k20, 1, 1, k30}, xf::f32, xf::meta), cols = xf::zeros({1, k20, k30, 1}, xf::f32, xf::meta);
  REQUIRE_THROWS_WITH(xf::matmul(rows, cols), Contains("xf::matmul: shape [1048576, 1048576, 1, 1073741824] has"));
  // on the cpu: empty operands (k = 0) whose product is not
  xf::tensor ca = xf::zeros({std::int64_t{1} << 31, 0}), cb = xf::zeros({0, std::int64_t{1} << 31});
  REQUIRE_THROWS_WITH(xf::matmul(ca, cb), Contains("xf::matmul: shape [2147483648, 2147483648]") && Contains("bytes"));
  REQUIRE_THROWS_WITH(xf::mv(xf::zeros({k62, 0}, xf::f64), xf::zeros({0}, xf::f64)),
                      Contains("xf::mv: shape [4611686018427387904]") && Contains("bytes"));
  // under vmap: the per-example result is checked, naming the call
  xf::tensor vs = xf::zeros({2, k40, 1}, xf::f32, xf::meta);
  REQUIRE_THROWS_WITH(xf::vmap([&](const xf::tensor& x) { return xf::matmul(x, b); })(vs),
                      Contains("xf::matmul: shape [1099511627776, 1099511627776]"));
  // the batch rule folds the batch into the rows of the bmm, B * rows = 2^63 here; that product
  // does not fit, so the batch joins the bmm batch instead, and the empty result is right
  xf::tensor xs = xf::zeros({2, k62, 0}, xf::b8);
  xf::tensor ys = xf::vmap([](const xf::tensor& x) { return xf::matmul(x, xf::zeros({0, 0}, xf::b8)); })(xs);
  CHECK(ys.shape() == xf::shape_t{2, k62, 0});
  CHECK(ys.dtype() == xf::i64);
  // legal: huge meta products, and k = 0 on the cpu (zeros)
  CHECK(xf::matmul(xf::zeros({std::int64_t{1} << 20, 1024}, xf::f32, xf::meta),
                   xf::zeros({1024, std::int64_t{1} << 20}, xf::f32, xf::meta))
            .shape() == xf::shape_t{std::int64_t{1} << 20, std::int64_t{1} << 20});
  CHECK(xf::equal(xf::matmul(xf::zeros({2, 0}), xf::zeros({0, 3})), xf::zeros({2, 3})));
}

TEST_CASE("index arithmetic near int64_t max does not overflow", "[shape]") {
  xf::tensor x = xf::arange(4);
  // start + len would overflow
  REQUIRE_THROWS_WITH(x.narrow(0, 2, i64_max), Contains("do not fit dimension 0 of size 4"));
  CHECK(xf::equal(x.narrow(0, 2, 2), xf::tensor{2, 3}));
  // s + size would overflow
  auto parts = xf::split(x, i64_max, 0);
  REQUIRE(parts.size() == 1);
  CHECK(xf::equal(parts[0], x));
  // the diagonal stride 2^62 + 2^62 does not fit, but a length-1 diagonal never uses it
  xf::tensor d = xf::zeros({1, 1, k62}, xf::b8, xf::meta).diagonal();
  CHECK(d.shape() == xf::shape_t{k62, 1});
  // a 0-element view whose row-major strides would not fit: contiguous like every tensor without
  // elements (as torch), so contiguous() returns it and computes no strides (no overflow)
  xf::tensor p = xf::zeros({k40, k40, 0}, xf::f32, xf::meta).permute({2, 0, 1});
  CHECK(p.is_contiguous());
  CHECK(p.contiguous().strides() == p.strides());
  // a fresh copy cannot be made: its strides would not fit, and that is an error, not an overflow
  REQUIRE_THROWS_WITH(p.clone(), Contains("shape") && Contains("strides"));
}

TEST_CASE("tensors from values: shapes come from real data", "[shape]") {
  xf::tensor t{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}};
  CHECK(t.shape() == xf::shape_t{2, 3});
  CHECK(t.strides() == xf::shape_t{3, 1});
  REQUIRE_THROWS_WITH((xf::tensor{{1.0, 2.0}, {3.0}}), Contains("ragged nested list"));
}

TEST_CASE("allocation failure throws (out of memory), naming the bytes and the device", "[shape]") {
  // 2^61 bytes: a legal size, more than any 64-bit address space can map
  REQUIRE_THROWS_WITH(xf::zeros({std::int64_t{1} << 58}, xf::f64),
                      Contains("xf: out of memory allocating 2305843009213693952 bytes on cpu"));
  REQUIRE_THROWS_WITH(xf::empty({std::int64_t{1} << 61}, xf::b8), Contains("out of memory") && Contains("on cpu"));
  REQUIRE_THROWS_WITH(xf::ones({std::int64_t{1} << 59}, xf::i64), Contains("out of memory allocating 4611686018427387904 bytes"));
  // the same shape on meta needs no memory
  CHECK(xf::zeros({std::int64_t{1} << 58}, xf::f64, xf::meta).numel() == std::int64_t{1} << 58);
  // and the process carries on
  CHECK(xf::equal(xf::ones({2}) + xf::ones({2}), xf::full({2}, 2.0)));
}

// NOTE: [Type-erased messages] (core/error.hpp): each part of a message is written by its own
// operator<<, whatever the call's list of argument types.
TEST_CASE("error messages: each part is written as operator<< writes it", "[shape][messages]") {
  using xf::detail::str_cat;
  const char* c_string = "const char*";
  char buffer[] = "char*";
  char* mutable_string = buffer;
  const std::string s = "std::string";
  const char letter = 'c';
  CHECK(str_cat() == "");
  CHECK(str_cat("literal") == "literal");
  CHECK(str_cat("a", c_string, "|", mutable_string, "|", s, "|", std::string_view("view")) ==
        "aconst char*|char*|std::string|view");
  CHECK(str_cat(std::int64_t{-3}, ' ', 2.5, ' ', std::size_t{7}, ' ', letter, ' ', true) == "-3 2.5 7 c 1");
  std::ostringstream expected;
  expected << xf::shape_t{2, 3} << xf::f64 << xf::cpu;
  CHECK(str_cat(xf::shape_t{2, 3}, xf::f64, xf::cpu) == expected.str());
  // a temporary lives to the end of the full expression that formats it
  CHECK(str_cat(std::string("tmp") + "!", 1) == "tmp!1");
  try {
    xf::detail::fail("xf::op: got ", std::int64_t{4}, " dims, shape ", xf::shape_t{1, 4}, "; ", s);
    FAIL("fail() returned");
  } catch (const xf::error& e) {
    CHECK(std::string(e.what()) == "xf::op: got 4 dims, shape " + str_cat(xf::shape_t{1, 4}) + "; std::string");
  }
  CHECK_THROWS_AS(xf::detail::fail(), xf::error);
}
