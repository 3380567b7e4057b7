#pragma once
// Matrix products on the CPU through BLAS (OpenBLAS's cblas): the kernel of bmm_op
// (ops/linalg.hpp), which every product (matmul, mm, mv, dot, vmap of them) goes through.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <cblas.h>

#include <xfunc/backend/cpu.hpp>

namespace xfunc::detail::backend {

/// How BLAS can read a strided matrix without a copy: (transpose?, leading dimension), or none.
inline bool blas_layout(std::int64_t rows, std::int64_t cols, std::int64_t s0, std::int64_t s1, bool& trans,
                        std::int64_t& ld) {
  if ((s1 == 1 || cols == 1) && s0 >= std::max<std::int64_t>(cols, 1)) {
    trans = false;
    ld = s0;
    return true;
  }
  if ((s0 == 1 || rows == 1) && s1 >= std::max<std::int64_t>(rows, 1)) {
    trans = true;
    ld = s1;
    return true;
  }
  return false;
}

template <class T>
void gemm(bool ta, bool tb, std::int64_t n, std::int64_t m, std::int64_t k, const T* a, std::int64_t lda, const T* b,
          std::int64_t ldb, T* c, std::int64_t ldc) {
  const auto TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  const auto N = static_cast<blasint>(n), M = static_cast<blasint>(m), K = static_cast<blasint>(k);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, TA, TB, N, M, K, 1.0f, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0f,
                c, static_cast<blasint>(ldc));
  else if constexpr (std::is_same_v<T, double>)
    cblas_dgemm(CblasRowMajor, TA, TB, N, M, K, 1.0, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0,
                c, static_cast<blasint>(ldc));
  else  // integers: plain loops
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < m; ++j) {
        T s = 0;
        for (std::int64_t q = 0; q < k; ++q)
          s += (ta ? a[q * lda + i] : a[i * lda + q]) * (tb ? b[j * ldb + q] : b[q * ldb + j]);
        c[i * ldc + j] = s;
      }
}

