#pragma once
// NOTE: [Fuzzer]
// The differential fuzzer: a random program (tests/fuzz/generate.hpp) under a random stack of
// 1-3 transforms from grad, vjp, jvp, vmap (random in_dims, out_dims and batch size), jacrev,
// jacfwd, hessian, functionalize and make_fx. Every level of the stack is checked against an
// oracle that needs no second implementation, computed from the level below it:
//   grad, vjp   <g, d> against central finite differences in float64 of the scalarised function
//               (against jvp where the program has kinks: relu, abs, max, where, ..., or where
//               the level is a third derivative or higher: there differences are mostly rounding)
//   jvp         against central finite differences (against <vjp(c), t> = <c, jvp(t)> with kinks)
//   jacrev      equal to jacfwd, and J d against finite differences; jacfwd likewise
//   hessian     equal to jacrev(jacrev), and H d against finite differences of the gradient
//   vmap        equal to a loop over the batch, stacked along out_dim
//   functionalize, make_fx   equal to running the function (make_fx: the graph replayed, also on
//               new inputs)
// and the whole stack gives bitwise the same result with 1 and 2 threads. Every value's shape is
// also checked against the generator's own shape rules. A failure is shrunk (outer levels,
// inner levels, steps) while it still fails the same way, and printed as a reproducer.
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/generate.hpp"
#include "support/bitwise.hpp"

namespace fuzz {

using fn_t = std::function<tensor(const std::vector<tensor>&)>;

enum class tf { grad, vjp, jvp, vmap, jacrev, jacfwd, hessian, functionalize, make_fx };

struct level {
  tf kind = tf::grad;
  int arg = 0;                                       // the input it differentiates
  std::vector<std::optional<std::int64_t>> in_dims;  // vmap
  std::int64_t out_dim = 0;                          // vmap
  std::int64_t batch = 2;                            // vmap
};

inline std::string describe(const level& L) {
  static const char* names[] = {"grad", "vjp", "jvp", "vmap", "jacrev", "jacfwd", "hessian", "functionalize", "make_fx"};
  std::ostringstream os;
  os << names[static_cast<int>(L.kind)];
  switch (L.kind) {
    case tf::vmap:
      os << "(in_dims(";
      for (std::size_t k = 0; k < L.in_dims.size(); ++k)
        os << (k ? ", " : "") << (L.in_dims[k] ? std::to_string(*L.in_dims[k]) : "none");
      os << "), out_dims(" << L.out_dim << "), batch " << L.batch << ")";
      break;
    case tf::functionalize: case tf::make_fx: break;
    default: os << "(argnum " << L.arg << ")";
  }
  return os.str();
}
inline std::string describe(const std::vector<level>& stack) {
  std::string s;
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) s += (s.empty() ? "" : " of ") + describe(*it);
  return s + " of f";
}

// ---- building the transformed functions -----------------------------------------------------

/// Fixed weights of y's (logical) shape: made inside the function, so they follow vmap.
inline tensor weights_like(const tensor& y) {
  return xf::cos(xf::arange(0, static_cast<double>(y.numel()), 1, xf::f64) * 0.7 + 0.3).reshape(y.shape());
}
inline tensor direction_like(const tensor& x) {
  return xf::sin(xf::arange(0, static_cast<double>(x.numel()), 1, xf::f64) * 1.3 + 0.5).reshape(x.shape());
}
/// A scalar from any output: <y, weights>.
inline tensor scalarize(const tensor& y) { return xf::sum(y * weights_like(y)); }

/// F with argument k replaced (the function of one tensor that transforms differentiate).
inline auto partial(const fn_t& F, const std::vector<tensor>& xs, int k) {
  return [F, xs, k](const tensor& xk) {
    std::vector<tensor> ys = xs;
    ys[static_cast<std::size_t>(k)] = xk;
    return F(ys);
  };
}

