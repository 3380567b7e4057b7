// cuda tensors end to end: devices, copies, factories, printing, errors, the allocator, matrix
// products through cuBLAS, and the transforms on cuda compared with the cpu. In CI this runs on
// the fake driver and fake cuBLAS (tests/cuda/fake_cuda; NOTE: [Kernels compiled twice]); with
// XFUNC_CUDA_DRIVER and XFUNC_CUBLAS_LIBRARY unset it runs on a GPU.
#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#ifdef XFUNC_TEST_DLPACK
#include <xfunc/dlpack.hpp>
#endif
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Matchers::Contains;
using xf::tensor;

namespace {
const xf::device cuda1{xf::device_kind::cuda, 1};

/// An op with a cpu kernel only (every op of the library has a cuda kernel, or needs none).
struct cpu_only_op {
  static constexpr const char* name = "xftest::cpu_only";
  using attrs = xf::detail::no_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs&) { return in[0].clone(); }
};

/// got is on cuda and equals expect (on the cpu) within rtol (and atol: rtol / 1000 unless given).
void same(const tensor& got, const tensor& expect, double rtol = 1e-12, double atol = -1) {
  CHECK(got.device() == xf::cuda);
  REQUIRE(got.shape() == expect.shape());
  CHECK(got.dtype() == expect.dtype());
  INFO("cuda: " << got << "\ncpu:  " << expect);
  CHECK(xf::allclose(got.cpu(), expect, rtol, atol < 0 ? rtol * 1e-3 : atol));
}
}  // namespace

TEST_CASE("cuda tensors: copies, factories, printing, item", "[cuda]") {
  REQUIRE(xf::cuda_is_available());
  const tensor x = xf::arange(0.0, 12.0, 1.0, xf::f64).reshape({3, 4});
  const tensor g = x.to(xf::cuda);
  CHECK(g.device() == xf::cuda);
  CHECK(g.cuda().impl() == g.impl());  // already there: the same tensor
  CHECK(xf::equal(g.cpu(), x));
  CHECK(g.cpu().device() == xf::cpu);
  // every dtype, and strided views both ways
  for (xf::dtype dt : {xf::f32, xf::f64, xf::i64, xf::b8}) {
    const tensor v = x.to(dt).transpose(0, 1);
    CHECK(xf::equal(v.cuda().cpu(), v));
    CHECK(xf::equal(x.to(dt).cuda().transpose(0, 1).cpu(), v));
    CHECK(xf::equal(x.to(dt).cuda().narrow(1, 1, 2).cpu(), x.to(dt).narrow(1, 1, 2)));
  }
  CHECK(g.select(0, 1).select(0, 2).item<double>() == 6.0);
  std::ostringstream os;
  os << xf::tensor{1.5, 2.0}.cuda();
  CHECK(os.str() == "tensor([1.5, 2], shape=[2], dtype=float64, device=cuda:0)");
  // factories with a device
  CHECK(xf::equal(xf::zeros({2, 3}, xf::f32, xf::cuda).cpu(), xf::zeros({2, 3})));
  CHECK(xf::equal(xf::ones({2, 3}, xf::i64, xf::cuda).cpu(), xf::ones({2, 3}, xf::i64)));
  CHECK(xf::equal(xf::full({4}, 2.5, xf::f64, xf::cuda).cpu(), xf::full({4}, 2.5, xf::f64)));
  CHECK(xf::equal(xf::eye(3, xf::f32, xf::cuda).cpu(), xf::eye(3)));
  CHECK(xf::equal(xf::arange(0.0, 5.0, 1.0, xf::i64, xf::cuda).cpu(), xf::arange(5)));
  CHECK(xf::equal(xf::zeros_like(g).cpu(), xf::zeros_like(x)));
  CHECK(xf::zeros_like(g).device() == xf::cuda);
  // the same seed gives the same numbers on both devices, drawn on the device (NOTE: [Philox
  // streams]): uniform ones bitwise, normal ones to the rounding of the device's log, sin and
  // cos; odd counts end inside a Philox block and inside a Box-Muller pair
  for (const xf::dtype dt : {xf::f32, xf::f64}) {
    for (const xf::shape_t& shape : {xf::shape_t{5, 3}, xf::shape_t{1001}, xf::shape_t{2, 0}}) {
      INFO(dt << " " << shape.size() << " dims");
      xf::manual_seed(7);
      const tensor u_gpu = xf::rand(shape, dt, xf::cuda), n_gpu = xf::randn(shape, dt, xf::cuda);
      const tensor after_gpu = xf::rand({3}, dt);  // the stream moved past both
      xf::manual_seed(7);
      const tensor u_cpu = xf::rand(shape, dt), n_cpu = xf::randn(shape, dt);
      CHECK(u_gpu.device() == xf::cuda);
      CHECK(xf::equal(u_gpu.cpu(), u_cpu));
      CHECK(xf::allclose(n_gpu.cpu(), n_cpu, dt == xf::f32 ? 1e-6 : 1e-13, 1e-13));
      CHECK(xf::equal(after_gpu, xf::rand({3}, dt)));
    }
  }
  // xtensor
  const xt::xarray<double> a = {{1.0, 2.0}, {3.0, 4.0}};
  const tensor ga = xf::from_xtensor(a, xf::cuda);
  CHECK(ga.device() == xf::cuda);
  const bool same_values = xf::to_xtensor<double>(ga * 2.0) == xt::xarray<double>{{2.0, 4.0}, {6.0, 8.0}};
  CHECK(same_values);
  // no elements
  CHECK(xf::zeros({0, 3}, xf::f32, xf::cuda).cpu().shape() == xf::shape_t{0, 3});
  CHECK((xf::zeros({0}, xf::f32, xf::cuda) + 1.0).numel() == 0);
}

