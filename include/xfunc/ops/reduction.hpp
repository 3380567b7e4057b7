#pragma once
/// \file
/// Reductions. sum, prod, amax, amin, argmax, norm and logsumexp are primitives (their kernels
/// from the reduction engine, backend/reduce.hpp and backend/softmax.hpp); mean and var are
/// written with them (so their rules follow from those of the primitives).
#include <limits>
#include <numeric>

#include <xfunc/dispatch/precompiled.hpp>
#include <xfunc/backend/cpu.hpp>
#include <xfunc/backend/reduce.hpp>
#include <xfunc/backend/softmax.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc {
namespace detail {

/// Output shape of reducing `dims` (normalised) of `s`.
inline shape_t reduced_shape(const shape_t& s, const dims_t& dims, bool keepdim) {
  shape_t out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    bool red = std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(i)) != dims.end();
    if (!red) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

/// The extents of the `dims` (normalised) of s.
inline shape_t extents_of(const shape_t& s, const dims_t& dims) {
  shape_t out;
  for (auto d : dims) out.push_back(s[static_cast<std::size_t>(d)]);
  return out;
}

/// The number of elements each result of reducing `dims` of a tensor of shape s combines;
/// throws ("shape") naming `fn` when it does not fit in int64_t (possible only when s has 0
/// elements: NOTE: [Checked shape arithmetic]).
inline std::int64_t reduced_count(const shape_t& s, const dims_t& dims, const char* fn) {
  return checked_numel(extents_of(s, dims), fn, "the reduced dimensions");
}

struct reduce_attrs {
  dims_t dims;  // normalised, ascending
  bool keepdim;
};

/// An extreme (amax, amin, argmax) over no elements has no value: like torch, it is an error
/// when a reduced dim is empty, and an empty result when only a kept dim is.
inline void check_extreme_dims(const tensor& x, const dims_t& dims, const char* name) {
  for (auto d : dims)
    if (x.size(d) == 0)
      fail(name, ": cannot reduce over dim ", d, " of a tensor of shape ", x.shape(),
           ": it has no elements; reduce over other dims, or check the tensor is not empty first");
}

/// dims come normalised from the public functions and the rules; a dim the input lacks is a bug.
inline void check_reduce_dims(const tensor& x, const dims_t& dims) {
  for (auto d : dims)
    if (d < 0 || d >= x.dim()) fail("xf: internal error: reduction dim ", d, " for a tensor of shape ", x.shape());
}
/// The reduction of a.dims of x with math M (NOTE: [Reduction engine]).
template <class M, class Types>
tensor reduce_with(const tensor& x, const reduce_attrs& a, dtype compute, dtype out_dt, const char* fn) {
  check_reduce_dims(x, a.dims);
  reduced_count(x.shape(), a.dims, fn);  // throws ("shape") when it does not fit
  return backend::reduce<M, Types>(x, a.dims, a.keepdim, compute, out_dt, fn);
}

/// A contiguous copy of x in dtype dt with its kept dims first (in order) and `dims` last: each
/// output element of a reduction over `dims` then reads one contiguous run. (With no elements
/// it has shape {0}: nothing is gathered, and the permuted shape need not have strides that fit.)
template <int = 0>
tensor with_reduced_dims_last(const tensor& x, const dims_t& dims, dtype dt, const char* fn) {
  const tensor_impl& s = *x.impl();
  shape_t ps, pst;
  auto take = [&](std::int64_t d) {
    ps.push_back(s.shape[static_cast<std::size_t>(d)]);
    pst.push_back(s.strides[static_cast<std::size_t>(d)]);
  };
  for (std::int64_t i = 0; i < x.dim(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) take(i);
  for (auto d : dims) take(d);
  tensor xc = empty_dense(x.numel() == 0 ? shape_t{0} : ps, dt, x.device(), fn);
  if (x.device() != meta)
    visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      backend::gather_into<T>(s, ps, pst, xc.impl()->template data<T>());
    });
  return xc;
}

/// Reduces `dims` of x: each output element reduces one contiguous run of m values (kept dims
/// first, reduced dims last) with r(const T* p, m). `fn` names the op.
template <class Types, class R>
tensor reduce_kernel(const tensor& x, const dims_t& dims, bool keepdim, dtype compute, dtype out_dt, const char* fn,
                     R&& r) {
  check_reduce_dims(x, dims);
  shape_t oshape = reduced_shape(x.shape(), dims, keepdim);
  const std::int64_t m = reduced_count(x.shape(), dims, fn);
  if (x.device() == meta) return backend::meta_like(oshape, out_dt, fn);
  const tensor xc = with_reduced_dims_last(x, dims, compute, fn);
  tensor out = empty_dense(oshape, out_dt, cpu, fn);
  const std::int64_t k = numel_of(oshape);
  Types::visit(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = xc.impl()->template data<T>();
    visit_dtype(out_dt, [&](auto otag) {
      using O = typename decltype(otag)::type;
      O* o = out.impl()->template data<O>();
      for (std::int64_t i = 0; i < k; ++i) o[i] = static_cast<O>(r(p + i * m, m));
    });
  });
  return out;
}

