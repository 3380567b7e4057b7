#pragma once
// CPU kernels of the index ops (ops/indexing.hpp): gather, scatter_add (the gradient of gather
// and of index_select) and index_select.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <mutex>

#include <xsimd/xsimd.hpp>

#include <xfunc/backend/cpu.hpp>
#include <xfunc/backend/streaming.hpp>

namespace xfunc::detail::backend {

// NOTE: [Index kernels]
// gather, index_select and scatter_add read their input, index and source through their strides
// (an expanded index is never materialised) and split the work over the thread pool in tasks
// whose boundaries depend only on the shapes (NOTE: [Threads]). gather and index_select write
// each output element once, so any split is exact. scatter_add adds into its output: two index
// positions add into the same element only if they differ in the scattered dim alone, so tasks
// are made of whole lines along that dim (the other dims, and pieces of scatter_piece elements of
// the last one, are split), and each line is added in ascending order, as one thread would:
// the sums are bitwise the same for every thread count. When the index has nothing to split
// (index_add of narrow rows along dim 0, say), scatter_add runs on one thread.
// An index out of range is reported for the first bad position in row-major order, whichever
// task finds it, so the message does not depend on the thread count either. Indices count from
// 0: a negative one is out of range, as in torch (since 2026-12-04; they used to count from the
// end). gather checks a chunk of indices (vectorised) before it reads through them, so its read
// loop has no test; scatter_add tests each index as it adds and stops a unit at the first bad
// one (the op fails, so what it added is never seen).
inline constexpr std::int64_t index_grain = std::int64_t(1) << 14;
inline constexpr std::int64_t scatter_piece = 256;

/// Whether index k is valid for a dim of n: in [0, n). One unsigned comparison (a negative k is
/// above 2^63).
inline bool index_in_range(std::int64_t k, std::int64_t n) {
  return static_cast<std::uint64_t>(k) < static_cast<std::uint64_t>(n);
}
/// Throws the index ops' error for index k, out of range for dimension dim of size n.
[[noreturn, gnu::cold]] inline void fail_index(const char* op, std::int64_t k, std::int64_t dim, std::int64_t n) {
  fail(op, ": index ", k, " is out of range for dimension ", dim, " of size ", n,
       k < 0 ? " (indices count from 0; negative ones are refused, as in torch)" : "");
}

/// The first (row-major) out-of-range index seen by the tasks of an index kernel.
struct first_bad_index {
  std::atomic<std::int64_t> pos{INT64_MAX};
  std::int64_t value = 0;
  std::mutex m;
  void found(std::int64_t p, std::int64_t v) {
    if (p >= pos.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(m);
    if (p < pos.load(std::memory_order_relaxed)) {
      pos.store(p, std::memory_order_relaxed);
      value = v;
    }
  }
  void report(const char* op, std::int64_t dim, std::int64_t n) {
    if (pos.load(std::memory_order_relaxed) != INT64_MAX) fail_index(op, value, dim, n);
  }
};

/// Records the first out-of-range index among ix[i * il], i in [b, e) (row-major position of b:
/// pos). Off the hot path: kernels call it only for a row where they saw one.
[[gnu::cold]] inline void report_first_bad(first_bad_index& bad, std::int64_t pos, const std::int64_t* ix,
                                           std::int64_t il, std::int64_t b, std::int64_t e, std::int64_t n) {
  for (std::int64_t i = b; i < e; ++i)
    if (const std::int64_t k = ix[i * il]; !index_in_range(k, n)) {
      bad.found(pos + i - b, k);
      return;
    }
}

// The inner loops take every stride by value: captured by reference, each would be reloaded
// after every store (the compiler cannot prove the store leaves it alone).

/// Whether ix[i * il], i in [b, e), are all in [0, n): a branch-free pass, in SIMD registers for
/// a contiguous index.
inline bool indices_in_range(const std::int64_t* ix, std::int64_t il, std::int64_t b, std::int64_t e, std::int64_t n) {
  std::int64_t i = b;
  bool bad = false;
  if (il == 1) {
    using V = xsimd::batch<std::int64_t>;
    const V hi(n), zero(0);
    auto out = zero != zero;
    for (; i + std::int64_t(V::size) <= e; i += V::size) {
      const V k = V::load_unaligned(ix + i);
      out = out | (k < zero) | (k >= hi);
    }
    bad = xsimd::any(out);
  }
  for (; i < e; ++i) bad |= !index_in_range(ix[i * il], n);
  return !bad;
}

/// k, hidden from the optimiser: a loop that reads through it stays a loop of scalar loads.
/// Vectorised, it becomes hardware gathers (vgatherqps), which took 1.5x the time of scalar
/// loads on the AMD EPYC of our benchmarks (2048^2 floats along dim 1: 4.2 against 2.9 ms).
inline std::int64_t opaque_index(std::int64_t k) {
#if defined(__GNUC__)
  asm("" : "+r"(k));
#endif
  return k;
}

/// Rows of the input up to this size are prefetched whole before a gather reads them at random
/// (NOTE: [Gather prefetch]); longer ones are left to the caches.
inline constexpr std::int64_t gather_prefetch_bytes = 32 << 10;

// NOTE: [Gather prefetch]
// A gather along a contiguous last dim reads its input row at random positions: the first touch
// of each of the row's lines is a miss that no hardware prefetcher foresees, and the misses queue
// behind the loop's other loads. Prefetching the row's lines first (one instruction per 64 bytes,
// a line already cached costs next to nothing) has them all in flight at once: 2048^2 floats
// 3.5-3.7 -> 2.8-3.0 ms in a standalone loop (one thread, the development VM; prefetching the
// next row instead while reading this one: 3.0-3.1 ms).

/// Prefetches the lines of p[0, n) (Write: for writing), if they fit in gather_prefetch_bytes.
template <int Write = 0, class T>
void prefetch_row(const T* p, std::int64_t n) {
  if (n * std::int64_t(sizeof(T)) > gather_prefetch_bytes) return;
  for (std::int64_t l = 0; l < n; l += 64 / std::int64_t(sizeof(T))) __builtin_prefetch(p + l, Write);
}

/// o[i] = x[i * tl + k * sd] for i in [b, e), k = ix[i * il], when every index is in range;
/// returns false (having written part of o) when one is not. Checked a chunk at a time, before
/// the chunk's reads: the check vectorises, and the gather loop has no test to carry.
/// Contiguous: along a contiguous last dim (il = 1, tl = 0, sd = 1), constants to the compiler.
template <bool Contiguous, class T>
bool gather_row(T* __restrict o, const T* __restrict x, const std::int64_t* __restrict ix, std::int64_t b,
                std::int64_t e, std::int64_t n, std::int64_t il, std::int64_t tl, std::int64_t sd) {
  if constexpr (Contiguous) {
    il = 1;
    tl = 0;
    sd = 1;
    prefetch_row(x, n);  // NOTE: [Gather prefetch]
  }
  // the chunk's indices stay in L1 between the two passes (256 was faster than 1024 or 4096: the
  // check's reads from memory overlap better with the loads of the previous chunk)
  constexpr std::int64_t chunk = 256;
  for (std::int64_t c = b; c < e; c += chunk) {
    const std::int64_t ce = e - c < chunk ? e : c + chunk;
    if (!indices_in_range(ix, il, c, ce, n)) [[unlikely]]
      return false;
    for (std::int64_t i = c; i < ce; ++i) o[i] = x[i * tl + opaque_index(ix[i * il]) * sd];
  }
  return true;
}

/// o[i * ol + k * sd] += x[i * sl] for i in [b, e) in order, k = ix[i * il]; stops at
/// the first out-of-range index and returns its i (e when there is none).
template <class T>
std::int64_t scatter_add_run(T* o, std::int64_t ol, std::int64_t sd, const std::int64_t* ix, std::int64_t il,
                             const T* x, std::int64_t sl, std::int64_t b, std::int64_t e, std::int64_t n) {
  for (std::int64_t i = b; i < e; ++i) {
    const std::int64_t k = ix[i * il];
    if (!index_in_range(k, n)) [[unlikely]]
      return i;
    o[i * ol + k * sd] += x[i * sl];
  }
  return e;
}

/// The int64 data of an index tensor (converted when it has another dtype), ready to read.
template <int = 0>
tensor index_operand(const tensor& index) {
  tensor ic = index.dtype() == dtype::int64 ? index : contiguous_as(index, dtype::int64);
  ic.impl()->prepare_access();
  return ic;
}
template <class T>
const T* raw(const tensor_impl& t) {  // (after prepare_access)
  return reinterpret_cast<const T*>(t.store->data) + t.offset;
}

/// gather(t, dim, index) into a new tensor of index's shape (the shapes checked by the op).
template <int = 0>
tensor gather(const tensor& t, std::int64_t dim, const tensor& index, const char* op) {
  tensor out = empty_dense(index.shape(), t.dtype());
  if (out.numel() == 0) return out;
  const tensor ic = index_operand(index);
  const tensor_impl &ti = *t.impl(), &ii = *ic.impl();
  ti.prepare_access();
  const std::size_t r = ti.shape.size(), du = static_cast<std::size_t>(dim);
  const std::int64_t n = r ? ti.shape[du] : 1, sd = r ? ti.strides[du] : 0;
  // rows of the index's last dim; offsets: output, input (without dim), index
  strided_cursor<3> rows;
  const shape_t ost = out.impl()->strides;
  auto t_stride = [&](std::size_t d) { return d == du ? std::int64_t(0) : ti.strides[d]; };
  for (std::size_t d = 0; d + 1 < r; ++d) rows.add_dim(ii.shape[d], {ost[d], t_stride(d), ii.strides[d]});
  const std::int64_t nl = r ? ii.shape[r - 1] : 1, tl = r ? t_stride(r - 1) : 0, il = r ? ii.strides[r - 1] : 0;
  const std::int64_t* ip = raw<std::int64_t>(ii);
  first_bad_index bad;
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* tp = raw<T>(ti);
    T* po = out.impl()->template data<T>();
    for_each_row_piece(rows, nl, index_grain, [&](const strided_cursor<3>& c, std::int64_t b, std::int64_t e,
                                                  std::int64_t pos) {
      T* o = po + c.off[0];
      const T* x = tp + c.off[1];
      const std::int64_t* ix = ip + c.off[2];
      const bool ok = il == 1 && tl == 0 && sd == 1 ? gather_row<true>(o, x, ix, b, e, n, il, tl, sd)
                                                    : gather_row<false>(o, x, ix, b, e, n, il, tl, sd);
      if (!ok) [[unlikely]]
        report_first_bad(bad, pos, ix, il, b, e, n);
    });
  });
  bad.report(op, dim, n);
  return out;
}