TEST_CASE("cuda tensors: ops, broadcasting, reductions, matrix products", "[cuda]") {
  const tensor a = xf::linspace(-2.0, 2.0, 12, xf::f64).reshape({3, 4});
  const tensor b = xf::linspace(0.5, 1.5, 4, xf::f64);
  const tensor ga = a.cuda(), gb = b.cuda();
  same(ga * gb + 1.0, a * b + 1.0);
  same(xf::tanh(ga.transpose(0, 1)) - gb.unsqueeze(1), xf::tanh(a.transpose(0, 1)) - b.unsqueeze(1));
  same(xf::where(ga > 0.0, ga, gb), xf::where(a > 0.0, a, b));
  same(xf::sum(ga, {1}), xf::sum(a, {1}));
  same(xf::sum(ga.transpose(0, 1), {0}, true), xf::sum(a.transpose(0, 1), {0}, true));
  same(xf::amax(ga, {0}), xf::amax(a, {0}));
  same(xf::mean(ga), xf::mean(a));
  same((ga > 0.0).to(xf::i64) * 3, (a > 0.0).to(xf::i64) * 3);
  // integer powers stay integers (negative exponents truncate; overflow wraps), as on the cpu
  const tensor base = xf::tensor{3, -2, 1, -1, 0, 7, 2}, expo = xf::tensor{4, 3, -5, -3, 0, 40, -1};
  const tensor gp = xf::pow(base.cuda(), expo.cuda());
  CHECK(gp.dtype() == xf::i64);
  CHECK(xf::equal(gp.cpu(), xf::pow(base, expo)));
  // two booleans stay boolean (or, and), as on the cpu
  const tensor p = a > 0.0, q = a < 1.0;
  for (const tensor& got : {p.cuda() + q.cuda(), p.cuda() * q.cuda(), xf::maximum(p.cuda(), q.cuda()),
                            xf::minimum(p.cuda(), q.cuda()), p.cuda() + xf::scalar(false)})
    CHECK(got.dtype() == xf::b8);
  CHECK(xf::equal((p.cuda() + q.cuda()).cpu(), p + q));
  CHECK(xf::equal((p.cuda() * q.cuda()).cpu(), p * q));
  CHECK(xf::equal(xf::maximum(p.cuda(), q.cuda()).cpu(), xf::maximum(p, q)));
  CHECK(xf::equal(xf::minimum(p.cuda(), q.cuda().transpose(0, 1).transpose(0, 1)).cpu(), xf::minimum(p, q)));
  CHECK(xf::equal((p.cuda() + xf::scalar(false)).cpu(), p));
  CHECK(xf::amax(p.cuda(), {1}).dtype() == xf::b8);
  CHECK(xf::equal(xf::amax(p.cuda(), {1}).cpu(), xf::amax(p, {1})));
  CHECK(xf::equal(xf::amin(q.cuda(), {0}).cpu(), xf::amin(q, {0})));
  CHECK_THROWS_WITH(-p.cuda(), Catch::Contains("xf::neg: negation (the - operator) of a boolean tensor"));
  CHECK_THROWS_WITH(xf::abs(p.cuda()), Catch::Contains("xf::abs: the absolute value of a boolean tensor"));
  // a 0-d cpu tensor acts as a scalar
  same(ga * xf::scalar(2.0), a * 2.0);
  // matrix products: plain, transposed operands, an operand expanded over the batch, float32
  const tensor m = xf::linspace(-1.0, 1.0, 20, xf::f64).reshape({4, 5});
  same(xf::matmul(ga, m.cuda()), xf::matmul(a, m));
  same(xf::matmul(m.cuda().transpose(0, 1), ga.transpose(0, 1)), xf::matmul(m.transpose(0, 1), a.transpose(0, 1)));
  const tensor batch = xf::linspace(-1.0, 1.0, 2 * 3 * 4, xf::f64).reshape({2, 3, 4});
  same(xf::matmul(batch.cuda(), m.cuda()), xf::matmul(batch, m));
  same(xf::bmm(batch.cuda(), m.cuda().unsqueeze(0).expand({2, 4, 5})), xf::bmm(batch, m.unsqueeze(0).expand({2, 4, 5})));
  same(xf::matmul(ga.to(xf::f32), m.cuda().to(xf::f32)), xf::matmul(a.to(xf::f32), m.to(xf::f32)), 1e-5);
  same(xf::matmul(b.cuda(), m.cuda().narrow(1, 0, 1).squeeze(1).unsqueeze(1)),
       xf::matmul(b, m.narrow(1, 0, 1).squeeze(1).unsqueeze(1)));
}