// NOTE: [Batched GEMM threads]
// Products run on xfunc's pool (xf::set_num_threads), with BLAS (OpenBLAS) held to one thread
// (set before the GEMMs when it is not: cheap to ask). A batch of small products (at most
// bmm_split_batch_max multiply-adds each) is split over the pool by batch item, each item a
// one-thread GEMM (BLAS's own threads would wake and synchronise once per item). A larger product
// is cut into bands of rows of its result, about one per thread (make_gemm_bands), each a
// one-thread GEMM over the whole sum (a result too short for that into bands of columns: below).
// Why the bits do not depend on the thread count (NOTE: [Threads]): a one-thread GEMM of the
// Goto kind (OpenBLAS; BLIS by the same design) cuts the sum over k into blocks that depend on k
// alone and adds each block's partial sums into c in order; a row-major result's rows are the
// columns of BLAS's column-major one, which its driver walks in panels whose arithmetic depends
// on the element's place in the micro-kernel's register tile alone. So c[i, j] is the same whichever call computes it as long as every band starts on a
// multiple of that tile: bands start at multiples of gemm_band_align (24), which covers
// OpenBLAS's x86 kernels (Debian's OpenBLAS 0.3.21 cutting 400 x 500, 128 x 784 and 130 x 70
// products at every row: Haswell kernels f32 in 12s, f64 in 2s; SkylakeX f32 anywhere but pieces
// of 1-3 rows, f64 in 12s; a cut at 156 rows broke the Nehalem kernels' bits, 24s keep them).
// test_backend_kernels passes with OPENBLAS_CORETYPE set to Haswell, SkylakeX, CooperLake, Zen,
// Sandybridge, Nehalem, Core2 and Prescott.
// Columns are never cut where the cut would follow the thread count: that dimension is blocked
// by the driver from the call's own size and its kernels compute an element differently near a
// block's edge. On an AMD Zen 5 VM (which OpenBLAS 0.3.21 runs with its Haswell kernels) cutting
// 400 x 500 f32 at any column but 256 (the driver's own block) changed the bits of the 16 columns
// around the cut; the SkylakeX kernels of a Zen 4 VM had kept them, and the columns were cut
// until 2026-12-04.
// test_backend_kernels checks the claim at 1, 2 and 3 threads, every transpose, f32 and f64, sums
// of several k blocks: a BLAS that broke it (one with other kernels for smaller calls, say) fails
// there.
// OpenBLAS's own threads do not keep it: on AMD Zen 4 its multithreaded SGEMM of a transposed
// operand differed in the last bits from its one-thread one (2026-12-02).
// Why one band of rows per thread, not a fixed size (the same calls at every thread count, as
// until 2026-12-03): each band packs its own panel of b, and small pieces pack it many times.
// 1024^3 f32 on one thread (OpenBLAS, Zen 4 VM): one call 22.4 ms, tiles of 128 x 512 26.8-27.7 ms;
// 2048^3 165 ms against 201-220 ms. Bands are at least gemm_min_band_rows rows and
// gemm_min_tile_madds multiply-adds: a band re-packs b's k x m panel, 1 / rows of its own work.
// A result too short to cut into two bands of rows (fewer than 2 * gemm_min_band_rows) is cut
// into bands of columns instead, at fixed places that depend on its shape alone (at least
// gemm_min_band_columns wide, or halves of at least half that; starting on multiples of
// gemm_column_align): the same calls at every thread count, one thread running them all in
// turn, so the bits cannot depend on the thread count whatever the kernels do at a column
// block's edge. Each band packs its own part of b and the whole of a, which is short. Debian's
// OpenBLAS 0.3.21, Zen 2 VM, one thread, f32 [32, 4096] x [4096, 4096] with b on huge pages (as
// xfunc allocates it): one call 19.3-20.9 ms, bands of 2048 columns 19.3-19.8, of 1024 19.5-20.0,
// of 512 21.2-21.5 (b packed by rows of 2 KiB); two threads with bands of 1024 10.3-10.4 ms.
// Where b is smaller narrower bands cost nothing: [32, 1024] x [1024, 1024] in bands of 256 to
// 1024 columns 0.98-1.04 ms, [64, 1536] x [1536, 1536] in 512 to 1536 3.99-4.12 ms; hence the
// halves. Until 2026-12-06 such a result was computed transposed (c^T = b^T a^T, in bands of
// c^T's rows): 1.06x one call on the AVX-512 VMs, but 1.35x on this one.
inline constexpr double bmm_split_batch_max = double(1 << 24);
inline constexpr std::int64_t gemm_min_band_rows = 48, gemm_band_align = 24;
inline constexpr std::int64_t gemm_min_band_columns = 1024, gemm_column_align = 64;
inline constexpr double gemm_min_tile_madds = double(1 << 22);

/// How each of a batch of [n, m] results is cut (NOTE: [Batched GEMM threads]): into `bands`
/// bands of its columns (`columns`) or of its rows; band i covers [start(i), start(i + 1)) of
/// `extent` (m or n), bounds being even shares rounded up to multiples of `align`.
struct gemm_bands {
  std::int64_t extent, bands, align;
  bool columns;
  std::int64_t start(std::int64_t i) const {
    return std::min(extent, (extent * i / bands + align - 1) / align * align);
  }
};

/// The bands of a batch of P [n, m] results of depth k on `threads` threads. Results too short
/// for two bands of rows: bands of at least gemm_min_band_columns columns (two of at least half
/// as many when there are fewer than twice that), whatever the thread count. Others: about one
/// band of rows per thread, of at least gemm_min_band_rows rows less the alignment. Every band
/// at least gemm_min_tile_madds multiply-adds.
inline gemm_bands make_gemm_bands(std::int64_t P, std::int64_t n, std::int64_t m, std::int64_t k, int threads) {
  const auto work = static_cast<std::int64_t>(double(n) * double(m) * double(k) / gemm_min_tile_madds);
  if (n < 2 * gemm_min_band_rows) {  // bands of 1024 columns or more, or halves of 512 or more
    const std::int64_t cut =
        std::max(m / gemm_min_band_columns, std::min<std::int64_t>(2, m / (gemm_min_band_columns / 2)));
    return {m, std::max<std::int64_t>(1, std::min(cut, work)), gemm_column_align, true};
  }
  const std::int64_t want = std::max<std::int64_t>(1, std::min<std::int64_t>((threads + P - 1) / P, work));
  return {n, std::min(want, std::max<std::int64_t>(1, n / gemm_min_band_rows)), gemm_band_align, false};
}

