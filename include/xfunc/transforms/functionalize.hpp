#pragma once
/// \file
/// xf::functionalize: runs f with every mutation (and, with remove::mutations_and_views, every
/// view) replaced by out-of-place operations; mutated inputs are copied back at the end.
#include <xfunc/ops/inplace.hpp>
#include <xfunc/transforms/grad.hpp>

namespace xfunc {
namespace detail {

template <class T>
struct is_remove : std::is_same<T, xfunc::remove> {};

template <class F, class... Opts>
struct functionalize_transform : transform_base<F> {
  static constexpr std::string_view transform_name = "functionalize";
  F f;
  std::tuple<Opts...> opts;

  template <class... Args>
  auto operator()(const Args&... args) const {
    const xfunc::remove mode = find_option<is_remove>(opts, xfunc::remove::mutations);
    layer_guard guard(transform_kind::functionalize);
    const layer_ptr& L = guard.get();
    L->remove_views = mode == xfunc::remove::mutations_and_views;
    views_as_copies_scope copies(L->remove_views);  // NOTE: [Views as copies]
    std::vector<std::pair<tensor, tensor>> inputs;  // the caller's tensor and its wrapper
    auto wrap = [&](const tensor& t) {
      tensor w = wrap_functional(strip_dead(t), L);
      inputs.emplace_back(t, w);
      return w;
    };
    std::tuple<Args...> wrapped{tree_map(args, wrap)...};
    auto result = std::apply(f, wrapped);
    auto out = tree_map(result, [&](const tensor& t) { return unwrap_at(t, L.get()); });
    // the observable effect of f on its inputs: copy mutated ones back into the caller's tensors
    for (auto& [orig, w] : inputs)
      if (w.impl()->version > 0) {
        tensor o = orig;
        o.copy_(unwrap_at(w, L.get()));
      }
    return out;
  }
};

struct functionalize_fn {
  template <class F, class... Opts>
  constexpr auto operator()(F f, Opts... opts) const {
    static_assert((option_in<Opts, is_remove> && ...), XFUNC_MSG_FUNCTIONALIZE_OPTIONS);
    return functionalize_transform<F, Opts...>{{}, std::move(f), {opts...}};
  }
};
}  // namespace detail

/// functionalize(f, remove)(args...): f without in-place ops (and, with
/// remove::mutations_and_views, without views); mutations of the inputs are copied back.
inline constexpr detail::functionalize_fn functionalize{};

}  // namespace xfunc