namespace {
/// Kernel launches so far, where the tests run on the fake driver (-1 on a GPU: not counted).
long long fake_launches() {
  const char* path = std::getenv("XFUNC_CUDA_DRIVER");
  void* h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  auto* count = h ? reinterpret_cast<long long (*)()>(dlsym(h, "xfunc_fake_cuda_launches")) : nullptr;
  const long long n = count ? count() : -1;
  if (h) dlclose(h);
  return n;
}
/// The deferral threshold set for a scope (NOTE: [Deferred elementwise]).
struct deferral_threshold {
  std::int64_t saved;
  explicit deferral_threshold(std::int64_t n) : saved(xf::detail::set_deferred_min_numel(n)) {}
  ~deferral_threshold() { xf::detail::set_deferred_min_numel(saved); }
};
}  // namespace

TEST_CASE("scalar operands reach elementwise kernels by value, not through device memory", "[cuda]") {
  const deferral_threshold eager_only(0);  // the op-by-op kernels (not a fused program)
  // NOTE: [Scalar operands]: x * 2.0 allocates its result and nothing else on the device
  auto& alloc = xf::detail::cuda::device_allocator();
  const auto allocations = [&] {
    const auto s = alloc.stats();
    return s.driver_allocations + s.reuses;
  };
  const tensor a = xf::linspace(-2.0, 2.0, 12, xf::f64).reshape({3, 4});
  const tensor ga = a.cuda();
  const tensor warm = ga * 2.0;
  const auto before = allocations();
  const tensor twice = ga * 2.0;
  CHECK(allocations() == before + 1);
  same(twice, a * 2.0);
  // on either side, in every elementwise kind, with the scalar's dtype promoted as on the cpu
  same(2.0 - ga, 2.0 - a);
  same(xf::scalar(3.0) / ga.transpose(0, 1), xf::scalar(3.0) / a.transpose(0, 1));
  same(xf::pow(ga, xf::scalar(2.0)), xf::pow(a, xf::scalar(2.0)));
  same(xf::maximum(ga, xf::scalar(0.5)), xf::maximum(a, xf::scalar(0.5)));
  same(ga.to(xf::f32) + 0.25, a.to(xf::f32) + 0.25);
  same(xf::where(ga > 0.0, ga, xf::scalar(-1.0)), xf::where(a > 0.0, a, xf::scalar(-1.0)));
  same(xf::where(xf::scalar(true), ga, xf::scalar(-1.0)), a);
  same(xf::logical_and(ga > 0.0, xf::scalar(true)).to(xf::i64), (a > 0.0).to(xf::i64));
  same((ga <= xf::scalar(0.0)).to(xf::i64), (a <= xf::scalar(0.0)).to(xf::i64));
  // int64 values a double could not hold, bit for bit
  const std::int64_t big = (std::int64_t(1) << 53) + 1;
  const tensor i = xf::arange(4);
  CHECK(xf::equal((i.cuda() + xf::scalar(big)).cpu(), i + xf::scalar(big)));
  CHECK((i.cuda() + xf::scalar(big)).cpu().select(0, 1).item<std::int64_t>() == big + 1);
  // in place, through a strided view
  tensor base = a.cuda().clone();
  base.transpose(0, 1).narrow(0, 1, 2).mul_(xf::scalar(-3.0));
  tensor expect = a.clone();
  expect.transpose(0, 1).narrow(0, 1, 2).mul_(xf::scalar(-3.0));
  same(base, expect);
}

TEST_CASE("comparisons and casts on cuda: whole packs, tails and misaligned views", "[cuda]") {
  // their kernels read 16 bytes of input per thread and write a pack of another type (4 bools
  // for floats, doubles for a float-to-double cast) when every buffer is aligned to its pack,
  // then the tail element by element: the same values as the cpu in both paths
  const deferral_threshold eager_only(0);
  const std::vector<xf::dtype> dtypes = {xf::f32, xf::f64, xf::i64, xf::b8};
  for (std::int64_t n : {1, 3, 5, 17, 1003, 4096}) {
    // whole numbers around 0 (the casts to int64 and bool are then exact; some pairs are equal)
    const tensor base = xf::arange(0.0, static_cast<double>(n + 1), 1.0, xf::f64) - static_cast<double>(n / 2);
    const tensor other = xf::flip(base, {0});
    for (xf::dtype dt : dtypes) {
      const tensor x = base.to(dt), y = other.to(dt);
      for (std::int64_t off : {0, 1}) {  // aligned, and not
        INFO(dt << ", " << n << " elements, offset " << off);
        const tensor gx = x.cuda().narrow(0, off, n), gy = y.cuda().narrow(0, off, n);
        const tensor cx = x.narrow(0, off, n), cy = y.narrow(0, off, n);
        for (xf::dtype to : dtypes) CHECK(xf::equal(gx.to(to).cpu(), cx.to(to)));
        if (dt == xf::b8) continue;  // (comparisons have kernels for the numeric dtypes)
        CHECK(xf::equal((gx < gy).cpu(), cx < cy));
        CHECK(xf::equal(xf::eq(gx, gy).cpu(), xf::eq(cx, cy)));
        CHECK(xf::equal((gx >= gy).cpu(), cx >= cy));
        CHECK(xf::equal(xf::logical_or(gx, gy).cpu(), xf::logical_or(cx, cy)));
        CHECK(xf::equal(xf::ne(gx, xf::scalar(0.0)).cpu(), xf::ne(cx, xf::scalar(0.0))));
      }
    }
  }
}