/// Sets OpenBLAS's thread count to n if it is not n already.
inline void set_blas_threads(int n) {
#if defined(OPENBLAS_VERSION)
  if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
#else
  (void)n;
#endif
}

/// Runs f(i) for i in [0, n_tasks) over the pool like parallel_for, for tasks that call BLAS,
/// which is held to one thread (NOTE: [Batched GEMM threads]).
template <class F>
void parallel_for_blas(std::int64_t n_tasks, std::int64_t work_per_task, F&& f) {
  set_blas_threads(1);
  parallel_for(n_tasks, work_per_task, f);
}

// NOTE: [Outer products]
// A product with k == 1, c[i, j] = a[i] * b[j], is what a linear layer's weight gradient becomes
// under vmap (per-example gradients: [B, n, 1] x [B, 1, m]): a large result, written once and
// read once later. BLAS writes it with ordinary stores, each of which first reads its line from
// memory; here each row of c is b times a[i] (one rounding, as in the GEMM), and a result of
// outer_stream_min_bytes or more is written with streaming stores (NOTE: [Streaming stores]),
// which do not read it: [256, 128, 1] x [256, 1, 784] float32, 10 -> 3.9 ms. Rows go to threads
// in blocks, each ending with a store fence; the values do not depend on the split.
// Streaming starts at 16 MiB here, not at the transposes' 4 MiB: rows written in order lose
// little to ordinary stores, and a result that fits in the last-level cache is found there by
// whoever reads it next. Per-example gradients in chunks of 16 examples (6.4 MB each, summed at
// once): 9.4-10.8 ms per 256 examples with streaming from 4 MiB, 6.7-6.9 ms from 16 MiB.
inline constexpr std::int64_t outer_block_elements = std::int64_t(1) << 14;
inline constexpr std::size_t outer_stream_min_bytes = std::size_t(16) << 20;

/// c[p, i, j] = a(p, i) * b(p, j) for the [P, n, m] result c, where a(p, i) is pa[p * sa + i * ia]
/// and b(p, j) is pb[p * sb + j * jb].
template <class T>
void outer_products(const T* pa, std::int64_t sa, std::int64_t ia, const T* pb, std::int64_t sb, std::int64_t jb,
                    std::int64_t P, std::int64_t n, std::int64_t m, T* pc) {
  using V = simd<T>;
  constexpr std::int64_t W = V::size;
  constexpr std::size_t bytes = sizeof(V);
  const bool stream = can_stream_bytes<bytes> && static_cast<std::size_t>(P * n * m) * sizeof(T) >= outer_stream_min_bytes;
  const std::int64_t rows = std::max<std::int64_t>(1, outer_block_elements / m), blocks = (n + rows - 1) / rows;
  parallel_for(P * blocks, rows * m, [&](std::int64_t t) {
    const std::int64_t p = t / blocks, i0 = t % blocks * rows, i1 = std::min(n, i0 + rows);
    std::vector<T> gathered;
    const T* b = pb + p * sb;
    if (jb != 1) {  // a strided row of b, gathered once per block
      gathered.resize(static_cast<std::size_t>(m));
      for (std::int64_t j = 0; j < m; ++j) gathered[static_cast<std::size_t>(j)] = b[j * jb];
      b = gathered.data();
    }
    for (std::int64_t i = i0; i < i1; ++i) {
      const T x = pa[p * sa + i * ia];
      T* c = pc + (p * n + i) * m;
      const V vx(x);
      std::int64_t j = 0;
      if (stream) {  // ordinary stores up to the first aligned register, then streaming ones
        const std::size_t misaligned = reinterpret_cast<std::uintptr_t>(c) % bytes;
        const std::int64_t head =
            misaligned == 0 ? 0 : std::min<std::int64_t>(m, static_cast<std::int64_t>((bytes - misaligned) / sizeof(T)));
        for (; j < head; ++j) c[j] = x * b[j];
        for (; j + W <= m; j += W) {
          const V v = V::load_unaligned(b + j) * vx;
          stream_bytes<bytes>(c + j, &v);
        }
      }
      for (; j + W <= m; j += W) (V::load_unaligned(b + j) * vx).store_unaligned(c + j);
      for (; j < m; ++j) c[j] = x * b[j];
    }
    if (stream) stream_fence();
  });
}

