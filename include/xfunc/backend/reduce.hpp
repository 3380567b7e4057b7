#pragma once
// The CPU reduction engine: a reduction states its math once (identity, fold, combine, finish;
// see sum_math and friends) and reduce() turns it into vectorised, blocked, threaded kernels for
// any set of reduced dims.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include <xsimd/xsimd.hpp>

#include <xfunc/backend/cpu.hpp>
#include <xfunc/backend/parallel.hpp>

namespace xfunc::detail::backend {

// NOTE: [Reduction engine]
// A reduction is described by its math, nothing device-specific:
//   identity<A>()     the accumulator of no element
//   fold(a, x)        a with element x added in
//   combine(a, b)     two partial accumulators joined (associative)
//   finish(a)         the result from the accumulator (sqrt for the 2-norm, a itself mostly)
// The input, made contiguous (a permuted dense input is reordered by its strides instead), is
// seen as [A, R, B] with the reduced dims merged into R (one pass per group of adjacent reduced
// dims, innermost first, later passes combining accumulators). Floating types accumulate in
// their own type, in a fixed order:
//   * B == 1 (the reduced elements are contiguous): R is cut into chunks of `chunk` elements;
//     a chunk is folded into simd_accumulators SIMD registers (xsimd: element i goes to lane
//     i % lanes), 16 registers' worth at a time into a group whose lanes then join the chunk's,
//     the lanes are combined pairwise, and the chunks' partials are combined pairwise.
//   * B > 1: R is cut into blocks of rows; a block is folded row by row into a vector of B
//     accumulators (vectorised over B), and the blocks' vectors are combined pairwise.
// So a contiguous float32 sum of n elements has an error bound of about 32 + log2(n / chunk)
// units of rounding (relative to the sum of magnitudes), not n as a sequential sum; a sum over
// an outer dim, about max(64, chunk / B) + log2 of the number of blocks. The order depends only
// on the shape and on the SIMD width the code is compiled for: tasks (rows, chunks, blocks of
// columns) go to threads (NOTE: [Threads]) but each is computed the same way on any thread, so
// results are bitwise identical for every thread count.

/// Unrolls the loop that follows completely: the loops over an array of SIMD accumulators must
/// be, or the accumulators live in memory and every step waits for a store to be forwarded.
#if defined(__CUDACC__)  // (nvcc warns about GCC's pragma; it never compiles these CPU loops for us)
#define XFUNC_DETAIL_UNROLL
#else
#define XFUNC_DETAIL_UNROLL _Pragma("GCC unroll 16")
#endif

/// Vector accumulators per fold (independent chains, so the adds overlap).
inline constexpr int simd_accumulators = 4;

/// Elements per chunk of a contiguous run (4096 floats: 16 KiB, well inside L1).
inline constexpr std::int64_t chunk = 4096;

// NOTE: [Fold prefetch]
// The contiguous fold asks for every line 16 KiB ahead of the one it loads. The hardware
// prefetchers alone keep only as many lines in flight as the out-of-order window reaches, and a
// fold step that costs several instructions per register (amax's max, NaN test and select
// against sum's one add) reaches fewer: `amax(a, {1})` over 4096^2 floats from memory took
// 1.17-1.26x the time of `sum(a, {1})` in one process. With the prefetches, against the same
// headers without them in one process (benchmarks/ab/ab_headers.sh, both orders, 30 rounds,
// 2026-12-05, three runs): amax 4096^2 0.74-0.84x the time, sum 0.94-0.97x, softmax
// 0.96-0.98x, `sum(a, {0})` (which does not fold contiguous runs) 1.01-1.07x; 4 KiB ahead was
// slower on rows of 2048 floats (1.12-1.15x), 8 and 32 KiB the same as 16. That was an AVX-512
// VM (Zen 4). On a Zen 2 VM with AVX2 (2026-12-06) the prefetches cost instead: without them,
// `sum(a, {1})` and `amax(a, {1})` over 4096^2 floats took 0.86-0.90x the time (two runs,
// quartiles within 0.83-0.96; 2048^2 0.92-1.06x, within the noise), and prefetching for the
// caches further out (locality 0 or 1) changed nothing. So builds for AVX-512 prefetch and the
// others do not (with xfunc::kernels shared, the x86-64-v4 copy and the rest: NOTE: [Kernels per
// x86-64 level]). A prefetch changes no value.
inline constexpr int fold_prefetch_bytes = 16 << 10;
inline constexpr bool fold_prefetches =
#if defined(__AVX512F__)
    true;
#else
    false;
#endif

struct sum_math {
  template <class A>
  static constexpr A identity() { return A(0); }
  template <class A>
  static A fold(A a, A x) { return a + x; }
  template <class A>
  static A combine(A a, A b) { return a + b; }
  template <class A>
  static A finish(A a) { return a; }
};
struct prod_math {
  template <class A>
  static constexpr A identity() { return A(1); }
  template <class A>
  static A fold(A a, A x) { return a * x; }
  template <class A>
  static A combine(A a, A b) { return a * b; }
  template <class A>
  static A finish(A a) { return a; }
};
/// amax / amin: NaN propagates (once an accumulator is NaN it stays NaN), as in torch. (The
/// identity of a SIMD accumulator is its scalar identity broadcast: simd_identity.)
template <bool Max>
struct extreme_math {
  template <class A>
  static constexpr A identity() {
    if constexpr (std::is_floating_point_v<A>) return Max ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    else return Max ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
  }
  template <class A>
  static A fold(A a, A x) {
    // max(x, a) returns a when either is NaN (x86 semantics of the second operand), so a NaN
    // accumulator stays; a NaN x is selected explicitly, off the accumulator's dependency chain
    if constexpr (is_simd<A>::value) return xsimd::select(element::is_nan(x), x, Max ? xsimd::max(x, a) : xsimd::min(x, a));
    // (scalars: a chunk's tail, and the lanes of integer chunks, come through here on random
    // data; `|`, not `||`, so that no branch mispredicts)
    else return select_bits((Max ? x > a : x < a) | element::is_nan(x), x, a);
  }
  template <class A>
  static A combine(A a, A b) { return fold(a, b); }
  template <class A>
  static A finish(A a) { return a; }
};
/// The 2-norm: a sum (its identity and combine) of squares, then its square root.
struct norm_math : sum_math {
  template <class A>
  static A fold(A a, A x) { return a + x * x; }
  template <class A>
  static A finish(A a) { return std::sqrt(a); }
};

/// M's identity for T, broadcast when T is a SIMD register.
template <class M, class T>
T identity_of() {
  if constexpr (is_simd<T>::value) return T(M::template identity<typename T::value_type>());
  else return M::template identity<T>();
}

/// Joins parts[0, n) pairwise in a fixed tree (step 1, 2, 4, ...) into parts[0].
template <class M, class T>
void combine_pairwise(T* parts, std::int64_t n) {
  for (std::int64_t step = 1; step < n; step *= 2)
    for (std::int64_t i = 0; i + step < n; i += 2 * step) parts[i] = M::combine(parts[i], parts[i + step]);
}
/// combine_pairwise over N values known at compile time (SIMD accumulators), unrolled so that
/// they stay in registers: the same tree, so the same bits.
template <class M, int N, int Step = 1, class T>
[[gnu::always_inline]] inline void combine_pairwise_fixed(T* parts) {
  if constexpr (Step < N) {
    [&]<int... P>(std::integer_sequence<int, P...>) {
      ((parts[2 * Step * P] = M::combine(parts[2 * Step * P], parts[2 * Step * P + Step])), ...);
    }(std::make_integer_sequence<int, (N - Step - 1) / (2 * Step) + 1>{});
    combine_pairwise_fixed<M, N, Step * 2>(parts);
  }
}
/// dst[j] = M::combine(dst[j], src[j]) (or M::fold when Fold) for j in [0, n): SIMD registers,
/// then the tail one by one.
template <class M, bool Fold, class T>
void fold_vectors(T* dst, const T* src, std::int64_t n) {
  using V = simd<T>;
  constexpr std::int64_t W = V::size;
  std::int64_t j = 0;
  for (; j + W <= n; j += W) {
    const V d = V::load_unaligned(dst + j), x = V::load_unaligned(src + j);
    (Fold ? M::fold(d, x) : M::combine(d, x)).store_unaligned(dst + j);
  }
  for (; j < n; ++j) dst[j] = Fold ? M::fold(dst[j], src[j]) : M::combine(dst[j], src[j]);
}

/// Joins n vectors of b accumulators (vectors[i] at v + i * b) pairwise into the first.
template <class M, class T>
void combine_vectors_pairwise(T* v, std::int64_t n, std::int64_t b) {
  for (std::int64_t step = 1; step < n; step *= 2)
    for (std::int64_t i = 0; i + step < n; i += 2 * step) fold_vectors<M, false>(v + i * b, v + (i + step) * b, b);
}

/// Lane i's partner at one step of a pairwise tree: lane i ^ Step.
template <unsigned Step>
struct lane_partner {
  static constexpr unsigned get(unsigned i, unsigned) { return i ^ Step; }
};

/// The lanes of v joined pairwise in combine_pairwise's tree (lane i with lane i + step, for
/// step 1, 2, 4, ...) inside the register: each step combines v with v's lanes swapped by a
/// swizzle, so lane 0 ends with the same value, bit for bit, without the scalar combines (for
/// amax they were compare-and-branch on random data: a misprediction per row).
template <class M, class V, unsigned Step = 1>
[[gnu::always_inline]] inline V combine_lanes(V v) {  // (GCC left the steps as calls: 7% of a row sum)
  if constexpr (Step >= V::size) {
    return v;
  } else {
    using T = typename V::value_type;
    using I = xsimd::batch<std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>, typename V::arch_type>;
    return combine_lanes<M, V, Step * 2>(M::combine(v, xsimd::swizzle(v, xsimd::make_batch_constant<I, lane_partner<Step>>())));
  }
}

/// One chunk (n <= chunk) of a contiguous run: folded into simd_accumulators SIMD registers,
/// 16 registers' worth at a time into a group that then joins them; the registers are then
/// joined pairwise into one, which takes the remaining whole registers, and its lanes (with the
/// last elements folded round-robin into them) are combined pairwise (combine_lanes for the
/// floating types). `Fold` selects the first pass (elements: fold) or a later one
/// (accumulators: combine).
template <class M, bool Fold, class T>
T fold_chunk(const T* p, std::int64_t n) {
  using V = simd<T>;
  constexpr int K = simd_accumulators, W = static_cast<int>(V::size), L = K * W, G = 16;
  auto step = [](auto a, auto x) { return Fold ? M::fold(a, x) : M::combine(a, x); };
  V acc[K], grp[K];
  for (int k = 0; k < K; ++k) acc[k] = identity_of<M, V>();
  std::int64_t i = 0;
  // (counted loops, one test per step: testing `g < G && i + L <= n` in every step cost a
  // second branch per four loads)
  for (std::int64_t steps = n / L; steps > 0; steps -= G) {
    XFUNC_DETAIL_UNROLL for (int k = 0; k < K; ++k) grp[k] = identity_of<M, V>();
    const std::int64_t group = steps < G ? steps : G;
    for (std::int64_t g = 0; g < group; ++g, i += L) {
      XFUNC_DETAIL_UNROLL for (int k = 0; k < K; ++k) grp[k] = step(grp[k], V::load_unaligned(p + i + k * W));
      // NOTE: [Fold prefetch] (prefetching past the end of the buffer is harmless: never a fault)
      if constexpr (fold_prefetches)
        XFUNC_DETAIL_UNROLL for (int q = 0; q < L * int(sizeof(T)); q += 64)
          __builtin_prefetch(reinterpret_cast<const char*>(p + i) + fold_prefetch_bytes + q);
    }
    XFUNC_DETAIL_UNROLL for (int k = 0; k < K; ++k) acc[k] = M::combine(acc[k], grp[k]);
  }
  // joining registers before lanes leaves one register's W lanes to join per chunk, which
  // matters for short runs (a row of 2048 floats is 32 registers)
  combine_pairwise_fixed<M, K>(acc);
  for (; i + W <= n; i += W) acc[0] = step(acc[0], V::load_unaligned(p + i));
  alignas(64) T lane[W];
  if (i < n) {
    acc[0].store_aligned(lane);
    for (int j = 0; i < n; ++i, ++j) lane[j] = step(lane[j], p[i]);
    acc[0] = V::load_aligned(lane);
  }
  if constexpr (simd_elements<T>) {  // (xsimd swizzles the floating types on every architecture)
    return combine_lanes<M>(acc[0]).get(0);
  } else {
    acc[0].store_aligned(lane);
    combine_pairwise<M>(lane, W);
    return lane[0];
  }
}

/// A contiguous run of r elements: chunk partials (in parallel when `split`) combined pairwise.
template <class M, bool Fold, class T>
T fold_run(const T* p, std::int64_t r, bool split) {
  const std::int64_t n = (r + chunk - 1) / chunk;
  if (n <= 1) return fold_chunk<M, Fold>(p, r);
  std::vector<T> parts(static_cast<std::size_t>(n));
  auto task = [&](std::int64_t c) {
    parts[static_cast<std::size_t>(c)] = fold_chunk<M, Fold>(p + c * chunk, std::min(chunk, r - c * chunk));
  };
  if (split) parallel_for(n, chunk, task);
  else for (std::int64_t c = 0; c < n; ++c) task(c);
  combine_pairwise<M>(parts.data(), n);
  return parts[0];
}

/// Rows [r0, r1) of an [R, B] block (row stride ld) folded into acc[B], columns [b0, b1), each
/// column in row order. NOTE: [Row streaming]: the rows are read as long contiguous runs,
/// fold_group rows at a time into a stripe of accumulators that stays in L1 (row_stripe bytes),
/// not as narrow tiles down all rows: a tile of 64 columns down 64 rows keeps 64 memory streams
/// open, more than the hardware prefetchers follow, and ran at a third of the read bandwidth
/// ([256, 100352] float32 over dim 0: 9.2 -> 4.3-5.0 ms; 2048^2: 0.55-0.61 -> 0.33 ms). Each column is
/// still folded row by row from the identity, so the bits are those of the tiled loop.
inline constexpr int fold_group = 8;
inline constexpr std::int64_t row_stripe = 32 * 1024;
template <class M, bool Fold, class T>
void fold_rows(const T* p, std::int64_t ld, std::int64_t r0, std::int64_t r1, std::int64_t b0, std::int64_t b1,
               T* acc) {
  using V = simd<T>;
  constexpr std::int64_t W = V::size, S = row_stripe / static_cast<std::int64_t>(sizeof(T));
  auto step = [](auto a, auto x) { return Fold ? M::fold(a, x) : M::combine(a, x); };
  for (std::int64_t c0 = b0; c0 < b1; c0 += S) {
    const std::int64_t c1 = std::min(b1, c0 + S), cv = c0 + (c1 - c0) / W * W;
    std::fill(acc + c0, acc + c1, M::template identity<T>());
    std::int64_t r = r0;
    for (; r + fold_group <= r1; r += fold_group) {
      const T* q = p + r * ld;
      for (std::int64_t j = c0; j < cv; j += W) {
        V a = V::load_unaligned(acc + j);
        XFUNC_DETAIL_UNROLL for (int g = 0; g < fold_group; ++g) a = step(a, V::load_unaligned(q + g * ld + j));
        a.store_unaligned(acc + j);
      }
    }
    for (; r < r1; ++r) {
      const T* q = p + r * ld;
      for (std::int64_t j = c0; j < cv; j += W) step(V::load_unaligned(acc + j), V::load_unaligned(q + j)).store_unaligned(acc + j);
    }
    for (std::int64_t j = cv; j < c1; ++j)
      for (std::int64_t i = r0; i < r1; ++i) acc[j] = step(acc[j], p[i * ld + j]);
  }
}

/// out[a * B + b] = the reduction over R of x[a, :, b], for contiguous x of shape [A, R, B]
/// (accumulators, not finished). Fold: x holds elements (else accumulators of an earlier pass).
template <class M, bool Fold, class T>
void reduce_arb(const T* x, std::int64_t A, std::int64_t R, std::int64_t B, T* out) {
  const int threads = get_num_threads();
  if (B == 1) {
    // one contiguous run per output: across outputs in parallel, or within a run when few
    if (A < 2 * threads) {
      for (std::int64_t a = 0; a < A; ++a) out[a] = fold_run<M, Fold>(x + a * R, R, true);
    } else {
      parallel_for(A, R, [&](std::int64_t a) { out[a] = fold_run<M, Fold>(x + a * R, R, false); });
    }
    return;
  }
  // blocks of rows folded into vectors of B accumulators, then combined pairwise; columns split
  // into blocks for the threads (the arithmetic per column does not depend on the split)
  const std::int64_t rows = std::max<std::int64_t>(64, chunk / B);
  const std::int64_t nblocks = (R + rows - 1) / rows;
  auto one = [&](std::int64_t a, T* parts, bool split) {
    const T* xa = x + a * R * B;
    const std::int64_t cols = split ? std::max<std::int64_t>(1024, (B + 4 * threads - 1) / (4 * threads)) : B;
    const std::int64_t ncols = (B + cols - 1) / cols;
    T* const acc = nblocks == 1 ? out + a * B : parts;  // one block of rows: fold straight into out
    auto task = [&](std::int64_t t) {
      const std::int64_t blk = t / ncols, b0 = (t % ncols) * cols;
      fold_rows<M, Fold>(xa, B, blk * rows, std::min(R, (blk + 1) * rows), b0, std::min(B, b0 + cols), acc + blk * B);
    };
    if (split) parallel_for(nblocks * ncols, rows * std::min(cols, B), task);
    else for (std::int64_t t = 0; t < nblocks * ncols; ++t) task(t);
    if (nblocks == 1) return;
    combine_vectors_pairwise<M>(parts, nblocks, B);
    std::copy(parts, parts + B, out + a * B);
  };
  if (A >= 2 * threads) {  // outputs of different a in parallel, each computed in full by one task
    parallel_for(A, R * B, [&](std::int64_t a) {
      const scratch<T> parts(nblocks > 1 ? nblocks * B : 0);
      one(a, parts.data(), false);
    });
  } else {  // the blocks of rows and columns of each a in parallel
    const scratch<T> parts(nblocks > 1 ? nblocks * B : 0);
    for (std::int64_t a = 0; a < A; ++a) one(a, parts.data(), true);
  }
}

/// Layout of a dense tensor reordered so that its strides decrease: (extent, stride, reduced?)
/// per dim, with size-1 dims dropped. Empty when the tensor is not a permutation of a
/// contiguous layout (broadcast or gapped strides): it is copied first then.
struct reduce_dim {
  std::int64_t extent, stride;
  bool reduced;
  std::int64_t index;  // the dim in the input
};
inline std::vector<reduce_dim> dense_order(const tensor_impl& s, const dims_t& dims) {
  std::vector<reduce_dim> d;
  for (std::size_t i = 0; i < s.shape.size(); ++i) {
    if (s.shape[i] == 1) continue;
    const bool red = std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(i)) != dims.end();
    d.push_back({s.shape[i], s.strides[i], red, static_cast<std::int64_t>(i)});
  }
  std::stable_sort(d.begin(), d.end(), [](const reduce_dim& a, const reduce_dim& b) { return a.stride > b.stride; });
  std::int64_t expect = 1;
  for (auto it = d.rbegin(); it != d.rend(); ++it) {
    if (it->stride != expect) return {};
    expect *= it->extent;
  }
  return d;
}

