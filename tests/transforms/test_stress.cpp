// Long runs: many thousands of randomly nested transform calls in one process (state that
// outlives a call, such as recycled layers, pooled objects, cached buffers and stale views,
// must not leak into the next one; the suite runs this under ASan too), and graphs far deeper
// than the call stack (recorded, differentiated and destroyed without recursion).
#include <pthread.h>

#include <cstdlib>
#include <functional>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

namespace {
using fn = std::function<xf::tensor(const xf::tensor&)>;

// Functions R^n -> R^n built from ops of every family (smooth where the samples are).
const xf::tensor mix{{0.5, -0.2, 0.1, 0.3}, {0.1, 0.4, -0.3, 0.2}, {-0.2, 0.1, 0.6, 0.1}, {0.3, 0.2, 0.1, -0.5}};
std::vector<std::pair<std::string, fn>> bases() {
  return {
      {"sin(x) * x", [](const xf::tensor& x) { return xf::sin(x) * x; }},
      {"x * norm(x)", [](const xf::tensor& x) { return x * xf::norm(x); }},
      {"softmax(x) * sum(x)", [](const xf::tensor& x) { return xf::softmax(x, 0) * xf::sum(x); }},
      {"matmul(M, tanh(x))", [](const xf::tensor& x) { return xf::matmul(mix.to(x.dtype()), xf::tanh(x)); }},
      {"exp(x - amax(x)) via a buffer",
       [](const xf::tensor& x) {
         xf::tensor r = xf::zeros_like(x);
         r.add_(xf::exp(x - xf::amax(x, {0}, true)));
         r.narrow(0, 0, 2).mul_(x.narrow(0, 2, 2));
         return r;
       }},
      {"cumulative via cat", [](const xf::tensor& x) {
         return xf::cat({x.narrow(0, 0, 1), x.narrow(0, 1, 3) + x.narrow(0, 0, 3) * 0.5}, 0) * xf::mean(x * x);
       }},
  };
}

// One transform applied to an R^n -> R^n function, giving another.
enum class step { grad, jvp, vjp, vmap, functionalize, jacrev_diag };
const char* name_of(step s) {
  switch (s) {
    case step::grad: return "grad(sum f)";
    case step::jvp: return "jvp(f, ones)";
    case step::vjp: return "vjp(f)(ones)";
    case step::vmap: return "vmap(f) over 2 copies, summed";
    case step::functionalize: return "functionalize(f)";
    case step::jacrev_diag: return "diagonal(jacrev(f))";
  }
  return "?";
}
fn apply(step s, fn f) {
  switch (s) {
    case step::grad: return [f](const xf::tensor& x) { return xf::grad([f](const xf::tensor& t) { return xf::sum(f(t)); })(x); };
    case step::jvp: return [f](const xf::tensor& x) { return xf::jvp(f, x, xf::ones_like(x)).second; };
    case step::vjp:
      return [f](const xf::tensor& x) {
        auto [out, pullback] = xf::vjp(f, x);
        return std::get<0>(pullback(xf::ones_like(out)));
      };
    case step::vmap:
      return [f](const xf::tensor& x) {
        xf::tensor b = xf::vmap(f)(xf::stack({x, x * 0.5}, 0));
        return b.select(0, 0) + b.select(0, 1);
      };
    case step::functionalize: return [f](const xf::tensor& x) { return xf::functionalize(f)(x); };
    case step::jacrev_diag: return [f](const xf::tensor& x) { return xf::jacrev(f)(x).diagonal(); };
  }
  return f;
}

std::size_t iterations() {
  if (const char* e = std::getenv("XFUNC_STRESS_ITERATIONS")) return static_cast<std::size_t>(std::atol(e));
  return 300;
}

void same(const xf::tensor& got, const xf::tensor& expect) {
  REQUIRE(got.shape() == expect.shape());
  CHECK(xf::allclose(got, expect, 1e-9, 1e-9));
}
}  // namespace

TEST_CASE("thousands of randomly nested transform calls in one process", "[stress]") {
  const auto fs = bases();
  std::mt19937 rng(20261201);
  const xf::tensor x = xf::tensor{0.3, -0.7, 0.5, 0.2};
  const xf::tensor xs = xf::stack({x, x * -0.5, x + 0.25}, 0);
  const std::size_t n = iterations();
  for (std::size_t it = 0; it < n; ++it) {
    const auto& [base_name, base] = fs[rng() % fs.size()];
    fn f = base;
    std::string label = base_name;
    const std::size_t depth = 1 + rng() % 3;
    for (std::size_t d = 0; d < depth; ++d) {
      const auto s = static_cast<step>(rng() % 6);
      f = apply(s, f);
      label = std::string(name_of(s)) + " of " + label;
    }
    INFO("iteration " << it << ": " << label);
    const xf::tensor y = f(x);
    REQUIRE(y.shape() == x.shape());
    // vmap of the whole stack against a loop
    same(xf::vmap(f)(xs), xf::stack({f(xs.select(0, 0)), f(xs.select(0, 1)), f(xs.select(0, 2))}, 0));
    // reverse and forward jacobians agree (sum's jvp inside vjp of grad, among others)
    if (it % 3 == 0) same(xf::jacrev(f)(x), xf::jacfwd(f)(x));
    REQUIRE(xf::layers::depth() == 0);
  }
}

