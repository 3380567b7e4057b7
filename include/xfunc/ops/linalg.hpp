#pragma once
/// \file
/// Linear algebra. One primitive, bmm_op (a batch of matrix products through BLAS); matmul and
/// the named products are written with it, so they need no rules of their own.
#include <xfunc/dispatch/precompiled.hpp>
#include <xfunc/backend/blas.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc {
namespace detail {

/// bmm_op(a [P, n, k], b [P, k, m]) -> [P, n, m].
template <class = void>
struct bmm_op_t;
using bmm_op = bmm_op_t<>;
template <class>
struct bmm_op_t {
  static constexpr const char* name = "xf::bmm";
  using attrs = no_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs&) {
    const tensor &a = in[0], &b = in[1];
    dtype dt = promote(a.dtype(), b.dtype());
    if (dt == dtype::boolean) dt = dtype::int64;
    if (a.device() == meta || b.device() == meta) return backend::meta_like({a.size(0), a.size(1), b.size(2)}, dt, name);
    return backend::batched_matmul(a, b, dt, name);
  }
  static tensor bmm3(const tensor& a, const tensor& b) { return call<bmm_op>({}, a, b); }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs&,
                         std::span<const bool> need) {
    return {need[0] ? sum_to(bmm3(g, in[1].transpose(1, 2)), in[0]) : tensor(),
            need[1] ? sum_to(bmm3(in[0].transpose(1, 2), g), in[1]) : tensor()};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor&, const attrs&) {
    tensor r;
    if (t[0].defined()) r = bmm3(t[0], in[1]);
    if (t[1].defined()) r = r.defined() ? r + bmm3(in[0], t[1]) : bmm3(in[0], t[1]);
    return r;
  }
  // NOTE: [Batching matrix products]
  // A batched operand's examples are folded into the rows (left operand) or columns (right
  // operand) of the other's matrices, so vmap over one side is still one GEMM per matrix
  // rather than one per example; with both sides batched the batch joins the bmm batch.
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs&) {
    tensor a = bdim_to_front(in[0], bdims[0]), b = bdim_to_front(in[1], bdims[1]);
    // The folded extents B * n and B * m are checked products (NOTE: [Checked shape
    // arithmetic]); they can fail to fit only when the operands have no elements, and then the
    // batch joins the bmm batch instead (the unbatched operand expanded: nothing to copy).
    if (bdims[0] != no_bdim && bdims[1] == no_bdim) {  // a [B, P, n, k], b [P, k, m]
      const std::int64_t P = a.size(1), n = a.size(2), k = a.size(3);
      std::int64_t Bn;
      if (mul_fits(B, n, Bn)) {
        tensor r = bmm3(a.permute({1, 0, 2, 3}).reshape({P, Bn, k}), b);  // [P, B*n, m]
        return {r.view({P, B, n, b.size(2)}), 1};
      }
      b = b.unsqueeze(0).expand({B, P, k, b.size(2)});
    } else if (bdims[0] == no_bdim) {  // a [P, n, k], b [B, P, k, m]
      const std::int64_t P = b.size(1), k = b.size(2), m = b.size(3);
      std::int64_t Bm;
      if (mul_fits(B, m, Bm)) {
        tensor r = bmm3(a, b.permute({1, 2, 0, 3}).reshape({P, k, Bm}));  // [P, n, B*m]
        return {r.view({P, a.size(1), B, m}), 2};
      }
      a = a.unsqueeze(0).expand({B, P, a.size(1), k});
    }
    // both batched: a [B, P, n, k], b [B, P, k, m]
    const std::int64_t P = a.size(1), BP = checked_numel({B, P}, name, "the vmap and bmm batch sizes");
    tensor r = bmm3(a.reshape({BP, a.size(2), a.size(3)}), b.reshape({BP, b.size(2), b.size(3)}));
    return {r.view({B, P, a.size(2), b.size(3)}), 0};
  }
};
}  // namespace detail

namespace detail {
/// matmul, for matmul and the named products (`fn` names the call in errors).
template <int = 0>
tensor matmul_as(const tensor& a, const tensor& b, const char* fn) {
  require_defined(a, fn);
  require_defined(b, fn);
  if (a.dim() == 0 || b.dim() == 0)
    fail(fn, ": both arguments need at least one dimension (got ", a.dim(), " and ", b.dim(), "); use mul for scalars");
  tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;
  const std::int64_t n = a2.size(-2), k = a2.size(-1), k2 = b2.size(-2), m = b2.size(-1);
  if (k != k2) fail(fn, ": shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (", k, " != ", k2, ")");
  shape_t ba(a2.shape().begin(), a2.shape().end() - 2), bb(b2.shape().begin(), b2.shape().end() - 2);
  shape_t batch = broadcast_shapes(ba, bb, fn);
  // The result and both operands broadcast to the batch must have counts and bytes that fit
  // (NOTE: [Checked shape arithmetic]); checked here so that the error names this call.
  const dtype dt = promote(a.dtype(), b.dtype()) == dtype::boolean ? dtype::int64 : promote(a.dtype(), b.dtype());
  shape_t out = batch;
  if (a.dim() > 1) out.push_back(n);
  if (b.dim() > 1) out.push_back(m);
  check_shape(out, fn, dtype_size(dt));
  auto full = [&](std::int64_t r, std::int64_t c, std::size_t itemsize) {
    shape_t f = batch;
    f.push_back(r);
    f.push_back(c);
    check_shape(f, fn, itemsize);
    return f;
  };
  const shape_t fa = full(n, k, dtype_size(a.dtype())), fb = full(k, m, dtype_size(b.dtype()));
  const std::int64_t P = checked_numel(batch, fn);
  tensor c = bmm_op::bmm3(a2.expand(fa).reshape({P, n, k}), b2.expand(fb).reshape({P, k, m}));
  return c.reshape(out);
}
// compiled once in xfunc::kernels (NOTE: [Precompiled composites])
XFUNC_EXTERN_TEMPLATE(tensor matmul_as<0>(const tensor&, const tensor&, const char*))
}  // namespace detail

