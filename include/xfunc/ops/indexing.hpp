#pragma once
/// \file
/// Indexing ops: index_select and gather, and the scatter-adds that are their gradients
/// (index_add_op, scatter_add_op: internal, but full ops with every rule).
#include <cstdint>

#include <xfunc/dispatch/precompiled.hpp>
#include <xfunc/backend/index.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc {
namespace detail {

inline void check_index_tensor(const tensor& index, const char* op) {
  require_defined(index, op);
  if (index.dtype() != dtype::int64) fail(op, ": index must be an int64 tensor, got ", index.dtype());
}

/// gather(t, dim, index): out[..., j, ...] = t[..., index[..., j, ...], ...] along dim.
template <class = void>
struct gather_op_t;
using gather_op = gather_op_t<>;
template <class>
struct gather_op_t {
  static constexpr const char* name = "xf::gather";
  struct attrs {
    std::int64_t dim;
  };
  /// The index's shape against the input's (every device's kernel checks it first).
  static void check(const tensor& t, const tensor& index, const attrs& a) {
    if (index.dim() != t.dim())
      fail("xf::gather: index must have as many dimensions as the input (", t.dim(), "), got ", index.dim());
    for (std::int64_t d = 0; d < t.dim(); ++d)
      if (d != a.dim && index.size(d) > t.size(d))
        fail("xf::gather: index size ", index.size(d), " exceeds the input's size ", t.size(d), " in dimension ", d);
  }
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor &t = in[0], &index = in[1];
    check(t, index, a);
    if (t.device() == meta || index.device() == meta) return backend::meta_like(index.shape(), t.dtype());
    return backend::gather(t, a.dim, index, name);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a);
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor&, const attrs& a) {
    return call<gather_op>(a, t[0], in[1]);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs& a);
};

/// Both operands with the batch in front (an unbatched one is expanded to B).
template <int = 0>
tensor batch_in_front(const tensor& v, std::int64_t bdim, std::int64_t B) {
  if (bdim != no_bdim) return bdim_to_front(v, bdim);
  shape_t s = v.shape();
  s.insert(0, B);
  return v.unsqueeze(0).expand(s);
}

/// scatter_add(base, dim, index, src): base with src[..., j, ...] added at index[..., j, ...].
template <class = void>
struct scatter_add_op_t;
using scatter_add_op = scatter_add_op_t<>;
template <class>
struct scatter_add_op_t {
  static constexpr const char* name = "xf::scatter_add";
  static constexpr bool reads_output = true;  // jvp; NOTE: [Saved outputs]
  struct attrs {
    std::int64_t dim;
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor &base = in[0], &index = in[1], &src = in[2];
    const dtype dt = promote(base.dtype(), src.dtype());
    if (base.device() == meta) return backend::meta_like(base.shape(), dt);
    return backend::scatter_add(base, a.dim, index, src, dt, name);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    return {sum_to(g, in[0]), tensor(), sum_to(call<gather_op>({a.dim}, g, in[1]), in[2])};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor& out, const attrs& a) {
    tensor tb = t[0].defined() ? t[0] : plain_zeros_like(out);
    if (!t[2].defined()) return tb;
    return call<scatter_add_op>(a, tb, in[1], t[2]);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs& a) {
    tensor base = batch_in_front(in[0], bdims[0], B), index = batch_in_front(in[1], bdims[1], B),
           src = batch_in_front(in[2], bdims[2], B);
    return {call<scatter_add_op>({a.dim + 1}, base.contiguous(), index, src), 0};
  }
};

template <class V>
tensor_list gather_op_t<V>::vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
  return {call<scatter_add_op>({a.dim}, plain_zeros_like(in[0]).to(g.dtype()), in[1], g), tensor()};
}
template <class V>
batched gather_op_t<V>::batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                              const attrs& a) {
  tensor t = batch_in_front(in[0], bdims[0], B), index = batch_in_front(in[1], bdims[1], B);
  return {call<gather_op>({a.dim + 1}, t, index), 0};
}

