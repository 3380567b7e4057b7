#pragma once
/// \file
/// Shape ops and views. Views share storage with their input (as torch's do); their batch rules
/// move the batch dim to the front and shift the op's dims by one.
#include <numeric>

#include <xfunc/dispatch/precompiled.hpp>
#include <xfunc/backend/cpu.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc {
namespace detail {

/// s without entry i. (Built by push_back rather than shape_t::erase, whose shifting of the
/// inline array trips GCC's -Wmaybe-uninitialized once inlined into callers.)
inline shape_t without(const shape_t& s, std::size_t i) {
  shape_t out;
  for (std::size_t k = 0; k < s.size(); ++k)
    if (k != i) out.push_back(s[k]);
  return out;
}

/// A dense alias of t with another shape/strides/offset over the same storage.
inline tensor alias_of(const tensor& t, const shape_t& shape, const shape_t& strides, std::int64_t offset) {
  auto impl = make_pooled<tensor_impl>();
  const tensor_impl& s = *t.impl();
  s.prepare_access();  // a view shares the storage: a deferred value gets one first
  impl->dt = s.dt;
  impl->dev = s.dev;
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  impl->store = s.store;
  return tensor(std::move(impl));
}

/// Replaces one -1 entry by the size that keeps numel; checks the sizes multiply out, with
/// checked arithmetic (NOTE: [Checked shape arithmetic]): a product that does not fit in int64_t
/// throws ("shape") rather than wrapping around to a plausible count.
inline shape_t infer_shape(shape_t s, std::int64_t numel, const char* op) {
  int infer = -1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) fail(op, ": only one dimension can be -1, got shape ", s);
      infer = static_cast<int>(i);
    } else if (s[i] < 0) {
      fail(op, ": invalid size ", s[i], " in shape ", s, " (a negative extent; only one -1 is allowed)");
    }
  }
  if (infer < 0) {
    // the count of s must fit (and, for 0 elements, its contiguous strides)
    if (check_shape(s, op) != numel) fail(op, ": shape ", s, " is invalid for a tensor of ", numel, " elements");
    return s;
  }
  shape_t rest = s;
  rest[static_cast<std::size_t>(infer)] = 1;
  std::int64_t known;
  if (!try_numel(rest, known)) [[unlikely]]
    fail(op, ": shape ", s, " is invalid for a tensor of ", numel, " elements: its extents other than -1 multiply to ",
         exact_numel(rest), ", more than int64_t can hold");
  if (known == 0 || numel % known != 0) fail(op, ": shape ", s, " is invalid for a tensor of ", numel, " elements");
  s[static_cast<std::size_t>(infer)] = numel / known;
  if (numel == 0) check_shape(s, op);  // 0 elements: the contiguous strides must still fit
  return s;
}

