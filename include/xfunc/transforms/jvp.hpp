#pragma once
/// \file
/// xf::jvp: the output of f and its directional derivative along the tangents (forward mode).
#include <xfunc/core/diagnostics.hpp>
#include <xfunc/transforms/grad.hpp>

namespace xfunc {
namespace detail {

template <class T>
auto as_tuple(const T& v) {
  if constexpr (std::is_same_v<T, tensor>) return std::tuple<tensor>{v};
  else return v;
}

template <bool Aux, class F, class P, class T>
auto jvp_call(const F& f, const P& primals_in, const T& tangents_in) {
  static_assert(std::is_same_v<P, T>, XFUNC_MSG_JVP_TANGENT_STRUCTURE);
  auto primals = as_tuple(primals_in);
  auto tangents = as_tuple(tangents_in);
  layer_guard guard(transform_kind::jvp);
  const layer_ptr& L = guard.get();
  auto wrapped = tree_map2(primals, tangents, [&](const tensor& p, const tensor& t) {
    if (!p.defined() || !t.defined())
      fail("xf::jvp: a ", p.defined() ? "tangent" : "primal",
           " is an undefined tensor (a default-constructed xf::tensor); assign it a value");
    if (!(p.shape() == t.shape()))
      fail("xf::jvp: a tangent has shape ", t.shape(), " but its primal has shape ", p.shape(),
           "; each tangent must match its primal's shape");
    if (!is_floating(p.dtype())) return p;
    return wrap_dual(strip_dead(p), t.dtype() == p.dtype() ? t : t.to(p.dtype()), L);
  });
  auto result = std::apply(f, wrapped);
  const auto& out = [&]() -> const auto& {
    if constexpr (Aux) return std::get<0>(result);
    else return result;
  }();
  auto primal_out = tree_map(out, [&](const tensor& t) { return unwrap_at(t, L.get()); });
  auto tangent_out = tree_map(out, [&](const tensor& t) {
    refresh_view(t);
    if (belongs_to(t, L.get())) {
      const tensor& tan = t.impl()->tangent;
      return tan.defined() ? tan : plain_zeros_like(t.impl()->inner);
    }
    return plain_zeros_like(t);
  });
  if constexpr (Aux) {
    auto aux = tree_map(std::get<1>(result), [&](const tensor& t) { return unwrap_at(t, L.get()); });
    return std::tuple{primal_out, tangent_out, aux};
  } else {
    return std::pair{primal_out, tangent_out};
  }
}

struct jvp_fn {
  template <class F, class P, class T>
  auto operator()(const F& f, const P& primals, const T& tangents) const {
    return jvp_call<false>(f, primals, tangents);
  }
  template <class F, class P, class T>
  auto operator()(const F& f, has_aux_t, const P& primals, const T& tangents) const {
    return jvp_call<true>(f, primals, tangents);
  }
};
}  // namespace detail

/// jvp(f, primals, tangents) → std::pair{out, tangent_out}; primals/tangents are a std::tuple
/// (or one tensor). With xf::has_aux: std::tuple{out, tangent_out, aux}.
inline constexpr detail::jvp_fn jvp{};

}  // namespace xfunc
