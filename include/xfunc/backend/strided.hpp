#pragma once
// Copies between strided layouts (NOTE: [Strided copies]): the kernel behind gather_into,
// materialize, clone / contiguous, write_through and cat / stack.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include <xsimd/xsimd.hpp>

#include <xfunc/backend/parallel.hpp>
#include <xfunc/backend/streaming.hpp>
#include <xfunc/core/shape.hpp>
#include <xfunc/core/tensor.hpp>  // scratch

namespace xfunc::detail::backend {

// NOTE: [Strided copies]
// Every copy from one layout to another (a permuted, transposed, sliced, flipped or broadcast
// view into a contiguous buffer, a contiguous value into a strided view, an input of cat into its
// slice of the result) goes through strided_copy, which first simplifies the layout:
//  - size-1 dims are dropped;
//  - the dims are ordered by the destination's strides, largest first, so the destination is
//    written in memory order whatever the view;
//  - neighbouring dims that are contiguous with each other in both source and destination are
//    merged (a contiguous copy of any rank becomes one long row).
// What is left is copied as rows of the innermost dim, each a plain loop that the compiler
// vectorises when the source is contiguous (or a fill when it is broadcast) along it. When the
// source is instead contiguous along another dim (a transpose, most permutations), reading rows
// would touch one cache line per element; those two dims are copied in copy_tile x copy_tile
// tiles, so that every line read or written is used whole while it is in L1. No per-element
// index arithmetic remains in any inner loop: a position is decoded once per task and advanced
// per row.
// The work is split into tasks of about copy_grain elements (rows, columns of tiles, or pieces of
// one long row); the split depends only on the layout, and a copy does no arithmetic, so the
// result is the same for every thread count (NOTE: [Threads]). Small copies run on the calling
// thread (parallel_for's threshold).
inline constexpr std::int64_t copy_grain = std::int64_t(1) << 15;
inline constexpr std::int64_t copy_tile = 64;  // (32 KiB of 8-byte elements in a tile buffer)
inline constexpr std::int64_t copy_band = 8 * copy_tile;  // a column of tiles (NOTE: [Transposed copy order])

// The register blocks of a transpose whose destination has at least stream_min_bytes are
// stored with streaming stores (NOTE: [Streaming stores] in backend/streaming.hpp), since such a
// transpose writes each destination line once, whole (NOTE: [Register transposes]):
// `t().contiguous()` of 2048^2 floats 1.9 -> 1.2 ms on the development VM. Smaller destinations
// keep ordinary stores, since whoever reads the result next may still find it in cache.
inline constexpr std::size_t stream_min_bytes = std::size_t(4) << 20;

// NOTE: [Transposed copy order]
// Within a tile, the register blocks are taken along the destination's rows first: the W rows of
// a block row each receive copy_tile consecutive elements (whole neighbouring lines) before the
// next W rows start, and each source row of the tile gives one line per block row. Taking them
// down the destination's columns first instead wrote one line into each of copy_tile rows at a
// time, every one in a different page: `t().contiguous()` of 2048^2 floats took 1.33-1.42 ms
// against 0.96-1.21 now, 1024^2 doubles 0.55-0.64 against 0.28-0.55 (mostly 0.28-0.38),
// `permute({2,0,1})` of [64,256,256] floats 1.23-1.27 against 0.67-0.76, 512^2 floats (ordinary
// stores) 0.066 against 0.029-0.035 (one thread, alternating runs on the development VM).
// Destinations whose rows are not whole lines (1000 floats, say) take the same time either way.
// Across tiles, a task's unit is a column of tiles down a band of copy_band destination rows (8
// tiles: 512 rows), and a task's units are neighbouring columns: each source row then gives
// copy_band consecutive elements (2 KiB of floats) in quick succession, where a band of one tile
// across the whole width gave 256 bytes per visit, each visit a fresh stream for the memory and
// the prefetchers. Both versions in one process (benchmarks/ab/ab_headers.sh, both orders, 30
// rounds, 2026-12-05): `t().contiguous()` of 4096^2 floats 0.78-0.80x the time, of 2048^2 0.82x,
// `permute({2,0,1})` of [64,256,256] 0.95-0.98x; bands of 256 or 1024 rows were slower than 512
// (1.11x and 1.05x its time), and so were units taking the tiles along the rows first (1.03-1.07x).
// Units of one column of tiles, not squares of 512 x 512, keep a 512^2 copy in 8 tasks.

/// A copy layout after simplification: `rank` dims, outermost first, with extents and the
/// destination's and the source's strides (in elements).
struct copy_layout {
  int rank = 0;
  bool empty = false;
  // (entries past rank are never read; not zeroed, as small copies are frequent)
  std::int64_t n[shape_t::max_dims];
  std::int64_t ds[shape_t::max_dims];
  std::int64_t ss[shape_t::max_dims];
};

inline std::int64_t abs_stride(std::int64_t s) { return s < 0 ? -s : s; }

/// Simplifies the layout of a copy of `shape` (see NOTE: [Strided copies]).
inline copy_layout simplify_copy(const shape_t& shape, const shape_t& dst_strides, const shape_t& src_strides) {
  copy_layout L;
  int r = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      L.empty = true;
      return L;
    }
    if (shape[i] == 1) continue;
    L.n[r] = shape[i];
    L.ds[r] = dst_strides[i];
    L.ss[r] = src_strides[i];
    ++r;
  }
  // insertion sort by |destination stride|, largest first (stable: ties keep their order)
  for (int i = 1; i < r; ++i) {
    const std::int64_t n = L.n[i], d = L.ds[i], s = L.ss[i];
    int j = i;
    for (; j > 0 && abs_stride(L.ds[j - 1]) < abs_stride(d); --j) {
      L.n[j] = L.n[j - 1];
      L.ds[j] = L.ds[j - 1];
      L.ss[j] = L.ss[j - 1];
    }
    L.n[j] = n;
    L.ds[j] = d;
    L.ss[j] = s;
  }
  // merge dim i into dim i + 1 when i steps over whole rows of i + 1 on both sides (the strides
  // are those of elements that exist, so the products fit)
  int m = 0;
  for (int i = 0; i < r; ++i) {
    if (m > 0 && L.ds[m - 1] == L.ds[i] * L.n[i] && L.ss[m - 1] == L.ss[i] * L.n[i]) {
      L.n[m - 1] *= L.n[i];
      L.ds[m - 1] = L.ds[i];
      L.ss[m - 1] = L.ss[i];
      continue;
    }
    L.n[m] = L.n[i];
    L.ds[m] = L.ds[i];
    L.ss[m] = L.ss[i];
    ++m;
  }
  L.rank = m;
  return L;
}

