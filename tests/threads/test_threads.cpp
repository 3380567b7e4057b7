// Concurrency: transforms on several threads are independent and correct. Run under TSan by
// scripts/test.sh (build/tsan).
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

namespace {
// d/dx [ x * d/dy (x + y) ] = 1: a shared-state bug would confuse the two levels
double confusion_case(double x0) {
  auto outer = [](const xf::tensor& x) {
    auto inner = [&](const xf::tensor& y) { return x + y; };
    return x * xf::grad(inner)(xf::scalar(1.0));
  };
  return xf::grad(outer)(xf::scalar(x0)).item<double>();
}

bool per_example_grads_ok(int seed) {
  xf::tensor w = xf::tensor{0.5, -1.0, 2.0} * static_cast<double>(seed % 3 + 1);
  xf::tensor xs = xf::arange(0.0, 12.0, 1.0, xf::f64).reshape({4, 3}) * (0.1 * seed);
  auto loss = [](const xf::tensor& wt, const xf::tensor& x) { return xf::square(xf::sum(wt * x)); };
  xf::tensor got = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0))(w, xs);
  xf::tensor expect = 2.0 * xf::sum(w * xs, {1}, true) * xs;
  return xf::allclose(got, expect);
}
}  // namespace

TEST_CASE("many threads run nested transforms at once", "[threads]") {
  constexpr int n_threads = 8, reps = 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < n_threads; ++t)
    ts.emplace_back([t, &failures] {
      for (int r = 0; r < reps; ++r) {
        if (std::abs(confusion_case(1.0 + t) - 1.0) > 1e-12) ++failures;
        if (!per_example_grads_ok(t + r)) ++failures;
        xf::tensor x{0.3 * t, 0.1 * r};
        auto h = xf::hessian([](const xf::tensor& v) { return xf::sum(v * v * v); })(x);
        if (!xf::allclose(h, xf::tensor{{6.0 * x.select(0, 0).item<double>(), 0.0},
                                        {0.0, 6.0 * x.select(0, 1).item<double>()}}))
          ++failures;
        if (xf::layers::depth() != 0) ++failures;
      }
    });
  for (auto& th : ts) th.join();
  CHECK(failures == 0);
}

TEST_CASE("a fresh thread sees no layers while another is inside a transform", "[threads]") {
  std::mutex mu;
  std::condition_variable cv;
  bool inside = false, checked = false;
  std::size_t depth_seen_inside = 99, depth_other = 99;
  std::thread a([&] {
    xf::grad([&](const xf::tensor& x) {
      depth_seen_inside = xf::layers::depth();
      std::unique_lock<std::mutex> lock(mu);
      inside = true;
      cv.notify_all();
      cv.wait(lock, [&] { return checked; });
      return xf::sum(x);
    })(xf::tensor{1.0});
  });
  std::thread b([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return inside; });
    depth_other = xf::layers::depth();
    checked = true;
    cv.notify_all();
  });
  a.join();
  b.join();
  CHECK(depth_seen_inside == 1);
  CHECK(depth_other == 0);
}

TEST_CASE("random draws and the fallback warning are thread-safe", "[threads]") {
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int r = 0; r < 10; ++r) {
        auto y = xf::vmap([](const xf::tensor& a) { return a + xf::randn({3}, xf::f64); }, xf::randomness::different)(
            xf::zeros({5, 3}, xf::f64));
        if (y.shape() != xf::shape_t{5, 3}) ++failures;
      }
    });
  for (auto& th : ts) th.join();
  CHECK(failures == 0);
}

namespace {
struct cube : xf::autograd::function<cube> {
  static xf::tensor forward(const xf::tensor& x) { return x * x * x; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<xf::tensor>& in, const xf::tensor&) {
    ctx.save_for_backward(std::get<0>(in));
  }
  static xf::tensor backward(xf::autograd::context& ctx, const xf::tensor& g) {
    xf::tensor x = ctx.saved_tensors()[0];
    return g * 3.0 * x * x;
  }
  static constexpr bool generate_vmap_rule = true;
};
}  // namespace

