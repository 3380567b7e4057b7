#pragma once
/// \file
/// Public testing helpers: finite-difference gradient checks and vmap-against-a-loop checks.
#include <array>
#include <cstring>
#include <iostream>
#include <sstream>

#include <xfunc/testing/finite_differences.hpp>
#include <xfunc/xfunc.hpp>

/// Checks for code written with xfunc: gradients against finite differences (gradcheck,
/// gradgradcheck) and vmap against a per-example loop (vmap_matches_loop).
namespace xfunc::testing {

/// Pass as the first argument after f to make a failed check throw xf::error instead of
/// returning false.
struct raise_t {};
/// The value of raise_t: `gradcheck(f, xf::testing::raise, x)` throws on a mismatch.
inline constexpr raise_t raise{};

/// The finite-difference step and tolerances of the checks: eps 1e-6, atol 1e-5, rtol 1e-3.
using tolerances = xfunc::detail::fd_tolerances;

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

template <class F, class... T>
bool gradcheck_impl(bool raise, const tolerances& tol, const F& f, const T&... inputs) {
  (xfunc::detail::require_defined(inputs, "xf::testing::gradcheck"), ...);
  std::vector<tensor> xs{inputs.to(is_floating(inputs.dtype()) ? f64 : inputs.dtype()).contiguous().clone()...};
  auto flat_f = [&](const std::vector<tensor>& v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return flat_output(f(v[I]...)); }(
        std::index_sequence_for<T...>{});
  };
  std::string why;
  const bool ok = xfunc::detail::fd_check(flat_f, xs, tol, why);
  if (!ok && raise) fail("xf::testing::gradcheck failed: ", why);
  return ok;
}
}  // namespace detail

///@{
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
///@}

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
///@{
/// Checks second derivatives: gradcheck of f's vjp (with a fixed cotangent). Returns false on
/// mismatch; throws with xf::testing::raise.
template <class F, class... T>
bool gradgradcheck(const F& f, const T&... inputs) {
  return gradgradcheck_impl(false, f, inputs...);
}
template <class F, class... T>
bool gradgradcheck(const F& f, raise_t, const T&... inputs) {
  return gradgradcheck_impl(true, f, inputs...);
}
///@}

/// Whether vmap(f, dims)(args...) equals running f on each example and stacking (out_dims 0).
/// `dims` takes what vmap's in_dims takes (none for non-tensor arguments, nested in_dims for
/// tuples); a NaN matches a NaN in the same place.
template <class F, class IN, class... A>
bool vmap_matches_loop(const F& f, const IN& dims, const A&... args) {
  auto batched = vmap(f, dims)(args...);  // (checks the in_dims and the batch size)
  std::int64_t B = 0;
  auto size_of = [&](const tensor& t, std::optional<std::int64_t> d) {
    if (d) B = t.size(*d);
    return t;
  };
  auto slices = [&](auto&& per_leaf) {  // every argument, its mapped leaves through per_leaf
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<A...>{xfunc::detail::map_in_dims(args, std::get<I>(dims.entries), per_leaf)...};
    }(std::index_sequence_for<A...>{});
  };
  (void)slices(size_of);
  std::vector<std::vector<tensor>> per_leaf;
  for (std::int64_t b = 0; b < B; ++b) {
    auto out = std::apply(f, slices([&](const tensor& t, std::optional<std::int64_t> d) { return d ? t.select(*d, b) : t; }));
    auto leaves = xfunc::detail::tree_leaves(out);
    per_leaf.resize(leaves.size());
    for (std::size_t k = 0; k < leaves.size(); ++k) per_leaf[k].push_back(leaves[k]);
  }
  auto got = xfunc::detail::tree_leaves(batched);
  if (got.size() != per_leaf.size()) return false;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const tensor expect = stack(per_leaf[k], 0);
    if (!(got[k].shape() == expect.shape())) return false;
    const tensor nan_got = ne(got[k], got[k]), nan_expect = ne(expect, expect);
    if (!equal(nan_got, nan_expect)) return false;
    const bool single = got[k].dtype() == f32 || expect.dtype() == f32;
    if (!allclose(where(nan_got, zeros_like(got[k]), got[k]), where(nan_expect, zeros_like(expect), expect),
                  single ? 1e-4 : 1e-9, single ? 1e-5 : 1e-12))
      return false;
  }
  return true;
}

}  // namespace xfunc::testing
