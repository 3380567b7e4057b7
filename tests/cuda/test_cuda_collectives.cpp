// The collectives on cuda tensors (NOTE: [Collectives on device tensors] in
// include/xfunc/dist/collectives.hpp), as MPI jobs of 1, 2 and 3 ranks on the fake CUDA driver
// (or a GPU): every collective's value equals the one on cpu tensors and comes back on the
// device; the transposes and tangents work through them; ranks may hold their values on
// different devices. ctest runs it with the fake NCCL (XFUNC_TEST_EXPECT_NCCL=1: the device
// buffers must go through NCCL), and with no NCCL or the toolkit's real one, which cannot start
// on the fake driver (=0: through MPI on cpu copies, nccl_status containing
// XFUNC_TEST_NCCL_REASON).
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include <xfunc/cuda.hpp>

#include "dist/dist_support.hpp"

using namespace dist_test;
using xf::tensor;
namespace d = xf::dist;

namespace {
std::size_t me() { return static_cast<std::size_t>(rank()); }
/// Whether a result made from a cuda tensor is on the device and equals the cpu result.
bool same_on_device(const tensor& got, const tensor& want) {
  return got.device() == xf::cuda && got.shape() == want.shape() && got.dtype() == want.dtype() &&
         xf::allclose(got.cpu(), want, 1e-6, 1e-6);
}
/// Every rank's xf::full({n}, rank + 1), in rank order.
tensors all_ranks_full(std::int64_t n) {
  tensors xs;
  for (int r = 0; r < size(); ++r) xs.push_back(xf::full({n}, r + 1.0, xf::f64, xf::cpu));
  return xs;
}
/// The transport ctest asks for: 1 NCCL, 0 MPI, -1 either (a GPU run).
int expected_nccl() {
  const char* e = std::getenv("XFUNC_TEST_EXPECT_NCCL");
  return e && *e ? std::atoi(e) : -1;
}
/// Whether the NCCL loaded is the fake one (tests/cuda/fake_cuda/fake_nccl.cpp), which counts its calls.
bool fake_nccl() {
  const char* lib = std::getenv("XFUNC_NCCL_LIBRARY");
  return lib && std::string(lib).find("fake_nccl") != std::string::npos;
}
/// The calls the fake NCCL has had in this process (0 before it is loaded, or when it is not the
/// NCCL loaded).
long long fake_nccl_calls() {
  const char* lib = std::getenv("XFUNC_NCCL_LIBRARY");
  void* h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  auto* calls = h ? reinterpret_cast<long long (*)()>(dlsym(h, "xfunc_fake_nccl_calls")) : nullptr;
  const long long n = calls ? calls() : 0;
  if (h) dlclose(h);
  return n;
}
}  // namespace

TEST_CASE("collectives on cuda tensors go through NCCL when every rank can run it, else through MPI") {
  REQUIRE(xf::cuda_is_available());
  const tensor x = xf::full({5}, static_cast<double>(rank() + 1), xf::f64, xf::cuda);
  const long long before = fake_nccl_calls();
  const tensor s = d::all_reduce(x);
  CHECK(same_on_device(s, xf::full({5}, size() * (size() + 1) / 2.0, xf::f64)));
  const int want = expected_nccl();
  INFO("nccl_status: " << d::nccl_status(d::world()));
  if (want == 1) {
    CHECK(d::uses_nccl(d::world()));
    CHECK(d::nccl_status(d::world()).empty());
    if (fake_nccl()) CHECK(fake_nccl_calls() == before + 1);  // one NCCL collective moved the device buffer
  }
  if (want == 0) {
    CHECK_FALSE(d::uses_nccl(d::world()));
    const char* reason = std::getenv("XFUNC_TEST_NCCL_REASON");
    CHECK(d::nccl_status(d::world()).find(reason ? reason : "") != std::string::npos);
    CHECK_FALSE(d::nccl_status(d::world()).empty());
  }
  // a cpu tensor on every rank still goes through MPI
  const long long mid = fake_nccl_calls();
  CHECK(xf::allclose(d::all_reduce(x.cpu()), s.cpu()));
  CHECK(fake_nccl_calls() == mid);
  // without the cross-rank check each rank decides from its own tensor: the same choice here
  d::set_checks(false);
  CHECK(same_on_device(d::all_gather(x), xf::cat(all_ranks_full(5), 0)));
  d::set_checks(true);
  if (want == 1 && fake_nccl()) CHECK(fake_nccl_calls() == mid + 1);
}