/// A position in K strided layouts of the same shape (the outer dims of a copy, say), advanced
/// row by row: a division per dim only when a task seeks its first position.
template <int K>
struct strided_cursor {
  static constexpr int max = static_cast<int>(shape_t::max_dims) + 1;
  int rank = 0;
  std::int64_t ext[max] = {}, idx[max] = {};
  std::int64_t st[K][max] = {};
  std::int64_t off[K] = {};

  void add_dim(std::int64_t extent, const std::int64_t (&strides)[K]) {
    ext[rank] = extent;
    for (int q = 0; q < K; ++q) st[q][rank] = strides[q];
    ++rank;
  }
  std::int64_t count() const {
    std::int64_t c = 1;
    for (int d = 0; d < rank; ++d) c *= ext[d];
    return c;
  }
  /// Moves to the u-th position (row-major).
  void seek(std::int64_t u) {
    for (int q = 0; q < K; ++q) off[q] = 0;
    for (int d = rank; d-- > 0;) {
      idx[d] = u % ext[d];
      u /= ext[d];
      for (int q = 0; q < K; ++q) off[q] += idx[d] * st[q][d];
    }
  }
  void reset() {
    for (int q = 0; q < K; ++q) off[q] = 0;
    for (int d = 0; d < rank; ++d) idx[d] = 0;
  }
  void next() {
    for (int d = rank; d-- > 0;) {
      if (++idx[d] < ext[d]) {
        for (int q = 0; q < K; ++q) off[q] += st[q][d];
        return;
      }
      for (int q = 0; q < K; ++q) off[q] -= st[q][d] * (ext[d] - 1);
      idx[d] = 0;
    }
  }
};
using copy_cursor = strided_cursor<2>;  // offsets: destination, source

