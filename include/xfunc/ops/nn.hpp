#pragma once
/// \file
/// Neural-network helpers. softmax and log_softmax are primitives with fused kernels (NOTE:
/// [Softmax kernels]); the others are written with other ops (their rules follow from those).
#include <xfunc/dispatch/precompiled.hpp>
#include <xfunc/backend/softmax.hpp>
#include <xfunc/fwd.hpp>
#include <xfunc/ops/reduction.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc {
namespace detail {

struct normalize_attrs {
  std::int64_t dim;  // normalised; -1 for a 0-d input (each element alone)
  dims_t dims() const { return dim < 0 ? dims_t{} : dims_t{dim}; }
};

/// softmax and log_softmax: the kernel, and the batch rule (the batch dim in front, the dim
/// shifted past it). Floating inputs (integers are promoted as a double scalar would).
template <class D, backend::normalization N>
struct normalize_op {
  using attrs = normalize_attrs;
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor x = is_floating(in[0].dtype()) ? in[0] : in[0].to(promote_with_double(in[0].dtype()));
    return backend::normalize<N>(x, a.dim, false, D::name);
  }
  /// sum over the dim, kept (exactly that dim: NOTE [Reduction engine] / sum_dims)
  static tensor sum_dim(const tensor& v, const attrs& a) { return sum_dims(v, {a.dims(), true}); }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    const tensor v = bdim_to_front(in[0], bdims[0]);
    return {call<D>(attrs{a.dim < 0 ? -1 : a.dim + 1}, v), 0};
  }
};

template <class = void>
struct softmax_op_t;
using softmax_op = softmax_op_t<>;
template <class>
struct softmax_op_t : normalize_op<softmax_op, backend::normalization::softmax> {
  static constexpr const char* name = "xf::softmax";
  // y = softmax(x): dy = y * (dx - sum(dx * y))
  static tensor_list vjp(std::span<const tensor>, const tensor& y, const tensor& g, const attrs& a) {
    return {y * (g - sum_dim(g * y, a))};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor& y, const attrs& a) {
    return y * (t[0] - sum_dim(t[0] * y, a));
  }
};
template <class = void>
struct log_softmax_op_t;
using log_softmax_op = log_softmax_op_t<>;
template <class>
struct log_softmax_op_t : normalize_op<log_softmax_op, backend::normalization::log_softmax> {
  static constexpr const char* name = "xf::log_softmax";
  // y = log_softmax(x): dy = dx - sum(dx * exp(y))
  static tensor_list vjp(std::span<const tensor>, const tensor& y, const tensor& g, const attrs& a) {
    return {g - exp(y) * sum_dim(g, a)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor& y, const attrs& a) {
    return t[0] - sum_dim(t[0] * exp(y), a);
  }
};

inline normalize_attrs normalize_dim(const tensor& t, std::int64_t dim, const char* fn) {
  require_defined(t, fn);
  if (t.dim() == 0) {
    wrap_dim(dim, 0, "dim", fn);  // -1 and 0 are the dims of a 0-d tensor
    return {-1};
  }
  return {wrap_dim(dim, t.dim(), "dim", fn)};
}
}  // namespace detail

/// exp(t) normalised to sum to 1 along `dim`, computed stably.
template <int D>
tensor softmax(const tensor& t, std::int64_t dim) {
  return detail::call<detail::softmax_op>(detail::normalize_dim(t, dim, "xf::softmax"), t);
}
/// log(softmax(t, dim)), computed stably in one fused kernel.
template <int D>
tensor log_softmax(const tensor& t, std::int64_t dim) {
  return detail::call<detail::log_softmax_op>(detail::normalize_dim(t, dim, "xf::log_softmax"), t);
}