/// index_select(t, dim, index): the slices of t at the (1-d) index along dim.
template <class = void>
struct index_select_op_t;
using index_select_op = index_select_op_t<>;
template <class>
struct index_select_op_t {
  static constexpr const char* name = "xf::index_select";
  struct attrs {
    std::int64_t dim;
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor &t = in[0], &index = in[1];
    shape_t s = t.shape();
    if (!s.empty()) s[static_cast<std::size_t>(a.dim)] = index.numel();
    check_shape(s, name, dtype_size(t.dtype()));  // NOTE: [Checked shape arithmetic]
    if (t.device() == meta || index.device() == meta) return backend::meta_like(s, t.dtype(), name);
    return backend::index_select(t, a.dim, index, s, name);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    return {index_add(plain_zeros_like(in[0]).to(g.dtype()), a.dim, in[1], g), tensor()};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor&, const attrs& a) {
    return call<index_select_op>(a, t[0], in[1]);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs& a) {
    if (bdims[1] == no_bdim) {
      tensor v = bdim_to_front(in[0], bdims[0]);
      return {call<index_select_op>({a.dim + 1}, v, in[1]), 0};
    }
    // a batched index: a gather with each example's index broadcast along the other dims
    tensor v = batch_in_front(in[0], bdims[0], B), idx = bdim_to_front(in[1], bdims[1]);  // idx [B, k]
    shape_t is(static_cast<std::size_t>(v.dim()), 1), target = v.shape();
    is[0] = B;
    is[static_cast<std::size_t>(a.dim + 1)] = idx.size(1);
    target[static_cast<std::size_t>(a.dim + 1)] = idx.size(1);
    return {call<gather_op>({a.dim + 1}, v, idx.reshape(is).expand(target)), 0};
  }
  static tensor index_add(const tensor& base, std::int64_t dim, const tensor& index, const tensor& src) {
    // index_add along dim == scatter_add with the index broadcast to src's shape
    shape_t is(static_cast<std::size_t>(src.dim()), 1);
    is[static_cast<std::size_t>(dim)] = index.numel();
    return call<scatter_add_op>({dim}, base, index.reshape(is).expand(src.shape()), src);
  }
};
}  // namespace detail

/// The slices of t at the int64 positions `index` (0-d or 1-d) along `dim`, as a new tensor.
template <int D>
tensor index_select(const tensor& t, std::int64_t dim, const tensor& index) {
  detail::require_defined(t, "xf::index_select");
  detail::check_index_tensor(index, "xf::index_select");
  if (index.dim() > 1) detail::fail("xf::index_select: index must be 0-d or 1-d, got shape ", index.shape());
  const std::int64_t d = detail::wrap_dim(dim, t.dim(), "dim", "xf::index_select");
  return detail::call<detail::index_select_op>({d}, t, index.dim() == 0 ? index.reshape({1}) : index);
}
/// result[..., i, ...] = t[..., index[..., i, ...], ...] along `dim` (index: int64, same number
/// of dims as t), as torch.gather.
template <int D>
tensor gather(const tensor& t, std::int64_t dim, const tensor& index) {
  detail::require_defined(t, "xf::gather");
  detail::check_index_tensor(index, "xf::gather");
  return detail::call<detail::gather_op>({detail::wrap_dim(dim, t.dim(), "dim", "xf::gather")}, t, index);
}

}  // namespace xfunc

// This header's ops, precompiled by xfunc::kernels (NOTE: [Precompiled kernels]).
#define XFUNC_OPS_INDEXING(X) X(gather_op) X(scatter_add_op) X(index_select_op)
namespace xfunc::detail {
XFUNC_OPS_INDEXING(XFUNC_EXTERN_DISPATCH)
}  // namespace xfunc::detail
#define XFUNC_FUNCTIONS_INDEXING(X)                                    \
  X(tensor index_select<0>(const tensor&, std::int64_t, const tensor&)) \
  X(tensor gather<0>(const tensor&, std::int64_t, const tensor&))
namespace xfunc {
XFUNC_FUNCTIONS_INDEXING(XFUNC_EXTERN_TEMPLATE)
}  // namespace xfunc