/// The positions of `rows` (a cursor over the outer dims) times an innermost dim of n_inner, in
/// row-major order, split into tasks of `grain` positions run over the thread pool; each task
/// calls f(cursor, begin, end, position) for the pieces of rows it covers, in order, where
/// [begin, end) is a range of the innermost dim and `position` the row-major position of begin.
template <int K, class F>
void for_each_row_piece(const strided_cursor<K>& rows, std::int64_t n_inner, std::int64_t grain, F&& f) {
  const std::int64_t total = rows.count() * n_inner;  // the element count of a tensor: fits
  if (total == 0) return;
  parallel_for((total + grain - 1) / grain, grain, [&](std::int64_t t) {
    std::int64_t e = t * grain;
    const std::int64_t end = total - e < grain ? total : e + grain;
    strided_cursor<K> c = rows;
    c.seek(e / n_inner);
    std::int64_t col = e % n_inner;
    while (e < end) {
      const std::int64_t len = n_inner - col < end - e ? n_inner - col : end - e;
      f(static_cast<const strided_cursor<K>&>(c), col, col + len, e);
      e += len;
      col = 0;
      c.next();
    }
  });
}

template <class T, class S>
inline T convert_element(S v) {
  if constexpr (std::is_same_v<T, std::int64_t> && std::is_floating_point_v<S>) {
    // NaN, the infinities and values beyond int64 have no int64 value (the C++ conversion would
    // be undefined): they become INT64_MIN, as x86's conversion instruction, and so torch, gives
    return v >= S(-9223372036854775808.0) && v < S(9223372036854775808.0) ? static_cast<T>(v)
                                                                          : std::numeric_limits<T>::min();
  } else {
    return static_cast<T>(v);
  }
}