/// F as a function of n positional tensors, wrapped by a transform that maps or traces every
/// argument, and called on xs.
template <class Tf>
tensor with_arity(const fn_t& F, Tf&& wrap, const std::vector<tensor>& xs) {
  switch (xs.size()) {
    case 1: return wrap([F](const tensor& a) { return F({a}); })(xs[0]);
    case 2: return wrap([F](const tensor& a, const tensor& b) { return F({a, b}); })(xs[0], xs[1]);
    case 3: return wrap([F](const tensor& a, const tensor& b, const tensor& c) { return F({a, b, c}); })(xs[0], xs[1], xs[2]);
    default:
      return wrap([F](const tensor& a, const tensor& b, const tensor& c, const tensor& d) { return F({a, b, c, d}); })(
          xs[0], xs[1], xs[2], xs[3]);
  }
}

inline tensor vmap_call(const fn_t& F, const level& L, const std::vector<tensor>& xs) {
  auto dims = L.in_dims;
  switch (xs.size()) {
    case 1: return xf::vmap([F](const tensor& a) { return F({a}); }, xf::in_dims(dims[0]), xf::out_dims(L.out_dim))(xs[0]);
    case 2:
      return xf::vmap([F](const tensor& a, const tensor& b) { return F({a, b}); }, xf::in_dims(dims[0], dims[1]),
                      xf::out_dims(L.out_dim))(xs[0], xs[1]);
    case 3:
      return xf::vmap([F](const tensor& a, const tensor& b, const tensor& c) { return F({a, b, c}); },
                      xf::in_dims(dims[0], dims[1], dims[2]), xf::out_dims(L.out_dim))(xs[0], xs[1], xs[2]);
    default:
      return xf::vmap([F](const tensor& a, const tensor& b, const tensor& c, const tensor& d) { return F({a, b, c, d}); },
                      xf::in_dims(dims[0], dims[1], dims[2], dims[3]), xf::out_dims(L.out_dim))(xs[0], xs[1], xs[2], xs[3]);
  }
}

inline xf::graph trace(const fn_t& F, const std::vector<tensor>& xs) {
  switch (xs.size()) {
    case 1: return xf::make_fx([F](const tensor& a) { return F({a}); })(xs[0]);
    case 2: return xf::make_fx([F](const tensor& a, const tensor& b) { return F({a, b}); })(xs[0], xs[1]);
    case 3: return xf::make_fx([F](const tensor& a, const tensor& b, const tensor& c) { return F({a, b, c}); })(xs[0], xs[1], xs[2]);
    default:
      return xf::make_fx([F](const tensor& a, const tensor& b, const tensor& c, const tensor& d) { return F({a, b, c, d}); })(
          xs[0], xs[1], xs[2], xs[3]);
  }
}
inline tensor replay(const xf::graph& g, const std::vector<tensor>& xs) {
  switch (xs.size()) {
    case 1: return g(xs[0])[0];
    case 2: return g(xs[0], xs[1])[0];
    case 3: return g(xs[0], xs[1], xs[2])[0];
    default: return g(xs[0], xs[1], xs[2], xs[3])[0];
  }
}

/// The level applied to F.
inline fn_t transformed(const level& L, fn_t F) {
  const int k = L.arg;
  switch (L.kind) {
    case tf::grad:
      return [F, k](const std::vector<tensor>& xs) {
        auto f = partial(F, xs, k);
        return xf::grad([f](const tensor& x) { return scalarize(f(x)); })(xs[static_cast<std::size_t>(k)]);
      };
    case tf::vjp:
      return [F, k](const std::vector<tensor>& xs) {
        auto [out, pull] = xf::vjp(partial(F, xs, k), xs[static_cast<std::size_t>(k)]);
        return std::get<0>(pull(weights_like(out)));
      };
    case tf::jvp:
      return [F, k](const std::vector<tensor>& xs) {
        const tensor& x = xs[static_cast<std::size_t>(k)];
        return xf::jvp(partial(F, xs, k), x, direction_like(x)).second;
      };
    case tf::jacrev:
      return [F, k](const std::vector<tensor>& xs) { return xf::jacrev(partial(F, xs, k))(xs[static_cast<std::size_t>(k)]); };
    case tf::jacfwd:
      return [F, k](const std::vector<tensor>& xs) { return xf::jacfwd(partial(F, xs, k))(xs[static_cast<std::size_t>(k)]); };
    case tf::hessian:
      return [F, k](const std::vector<tensor>& xs) {
        auto f = partial(F, xs, k);
        return xf::hessian([f](const tensor& x) { return scalarize(f(x)); })(xs[static_cast<std::size_t>(k)]);
      };
    case tf::vmap:
      return [F, L](const std::vector<tensor>& xs) { return vmap_call(F, L, xs); };
    case tf::functionalize:
      return [F](const std::vector<tensor>& xs) {
        return with_arity(F, [](auto f) { return xf::functionalize(f); }, xs);
      };
    case tf::make_fx:
      return [F](const std::vector<tensor>& xs) { return replay(trace(F, xs), xs); };
  }
  return F;
}