/// Strides that view (oldshape, oldstride) as newshape without copying, if there are any
/// (the algorithm of torch's computeStride).
inline bool view_strides(const shape_t& os, const shape_t& ost, const shape_t& ns, shape_t& nst) {
  nst = shape_t(ns.size());
  if (numel_of(os) == 0 || os.empty()) {
    nst = contiguous_strides(ns);
    return true;
  }
  std::int64_t view_d = static_cast<std::int64_t>(ns.size()) - 1;
  std::int64_t chunk = ost.back(), tensor_numel = 1, view_numel = 1;
  for (std::int64_t td = static_cast<std::int64_t>(os.size()) - 1; td >= 0; --td) {
    auto tdu = static_cast<std::size_t>(td);
    tensor_numel *= os[tdu];  // a partial count of a tensor with elements: fits
    // a block of dims ends where the next stride is not the block's span (a span that does not
    // fit in int64_t cannot be a stride: NOTE: [Checked shape arithmetic])
    std::int64_t span = 0;
    if (td == 0 || (os[tdu - 1] != 1 && (!mul_fits(tensor_numel, chunk, span) || ost[tdu - 1] != span))) {
      while (view_d >= 0 && (view_numel < tensor_numel || ns[static_cast<std::size_t>(view_d)] == 1)) {
        // fits (it is below the block's last offset), except perhaps for a size-1 dim of the new
        // shape (view_numel == tensor_numel there), whose stride is never used
        (void)mul_fits(view_numel, chunk, nst[static_cast<std::size_t>(view_d)]);
        view_numel *= ns[static_cast<std::size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk = ost[tdu - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

template <class = void>
struct view_op_t;
using view_op = view_op_t<>;
template <class>
struct view_op_t {
  static constexpr const char* name = "xf::view";
  static constexpr const char* copy_name = "xf::view_copy";  // NOTE: [Views as copies]
  static constexpr bool is_view = true;
  struct attrs {
    shape_t shape;  // fully inferred (no -1)
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor_impl& s = *in[0].impl();
    shape_t st;
    if (!view_strides(s.shape, s.strides, a.shape, st))
      fail("xf::view: shape ", a.shape, " is not compatible with the input's shape ", s.shape,
           " and strides; use reshape(), which copies when it must");
    return alias_of(in[0], a.shape, st, s.offset);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs&) {
    return {g.reshape(in[0].shape())};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].reshape(a.shape);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs& a) {
    tensor v = bdim_to_front(in[0], bdims[0]);
    shape_t s = a.shape;
    s.insert(0, B);
    const tensor_impl* d = dense_of(v);
    shape_t st;
    // The logical view may exist while the moved physical value is not viewable; copy then.
    if (d && d->shape == v.shape() && !view_strides(d->shape, d->strides, s, st)) v = v.contiguous();
    return {dispatch<view_op>(std::span<const tensor>(&v, 1), attrs{s}), 0};
  }
};

template <class = void>
struct permute_op_t;
using permute_op = permute_op_t<>;
template <class>
struct permute_op_t {
  static constexpr const char* name = "xf::permute";
  static constexpr const char* copy_name = "xf::permute_copy";  // NOTE: [Views as copies]
  static constexpr bool is_view = true;
  struct attrs {
    dims_t dims;  // a permutation of 0..rank-1
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor_impl& s = *in[0].impl();
    shape_t shape(a.dims.size()), st(a.dims.size());
    for (std::size_t i = 0; i < a.dims.size(); ++i) {
      shape[i] = s.shape[static_cast<std::size_t>(a.dims[i])];
      st[i] = s.strides[static_cast<std::size_t>(a.dims[i])];
    }
    return alias_of(in[0], shape, st, s.offset);
  }
  static dims_t inverse(const dims_t& p) {
    dims_t inv(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) inv[static_cast<std::size_t>(p[i])] = static_cast<std::int64_t>(i);
    return inv;
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs& a) {
    return {g.permute(inverse(a.dims))};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].permute(a.dims);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    tensor v = bdim_to_front(in[0], bdims[0]);
    dims_t d{0};
    for (auto x : a.dims) d.push_back(x + 1);
    return {dispatch<permute_op>(std::span<const tensor>(&v, 1), attrs{d}), 0};
  }
};

template <class = void>
struct expand_op_t;
using expand_op = expand_op_t<>;
template <class>
struct expand_op_t {
  static constexpr const char* name = "xf::expand";
  static constexpr const char* copy_name = "xf::expand_copy";  // NOTE: [Views as copies]
  static constexpr bool is_view = true;
  static constexpr bool view_writable = false;  // expanded elements share memory
  struct attrs {
    shape_t shape;  // no -1 entries
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor_impl& s = *in[0].impl();
    // no allocation, but the view's element count and bytes must fit (NOTE: [Checked shape arithmetic])
    check_shape(a.shape, name, dtype_size(s.dt));
    if (a.shape.size() < s.shape.size())
      fail("xf::expand: the target shape ", a.shape, " has fewer dimensions than the input's shape ", s.shape,
           "; give at least as many dimensions (new ones go in front)");
    const std::size_t lead = a.shape.size() - s.shape.size();
    shape_t st(a.shape.size(), 0);
    for (std::size_t i = 0; i < s.shape.size(); ++i) {
      if (s.shape[i] == a.shape[lead + i]) st[lead + i] = s.strides[i];
      else if (s.shape[i] != 1)
        fail("xf::expand: cannot expand dimension ", i, " of size ", s.shape[i], " of shape ", s.shape, " to shape ",
             a.shape, " (only size-1 dimensions expand; give the same size, or -1, for the others)");
    }
    return alias_of(in[0], a.shape, st, s.offset);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs&) {
    return {sum_to(g, in[0])};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].expand(a.shape);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs& a) {
    tensor v = bdim_to_front(in[0], bdims[0]);
    shape_t s = v.shape();
    while (s.size() < a.shape.size() + 1) s.insert(1, 1);
    v = v.view(s);
    shape_t target = a.shape;
    target.insert(0, B);
    return {dispatch<expand_op>(std::span<const tensor>(&v, 1), attrs{target}), 0};
  }
};

/// Gradient of taking a slice [start, start+len) along dim of a tensor of `shape`: g padded
/// with zeros (written with cat so it is differentiable and batchable itself).
template <int = 0>
tensor pad_slice_grad(const tensor& g, const shape_t& shape, std::int64_t dim, std::int64_t start,
                             std::int64_t len) {
  std::vector<tensor> parts;
  const auto du = static_cast<std::size_t>(dim);
  if (start > 0) {
    shape_t s = shape;
    s[du] = start;
    parts.push_back(plain_full(s, 0.0, g.dtype(), g.device()));
  }
  parts.push_back(g);
  if (start + len < shape[du]) {
    shape_t s = shape;
    s[du] = shape[du] - start - len;
    parts.push_back(plain_full(s, 0.0, g.dtype(), g.device()));
  }
  return parts.size() == 1 ? g : cat(parts, dim);
}

template <class = void>
struct narrow_op_t;
using narrow_op = narrow_op_t<>;
template <class>
struct narrow_op_t {
  static constexpr const char* name = "xf::narrow";
  static constexpr const char* copy_name = "xf::narrow_copy";  // NOTE: [Views as copies]
  static constexpr bool is_view = true;
  struct attrs {
    std::int64_t dim, start, len;  // normalised
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor_impl& s = *in[0].impl();
    shape_t shape = s.shape;
    shape[static_cast<std::size_t>(a.dim)] = a.len;
    return alias_of(in[0], shape, s.strides, s.offset + a.start * s.strides[static_cast<std::size_t>(a.dim)]);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    return {pad_slice_grad(g, in[0].shape(), a.dim, a.start, a.len)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].narrow(a.dim, a.start, a.len);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    tensor v = bdim_to_front(in[0], bdims[0]);
    return {dispatch<narrow_op>(std::span<const tensor>(&v, 1), attrs{a.dim + 1, a.start, a.len}), 0};
  }
};

template <class = void>
struct select_op_t;
using select_op = select_op_t<>;
template <class>
struct select_op_t {
  static constexpr const char* name = "xf::select";
  static constexpr const char* copy_name = "xf::select_copy";  // NOTE: [Views as copies]
  static constexpr bool is_view = true;
  struct attrs {
    std::int64_t dim, index;  // normalised
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor_impl& s = *in[0].impl();
    const auto du = static_cast<std::size_t>(a.dim);
    const shape_t shape = without(s.shape, du), st = without(s.strides, du);
    return alias_of(in[0], shape, st, s.offset + a.index * s.strides[du]);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    return {pad_slice_grad(g.unsqueeze(a.dim), in[0].shape(), a.dim, a.index, 1)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].select(a.dim, a.index);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    tensor v = bdim_to_front(in[0], bdims[0]);
    return {dispatch<select_op>(std::span<const tensor>(&v, 1), attrs{a.dim + 1, a.index}), 0};
  }
};

/// diagonal over dims (d1, d2); the diagonal becomes the last dim (torch's convention).
template <class = void>
struct diagonal_op_t;
using diagonal_op = diagonal_op_t<>;
template <class>
struct diagonal_op_t {
  static constexpr const char* name = "xf::diagonal";
  static constexpr const char* copy_name = "xf::diagonal_copy";  // NOTE: [Views as copies]
  static constexpr bool is_view = true;
  struct attrs {
    std::int64_t d1, d2;  // normalised, d1 != d2
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor_impl& s = *in[0].impl();
    const auto u1 = static_cast<std::size_t>(a.d1), u2 = static_cast<std::size_t>(a.d2);
    shape_t shape, st;
    for (std::size_t i = 0; i < s.shape.size(); ++i)
      if (i != u1 && i != u2) {
        shape.push_back(s.shape[i]);
        st.push_back(s.strides[i]);
      }
    const std::int64_t len = std::min(s.shape[u1], s.shape[u2]);
    shape.push_back(len);
    // the sum fits unless the diagonal has at most one element, where the stride is never used
    std::int64_t dst = 1;
    if (!add_fits(s.strides[u1], s.strides[u2], dst) && len > 1) [[unlikely]]
      fail("xf::diagonal: the diagonal stride of a tensor of shape ", s.shape, " does not fit in int64_t");
    st.push_back(dst);
    return alias_of(in[0], shape, st, s.offset);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    // place g[..., i] at (i, i) of an (n, m) block: g times an identity mask, then move the two
    // block dims back to d1, d2
    const std::int64_t n = in[0].size(a.d1), m = in[0].size(a.d2);
    const std::int64_t L = std::min(n, m);
    tensor e = plain_eye(n, g.dtype(), g.device());
    if (m != n) e = m > n ? cat({e, plain_full({n, m - n}, 0.0, g.dtype(), g.device())}, 1) : e.narrow(1, 0, m);
    tensor block = (L == n ? g.unsqueeze(-1) : g.unsqueeze(-2)) * e;  // [..., n, m]
    const std::int64_t r = block.dim();
    dims_t perm;
    std::int64_t next = 0;
    for (std::int64_t i = 0; i < r; ++i) {
      if (i == a.d1) perm.push_back(r - 2);
      else if (i == a.d2) perm.push_back(r - 1);
      else perm.push_back(next++);
    }
    return {block.permute(perm)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return dispatch<diagonal_op>(t.subspan(0, 1), a);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    tensor v = bdim_to_front(in[0], bdims[0]);
    return {dispatch<diagonal_op>(std::span<const tensor>(&v, 1), attrs{a.d1 + 1, a.d2 + 1}), 0};
  }
};

template <class = void>
struct clone_op_t;
using clone_op = clone_op_t<>;
template <class>
struct clone_op_t {
  static constexpr const char* name = "xf::clone";
  using attrs = no_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs&) {
    if (in[0].device() == meta) return backend::meta_like(in[0].shape(), in[0].dtype(), name);
    tensor out = empty_dense(in[0].shape(), in[0].dtype(), cpu, name);
    visit_dtype(in[0].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::gather_into<T>(*in[0].impl(), in[0].shape(), in[0].impl()->strides, out.impl()->template data<T>());
    });
    return out;
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs&) { return {g}; }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs&) {
    return t[0];
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return {dispatch<clone_op>(in, a), bdims[0]};
  }
};

/// detach: an alias with no derivative at any grad or jvp layer (batching is kept).
template <class = void>
struct detach_op_t;
using detach_op = detach_op_t<>;
template <class>
struct detach_op_t {
  static constexpr const char* name = "xf::detach";
  static constexpr const char* copy_name = "xf::detach_copy";  // NOTE: [Views as copies]
  static constexpr bool is_view = true;
  using attrs = no_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs&) {
    const tensor_impl& s = *in[0].impl();
    return alias_of(in[0], s.shape, s.strides, s.offset);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return {dispatch<detach_op>(in, a), bdims[0]};
  }
};

