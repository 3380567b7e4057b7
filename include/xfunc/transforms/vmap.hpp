#pragma once
/// \file
/// xf::vmap: maps f over a batch dimension of its arguments.
#include <xfunc/core/diagnostics.hpp>
#include <xfunc/core/generator.hpp>
#include <optional>

#include <xfunc/dispatch/precompiled.hpp>
#include <xfunc/transforms/grad.hpp>

namespace xfunc {
namespace detail {

/// in_dims entry for one argument: default (0 for tensor leaves), an integer, none or nested.
struct default_dim_t {};
/// default_dim_t for every I (for a pack expansion that nvcc's host-side rewrite keeps).
template <std::size_t>
struct default_dim_for {
  using type = default_dim_t;
};

template <class Arg, class E>
constexpr bool in_dim_fits() {
  if constexpr (std::is_same_v<E, none_t> || std::is_same_v<E, default_dim_t>) return true;
  else if constexpr (std::is_integral_v<E> || std::is_same_v<E, std::optional<std::int64_t>>)
    return has_tensor_leaves<Arg>();
  else if constexpr (is_in_dims<E>::value) {
    if constexpr (is_std_tuple<Arg>::value) {
      if constexpr (std::tuple_size_v<Arg> != E::size) return false;
      else
        return []<std::size_t... I>(std::index_sequence<I...>) {
          return (in_dim_fits<std::tuple_element_t<I, Arg>, std::tuple_element_t<I, decltype(E::entries)>>() && ...);
        }(std::make_index_sequence<E::size>{});
    } else {
      return false;
    }
  } else {
    return false;
  }
}

/// Calls f(leaf, dim-or-nullopt) for each tensor leaf of arg under in_dims entry e.
template <class Arg, class E, class F>
Arg map_in_dims(const Arg& arg, const E& e, F&& f) {
  if constexpr (std::is_same_v<E, none_t>) {
    return tree_map(arg, [&](const tensor& t) { return f(t, std::optional<std::int64_t>{}); });
  } else if constexpr (std::is_same_v<E, default_dim_t>) {
    return tree_map(arg, [&](const tensor& t) { return f(t, std::optional<std::int64_t>{0}); });
  } else if constexpr (std::is_integral_v<E>) {
    return tree_map(arg, [&](const tensor& t) { return f(t, std::optional<std::int64_t>{e}); });
  } else if constexpr (std::is_same_v<E, std::optional<std::int64_t>>) {
    return tree_map(arg, [&](const tensor& t) { return f(t, e); });
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return Arg{map_in_dims(std::get<I>(arg), std::get<I>(e.entries), f)...};
    }(std::make_index_sequence<E::size>{});
  }
}

/// Moves the batch dim of an output leaf of layer L to out_dim (or expands an unbatched one).
template <int = 0>
tensor unwrap_batched_output(const tensor& t, const layer* L, std::optional<std::int64_t> out_dim) {
  if (!out_dim) {
    if (belongs_to(t, L))
      fail("xf::vmap: an output with out_dims none depends on the mapped inputs (it is batched); "
           "give it an integer out_dim");
    return t;
  }
  const std::int64_t d = wrap_new_dim(*out_dim, t.dim(), "out_dim", "xf::vmap");
  if (belongs_to(t, L)) {
    const tensor& v = t.impl()->inner;
    return v.movedim(t.impl()->bdim, d);
  }
  shape_t s = t.shape();
  s.insert(static_cast<std::size_t>(d), L->batch_size);
  return t.unsqueeze(d).expand(s);
}
XFUNC_EXTERN_TEMPLATE(tensor unwrap_batched_output<0>(const tensor&, const layer*, std::optional<std::int64_t>))

template <class E>
std::optional<std::int64_t> out_dim_value(const E& e) {
  if constexpr (std::is_same_v<E, none_t>) return std::nullopt;
  else return static_cast<std::int64_t>(e);
}

template <class R, class OD>
R unwrap_outputs(const R& r, const OD& od, const layer* L) {
  if constexpr (OD::size == 1) {
    auto d = out_dim_value(std::get<0>(od.entries));
    return tree_map(r, [&](const tensor& t) { return unwrap_batched_output(t, L, d); });
  } else {
    static_assert(is_std_tuple<R>::value && std::tuple_size_v<R> == OD::size, XFUNC_MSG_VMAP_OUT_DIMS_ARITY);
    if constexpr (is_std_tuple<R>::value && std::tuple_size_v<R> == OD::size)
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return R{tree_map(std::get<I>(r), [&](const tensor& t) {
          return unwrap_batched_output(t, L, out_dim_value(std::get<I>(od.entries)));
        })...};
      }(std::make_index_sequence<OD::size>{});
    else return r;
  }
}