// ---- oracles ----------------------------------------------------------------------------------

struct failure {
  std::string kind;    // what disagreed (shrinking keeps this the same)
  std::string detail;  // the numbers
};

inline bool finite(const tensor& t) {
  if (t.numel() == 0) return true;
  const auto v = xf::to_xtensor<double>(t.to(xf::f64));
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}
inline double dot(const tensor& a, const tensor& b) { return xf::sum(a * b).item<double>(); }
inline bool near(double a, double b, double rtol, double atol) { return std::abs(a - b) <= atol + rtol * std::abs(b); }
inline std::string show(const tensor& a) {
  std::ostringstream os;
  os << a;
  return os.str();
}

constexpr double fd_eps = 1e-6, fd_rtol = 1e-3, fd_atol = 1e-5;  // gradcheck's (API section 5)
// Finite differences also lose |f| * 2^-52 / eps to rounding: a function of magnitude 4e6 with a
// zero derivative gives a difference quotient of 4e-4 (found by a long run).
constexpr double fd_roundoff = 1e-9;
// The same math in another order (jacrev against jacfwd, vmap against a loop): differences
// that cancel to 1e-8 after several levels of differentiation keep only a few digits.
constexpr double tight_rtol = 1e-7, tight_atol = 1e-7;
inline double max_abs(const tensor& t) {
  return t.numel() == 0 ? 0.0 : xf::amax(xf::abs(t).reshape({-1}), {0}).item<double>();
}

