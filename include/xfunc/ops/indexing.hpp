#pragma once
// Indexing ops: index_select and gather, and the scatter-adds that are their gradients
// (index_add_op, scatter_add_op: internal, but full ops with every rule).
#include <xfunc/backend/cpu.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc {
namespace detail {

inline void check_index_tensor(const tensor& index, const char* op) {
  if (index.dtype() != dtype::int64) fail(op, ": index must be an int64 tensor, got ", index.dtype());
}

/// Visits every position of `ishape` (row-major) with the offset of the same position in a
/// contiguous tensor of shape `tshape`, ignoring dimension `dim` (the indexed one).
template <class F>
void for_each_gather_pos(const shape_t& ishape, const shape_t& tshape, std::int64_t dim, F&& f) {
  shape_t tst = contiguous_strides(tshape);
  shape_t st = tst;
  st[static_cast<std::size_t>(dim)] = 0;
  std::int64_t i = 0;
  backend::for_each_offset(ishape, st, 0, [&](std::int64_t off) { f(i++, off); });
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
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor &t = in[0], &index = in[1];
    if (index.dim() != t.dim())
      fail("xf::gather: index must have as many dimensions as the input (", t.dim(), "), got ", index.dim());
    for (std::int64_t d = 0; d < t.dim(); ++d)
      if (d != a.dim && index.size(d) > t.size(d))
        fail("xf::gather: index size ", index.size(d), " exceeds the input's size ", t.size(d), " in dimension ", d);
    if (t.device() == meta || index.device() == meta) return backend::meta_like(index.shape(), t.dtype());
    tensor tc = backend::contiguous_as(t, t.dtype()), ic = backend::contiguous_as(index, dtype::int64);
    tensor out = empty_dense(index.shape(), t.dtype());
    const std::int64_t n = t.size(a.dim), sd = contiguous_strides(t.shape())[static_cast<std::size_t>(a.dim)];
    const std::int64_t* ip = ic.impl()->data<std::int64_t>();
    visit_dtype(t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* tp = tc.impl()->template data<T>();
      T* op = out.impl()->template data<T>();
      for_each_gather_pos(index.shape(), t.shape(), a.dim, [&](std::int64_t i, std::int64_t off) {
        std::int64_t k = ip[i];
        if (k < -n || k >= n) fail("xf::gather: index ", k, " is out of range for dimension ", a.dim, " of size ", n);
        op[i] = tp[off + (k < 0 ? k + n : k) * sd];
      });
    });
    return out;
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
    tensor out = backend::contiguous_as(base, dt).clone();
    tensor ic = backend::contiguous_as(index, dtype::int64);
    tensor sc = backend::materialize(src, index.shape(), dt);
    const std::int64_t n = base.size(a.dim), sd = contiguous_strides(base.shape())[static_cast<std::size_t>(a.dim)];
    const std::int64_t* ip = ic.impl()->data<std::int64_t>();
    visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* sp = sc.impl()->template data<T>();
      T* op = out.impl()->template data<T>();
      for_each_gather_pos(index.shape(), base.shape(), a.dim, [&](std::int64_t i, std::int64_t off) {
        std::int64_t k = ip[i];
        if (k < -n || k >= n) fail("xf::scatter_add: index ", k, " is out of range for dimension ", a.dim, " of size ", n);
        op[off + (k < 0 ? k + n : k) * sd] += sp[i];
      });
    });
    return out;
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
    // as a gather with the index broadcast along every other dim
    shape_t ishape(s.size(), 1);
    if (!s.empty()) ishape[static_cast<std::size_t>(a.dim)] = index.numel();
    tensor idx = index.reshape(ishape).expand(s);
    return gather_op::kernel(std::array<tensor, 2>{t, idx}, {a.dim});
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

template <int D>
tensor index_select(const tensor& t, std::int64_t dim, const tensor& index) {
  detail::check_index_tensor(index, "xf::index_select");
  if (index.dim() > 1) detail::fail("xf::index_select: index must be 0-d or 1-d, got shape ", index.shape());
  const std::int64_t d = detail::wrap_dim(dim, t.dim());
  return detail::call<detail::index_select_op>({d}, t, index.dim() == 0 ? index.reshape({1}) : index);
}
template <int D>
tensor gather(const tensor& t, std::int64_t dim, const tensor& index) {
  detail::check_index_tensor(index, "xf::gather");
  return detail::call<detail::gather_op>({detail::wrap_dim(dim, t.dim())}, t, index);
}

}  // namespace xfunc