namespace {
// Runs fn on a thread with a small stack, so that recursion proportional to a graph's length
// would overflow it (and crash the test) long before 100000 levels.
void on_small_stack(const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);  // 1 MiB (ASan's frames are large; Release ones are small)
  struct arg_t {
    const std::function<void()>* fn;
    std::exception_ptr error;
  } arg{&fn, nullptr};
  pthread_t th;
  REQUIRE(pthread_create(
              &th, &attr,
              [](void* p) -> void* {
                auto* a = static_cast<arg_t*>(p);
                try {
                  (*a->fn)();
                } catch (...) {
                  a->error = std::current_exception();
                }
                return nullptr;
              },
              &arg) == 0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  if (arg.error) std::rethrow_exception(arg.error);
}
}  // namespace

TEST_CASE("graphs of 100000 ops are differentiated and destroyed without deep recursion", "[grad][long]") {
#if XFUNC_DETAIL_ASAN
  // 20000 levels in 1 MiB is 52 bytes a level, less than any frame of an ASan build: recursion
  // would still overflow the stack, and the test takes 8 s there instead of 40
  constexpr int n = 20000;
#else
  constexpr int n = 100000;
#endif
  auto chain = [](const xf::tensor& x) {
    xf::tensor y = x;
    for (int i = 0; i < n; ++i) y = y * 1.00001 + 1e-6;
    return xf::sum(y);
  };
  const xf::tensor x{0.5, -1.0};
  bool done = false;
  on_small_stack([&] {
    // backward through the chain, then the graph is released
    xf::tensor g = xf::grad(chain)(x);
    CHECK(xf::allclose(g, xf::full({2}, std::pow(1.00001, n), xf::f64), 1e-9));
    // a pullback that is never called: its graph is destroyed unused
    {
      auto vp = xf::vjp(chain, x);
      CHECK(vp.first.dim() == 0);
    }
    // an output that escaped the transform keeps the whole graph alive until it is dropped
    xf::tensor escaped;
    (void)xf::grad([&](const xf::tensor& t) {
      escaped = chain(t);
      return escaped;
    })(x);
    escaped = xf::tensor();
    // forward mode over the chain
    auto [o, t] = xf::jvp(chain, x, xf::ones_like(x));
    CHECK(t.item<double>() == Approx(2 * std::pow(1.00001, n)));
    done = true;
  });
  CHECK(done);
  // grad of grad: the inner backward pass is itself recorded by the outer grad
  bool nested = false;
  on_small_stack([&] {
    auto inner = [](const xf::tensor& t) {
      xf::tensor y = t;
      for (int i = 0; i < 20000; ++i) y = xf::sin(y) * 0.5 + y * 0.5;
      return xf::sum(y);
    };
    xf::tensor h = xf::grad([&](const xf::tensor& t) { return xf::sum(xf::grad(inner)(t)); })(x);
    CHECK(h.shape() == x.shape());
    nested = true;
  });
  CHECK(nested);
}

namespace {
// An op whose derivative rules give results of the wrong shape (a reduction over every dim where
// none was asked), as the jvp of norm under vmap once did: the interpreters must report it
// rather than pass a wrong-rank tangent on to later rules (whose kernels then read past buffers).
template <class = void>
struct wrong_rules_op_t {
  static constexpr const char* name = "xftest::wrong_rules";
  using attrs = xf::detail::no_attrs;
  static xf::tensor kernel(std::span<const xf::tensor> in, const attrs&) {
    return xf::detail::call<xf::detail::clone_op>({}, in[0]);
  }
  static xf::detail::tensor_list vjp(std::span<const xf::tensor>, const xf::tensor&, const xf::tensor& g, const attrs&) {
    return {xf::sum(g)};
  }
  static xf::tensor jvp(std::span<const xf::tensor>, std::span<const xf::tensor> t, const xf::tensor&, const attrs&) {
    return xf::sum(t[0]);
  }
};
xf::tensor wrong_rules(const xf::tensor& x) { return xf::detail::call<wrong_rules_op_t<>>({}, x); }
}  // namespace

TEST_CASE("a derivative rule of the wrong shape is reported, not passed on", "[rules][errors]") {
  const xf::tensor x{0.5, -1.0, 2.0};
  CHECK_THROWS_WITH(xf::jvp(wrong_rules, x, xf::ones_like(x)),
                    Catch::Contains("internal error: the jvp rule of xftest::wrong_rules") && Catch::Contains("[3]"));
  CHECK_THROWS_WITH(xf::grad([](const xf::tensor& t) { return xf::sum(wrong_rules(t)); })(x),
                    Catch::Contains("internal error: the vjp rule of xftest::wrong_rules"));
  // and a reduction kernel given a dim its input does not have throws instead of reading past it
  CHECK_THROWS_WITH((xf::detail::call<xf::detail::sum_op>({{1}, false}, xf::scalar(1.0))),
                    Catch::Contains("internal error: reduction dim 1"));
  CHECK(xf::layers::depth() == 0);
}