TEST_CASE("every collective on cuda tensors equals it on cpu tensors, and stays on the device") {
  REQUIRE(xf::cuda_is_available());
  const int N = size();
  const tensors xs = all_ranks({2, 6}, 31);
  const tensor x = xs[me()], xc = x.to(xf::cuda);
  for (auto op : {d::reduce_op::sum, d::reduce_op::mean, d::reduce_op::max, d::reduce_op::min})
    CHECK(same_on_device(d::all_reduce(xc, op), sim_all_reduce(xs, op)[0]));
  CHECK(same_on_device(d::all_gather(xc, 1), sim_all_gather(xs, 1)[0]));
  CHECK(same_on_device(d::reduce_scatter(xc, 1), sim_reduce_scatter(xs, 1)[me()]));
  CHECK(same_on_device(d::broadcast(xc, N - 1), xs[static_cast<std::size_t>(N - 1)]));
  CHECK(same_on_device(d::reduce(xc, 0), sim_reduce(xs, 0)[me()]));
  CHECK(same_on_device(d::all_to_all(xc, 1, 0), sim_all_to_all(xs, 1, 0)[me()]));
  CHECK(same_on_device(d::ppermute(xc, ring(N)), sim_ppermute(xs, ring(N))[me()]));
  // float32 and int64 too
  const tensor f = x.to(xf::f32);
  CHECK(same_on_device(d::all_reduce(f.to(xf::cuda)), d::all_reduce(f)));
  const tensor i = xf::full({3}, static_cast<double>(rank()), xf::i64);
  CHECK(same_on_device(d::all_gather(i.to(xf::cuda)), d::all_gather(i)));
}

TEST_CASE("transforms through collectives on cuda tensors") {
  REQUIRE(xf::cuda_is_available());
  const int N = size();
  const tensors xs = all_ranks({4}, 32);
  const tensor xc = xs[me()].to(xf::cuda);
  // d/dx of sum(all_gather(x)^2) summed over ranks: all_gather's transpose is reduce_scatter
  // (NOTE: [Transposes of collectives]), so each rank's gradient is N * 2x
  const tensor g = xf::grad([](const tensor& t) { return xf::sum(xf::square(d::all_gather(t))); })(xc);
  CHECK(same_on_device(g, xs[me()] * (2.0 * N)));
  // the tangent of all_reduce(sum) is all_reduce(sum) of the tangents
  const auto [y, dy] = xf::jvp([](const tensor& t) { return d::all_reduce(t); }, xc, xf::ones_like(xc));
  CHECK(same_on_device(y, total(xs)));
  CHECK(same_on_device(dy, xf::full({4}, static_cast<double>(N), xf::f64)));
  // vmap: the whole batch is one collective
  const tensor b = xf::stack({xs[me()], xs[me()] * 2.0}, 0).to(xf::cuda);
  const tensor vb = xf::vmap([](const tensor& t) { return d::all_reduce(t); })(b);
  CHECK(same_on_device(vb, xf::stack({total(xs), total(xs) * 2.0}, 0)));
}

TEST_CASE("ranks may hold their values on different devices") {
  REQUIRE(xf::cuda_is_available());
  const tensors xs = all_ranks({3}, 33);
  const tensor x = rank() % 2 == 0 ? xs[me()].to(xf::cuda) : xs[me()];
  const tensor s = d::all_reduce(x);
  CHECK(s.device() == x.device());
  CHECK(xf::allclose(s.cpu(), total(xs)));
  // average_gradients over cuda leaves goes through the all_reduce op
  const std::vector<tensor> grads{xs[me()].to(xf::cuda), xf::ones({2}, xf::f64, xf::cuda)};
  const std::vector<tensor> avg = d::average_gradients(grads);
  CHECK(same_on_device(avg[0], total(xs) / static_cast<double>(size())));
  CHECK(same_on_device(avg[1], xf::ones({2}, xf::f64)));
}