/// Matrix product with torch.matmul's rules: 1-d operands are vectors, 2-d are matrices, more
/// dims are batches of matrices broadcast against each other.
template <int D>
tensor matmul(const tensor& a, const tensor& b) { return detail::matmul_as(a, b, "xf::matmul"); }
/// Inner product of two 1-d tensors, a 0-d tensor.
template <int D>
tensor dot(const tensor& a, const tensor& b) {
  detail::require_defined(a, "xf::dot");
  detail::require_defined(b, "xf::dot");
  if (a.dim() != 1 || b.dim() != 1)
    detail::fail("xf::dot: expects two 1-d tensors, got shapes ", a.shape(), " and ", b.shape());
  return detail::matmul_as(a, b, "xf::dot");
}
/// Outer product of two 1-d tensors: result[i, j] = a[i] * b[j].
template <int D>
tensor outer(const tensor& a, const tensor& b) {
  detail::require_defined(a, "xf::outer");
  detail::require_defined(b, "xf::outer");
  if (a.dim() != 1 || b.dim() != 1)
    detail::fail("xf::outer: expects two 1-d tensors, got shapes ", a.shape(), " and ", b.shape());
  detail::check_shape({a.size(0), b.size(0)}, "xf::outer", dtype_size(promote(a.dtype(), b.dtype())));
  return a.unsqueeze(1) * b.unsqueeze(0);
}
/// Product of two 2-d tensors.
template <int D>
tensor mm(const tensor& a, const tensor& b) {
  detail::require_defined(a, "xf::mm");
  detail::require_defined(b, "xf::mm");
  if (a.dim() != 2 || b.dim() != 2)
    detail::fail("xf::mm: expects two 2-d tensors, got shapes ", a.shape(), " and ", b.shape());
  return detail::matmul_as(a, b, "xf::mm");
}
/// Product of a 2-d tensor and a 1-d tensor.
template <int D>
tensor mv(const tensor& a, const tensor& b) {
  detail::require_defined(a, "xf::mv");
  detail::require_defined(b, "xf::mv");
  if (a.dim() != 2 || b.dim() != 1)
    detail::fail("xf::mv: expects a 2-d and a 1-d tensor, got shapes ", a.shape(), " and ", b.shape());
  return detail::matmul_as(a, b, "xf::mv");
}
/// Batched matrix product of [B, n, k] and [B, k, m] tensors.
template <int D>
tensor bmm(const tensor& a, const tensor& b) {
  detail::require_defined(a, "xf::bmm");
  detail::require_defined(b, "xf::bmm");
  if (a.dim() != 3 || b.dim() != 3 || a.size(0) != b.size(0))
    detail::fail("xf::bmm: expects two 3-d tensors with the same batch size, got shapes ", a.shape(), " and ",
                 b.shape());
  return detail::matmul_as(a, b, "xf::bmm");
}

}  // namespace xfunc

// This header's ops, precompiled by xfunc::kernels (NOTE: [Precompiled kernels]).
#define XFUNC_OPS_LINALG(X) X(bmm_op)
namespace xfunc::detail {
XFUNC_OPS_LINALG(XFUNC_EXTERN_DISPATCH)
}  // namespace xfunc::detail
// Its functions (D = 0 of NOTE: [Lazy instantiation]), in namespace xfunc (NOTE: [Precompiled
// composites]).
#define XFUNC_FUNCTIONS_LINALG(X)                                                                  \
  X(tensor matmul<0>(const tensor&, const tensor&)) X(tensor dot<0>(const tensor&, const tensor&)) \
  X(tensor outer<0>(const tensor&, const tensor&)) X(tensor mm<0>(const tensor&, const tensor&))   \
  X(tensor mv<0>(const tensor&, const tensor&)) X(tensor bmm<0>(const tensor&, const tensor&))
namespace xfunc {
XFUNC_FUNCTIONS_LINALG(XFUNC_EXTERN_TEMPLATE)
}  // namespace xfunc