/// d[i * dstep] = s[i * sstep] for i in [0, n), converting.
template <class T, class S>
void copy_row(T* __restrict d, std::int64_t dstep, const S* __restrict s, std::int64_t sstep, std::int64_t n) {
  if (dstep == 1) {
    if (sstep == 1) {
      if constexpr (std::is_same_v<T, S>) std::memcpy(d, s, static_cast<std::size_t>(n) * sizeof(T));
      else
        for (std::int64_t i = 0; i < n; ++i) d[i] = convert_element<T>(s[i]);
    } else if (sstep == 0) {
      const T v = convert_element<T>(s[0]);
      for (std::int64_t i = 0; i < n; ++i) d[i] = v;
    } else {
      for (std::int64_t i = 0; i < n; ++i) d[i] = convert_element<T>(s[i * sstep]);
    }
  } else if (sstep == 1) {
    for (std::int64_t i = 0; i < n; ++i) d[i * dstep] = convert_element<T>(s[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) d[i * dstep] = convert_element<T>(s[i * sstep]);
  }
}

// NOTE: [Register transposes]
// A square block of N x N elements of U is transposed in N registers of N elements (one row
// each): log2(N) levels, the level of size B swapping, in each pair of rows q and q + B, the
// elements of q at columns c + B with those of q + B at columns c (c with bit B clear) -- the
// classical recursive transpose of off-diagonal blocks, one two-register shuffle per row and
// level. Each row is N * sizeof(U) = transpose_bytes: the target's SIMD register (64 bytes with
// AVX-512), 32 at least (GCC and Clang lower a wider shuffle to halves where the target has
// none). With whole 64-byte rows, every block reads and writes whole cache lines, so a transpose
// of power-of-two rows (all in one cache set) never loads a line twice. The shuffles move bits,
// so they serve every type of that size.
inline constexpr std::int64_t transpose_bytes =
    sizeof(float) * xsimd::batch<float>::size > 32 ? sizeof(float) * xsimd::batch<float>::size : 32;

template <class U, int N>
struct register_transpose {
  typedef U row __attribute__((vector_size(N * sizeof(U))));
  typedef U unaligned_row __attribute__((vector_size(N * sizeof(U)), aligned(sizeof(U)), may_alias));
  // (rows by reference: a vector passed by value changes the ABI where the target lacks it)
#if !defined(__CUDACC__)
  template <int B, std::size_t... C>
  static void swap_blocks(row& x, row& y, std::index_sequence<C...>) {
    const row low = __builtin_shufflevector(x, y, ((C & B) == 0 ? int(C) : N + int(C) - B)...);
    y = __builtin_shufflevector(x, y, ((C & B) == 0 ? int(C) + B : N + int(C))...);
    x = low;
  }
  // (unrolled at compile time: GCC's -O2 kept the loop over rows and spilled the vectors wider
  // than an SSE2 register to memory, 10x slower than at -O3)
  template <int B, int Q>
  static void pair(row* r) {
    if constexpr ((Q & B) == 0) swap_blocks<B>(r[Q], r[Q + B], std::make_index_sequence<N>{});
  }
  template <int B, std::size_t... Q>
  static void level(row* r, std::index_sequence<Q...> rows) {
    (pair<B, int(Q)>(r), ...);
    if constexpr (B > 1) level<B / 2>(r, rows);
  }
  // Rows loaded straight into registers: a memcpy into the array became, with GCC's tuning for
  // AMD Zen (unaligned 32-byte loads split in halves), two 16-byte stores to the stack and a
  // 32-byte load from it, which store forwarding cannot serve (seen in perf, Zen 2 VM). Loaded
  // directly (ab_headers.sh, 2026-12-06): t().contiguous() of 2048^2 floats 0.89x the time, of
  // 4096^2 0.98x, permute({2,0,1}) of [64,256,256] 0.76x. Ordinary stores likewise go straight
  // from the registers: by memcpy, each row went to the stack and back out in 16-byte halves
  // (a staged transpose's gather, NOTE: [Staged transposes], 0.83x the time without them).
  template <std::size_t... Q>
  static void load(row* r, const U* s, std::int64_t ls, std::index_sequence<Q...>) {
    ((r[Q] = *reinterpret_cast<const unaligned_row*>(s + std::int64_t(Q) * ls)), ...);
  }
#endif
  /// Whether rows can be stored with streaming stores on this build (NOTE: [Streaming stores]).
  static constexpr bool can_stream = can_stream_bytes<sizeof(row)>;
  /// d[i * ld + j] = s[j * ls + i] for i, j in [0, N); with Stream, d and every row of it are
  /// aligned to sizeof(row), and are written by streaming stores.
  template <bool Stream>
  static void run(const U* s, std::int64_t ls, U* d, std::int64_t ld) {
#if defined(__CUDACC__)  // nvcc's host-side rewrite mangles the shuffles' index packs
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) d[i * ld + j] = s[j * ls + i];
#else
    row r[N];
    load(r, s, ls, std::make_index_sequence<N>{});
    level<N / 2>(r, std::make_index_sequence<N>{});
    for (int q = 0; q < N; ++q) {
      if constexpr (Stream && can_stream) stream_bytes<sizeof(row)>(d + q * ld, &r[q]);
      else *reinterpret_cast<unaligned_row*>(d + q * ld) = r[q];
    }
#endif
  }
};

/// Whether rows dk elements apart from d are each aligned to a register row (transpose_bytes), so
/// that register blocks may store them whole (by streaming stores where the build has them).
template <class U>
bool register_rows_aligned(const U* d, std::int64_t dk) {
  constexpr auto row_bytes = static_cast<std::int64_t>(transpose_bytes);
  return reinterpret_cast<std::uintptr_t>(d) % row_bytes == 0 && dk * std::int64_t(sizeof(U)) % row_bytes == 0;
}