TEST_CASE("a data-parallel DP-SGD step on cuda tensors equals the one-process step on the cpu") {
  REQUIRE(xf::cuda_is_available());
  // per-example gradients (vmap of grad), clipped per example and summed on each rank, then one
  // bucketed all-reduce of the sums (average_gradients: through NCCL where ctest asks for it)
  const std::int64_t n_in = 5, n_out = 3, per_rank = 4, global = per_rank * size();
  auto loss = [](const std::vector<tensor>& p, const tensor& x, const tensor& y) {
    return xf::cross_entropy(xf::linear(xf::tanh(x), p[0], p[1]), y);
  };
  auto clipped_sum = [&](const std::vector<tensor>& p, const tensor& x, const tensor& y) {
    const std::vector<tensor> g = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0))(p, x, y);
    const std::int64_t n = x.size(0);
    tensor sq = xf::zeros({n}, xf::f64, x.device());
    for (const tensor& gi : g) sq = sq + xf::sum(xf::square(gi.reshape({n, -1})), {1});
    const tensor factor = xf::clamp(1.0 / (xf::sqrt(sq) + 1e-6), 0.0, 1.0);
    std::vector<tensor> sums;
    for (std::size_t i = 0; i < g.size(); ++i)
      sums.push_back(xf::matmul(factor, g[i].reshape({n, -1})).reshape(p[i].shape()));
    return sums;
  };
  xf::manual_seed(77);  // the same data and parameters on every rank
  const std::vector<tensor> p{xf::randn({n_out, n_in}, xf::f64), xf::randn({n_out}, xf::f64)};
  const tensor X = xf::randn({global, n_in}, xf::f64);
  const tensor Y = xf::argmax(xf::matmul(X, xf::randn({n_in, n_out}, xf::f64)), 1);
  // this rank's shard, on the device
  const std::vector<tensor> pc{p[0].to(xf::cuda), p[1].to(xf::cuda)};
  const tensor x = d::shard(X, 0).to(xf::cuda), y = d::shard(Y, 0).to(xf::cuda);
  const std::vector<tensor> avg = d::average_gradients(clipped_sum(pc, x, y));
  const std::vector<tensor> want = clipped_sum(p, X, Y);  // one process, the whole batch, cpu
  for (std::size_t i = 0; i < p.size(); ++i)
    CHECK(same_on_device(avg[i] * static_cast<double>(size()), want[i]));
}

TEST_CASE("each communicator of a split gets its own NCCL communicator") {
  REQUIRE(xf::cuda_is_available());
  const d::communicator half = d::world().split(rank() % 2, rank());  // even and odd ranks
  const tensor x = xf::full({3}, rank() + 1.0, xf::f64, xf::cuda);
  double want = 0;
  tensors members;  // the half's values, in its rank order
  for (int r = rank() % 2; r < size(); r += 2) {
    want += r + 1.0;
    members.push_back(xf::full({3}, r + 1.0, xf::f64, xf::cpu));
  }
  CHECK(same_on_device(d::all_reduce(x, d::reduce_op::sum, half), xf::full({3}, want, xf::f64, xf::cpu)));
  CHECK(same_on_device(d::all_gather(x, 0, half), xf::cat(members, 0)));
  if (expected_nccl() == 1) CHECK(d::uses_nccl(half));
}

TEST_CASE("make_fx records one node per collective on cuda tensors, with no transfers; functionalize") {
  REQUIRE(xf::cuda_is_available());
  const tensors xs = all_ranks({2, 6}, 34);
  const tensor xc = xs[me()].to(xf::cuda);
  auto f = [](const tensor& t) { return d::all_gather(d::all_reduce(t * 2.0), 1); };
  const tensor want = sim_all_gather(sim_all_reduce(xs), 1)[0] * 2.0;
  const xf::graph g = xf::make_fx(f)(xc);
  CHECK(g.count("xf::dist::all_reduce") == 1);
  CHECK(g.count("xf::dist::all_gather") == 1);
  CHECK(g.count("xf::to") == 0);  // the staging copies (MPI path) are not recorded
  CHECK(same_on_device(g(xc)[0], want));
  // the backward pass holds the transposes, and replays on the device
  const xf::graph gg = xf::make_fx(xf::grad([&](const tensor& t) { return xf::sum(xf::square(f(t))); }))(xc);
  CHECK(gg.count("xf::dist::reduce_scatter") == 1);
  CHECK(same_on_device(gg(xc)[0], xf::grad([&](const tensor& t) { return xf::sum(xf::square(f(t))); })(xc).cpu()));
  CHECK(same_on_device(xf::functionalize(f)(xc), want));
}
