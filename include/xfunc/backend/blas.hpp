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
// is cut into a grid of tiles of its result, about one per thread (make_gemm_grid), each a
// one-thread GEMM over the whole sum. Why the bits do not depend on the thread count (NOTE:
// [Threads]): a one-thread GEMM of the Goto kind (OpenBLAS; BLIS by the same design) cuts the sum
// over k into blocks that depend on k alone, adds each block's partial sums into c in order, and
// computes each element in a register tile of its micro-kernel, whose arithmetic can depend on
// the element's place in that tile. So c[i, j] is the same whichever call computes it as long as
// every call starts on a multiple of the register tile: tiles start at multiples of
// gemm_tile_align_rows and gemm_tile_align_cols, which cover the register tiles of OpenBLAS's x86
// kernels (Debian's OpenBLAS 0.3.21 on AMD Zen 4, cutting 400 x 500 products at every offset
// up to 200: f32 at any offset but pieces of 1-3 rows or 1-5 columns, which take another kernel
// path, hence the tiles' minimum size; f64 only rows in 12s and columns in 8s).
// test_backend_kernels checks the claim at 1, 2 and 3 threads, every transpose, f32 and f64, sums
// of several k blocks: a BLAS that broke it (one with other kernels for smaller calls, say) fails
// there.
// OpenBLAS's own threads do not keep it: on AMD Zen 4 its multithreaded SGEMM of a transposed
// operand differed in the last bits from its one-thread one (2026-12-02).
// Why one tile per thread, not a fixed tile size (the same calls at every thread count, as
// until 2026-12-03): each tile packs its own panels of a and b, and small tiles pack them many
// times. 1024^3 f32 on one thread (OpenBLAS, this VM): one call 22.4 ms, tiles of 128 x 512
// 26.8-27.7 ms; 2048^3 165 ms against 201-220 ms. Tiles are at least gemm_min_tile_rows x
// gemm_min_tile_cols (less the alignment) and gemm_min_tile_madds, and the grid cuts the
// side whose re-packing costs least. The minimum width is what lets a linear layer's weight
// gradient, [128, 784] summed over a batch, use two threads: [8192, 128]^T x [8192, 784] in two
// tiles of 448 and 336 columns costs 4% more on one thread than one call, and takes 0.55-0.6x its
// time on two (OpenBLAS, this VM; with a minimum of 512 columns it ran on one thread, at 1.7x
// libtorch's time on two).
inline constexpr double bmm_split_batch_max = double(1 << 24);
inline constexpr std::int64_t gemm_min_tile_rows = 192, gemm_min_tile_cols = 256;
inline constexpr std::int64_t gemm_tile_align_rows = 96, gemm_tile_align_cols = 64;
inline constexpr double gemm_min_tile_madds = double(1 << 22);

/// The grid of tiles of a batch of P [n, m] results of depth k on `threads` threads: about one
/// tile per thread, each at least gemm_min_tile_madds multiply-adds and, when cut, of at least
/// gemm_min_tile_rows x gemm_min_tile_cols less the alignment; tile bounds are even shares of the
/// result rounded up to the alignments. Cutting rows into r bands re-packs b's k x m panel r
/// times, cutting columns into c bands re-packs a's n x k panel c times: the grid minimises
/// r * m + c * n among those with enough tiles.
struct gemm_grid {
  std::int64_t n, m, row_tiles, col_tiles;
  static std::int64_t bound(std::int64_t size, std::int64_t i, std::int64_t tiles, std::int64_t align) {
    return std::min(size, (size * i / tiles + align - 1) / align * align);
  }
  std::int64_t row_start(std::int64_t i) const { return bound(n, i, row_tiles, gemm_tile_align_rows); }
  std::int64_t col_start(std::int64_t j) const { return bound(m, j, col_tiles, gemm_tile_align_cols); }
};
inline gemm_grid make_gemm_grid(std::int64_t P, std::int64_t n, std::int64_t m, std::int64_t k, int threads) {
  const double madds = double(n) * double(m) * double(k);
  const std::int64_t want = std::max<std::int64_t>(
      1, std::min<std::int64_t>((threads + P - 1) / P, static_cast<std::int64_t>(madds / gemm_min_tile_madds)));
  const std::int64_t max_r = std::max<std::int64_t>(1, n / gemm_min_tile_rows);
  const std::int64_t max_c = std::max<std::int64_t>(1, m / gemm_min_tile_cols);
  std::int64_t best_r = 1, best_c = 1;
  for (std::int64_t r = 1; r <= std::min(want, max_r); ++r) {
    const std::int64_t c = std::min(max_c, (want + r - 1) / r);
    const std::int64_t tiles = std::min(want, r * c), best_tiles = std::min(want, best_r * best_c);
    if (tiles > best_tiles || (tiles == best_tiles && r * m + c * n < best_r * m + best_c * n)) best_r = r, best_c = c;
  }
  return {n, m, best_r, best_c};
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
    // small products split by batch item, larger ones by BLAS (NOTE: [Batched GEMM threads])
    const double madds = double(n) * double(m) * double(k);
    if (P > 1 && madds <= bmm_split_batch_max) {
      parallel_for_blas(P, static_cast<std::int64_t>(madds), one);
    } else {
      const gemm_grid g = make_gemm_grid(P, n, m, k, get_num_threads());
      const std::int64_t tiles = g.row_tiles * g.col_tiles;
      parallel_for_blas(P * tiles, static_cast<std::int64_t>(madds / double(tiles)), [&](std::int64_t t) {
        const std::int64_t p = t / tiles, i = t % tiles / g.col_tiles, j = t % g.col_tiles;
        const std::int64_t r0 = g.row_start(i), c0 = g.col_start(j);
        const std::int64_t rows = g.row_start(i + 1) - r0, cols = g.col_start(j + 1) - c0;
        gemm<T>(ta, tb, rows, cols, k, pa + p * sa + (ta ? r0 : r0 * lda), lda, pb + p * sb + (tb ? c0 * ldb : c0), ldb,
                pc + p * n * m + r0 * m + c0, m);
      });
    }
  });
  return out;
}

}  // namespace xfunc::detail::backend