/// The out_dim of every output leaf, in flattening order.
template <class R, class OD>
std::vector<std::optional<std::int64_t>> leaf_out_dims(const R& r, const OD& od) {
  std::vector<std::optional<std::int64_t>> out;
  if constexpr (OD::size == 1) {
    tree_for_each(r, [&](const tensor&) { out.push_back(out_dim_value(std::get<0>(od.entries))); });
  } else if constexpr (is_std_tuple<R>::value && std::tuple_size_v<R> == OD::size) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (tree_for_each(std::get<I>(r), [&](const tensor&) { out.push_back(out_dim_value(std::get<I>(od.entries))); }),
       ...);
    }(std::make_index_sequence<OD::size>{});
  }
  return out;
}

template <class F, class... Opts>
struct vmap_transform : transform_base<F> {
  static constexpr std::string_view transform_name = "vmap";
  F f;
  std::tuple<Opts...> opts;

  template <class... Args>
  auto operator()(const Args&... args) const {
    auto in = find_option<is_in_dims>(opts, default_in_dims<sizeof...(Args)>());
    using IN = decltype(in);
    static_assert(IN::size == sizeof...(Args), XFUNC_MSG_VMAP_IN_DIMS_ARITY);
    if constexpr (IN::size == sizeof...(Args)) {
      constexpr bool fits = []<std::size_t... I>(std::index_sequence<I...>) {
        return (in_dim_fits<Args, std::tuple_element_t<I, decltype(IN::entries)>>() && ...);
      }(std::index_sequence_for<Args...>{});
      static_assert(fits, XFUNC_MSG_VMAP_IN_DIM_NON_TENSOR);
      if constexpr (fits) return call(in, args...);
    }
  }

