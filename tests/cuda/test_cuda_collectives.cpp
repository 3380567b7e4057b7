// The collectives on cuda tensors (NOTE: [Collectives on device tensors] in
// include/xfunc/dist/collectives.hpp), as MPI jobs of 1, 2 and 3 ranks on the fake CUDA driver
// (or a GPU): every collective's value equals the one on cpu tensors and comes back on the
// device; the transposes and tangents work through them; ranks may hold their values on
// different devices.
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
}  // namespace

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
