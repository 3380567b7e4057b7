#pragma once
/// \file
/// xf::grad and xf::grad_and_value.
#include <array>

#include <xfunc/core/diagnostics.hpp>
#include <xfunc/core/pytree.hpp>
#include <xfunc/dispatch/dispatcher.hpp>
#include <xfunc/fwd.hpp>
#include <xfunc/transforms/options.hpp>
#include <xfunc/transforms/transformed.hpp>

namespace xfunc {
namespace detail {

/// Wraps every floating tensor leaf of v as a fresh input of grad layer L (a leaf node each).
/// With `strict` (grad), a non-floating leaf is an error; otherwise (vjp) it is left untracked
/// and gets a zero gradient.
template <class T>
T wrap_grad_inputs(const T& v, const layer_ptr& L, std::vector<std::shared_ptr<grad_node>>& leaves,
                   const char* who, std::size_t argnum, bool strict = true) {
  return tree_map(v, [&](const tensor& t) {
    if (!t.defined()) fail(who, ": argument ", argnum, " holds an undefined tensor");
    if (!is_floating(t.dtype())) {
      if (!strict) {
        leaves.push_back(nullptr);
        return t;
      }
      fail(who, ": argument ", argnum, " has dtype ", t.dtype(),
           "; only floating tensors can be differentiated (convert it with .to(xf::f32) or leave it out of argnums)");
    }
    auto leaf = make_pooled<leaf_node>();
    leaves.push_back(leaf);
    return wrap_grad(strip_dead(t), L, leaf);
  });
}

/// Checks the argument a jacobian is taken with respect to (argnum `argnum` of `who`, jacrev or
/// jacfwd): every tensor leaf defined and floating, as grad requires (torch.func's jacrev and
/// jacfwd reject integer inputs too, rather than giving a zero jacobian).
template <class T>
void check_differentiable(const T& v, const char* who, std::size_t argnum) {
  tree_for_each(v, [&](const tensor& t) {
    if (!t.defined()) fail(who, ": argument ", argnum, " holds an undefined tensor");
    if (!is_floating(t.dtype()))
      fail(who, ": argument ", argnum, " has dtype ", t.dtype(),
           "; only floating tensors can be differentiated (convert it with .to(xf::f32) or leave it out of argnums)");
  });
}

/// Rebuilds the structure of v with the gradients of its leaves (zeros where none arrived).
template <class T>
T gradients_like(const T& v, const tensor_list& grads, std::size_t& next) {
  return tree_map(v, [&](const tensor& t) {
    const tensor& g = grads[next++];
    return g.defined() ? g : plain_zeros_like(t);
  });
}

template <class R, bool Aux>
constexpr bool grad_return_ok() {
  if constexpr (Aux) {
    if constexpr (is_std_tuple<R>::value && std::tuple_size_v<R> == 2)
      return std::is_same_v<std::remove_cvref_t<std::tuple_element_t<0, R>>, tensor>;
    else return false;
  } else {
    return std::is_same_v<R, tensor>;
  }
}

template <bool WithValue, class F, class... Opts, class... Args>
auto grad_call(const F& f, const std::tuple<Opts...>& opts, const Args&... args) {
  using A = decltype(find_option<is_argnums>(opts, argnums_t<0>{}));
  using AN = argnums_of<A, sizeof...(Args)>;
  constexpr bool aux = has_aux_in<Opts...>;
  using R = std::remove_cvref_t<std::invoke_result_t<const F&, const Args&...>>;
  static_assert(AN::in_range, XFUNC_MSG_GRAD_ARGNUM_RANGE);
  static_assert(AN::unique, XFUNC_MSG_GRAD_ARGNUM_UNIQUE);
  static_assert(grad_return_ok<R, aux>(), XFUNC_MSG_GRAD_RETURN);
  if constexpr (AN::in_range && AN::unique && grad_return_ok<R, aux>()) {
    layer_guard guard(transform_kind::grad);
    const layer_ptr& L = guard.get();
    std::array<std::vector<std::shared_ptr<grad_node>>, sizeof...(Args)> leaves;
    auto wrapped = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::tuple<Args...>{[&]() -> Args {
        if constexpr (AN::contains(K)) return wrap_grad_inputs(args, L, leaves[K], "xf::grad", K);
        else return args;
      }()...};
    }(std::index_sequence_for<Args...>{});
    R result = std::apply(f, wrapped);
    const tensor out = [&] {
      if constexpr (aux) return std::get<0>(result);
      else return result;
    }();
    if (!out.defined()) fail("xf::grad(f): f returned an undefined tensor");
    if (out.dim() != 0 || !is_floating(out.dtype()))
      fail("xf::grad(f): f must return a scalar (0-d floating) tensor, got shape ", out.shape(), " and dtype ",
           out.dtype(), "; reduce the output (e.g. xf::sum) or use xf::vjp / xf::jacrev for non-scalar outputs");
    std::vector<std::shared_ptr<grad_node>> all;
    for (auto k : AN::value) all.insert(all.end(), leaves[k].begin(), leaves[k].end());
    tensor_list grads(all.size());
    refresh_view(out);
    if (belongs_to(out, L.get()))
      grads = run_backward({out.impl()->node}, {plain_full({}, 1.0, out.dtype(), out.device())}, all);
    std::size_t next = 0;
    auto args_tuple = std::tie(args...);
    auto grads_out = [&]<std::size_t... J>(std::index_sequence<J...>) {
      if constexpr (sizeof...(J) == 1)
        return gradients_like(std::get<AN::value[0]>(args_tuple), grads, next);
      else
        return std::tuple{gradients_like(std::get<AN::value[J]>(args_tuple), grads, next)...};
    }(std::make_index_sequence<AN::value.size()>{});
    tensor value = unwrap_at(out, L.get());
    if constexpr (aux) {
      auto aux_out = tree_map(std::get<1>(result), [&](const tensor& t) { return unwrap_at(t, L.get()); });
      if constexpr (WithValue) return std::pair{grads_out, std::pair{value, aux_out}};
      else return std::pair{grads_out, aux_out};
    } else {
      if constexpr (WithValue) return std::pair{grads_out, value};
      else return grads_out;
    }
  }
}

template <class F, class... Opts>
struct grad_transform : transform_base<F> {
  static constexpr std::string_view transform_name = "grad";
  F f;
  std::tuple<Opts...> opts;
  template <class... Args>
  auto operator()(const Args&... args) const {
    return grad_call<false>(f, opts, args...);
  }
};

template <class F, class... Opts>
struct grad_and_value_transform : transform_base<F> {
  static constexpr std::string_view transform_name = "grad_and_value";
  F f;
  std::tuple<Opts...> opts;
  template <class... Args>
  auto operator()(const Args&... args) const {
    return grad_call<true>(f, opts, args...);
  }
};

struct grad_fn {
  template <class F, class... Opts>
  constexpr auto operator()(F f, Opts... opts) const {
    static_assert((option_in<Opts, is_argnums, is_has_aux> && ...), XFUNC_MSG_GRAD_OPTIONS);
    return grad_transform<F, Opts...>{{}, std::move(f), {opts...}};
  }
};
struct grad_and_value_fn {
  template <class F, class... Opts>
  constexpr auto operator()(F f, Opts... opts) const {
    static_assert((option_in<Opts, is_argnums, is_has_aux> && ...), XFUNC_MSG_GRAD_OPTIONS);
    return grad_and_value_transform<F, Opts...>{{}, std::move(f), {opts...}};
  }
};
}  // namespace detail

/// grad(f, opts...)(args...): the gradient of scalar f with respect to args[argnums].
inline constexpr detail::grad_fn grad{};
/// grad_and_value(f, opts...)(args...): std::pair of the gradient and f's value.
inline constexpr detail::grad_and_value_fn grad_and_value{};

}  // namespace xfunc
