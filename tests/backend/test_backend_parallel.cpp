// The CPU thread pool (backend/parallel.hpp, NOTE: [Threads]): set_num_threads / get_num_threads,
// parallel_for (every task once, small work on the calling thread, no nesting, exceptions),
// concurrent callers, and XFUNC_NUM_THREADS (the [.env3] and [.envbad] cases run as their own
// ctests with that variable set). Also built and run under TSan by scripts/test.sh.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include <xfunc/xfunc.hpp>

#include "../support/bitwise.hpp"

namespace xf = xfunc;
using xfunc_test::bitwise_equal;
using xf::detail::backend::min_parallel_work;
using xf::detail::backend::parallel_for;

namespace {
/// Runs every task of a parallel_for with work above the threshold and counts how often each ran.
std::vector<int> run_counts(std::int64_t n_tasks, std::int64_t work_per_task) {
  std::vector<std::atomic<int>> counts(static_cast<std::size_t>(n_tasks));
  parallel_for(n_tasks, work_per_task, [&](std::int64_t i) { counts[static_cast<std::size_t>(i)].fetch_add(1); });
  std::vector<int> out;
  for (auto& c : counts) out.push_back(c.load());
  return out;
}

}  // namespace

TEST_CASE("set_num_threads and get_num_threads", "[threads][backend]") {
  for (int n : {1, 2, 3, 1}) {
    xf::set_num_threads(n);
    CHECK(xf::get_num_threads() == n);
  }
  CHECK_THROWS_AS(xf::set_num_threads(0), xf::error);
  CHECK_THROWS_WITH(xf::set_num_threads(0), Catch::Contains("xf::set_num_threads") && Catch::Contains("at least 1"));
  CHECK_THROWS_WITH(xf::set_num_threads(-4), Catch::Contains("xf::set_num_threads") && Catch::Contains("-4"));
  CHECK(xf::get_num_threads() == 1);  // unchanged by the failed calls
}

TEST_CASE("parallel_for runs every task exactly once, at every thread count", "[threads][backend]") {
  for (int threads : {1, 2, 3, 5}) {
    xf::set_num_threads(threads);
    for (std::int64_t n : {1, 2, 3, 7, 64, 1000, 4099}) {
      INFO("threads " << threads << ", tasks " << n);
      const auto counts = run_counts(n, min_parallel_work);  // above the threshold
      CHECK(std::all_of(counts.begin(), counts.end(), [](int c) { return c == 1; }));
      const auto small = run_counts(n, 1);  // below it (for n < 65536)
      CHECK(std::all_of(small.begin(), small.end(), [](int c) { return c == 1; }));
    }
    CHECK(run_counts(0, min_parallel_work).empty());
  }
}

TEST_CASE("jobs find the workers spinning or asleep, and run every task either way", "[threads][backend]") {
  // NOTE: [Spinning before sleeping]: back-to-back jobs meet workers still polling; a job after a
  // pause longer than spin_before_sleep meets them asleep on the condition variable
  using xf::detail::backend::spin_before_sleep;
  for (int threads : {2, 3}) {
    xf::set_num_threads(threads);
    for (int round = 0; round < 4; ++round) {
      INFO("threads " << threads << ", round " << round);
      for (int burst = 0; burst < 50; ++burst) {
        const auto counts = run_counts(7, min_parallel_work);
        REQUIRE(std::all_of(counts.begin(), counts.end(), [](int c) { return c == 1; }));
      }
      std::this_thread::sleep_for(3 * spin_before_sleep);
      const auto counts = run_counts(64, min_parallel_work);
      CHECK(std::all_of(counts.begin(), counts.end(), [](int c) { return c == 1; }));
    }
  }
  // a job whose tasks all throw, then one right after it, while the workers are awake
  CHECK_THROWS_AS(parallel_for(8, min_parallel_work, [](std::int64_t) { throw std::runtime_error("task"); }),
                  std::runtime_error);
  const auto counts = run_counts(8, min_parallel_work);
  CHECK(std::all_of(counts.begin(), counts.end(), [](int c) { return c == 1; }));
}