/// Reduces `dims` (normalised, ascending) of x with math M, computing in dtype `compute` (x is
/// converted first when it differs) and returning dtype `out_dt`; `fn` names the op in errors.
template <class M, class Types>
tensor reduce(const tensor& x, const dims_t& dims, bool keepdim, dtype compute, dtype out_dt, const char* fn) {
  const shape_t oshape = [&] {
    shape_t s;
    for (std::size_t i = 0; i < x.shape().size(); ++i) {
      const bool red = std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(i)) != dims.end();
      if (!red) s.push_back(x.shape()[i]);
      else if (keepdim) s.push_back(1);
    }
    return s;
  }();
  if (x.device() == meta) return meta_like(oshape, out_dt, fn);
  tensor out = empty_dense(oshape, out_dt, cpu, fn);
  if (x.numel() == 0) {  // every result reduces no element
    Types::visit(compute, [&](auto tag) {
      using T = typename decltype(tag)::type;
      visit_dtype(out_dt, [&](auto otag) {
        using O = typename decltype(otag)::type;
        O* o = out.impl()->template data<O>();
        std::fill(o, o + out.numel(), static_cast<O>(M::finish(M::template identity<T>())));
      });
    });
    return out;
  }
  Types::visit(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    tensor xs;
    const tensor& xc = x.impl()->dt == compute ? x : (xs = contiguous_as(x, compute));
    std::vector<reduce_dim> order = dense_order(*xc.impl(), dims);
    tensor copy;
    if (order.empty() && xc.numel() > 1) {  // not a permuted dense layout: copy it contiguous
      copy = contiguous_as(xc, compute);
      order = dense_order(*copy.impl(), dims);
    }
    const tensor& src = copy.defined() ? copy : xc;
    const T* p = src.impl()->template data<T>();
    // merge adjacent dims of the same kind; then reduce the innermost group of reduced dims at
    // a time ([A, R, B]), into a buffer of accumulators
    std::vector<std::pair<std::int64_t, bool>> groups;  // (extent, reduced), outermost first
    for (const auto& d : order) {
      if (!groups.empty() && groups.back().second == d.reduced) groups.back().first *= d.extent;
      else groups.push_back({d.extent, d.reduced});
    }
    std::int64_t kept_total = 1;
    for (const auto& g : groups)
      if (!g.second) kept_total *= g.first;
    scratch<T> buf;
    const T* cur = p;
    bool first = true;
    while (true) {
      std::ptrdiff_t r = -1;
      for (std::ptrdiff_t i = static_cast<std::ptrdiff_t>(groups.size()); i-- > 0;)
        if (groups[static_cast<std::size_t>(i)].second) {
          r = i;
          break;
        }
      if (r < 0) break;
      std::int64_t A = 1, B = 1;
      for (std::ptrdiff_t i = 0; i < r; ++i) A *= groups[static_cast<std::size_t>(i)].first;
      for (std::size_t i = static_cast<std::size_t>(r) + 1; i < groups.size(); ++i) B *= groups[i].first;
      const std::int64_t R = groups[static_cast<std::size_t>(r)].first;
      scratch<T> next(A * B);
      if (first) reduce_arb<M, true>(cur, A, R, B, next.data());
      else reduce_arb<M, false>(cur, A, R, B, next.data());
      first = false;
      buf = std::move(next);
      cur = buf.data();
      groups.erase(groups.begin() + r);
      // merge the kept neighbours the removed group separated
      if (r > 0 && static_cast<std::size_t>(r) < groups.size() && !groups[static_cast<std::size_t>(r) - 1].second &&
          !groups[static_cast<std::size_t>(r)].second) {
        groups[static_cast<std::size_t>(r) - 1].first *= groups[static_cast<std::size_t>(r)].first;
        groups.erase(groups.begin() + r);
      }
    }
    if (first) {  // nothing reduced (every reduced dim has extent 1): each accumulator holds one element
      buf = scratch<T>(kept_total);
      for (std::int64_t i = 0; i < kept_total; ++i) buf[i] = M::fold(M::template identity<T>(), p[i]);
    }
    // `buf` holds the accumulators in the order of the kept dims by decreasing stride; they are
    // finished in place, then placed in the output's logical order (a tiled copy when the input's
    // kept dims were permuted, as in a weight gradient computed transposed)
    T* const acc = buf.data();
    for (std::int64_t i = 0; i < kept_total; ++i) acc[i] = M::finish(acc[i]);
    std::vector<std::int64_t> kept_dims;  // input dims (extent > 1) in physical order
    for (const auto& d : order)
      if (!d.reduced) kept_dims.push_back(d.index);
    visit_dtype(out_dt, [&](auto otag) {
      using O = typename decltype(otag)::type;
      O* o = out.impl()->template data<O>();
      const bool in_order = std::is_sorted(kept_dims.begin(), kept_dims.end());
      if (in_order) {
        for (std::int64_t i = 0; i < kept_total; ++i) o[i] = static_cast<O>(acc[i]);
        return;
      }
      // strides of the output (logical, keepdim or not) for each kept input dim, in buf's order
      shape_t ost = contiguous_strides(oshape);
      std::vector<std::int64_t> dst_stride, extent;
      for (auto d : kept_dims) {
        std::size_t pos = 0;  // position of input dim d in the output
        for (std::int64_t i = 0; i < d; ++i)
          if (keepdim || std::find(dims.begin(), dims.end(), i) == dims.end()) ++pos;
        dst_stride.push_back(ost[pos]);
        extent.push_back(x.shape()[static_cast<std::size_t>(d)]);
      }
      const shape_t ext(extent.begin(), extent.end()), dst(dst_stride.begin(), dst_stride.end());
      strided_copy<O, T>(ext, o, dst, acc, contiguous_strides(ext));
    });
  });
  return out;
}

}  // namespace xfunc::detail::backend
