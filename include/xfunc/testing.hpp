#pragma once
// Public testing helpers: finite-difference gradient checks and vmap-against-a-loop checks.
#include <cstring>
#include <iostream>
#include <sstream>

#include <xfunc/xfunc.hpp>

namespace xfunc::testing {

/// Pass as the first argument after f to make a failed check throw xf::error instead of
/// returning false.
struct raise_t {};
inline constexpr raise_t raise{};

struct tolerances {
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;
};

namespace detail {
using xfunc::detail::fail;

/// All tensor leaves of an output, flattened and concatenated (float64).
template <class Out>
tensor flat_output(const Out& out) {
  std::vector<tensor> parts;
  xfunc::detail::tree_for_each(out, [&](const tensor& t) { parts.push_back(t.reshape({-1}).to(f64)); });
  if (parts.empty()) fail("xf::testing: f has no tensor output");
  return parts.size() == 1 ? parts[0] : cat(parts, 0);
}

inline double* f64_data(tensor& t) { return t.impl()->data<double>(); }

/// Compares a and b elementwise; on mismatch writes a report to `why`.
inline bool close(const tensor& a, const tensor& b, const tolerances& tol, const std::string& what, std::string& why) {
  tensor x = a.to(f64).contiguous(), y = b.to(f64).contiguous();
  const double* p = x.impl()->data<double>();
  const double* q = y.impl()->data<double>();
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (std::abs(p[i] - q[i]) > tol.atol + tol.rtol * std::abs(q[i]) || std::isnan(p[i]) != std::isnan(q[i])) {
      std::ostringstream os;
      os << what << ": entry " << i << " is " << p[i] << " but finite differences give " << q[i];
      why = os.str();
      return false;
    }
  }
  return true;
}

template <class F, class... T>
bool gradcheck_impl(bool raise, const tolerances& tol, const F& f, const T&... inputs) {
  std::vector<tensor> xs{inputs.to(is_floating(inputs.dtype()) ? f64 : inputs.dtype()).clone()...};
  // a copy: f may return a view of its input, which the perturbation below would change
  auto call = [&](const std::vector<tensor>& v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return flat_output(f(v[I]...)).clone(); }(
        std::index_sequence_for<T...>{});
  };
  const tensor y0 = call(xs);
  const std::int64_t m = y0.numel();
  std::string why;
  bool ok = true;
  // numerical jacobian per input: columns of central differences
  std::vector<tensor> numeric(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!is_floating(xs[i].dtype())) continue;
    const std::int64_t n = xs[i].numel();
    tensor J = zeros({m, n}, f64);
    for (std::int64_t j = 0; j < n; ++j) {
      double* p = f64_data(xs[i]);
      const double orig = p[j];
      p[j] = orig + tol.eps;
      tensor plus = call(xs);
      p[j] = orig - tol.eps;
      tensor minus = call(xs);
      p[j] = orig;
      J.select(1, j).copy_((plus - minus) / (2 * tol.eps));
    }
    numeric[i] = J;
  }
  // reverse mode: one vjp per output element
  auto fv = [&](const auto&... a) { return flat_output(f(a...)); };
  auto [yv, pullback] = [&]<std::size_t... I>(std::index_sequence<I...>) { return vjp(fv, xs[I]...); }(
      std::index_sequence_for<T...>{});
  for (std::int64_t r = 0; r < m && ok; ++r) {
    tensor e = zeros({m}, f64);
    f64_data(e)[r] = 1.0;
    auto grads = pullback(e);
    std::size_t i = 0;
    std::apply([&](const auto&... g) {
      ((ok = ok && (!numeric[i].defined() ||
                    close(g.reshape({-1}), numeric[i].select(0, r), tol,
                          "vjp of input " + std::to_string(i) + ", output entry " + std::to_string(r), why)),
        ++i),
       ...);
    }, grads);
  }
  // forward mode: one jvp per input element
  for (std::size_t i = 0; i < xs.size() && ok; ++i) {
    if (!numeric[i].defined()) continue;
    for (std::int64_t j = 0; j < xs[i].numel() && ok; ++j) {
      std::vector<tensor> ts;
      for (std::size_t k = 0; k < xs.size(); ++k) ts.push_back(zeros_like(xs[k]));
      f64_data(ts[i])[j] = 1.0;
      auto [o, t] = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return jvp(fv, std::tuple<T...>{xs[I]...}, std::tuple<T...>{ts[I]...});
      }(std::index_sequence_for<T...>{});
      ok = close(t, numeric[i].select(1, j), tol,
                 "jvp of input " + std::to_string(i) + ", input entry " + std::to_string(j), why);
    }
  }
  if (!ok && raise) fail("xf::testing::gradcheck failed: ", why);
  return ok;
}
}  // namespace detail