TEST_CASE("pointwise chains on cuda run as one fused launch", "[cuda]") {
  // NOTE: [Fused device programs]: bitwise the op-by-op launches, in one launch
  const deferral_threshold defer_all(1);
  auto program = [](const tensor& x) { return xf::exp(x * 0.5) - xf::sin(x) / (x + 3.0); };
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    for (std::int64_t n : {1, 5, 1003, 4096}) {  // whole packs of 16 bytes and a tail
      INFO(dt << ", " << n << " elements");
      const tensor x = xf::linspace(-3.0, 3.0, n + 1, dt);
      for (const tensor& gx : {x.cuda().narrow(0, 0, n), x.cuda().narrow(0, 1, n)}) {  // aligned, and not
        tensor fused = program(gx);
        CHECK(fused.impl()->deferred.load());
        const long long launches = fake_launches();
        const tensor got = fused.cpu();
        if (launches >= 0) CHECK(fake_launches() == launches + 1);  // (the copy to the host is no launch)
        tensor eager;
        {
          const deferral_threshold eager_only(0);
          eager = program(gx);
          CHECK_FALSE(eager.impl()->deferred.load());
        }
        CHECK(xf::equal(got, eager.cpu()));
        CHECK(xf::allclose(got, program(gx.cpu()), 1e-5, 1e-6));
      }
    }
  }
  const tensor a = xf::linspace(-1.0, 1.0, 40, xf::f64).reshape({5, 8}), b = xf::cos(a), c = a * a, d = a + 0.5;
  const tensor ga = a.cuda(), gb = b.cuda(), gc = c.cuda(), gd = d.cuda();
  // four leaves; a value read twice, two steps apart (kept by the kernel); scalars on both sides
  same(ga * gb + gc * gd, a * b + c * d);
  const tensor t = ga * 2.0;
  same((t + 1.0) * t, (a * 2.0 + 1.0) * (a * 2.0));
  same(2.0 - xf::pow(gd + 1.0, gb) / xf::atan2(gc, gd + 1.0), 2.0 - xf::pow(d + 1.0, b) / xf::atan2(c, d + 1.0));
  // a chain longer than one program (8 steps), and one with a fifth leaf
  tensor g = ga, h = a;
  for (int i = 0; i < 11; ++i) {
    g = xf::tanh(g * 1.5 + 0.1);
    h = xf::tanh(h * 1.5 + 0.1);
  }
  same(g, h);
  const tensor e = a - 2.0;
  same(ga + gb + gc + gd + e.cuda() * 3.0, a + b + c + d + e * 3.0);
  // what is not fused: int64, comparisons, a one-element cuda operand (read on the device)
  CHECK_FALSE((xf::arange(6).cuda() * 2).impl()->deferred.load());
  same((ga > 0.0).to(xf::f64) * ga, (a > 0.0).to(xf::f64) * a);
  same(ga * ga.reshape({40}).narrow(0, 3, 1), a * a.reshape({40}).narrow(0, 3, 1));
  // every reader settles it: a reduction, a product (cuBLAS), a view, an in-place write, a copy
  const tensor w = xf::linspace(0.0, 1.0, 24, xf::f64).reshape({8, 3});
  same(xf::sum(ga * 3.0, {1}), xf::sum(a * 3.0, {1}));
  same(xf::matmul(xf::exp(ga), w.cuda()), xf::matmul(xf::exp(a), w));
  same((ga - 1.0).transpose(0, 1).narrow(0, 2, 3), (a - 1.0).transpose(0, 1).narrow(0, 2, 3));
  tensor acc = ga.clone();
  acc.add_(ga * ga);
  same(acc, a + a * a);
  // a write into a leaf first computes the programs that read it, from the old values
  tensor leaf = ga.clone();
  const tensor tripled = leaf * 3.0;
  leaf.mul_(xf::scalar(-1.0));
  same(tripled, a * 3.0);
  same(leaf, -a);
}