/// (keepdim) g reshaped so it broadcasts against the input of a reduction over `dims`.
template <int = 0>
tensor unsqueeze_reduced(const tensor& g, const dims_t& dims, bool keepdim) {
  if (keepdim) return g;
  tensor r = g;
  for (auto d : dims) r = r.unsqueeze(d);  // dims ascending
  return r;
}


template <class Op>
batched reduce_batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, const reduce_attrs& a) {
  tensor v = bdim_to_front(in[0], bdims[0]);
  reduce_attrs b{{}, a.keepdim};
  for (auto d : a.dims) b.dims.push_back(d + 1);
  return {dispatch<Op>(std::span<const tensor>(&v, 1), b), 0};
}

template <class = void>
struct sum_op_t;
using sum_op = sum_op_t<>;
template <class>
struct sum_op_t {
  static constexpr const char* name = "xf::sum";
  using attrs = reduce_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const dtype dt = is_floating(in[0].dtype()) ? in[0].dtype() : dtype::int64;
    return reduce_with<backend::sum_math, backend::numeric_types>(in[0], a, dt, dt, name);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    return {unsqueeze_reduced(g, a.dims, a.keepdim).expand(in[0].shape())};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return dispatch<sum_op>(t.subspan(0, 1), a);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return reduce_batch<sum_op>(in, bdims, a);
  }
};

/// x summed over exactly a.dims (empty: nothing), keeping them when a.keepdim. Rules use it, not
/// xf::sum: their dims describe the op's actual argument, and under vmap a 0-d example's empty
/// list must leave the batch dim alone, where xf::sum reads an empty list as "every dim".
template <int = 0>
tensor sum_dims(const tensor& x, const reduce_attrs& a) {
  return call<sum_op>(a, x);
}

/// The rules of a reduction whose derivative is a weighted sum of its input's over the reduced
/// dims, d out = sum(w * dx): vjp g * w, jvp sum(t * w), with w = D::weights(x, out, attrs) in
/// xfunc ops (so differentiable again); the batch rule shifts the dims past the batch dim.
template <class D>
struct weighted_reduction_rules {
  static tensor_list vjp(std::span<const tensor> in, const tensor& out, const tensor& g, const reduce_attrs& a) {
    return {unsqueeze_reduced(g, a.dims, a.keepdim) * D::weights(in[0], out, a)};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor& out, const reduce_attrs& a) {
    return sum_dims(t[0] * D::weights(in[0], out, a), a);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const reduce_attrs& a) {
    return reduce_batch<D>(in, bdims, a);
  }
};

/// amax / amin: the gradient is shared evenly among the elements that attain the extreme.
template <class D>
struct extreme_op : weighted_reduction_rules<D> {
  using attrs = reduce_attrs;
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    check_extreme_dims(in[0], a.dims, D::name);
    // (booleans are compared as int64 and stay boolean, as in torch)
    const dtype dt = in[0].dtype() == dtype::boolean ? dtype::int64 : in[0].dtype();
    return reduce_with<backend::extreme_math<D::is_max>, backend::numeric_types>(in[0], a, dt, in[0].dtype(), D::name);
  }
  /// 1 / (the number of extreme elements) at each extreme element, 0 elsewhere.
  static tensor weights(const tensor& x, const tensor& out, const attrs& a) {
    tensor m = (x == unsqueeze_reduced(out, a.dims, a.keepdim)).to(x.dtype());
    return m / sum_dims(m, {a.dims, true});
  }
};
template <class = void>
struct amax_op_t;
using amax_op = amax_op_t<>;
template <class>
struct amax_op_t : extreme_op<amax_op> {
  static constexpr const char* name = "xf::amax";
  static constexpr bool is_max = true;
  static bool better(auto x, auto best) { return x > best; }
};
template <class = void>
struct amin_op_t;
using amin_op = amin_op_t<>;
template <class>
struct amin_op_t : extreme_op<amin_op> {
  static constexpr const char* name = "xf::amin";
  static constexpr bool is_max = false;
  static bool better(auto x, auto best) { return x < best; }
};

