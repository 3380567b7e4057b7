#pragma once
// Neural-network helpers, written with other ops (their rules follow from those ops').
#include <xfunc/fwd.hpp>

namespace xfunc {

template <int D>
tensor softmax(const tensor& t, std::int64_t dim) { return exp(t - logsumexp(t, {dim}, true)); }
template <int D>
tensor log_softmax(const tensor& t, std::int64_t dim) { return t - logsumexp(t, {dim}, true); }

/// Mean negative log-likelihood of integer class `target` under `logits` ([N, C] with target
/// [N], or [C] with a 0-d target).
template <int D>
tensor cross_entropy(const tensor& logits, const tensor& target) {
  if (target.dtype() != i64)
    detail::fail("xf::cross_entropy: target must hold int64 class indices, got dtype ", target.dtype());
  if (logits.dim() != target.dim() + 1 || logits.dim() > 2)
    detail::fail("xf::cross_entropy: expects logits [N, C] with target [N] (or [C] with a 0-d target), got shapes ",
                 logits.shape(), " and ", target.shape());
  tensor picked = gather(log_softmax(logits, -1), -1, target.unsqueeze(-1)).squeeze(-1);
  return -mean(picked);
}
template <int D>
tensor mse_loss(const tensor& a, const tensor& b) { return mean(square(a - b)); }
/// x · wᵀ + b (b may be undefined: no bias).
template <int D>
tensor linear(const tensor& x, const tensor& w, const tensor& b) {
  if (x.dim() >= 1 && w.dim() == 2) {  // the result [..., out] must fit (NOTE: [Checked shape arithmetic])
    shape_t out = x.shape();
    out[out.size() - 1] = w.size(0);
    detail::check_shape(out, "xf::linear", dtype_size(promote(x.dtype(), w.dtype())));
  }
  tensor y = matmul(x, w.t());
  return b.defined() ? y + b : y;
}

}  // namespace xfunc