template <class Op>
tensor view_as_copy(std::span<const tensor> in, const typename Op::attrs& a) {
  auto copy = [a](std::span<const tensor> xs) {
    const tensor v = run_kernel<Op>(xs, a);
    return run_kernel<clone_op>(std::span<const tensor>(&v, 1), {});
  };
  return tls_trace ? tls_trace->record_kernel(Op::copy_name, in, std::move(copy)) : copy(in);
}

template <class = void>
struct to_dtype_op_t;
using to_dtype_op = to_dtype_op_t<>;
template <class>
struct to_dtype_op_t {
  static constexpr const char* name = "xf::to";
  struct attrs {
    dtype dt;
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    if (in[0].device() == meta) return backend::meta_like(in[0].shape(), a.dt);
    return backend::contiguous_as(in[0], a.dt);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs&) {
    return {is_floating(in[0].dtype()) ? g.to(in[0].dtype()) : tensor()};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].to(a.dt);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return {dispatch<to_dtype_op>(in, a), bdims[0]};
  }
};

template <class = void>
struct to_device_op_t;
using to_device_op = to_device_op_t<>;
/// A copy between the cpu and a device (NOTE: [Device backends]); its cotangent and tangent move
/// back and forth the same way, and under vmap the batch stays where it is in the copy.
template <class>
struct to_device_op_t {
  static constexpr const char* name = "xf::to";
  static constexpr bool device_generic = true;  // the copy itself is the device's business
  struct attrs {
    device dev;
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor& x = in[0];
    const device from = x.device();
    if (from == a.dev) return x;
    if (a.dev == meta) return backend::meta_like(x.shape(), x.dtype(), name);
    if (from == meta)
      fail("xf::to: a meta tensor has no data to move to ", a.dev, "; create the tensor on that device instead");
    if (from == cpu) return backend_of(a.dev, name).upload(x, a.dev);
    tensor host = backend_of(from, name).download(x);
    return a.dev == cpu ? host : backend_of(a.dev, name).upload(host, a.dev);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs&) {
    return {g.to(in[0].device())};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].to(a.dev);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return {dispatch<to_device_op>(in, a), bdims[0]};
  }
};