/// Compares vjp and jvp of f at `inputs` against central finite differences in float64
/// (eps 1e-6, atol 1e-5, rtol 1e-3). Returns false on mismatch; throws with xf::testing::raise.
template <class F, class... T>
bool gradcheck(const F& f, const T&... inputs) {
  return detail::gradcheck_impl(false, {}, f, inputs...);
}
template <class F, class... T>
bool gradcheck(const F& f, raise_t, const T&... inputs) {
  return detail::gradcheck_impl(true, {}, f, inputs...);
}

/// gradcheck of the vjp of f (second derivatives), with a fixed cotangent.
template <class F, class... T>
bool gradgradcheck_impl(bool raise, const F& f, const T&... inputs) {
  auto vjp_of_f = [&](const auto&... xs) {
    auto [out, pullback] = vjp([&](const auto&... a) { return detail::flat_output(f(a...)); }, xs...);
    tensor v = cos(arange(0.0, static_cast<double>(out.numel()), 1.0, f64) * 0.7 + 0.3);
    return pullback(v);
  };
  return detail::gradcheck_impl(raise, {}, vjp_of_f, inputs...);
}
template <class F, class... T>
bool gradgradcheck(const F& f, const T&... inputs) {
  return gradgradcheck_impl(false, f, inputs...);
}
template <class F, class... T>
bool gradgradcheck(const F& f, raise_t, const T&... inputs) {
  return gradgradcheck_impl(true, f, inputs...);
}

/// Whether vmap(f, dims)(args...) equals running f on each example and stacking (out_dims 0).
template <class F, class IN, class... A>
bool vmap_matches_loop(const F& f, const IN& dims, const A&... args) {
  auto batched = vmap(f, dims)(args...);
  std::optional<std::int64_t> B;
  auto entry_dim = [](const auto& e) -> std::optional<std::int64_t> {
    using E = std::remove_cvref_t<decltype(e)>;
    if constexpr (std::is_same_v<E, none_t>) return std::nullopt;
    else if constexpr (std::is_same_v<E, std::optional<std::int64_t>>) return e;
    else return static_cast<std::int64_t>(e);
  };
  auto dims_arr = std::apply([&](const auto&... e) { return std::array<std::optional<std::int64_t>, sizeof...(A)>{entry_dim(e)...}; },
                             dims.entries);
  const std::array<const tensor*, sizeof...(A)> ptrs{&args...};
  for (std::size_t i = 0; i < ptrs.size(); ++i)
    if (dims_arr[i]) B = ptrs[i]->size(*dims_arr[i]);
  if (!B) xfunc::detail::fail("xf::testing::vmap_matches_loop: nothing is mapped");
  std::vector<std::vector<tensor>> per_leaf;
  for (std::int64_t b = 0; b < *B; ++b) {
    auto out = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return f((dims_arr[I] ? args.select(*dims_arr[I], b) : args)...);
    }(std::index_sequence_for<A...>{});
    auto leaves = xfunc::detail::tree_leaves(out);
    per_leaf.resize(leaves.size());
    for (std::size_t k = 0; k < leaves.size(); ++k) per_leaf[k].push_back(leaves[k]);
  }
  auto got = xfunc::detail::tree_leaves(batched);
  if (got.size() != per_leaf.size()) return false;
  for (std::size_t k = 0; k < got.size(); ++k) {
    tensor expect = stack(per_leaf[k], 0);
    const bool single = got[k].dtype() == f32 || expect.dtype() == f32;
    if (!(got[k].shape() == expect.shape()) || !allclose(got[k], expect, single ? 1e-4 : 1e-9, single ? 1e-5 : 1e-12))
      return false;
  }
  return true;
}

}  // namespace xfunc::testing
