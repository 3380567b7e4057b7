#pragma once
/// \file
/// xf::vjp: the output of f and a function mapping output cotangents to input gradients.
#include <array>

#include <xfunc/core/diagnostics.hpp>
#include <xfunc/transforms/grad.hpp>

namespace xfunc {
namespace detail {

/// The pullback returned by xf::vjp; callable repeatedly, under any transform.
template <class Out, class... Ps>
struct vjp_pullback {
  std::vector<std::shared_ptr<grad_node>> roots;  // per output leaf (null: does not depend on the inputs)
  std::vector<shape_t> out_shapes;
  std::array<std::vector<std::shared_ptr<grad_node>>, sizeof...(Ps)> leaves;
  std::tuple<Ps...> primals;

  template <class C>
  auto operator()(const C& cotangents) const {
    static_assert(std::is_same_v<std::remove_cvref_t<C>, Out>, XFUNC_MSG_VJP_COTANGENT_TYPE);
    if constexpr (std::is_same_v<std::remove_cvref_t<C>, Out>) {
      tensor_list gs = tree_leaves(cotangents);
      if (gs.size() != roots.size())
        fail("xf::vjp: the cotangent has ", gs.size(), " tensors but the output had ", roots.size());
      for (std::size_t i = 0; i < gs.size(); ++i) {
        if (!gs[i].defined())
          fail("xf::vjp: cotangent ", i, " is an undefined tensor (a default-constructed xf::tensor); pass a tensor of "
               "the output's shape ", out_shapes[i], " (zeros for no contribution)");
        if (!(gs[i].shape() == out_shapes[i]))
          fail("xf::vjp: cotangent ", i, " has shape ", gs[i].shape(), " but the output has shape ", out_shapes[i],
               "; pass a cotangent of the output's shape");
      }
      std::vector<std::shared_ptr<grad_node>> all;
      for (const auto& l : leaves) all.insert(all.end(), l.begin(), l.end());
      tensor_list grads = run_backward(roots, gs, all);
      std::size_t next = 0;
      return std::apply([&](const auto&... p) { return std::tuple{gradients_like(p, grads, next)...}; }, primals);
    }
  }
};

template <bool Aux, class F, class... Ps>
auto vjp_call(const F& f, const Ps&... primals) {
  using R = std::remove_cvref_t<std::invoke_result_t<const F&, const Ps&...>>;
  if constexpr (Aux)
    static_assert(is_std_tuple<R>::value && std::tuple_size_v<R> == 2, XFUNC_MSG_VJP_HAS_AUX_RETURN);
  layer_guard guard(transform_kind::grad);
  const layer_ptr& L = guard.get();
  std::array<std::vector<std::shared_ptr<grad_node>>, sizeof...(Ps)> leaves;
  auto wrapped = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple<Ps...>{wrap_grad_inputs(primals, L, leaves[K], "xf::vjp", K, false)...};
  }(std::index_sequence_for<Ps...>{});
  R result = std::apply(f, wrapped);
  const auto& out = [&]() -> const auto& {
    if constexpr (Aux) return std::get<0>(result);
    else return result;
  }();
  using Out = std::remove_cvref_t<decltype(out)>;
  vjp_pullback<Out, Ps...> pb;
  tree_for_each(out, [&](const tensor& t) {
    refresh_view(t);
    pb.roots.push_back(belongs_to(t, L.get()) ? t.impl()->node : nullptr);
    pb.out_shapes.push_back(t.shape());
  });
  pb.leaves = std::move(leaves);
  pb.primals = std::tuple<Ps...>{primals...};
  Out value = tree_map(out, [&](const tensor& t) { return unwrap_at(t, L.get()); });
  if constexpr (Aux) {
    auto aux = tree_map(std::get<1>(result), [&](const tensor& t) { return unwrap_at(t, L.get()); });
    return std::tuple{value, std::move(pb), aux};
  } else {
    return std::pair{value, std::move(pb)};
  }
}

struct vjp_fn {
  template <class F, class... Ps>
  auto operator()(const F& f, const Ps&... primals) const {
    return vjp_call<false>(f, primals...);
  }
  template <class F, class... Ps>
  auto operator()(const F& f, has_aux_t, const Ps&... primals) const {
    return vjp_call<true>(f, primals...);
  }
};
}  // namespace detail

/// vjp(f, primals...) → std::pair{out, vjp_fn}; vjp(f, xf::has_aux, primals...) → std::tuple{out, vjp_fn, aux}.
inline constexpr detail::vjp_fn vjp{};

}  // namespace xfunc