TEST_CASE("large reductions split each output over many threads", "[cuda]") {
  // (NOTE: [Split reductions]: outputs of at least 256 elements are folded by several threads,
  // in levels of partial accumulators; the table's small samples never split)
  namespace xc = xf::detail::cuda;
  CHECK(xc::reduction_splits(1, 255) == 1);
  CHECK(xc::reduction_splits(1, 20000) == 128);       // whole warps, each thread >= 128 elements
  CHECK(xc::reduction_splits(1 << 20, 1 << 20) == 1);  // enough outputs already
  CHECK(xc::reduction_splits(3, 1000) == 7);
  xf::manual_seed(5);
  const tensor x = xf::randn({3, 5000, 7}, xf::f64);
  const tensor g = x.cuda();
  for (const std::vector<std::int64_t>& dims :
       std::vector<std::vector<std::int64_t>>{{}, {1}, {0, 1}, {1, 2}, {0, 2}}) {
    INFO("dims of size " << dims.size());
    // (the two devices add in different orders: a sum near 0 of 21 values near 1, over dims 0
    // and 2, differs by their rounding, 5e-15 in the AVX-512 build: an absolute tolerance)
    same(xf::sum(g, dims), xf::sum(x, dims), 1e-12, 1e-13);
    same(xf::amax(g, dims), xf::amax(x, dims));
    same(xf::amin(g, dims), xf::amin(x, dims));
    // (norm reduces over dims through its op: xf::norm takes every element)
    const xf::detail::reduce_attrs over{xf::detail::reduction_dims(x, dims, "xf::norm"), false};
    same(xf::detail::call<xf::detail::norm_op>(over, g), xf::detail::call<xf::detail::norm_op>(over, x));
    // (float32 sums: the cpu accumulates in float, cuda in double; some sums are near 0)
    CHECK(xf::allclose(xf::sum(g.to(xf::f32), dims).cpu(), xf::sum(x.to(xf::f32), dims), 1e-5, 1e-4));
    same(xf::amax(g.transpose(0, 1), dims), xf::amax(x.transpose(0, 1), dims));
  }
  same(xf::norm(g), xf::norm(x));
  same(xf::prod(1.0 + g * 1e-3, 1), xf::prod(1.0 + x * 1e-3, 1));
  // softmax, log_softmax and logsumexp: the largest value and the sum of exp(x - it) split too
  for (const std::int64_t dim : {0, 1, 2}) {
    INFO("dim " << dim);
    same(xf::softmax(g, dim), xf::softmax(x, dim));
    same(xf::log_softmax(g.transpose(0, 2), dim), xf::log_softmax(x.transpose(0, 2), dim));
    same(xf::logsumexp(g, {dim}), xf::logsumexp(x, {dim}));
  }
  same(xf::logsumexp(g, {}), xf::logsumexp(x, {}));
  same(xf::logsumexp(g, {0, 2}, true), xf::logsumexp(x, {0, 2}, true));
  // infinite largest values are not taken out (as on the cpu)
  const tensor inf_rows = xf::cat({xf::full({1, 300}, -std::numeric_limits<double>::infinity(), xf::f64),
                                   xf::linspace(-1.0, 1.0, 300, xf::f64).reshape({1, 300})},
                                  0);
  const tensor gi = inf_rows.cuda();
  const auto finite_or_big = [](const tensor& r) {  // (allclose takes neither NaN nor inf as equal)
    return xf::clamp(xf::where(r != r, xf::ones_like(r) * 1e300, r), -1e300, 1e300);
  };
  same(finite_or_big(xf::softmax(gi, 1)), finite_or_big(xf::softmax(inf_rows, 1)));
  same(finite_or_big(xf::logsumexp(gi, {1})), finite_or_big(xf::logsumexp(inf_rows, {1})));
  // rows of a matrix (the reduced dim contiguous), columns (the kept dim contiguous), integers
  const tensor rows = xf::linspace(-3.0, 5.0, 4 * 3000, xf::f64).reshape({4, 3000});
  same(xf::sum(rows.cuda(), {1}), xf::sum(rows, {1}));
  same(xf::sum(rows.cuda().transpose(0, 1), {0}), xf::sum(rows.transpose(0, 1), {0}));
  // along a contiguous reduced dim splits read 16-byte packs (kernels.cu, fold_row_packs): rows
  // with elements after the last whole pack, rows that start misaligned (a view one element in,
  // every other row of an odd width), rows too short for a pack per split, every fold
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    const double rtol = dt == xf::f32 ? 1e-5 : 1e-12;
    for (std::int64_t m : {6, 257, 1001, 4099}) {
      const tensor r = xf::randn({3, m + 1}, dt);
      const tensor gr = r.cuda();
      for (std::int64_t start : {0, 1}) {
        INFO(dt << ", rows of " << m << " from column " << start);
        const tensor v = r.narrow(1, start, m), gv = gr.narrow(1, start, m);
        same(xf::sum(gv, {1}), xf::sum(v, {1}), rtol, rtol);
        same(xf::amax(gv, {1}), xf::amax(v, {1}));
        same(xf::amin(gv, {1}), xf::amin(v, {1}));
        same(xf::prod(1.0 + gv * 1e-3, 1), xf::prod(1.0 + v * 1e-3, 1), rtol);
        same(xf::logsumexp(gv, {1}), xf::logsumexp(v, {1}), rtol);
        tensor nan_last = gv.contiguous();  // a NaN after the last whole pack, and one inside a pack
        nan_last.select(0, 0).select(0, m - 1).fill_(std::nan(""));
        nan_last.select(0, 2).select(0, m / 2).fill_(std::nan(""));
        const tensor maxima = xf::amax(nan_last, {1}).cpu();
        CHECK(std::isnan(maxima.select(0, 0).item<double>()));
        CHECK_FALSE(std::isnan(maxima.select(0, 1).item<double>()));
        CHECK(std::isnan(maxima.select(0, 2).item<double>()));
      }
    }
  }
  const tensor ints = xf::arange(0, 40000, 1, xf::i64).reshape({2, 20000}) - 777;
  same(xf::sum(ints.cuda(), {1}), xf::sum(ints, {1}));
  same(xf::amin(ints.cuda(), {}), xf::amin(ints, {}));
  // a NaN anywhere wins, whichever split and level it falls in
  tensor with_nan = x.clone();
  with_nan.select(0, 1).select(0, 4321).select(0, 3).fill_(std::nan(""));
  const tensor gn = with_nan.cuda();
  CHECK(std::isnan(xf::amax(gn, {}).item<double>()));
  const auto nan_as_big = [](const tensor& r) { return xf::where(r != r, xf::ones_like(r) * 1e300, r); };
  same(nan_as_big(xf::amax(gn, {1})), nan_as_big(xf::amax(with_nan, {1})));
  same(nan_as_big(xf::amin(gn, {0, 1})), nan_as_big(xf::amin(with_nan, {0, 1})));
  CHECK(std::isnan(xf::amin(gn, {0, 1}).select(0, 3).item<double>()));
}