template <class = void>
struct argmax_op_t;
using argmax_op = argmax_op_t<>;
template <class>
struct argmax_op_t {
  static constexpr const char* name = "xf::argmax";
  using attrs = reduce_attrs;  // one dim
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    check_extreme_dims(in[0], a.dims, name);
    const dtype dt = in[0].dtype() == dtype::boolean ? dtype::int64 : in[0].dtype();
    return reduce_kernel<backend::numeric_types>(in[0], a.dims, a.keepdim, dt, dtype::int64, name,
                                              [](const auto* p, std::int64_t m) {
                                                using T = std::remove_cvref_t<decltype(*p)>;
                                                std::int64_t best = 0;
                                                for (std::int64_t i = 1; i < m; ++i) {
                                                  if constexpr (std::is_floating_point_v<T>) {
                                                    // NaN is the maximum, as in torch: the first one wins
                                                    if (p[best] != p[best]) break;
                                                    if (p[i] > p[best] || p[i] != p[i]) best = i;
                                                  } else if (p[i] > p[best]) {
                                                    best = i;
                                                  }
                                                }
                                                return best;
                                              });
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return reduce_batch<argmax_op>(in, bdims, a);
  }
};

/// prod over one dim. d/dx_i prod_j x_j = prod_{j != i} x_j, computed without dividing so that
/// zeros in the input give exact gradients (NOTE: [Products of the others]).
template <class = void>
struct prod_op_t;
using prod_op = prod_op_t<>;
template <class>
struct prod_op_t {
  static constexpr const char* name = "xf::prod";
  using attrs = reduce_attrs;  // one dim
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const dtype dt = is_floating(in[0].dtype()) ? in[0].dtype() : dtype::int64;
    return reduce_with<backend::prod_math, backend::numeric_types>(in[0], a, dt, dt, name);
  }
  /// prod_{j != i} x_j along the reduced dim, in the input's shape (ones when a 0-d example
  /// reduces no dim).
  static tensor others(const tensor& x, const attrs& a) {
    if (a.dims.empty()) return plain_ones_like(x);
    const std::int64_t dim = a.dims[0];
    return others_last(x.movedim(dim, -1)).movedim(-1, dim);
  }
  // NOTE: [Products of the others]
  // prod_{j != i} x_j is computed without dividing, so that zeros in x give exact derivatives of
  // every order: it is the product of all elements before i (an exclusive running product) and
  // of all after it (the same, on the flipped row). A running product is a scan of ceil(log2 n)
  // steps, each multiplying by the row shifted by 1, 2, 4, ... (ones shifted in), so every level
  // of derivative costs O(n log n) memory. (It was an [n, n] product per row, in blocks of 32:
  // the fuzzer found a third derivative of a prod over 46 elements asking for 18 GB, since each
  // level multiplied the intermediate by another n.)
  /// x_0 x_1 ... x_i at i, along the last dim (n >= 1).
  static tensor running_product(tensor p) {
    const std::int64_t n = p.size(-1);
    shape_t s = p.shape();
    for (std::int64_t step = 1; step < n; step *= 2) {
      s[s.size() - 1] = step;
      p = p * cat({plain_full(s, 1.0, p.dtype(), p.device()), p.narrow(-1, 0, n - step)}, -1);
    }
    return p;
  }
  static tensor others_last(const tensor& x) {  // along the last dim
    const std::int64_t n = x.size(-1);
    if (n <= 1) return plain_ones_like(x);
    shape_t s = x.shape();
    s[s.size() - 1] = 1;
    const tensor one = plain_full(s, 1.0, x.dtype(), x.device());
    // before i: the running product shifted right by one; after i: the same on the flipped row
    const tensor before = cat({one, running_product(x.narrow(-1, 0, n - 1))}, -1);
    const tensor after = flip(cat({one, running_product(flip(x, {-1}).narrow(-1, 0, n - 1))}, -1), {-1});
    return before * after;
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    return {unsqueeze_reduced(g, a.dims, a.keepdim) * others(in[0], a)};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor&, const attrs& a) {
    return sum_dims(t[0] * others(in[0], a), a);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return reduce_batch<prod_op>(in, bdims, a);
  }
};

