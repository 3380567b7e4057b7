#pragma once
// Finite-difference checks of vjp and jvp on a flat list of inputs: the core of
// xf::testing::gradcheck and of xf::opcheck's "gradcheck" check.
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <xfunc/ops/creation.hpp>
#include <xfunc/ops/view.hpp>
#include <xfunc/transforms/jvp.hpp>
#include <xfunc/transforms/vjp.hpp>

namespace xfunc::detail {

struct fd_tolerances {
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;
};

/// Element j of a contiguous tensor as a double, and setting it.
inline double fd_get(const tensor& t, std::int64_t j) {
  return visit_dtype(t.dtype(), [&](auto tag) { return static_cast<double>(t.impl()->template data<typename decltype(tag)::type>()[j]); });
}
inline void fd_set(const tensor& t, std::int64_t j, double v) {
  visit_dtype(t.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    t.impl()->template data<E>()[j] = static_cast<E>(v);
  });
}

/// Whether a and b agree elementwise; on mismatch writes a report to `why`. A NaN on either side
/// is a mismatch (as torch's gradcheck: a derivative that is NaN is not checked).
template <int D = 0>
bool fd_close(const tensor& a, const tensor& b, const fd_tolerances& tol, const std::string& what, std::string& why) {
  tensor x = a.to(f64).contiguous(), y = b.to(f64).contiguous();
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double p = fd_get(x, i), q = fd_get(y, i);
    if (!(p == q || std::abs(p - q) <= tol.atol + tol.rtol * std::abs(q))) {
      std::ostringstream os;
      os << what << ": entry " << i << " is " << p << " but finite differences give " << q;
      if (std::isnan(p) || std::isnan(q)) os << " (NaN: check the function at points where it is defined)";
      why = os.str();
      return false;
    }
  }
  return true;
}

/// Compares the vjp (one per output entry) and the jvp (one per input entry) of f, whose output
/// is one flat tensor, with central differences at xs (contiguous dense tensors, perturbed in
/// place); only floating inputs are checked. On mismatch returns false and explains in `why`.
/// (A template on F so that the transforms it runs are instantiated only when it is used.)
template <class F>
bool fd_check(const F& f, const std::vector<tensor>& xs,
                     const fd_tolerances& tol, std::string& why) {
  // a copy: f may return a view of its input, which the perturbation below would change
  auto call = [&] { return f(xs).to(f64).clone(); };
  const std::int64_t m = call().numel();
  std::vector<tensor> numeric(xs.size());  // per input: the jacobian by columns of differences
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!is_floating(xs[i].dtype())) continue;
    const std::int64_t n = xs[i].numel();
    tensor J = zeros({m, n}, f64);
    for (std::int64_t j = 0; j < n; ++j) {
      const double orig = fd_get(xs[i], j);
      fd_set(xs[i], j, orig + tol.eps);
      tensor plus = call();
      fd_set(xs[i], j, orig - tol.eps);
      tensor minus = call();
      fd_set(xs[i], j, orig);
      J.select(1, j).copy_((plus - minus) / (2 * tol.eps));
    }
    numeric[i] = J;
  }
  auto [y, pullback] = vjp(f, xs);
  for (std::int64_t r = 0; r < m; ++r) {
    tensor e = zeros({m}, y.dtype());
    fd_set(e, r, 1.0);
    const std::vector<tensor> grads = std::get<0>(pullback(e));
    for (std::size_t i = 0; i < xs.size(); ++i)
      if (numeric[i].defined() &&
          !fd_close(grads[i].reshape({-1}), numeric[i].select(0, r), tol,
                    "vjp of input " + std::to_string(i) + ", output entry " + std::to_string(r), why))
        return false;
  }
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!numeric[i].defined()) continue;
    for (std::int64_t j = 0; j < xs[i].numel(); ++j) {
      std::vector<tensor> ts;
      for (const auto& x : xs) ts.push_back(zeros_like(x));
      fd_set(ts[i], j, 1.0);
      auto [o, t] = jvp(f, std::tuple{xs}, std::tuple{ts});
      if (!fd_close(t, numeric[i].select(1, j), tol,
                    "jvp of input " + std::to_string(i) + ", input entry " + std::to_string(j), why))
        return false;
    }
  }
  return true;
}

}  // namespace xfunc::detail