template <class = void>
struct cat_op_t;
using cat_op = cat_op_t<>;
template <class>
struct cat_op_t {
  static constexpr const char* name = "xf::cat";
  struct attrs {
    std::int64_t dim;  // normalised
  };
  /// The result's shape and dtype (checked: NOTE: [Checked shape arithmetic]); whether any
  /// input is a meta tensor. Every device's kernel starts here.
  static shape_t result(std::span<const tensor> in, const attrs& a, dtype& dt, bool& is_meta) {
    const auto du = static_cast<std::size_t>(a.dim);
    shape_t shape = in[0].shape();
    dt = in[0].dtype();
    is_meta = false;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const shape_t& s = in[i].shape();
      if (s.size() != shape.size())
        fail("xf::cat: all tensors need the same number of dimensions; tensor 0 has ", shape.size(),
             " and tensor ", i, " has ", s.size());
      for (std::size_t d = 0; d < s.size(); ++d)
        if (d != du && s[d] != shape[d])
          fail("xf::cat: sizes must match except in dimension ", a.dim, "; tensor ", i, " has shape ", s,
               " but tensor 0 has ", in[0].shape());
      if (i && !add_fits(shape[du], s[du], shape[du])) [[unlikely]]
        fail_cat_extent(in, du);
      dt = promote(dt, in[i].dtype());
      is_meta = is_meta || in[i].device() == meta;
    }
    return shape;
  }
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const auto du = static_cast<std::size_t>(a.dim);
    dtype dt;
    bool is_meta;
    const shape_t shape = result(in, a, dt, is_meta);
    if (is_meta) return backend::meta_like(shape, dt, name);
    tensor out = empty_dense(shape, dt, cpu, name);
    if (out.numel() == 0) return out;  // (and the products below are partial counts that fit)
    // each input straight into its slice of the result, through its own strides (NOTE: [Strided copies])
    const shape_t out_strides = out.impl()->strides;
    visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.impl()->template data<T>();
      std::int64_t start = 0;
      for (const tensor& t : in) {
        const tensor_impl& s = *t.impl();
        s.prepare_access();
        visit_dtype(s.dt, [&](auto stag) {
          using S = typename decltype(stag)::type;
          const S* p = reinterpret_cast<const S*>(s.store->data) + s.offset;
          backend::strided_copy<T, S>(s.shape, o + start * out_strides[du], out_strides, p, s.strides);
        });
        start += s.shape[du];
      }
    });
    return out;
  }
  /// The result's extent in dimension du (the sum of the inputs') does not fit in int64_t.
  [[noreturn, gnu::cold]] static void fail_cat_extent(std::span<const tensor> in, std::size_t du) {
    exact_count sum;
    std::ostringstream shapes;
    for (std::size_t i = 0; i < in.size(); ++i) {
      sum += exact_count(static_cast<std::uint64_t>(in[i].shape()[du]));
      shapes << (i ? ", " : "") << in[i].shape();
    }
    fail(name, ": the result shape would have an extent of ", sum, " in dimension ", du,
         " (the sum of the inputs' extents there), more than int64_t can hold; input shapes ", shapes.str());
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    tensor_list gs;
    std::int64_t start = 0;
    for (const tensor& t : in) {
      const std::int64_t len = t.size(a.dim);
      gs.push_back(sum_to(g.narrow(a.dim, start, len), t));
      start += len;
    }
    return gs;
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor&, const attrs& a) {
    std::vector<tensor> ts;
    for (std::size_t i = 0; i < in.size(); ++i) ts.push_back(or_zeros(t[i], in[i]));
    return cat(ts, a.dim);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs& a) {
    std::vector<tensor> vs;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (bdims[i] != no_bdim) {
        vs.push_back(bdim_to_front(in[i], bdims[i]));
      } else {
        shape_t s = in[i].shape();
        s.insert(0, B);
        vs.push_back(in[i].unsqueeze(0).expand(s));
      }
    }
    return {dispatch<cat_op>(vs, attrs{a.dim + 1}), 0};
  }
};