/// 2-norm over `dims` (norm() uses every dim). A primitive rather than sqrt(sum(square(x))) so
/// that the gradient at x == 0 is 0, as torch's (the composite gives 0 * inf = NaN there): the
/// derivative x / |x| is computed with the denominator replaced by 1 where |x| == 0, where x is
/// itself all zeros. Written with xfunc ops, so it is differentiable again and batchable.
template <class = void>
struct norm_op_t;
using norm_op = norm_op_t<>;
template <class>
struct norm_op_t : weighted_reduction_rules<norm_op> {
  static constexpr const char* name = "xf::norm";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  using attrs = reduce_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const dtype dt = promote_with_double(in[0].dtype());
    return reduce_with<backend::norm_math, backend::floating_types>(in[0], a, dt, dt, name);
  }
  /// d|x|/dx = x / |x|, and 0 where |x| == 0.
  static tensor weights(const tensor& x, const tensor& out, const attrs& a) {
    tensor n = unsqueeze_reduced(out, a.dims, a.keepdim);
    tensor safe = where(n == 0.0, plain_ones_like(n), n);
    return x / safe;
  }
};

/// logsumexp over `dims`, fused (NOTE: [Softmax kernels]); its derivative is the softmax,
/// exp(x - out), in xfunc ops.
template <class = void>
struct logsumexp_op_t;
using logsumexp_op = logsumexp_op_t<>;
template <class>
struct logsumexp_op_t : weighted_reduction_rules<logsumexp_op> {
  static constexpr const char* name = "xf::logsumexp";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  using attrs = reduce_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    check_reduce_dims(in[0], a.dims);
    const tensor x = is_floating(in[0].dtype()) ? in[0] : in[0].to(promote_with_double(in[0].dtype()));
    using backend::normalization;
    if (a.dims.size() <= 1)  // none (each element alone: a 0-d example under vmap) or one dim
      return backend::normalize<normalization::logsumexp>(x, a.dims.empty() ? -1 : a.dims[0], a.keepdim, name);
    // several dims: moved last and merged into one
    shape_t merged = reduced_shape(x.shape(), a.dims, false);
    const auto last = static_cast<std::int64_t>(merged.size());
    merged.push_back(reduced_count(x.shape(), a.dims, name));
    tensor flat = with_reduced_dims_last(x, a.dims, x.dtype(), name);
    flat.impl()->shape = merged;  // contiguous: the reduced dims merge into the last
    flat.impl()->strides = contiguous_strides(merged);
    tensor r = backend::normalize<normalization::logsumexp>(flat, last, false, name);
    if (a.keepdim) {  // a fresh contiguous result: give it the kept dims as 1
      r.impl()->shape = reduced_shape(x.shape(), a.dims, true);
      r.impl()->strides = contiguous_strides(r.impl()->shape);
    }
    return r;
  }
  /// The softmax over dims: exp(x - out).
  static tensor weights(const tensor& x, const tensor& out, const attrs& a) {
    return exp(x - unsqueeze_reduced(out, a.dims, a.keepdim));
  }
};

/// dims for a full or partial reduction: empty means every dim; a 0-d tensor has none.
/// `fn` names the public function in errors (an undefined tensor, a dim out of range or repeated).
inline dims_t reduction_dims(const tensor& t, const dims_t& dims, const char* fn) {
  require_defined(t, fn);
  if (t.dim() == 0) {  // only dim 0 (or -1) exists, so two dims repeat it
    for (auto d : dims) wrap_dim(d, 0, "dim", fn);
    if (dims.size() > 1)
      fail(fn, ": dim 0 appears more than once in the dims list (counting negative dims from the end); "
               "list each dim once");
    return {};
  }
  if (dims.empty()) {
    dims_t all(static_cast<std::size_t>(t.dim()));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  return normalize_dims(dims, t.dim(), fn);
}

}  // namespace detail

