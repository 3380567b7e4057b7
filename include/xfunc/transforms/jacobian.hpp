#pragma once
/// \file
/// xf::jacrev (vmap of vjp over the rows of an identity), xf::jacfwd (vmap of jvp over its
/// columns) and xf::hessian = jacfwd(jacrev(f)).
#include <xfunc/core/diagnostics.hpp>
#include <xfunc/transforms/jvp.hpp>
#include <xfunc/transforms/vjp.hpp>
#include <xfunc/transforms/vmap.hpp>

namespace xfunc {
namespace detail {

template <class AN>
constexpr std::size_t position_in_argnums(std::size_t k) {
  for (std::size_t i = 0; i < AN::value.size(); ++i)
    if (AN::value[i] == k) return i;
  return 0;
}

/// f as a function of the arguments at AN's positions only (the others fixed to `all`).
template <class AN, class F, class All>
auto partial_at(const F& f, const All& all) {
  return [&f, &all](const auto&... sel) {
    auto st = std::forward_as_tuple(sel...);
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return f([&]() -> const auto& {
        if constexpr (AN::contains(K)) return std::get<position_in_argnums<AN>(K)>(st);
        else return std::get<K>(all);
      }()...);
    }(std::make_index_sequence<std::tuple_size_v<All>>{});
  };
}

template <class T>
constexpr bool is_jacobian_output() {
  if constexpr (std::is_same_v<T, tensor>) return true;
  else if constexpr (is_std_tuple<T>::value)
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::is_same_v<std::tuple_element_t<I, T>, tensor> && ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  else return false;
}

/// Applies fn(k, leaf) to each output leaf (Out is a tensor or a tuple of tensors) and returns
/// the results in the same shape: one value, or a std::tuple over outputs.
template <class Out, class Fn>
auto per_output(const Out& out, Fn&& fn) {
  if constexpr (std::is_same_v<Out, tensor>) return fn(std::size_t{0}, out);
  else
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return std::tuple{fn(I, std::get<I>(out))...}; }(
        std::make_index_sequence<std::tuple_size_v<Out>>{});
}

/// One value for one argnum, else a std::tuple over argnums.
template <std::size_t N, class Fn>
auto per_argnum(Fn&& fn) {
  if constexpr (N == 1) return fn(std::integral_constant<std::size_t, 0>{});
  else
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      return std::tuple{fn(std::integral_constant<std::size_t, J>{})...};
    }(std::make_index_sequence<N>{});
}

inline shape_t concat_shapes(const shape_t& a, const shape_t& b) {
  shape_t s = a;
  for (auto e : b) s.push_back(e);
  return s;
}

template <class Opts>
struct jac_options;
template <class... Opts>
struct jac_options<std::tuple<Opts...>> {
  static constexpr bool aux = has_aux_in<Opts...>;
  static constexpr bool chunked = (std::is_same_v<Opts, chunk_size_t> || ...);
};