/// One tile: rows along dim k (nk <= copy_tile of them), columns along the innermost dim (nl <=
/// copy_tile). In the usual transpose (destination contiguous along the columns, source along
/// the rows) the tile is copied in square blocks transposed in registers, each reading and
/// writing whole runs of transpose_bytes, along the destination's rows first (NOTE: [Transposed
/// copy order]); the edges that do not fill a block go through a buffer in L1.
/// Reading the source column by column instead would keep copy_tile lines open at once, and with
/// power-of-two strides (2048 floats, say) they all fall into the same cache set, which holds
/// far fewer: every read would miss.
/// With `stream`, register blocks are stored by streaming stores where d and its rows allow
/// (NOTE: [Streaming stores]); the caller then fences. U is an unsigned type (copies move bits).
template <class U>
void copy_tile_block(U* __restrict d, std::int64_t dk, std::int64_t dl, const U* __restrict s, std::int64_t sk,
                     std::int64_t sl, std::int64_t nk, std::int64_t nl, bool stream) {
  if (dl != 1 || sk != 1) {
    for (std::int64_t i = 0; i < nk; ++i)
      for (std::int64_t j = 0; j < nl; ++j) d[i * dk + j * dl] = s[i * sk + j * sl];
    return;
  }
  std::int64_t bk = 0, bl = 0;  // the part done in register blocks
  if constexpr (sizeof(U) == 4 || sizeof(U) == 8) {
    constexpr int w = static_cast<int>(transpose_bytes / sizeof(U));  // NOTE: [Register transposes]
    using block = register_transpose<U, w>;
    bk = nk / w * w;
    bl = nl / w * w;
    const bool aligned = register_rows_aligned(d, dk);
    auto blocks = [&](auto streaming) {
      for (std::int64_t i = 0; i < bk; i += w)
        for (std::int64_t j = 0; j < bl; j += w)
          block::template run<decltype(streaming)::value>(s + i + j * sl, sl, d + i * dk + j, dk);
    };
    if (stream && aligned && block::can_stream) blocks(std::true_type{});
    else blocks(std::false_type{});
    if (bk == nk && bl == nl) return;
  }
  // the rest: rows [bk, nk) of every column, and columns [bl, nl) of rows [0, bk)
  alignas(64) U buf[copy_tile][copy_tile];
  for (std::int64_t j = 0; j < nl; ++j) {
    const U* __restrict run = s + j * sl;
    for (std::int64_t i = j < bl ? bk : 0; i < nk; ++i) buf[i][j] = run[i];
  }
  for (std::int64_t i = 0; i < nk; ++i) {
    const std::int64_t from = i < bk ? bl : 0;
    std::memcpy(d + i * dk + from, buf[i] + from, static_cast<std::size_t>(nl - from) * sizeof(U));
  }
}

// NOTE: [Staged transposes]
// A transpose whose destination takes streaming stores is bound by its memory patterns, not by
// its shuffles. On the Zen 2 VM of 2026-12-06 (16 MiB of floats, one thread): reading runs from 8
// or 16 source rows in turn took 0.38-0.52 ms, from 32 or 64 rows 1.0-1.5 (the prefetchers and the
// memory follow about 16 streams); streaming stores that finish each destination row's run of
// 128 bytes or more before the next row took 0.72 ms (a sequential streaming store's speed), and
// 1.0-1.9 when the lines of 64 rows or more were written a piece at a time. A tile copied in
// one pass must trade one for the other: 64 source rows give each destination row a run of 256
// bytes, but read 64 streams. So each stage of a whole unit (NOTE: [Transposed copy order]; a
// stage is stage_bytes: 256 destination rows of copy_tile floats) goes through a buffer in L2:
// `gather` reads it w source rows at a time (w, a register block's width) across the stage,
// storing each block transposed into the buffer in block order; `scatter` then streams each
// destination row's copy_tile elements out in one run. One after the other, the two phases add
// up (0.6-0.7 ms and 0.72: 1.35-1.6 in all, no better than one pass); interleaved, the memory
// reads while it writes: a task's stages go through two buffers, the next gathered into one a
// block row at a time while the previous one is scattered from the other, a block of destination
// rows at a time (finer or coarser steps were slower). Against the one-pass tiles
// (ab_headers.sh, 24 rounds): `t().contiguous()` of 2048^2 floats 0.80-0.83x the time, of 4096^2
// 0.88-0.93x; stages of 128 KiB did the same; with the gather's stores fixed (NOTE: [Register
// transposes]) 0.53x and 0.49x the session's start. Left in one pass: elements of 8 bytes (4
// rows of doubles at a time, or 8 in two blocks, took 1.22-1.37x the time of the tiles) and
// bands shorter than copy_band (`permute({2,0,1})` of [64,256,256], destination rows 64 KiB apart:
// 1.18x, the same time once the stores were fixed). Measured on AVX2 only; an AVX-512 build
// gathers 16 rows at a time.
inline constexpr std::size_t stage_bytes = std::size_t(64) << 10;