TEST_CASE("in-place ops on cuda tensors write through views", "[cuda]") {
  tensor base = xf::zeros({3, 4}, xf::f64, xf::cuda);
  tensor row = base.select(0, 1);
  row.add_(xf::linspace(1.0, 4.0, 4, xf::f64).cuda());
  base.transpose(0, 1).narrow(1, 2, 1).mul_(xf::scalar(0.0)).add_(xf::scalar(7.0));
  tensor expect = xf::zeros({3, 4}, xf::f64);
  expect.select(0, 1).add_(xf::linspace(1.0, 4.0, 4, xf::f64));
  expect.transpose(0, 1).narrow(1, 2, 1).mul_(xf::scalar(0.0)).add_(xf::scalar(7.0));
  same(base, expect);
  base.copy_(xf::ones({4}, xf::i64));  // from the cpu, broadcast, converted
  same(base, xf::ones({3, 4}, xf::f64));
  base.copy_(xf::flip(base, {1}) * 2.0);
  same(base, xf::full({3, 4}, 2.0, xf::f64));
  // under vmap an in-place op on a batched cuda value stays on the device
  auto bump = [](const tensor& v) { tensor c = v.clone(); c.add_(xf::sum(v)); return c; };
  const tensor batch = xf::linspace(0.0, 1.0, 6, xf::f64).reshape({2, 3});
  same(xf::vmap(bump)(batch.cuda()), xf::vmap(bump)(batch));
  same(xf::grad([&](const tensor& v) { return xf::sum(bump(v) * v); })(batch.cuda()),
       xf::grad([&](const tensor& v) { return xf::sum(bump(v) * v); })(batch));
}

TEST_CASE("transforms on cuda tensors agree with the cpu", "[cuda]") {
  // an MLP's loss; per-example gradients with vmap(grad), as in the demo
  auto loss = [](const tensor& w1, const tensor& w2, const tensor& x, const tensor& y) {
    const tensor h = xf::tanh(xf::matmul(x, w1));
    return xf::mean(xf::square(xf::matmul(h, w2) - y));
  };
  xf::manual_seed(3);
  const tensor w1 = xf::randn({4, 8}, xf::f64), w2 = xf::randn({8, 2}, xf::f64);
  const tensor x = xf::randn({6, 4}, xf::f64), y = xf::randn({6, 2}, xf::f64);
  auto on_gpu = [](const tensor& t) { return t.cuda(); };
  {
    auto [g1, g2] = xf::grad(loss, xf::argnums<0, 1>)(on_gpu(w1), on_gpu(w2), on_gpu(x), on_gpu(y));
    auto [c1, c2] = xf::grad(loss, xf::argnums<0, 1>)(w1, w2, x, y);
    same(g1, c1);
    same(g2, c2);
  }
  {
    auto per_example = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, xf::none, 0, 0));
    same(per_example(on_gpu(w1), on_gpu(w2), on_gpu(x).unsqueeze(1), on_gpu(y).unsqueeze(1)),
         per_example(w1, w2, x.unsqueeze(1), y.unsqueeze(1)));
  }
  {
    auto f = [](const tensor& v) { return xf::sum(xf::sin(v) * v); };
    const tensor v = xf::linspace(-1.0, 1.0, 5, xf::f64);
    same(xf::hessian(f)(v.cuda()), xf::hessian(f)(v));
    auto sin_fn = [](const tensor& t) { return xf::sin(t); };
    auto exp_fn = [](const tensor& t) { return xf::exp(t); };
    same(xf::jacrev(sin_fn)(v.cuda()), xf::jacrev(sin_fn)(v));
    same(xf::jacfwd(exp_fn)(v.cuda()), xf::jacfwd(exp_fn)(v));
    auto [o, t] = xf::jvp(f, v.cuda(), xf::ones_like(v).cuda());
    auto [oc, tc] = xf::jvp(f, v, xf::ones_like(v));
    same(o, oc);
    same(t, tc);
  }
  {
    // the transfer itself is differentiable: the gradient comes back to the cpu
    const tensor v = xf::linspace(-1.0, 1.0, 5, xf::f64);
    const tensor gv = xf::grad([](const tensor& c) { return xf::sum(xf::exp(c.cuda())).cpu(); })(v);
    CHECK(gv.device() == xf::cpu);
    CHECK(xf::allclose(gv, xf::exp(v)));
  }
}

