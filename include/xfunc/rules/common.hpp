#pragma once
// Helpers shared by op rules: reducing a broadcast gradient, moving batch dims, aligning
// batched arguments for broadcasting.
#include <span>

#include <xfunc/core/small_list.hpp>
#include <xfunc/dispatch/dispatcher.hpp>
#include <xfunc/fwd.hpp>

namespace xfunc::detail {

// Helpers that call ops are templates (NOTE: [Lazy instantiation] in fwd.hpp).

/// Sums g down to `shape` (undoing broadcasting) and casts it to `dt`.
template <int = 0>
tensor sum_to(const tensor& g, const shape_t& shape, dtype dt) {
  if (!g.defined()) return g;
  tensor r = g;
  const auto gd = static_cast<std::size_t>(g.dim());
  if (gd < shape.size())  // a scalar cotangent reaching a larger input (only via where/expand)
    r = r.expand(shape);
  else if (!(g.shape() == shape)) {
    const std::size_t lead = gd - shape.size();
    dims_t dims;
    for (std::size_t i = 0; i < gd; ++i)
      if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) dims.push_back(static_cast<std::int64_t>(i));
    if (!dims.empty()) r = sum(r, dims, true);
    if (lead) r = r.reshape(shape);
  }
  return r.dtype() == dt ? r : r.to(dt);
}
template <int = 0>
tensor sum_to(const tensor& g, const tensor& like) { return sum_to(g, like.shape(), like.dtype()); }

/// A tangent that may be undefined (zero), as a tensor of `like`'s shape.
inline tensor or_zeros(const tensor& t, const tensor& like) { return t.defined() ? t : plain_zeros_like(like); }

/// v with its batch dim at the front (v unchanged when bdim is no_bdim or 0).
template <int = 0>
tensor bdim_to_front(const tensor& v, std::int64_t bdim) {
  return bdim == no_bdim || bdim == 0 ? v : v.movedim(bdim, 0);
}

/// Rank of the logical (per-example) tensor behind a physical value.
inline std::int64_t logical_rank(const tensor& v, std::int64_t bdim) { return v.dim() - (bdim == no_bdim ? 0 : 1); }

/// For broadcasting ops: batched values get their batch dim in front and size-1 dims after it
/// up to `rank`, the largest logical rank, so the op's own broadcasting lines the examples up.
template <int = 0>
small_list<tensor, 4> align_for_broadcast(std::span<const tensor> in, std::span<const std::int64_t> bdims,
                                          std::int64_t rank) {
  small_list<tensor, 4> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    out[i] = in[i];
    if (bdims[i] == no_bdim) continue;
    tensor v = bdim_to_front(in[i], bdims[i]);
    std::int64_t missing = rank - (v.dim() - 1);
    if (missing > 0) {
      shape_t s = v.shape();
      for (std::int64_t k = 0; k < missing; ++k) s.insert(1, 1);
      v = v.view(s);
    }
    out[i] = v;
  }
  return out;
}

/// Batch rule of every broadcasting pointwise op: align, then call the op itself.
template <class Op>
batched broadcast_batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                        const typename Op::attrs& a) {
  std::int64_t rank = 0;
  for (std::size_t i = 0; i < in.size(); ++i) rank = std::max(rank, logical_rank(in[i], bdims[i]));
  // common case: every batched value has its batch dim in front and the largest rank, so the
  // values already line up
  bool aligned = true;
  for (std::size_t i = 0; i < in.size(); ++i)
    aligned = aligned && (bdims[i] == no_bdim || (bdims[i] == 0 && in[i].dim() - 1 == rank));
  if (aligned) return {dispatch<Op>(in, a), 0};
  return {dispatch<Op>(align_for_broadcast(in, bdims, rank), a), 0};
}

/// A C++ double as a 0-d tensor of the dtype it takes next to `t` (it never widens a floating
/// tensor; with an integer tensor the result is float32).
/// The shape of a 0-d tensor, with static storage: its unused extents are zeros, which spares
/// GCC 12 a false -Wmaybe-uninitialized about copying a temporary empty shape where
/// scalar_like is inlined (and a namespace-scope variable needs no guard on each call).
inline const shape_t scalar_shape{};
/// A double written into a tensor of dtype dt (a factory's fill value, fill_) must be
/// representable: converting NaN, an infinity or a value outside [-2^63, 2^63) to int64 is
/// undefined behaviour (torch: "value cannot be converted to type int64_t without overflow").
inline void check_fill_value(double v, dtype dt, const char* fn) {
  if (dt == dtype::int64 && !(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    fail(fn, ": value ", v, " cannot be converted to int64 without overflow (it is not a number, or outside "
         "[-2^63, 2^63)); use a value in range or a floating dtype");
}
inline tensor scalar_like(double v, const tensor& t) {
  if (!t.defined()) [[unlikely]] return scalar(v);  // the op it is for names the undefined tensor
  tensor s = empty_dense(scalar_shape, promote_with_double(t.dtype()));
  visit_floating(s.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    *s.impl()->template data<T>() = static_cast<T>(v);
  });
  return s;
}

/// Non-negative, sorted, de-duplicated dims (out-of-range dims throw).
inline dims_t normalize_dims(const dims_t& dims, std::int64_t rank, const char* fn = "xf") {
  dims_t out;
  for (auto d : dims) out.push_back(wrap_dim(d, rank, "dim", fn));
  std::sort(out.begin(), out.end());
  if (const auto it = std::adjacent_find(out.begin(), out.end()); it != out.end())
    fail(fn, ": dim ", *it, " appears more than once in the dims list (counting negative dims from the end); "
         "list each dim once");
  return out;
}

}  // namespace xfunc::detail
