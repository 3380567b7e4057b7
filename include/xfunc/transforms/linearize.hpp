#pragma once
/// \file
/// xf::linearize: evaluates f once, recording its ops, and returns a reusable jvp function that
/// pushes tangents forward through the recorded graph with each op's jvp formula.
#include <array>

#include <xfunc/core/diagnostics.hpp>
#include <xfunc/transforms/grad.hpp>

namespace xfunc {
namespace detail {

template <class Out, class... Ps>
struct linearized {
  std::vector<std::shared_ptr<grad_node>> roots;  // per output leaf
  std::vector<tensor> out_values;                 // for outputs that do not depend on the inputs
  std::vector<std::shared_ptr<grad_node>> leaves;
  std::vector<shape_t> in_shapes;
  Out structure;

  template <class... Ts>
  Out operator()(const Ts&... tangents) const {
    static_assert(std::is_same_v<std::tuple<Ts...>, std::tuple<Ps...>>, XFUNC_MSG_LINEARIZE_TANGENT_TYPES);
    tensor_list tin;
    (tree_for_each(tangents, [&](const tensor& t) { tin.push_back(t); }), ...);
    if (tin.size() != leaves.size()) fail("xf::linearize: expected ", leaves.size(), " tangent tensors, got ", tin.size());
    for (std::size_t i = 0; i < tin.size(); ++i)
      if (!(tin[i].shape() == in_shapes[i]))
        fail("xf::linearize: tangent ", i, " has shape ", tin[i].shape(), " but its primal has shape ", in_shapes[i]);
    tensor_list touts = run_forward_tangents(roots, leaves, tin);
    std::size_t k = 0;
    return tree_map(structure, [&](const tensor&) {
      const std::size_t i = k++;
      return touts[i].defined() ? touts[i] : plain_zeros_like(out_values[i]);
    });
  }
};

template <class F, class... Ps>
auto linearize_call(const F& f, const Ps&... primals) {
  layer_guard guard(transform_kind::grad);
  const layer_ptr& L = guard.get();
  std::array<std::vector<std::shared_ptr<grad_node>>, sizeof...(Ps)> leaves;
  auto wrapped = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple<Ps...>{wrap_grad_inputs(primals, L, leaves[K], "xf::linearize", K)...};
  }(std::index_sequence_for<Ps...>{});
  auto out = std::apply(f, wrapped);
  using Out = decltype(out);
  linearized<Out, Ps...> lin;
  tree_for_each(out, [&](const tensor& t) {
    refresh_view(t);
    lin.roots.push_back(belongs_to(t, L.get()) ? t.impl()->node : nullptr);
    lin.out_values.push_back(unwrap_at(t, L.get()));
  });
  for (const auto& l : leaves) lin.leaves.insert(lin.leaves.end(), l.begin(), l.end());
  (tree_for_each(primals, [&](const tensor& t) { lin.in_shapes.push_back(t.shape()); }), ...);
  Out value = tree_map(out, [&](const tensor& t) { return unwrap_at(t, L.get()); });
  lin.structure = value;
  return std::pair{value, std::move(lin)};
}

struct linearize_fn {
  template <class F, class... Ps>
  auto operator()(const F& f, const Ps&... primals) const {
    return linearize_call(f, primals...);
  }
};
}  // namespace detail

/// linearize(f, primals...) → std::pair{out, jvp_fn}; jvp_fn(tangents...) → the tangent of the
/// output. f runs once; each jvp_fn call replays only the linear (tangent) computation.
inline constexpr detail::linearize_fn linearize{};

}  // namespace xfunc