template <class = void>
struct flip_op_t;
using flip_op = flip_op_t<>;
template <class>
struct flip_op_t {
  static constexpr const char* name = "xf::flip";
  static constexpr bool device_generic = true;  // a reversed alias and a clone, which each device does
  struct attrs {
    dims_t dims;  // normalised
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor_impl& s = *in[0].impl();
    shape_t st = s.strides;
    std::int64_t off = s.offset;
    for (auto d : a.dims) {
      const auto du = static_cast<std::size_t>(d);
      if (s.shape[du] > 0) off += (s.shape[du] - 1) * st[du];
      st[du] = -st[du];
    }
    // flip copies, as torch's does: the reversed alias is gathered into fresh storage
    return alias_of(in[0], s.shape, st, off).clone();
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs& a) {
    return {flip(g, a.dims)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return flip(t[0], a.dims);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    tensor v = bdim_to_front(in[0], bdims[0]);
    dims_t d;
    for (auto x : a.dims) d.push_back(x + 1);
    return {dispatch<flip_op>(std::span<const tensor>(&v, 1), attrs{d}), 0};
  }
};

}  // namespace detail

// ---- methods and free functions -------------------------------------------------------------

template <int D>
tensor tensor::view(shape_t s) const {
  detail::require_defined(*this, "xf::view");
  s = detail::infer_shape(s, numel(), "xf::view");
  return detail::call<detail::view_op>({s}, *this);
}
namespace detail {
/// reshape, for reshape() and flatten() (`fn` names the call in errors).
template <int = 0>
tensor reshape_as(const tensor& t, shape_t s, const char* fn) {
  require_defined(t, fn);
  s = infer_shape(s, t.numel(), fn);
  // a view when the layout allows one (as torch), otherwise a contiguous copy
  const tensor_impl* d = dense_of(t);
  shape_t st;
  if (d && d->shape == t.shape() && !view_strides(d->shape, d->strides, s, st))
    return call<view_op>({s}, t.contiguous());
  return call<view_op>({s}, t);
}
// compiled once in xfunc::kernels (NOTE: [Precompiled composites])
XFUNC_EXTERN_TEMPLATE(tensor reshape_as<0>(const tensor&, shape_t, const char*))
}  // namespace detail
template <int D>
tensor tensor::reshape(shape_t s) const { return detail::reshape_as(*this, s, "xf::reshape"); }
template <int D>
tensor tensor::permute(dims_t dims) const {
  detail::require_defined(*this, "xf::permute");
  if (static_cast<std::int64_t>(dims.size()) != dim())
    detail::fail("xf::permute: needs one entry per dimension (", dim(), "), got ", dims.size(),
                 "; list every dim once, in its new order");
  dims_t n = detail::normalize_dims(dims, dim(), "xf::permute");
  for (std::size_t i = 0; i < n.size(); ++i)
    if (n[i] != static_cast<std::int64_t>(i)) detail::fail("xf::permute: dims must be a permutation of the tensor's dims");
  for (auto& d : dims) d = detail::wrap_dim(d, dim(), "dim", "xf::permute");
  return detail::call<detail::permute_op>({dims}, *this);
}
template <int D>
tensor tensor::transpose(std::int64_t d0, std::int64_t d1) const {
  detail::require_defined(*this, "xf::transpose");
  const std::int64_t r = dim();
  d0 = detail::wrap_dim(d0, r, "dim", "xf::transpose");  // (a 0-d tensor takes -1 and 0, as in torch)
  d1 = detail::wrap_dim(d1, r, "dim", "xf::transpose");
  if (r == 0) return *this;
  dims_t p(static_cast<std::size_t>(r));
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[static_cast<std::size_t>(d0)], p[static_cast<std::size_t>(d1)]);
  return detail::call<detail::permute_op>({p}, *this);
}
template <int D>
tensor tensor::t() const {
  detail::require_defined(*this, "xf::t");
  if (dim() != 2) detail::fail("xf::t: expects a 2-d tensor, got ", dim(), " dimensions; use transpose(d0, d1)");
  return transpose(0, 1);
}
template <int D>
tensor tensor::movedim(std::int64_t src, std::int64_t dst) const {
  detail::require_defined(*this, "xf::movedim");
  const std::int64_t r = dim();
  src = detail::wrap_dim(src, r, "dim", "xf::movedim");
  dst = detail::wrap_dim(dst, r, "dim", "xf::movedim");
  if (src == dst) return *this;
  dims_t p;
  for (std::int64_t i = 0; i < r; ++i)
    if (i != src) p.push_back(i);
  p.insert(p.begin() + dst, src);
  return detail::call<detail::permute_op>({p}, *this);
}
template <int D>
tensor tensor::unsqueeze(std::int64_t d) const {
  detail::require_defined(*this, "xf::unsqueeze");
  d = detail::wrap_new_dim(d, dim(), "dim", "xf::unsqueeze");
  shape_t s = shape();
  s.insert(static_cast<std::size_t>(d), 1);
  return detail::call<detail::view_op>({s}, *this);
}
template <int D>
tensor tensor::squeeze() const {
  detail::require_defined(*this, "xf::squeeze");
  shape_t s;
  for (auto e : shape())
    if (e != 1) s.push_back(e);
  return detail::call<detail::view_op>({s}, *this);
}
template <int D>
tensor tensor::squeeze(std::int64_t d) const {
  detail::require_defined(*this, "xf::squeeze");
  d = detail::wrap_dim(d, dim(), "dim", "xf::squeeze");
  if (dim() == 0 || shape()[static_cast<std::size_t>(d)] != 1) return view(shape());
  return detail::call<detail::view_op>({detail::without(shape(), static_cast<std::size_t>(d))}, *this);
}
template <int D>
tensor tensor::expand(shape_t s) const {
  detail::require_defined(*this, "xf::expand");
  const std::size_t lead = s.size() >= shape().size() ? s.size() - shape().size() : 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == -1) {
      if (i < lead)
        detail::fail("xf::expand: -1 is not allowed for a new leading dimension (dimension ", i, " of shape ", s,
                     "); give its size");
      s[i] = shape()[i - lead];
    }
  return detail::call<detail::expand_op>({s}, *this);
}
template <int D>
tensor tensor::flatten() const { return detail::reshape_as(*this, {-1}, "xf::flatten"); }
template <int D>
tensor tensor::select(std::int64_t d, std::int64_t i) const {
  detail::require_defined(*this, "xf::select");
  if (dim() == 0) detail::fail("xf::select: cannot be applied to a 0-d tensor, which has no dimension to select from");
  d = detail::wrap_dim(d, dim(), "dim", "xf::select");
  const std::int64_t n = shape()[static_cast<std::size_t>(d)];
  if (i < -n || i >= n)
    detail::fail("xf::select: index ", i, " is out of range for dimension ", d, " of size ", n, " (expected a value in [",
                 -n, ", ", n - 1, "])");
  return detail::call<detail::select_op>({d, i < 0 ? i + n : i}, *this);
}
template <int D>
tensor tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t len) const {
  detail::require_defined(*this, "xf::narrow");
  if (dim() == 0) detail::fail("xf::narrow: cannot be applied to a 0-d tensor, which has no dimension to narrow");
  d = detail::wrap_dim(d, dim(), "dim", "xf::narrow");
  const std::int64_t n = shape()[static_cast<std::size_t>(d)];
  if (start < 0) start += n;
  if (start < 0 || len < 0 || start > n || len > n - start)  // (start + len could overflow)
    detail::fail("xf::narrow: start ", start, " and length ", len, " do not fit dimension ", d, " of size ", n,
                 "; need 0 <= start <= size (a negative start counts from the end) and 0 <= length <= size - start");
  return detail::call<detail::narrow_op>({d, start, len}, *this);
}
template <int D>
tensor tensor::diagonal() const {
  detail::require_defined(*this, "xf::diagonal");
  if (dim() < 2) detail::fail("xf::diagonal: needs a tensor with at least 2 dimensions, got ", dim());
  return detail::call<detail::diagonal_op>({0, 1}, *this);
}
template <int D>
tensor tensor::clone() const { return detail::call<detail::clone_op>({}, *this); }
template <int D>
tensor tensor::contiguous() const {
  detail::require_defined(*this, "xf::contiguous");
  return is_contiguous() ? *this : clone();
}
template <int D>
tensor tensor::detach() const { return detail::call<detail::detach_op>({}, *this); }
template <int D>
tensor tensor::to(xfunc::dtype d) const {
  detail::require_defined(*this, "xf::to");
  if (d == dtype()) return *this;
  return detail::call<detail::to_dtype_op>({d}, *this);
}
template <int D>
tensor tensor::to(xfunc::device d) const {
  detail::require_defined(*this, "xf::to");
  if (d == device()) return *this;
  return detail::call<detail::to_device_op>({d}, *this);
}
template <int D>
tensor tensor::cuda(std::int32_t index) const { return to(xfunc::device{device_kind::cuda, index}); }
template <int D>
tensor tensor::cpu() const { return to(xfunc::cpu); }
/// t with no derivative flowing through it (the same as t.detach()).
template <int D>
tensor stop_gradient(const tensor& t) { return t.detach(); }