/// The row-major position in `shape` of the element at cursor c (over every dim but du and
/// the last), j along du and i along the last dim.
[[gnu::cold]] inline std::int64_t row_major_position(const shape_t& shape, std::size_t du,
                                                      const strided_cursor<3>& c, std::int64_t j,
                                                      std::int64_t i) {
  const std::size_t r = shape.size();
  std::int64_t pos = 0;
  int q = 0;
  for (std::size_t d = 0; d < r; ++d) {
    std::int64_t x = 0;
    if (d == du) x = j;
    else if (d == r - 1) x = i;
    else x = c.idx[q++];
    pos = pos * shape[d] + x;
  }
  return pos;
}

/// base with src added at index along dim (scatter_add), in dtype dt: a new tensor.
template <int = 0>
tensor scatter_add(const tensor& base, std::int64_t dim, const tensor& index, const tensor& src, dtype dt,
                   const char* op) {
  tensor out = materialized_copy(base, base.shape(), dt);  // a fresh buffer, added into
  if (index.numel() == 0) return out;
  const tensor ic = index_operand(index);
  const tensor_impl& ii = *ic.impl();
  const tensor sc = materialize(src, index.shape(), dt);
  const std::int64_t* sst = sc.impl()->strides.begin();
  const shape_t ost = out.impl()->strides;
  const std::size_t r = ii.shape.size(), du = static_cast<std::size_t>(dim);
  const std::int64_t n = r ? base.size(dim) : 1, sd = r ? ost[du] : 0;
  // Units: the lines along dim (positions in the other dims but the last, and pieces of the
  // last), each added in ascending order (NOTE: [Index kernels]). Offsets: output (without
  // dim), index, source.
  strided_cursor<3> lines;
  for (std::size_t d = 0; d + 1 < r; ++d)
    if (d != du) lines.add_dim(ii.shape[d], {ost[d], ii.strides[d], sst[d]});
  const bool along_last = r == 0 || du == r - 1;
  const std::int64_t nl = along_last ? 1 : ii.shape[r - 1];
  const std::int64_t ol = along_last ? 0 : ost[r - 1], il = along_last ? 0 : ii.strides[r - 1],
                     sl = along_last ? 0 : sst[r - 1];
  const std::int64_t nj = r ? ii.shape[du] : 1, ij = r ? ii.strides[du] : 0, sj = r ? sst[du] : 0;
  const std::int64_t piece = nl < 2 * scatter_piece ? nl : scatter_piece, pieces = (nl + piece - 1) / piece;
  const std::int64_t units = lines.count() * pieces, unit_work = nj * piece;
  const std::int64_t per_task = unit_work >= index_grain ? 1 : index_grain / unit_work;
  const std::int64_t* ip = raw<std::int64_t>(ii);
  first_bad_index bad;
  visit_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* sp = sc.impl()->template data<T>();
    T* po = out.impl()->template data<T>();
    parallel_for((units + per_task - 1) / per_task, per_task * unit_work, [&](std::int64_t t) {
      const std::int64_t u0 = t * per_task, u1 = u0 + per_task < units ? u0 + per_task : units;
      strided_cursor<3> c = lines;
      c.seek(u0 / pieces);
      for (std::int64_t u = u0; u < u1; ++u) {
        const std::int64_t p = u % pieces;
        if (p == 0 && u != u0) c.next();
        const std::int64_t* ix = ip + c.off[1];
        const T* x = sp + c.off[2];
        if (along_last) {  // one line of nj elements: the j loop is the inner loop
          if (sd == 1) prefetch_row<1>(po + c.off[0], n);  // NOTE: [Gather prefetch]
          const std::int64_t j = scatter_add_run(po + c.off[0], 0, sd, ix, ij, x, sj, 0, nj, n);
          if (j < nj) [[unlikely]]
            bad.found(row_major_position(ii.shape, du, c, j, 0), ix[j * ij]);
          continue;
        }
        const std::int64_t b = p * piece, e = nl - b < piece ? nl : b + piece;
        for (std::int64_t j = 0; j < nj; ++j) {
          const std::int64_t i = scatter_add_run(po + c.off[0], ol, sd, ix + j * ij, il, x + j * sj, sl, b, e, n);
          if (i < e) [[unlikely]] {  // the first bad position of this unit in row-major order
            bad.found(row_major_position(ii.shape, du, c, j, i), ix[j * ij + i * il]);
            break;
          }
        }
      }
    });
  });
  bad.report(op, dim, n);
  return out;
}

