#pragma once
// CPU kernels of the softmax family along one dim: logsumexp, softmax and log_softmax, each in
// two passes over the data (a max, then a sum of exponentials; softmax and log_softmax write
// their result in the second), on the reduction engine's fixed-order blocks and threads.
#include <cmath>
#include <cstdint>
#include <vector>

#include <xsimd/xsimd.hpp>

#include <xfunc/backend/element.hpp>
#include <xfunc/backend/reduce.hpp>

namespace xfunc::detail::backend {

// NOTE: [Softmax kernels]
// For x seen as [A, R, B] (the normalised dim is R), each output column (a, b) needs
//   lse = log(sum_r exp(x_r - s)) + s,   s = max_r x_r, or 0 when that max is infinite
// (the shift torch uses: an all -inf column gives lse = -inf, a +inf gives +inf), then
// log_softmax = x - lse, and softmax = exp(x - s) * (1 / sum_r exp(x_r - s)) as torch computes
// it: the sum's pass keeps its exponentials in the output, scaled in place after, one exp per
// element. (As exp(x - lse), a second exp per element, softmax over 2048^2 floats took 1.19x
// libtorch's time on a Zen 2 VM, and 1.58x the time of this, 2026-12-06.) The max is exact in
// any order; the sum of exponentials is accumulated like a sum of the engine
// (NOTE: [Reduction engine]): chunks folded into SIMD lanes then combined pairwise (B == 1), or
// blocks of rows folded into registers then combined pairwise (B > 1). Columns are independent,
// and the order within one depends only on the shape, so results are bitwise identical for every
// thread count.
enum class normalization { logsumexp, softmax, log_softmax };

template <class T>
T lse_shift(T m) {
  return std::isinf(m) ? T(0) : m;
}

/// sum_i exp(p[i] - shift) over a contiguous run of n elements, in the engine's order; with
/// Keep, each exp(p[i] - shift) is also written to kept[i] (softmax's numerators).
template <bool Keep = false, class T>
T sum_exp_run(const T* p, std::int64_t n, T shift, T* kept = nullptr) {
  using V = simd<T>;
  constexpr int K = simd_accumulators, W = static_cast<int>(V::size), L = K * W, G = 16;
  const std::int64_t nchunks = std::max<std::int64_t>(1, (n + chunk - 1) / chunk);
  std::vector<T> parts(static_cast<std::size_t>(nchunks));
  const V vs(shift);
  for (std::int64_t c = 0; c < nchunks; ++c) {
    const T* q = p + c * chunk;
    const std::int64_t m = std::min(chunk, n - c * chunk);
    V acc[K], grp[K];
    for (int k = 0; k < K; ++k) acc[k] = V(T(0));
    std::int64_t i = 0;
    while (i + L <= m) {
      for (int k = 0; k < K; ++k) grp[k] = V(T(0));
      for (int g = 0; g < G && i + L <= m; ++g, i += L)
        for (int k = 0; k < K; ++k) {
          const V e = element::exp(V::load_unaligned(q + i + k * W) - vs);
          if constexpr (Keep) e.store_unaligned(kept + c * chunk + i + k * W);
          grp[k] += e;
        }
      for (int k = 0; k < K; ++k) acc[k] += grp[k];
    }
    alignas(64) T lane[L];
    for (int k = 0; k < K; ++k) acc[k].store_aligned(lane + k * W);
    for (int j = 0; i < m; ++i, ++j) {
      const T e = std::exp(q[i] - shift);
      if constexpr (Keep) kept[c * chunk + i] = e;
      lane[j] += e;
    }
    combine_pairwise<sum_math>(lane, L);
    parts[static_cast<std::size_t>(c)] = lane[0];
  }
  combine_pairwise<sum_math>(parts.data(), nchunks);
  return parts[0];
}

/// out[j] *= scale for a contiguous run: softmax's exponentials times 1 / their sum, in place
/// (map_elements, whose output is __restrict, must not read what it writes).
template <class T>
void scale_run(T* out, std::int64_t n, T scale) {
  using V = simd<T>;
  constexpr std::int64_t W = V::size;
  const V vs(scale);
  std::int64_t j = 0;
  for (; j + W <= n; j += W) (V::load_unaligned(out + j) * vs).store_unaligned(out + j);
  for (; j < n; ++j) out[j] *= scale;
}

/// For contiguous x of shape [A, R, B]: the logsumexp over R into out[A * B], or softmax /
/// log_softmax along R into out[A * R * B] (NOTE: [Softmax kernels]).
template <normalization N, class T>
void normalize_arb(const T* x, std::int64_t A, std::int64_t R, std::int64_t B, T* out) {
  if (B == 1) {
    parallel_for(A, 3 * R, [&](std::int64_t a) {
      const T* row = x + a * R;
      const T s = lse_shift(fold_run<extreme_math<true>, true>(row, R, false));
      if constexpr (N == normalization::softmax) {
        T* o = out + a * R;
        scale_run(o, R, T(1) / sum_exp_run<true>(row, R, s, o));
      } else {
        const T lse = std::log(sum_exp_run(row, R, s)) + s;
        if constexpr (N == normalization::logsumexp) out[a] = lse;
        else map_elements<T>(out + a * R, R, [](auto v, auto l) { return v - l; }, elements<T>{row}, repeated<T>{lse});
      }
    });
    return;
  }
  // columns: blocks of rows (as the engine's sums) folded into vectors over B, then pairwise
  using V = simd<T>;
  constexpr std::int64_t W = V::size;
  const std::int64_t rows = std::max<std::int64_t>(64, chunk / B);
  const std::int64_t nblocks = (R + rows - 1) / rows;
  parallel_for(A, 3 * R * B, [&](std::int64_t a) {
    const T* xa = x + a * R * B;
    const scratch<T> shift(B), parts(nblocks * B);
    fold_rows<extreme_math<true>, true>(xa, B, 0, R, 0, B, shift.data());
    for (std::int64_t b = 0; b < B; ++b) shift[b] = lse_shift(shift[b]);
    for (std::int64_t blk = 0; blk < nblocks; ++blk) {
      T* acc = parts.data() + blk * B;
      std::fill(acc, acc + B, T(0));
      for (std::int64_t r = blk * rows; r < std::min(R, (blk + 1) * rows); ++r) {
        const T* row = xa + r * B;
        std::int64_t j = 0;
        for (; j + W <= B; j += W)
          (V::load_unaligned(acc + j) + element::exp(V::load_unaligned(row + j) - V::load_unaligned(shift.data() + j)))
              .store_unaligned(acc + j);
        for (; j < B; ++j) acc[j] += std::exp(row[j] - shift[j]);
      }
    }
    combine_vectors_pairwise<sum_math>(parts.data(), nblocks, B);  // parts[b]: column b's sum
    if constexpr (N == normalization::logsumexp) {
      for (std::int64_t b = 0; b < B; ++b) out[a * B + b] = std::log(parts[b]) + shift[b];
    } else {
      // per column, softmax's 1 / sum or log_softmax's lse
      for (std::int64_t b = 0; b < B; ++b)
        parts[b] = N == normalization::softmax ? T(1) / parts[b] : std::log(parts[b]) + shift[b];
      for (std::int64_t r = 0; r < R; ++r) {
        const T* row = xa + r * B;
        T* o = out + a * R * B + r * B;
        for (std::int64_t b = 0; b < B; ++b)
          o[b] = N == normalization::softmax ? std::exp(row[b] - shift[b]) * parts[b] : row[b] - parts[b];
      }
    }
  });
}

/// The normalisation N of x along dim `dim` (normalised; -1 for a 0-d x: each element alone).
/// logsumexp keeps the dim as 1 when `keepdim`, else drops it; softmax and log_softmax have
/// x's shape. Floating x (the caller promotes), any layout (made contiguous first when needed).
template <normalization N>
tensor normalize(const tensor& x, std::int64_t dim, bool keepdim, const char* fn) {
  shape_t oshape = x.shape();
  if (N == normalization::logsumexp && dim >= 0) {
    if (keepdim) oshape[static_cast<std::size_t>(dim)] = 1;
    else oshape.erase(static_cast<std::size_t>(dim));
  }
  if (x.device() == meta) return meta_like(oshape, x.dtype(), fn);
  tensor out = empty_dense(oshape, x.dtype(), cpu, fn);
  // nothing to write (an empty softmax, or a logsumexp whose kept dims are empty: then B or A is
  // 0, and the column kernel would divide by B)
  if (out.numel() == 0) return out;
  const tensor xs = contiguous_as(x, x.dtype());
  std::int64_t A = x.numel(), R = 1, B = 1;  // dim < 0: each element is its own dim
  if (dim >= 0) {
    A = 1;
    for (std::int64_t i = 0; i < x.dim(); ++i) (i < dim ? A : i == dim ? R : B) *= x.size(i);
  }
  visit_floating(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.impl()->template data<T>();
    if (R == 0) {  // logsumexp over nothing: log(0)
      std::fill(o, o + out.numel(), -std::numeric_limits<T>::infinity());
      return;
    }
    normalize_arb<N, T>(xs.impl()->template data<T>(), A, R, B, o);
  });
  return out;
}

}  // namespace xfunc::detail::backend