/// Checks level L (G = L applied to F) at inputs xs (G's inputs); nullopt when it holds. `smooth`:
/// finite differences apply (no kinks, and not too many derivatives deep).
inline std::optional<failure> check_level(const level& L, const fn_t& F, const fn_t& G, const std::vector<tensor>& xs,
                                          bool smooth, const std::vector<tensor>& other_xs) {
  const tensor g = G(xs);
  if (!finite(g)) return std::nullopt;  // (domain edge: not a verdict)
  const auto k = static_cast<std::size_t>(L.arg);
  switch (L.kind) {
    case tf::grad: case tf::vjp: {
      const tensor& x = xs[k];
      const tensor d = direction_like(x);
      auto S = [&](const tensor& xk) {
        std::vector<tensor> ys = xs;
        ys[k] = xk;
        return scalarize(F(ys)).item<double>();
      };
      const double lhs = dot(g, d);
      if (smooth) {
        const double up = S(x + fd_eps * d), down = S(x - fd_eps * d), fd = (up - down) / (2 * fd_eps);
        if (!near(lhs, fd, fd_rtol, fd_atol + fd_roundoff * std::max(std::abs(up), std::abs(down))))
          return failure{"gradient vs finite differences", "<g, d> = " + std::to_string(lhs) + ", finite differences " + std::to_string(fd)};
      } else {
        auto f = partial(F, xs, L.arg);
        const double t = xf::jvp([&](const tensor& xk) { return scalarize(f(xk)); }, x, d).second.item<double>();
        if (!near(lhs, t, tight_rtol, tight_atol))
          return failure{"gradient vs jvp", "<g, d> = " + std::to_string(lhs) + ", jvp " + std::to_string(t)};
      }
      return std::nullopt;
    }
    case tf::jvp: {
      const tensor& x = xs[k];
      const tensor d = direction_like(x);
      auto f = partial(F, xs, L.arg);
      if (smooth) {
        const tensor up = f(x + fd_eps * d), down = f(x - fd_eps * d), fd = (up - down) / (2 * fd_eps);
        const double atol = fd_atol + fd_roundoff * std::max(max_abs(up), max_abs(down));
        if (!xf::allclose(g, fd, fd_rtol, atol)) return failure{"jvp vs finite differences", show(g) + " vs " + show(fd)};
      } else {
        auto [out, pull] = xf::vjp(f, x);
        const tensor c = weights_like(out);
        const double a = dot(c, g), b = dot(std::get<0>(pull(c)), d);
        if (!near(a, b, tight_rtol, tight_atol))
          return failure{"jvp vs vjp", "<c, jvp(d)> = " + std::to_string(a) + ", <vjp(c), d> = " + std::to_string(b)};
      }
      return std::nullopt;
    }
    case tf::jacrev: case tf::jacfwd: case tf::hessian: {
      const tensor& x = xs[k];
      auto f = partial(F, xs, L.arg);
      auto s = [f](const tensor& v) { return scalarize(f(v)); };
      const tensor other = L.kind == tf::jacrev   ? xf::jacfwd(f)(x)
                           : L.kind == tf::jacfwd ? xf::jacrev(f)(x)
                                                  : xf::jacrev(xf::jacrev(s))(x);
      if (!(other.shape() == g.shape()) || !xf::allclose(g, other, tight_rtol, tight_atol))
        return failure{L.kind == tf::hessian ? "hessian vs jacrev(jacrev)" : "jacrev vs jacfwd", show(g) + " vs " + show(other)};
      if (smooth && x.numel() > 0) {
        const tensor d = direction_like(x);
        const std::int64_t n = x.numel();
        const tensor Jd = xf::matmul(g.reshape({-1, n}), d.reshape({n}));
        const tensor up = L.kind == tf::hessian ? xf::grad(s)(x + fd_eps * d) : f(x + fd_eps * d);
        const tensor down = L.kind == tf::hessian ? xf::grad(s)(x - fd_eps * d) : f(x - fd_eps * d);
        const tensor fd = (up - down) / (2 * fd_eps);
        const double atol = fd_atol + fd_roundoff * std::max(max_abs(up), max_abs(down));
        if (!xf::allclose(Jd, fd.reshape({-1}), fd_rtol, atol))
          return failure{"jacobian vs finite differences", show(Jd) + " vs " + show(fd)};
      }
      return std::nullopt;
    }
    case tf::vmap: {
      std::vector<tensor> ys;
      for (std::int64_t b = 0; b < L.batch; ++b) {
        std::vector<tensor> slice;
        for (std::size_t j = 0; j < xs.size(); ++j) slice.push_back(L.in_dims[j] ? xs[j].select(*L.in_dims[j], b) : xs[j]);
        ys.push_back(F(slice));
      }
      const tensor loop = xf::stack(ys, L.out_dim);
      if (!(loop.shape() == g.shape()) || !xf::allclose(g, loop, tight_rtol, tight_atol))
        return failure{"vmap vs a loop", show(g) + " vs " + show(loop)};
      return std::nullopt;
    }
    case tf::functionalize: {
      const tensor e = F(xs);
      if (!(e.shape() == g.shape()) || !xf::allclose(g, e, tight_rtol, tight_atol))
        return failure{"functionalize vs eager", show(g) + " vs " + show(e)};
      return std::nullopt;
    }
    case tf::make_fx: {
      const tensor e = F(xs);
      if (!(e.shape() == g.shape()) || !xf::allclose(g, e, tight_rtol, tight_atol))
        return failure{"make_fx replay vs eager", show(g) + " vs " + show(e)};
      const tensor r = replay(trace(F, xs), other_xs), e2 = F(other_xs);
      if (finite(e2) && (!(e2.shape() == r.shape()) || !xf::allclose(r, e2, tight_rtol, tight_atol)))
        return failure{"make_fx replay on new inputs vs eager", show(r) + " vs " + show(e2)};
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// ---- a case: a program, a stack, inputs --------------------------------------------------------

struct fuzz_case {
  program prog;
  std::vector<level> stack;
  std::uint64_t input_seed = 0;
};

struct stats {
  std::uint64_t programs = 0, checks = 0, thread_checks = 0, nonfinite = 0, restricted = 0, failures = 0;
};

/// Errors the API documents for what a random program may do: an in-place write of a value of a
/// transform into a tensor made only from captured ones (API section 3, "captured"), or of a
/// batched value into an unbatched tensor under vmap ("in-place"), and the 16-dimension limit of
/// a tensor (jacobians of jacobians of rank-3 inputs). They are answers, not bugs.
inline bool documented_restriction(const std::string& what) {
  return what.find("made inside it only from tensors captured from outside") != std::string::npos ||
         what.find("would write a batched value into an unbatched tensor under vmap") != std::string::npos ||
         what.find("tensors have at most 16 dimensions") != std::string::npos;  // a jacobian of a jacobian
}

/// Inputs of every level: tops[i] are level i's inputs (tops[0]: the program's; the last: the
/// whole stack's), from the top down by slicing each vmap level's batch (example 0).
struct level_inputs {
  std::vector<std::vector<tensor>> at;  // at[i]: inputs of the function with i levels applied
};

inline tensor random_tensor(const xf::shape_t& s, bool positive) {
  const tensor u = xf::rand(s, xf::f64);
  return positive ? 0.5 + 1.5 * u : 4.0 * u - 2.0;
}

inline level_inputs inputs_for(const fuzz_case& c, std::uint64_t seed) {
  // shapes seen by the whole stack
  std::vector<xf::shape_t> shapes;
  for (const auto& in : c.prog.inputs) shapes.push_back(in.shape);
  for (const auto& L : c.stack)
    if (L.kind == tf::vmap)
      for (std::size_t j = 0; j < shapes.size(); ++j)
        if (L.in_dims[j]) {
          const auto r = static_cast<std::int64_t>(shapes[j].size()) + 1;
          shapes[j].insert(static_cast<std::size_t>(*L.in_dims[j] < 0 ? *L.in_dims[j] + r : *L.in_dims[j]), L.batch);
        }
  level_inputs li;
  li.at.resize(c.stack.size() + 1);
  if (c.stack.empty() || std::none_of(c.stack.begin(), c.stack.end(), [](const level& L) { return L.kind == tf::vmap; })) {
    li.at.back() = make_inputs(c.prog, seed);  // the program's own layouts
  } else {
    xf::manual_seed(seed);
    for (std::size_t j = 0; j < shapes.size(); ++j) li.at.back().push_back(random_tensor(shapes[j], c.prog.inputs[j].positive));
  }
  for (std::size_t i = c.stack.size(); i-- > 0;) {
    li.at[i] = li.at[i + 1];
    const level& L = c.stack[i];
    if (L.kind == tf::vmap)
      for (std::size_t j = 0; j < li.at[i].size(); ++j)
        if (L.in_dims[j]) li.at[i][j] = li.at[i][j].select(*L.in_dims[j], 0);
  }
  return li;
}

/// The whole stack as one function, with its inputs (for running a case again elsewhere, e.g.
/// on other threads: inputs_for seeds the process-wide generator, so it runs on one thread).
struct prepared {
  fn_t f;
  std::vector<tensor> xs;
};
inline prepared prepare(const fuzz_case& c) {
  const program& p = c.prog;
  fn_t f = [p](const std::vector<tensor>& xs) { return p.run(xs); };
  for (const auto& L : c.stack) f = transformed(L, f);
  return {f, inputs_for(c, c.input_seed).at.back()};
}

/// Runs every level's check (and the thread check); the first failure, with its level.
inline std::optional<std::pair<std::size_t, failure>> run_case(const fuzz_case& c, stats& st, bool threads = true) {
  try {
    const level_inputs li = inputs_for(c, c.input_seed), other = inputs_for(c, c.input_seed + 1);
    const program& p = c.prog;
    std::vector<fn_t> fs{[p](const std::vector<tensor>& xs) { return p.run(xs); }};
    for (const auto& L : c.stack) fs.push_back(transformed(L, fs.back()));
    const tensor base = fs[0](li.at[0]);
    if (!finite(base)) {
      ++st.nonfinite;
      return std::nullopt;
    }
    int order = 0;  // derivatives taken up to this level (hessian: two)
    for (std::size_t i = 0; i < c.stack.size(); ++i) {
      ++st.checks;
      const tf k = c.stack[i].kind;
      order += k == tf::hessian ? 2 : (k == tf::vmap || k == tf::functionalize || k == tf::make_fx) ? 0 : 1;
      // Finite differences of a third or higher derivative are mostly rounding (each level
      // amplifies it by 1 / eps); there the AD-only oracles remain (jvp against vjp, jacrev
      // against jacfwd, hessian against jacrev(jacrev)).
      const bool fd = p.smooth && order <= 2;
      if (auto f = check_level(c.stack[i], fs[i], fs[i + 1], li.at[i + 1], fd, other.at[i + 1])) return std::pair{i, *f};
    }
    if (threads) {
      ++st.thread_checks;
      const int saved = xf::get_num_threads();
      xf::set_num_threads(1);
      const tensor one = fs.back()(li.at.back());
      xf::set_num_threads(2);
      const tensor two = fs.back()(li.at.back());
      xf::set_num_threads(saved);
      if (finite(one) && !xfunc_test::bitwise_equal(one, two))
        return std::pair{c.stack.size(), failure{"1 thread vs 2 threads", show(one) + " vs " + show(two)}};
    }
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (documented_restriction(what)) {
      ++st.restricted;
      return std::nullopt;
    }
    return std::pair{c.stack.size(), failure{"threw: " + what.substr(0, what.find(':', 4)), what}};
  }
  return std::nullopt;
}

// ---- generating a case ------------------------------------------------------------------------

inline fuzz_case make_case(chooser& ch, bool big) {
  fuzz_case c;
  gen_options o;
  if (big) {  // fewer, larger values: past the thread pool's thresholds
    o.max_extent = 48;
    o.max_steps = 5;
    o.empty_percent = 0;
  }
  c.prog = generator(ch, o).make();
  c.input_seed = static_cast<std::uint64_t>(ch.pick(1 << 30));
  const int depth = 1 + ch.pick(3);
  std::vector<xf::shape_t> shapes;
  for (const auto& in : c.prog.inputs) shapes.push_back(in.shape);
  for (int d = 0; d < depth; ++d) {
    level L;
    const int n = static_cast<int>(shapes.size());
    L.arg = ch.pick(n);
    const std::int64_t arg_numel = std::accumulate(shapes[static_cast<std::size_t>(L.arg)].begin(),
                                                   shapes[static_cast<std::size_t>(L.arg)].end(), std::int64_t{1},
                                                   std::multiplies<>());
    const int kind = ch.pick(big ? 4 : 10);
    if (big) {
      L.kind = std::vector<tf>{tf::vmap, tf::jvp, tf::functionalize, tf::grad}[static_cast<std::size_t>(kind)];
    } else {
      L.kind = std::vector<tf>{tf::grad, tf::vjp, tf::jvp, tf::vmap, tf::vmap, tf::jacrev, tf::jacfwd, tf::hessian,
                               tf::functionalize, tf::make_fx}[static_cast<std::size_t>(kind)];
    }
    if ((L.kind == tf::jacrev || L.kind == tf::jacfwd || L.kind == tf::hessian) && arg_numel > 12) L.kind = tf::jvp;
    if (L.kind == tf::make_fx && d != depth - 1) L.kind = tf::functionalize;  // make_fx runs outside transforms
    if (L.kind == tf::vmap) {
      L.batch = 1 + ch.pick(3);
      bool any = false;
      for (int j = 0; j < n; ++j) {
        if (ch.chance(30)) {
          L.in_dims.push_back(std::nullopt);
          continue;
        }
        const auto r = static_cast<std::int64_t>(shapes[static_cast<std::size_t>(j)].size()) + 1;
        const std::int64_t dim = ch.pick(static_cast<int>(r)) - (ch.chance(25) ? r : 0);
        L.in_dims.push_back(dim);
        any = true;
      }
      if (!any) L.in_dims[0] = 0;
      for (int j = 0; j < n; ++j)
        if (L.in_dims[static_cast<std::size_t>(j)]) {
          auto& s = shapes[static_cast<std::size_t>(j)];
          const auto r = static_cast<std::int64_t>(s.size()) + 1, dim = *L.in_dims[static_cast<std::size_t>(j)];
          s.insert(static_cast<std::size_t>(dim < 0 ? dim + r : dim), L.batch);
        }
      L.out_dim = ch.pick(2);  // 0 or 1 (bounded by the output's rank below)
    }
    c.stack.push_back(L);
  }
  return c;
}

/// vmap's out_dim must be within the output's rank: lowered to 0 where it is not (the output
/// rank is known only by running the level below).
inline void fit_out_dims(fuzz_case& c) {
  try {
    const level_inputs li = inputs_for(c, c.input_seed);
    const program& p = c.prog;
    fn_t f = [p](const std::vector<tensor>& xs) { return p.run(xs); };
    for (std::size_t i = 0; i < c.stack.size(); ++i) {
      level& L = c.stack[i];
      if (L.kind == tf::vmap) {
        const tensor y = f(li.at[i]);
        if (L.out_dim > y.dim()) L.out_dim = 0;
      }
      f = transformed(L, f);
    }
  } catch (const std::exception&) {
    // run_case reports it
  }
}

// ---- shrinking ---------------------------------------------------------------------------------

inline bool same_failure(const fuzz_case& c, const std::string& kind) {
  stats st;
  auto r = run_case(c, st);
  return r && r->second.kind == kind;
}

/// Steps whose values the output needs.
inline program without_dead_steps(program p) {
  std::vector<bool> live(static_cast<std::size_t>(p.values()));
  live[static_cast<std::size_t>(p.output)] = true;
  for (auto it = p.steps.rbegin(); it != p.steps.rend(); ++it)
    if (live[static_cast<std::size_t>(it->out)])
      for (int a : it->a) live[static_cast<std::size_t>(a)] = true;
  std::vector<step> kept;
  for (const auto& s : p.steps)
    if (live[static_cast<std::size_t>(s.out)]) kept.push_back(s);
  p.steps = kept;
  return p;
}

/// The smallest case that still fails the same way: outer levels dropped, then inner levels,
/// then steps bypassed (their uses given an operand of the same shape) or made the output.
inline fuzz_case shrink(fuzz_case c, std::size_t level_index, const std::string& kind) {
  if (level_index + 1 < c.stack.size()) {
    fuzz_case t = c;
    t.stack.resize(level_index + 1);
    if (same_failure(t, kind)) c = t;
  }
  for (std::size_t j = 0; j + 1 < c.stack.size();) {
    fuzz_case t = c;
    t.stack.erase(t.stack.begin() + static_cast<std::ptrdiff_t>(j));
    if (same_failure(t, kind)) c = t;
    else ++j;
  }
  c.prog = without_dead_steps(c.prog);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t k = c.prog.steps.size(); k-- > 0;) {
      const step s = c.prog.steps[k];
      for (int a : s.a) {
        fuzz_case t = c;
        if (s.out == t.prog.output) {
          t.prog.output = a;
        } else {
          if (!(t.prog.shapes[static_cast<std::size_t>(a)] == t.prog.shapes[static_cast<std::size_t>(s.out)])) continue;
          for (auto& later : t.prog.steps)
            for (auto& x : later.a)
              if (x == s.out) x = a;
        }
        t.prog = without_dead_steps(t.prog);
        if (same_failure(t, kind)) {
          c = t;
          changed = true;
          break;
        }
      }
      if (changed) break;
    }
  }
  return c;
}

inline std::string reproducer(const fuzz_case& c, const std::string& origin, std::size_t level_index, const failure& f) {
  std::ostringstream os;
  os << "FUZZ FAILURE (" << origin << ")\n  what: " << f.kind;
  if (level_index < c.stack.size()) os << " at " << describe(c.stack[level_index]);
  os << "\n  transforms: " << describe(c.stack) << "\n  inputs: uniform in [-2, 2] (positive ones in [0.5, 2]), "
     << "seed " << c.input_seed << " (tests/fuzz/fuzz.hpp: inputs_for)\n  details: " << f.detail.substr(0, 2000) << "\n"
     << c.prog.cpp();
  return os.str();
}

}  // namespace fuzz