/// The staged transpose of whole units of one copy: destination rows along dim k (stride dk),
/// columns along the innermost dim (contiguous), source contiguous along k, rows sl apart.
template <class U>
class staged_transpose {
 public:
  static constexpr int w = static_cast<int>(transpose_bytes / sizeof(U));  // NOTE: [Register transposes]
  using block = register_transpose<U, w>;
  static constexpr std::int64_t cols = copy_tile;  // destination columns of a stage (source rows)
  static constexpr std::int64_t rows = static_cast<std::int64_t>(stage_bytes / (cols * sizeof(U)));  // and rows
  static constexpr std::int64_t row_blocks = rows / w, col_blocks = cols / w, elements = rows * cols;
  /// Whether this build can stage copies of U: register blocks stored by streaming stores, and
  /// units (copy_band rows) made of whole stages.
  static constexpr bool usable = sizeof(U) == 4 && block::can_stream && copy_band % rows == 0;

  staged_transpose(std::int64_t dk, std::int64_t sl) : buf_(2 * elements), dk_(dk), sl_(sl) {}
  /// Whether the stages of a unit at d (copy_band x copy_tile) can be stored whole registers at a time.
  bool fits(const U* d) const { return register_rows_aligned(d, dk_); }
  /// Copies one stage (rows x cols at d, from s): gathers it while scattering the one before.
  void push(U* d, const U* s) {
    U* next = buf_.data() + (flip_ ? elements : 0);
    U* prev = buf_.data() + (flip_ ? 0 : elements);
    for (std::int64_t rb = 0; rb < row_blocks; ++rb) {
      gather(s, next, rb * col_blocks, (rb + 1) * col_blocks);
      if (pending_) scatter(prev, pending_, rb);
    }
    pending_ = d;
    flip_ = !flip_;
  }
  /// Scatters the last stage pushed.
  void finish() {
    if (!pending_) return;
    const U* last = buf_.data() + (flip_ ? 0 : elements);
    for (std::int64_t rb = 0; rb < row_blocks; ++rb) scatter(last, pending_, rb);
    pending_ = nullptr;
  }

 private:
  // blocks [b0, b1) of a stage, in reading order: w source rows across the stage, then the next w
  void gather(const U* s, U* buf, std::int64_t b0, std::int64_t b1) const {
    for (std::int64_t b = b0; b < b1; ++b) {
      const std::int64_t cb = b / row_blocks, rb = b % row_blocks;
      block::template run<false>(s + rb * w + cb * w * sl_, sl_, buf + (rb * col_blocks + cb) * w * w, w);
    }
  }
  // destination rows [rb * w, rb * w + w) of a stage, each in one run
  void scatter(const U* buf, U* d, std::int64_t rb) const {
    const U* b = buf + rb * col_blocks * w * w;
    for (int q = 0; q < w; ++q) {
      U* row = d + (rb * w + q) * dk_;
      for (std::int64_t cb = 0; cb < col_blocks; ++cb)
        stream_bytes<transpose_bytes>(row + cb * w, b + (cb * w + q) * w);
    }
  }
  scratch<U> buf_;
  std::int64_t dk_, sl_;
  U* pending_ = nullptr;  // the destination of the stage in the buffer not being gathered into
  bool flip_ = false;     // which buffer the next stage is gathered into
};