/// Sum over `dims` (negative dims count from the end; empty: every dim), keeping them as size 1
/// with `keepdim`. Integers and booleans sum in int64.
template <int D>
tensor sum(const tensor& t, const dims_t& dims, bool keepdim) {
  return detail::call<detail::sum_op>({detail::reduction_dims(t, dims, "xf::sum"), keepdim}, t);
}
/// Sum of all elements, a 0-d tensor.
template <int D>
tensor sum(const tensor& t) { return sum(t, {}, false); }
namespace detail {
/// mean and var of an integer or boolean tensor are refused, as in torch (a float32 result
/// would be a choice the caller did not make).
template <int = 0>
void require_floating_for(const tensor& t, const char* fn) {
  if (!is_floating(t.dtype()))
    fail(fn, ": needs a floating tensor, got ", t.dtype(), "; convert it first, e.g. ", fn, "(t.to(xf::f32))");
}
}  // namespace detail
/// Mean over `dims` (empty: every dim) of a floating tensor.
template <int D>
tensor mean(const tensor& t, const dims_t& dims, bool keepdim) {
  const dims_t nd = detail::reduction_dims(t, dims, "xf::mean");
  detail::require_floating_for(t, "xf::mean");
  const std::int64_t n = detail::reduced_count(t.shape(), nd, "xf::mean");
  tensor s = detail::call<detail::sum_op>({nd, keepdim}, t);
  return s / static_cast<double>(n);
}
// compiled once in xfunc::kernels (NOTE: [Precompiled composites])
XFUNC_EXTERN_TEMPLATE(tensor mean<0>(const tensor&, const dims_t&, bool))
/// Mean of all elements, a 0-d tensor.
template <int D>
tensor mean(const tensor& t) { return mean(t, {}, false); }
/// Product over one dim (differentiable also where elements are zero).
template <int D>
tensor prod(const tensor& t, std::int64_t dim, bool keepdim) {
  return detail::call<detail::prod_op>({detail::reduction_dims(t, {dim}, "xf::prod"), keepdim}, t);
}
/// Maximum over `dims` (empty: every dim); the gradient is shared evenly among tied maxima.
template <int D>
tensor amax(const tensor& t, const dims_t& dims, bool keepdim) {
  return detail::call<detail::amax_op>({detail::reduction_dims(t, dims, "xf::amax"), keepdim}, t);
}
/// Minimum over `dims` (empty: every dim); the gradient is shared evenly among tied minima.
template <int D>
tensor amin(const tensor& t, const dims_t& dims, bool keepdim) {
  return detail::call<detail::amin_op>({detail::reduction_dims(t, dims, "xf::amin"), keepdim}, t);
}
/// int64 index of the maximum along `dim` (the first one when tied; NaN counts as the maximum).
template <int D>
tensor argmax(const tensor& t, std::int64_t dim, bool keepdim) {
  return detail::call<detail::argmax_op>({detail::reduction_dims(t, {dim}, "xf::argmax"), keepdim}, t);
}
/// log(sum(exp(t))) over `dims`, computed stably (the maximum is subtracted first).
template <int D>
tensor logsumexp(const tensor& t, const dims_t& dims, bool keepdim) {
  return detail::call<detail::logsumexp_op>({detail::reduction_dims(t, dims, "xf::logsumexp"), keepdim}, t);
}
/// Variance over `dims` with Bessel's `correction` (divides by n - correction; 0 gives the
/// population variance).
template <int D>
tensor var(const tensor& t, const dims_t& dims, std::int64_t correction, bool keepdim) {
  const dims_t nd = detail::reduction_dims(t, dims, "xf::var");
  detail::require_floating_for(t, "xf::var");
  const double n = static_cast<double>(detail::reduced_count(t.shape(), nd, "xf::var"));
  tensor centered = t - mean(t, nd, true);
  return sum(square(centered), nd, keepdim) / std::max(n - static_cast<double>(correction), 0.0);
}
/// 2-norm of all elements, a 0-d tensor.
template <int D>
tensor norm(const tensor& t) { return detail::call<detail::norm_op>({detail::reduction_dims(t, {}, "xf::norm"), false}, t); }

}  // namespace xfunc

// This header's ops, precompiled by xfunc::kernels (NOTE: [Precompiled kernels]).
#define XFUNC_OPS_REDUCTION(X) X(sum_op) X(amax_op) X(amin_op) X(argmax_op) X(prod_op) X(norm_op) \
  X(logsumexp_op)
namespace xfunc::detail {
XFUNC_OPS_REDUCTION(XFUNC_EXTERN_DISPATCH)
}  // namespace xfunc::detail
// Its functions (D = 0 of NOTE: [Lazy instantiation]), in namespace xfunc (NOTE: [Precompiled
// composites]).
#define XFUNC_FUNCTIONS_REDUCTION(X)                                                                  \
  X(tensor sum<0>(const tensor&, const dims_t&, bool)) X(tensor sum<0>(const tensor&))                \
  X(tensor mean<0>(const tensor&)) X(tensor prod<0>(const tensor&, std::int64_t, bool))               \
  X(tensor amax<0>(const tensor&, const dims_t&, bool))                                               \
  X(tensor amin<0>(const tensor&, const dims_t&, bool))                                               \
  X(tensor argmax<0>(const tensor&, std::int64_t, bool))                                              \
  X(tensor logsumexp<0>(const tensor&, const dims_t&, bool))                                          \
  X(tensor var<0>(const tensor&, const dims_t&, std::int64_t, bool)) X(tensor norm<0>(const tensor&))
namespace xfunc {
XFUNC_FUNCTIONS_REDUCTION(XFUNC_EXTERN_TEMPLATE)
}  // namespace xfunc