// NOTE: [Streaming index_select]
// An index_select of 4 MiB and more (stream_min_bytes, as transposed copies) whose rows are
// contiguous in the input copies them by streaming stores (NOTE: [Streaming stores]): the output
// is written once, whole, and is too large for the next reader to find it in cache anyway. The
// first lines of the next selected row are prefetched while one row is copied, as the hardware
// cannot guess where it starts. 2048 random rows of 2048 floats: 540 -> 385 us in a standalone
// loop (one thread, the development VM).

/// index_select(t, dim, index) into a new tensor of shape s.
template <int = 0>
tensor index_select(const tensor& t, std::int64_t dim, const tensor& index, const shape_t& s, const char* op) {
  tensor out = empty_dense(s, t.dtype(), cpu, op);
  const tensor ic = index_operand(index);
  const tensor_impl& ii = *ic.impl();
  const std::int64_t k = ii.shape.empty() ? 1 : ii.shape[0], is = ii.shape.empty() ? 0 : ii.strides[0];
  const std::size_t r = s.size(), du = static_cast<std::size_t>(dim);
  const std::int64_t n = r ? t.size(dim) : 1;
  if (r == 0 && k != 1) fail(op, ": a 0-d input takes an index of one element, got ", k);
  const std::int64_t* ip = raw<std::int64_t>(ii);
  for (std::int64_t j = 0; j < k; ++j)  // checked first: k reads, next to the copies
    if (!index_in_range(ip[j * is], n)) fail_index(op, ip[j * is], dim, n);
  if (out.numel() == 0) return out;
  // Slices t[outer..., index[j], inner...] are rows of `inner` elements: one strided row of t
  // each (a t whose inner dims are not is made contiguous first).
  tensor tc = t;
  shape_t inner_shape;
  for (std::size_t d = du + 1; d < r; ++d) inner_shape.push_back(s[d]);
  auto inner_layout = [&](const tensor_impl& x) {
    shape_t xst;
    for (std::size_t d = du + 1; d < r; ++d) xst.push_back(x.strides[d]);
    return simplify_copy(inner_shape, contiguous_strides(inner_shape), xst);
  };
  if (inner_layout(*tc.impl()).rank > 1) tc = contiguous_as(t, t.dtype());
  const tensor_impl& ti = *tc.impl();
  ti.prepare_access();
  const copy_layout il = inner_layout(ti);
  const std::int64_t inner = numel_of(inner_shape), sl = il.rank == 1 ? il.ss[0] : 0;
  const std::int64_t sd = r ? ti.strides[du] : 0;
  strided_cursor<2> outer;  // offsets: output, t
  const shape_t ost = out.impl()->strides;
  for (std::size_t d = 0; d < du; ++d) outer.add_dim(s[d], {ost[d], ti.strides[d]});
  const std::int64_t units = outer.count() * k;
  const std::int64_t per_task = inner >= index_grain ? 1 : index_grain / inner;
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* tp = raw<T>(ti);
    T* po = out.impl()->template data<T>();
    // NOTE: [Streaming index_select]
    const bool stream = sl == 1 && out.numel() * std::int64_t(sizeof(T)) >= std::int64_t(stream_min_bytes);
    parallel_for((units + per_task - 1) / per_task, per_task * inner, [&](std::int64_t task) {
      const std::int64_t u0 = task * per_task, u1 = u0 + per_task < units ? u0 + per_task : units;
      strided_cursor<2> c = outer;
      c.seek(u0 / k);
      std::int64_t j = u0 % k;
      for (std::int64_t u = u0; u < u1; ++u) {
        const std::int64_t x = ip[j * is];
        T* d = po + c.off[0] + j * inner;
        const T* s = tp + c.off[1] + x * sd;
        if (stream) {
          if (j + 1 < k)  // the next row's first 8 lines
            prefetch_row(tp + c.off[1] + ip[(j + 1) * is] * sd, std::min<std::int64_t>(inner, 512 / sizeof(T)));
          stream_copy(d, s, static_cast<std::size_t>(inner) * sizeof(T));
        } else {
          copy_row<T, T>(d, 1, s, sl, inner);
        }
        if (++j == k) {
          j = 0;
          c.next();
        }
      }
      if (stream) stream_fence();
    });
  });
  return out;
}

}  // namespace xfunc::detail::backend