TEST_CASE("functionalize and make_fx on cuda tensors", "[cuda]") {
  const tensor x = xf::linspace(-1.0, 1.0, 6, xf::f64).reshape({2, 3});
  auto f = [](const tensor& v) {
    tensor c = v.clone();
    c.narrow(1, 0, 2).mul_(xf::scalar(3.0));
    return xf::sum(c * v, {1});
  };
  same(xf::functionalize(f)(x.cuda()), f(x));
  same(xf::functionalize(f, xf::remove::mutations_and_views)(x.cuda()), f(x));
  const xf::graph g = xf::make_fx(f)(x.cuda());
  CHECK(g.count("xf::mul_") == 1);
  const tensor x2 = x * 2.0;
  same(g(x2.cuda()).at(0), f(x2));
  // the graph of a functionalized f replays on the device too, with no in-place node left
  const xf::graph gf = xf::make_fx(xf::functionalize(f, xf::remove::mutations_and_views))(x.cuda());
  CHECK(gf.count("xf::mul_") == 0);
  same(gf(x2.cuda()).at(0), f(x2));
}

TEST_CASE("custom ops, autograd functions and control flow on cuda tensors", "[cuda]") {
  const tensor x = xf::linspace(-1.0, 1.0, 4, xf::f64);
  const tensor gx = x.cuda();
  // the op's function serves every device; register_kernel(xf::cuda, ...) overrides cuda only
  auto cube = xf::custom_op("xfcuda::cube", [](const tensor& v) { return v * v * v; });
  same(cube(gx), x * x * x);
  cube.register_kernel(xf::cuda, [](const tensor& v) { return v * v * v + 100.0; });
  same(cube(gx), x * x * x + 100.0);
  CHECK(xf::allclose(cube(x), x * x * x));  // the cpu keeps the function
  cube.register_autograd([](xf::autograd::context& ctx, const tensor& g) { return g * 3.0 * xf::square(ctx.saved_tensors()[0]); },
                         [](xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
                           ctx.save_for_backward(std::get<0>(in));
                         });
  same(xf::grad([&](const tensor& v) { return xf::sum(cube(v)); })(gx), 3.0 * xf::square(x));
  // cond with a predicate on the device (read once), scan and while_loop
  auto twice = [](const tensor& v) { return v * 2.0; };
  auto negate = [](const tensor& v) { return -v; };
  same(xf::cond(xf::scalar(true).cuda(), twice, negate, gx), x * 2.0);
  same(xf::cond(xf::sum(gx) > 10.0, twice, negate, gx), -x);
  auto [carry, ys] = xf::scan([](const tensor& c, const tensor& v) { return std::pair{c + v, c * v}; },
                              xf::zeros({}, xf::f64, xf::cuda), gx);
  auto [carry_c, ys_c] = xf::scan([](const tensor& c, const tensor& v) { return std::pair{c + v, c * v}; },
                                  xf::zeros({}, xf::f64), x);
  same(carry, carry_c);
  same(ys, ys_c);
  same(xf::while_loop([](const tensor& v) { return xf::sum(v) < 20.0; }, twice, gx + 2.0),
       xf::while_loop([](const tensor& v) { return xf::sum(v) < 20.0; }, twice, x + 2.0));
  // vmap of cond with a batched predicate selects per example on the device
  auto pick = [&](const tensor& v) { return xf::cond(xf::sum(v) > 0.0, twice, negate, v); };
  const tensor batch = xf::stack({x, -x + 0.5}, 0);
  same(xf::vmap(pick)(batch.cuda()), xf::vmap(pick)(batch));
}

#ifdef XFUNC_TEST_DLPACK
TEST_CASE("DLPack shares cuda memory both ways", "[cuda]") {
  const tensor g = xf::linspace(0.0, 5.0, 6, xf::f64).reshape({2, 3}).cuda();
  DLManagedTensor* m = xf::to_dlpack(g.transpose(0, 1));
  CHECK(m->dl_tensor.device.device_type == kDLCUDA);
  CHECK(m->dl_tensor.device.device_id == 0);
  CHECK(m->dl_tensor.data == static_cast<void*>(g.impl()->device_data<double>()));
  CHECK(m->dl_tensor.strides[0] == 1);
  CHECK(xf::from_dlpack(m).impl() != nullptr);  // one of ours comes back as the same tensor
  // a foreign producer's cuda memory: viewed in place, its deleter called when the view dies
  static bool deleted = false;
  struct foreign {
    DLManagedTensor managed{};
    std::int64_t shape[1] = {3};
    tensor keep;  // the producer's own tensor
  };
  auto* f = new foreign;
  f->keep = xf::full({3}, 4.0, xf::f32, xf::cuda);
  f->managed.dl_tensor = {f->keep.impl()->device_data<float>(), {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, f->shape, nullptr, 0};
  f->managed.manager_ctx = f;
  f->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<foreign*>(self->manager_ctx);
    deleted = true;
  };
  {
    const tensor v = xf::from_dlpack(&f->managed);
    CHECK(v.device() == xf::cuda);
    same(v * 2.0, xf::full({3}, 8.0, xf::f32), 1e-6);
  }
  CHECK(deleted);
}
#endif