 private:
  template <std::size_t N>
  static constexpr auto default_in_dims() {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return in_dims_t<typename default_dim_for<I>::type...>{};
    }(std::make_index_sequence<N>{});
  }

  template <class IN, class... Args>
  auto call(const IN& in, const Args&... args) const {
    // find the batch size, checking every mapped leaf
    std::optional<std::int64_t> B;
    auto check = [&](const tensor& t, std::optional<std::int64_t> d) {
      if (!d) return t;
      if (!t.defined())
        fail("xf::vmap: a mapped argument holds an undefined tensor (a default-constructed xf::tensor); assign it a "
             "value, or give it in_dim xf::none");
      if (t.dim() == 0)
        fail("xf::vmap: in_dim ", *d, " given for a 0-d tensor, which has no dimension to map over; "
             "use xf::none for it");
      const std::int64_t r = t.dim();
      if (*d < -r || *d >= r)
        fail("xf::vmap: in_dim ", *d, " is out of range for an input with ", r, " dimensions (shape ", t.shape(),
             "); use a value in [", -r, ", ", r - 1, "]");
      const std::int64_t n = t.size(*d);
      if (B && *B != n)
        fail("xf::vmap: all mapped inputs must have the same size in the mapped dimension; got sizes ", *B,
             " and ", n);
      B = n;
      return t;
    };
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (map_in_dims(args, std::get<I>(in.entries), check), ...);
    }(std::index_sequence_for<Args...>{});
    if (!B)
      fail("xf::vmap: at least one argument must be mapped: every in_dim is none or no argument holds a "
           "tensor; map at least one tensor argument");
    constexpr bool chunked = (std::is_same_v<Opts, chunk_size_t> || ...);
    if constexpr (chunked) {
      const std::int64_t n = find_option<is_chunk_size>(opts, chunk_size_t{0}).n;
      if (n <= 0) fail("xf::vmap: chunk_size must be positive, got ", n);
      if (n < *B) return run_chunked(in, *B, n, args...);
    }
    return run(in, *B, args...);
  }

  /// Maps the examples [0, B) in one layer.
  template <class IN, class... Args>
  auto run(const IN& in, std::int64_t B, const Args&... args) const {
    const xfunc::randomness rnd = find_option<is_randomness>(opts, xfunc::randomness::error);
    layer_guard guard(transform_kind::vmap, B, rnd);
    const layer_ptr& L = guard.get();
    auto wrap = [&](const tensor& t, std::optional<std::int64_t> d) {
      if (!d) return t;
      return wrap_batched(strip_dead(t), wrap_dim(*d, t.dim()), L);
    };
    auto wrapped = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Args...>{map_in_dims(args, std::get<I>(in.entries), wrap)...};
    }(std::index_sequence_for<Args...>{});
    auto result = std::apply(f, wrapped);
    using R = decltype(result);
    auto od = find_option<is_out_dims>(opts, out_dims(0));
    return unwrap_outputs<R>(result, od, L.get());
  }

  // NOTE: [Chunked vmap]
  // With chunk_size(n) the examples are mapped n at a time, each chunk in its own vmap layer,
  // and the outputs are concatenated along their out_dim: the result equals the unchunked one
  // while intermediate tensors hold n examples instead of B (lower peak memory). Random values
  // too under randomness::same: each chunk draws from where the first started (the generator's
  // offset is rewound, as torch.func restores its RNG state per chunk), so every chunk gets the
  // one value of the whole batch. Under randomness::different each chunk draws its own examples'
  // values in turn: still one per example, but in general not the unchunked call's numbers (as
  // in torch.func).
  template <class IN, class... Args>
  auto run_chunked(const IN& in, std::int64_t B, std::int64_t n, const Args&... args) const {
    using R = decltype(run(in, B, args...));
    std::vector<R> parts;
    const bool same = find_option<is_randomness>(opts, xfunc::randomness::error) == xfunc::randomness::same;
    const std::uint64_t first_offset = same ? rng_offset() : 0;
    for (std::int64_t s = 0; s < B; s += n) {
      const std::int64_t len = std::min(n, B - s);
      if (same) set_rng_offset(first_offset);
      auto slice = [&](const tensor& t, std::optional<std::int64_t> d) { return d ? t.narrow(*d, s, len) : t; };
      parts.push_back([&]<std::size_t... I>(std::index_sequence<I...>) {
        return run(in, len, map_in_dims(args, std::get<I>(in.entries), slice)...);
      }(std::index_sequence_for<Args...>{}));
    }
    auto od = find_option<is_out_dims>(opts, out_dims(0));
    const auto dims = leaf_out_dims(parts[0], od);
    std::vector<std::vector<tensor>> leaves;
    for (const auto& p : parts) leaves.push_back(tree_leaves(p));
    std::size_t k = 0;
    return tree_map(parts[0], [&](const tensor& t) {
      const std::size_t leaf = k++;
      if (!dims[leaf]) return t;
      std::vector<tensor> pieces;
      for (const auto& l : leaves) pieces.push_back(l[leaf]);
      return cat(pieces, wrap_dim(*dims[leaf], t.dim()));
    });
  }
};

struct vmap_fn {
  template <class F, class... Opts>
  constexpr auto operator()(F f, Opts... opts) const {
    static_assert((option_in<Opts, is_in_dims, is_out_dims, is_randomness, is_chunk_size> && ...),
                  XFUNC_MSG_VMAP_OPTIONS);
    return vmap_transform<F, Opts...>{{}, std::move(f), {opts...}};
  }
};
}  // namespace detail

/// vmap(f, opts...)(args...): f mapped over dim in_dims of its arguments (default 0).
inline constexpr detail::vmap_fn vmap{};

}  // namespace xfunc