TEST_CASE("small work runs in order on the calling thread", "[threads][backend]") {
  xf::set_num_threads(3);
  const std::thread::id me = std::this_thread::get_id();
  std::vector<std::int64_t> order;
  bool elsewhere = false;
  parallel_for(100, (min_parallel_work - 1) / 100, [&](std::int64_t i) {
    order.push_back(i);  // unsynchronised on purpose: TSan would see another thread
    elsewhere = elsewhere || std::this_thread::get_id() != me;
  });
  CHECK_FALSE(elsewhere);
  REQUIRE(order.size() == 100);
  for (std::int64_t i = 0; i < 100; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
  // one thread: in order on this thread, however large
  xf::set_num_threads(1);
  order.clear();
  parallel_for(50, min_parallel_work, [&](std::int64_t i) {
    order.push_back(i);
    elsewhere = elsewhere || std::this_thread::get_id() != me;
  });
  CHECK_FALSE(elsewhere);
  CHECK(order.size() == 50);
}

TEST_CASE("a nested parallel_for runs inside its task, on that task's thread", "[threads][backend]") {
  xf::set_num_threads(3);
  std::atomic<int> wrong_thread{0}, total{0};
  parallel_for(16, min_parallel_work, [&](std::int64_t) {
    const std::thread::id outer = std::this_thread::get_id();
    parallel_for(32, min_parallel_work, [&](std::int64_t) {
      if (std::this_thread::get_id() != outer) wrong_thread.fetch_add(1);
      total.fetch_add(1);
    });
  });
  CHECK(wrong_thread.load() == 0);
  CHECK(total.load() == 16 * 32);
}

TEST_CASE("an exception thrown in a task reaches the caller; the pool still works", "[threads][backend]") {
  for (int threads : {1, 2, 3}) {
    xf::set_num_threads(threads);
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH(parallel_for(200, min_parallel_work,
                                   [&](std::int64_t i) {
                                     ran.fetch_add(1);
                                     if (i == 137) throw std::runtime_error("task 137 failed");
                                   }),
                      "task 137 failed");
    CHECK(ran.load() <= 200);  // (tasks not started when 137 threw are skipped)
    if (threads == 1) CHECK(ran.load() == 138);  // in order, up to the one that threw
    const auto counts = run_counts(300, min_parallel_work);
    CHECK(std::all_of(counts.begin(), counts.end(), [](int c) { return c == 1; }));
  }
  // an xf::error from a kernel's task, through an op: an index out of range in a large gather
  xf::set_num_threads(2);
  xf::tensor t = xf::randn({512, 512});
  xf::tensor idx = xf::zeros({512, 512}, xf::i64);
  idx.impl()->data<std::int64_t>()[300 * 512 + 7] = 512;
  CHECK_THROWS_WITH(xf::gather(t, 1, idx), Catch::Contains("xf::gather: index 512 is out of range"));
}

TEST_CASE("set_num_threads inside a parallel task is refused", "[threads][backend]") {
  xf::set_num_threads(2);
  std::atomic<int> refused{0};
  parallel_for(4, min_parallel_work, [&](std::int64_t) {
    try {
      xf::set_num_threads(1);
    } catch (const xf::error& e) {
      if (std::strstr(e.what(), "xf::set_num_threads") && std::strstr(e.what(), "inside a parallel task")) ++refused;
    }
  });
  CHECK(refused.load() == 4);
  CHECK(xf::get_num_threads() == 2);
}

TEST_CASE("concurrent callers from several user threads get correct results", "[threads][backend]") {
  xf::set_num_threads(2);
  const xf::tensor a = xf::randn({517, 517});
  const xf::tensor x = xf::randn({1 << 18});
  // references, computed alone
  const xf::tensor ref_t = a.t().contiguous(), ref_p = x * 2.0 + 1.0, ref_e = xf::exp(x);
  const xf::tensor ref_s = xf::sum(a.t() + a, {1});
  std::atomic<int> failures{0};
  std::vector<std::thread> users;
  for (int u = 0; u < 4; ++u)
    users.emplace_back([&] {
      for (int r = 0; r < 5; ++r) {
        if (!bitwise_equal(a.t().contiguous(), ref_t)) ++failures;
        if (!bitwise_equal(x * 2.0 + 1.0, ref_p)) ++failures;
        if (!bitwise_equal(xf::exp(x), ref_e)) ++failures;
        if (!bitwise_equal(xf::sum(a.t() + a, {1}), ref_s)) ++failures;
      }
    });
  for (auto& t : users) t.join();
  CHECK(failures.load() == 0);
}

TEST_CASE("XFUNC_NUM_THREADS=3 sets the default", "[.env3]") { CHECK(xf::get_num_threads() == 3); }

TEST_CASE("a bad XFUNC_NUM_THREADS is an error", "[.envbad]") {
  CHECK_THROWS_AS(xf::get_num_threads(), xf::error);
  CHECK_THROWS_WITH(xf::get_num_threads(), Catch::Contains("XFUNC_NUM_THREADS") && Catch::Contains("at least 1"));
  // every use of the pool reports it: large kernels, and set_num_threads too
  const xf::tensor a = xf::zeros({512, 512});
  CHECK_THROWS_WITH(a.t().contiguous(), Catch::Contains("XFUNC_NUM_THREADS"));
  CHECK_THROWS_WITH(xf::set_num_threads(2), Catch::Contains("XFUNC_NUM_THREADS"));
  // small kernels never touch the pool
  CHECK(xf::allclose(xf::zeros({4, 3}).t().contiguous(), xf::zeros({3, 4})));
}