TEST_CASE("cuda errors: devices, missing kernels, bad indices", "[cuda]") {
  const tensor g = xf::ones({2, 3}, xf::f32, xf::cuda);
  CHECK_THROWS_WITH(g + xf::ones({2, 3}), Contains("xf::add") && Contains("different devices") && Contains("cuda:0") &&
                                              Contains("cpu"));
  CHECK_THROWS_WITH(g + xf::ones({2, 3}, xf::f32, xf::meta), Contains("different devices"));
  CHECK_THROWS_WITH(xf::detail::call<cpu_only_op>({}, g), Contains("xftest::cpu_only") && Contains("has no cuda kernel yet"));
  CHECK(xf::equal(xf::detail::call<cpu_only_op>({}, xf::ones({2})), xf::ones({2})));
  {  // a kernel the module lacks (an op asking for a dtype its kernels were not built for)
    namespace xc = xf::detail::cuda;
    const xc::device_context c = xc::context_for(0, "xftest::missing");
    CHECK_THROWS_WITH(xc::launch(c, "xf_no_such_kernel_f32", 4, xc::elementwise_args{}, "xftest::missing"),
                      Contains("xftest::missing") && Contains("has no kernel xf_no_such_kernel_f32") &&
                          Contains("does not support these dtypes on cuda"));
    CHECK(xf::equal((g + 1.0).cpu(), xf::full({2, 3}, 2.0, xf::f32)));  // and the module still works
  }
  CHECK_THROWS_WITH(xf::ones({2}, xf::f32, xf::device{xf::device_kind::cuda, 7}),
                    Contains("cuda:7 does not exist"));
  CHECK_THROWS_WITH(xf::matmul(xf::ones({2, 2}, xf::i64, xf::cuda), xf::ones({2, 2}, xf::i64, xf::cuda)),
                    Contains("xf::bmm") && Contains("floating"));
  if (xf::cuda_device_count() >= 2) {  // (the fake driver shows two in CI)
    CHECK_THROWS_WITH(g.to(cuda1) + g, Contains("different devices") && Contains("cuda:1"));
    const tensor on1 = g.to(cuda1) + 1.0;  // ops run on the device of their arguments
    CHECK(on1.device() == cuda1);
    CHECK(xf::equal(on1.cpu(), xf::full({2, 3}, 2.0)));
  }
}

TEST_CASE("the caching allocator serves cuda tensors", "[cuda]") {
  auto& alloc = xf::detail::cuda::device_allocator();
  { tensor warm = xf::zeros({1000}, xf::f32, xf::cuda); }
  const auto before = alloc.stats();
  for (int i = 0; i < 10; ++i) tensor t = xf::zeros({1000}, xf::f32, xf::cuda);
  const auto after = alloc.stats();
  CHECK(after.driver_allocations == before.driver_allocations);  // every one reused a block
  CHECK(after.reuses >= before.reuses + 10);
}

TEST_CASE("threads use cuda tensors at once, each on its own stream", "[cuda]") {
  const tensor w = xf::linspace(-1.0, 1.0, 12, xf::f64).reshape({3, 4}).cuda();
  const tensor expect = xf::matmul(xf::tanh(w.cpu()).transpose(0, 1), w.cpu());
  xf::cuda_synchronize();  // w is read on other threads' streams (docs/cuda.md, "Execution")
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int round = 0; round < 2; ++round) {  // the second round's threads reuse the first's streams
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, k = round * 4 + t] {
        bool good = true;
        for (int i = 0; i < 5; ++i) good = good && xf::allclose(xf::matmul(xf::tanh(w).transpose(0, 1), w).cpu(), expect);
        ok[static_cast<std::size_t>(k)] = good;
      });
    for (auto& th : threads) th.join();
    threads.clear();
  }
  CHECK(std::count(ok.begin(), ok.end(), 1) == 8);
}

// Run by their own ctest entries, with the fake device's memory or a failing kernel set up.
TEST_CASE("cuda out of memory", "[cuda_oom]") {
  // XFUNC_FAKE_CUDA_MEMORY=1048576 (ctest): a 4 MiB tensor cannot fit even after the cache is flushed
  { tensor small = xf::zeros({1000}, xf::f32, xf::cuda); }
  CHECK_THROWS_WITH(xf::zeros({1 << 20}, xf::f32, xf::cuda),
                    Contains("out of memory") && Contains("4194304 bytes") && Contains("cuda:0"));
  CHECK(xf::detail::cuda::device_allocator().stats().cache_flushes >= 1);
  CHECK(xf::zeros({1000}, xf::f32, xf::cuda).numel() == 1000);  // and the device still works
}

TEST_CASE("a kernel fault surfaces at the next synchronising call, naming the op", "[cuda_fault]") {
  // XFUNC_FAKE_CUDA_FAIL_KERNEL=xf_exp_f32 (ctest)
  const tensor g = xf::ones({4}, xf::f32, xf::cuda);
  const tensor e = xf::exp(g);  // queued: no error yet
  CHECK_THROWS_WITH(e.cpu(), Contains("xf::to") && Contains("xf::exp") && Contains("failed on the device"));
}

TEST_CASE("without a driver, cuda tensors say CUDA is not available", "[cuda_unavailable]") {
  // XFUNC_CUDA_DRIVER names a library that does not exist (ctest)
  CHECK_FALSE(xf::cuda_is_available());
  CHECK_THROWS_WITH(xf::zeros({2}, xf::f32, xf::cuda), Contains("CUDA is not available"));
  CHECK_THROWS_WITH(xf::ones({2}).cuda(), Contains("CUDA is not available"));
  CHECK(xf::equal(xf::ones({2}) + 1.0, xf::full({2}, 2.0)));  // the cpu is unaffected
}