/// Mean negative log-likelihood of integer class `target` under `logits` ([N, C] with target
/// [N], or [C] with a 0-d target).
template <int D>
tensor cross_entropy(const tensor& logits, const tensor& target) {
  detail::require_defined(logits, "xf::cross_entropy");
  detail::require_defined(target, "xf::cross_entropy");
  if (target.dtype() != i64)
    detail::fail("xf::cross_entropy: target must hold int64 class indices, got dtype ", target.dtype());
  if (logits.dim() != target.dim() + 1 || logits.dim() > 2 || (target.dim() == 1 && target.size(0) != logits.size(0)))
    detail::fail("xf::cross_entropy: expects logits [N, C] with target [N] (or [C] with a 0-d target), got shapes ",
                 logits.shape(), " and ", target.shape());
  // gather takes negative indices (counted from the end); a class index must not be one. (Read
  // directly, not through ops, when the target is a plain cpu tensor; under vmap a batched target
  // is checked by gather's kernel only, against [-C, C).)
  if (target.impl()->is_dense() && target.device() == cpu) {
    tensor scratch;
    const tensor& t = detail::backend::materialized(target, target.shape(), i64, scratch);
    const std::int64_t* p = t.impl()->template data<std::int64_t>();
    for (std::int64_t i = 0; i < t.numel(); ++i)
      if (p[i] < 0)
        detail::fail("xf::cross_entropy: target class index ", p[i], " is out of range (negative) for ", logits.size(-1),
                     " classes; class indices must be in [0, ", logits.size(-1), ")");
  }
  tensor picked;
  try {
    picked = gather(log_softmax(logits, -1), -1, target.unsqueeze(-1)).squeeze(-1);
  } catch (const error& e) {  // a class index out of range, found by gather's kernel: say whose it is
    detail::fail("xf::cross_entropy: a target class index is out of range for ", logits.size(-1),
                 " classes; class indices must be in [0, ", logits.size(-1), ") (", e.what(), ")");
  }
  return -mean(picked);
}
/// Mean squared error, mean((a - b)^2), a 0-d tensor.
template <int D>
tensor mse_loss(const tensor& a, const tensor& b) { return mean(square(a - b)); }
/// x · wᵀ + b (b may be undefined: no bias).
template <int D>
tensor linear(const tensor& x, const tensor& w, const tensor& b) {
  detail::require_defined(x, "xf::linear");
  detail::require_defined(w, "xf::linear");
  if (w.dim() != 2)
    detail::fail("xf::linear: the weight must be a 2-d [out_features, in_features] tensor, got shape ", w.shape(),
                 "; reshape it (a 1-d weight w is w.unsqueeze(0))");
  if (x.dim() == 0 || x.size(-1) != w.size(1))
    detail::fail("xf::linear: input of shape ", x.shape(), " and weight of shape ", w.shape(),
                 " cannot be multiplied (the input's last dimension must equal the weight's in_features, ", w.size(1), ")");
  if (b.defined()) {  // the bias broadcasts against the result [..., out_features]
    shape_t out = x.shape();
    out[out.size() - 1] = w.size(0);
    if (!(detail::broadcast_shapes(out, b.shape(), "xf::linear") == out))
      detail::fail("xf::linear: a bias of shape ", b.shape(), " does not fit the result's shape ", out,
                   "; use a bias of shape [", w.size(0), "]");
  }
  if (x.dim() >= 1 && w.dim() == 2) {  // the result [..., out] must fit (NOTE: [Checked shape arithmetic])
    shape_t out = x.shape();
    out[out.size() - 1] = w.size(0);
    detail::check_shape(out, "xf::linear", dtype_size(promote(x.dtype(), w.dtype())));
  }
  tensor y = matmul(x, w.t());
  return b.defined() ? y + b : y;
}
// compiled once in xfunc::kernels (NOTE: [Precompiled composites])
XFUNC_EXTERN_TEMPLATE(tensor cross_entropy<0>(const tensor&, const tensor&))
XFUNC_EXTERN_TEMPLATE(tensor linear<0>(const tensor&, const tensor&, const tensor&))

}  // namespace xfunc

// This header's ops, precompiled by xfunc::kernels (NOTE: [Precompiled kernels]).
#define XFUNC_OPS_NN(X) X(softmax_op) X(log_softmax_op)
namespace xfunc::detail {
XFUNC_OPS_NN(XFUNC_EXTERN_DISPATCH)
}  // namespace xfunc::detail
// Its functions (D = 0 of NOTE: [Lazy instantiation]), in namespace xfunc (NOTE: [Precompiled
// composites]).
#define XFUNC_FUNCTIONS_NN(X)                           \
  X(tensor softmax<0>(const tensor&, std::int64_t))     \
  X(tensor log_softmax<0>(const tensor&, std::int64_t)) \
  X(tensor mse_loss<0>(const tensor&, const tensor&))
namespace xfunc {
XFUNC_FUNCTIONS_NN(XFUNC_EXTERN_TEMPLATE)
}  // namespace xfunc