/// The dim (other than the innermost) to copy in tiles with the innermost one, or -1 to copy
/// rows: tiles when the source is more contiguous along some outer dim than along the rows.
inline int tiled_dim(const copy_layout& L) {
  const int inner = L.rank - 1;
  if (inner < 1) return -1;
  const std::int64_t sl = L.ss[inner];
  int k = -1;  // the outer dim along which the source is most contiguous
  for (int i = 0; i < inner; ++i)
    if (L.ss[i] != 0 && (k < 0 || abs_stride(L.ss[i]) < abs_stride(L.ss[k]))) k = i;
  return k >= 0 && abs_stride(L.ss[k]) < abs_stride(sl) && abs_stride(sl) > 1 && L.n[inner] >= 4 ? k : -1;
}

/// The rows of the innermost dim of L (rank >= 1), in tasks of copy_grain elements, converting.
template <class T, class S>
void copy_rows(const copy_layout& L, T* dst, const S* src) {
  const int inner = L.rank - 1;
  const std::int64_t nl = L.n[inner], dl = L.ds[inner], sl = L.ss[inner];
  if (L.rank == 1 && nl <= copy_grain) {  // one short row
    copy_row<T, S>(dst, dl, src, sl, nl);
    return;
  }
  copy_cursor rows;
  for (int i = 0; i < inner; ++i) rows.add_dim(L.n[i], {L.ds[i], L.ss[i]});
  for_each_row_piece(rows, nl, copy_grain, [&](const copy_cursor& c, std::int64_t b, std::int64_t e, std::int64_t) {
    copy_row<T, S>(dst + c.off[0] + b * dl, dl, src + c.off[1] + b * sl, sl, e - b);
  });
}

/// The unsigned type of T's size. A copy without conversion moves bits, so one instantiation
/// serves every dtype of that size (float32 and int32 alike, float64 and int64); select_bits
/// blends through it too.
template <class T>
using unsigned_of_t =
    std::conditional_t<sizeof(T) == 1, std::uint8_t,
                       std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                          std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;

/// strided_copy without conversion, on the bits of the elements (U unsigned, rank >= 1).
template <class U>
void copy_bits(const copy_layout& L, U* dst, const U* src) {
  const int k = tiled_dim(L);
  if (k < 0) {
    copy_rows<U, U>(L, dst, src);
    return;
  }
  // units: (outer position, band of copy_band rows along k, column of copy_tile columns), each
  // a column of tiles down the band (NOTE: [Transposed copy order])
  const int inner = L.rank - 1;
  const std::int64_t nl = L.n[inner], dl = L.ds[inner], sl = L.ss[inner];
  copy_cursor c;
  for (int i = 0; i < inner; ++i)
    if (i != k) c.add_dim(L.n[i], {L.ds[i], L.ss[i]});
  const std::int64_t nk = L.n[k], bands = (nk + copy_band - 1) / copy_band;
  c.add_dim(bands, {L.ds[k] * copy_band, L.ss[k] * copy_band});
  c.add_dim((nl + copy_tile - 1) / copy_tile, {dl * copy_tile, sl * copy_tile});
  const std::int64_t units = c.count();
  const std::int64_t unit_work = (nk < copy_band ? nk : copy_band) * (nl < copy_tile ? nl : copy_tile);
  const std::int64_t dk = L.ds[k], sk = L.ss[k];
  std::int64_t total = 1;  // the destination's elements
  for (int i = 0; i < L.rank; ++i) total *= L.n[i];
  const bool stream = static_cast<std::size_t>(total) * sizeof(U) >= stream_min_bytes;  // NOTE: [Streaming stores]
  using staging = staged_transpose<U>;
  const bool staged = staging::usable && stream && dl == 1 && sk == 1 && nk >= copy_band && nl >= copy_tile;
  // (ranges of units, not single ones: a staged copy pipelines a range's units, NOTE: [Staged transposes])
  parallel_for_ranges(units, unit_work, [&](std::int64_t u0, std::int64_t u1) {
    copy_cursor cur = c;
    cur.seek(u0);
    // (`if constexpr`: element sizes that are never staged do not compile its blocks)
    std::optional<staging> stages;
    if constexpr (staging::usable)
      if (staged) stages.emplace(dk, sl);
    for (std::int64_t u = u0; u < u1; ++u, cur.next()) {
      const std::int64_t row0 = cur.idx[cur.rank - 2] * copy_band, col0 = cur.idx[cur.rank - 1] * copy_tile;
      const std::int64_t rows = nk - row0 < copy_band ? nk - row0 : copy_band;
      const std::int64_t cols = nl - col0 < copy_tile ? nl - col0 : copy_tile;
      U* d = dst + cur.off[0];
      const U* s = src + cur.off[1];
      if constexpr (staging::usable)
        if (stages && rows == copy_band && cols == copy_tile && stages->fits(d)) {
          for (std::int64_t i = 0; i < rows; i += staging::rows) stages->push(d + i * dk, s + i);
          continue;
        }
      for (std::int64_t i = 0; i < rows; i += copy_tile)
        copy_tile_block<U>(d + i * dk, dk, dl, s + i * sk, sk, sl, rows - i < copy_tile ? rows - i : copy_tile, cols,
                           stream);
    }
    if constexpr (staging::usable)
      if (stages) stages->finish();
    if (stream) stream_fence();
  });
}