inline shape_t tensor::strides() const {
  check_defined();
  const detail::tensor_impl* p = impl_.get();
  if (p->kind == detail::impl_kind::batched) {
    return detail::without(p->inner.strides(), static_cast<std::size_t>(p->bdim));
  }
  return p->is_dense() ? p->strides : p->inner.strides();
}
inline bool tensor::is_contiguous() const { return detail::backend::is_contiguous_layout(shape(), strides()); }

/// The tensors joined along an existing `dim` (their other extents must agree).
template <int D>
tensor cat(const std::vector<tensor>& ts, std::int64_t dim) {
  if (ts.empty()) detail::fail("xf::cat: needs at least one tensor");
  for (const tensor& t : ts) detail::require_defined(t, "xf::cat");
  const std::int64_t d = detail::wrap_dim(dim, ts[0].dim(), "dim", "xf::cat");
  if (ts[0].dim() == 0) detail::fail("xf::cat: zero-dimensional tensors cannot be concatenated; use stack");
  return detail::dispatch<detail::cat_op>(ts, {d});
}
/// The tensors (all of one shape) joined along a new `dim`.
template <int D>
tensor stack(const std::vector<tensor>& ts, std::int64_t dim) {
  if (ts.empty()) detail::fail("xf::stack: needs at least one tensor");
  for (const tensor& t : ts) detail::require_defined(t, "xf::stack");
  const std::int64_t d = detail::wrap_new_dim(dim, ts[0].dim(), "dim", "xf::stack");
  std::vector<tensor> us;
  us.reserve(ts.size());
  dtype dt = ts[0].dtype();
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (!(ts[i].shape() == ts[0].shape()))
      detail::fail("xf::stack: all tensors need the same shape; tensor 0 has ", ts[0].shape(), " and tensor ", i,
                   " has ", ts[i].shape());
    dt = promote(dt, ts[i].dtype());
  }
  // the result [..., len(ts), ...]: its count and bytes must fit (NOTE: [Checked shape arithmetic])
  shape_t result = ts[0].shape();
  result.insert(static_cast<std::size_t>(d), static_cast<std::int64_t>(ts.size()));
  detail::check_shape(result, "xf::stack", dtype_size(dt));
  for (const tensor& t : ts) us.push_back(t.unsqueeze(d));
  return detail::dispatch<detail::cat_op>(us, {d});
}
/// Views of t in consecutive chunks of `size` along `dim` (the last may be shorter).
template <int D>
std::vector<tensor> split(const tensor& t, std::int64_t size, std::int64_t dim) {
  detail::require_defined(t, "xf::split");
  if (size <= 0) detail::fail("xf::split: size must be positive, got ", size);
  if (t.dim() == 0) detail::fail("xf::split: a 0-d tensor has no dimension to split; unsqueeze it first");
  const std::int64_t d = detail::wrap_dim(dim, t.dim(), "dim", "xf::split");
  const std::int64_t n = t.size(d);
  if (n == 0) return {t.narrow(d, 0, 0)};  // one empty chunk, as torch
  std::vector<tensor> out;
  for (std::int64_t s = 0; s < n; s += std::min(size, n - s))  // (s + size could overflow)
    out.push_back(t.narrow(d, s, std::min(size, n - s)));
  return out;
}
/// t with the order of elements reversed along each of `dims` (a copy).
template <int D>
tensor flip(const tensor& t, const dims_t& dims) {
  detail::require_defined(t, "xf::flip");
  return detail::call<detail::flip_op>({detail::normalize_dims(dims, t.dim(), "xf::flip")}, t);
}

}  // namespace xfunc