template <class F, class... Opts, class... Args>
auto jacrev_call(const F& f, const std::tuple<Opts...>& opts, const Args&... args) {
  using A = decltype(find_option<is_argnums>(opts, argnums_t<0>{}));
  using AN = argnums_of<A, sizeof...(Args)>;
  constexpr bool aux = has_aux_in<Opts...>;
  static_assert(AN::in_range, XFUNC_MSG_JACREV_ARGNUM_RANGE);
  static_assert(AN::unique, XFUNC_MSG_JACREV_ARGNUM_UNIQUE);
  if constexpr (AN::in_range && AN::unique) {
    auto all = std::tie(args...);
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      (check_differentiable(std::get<AN::value[J]>(all), "xf::jacrev", AN::value[J]), ...);
    }(std::make_index_sequence<AN::value.size()>{});
    auto g = partial_at<AN>(f, all);
    auto vjp_result = [&]<std::size_t... J>(std::index_sequence<J...>) {
      if constexpr (aux) return xfunc::vjp(g, has_aux, std::get<AN::value[J]>(all)...);
      else return xfunc::vjp(g, std::get<AN::value[J]>(all)...);
    }(std::make_index_sequence<AN::value.size()>{});
    const auto& out = std::get<0>(vjp_result);
    const auto& pullback = std::get<1>(vjp_result);
    using Out = std::remove_cvref_t<decltype(out)>;
    static_assert(is_jacobian_output<Out>(), XFUNC_MSG_JACREV_RETURN);
    if constexpr (is_jacobian_output<Out>()) {
      const std::vector<tensor> outs = tree_leaves(out);
      std::vector<std::int64_t> offset{0};
      dtype dt = outs[0].dtype();
      for (const auto& o : outs) {
        offset.push_back(offset.back() + o.numel());
        dt = promote(dt, o.dtype());
      }
      const std::int64_t N = offset.back();
      // cotangent rows: row r of the identity, split into one cotangent per output
      auto cotangent = [&](const tensor& row) {
        std::size_t k = 0;
        return tree_map(out, [&](const tensor& o) {
          tensor c = row.narrow(0, offset[k], offset[k + 1] - offset[k]).reshape(o.shape()).to(o.dtype());
          ++k;
          return c;
        });
      };
      auto rows_fn = [&](const tensor& row) { return pullback(cotangent(row)); };
      const tensor basis = plain_eye(N, is_floating(dt) ? dt : f32, outs[0].device());
      auto grads = [&] {  // std::tuple over selected args; leaves [N, in...]
        if constexpr (jac_options<std::tuple<Opts...>>::chunked) {
          const chunk_size_t c = find_option<is_chunk_size>(opts, chunk_size_t{0});
          if (c.n <= 0) fail("xf::jacrev: chunk_size must be positive, got ", c.n);
          return xfunc::vmap(rows_fn, c)(basis);
        } else {
          return xfunc::vmap(rows_fn)(basis);
        }
      }();
      auto jac = per_output(out, [&](std::size_t k, const tensor& o) {
        return per_argnum<AN::value.size()>([&](auto j) {
          return tree_map(std::get<decltype(j)::value>(grads), [&](const tensor& gl) {
            return gl.narrow(0, offset[k], offset[k + 1] - offset[k])
                .reshape(concat_shapes(o.shape(), shape_t(gl.shape().begin() + 1, gl.shape().end())));
          });
        });
      });
      if constexpr (aux) return std::pair{jac, std::get<2>(vjp_result)};
      else return jac;
    }
  }
}

template <class F, class... Opts, class... Args>
auto jacfwd_call(const F& f, const std::tuple<Opts...>& opts, const Args&... args) {
  using A = decltype(find_option<is_argnums>(opts, argnums_t<0>{}));
  using AN = argnums_of<A, sizeof...(Args)>;
  constexpr bool aux = has_aux_in<Opts...>;
  static_assert(AN::in_range, XFUNC_MSG_JACFWD_ARGNUM_RANGE);
  static_assert(AN::unique, XFUNC_MSG_JACFWD_ARGNUM_UNIQUE);
  if constexpr (AN::in_range && AN::unique) {
    auto all = std::tie(args...);
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      (check_differentiable(std::get<AN::value[J]>(all), "xf::jacfwd", AN::value[J]), ...);
    }(std::make_index_sequence<AN::value.size()>{});
    auto g = partial_at<AN>(f, all);
    auto primals = [&]<std::size_t... J>(std::index_sequence<J...>) {
      return std::tuple{std::get<AN::value[J]>(all)...};
    }(std::make_index_sequence<AN::value.size()>{});
    const std::vector<tensor> ins = tree_leaves(primals);
    std::vector<std::int64_t> offset{0};
    dtype dt = f32;
    for (const auto& x : ins) {
      offset.push_back(offset.back() + x.numel());
      dt = promote(dt, x.dtype());
    }
    const std::int64_t M = offset.back();
    auto tangent = [&](const tensor& col) {
      std::size_t i = 0;
      return tree_map(primals, [&](const tensor& x) {
        tensor t = col.narrow(0, offset[i], offset[i + 1] - offset[i]).reshape(x.shape()).to(x.dtype());
        ++i;
        return t;
      });
    };
    const xfunc::randomness rnd = find_option<is_randomness>(opts, xfunc::randomness::error);
    auto cols_fn = [&](const tensor& col) {
      if constexpr (aux) {
        auto [o, t, a] = xfunc::jvp(g, has_aux, primals, tangent(col));
        return std::pair{t, a};
      } else {
        return std::get<1>(xfunc::jvp(g, primals, tangent(col)));
      }
    };
    const tensor basis = plain_eye(M, is_floating(dt) ? dt : f32, ins.empty() ? cpu : ins[0].device());
    // chunk_size (an xfunc extension for jacfwd) maps the basis columns n at a time
    auto chunk = [&] {
      if constexpr (jac_options<std::tuple<Opts...>>::chunked) {
        const chunk_size_t c = find_option<is_chunk_size>(opts, chunk_size_t{0});
        if (c.n <= 0) fail("xf::jacfwd: chunk_size must be positive, got ", c.n);
        return c;
      } else {
        return chunk_size_t{std::max<std::int64_t>(M, 1)};
      }
    }();
    auto tangents = [&] {
      if constexpr (aux) return xfunc::vmap(cols_fn, rnd, chunk, out_dims(0, none))(basis);
      else return xfunc::vmap(cols_fn, rnd, chunk)(basis);
    }();
    const auto& tout = [&]() -> const auto& {
      if constexpr (aux) return tangents.first;
      else return tangents;
    }();
    using Out = std::remove_cvref_t<decltype(tout)>;
    static_assert(is_jacobian_output<Out>(), XFUNC_MSG_JACFWD_RETURN);
    if constexpr (is_jacobian_output<Out>()) {
      auto jac = per_output(tout, [&](std::size_t, const tensor& t) {  // t [M, out...]
        shape_t oshape(t.shape().begin() + 1, t.shape().end());
        std::size_t i = 0;
        return per_argnum<AN::value.size()>([&](auto j) {
          return tree_map(std::get<decltype(j)::value>(primals), [&](const tensor& x) {
            tensor piece = t.narrow(0, offset[i], offset[i + 1] - offset[i]);
            ++i;
            return piece.movedim(0, -1).reshape(concat_shapes(oshape, x.shape()));
          });
        });
      });
      if constexpr (aux) return std::pair{jac, tangents.second};
      else return jac;
    }
  }
}