/// Copies the elements of the simplified layout L from src to dst (both pointing at the
/// element at index 0), converting S to T. See NOTE: [Strided copies].
/// NOTE: [Copies by element size]: the layout work (tiles, register transposes, streaming
/// stores) is compiled once per element size, not once per pair of dtypes: a copy without
/// conversion moves bits (copy_bits), and a conversion is a plain row loop per pair (copy_rows).
/// A conversion whose source must be read in tiles (a transposed view cast to another dtype)
/// takes two passes: the tiled copy into a buffer in the destination's order, then the rows
/// converted from it. Before, the 16 pairs each compiled the whole tiled copy: 110 KB of the
/// 900 KB of code in a header-only build of examples/per_example_gradients.cpp.
template <class T, class S>
void strided_copy(const copy_layout& L, T* dst, const S* src) {
  if (L.empty) return;
  if (L.rank == 0) {
    dst[0] = convert_element<T>(src[0]);
    return;
  }
  if constexpr (std::is_same_v<T, S>) {
    using U = unsigned_of_t<T>;
    static_assert(sizeof(U) == sizeof(T), "strided_copy: elements of 1, 2, 4 or 8 bytes");
    copy_bits<U>(L, reinterpret_cast<U*>(dst), reinterpret_cast<const U*>(src));
  } else if (tiled_dim(L) < 0) {
    copy_rows<T, S>(L, dst, src);
  } else {
    copy_layout staged = L, converted = L;  // src -> buf (in the destination's order) -> dst
    std::int64_t total = 1;
    for (int i = L.rank; i-- > 0;) {
      staged.ds[i] = converted.ss[i] = total;
      total *= L.n[i];
    }
    const scratch<S> buf(total);
    using U = unsigned_of_t<S>;
    copy_bits<U>(staged, reinterpret_cast<U*>(buf.data()), reinterpret_cast<const U*>(src));
    copy_rows<T, S>(converted, dst, buf.data());
  }
}

/// Copies `shape` elements from src (strides ss) to dst (strides ds), converting S to T; both
/// pointers at the element with index 0. The destination's elements must be distinct and must
/// not overlap the source's.
template <class T, class S>
void strided_copy(const shape_t& shape, T* dst, const shape_t& ds, const S* src, const shape_t& ss) {
  strided_copy<T, S>(simplify_copy(shape, ds, ss), dst, src);
}

}  // namespace xfunc::detail::backend