/// The batch of products a [P, n, k] x b [P, k, m] -> [P, n, m] in dtype dt (strided operands
/// are passed to BLAS as they are when it can read them: transposed views as transposes).
template <int = 0>
tensor batched_matmul(const tensor& a, const tensor& b, dtype dt, const char* op) {
  const std::int64_t P = a.size(0), n = a.size(1), k = a.size(2), m = b.size(2);
  // every element is written by the GEMM (beta = 0), or zeroed here when there is nothing to sum
  tensor out = empty_dense({P, n, m}, dt, cpu, op);
  if (n == 0 || m == 0 || k == 0 || P == 0) {
    std::memset(out.impl()->store->data, 0, out.impl()->store->nbytes);
    return out;
  }
  numeric_types::visit(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto prepare = [&](const tensor& x, std::int64_t r, std::int64_t c, bool& tr, std::int64_t& ld) {
      const tensor_impl& s = *x.impl();
      if (s.dt == dt && blas_layout(r, c, s.strides[1], s.strides[2], tr, ld)) return x;
      tensor y = contiguous_as(x, dt);
      tr = false;
      ld = std::max<std::int64_t>(c, 1);
      return y;
    };
    bool ta = false, tb = false;
    std::int64_t lda = 0, ldb = 0;
    tensor A = prepare(a, n, k, ta, lda), B = prepare(b, k, m, tb, ldb);
    const std::int64_t sa = A.impl()->strides[0], sb = B.impl()->strides[0];
    const T* pa = A.impl()->template data<T>();
    const T* pb = B.impl()->template data<T>();
    T* pc = out.impl()->template data<T>();
    if constexpr (std::is_floating_point_v<T>) {
      if (k == 1) {  // NOTE: [Outer products]
        outer_products<T>(pa, sa, ta ? 1 : lda, pb, sb, tb ? ldb : 1, P, n, m, pc);
        return;
      }
    }
    auto one = [&](std::int64_t p) { gemm<T>(ta, tb, n, m, k, pa + p * sa, lda, pb + p * sb, ldb, pc + p * n * m, m); };
    // small products split by batch item, larger ones in bands (NOTE: [Batched GEMM threads])
    const double madds = double(n) * double(m) * double(k);
    if (P > 1 && madds <= bmm_split_batch_max) {
      parallel_for_blas(P, static_cast<std::int64_t>(madds), one);
      return;
    }
    const gemm_bands g = make_gemm_bands(P, n, m, k, get_num_threads());
    parallel_for_blas(P * g.bands, static_cast<std::int64_t>(madds / double(g.bands)), [&](std::int64_t t) {
      const std::int64_t p = t / g.bands, lo = g.start(t % g.bands), hi = g.start(t % g.bands + 1);
      const T *x = pa + p * sa, *y = pb + p * sb;
      T* z = pc + p * n * m;
      if (g.columns)  // columns lo..hi of b and c
        gemm<T>(ta, tb, n, hi - lo, k, x, lda, y + (tb ? lo * ldb : lo), ldb, z + lo, m);
      else  // rows lo..hi of a and c
        gemm<T>(ta, tb, hi - lo, m, k, x + (ta ? lo : lo * lda), lda, y, ldb, z + lo * m, m);
    });
  });
  return out;
}

}  // namespace xfunc::detail::backend
