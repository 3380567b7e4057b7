// shard, average_gradients and rank_seed on 1, 2 and 3 ranks.
#include <catch2/catch.hpp>

#include <tuple>

#include "dist/dist_support.hpp"

using namespace dist_test;
using xf::tensor;
namespace d = xf::dist;

namespace {
std::size_t me() { return static_cast<std::size_t>(rank()); }
tensor mean_of(const tensors& xs) { return total(xs) / static_cast<double>(xs.size()); }
}  // namespace

TEST_CASE("shard: contiguous chunks in rank order, sizes differ by at most one") {
  const int N = size();
  for (std::int64_t n : {0, 1, 7, 12, 13}) {
    const tensor t = xf::arange(0, static_cast<double>(n), 1, xf::f64).reshape({1, n});
    const tensor mine = d::shard(t, 1);
    // every rank's chunk, gathered, is t again
    const tensor sizes = d::all_gather(xf::full({1}, static_cast<double>(mine.size(1)), xf::i64));
    std::int64_t lo = n, hi = 0, start = 0;
    for (int r = 0; r < N; ++r) {
      const std::int64_t s = sizes.select(0, r).item<std::int64_t>();
      lo = std::min(lo, s);
      hi = std::max(hi, s);
      if (r < rank()) start += s;
    }
    CHECK(hi - lo <= 1);
    CHECK(xf::allclose(mine, t.narrow(1, start, mine.size(1))));
  }
  CHECK_THROWS_WITH(d::shard(xf::ones({})), Catch::Contains("0-d"));
}

TEST_CASE("average_gradients: a pytree averaged in few messages") {
  // 100 small leaves of two dtypes, in a tuple with a vector
  std::vector<tensor> leaves;
  for (int k = 0; k < 100; ++k) leaves.push_back(data_of_rank(rank(), {k % 7 + 1, 3}, 100 + static_cast<std::uint64_t>(k)));
  const tensor single = data_of_rank(rank(), {4}, 99, xf::f32);
  const auto grads = std::make_tuple(single, leaves);
  auto& messages = d::detail::config().messages;
  const auto before = messages.load();
  const auto avg = d::average_gradients(grads);
  const auto used = messages.load() - before;
  // one check and one bucket per dtype
  CHECK(used <= 3);
  tensors every;
  for (int r = 0; r < size(); ++r) every.push_back(data_of_rank(r, {4}, 99, xf::f32));
  CHECK(xf::allclose(std::get<0>(avg), mean_of(every), 1e-6, 1e-6));
  for (int k = 0; k < 100; ++k) {
    tensors e;
    for (int r = 0; r < size(); ++r) e.push_back(data_of_rank(r, {k % 7 + 1, 3}, 100 + static_cast<std::uint64_t>(k)));
    CHECK(xf::allclose(std::get<1>(avg)[static_cast<std::size_t>(k)], mean_of(e), 1e-12, 1e-12));
  }
  // the inputs are unchanged
  CHECK(xf::allclose(std::get<0>(grads), single));
}

TEST_CASE("average_gradients: buckets of at most 25 MiB") {
  // three leaves of 12 MiB each: two buckets
  tensors leaves;
  for (int k = 0; k < 3; ++k) leaves.push_back(xf::full({3 << 20}, static_cast<double>(rank() + k), xf::f32));
  auto& messages = d::detail::config().messages;
  const auto before = messages.load();
  const tensors avg = d::average_gradients(leaves);
  if (size() > 1) CHECK(messages.load() - before == 3);  // the check and two buckets
  const double mean_rank = (size() - 1) / 2.0;
  for (int k = 0; k < 3; ++k) CHECK(avg[static_cast<std::size_t>(k)].select(0, 12345).item<float>() == static_cast<float>(mean_rank + k));
}

TEST_CASE("average_gradients: errors, and ranks that disagree") {
  CHECK_THROWS_WITH(d::average_gradients(tensors{xf::ones({2}, xf::i64)}), Catch::Contains("float"));
  CHECK_THROWS_WITH(d::average_gradients(tensors{tensor()}), Catch::Contains("undefined"));
  if (size() > 1)
    CHECK_THROWS_WITH(d::average_gradients(tensors{xf::ones({rank() == 0 ? 2 : 3})}), Catch::Contains("ranks"));
}

TEST_CASE("average_gradients: an allocation that fails while a reduction is under way") {
  // Two buckets (float32, then float64) of heap buffers: the float32 one starts its non-blocking
  // reduction, then the float64 bucket's buffer fails on every rank. The reduction under way is
  // completed as its bucket goes (NOTE: [Gradient buckets]), so the next call sees a clean
  // communicator and no write into a freed buffer.
  const tensors grads{xf::full({1000}, rank() + 1.0, xf::f32), xf::full({1000}, rank() + 1.0, xf::f64)};
  xf::detail::buffer_fault_countdown = 2;
  CHECK_THROWS_WITH(d::average_gradients(grads), Catch::Contains("out of memory"));
  xf::detail::buffer_fault_countdown = 0;
  for (int i = 0; i < 3; ++i) {
    const tensors avg = d::average_gradients(grads);
    const double mean = (size() + 1) / 2.0;
    CHECK(xf::equal(avg[0], xf::full({1000}, mean, xf::f32)));
    CHECK(xf::equal(avg[1], xf::full({1000}, mean, xf::f64)));
  }
}

TEST_CASE("average_gradients under transforms goes through the all_reduce op") {
  const tensors xs = all_ranks({5}, 21);
  // d/dx of sum(average(x) * w) on rank r: pmap semantics give the mean of every rank's w
  const tensors ws = all_ranks({5}, 22);
  auto f = [&](const tensor& x) {
    const tensors avg = d::average_gradients(tensors{x * x});
    return xf::sum(avg[0] * ws[me()]);
  };
  CHECK(xf::allclose(xf::grad(f)(xs[me()]), 2.0 * xs[me()] * mean_of(ws), 1e-10, 1e-12));
  const xf::graph g = xf::make_fx([&](const tensor& x) { return d::average_gradients(tensors{x, x * 2.0})[1]; })(xs[me()]);
  CHECK(g.count("xf::dist::all_reduce") == 1);
}

TEST_CASE("rank_seed: reproducible streams that differ between ranks") {
  d::rank_seed(42);
  const tensor a = xf::randn({8}, xf::f64);
  d::rank_seed(42);
  CHECK(xf::allclose(xf::randn({8}, xf::f64), a, 0, 0));
  const tensor all = d::all_gather(a.unsqueeze(0));
  for (int r = 0; r < size(); ++r)
    if (r != rank()) CHECK_FALSE(xf::allclose(all.select(0, r), a));
}
