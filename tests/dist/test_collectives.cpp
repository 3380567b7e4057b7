// The collectives' values, dtypes and meta shapes on 1, 2 and 3 ranks; communicators; every
// documented error, thrown on every rank where the ranks disagree.
#include <catch2/catch.hpp>

#include <string>

#include "dist/dist_support.hpp"

using namespace dist_test;
using xf::tensor;
namespace d = xf::dist;

namespace {
bool same(const tensor& a, const tensor& b) { return a.shape() == b.shape() && a.dtype() == b.dtype() && xf::allclose(a, b, 1e-6, 1e-6); }
std::size_t me() { return static_cast<std::size_t>(rank()); }
}  // namespace

TEST_CASE("world: rank and size; split; barrier") {
  const d::communicator w = d::world();
  int mpi_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  CHECK(w.size() == mpi_size);
  CHECK(w.rank() >= 0);
  CHECK(w.rank() < w.size());
  w.barrier();
  // even and odd ranks, ordered backwards
  const d::communicator half = w.split(w.rank() % 2, -w.rank());
  CHECK(half.size() == (w.size() + (w.rank() % 2 == 0 ? 1 : 0)) / 2);
  const tensor mine = xf::full({2}, static_cast<double>(w.rank()), xf::f64);
  double expect = 0;
  for (int r = w.rank() % 2; r < w.size(); r += 2) expect += r;
  CHECK(same(d::all_reduce(mine, d::reduce_op::sum, half), xf::full({2}, expect, xf::f64)));
  // a negative color joins no group (MPI_UNDEFINED): an empty communicator; the other ranks are
  // not held up (here the last rank opts out)
  const bool out = w.rank() == w.size() - 1;
  const d::communicator rest = w.split(out ? -1 : 0, 0);
  if (out) {
    CHECK_THROWS_WITH(rest.size(), Catch::Contains("empty"));
  } else {
    CHECK(rest.size() == w.size() - 1);
    CHECK(same(d::all_reduce(xf::ones({2}), d::reduce_op::sum, rest), xf::full({2}, w.size() - 1.0)));
  }
}

TEST_CASE("all_reduce: sum, mean, max, min on every dtype") {
  const tensors xs = all_ranks({3, 4}, 11);
  for (auto op : {d::reduce_op::sum, d::reduce_op::mean, d::reduce_op::max, d::reduce_op::min}) {
    CHECK(same(d::all_reduce(xs[me()], op), sim_all_reduce(xs, op)[0]));
    tensors fs;
    for (const auto& x : xs) fs.push_back(x.to(xf::f32));
    CHECK(same(d::all_reduce(fs[me()], op), sim_all_reduce(fs, op)[0]));
  }
  // integers and booleans (booleans reduce logically: sum and max are "or", min is "and")
  const tensor i = xf::full({2}, static_cast<double>(rank() + 1), xf::i64);
  CHECK(d::all_reduce(i).select(0, 0).item<std::int64_t>() == size() * (size() + 1) / 2);
  CHECK(d::all_reduce(i, d::reduce_op::max).select(0, 1).item<std::int64_t>() == size());
  const tensor b = xf::full({1}, rank() == 0 ? 1.0 : 0.0, xf::b8);
  CHECK(d::all_reduce(b).item<bool>());
  CHECK(d::all_reduce(b, d::reduce_op::min).item<bool>() == (size() == 1));
  CHECK_THROWS_WITH(d::all_reduce(i, d::reduce_op::mean), Catch::Contains("floating"));
  // a 0-d tensor and an empty one
  CHECK(d::all_reduce(xf::full({}, 1.0, xf::f64)).item<double>() == size());
  CHECK(d::all_reduce(xf::zeros({0, 3}, xf::f32)).shape() == xf::shape_t{0, 3});
  // a strided view is sent as its values; the input is not changed
  const tensor base = xs[me()].clone();
  CHECK(same(d::all_reduce(base.t()), sim_all_reduce(xs)[0].t()));
  CHECK(same(base, xs[me()]));
}

TEST_CASE("all_gather, reduce_scatter, broadcast, reduce, all_to_all, ppermute: values") {
  const int N = size();
  const tensors xs = all_ranks({2, 6}, 12);
  const tensor x = xs[me()];
  for (std::int64_t dim : {0, 1, -1}) CHECK(same(d::all_gather(x, dim), sim_all_gather(xs, dim < 0 ? 1 : dim)[0]));
  CHECK(same(d::reduce_scatter(x, 1), sim_reduce_scatter(xs, 1)[me()]));
  CHECK(same(d::reduce_scatter(x, -1, d::reduce_op::max),
             sim_all_reduce(xs, d::reduce_op::max)[0].narrow(1, rank() * (6 / N), 6 / N)));
  for (int root = 0; root < N; ++root) {
    CHECK(same(d::broadcast(x, root), xs[static_cast<std::size_t>(root)]));
    CHECK(same(d::reduce(x, root), sim_reduce(xs, root)[me()]));
  }
  for (std::int64_t s : {1, -1})
    for (std::int64_t c : {0, 1}) CHECK(same(d::all_to_all(x, s, c), sim_all_to_all(xs, 1, c)[me()]));
  const tensors ys = all_ranks({6, 2, 2}, 13);  // 3-d, split along the first dim, joined along the last
  CHECK(same(d::all_to_all(ys[me()], 0, 2), sim_all_to_all(ys, 0, 2)[me()]));
  CHECK(same(d::ppermute(x, ring(N)), sim_ppermute(xs, ring(N))[me()]));
  CHECK(same(d::ppermute(x, {}), xf::zeros_like(x)));
  // int64 through the data-moving collectives
  const tensor i = xf::full({3}, static_cast<double>(rank()), xf::i64);
  CHECK(d::all_gather(i).select(0, 3 * (N - 1)).item<std::int64_t>() == N - 1);
  CHECK(d::broadcast(i, N - 1).select(0, 0).item<std::int64_t>() == N - 1);
}