TEST_CASE("custom ops and functions: concurrent calls under transforms and re-registration", "[threads]") {
  auto make = [](double scale) {
    auto op = xf::custom_op("xfthreads::scale", [scale](const xf::tensor& x) { return x * scale; });
    op.register_autograd([scale](xf::autograd::context&, const xf::tensor& g) { return g * scale; },
                         [](xf::autograd::context&, const std::tuple<xf::tensor>&, const xf::tensor&) {});
    return op;
  };
  auto op = make(2.0);
  std::atomic<int> failures{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 6; ++t)
    ts.emplace_back([&, t] {
      xf::tensor xs = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({2, 3}) * (0.1 * (t + 1));
      for (int r = 0; r < 15; ++r) {
        // the registered scale is 2 or 3 at any moment: the gradient is one of them, never mixed
        // (between custom_op and register_autograd the op briefly has no formula: that throws)
        xf::tensor g;
        try {
          g = xf::vmap(xf::grad([&](const xf::tensor& x) { return xf::sum(op(x)); }))(xs);
        } catch (const xf::error& e) {
          if (std::string(e.what()).find("no derivative formula") == std::string::npos) ++failures;
          continue;
        }
        const double s = g.select(0, 0).select(0, 0).item<double>();
        if ((s != 2.0 && s != 3.0) || !xf::allclose(g, xf::full({2, 3}, s, xf::f64))) ++failures;
        xf::tensor gc = xf::grad([&](const xf::tensor& x) { return xf::sum(xf::vmap(cube::apply<xf::tensor>)(x)); })(xs);
        if (!xf::allclose(gc, xs * xs * 3.0)) ++failures;
      }
    });
  std::thread writer([&] {
    for (int r = 0; r < 10; ++r) make(r % 2 ? 2.0 : 3.0);
  });
  for (auto& t : ts) t.join();
  writer.join();
  CHECK(failures == 0);
}

TEST_CASE("deferred pointwise results shared between threads", "[threads][deferred]") {
  // Several threads build programs on the same deferred tensor, read it, and write into a leaf
  // of another deferred tensor at once (NOTE: [Deferred elementwise]).
  const std::int64_t prev = xf::detail::set_deferred_min_numel(1024);
  const std::int64_t n = 20000;
  xf::tensor x = xf::randn({n}, xf::f64);
  const xf::tensor x0 = x.clone();
  xf::tensor shared = xf::exp(x * 0.5);
  xf::tensor before_write = x + 1.0;
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r) {
        xf::tensor mine = shared * static_cast<double>(t + 1) + 1.0;
        const double got = xf::sum(mine).item<double>();
        const double want = xf::sum(xf::exp(x0 * 0.5)).item<double>() * (t + 1) + static_cast<double>(n);
        if (std::abs(got - want) > 1e-6 * std::abs(want)) ++failures;
      }
      if (t == 0) x.mul_(2.0);  // a write into a leaf of `before_write` while others read
    });
  for (auto& th : pool) th.join();
  CHECK(failures == 0);
  CHECK(xf::allclose(before_write, x0 + 1.0));
  xf::detail::set_deferred_min_numel(prev);
}

TEST_CASE("tensors and grad graphs made on one thread are released on another", "[threads][pool]") {
  // Small objects come from per-thread free lists (NOTE: [Small-object pool]); a block freed on
  // another thread joins that thread's list, and a finished thread hands its lists back.
  std::vector<xf::tensor> made;
  std::mutex m;
  std::vector<std::thread> makers;
  for (int t = 0; t < 3; ++t)
    makers.emplace_back([&, t] {
      std::vector<xf::tensor> mine;
      for (int i = 0; i < 200; ++i) {
        xf::tensor x = xf::full({2}, static_cast<double>(t + i), xf::f64);
        mine.push_back(xf::vjp([](const xf::tensor& v) { return xf::sin(v) * v; }, x).first);
      }
      std::lock_guard<std::mutex> lock(m);
      for (auto& x : mine) made.push_back(std::move(x));
    });
  for (auto& th : makers) th.join();  // the makers' lists are drained at their exit
  std::thread consumer([&] {
    double total = 0;
    for (const auto& x : made) total += xf::sum(x).item<double>();
    CHECK(std::isfinite(total));
    made.clear();  // freed on this thread
  });
  consumer.join();
  CHECK(made.empty());
}

TEST_CASE("escaped tensors are read on one thread while their layers are reused on another", "[threads][escape]") {
  // Layers are recycled with new levels (NOTE: [Levels and life handles]); a wrapper that escaped
  // reads its layer's liveness and level while another thread's transforms reuse that layer.
  std::vector<xf::tensor> escaped;
  for (int i = 0; i < 50; ++i)
    (void)xf::grad([&](const xf::tensor& x) {
      escaped.push_back(x * 2.0);
      return xf::sum(x);
    })(xf::full({2}, static_cast<double>(i), xf::f64));
  std::atomic<bool> stop{false};
  std::thread reuser([&] {
    while (!stop.load()) (void)xf::grad([](const xf::tensor& x) { return xf::sum(x * x); })(xf::ones({2}, xf::f64));
  });
  std::thread reader([&] {
    for (int round = 0; round < 20; ++round)
      for (int i = 0; i < 50; ++i) CHECK(xf::sum(escaped[static_cast<std::size_t>(i)] + 1.0).item<double>() == 2 * (2.0 * i + 1.0));
  });
  reader.join();
  stop = true;
  reuser.join();
}