template <class F, class... Opts>
struct jacrev_transform : transform_base<F> {
  static constexpr std::string_view transform_name = "jacrev";
  F f;
  std::tuple<Opts...> opts;
  template <class... Args>
  auto operator()(const Args&... args) const {
    return jacrev_call(f, opts, args...);
  }
};
template <class F, class... Opts>
struct jacfwd_transform : transform_base<F> {
  static constexpr std::string_view transform_name = "jacfwd";
  F f;
  std::tuple<Opts...> opts;
  template <class... Args>
  auto operator()(const Args&... args) const {
    return jacfwd_call(f, opts, args...);
  }
};

struct jacrev_fn {
  template <class F, class... Opts>
  constexpr auto operator()(F f, Opts... opts) const {
    static_assert((option_in<Opts, is_argnums, is_has_aux, is_chunk_size> && ...), XFUNC_MSG_JACREV_OPTIONS);
    return jacrev_transform<F, Opts...>{{}, std::move(f), {opts...}};
  }
};
struct jacfwd_fn {
  template <class F, class... Opts>
  constexpr auto operator()(F f, Opts... opts) const {
    static_assert((option_in<Opts, is_argnums, is_has_aux, is_randomness, is_chunk_size> && ...),
                  XFUNC_MSG_JACFWD_OPTIONS);
    return jacfwd_transform<F, Opts...>{{}, std::move(f), {opts...}};
  }
};
struct hessian_fn {
  template <class F, class... Opts>
  constexpr auto operator()(F f, Opts... opts) const {
    static_assert(((is_argnums<Opts>::value || std::is_same_v<Opts, chunk_size_t>) && ...), XFUNC_MSG_HESSIAN_OPTIONS);
    // argnums go to both transforms; chunk_size to the outer jacfwd, which maps the rows
    auto inner_opts = std::tuple_cat(std::conditional_t<is_argnums<Opts>::value, std::tuple<Opts>, std::tuple<>>{}...);
    auto inner = std::apply([&](auto... a) { return jacrev_fn{}(std::move(f), a...); }, inner_opts);
    return jacfwd_fn{}(std::move(inner), opts...);
  }
};
}  // namespace detail

/// jacrev(f, opts...)(args...): the jacobian by reverse mode (one vjp per output element, batched
/// with vmap). Options: argnums, has_aux, chunk_size.
inline constexpr detail::jacrev_fn jacrev{};
/// jacfwd(f, opts...)(args...): the jacobian by forward mode (one jvp per input element, batched
/// with vmap). Options: argnums, has_aux, randomness.
inline constexpr detail::jacfwd_fn jacfwd{};
/// hessian(f, argnums) = jacfwd(jacrev(f, argnums), argnums).
inline constexpr detail::hessian_fn hessian{};

}  // namespace xfunc