TEST_CASE("meta tensors: shapes only, no messages") {
  const int N = size();
  const tensor m = xf::zeros({4, 6}, xf::f32, xf::meta);
  auto& messages = d::detail::config().messages;
  const auto before = messages.load();
  CHECK(d::all_reduce(m).shape() == xf::shape_t{4, 6});
  CHECK(d::all_gather(m, 1).shape() == xf::shape_t{4, 6 * N});
  CHECK(d::reduce_scatter(m, 1).shape() == xf::shape_t{4, 6 / N});
  CHECK(d::all_to_all(m, 1, 0).shape() == xf::shape_t{4 * N, 6 / N});
  CHECK(d::broadcast(m).device() == xf::meta);
  CHECK(d::ppermute(m, ring(N)).shape() == xf::shape_t{4, 6});
  CHECK(messages.load() == before);
}

TEST_CASE("argument errors") {
  const int N = size();
  const tensor x = xf::ones({5, 6});
  if (N > 1) {
    CHECK_THROWS_WITH(d::reduce_scatter(x, 0), Catch::Contains("divisible"));
    CHECK_THROWS_WITH(d::all_to_all(x, 0, 1), Catch::Contains("divisible"));
  }
  CHECK_THROWS_WITH(d::all_gather(x, 2), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(d::all_gather(xf::ones({}), 0), Catch::Contains("0-d"));
  CHECK_THROWS_WITH(d::broadcast(x, N), Catch::Contains("root"));
  CHECK_THROWS_WITH(d::reduce(x, -1), Catch::Contains("root"));
  CHECK_THROWS_WITH(d::ppermute(x, {{0, N}}), Catch::Contains("outside"));
  CHECK_THROWS_WITH(d::ppermute(x, {{0, 0}, {0, 0}}), Catch::Contains("more than once"));
  CHECK_THROWS_WITH(d::all_reduce(x, d::reduce_op::sum, d::communicator()), Catch::Contains("empty"));
}

TEST_CASE("ranks that disagree throw \"ranks\" on every rank, and the communicator still works") {
  if (size() == 1) return;
  // a shape that differs on the last rank
  const tensor x = xf::ones({rank() == size() - 1 ? 3 : 2, 2});
  CHECK_THROWS_WITH(d::all_reduce(x), Catch::Contains("ranks") && Catch::Contains("[3, 2]"));
  // a dtype that differs
  CHECK_THROWS_WITH(d::all_gather(xf::ones({2}, rank() == 0 ? xf::f64 : xf::f32)), Catch::Contains("ranks"));
  // different collectives
  CHECK_THROWS_WITH(rank() == 0 ? d::all_reduce(xf::ones({2})) : d::broadcast(xf::ones({2})), Catch::Contains("ranks"));
  // different arguments
  CHECK_THROWS_WITH(d::all_reduce(xf::ones({2}), rank() == 0 ? d::reduce_op::max : d::reduce_op::sum),
                    Catch::Contains("ranks"));
  CHECK_THROWS_WITH(d::ppermute(xf::ones({2}), rank() == 0 ? perm_t{} : perm_t{{0, 1}}), Catch::Contains("ranks"));
  // arguments that one rank refuses itself (the others' are fine): that rank throws its own
  // error, every other rank "ranks", none waits for the others
  const bool last = rank() == size() - 1;
  const auto refused_by_last = [&](const auto& call, const std::string& own) {
    try {
      call();
      FAIL("no error");
    } catch (const xf::error& e) {
      const std::string m = e.what();
      if (last) {
        CHECK_THAT(m, Catch::Contains(own));
      } else {
        CHECK_THAT(m, Catch::Contains("ranks"));
        CHECK_THAT(m, Catch::Contains("with arguments it refused"));
      }
    }
  };
  refused_by_last([&] { d::reduce_scatter(xf::ones({last ? 2 * size() + 1 : 2 * size()})); }, "divisible");
  refused_by_last([&] { d::all_reduce(xf::ones({2}, last ? xf::i64 : xf::f64), d::reduce_op::mean); }, "floating");
  refused_by_last([&] { d::all_gather(last ? xf::ones({4}) : xf::ones({2, 2}), 1); }, "out of range");
  refused_by_last([&] { d::all_to_all(last ? xf::ones({}) : xf::ones({size(), 2}), 0, 1); }, "0-d");
  refused_by_last([&] { d::broadcast(xf::ones({2}), last ? size() : 0); }, "root");
  refused_by_last([&] { d::ppermute(xf::ones({2}), last ? perm_t{{0, 1}, {0, 1}} : perm_t{{0, 1}}); }, "more than once");
  // the communicator is still in step
  CHECK(d::all_reduce(xf::ones({2})).select(0, 0).item<float>() == static_cast<float>(size()));
  // with the checks off, the same call is one message instead of two
  auto& messages = d::detail::config().messages;
  auto before = messages.load();
  d::all_reduce(xf::ones({2}));
  CHECK(messages.load() - before == 2);
  d::set_checks(false);
  before = messages.load();
  d::all_reduce(xf::ones({2}));
  CHECK(messages.load() - before == 1);
  d::set_checks(true);
}

TEST_CASE("collectives return new tensors and accept deferred inputs") {
  const tensor x = xf::ones({1 << 16}) * 3.0 + 1.0;  // large enough to be deferred
  const tensor y = d::all_reduce(x);
  CHECK(y.select(0, 123).item<float>() == 4.0f * static_cast<float>(size()));
  CHECK(x.select(0, 123).item<float>() == 4.0f);
}