// This header's ops, precompiled by xfunc::kernels (NOTE: [Precompiled kernels]).
#define XFUNC_OPS_VIEW(X) X(view_op) X(permute_op) X(expand_op) X(narrow_op) X(select_op) X(diagonal_op) \
  X(clone_op) X(detach_op) X(to_dtype_op) X(to_device_op) X(cat_op) X(flip_op)
namespace xfunc::detail {
XFUNC_OPS_VIEW(XFUNC_EXTERN_DISPATCH)
}  // namespace xfunc::detail
// Its functions and tensor methods (D = 0 of NOTE: [Lazy instantiation]), in namespace xfunc
// (NOTE: [Precompiled composites]).
#define XFUNC_FUNCTIONS_VIEW(X)                                                                              \
  X(tensor tensor::view<0>(shape_t) const) X(tensor tensor::reshape<0>(shape_t) const)                        \
  X(tensor tensor::permute<0>(dims_t) const) X(tensor tensor::transpose<0>(std::int64_t, std::int64_t) const) \
  X(tensor tensor::t<0>() const) X(tensor tensor::movedim<0>(std::int64_t, std::int64_t) const)              \
  X(tensor tensor::unsqueeze<0>(std::int64_t) const) X(tensor tensor::squeeze<0>() const)                    \
  X(tensor tensor::squeeze<0>(std::int64_t) const) X(tensor tensor::expand<0>(shape_t) const)               \
  X(tensor tensor::flatten<0>() const) X(tensor tensor::select<0>(std::int64_t, std::int64_t) const)         \
  X(tensor tensor::narrow<0>(std::int64_t, std::int64_t, std::int64_t) const)                                \
  X(tensor tensor::diagonal<0>() const) X(tensor tensor::clone<0>() const)                                   \
  X(tensor tensor::contiguous<0>() const) X(tensor tensor::detach<0>() const)                                \
  X(tensor tensor::to<0>(xfunc::dtype) const) X(tensor tensor::to<0>(xfunc::device) const)                   \
  X(tensor tensor::cuda<0>(std::int32_t) const) X(tensor tensor::cpu<0>() const)                            \
  X(tensor stop_gradient<0>(const tensor&)) X(tensor cat<0>(const std::vector<tensor>&, std::int64_t))       \
  X(tensor stack<0>(const std::vector<tensor>&, std::int64_t))                                               \
  X(std::vector<tensor> split<0>(const tensor&, std::int64_t, std::int64_t))                                \
  X(tensor flip<0>(const tensor&, const dims_t&))
namespace xfunc {
XFUNC_FUNCTIONS_VIEW(XFUNC_EXTERN_TEMPLATE)
}  // namespace xfunc
