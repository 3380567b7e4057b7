#pragma once
// Deferred elementwise results: the value of a large pointwise op outside any transform may be
// computed when it is first read, together with the pointwise ops that consumed it, in one pass
// over memory (NOTE: [Deferred elementwise]). Included at the end of core/tensor.hpp, whose
// tensor_impl::data() settles deferred values; backend/fusion.hpp builds them.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <xfunc/backend/parallel.hpp>
#include <xfunc/backend/streaming.hpp>
#include <xfunc/core/linkage.hpp>
#include <xfunc/core/tensor.hpp>

namespace xfunc::detail {

// NOTE: [Deferred elementwise]
// `x * a + b` on 2^24 floats, computed op by op, streams memory twice: the product is written
// out and read back. A hand-written loop streams it once. So, with no transform active (empty
// layer stack, no make_fx trace), a floating pointwise op on contiguous tensors of one device
// (the cpu, or a cuda device: NOTE: [Fused device programs]) of at least deferred_min_numel()
// elements returns a *deferred* tensor: shape, dtype and device are final,
// but the storage is allocated and filled only when the data is first accessed. Its value is a
// small program (deferred_value): up to max_steps block functions over up to max_leaves
// materialised input tensors and scalars. An op whose tensor arguments are deferred copies their
// programs into its own instead of reading their results, so a chain of pointwise ops becomes one
// program, evaluated block by block (the intermediates stay in L1) when the result is read.
// Each step is the op's own elementwise function `fn` applied to a block (blocks start at
// multiples of `block` elements, a multiple of every SIMD width, so the same elements take the
// SIMD path as in eager evaluation: NOTE: [Element math]), so results are bitwise those of eager
// evaluation. (A device program runs as one kernel launch instead, which calls the same `fn`
// per element.) Correctness rests on two rules, both enforced in tensor_impl::prepare_access():
//  - reading a deferred tensor evaluates it first (every kernel reads through data(), a device
//    backend through device_data() or its own equivalent);
//  - any access to a storage that a deferred program reads (a "leaf"), which may be a write
//    (an in-place op, copy_), first evaluates every deferred tensor reading it, so a program
//    never sees a later write. Leaves count their deferred readers; the live deferred tensors
//    are in one registry, scanned only when such a storage is accessed, until the count is 0
//    (another thread may copy a reader's program into a new tensor meanwhile).
// A deferred tensor has no buffer and no views (making a view evaluates it first), so
// same_storage compares deferred tensors by identity.
// Program building holds the registry's mutex and each evaluation its program's mutex, so
// deferred tensors can be shared between threads like any other. Set XFUNC_DEFERRED_MIN_NUMEL
// (elements; 0 turns deferral off) to change the threshold.

/// How a step reads its operands: op(a), op(a, b), op(a, scalar) or op(scalar, b).
enum class step_form : std::uint8_t { unary, binary, scalar_right, scalar_left };

/// One step of a deferred program: dst[0..n) = op(a, b) for one block (by streaming stores when
/// `stream`: NOTE: [Streaming deferred results]). A cpu program calls `fn`; a device program
/// names the op by the device's own number for it, `device_op` (NOTE: [Fused device programs]
/// in include/xfunc/cuda/kernel_args.hpp).
struct deferred_step {
  using block_fn = void (*)(void* dst, const void* a, const void* b, double scalar, std::size_t n, bool stream);
  block_fn fn = nullptr;
  int device_op = -1;
  step_form form = step_form::unary;
  int a = 0;  // operand codes: a register (>= 0: the result of that step) or a leaf (-1 - index)
  int b = 0;  // (unused by unary steps and the tensor side of tensor-scalar steps)
  double scalar = 0;
};

struct deferred_value {
  static constexpr std::size_t max_steps = 8;
  static constexpr std::size_t max_leaves = 4;
  static constexpr std::size_t block = 1024;  // elements per block: a multiple of every SIMD width
  static constexpr std::size_t blocks_per_task = 16;  // blocks per thread-pool task
  static constexpr std::size_t blocks_per_streamed_task = 64;  // the same for a streamed result

  device dev = cpu;  // where the leaves are and the result goes
  dtype dt = dtype::float32;
  std::size_t elem_size = 0;
  std::int64_t numel = 0;
  std::array<deferred_step, max_steps> steps{};
  std::size_t n_steps = 0;
  std::array<std::shared_ptr<tensor_impl>, max_leaves> leaves{};
  std::size_t n_leaves = 0;
  std::mutex evaluating;  // held while one thread evaluates the program

  deferred_value() = default;
  deferred_value(const deferred_value&) = delete;
  deferred_value& operator=(const deferred_value&) = delete;
  ~deferred_value() { release_leaves(); }
  /// Drops the leaves and their reader counts (once evaluated, or when the tensor goes away).
  void release_leaves();

  bool reads(const storage* s) const;
  /// Element `off` of leaf i.
  const std::byte* leaf_data(std::size_t i, std::size_t off) const {
    const tensor_impl& l = *leaves[i];
    return l.store->data + (static_cast<std::size_t>(l.offset) + off) * elem_size;
  }
  /// Writes the program's result (numel elements) to `out`.
  void evaluate(std::byte* out) const;
  /// Writes elements [begin, end) of the result (begin a multiple of `block`), the last step by
  /// streaming stores when `stream` (streams_to(out)).
  void evaluate_range(std::byte* out, std::size_t begin, std::size_t end, bool stream) const;
  /// Whether the result goes to `out` by streaming stores (NOTE: [Streaming deferred results]).
  bool streams_to(const std::byte* out) const;
  /// Where a task writing the result from `out` (element `begin`) places its registers within a
  /// page (NOTE: [Register placement]).
  std::size_t register_page_offset(const std::byte* out, std::size_t begin) const;
};

/// Live deferred tensors (weak), and the mutex under which programs are built and evaluated.
struct deferred_registry {
  std::mutex m;
  std::vector<std::weak_ptr<tensor_impl>> live;
  static deferred_registry& instance() {
    static deferred_registry* r = new deferred_registry;  // never destroyed (static tensors)
    return *r;
  }
};

inline std::int64_t deferred_min_numel_from_env() {
  const char* e = std::getenv("XFUNC_DEFERRED_MIN_NUMEL");
  return e ? std::strtoll(e, nullptr, 10) : std::int64_t(1) << 15;
}
// A namespace-scope variable, not a function-local static: no initialisation guard on the hot
// path. Before its dynamic initialisation (static initialisers of other files) it reads 0, which
// only means "no deferral".
inline std::atomic<std::int64_t> deferred_min_numel_setting{deferred_min_numel_from_env()};
/// Pointwise ops with at least this many elements may be deferred (0: never).
inline std::int64_t deferred_min_numel() { return deferred_min_numel_setting.load(std::memory_order_relaxed); }
/// Changes the threshold (tests use it to defer small tensors too); returns the previous one.
inline std::int64_t set_deferred_min_numel(std::int64_t n) { return deferred_min_numel_setting.exchange(n); }

inline void deferred_value::release_leaves() {
  for (std::size_t i = 0; i < n_leaves; ++i) {
    leaves[i]->store->deferred_readers.fetch_sub(1, std::memory_order_acq_rel);
    leaves[i].reset();
  }
  n_leaves = 0;
}

inline bool deferred_value::reads(const storage* s) const {
  for (std::size_t i = 0; i < n_leaves; ++i)
    if (leaves[i]->store.get() == s) return true;
  return false;
}

// NOTE: [Streaming deferred results]
// A result of at least deferred_stream_min_bytes does not stay in the caches for whoever reads
// it next, so the last step of a program of two or more steps writes it by streaming stores
// (NOTE: [Streaming stores] in backend/streaming.hpp; its block function's `stream`), which write
// whole lines without reading them first: `x * a + b` on 2^24 floats moves 128 MiB instead of
// 192. Until 2026-12-05 (fifth session) that step wrote into one more L1 register, copied out by
// streaming stores. On that day's VM (AMD EPYC, 48 KiB L1d, AVX-512), best of 40 interleaved
// runs in one process, old and new headers alternating four times: `x * a + b` 1.18-1.40x a
// memcpy of the same bytes through the extra register, 0.98-1.30x written directly (lower in
// every pair; a hand-written loop over the same blocks, streaming its second pass, 0.84-0.92x).
// A one-step program (`x * a`, `exp(x)`) keeps its single call with ordinary stores: streamed,
// `x * a` was slower in three pairs of four (1.01-1.35x against 0.95-1.19x; with the larger tasks
// below 0.81-0.82x against 0.94-1.05x, but `exp(x)` then 1.18-1.26x against 1.01-1.14x). A
// streamed program runs in tasks of 64 blocks, not 16: each task ends with a fence that waits for
// its streaming stores to drain (`x * a + b` 0.86-0.87x a memcpy, against 0.88-0.92x in tasks of
// 16, both in one process, best of 40 interleaved runs, two runs; across binaries within the
// noise). Builds without AVX (no streaming store of a register) keep ordinary stores; the values
// are the same either way.
inline constexpr std::size_t deferred_stream_min_bytes = std::size_t(32) << 20;

inline bool deferred_value::streams_to(const std::byte* out) const {
  // in builds with AVX, whose registers (32 or 64 bytes) have streaming stores; every block
  // starts 64-byte aligned when `out` (a tensor buffer) does
  return n_steps > 1 && backend::can_stream_bytes<32> &&
         static_cast<std::size_t>(numel) * elem_size >= deferred_stream_min_bytes &&
         reinterpret_cast<std::uintptr_t>(out) % 64 == 0;
}

#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME void deferred_value::evaluate(std::byte* out) const {
  // Registers hold the intermediate blocks (the last step writes straight into `out`). They are
  // a heap buffer per thread (64 KiB could overflow a small thread stack), 64-byte aligned like
  // every tensor buffer, so SIMD stores to them stay within cache lines. Blocks
  // are independent: the program runs in tasks of blocks_per_task blocks over the thread pool,
  // each block computed exactly as on one thread (NOTE: [Threads]). A streamed result takes
  // larger tasks: each ends with a fence, which waits for its streaming stores to drain.
  const auto total = static_cast<std::size_t>(numel);
  const bool stream = streams_to(out);
  const std::size_t per_task = block * (stream ? blocks_per_streamed_task : blocks_per_task);
  const auto n_tasks = static_cast<std::int64_t>((total + per_task - 1) / per_task);
  const auto work = static_cast<std::int64_t>(per_task * n_steps);
  backend::parallel_for(n_tasks, work, [&](std::int64_t t) {
    const std::size_t begin = static_cast<std::size_t>(t) * per_task;
    evaluate_range(out, begin, total - begin < per_task ? total : begin + per_task, stream);
  });
}
#endif

// NOTE: [Register placement]
// A load whose address matches an earlier, still pending store in its low 12 bits (the offset
// within a 4 KiB page) waits for that store as if it were to the same address ("4K aliasing").
// A program's steps store into its registers while loading their leaves, and the last step
// stores the result while loading a register, so where the registers sit within a page relative
// to the leaves and the result decides whether the loads of a block wait: registers 64 bytes
// behind the result made `x * a + b` on 2^24 floats 1.44x slower and `exp(x * a + b)` 1.66x,
// 64 bytes ahead of its leaf 1.13x and 1.06x, while 0, 512 and 2048 bytes behind were as fast as
// each other (ab_headers.sh on a Zen 2 VM with AVX2, 2026-12-06). Until then the registers sat
// wherever the heap had put the thread's buffer, so these programs' speed changed from process
// to process (the misses of the memcpy target in earlier sessions). Now each task places them
// at the result's offset within its page (register k + 1 then loads nothing that register k has
// just stored either), moved on by 1 KiB at a time while a leaf starts less than 1 KiB behind
// them (a view at an odd offset; leaves of fresh tensors share the result's offset).
inline constexpr std::size_t register_page = 4096;

#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME std::size_t deferred_value::register_page_offset(const std::byte* out, std::size_t begin) const {
  constexpr std::size_t near = 1024;
  const auto page_offset = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % register_page; };
  const std::size_t result = page_offset(out);
  for (std::size_t shift = 0; shift < register_page; shift += near) {
    const std::size_t r = (result + shift) % register_page;
    bool clear = true;
    for (std::size_t i = 0; i < n_leaves; ++i) {
      const std::size_t behind = (r + register_page - page_offset(leaf_data(i, begin))) % register_page;
      clear = clear && (behind == 0 || behind >= near);
    }
    if (clear) return r;
  }
  return result;
}
#endif

#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME void deferred_value::evaluate_range(std::byte* out, std::size_t begin, std::size_t end,
                                                  bool stream) const {
  auto leaf = [&](int code, std::size_t off) -> const void* {
    return leaf_data(static_cast<std::size_t>(-1 - code), off);  // (a leaf's code is -1 - index)
  };
  if (n_steps == 1) {  // no registers: one call (its operands are leaves), ordinary stores
    const deferred_step& s = steps[0];
    s.fn(out + begin * elem_size, leaf(s.a, begin), leaf(s.b, begin), s.scalar, end - begin, false);
    return;
  }
  const std::size_t reg_bytes = block * elem_size;  // a multiple of 64
  // The registers: this thread's buffer for max_steps blocks of the widest dtype, allocated by
  // its first program and kept (a block function never settles another program, so one buffer
  // per thread suffices). An allocation and free per task cost 3-8% of `x * a + b` on 2^24
  // floats: glibc consolidated its heap each time the freed block rejoined the top.
  struct aligned_free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  // float64 and int64 are the widest; one page more, to place the registers within it
  constexpr std::size_t reg_capacity = max_steps * block * sizeof(double);
  thread_local const std::unique_ptr<std::byte, aligned_free> reg_buffer(
      static_cast<std::byte*>(std::aligned_alloc(register_page, reg_capacity + register_page)));
  if (!reg_buffer) [[unlikely]]
    fail("xf: out of memory allocating ", reg_capacity + register_page, " bytes for deferred pointwise programs");
  std::byte* regs = reg_buffer.get() + register_page_offset(out + begin * elem_size, begin);
  if ((n_steps - 1) * reg_bytes > reg_capacity) [[unlikely]]  // (a dtype wider than 8 bytes)
    fail("xf: internal error: a deferred program needs ", (n_steps - 1) * reg_bytes, " bytes of registers, more than ",
         reg_capacity);
  // Each step's operands and destination as a base address and a stride per element (0 for a
  // register), resolved once per task. Resolving them for every block (reading the steps, the
  // leaves' impls and their storages between the streaming stores of one block and the loads of
  // the next) made `x * a + b` on 2^24 floats 1.6-1.9x slower on the AVX-512 VM of 2026-12-05:
  // 5.5-6.3 ms, then 2.9-3.6 ms, a memcpy of the same bytes 2.9-3.1 ms.
  struct operand_at {  // element `off` of a leaf, or the register block (stride 0)
    const std::byte* base;
    std::size_t stride;
    const std::byte* at(std::size_t off) const { return base + off * stride; }
  };
  auto operand = [&](int code) -> operand_at {
    if (code >= 0) return {regs + static_cast<std::size_t>(code) * reg_bytes, 0};
    return {static_cast<const std::byte*>(leaf(code, 0)), elem_size};
  };
  struct resolved_step {
    deferred_step::block_fn fn;
    double scalar;
    operand_at a, b;
    std::byte* dst;  // the step's register, or `out` (stride elem_size) for the last step
    std::size_t dst_stride;
    bool stream;  // the last step's, when the result is streamed
  };
  std::array<resolved_step, max_steps> resolved;
  for (std::size_t k = 0; k < n_steps; ++k) {
    const deferred_step& s = steps[k];
    const bool last = k + 1 == n_steps;
    resolved[k] = {s.fn, s.scalar, operand(s.a), operand(s.b), last ? out : regs + k * reg_bytes, last ? elem_size : 0,
                   last && stream};
  }
  const std::size_t steps_used = n_steps;  // a local: the member would be reloaded after every call through fn
  for (std::size_t off = begin; off < end; off += block) {
    const std::size_t n = end - off < block ? end - off : block;
    for (std::size_t k = 0; k < steps_used; ++k) {
      const resolved_step& r = resolved[k];
      r.fn(r.dst + off * r.dst_stride, r.a.at(off), r.b.at(off), r.scalar, n, r.stream);
    }
  }
  if (stream) backend::stream_fence();
}
#endif

// Settling: the registry's mutex guards `pending` and the live list; each program's own mutex
// serialises the evaluation of one deferred tensor, so threads settle different tensors in
// parallel. Lock order: a program's mutex, then the registry's (never the reverse).
XFUNC_RUNTIME void settle_deferred(const tensor_impl& impl);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME void settle_deferred(const tensor_impl& impl) {
  auto& t = const_cast<tensor_impl&>(impl);  // impls are never const objects
  auto& reg = deferred_registry::instance();
  std::shared_ptr<deferred_value> p;  // keeps the program (and its leaves) alive to the end
  {
    std::lock_guard<std::mutex> lock(reg.m);
    if (!t.deferred.load(std::memory_order_relaxed)) return;
    p = t.pending;
  }
  std::lock_guard<std::mutex> evaluating(p->evaluating);
  if (!t.deferred.load(std::memory_order_acquire)) return;  // another thread settled it meanwhile
  const auto bytes = static_cast<std::size_t>(p->numel) * p->elem_size;
  std::shared_ptr<storage> st;
  if (p->dev == cpu) {
    st = make_pooled<storage>(bytes);
    p->evaluate(st->data);
  } else {  // one launch on the device's stream (NOTE: [Fused device programs])
    st = make_pooled<storage>(p->dev, bytes, "xf");
    backend_of(p->dev, "xf").evaluate_deferred(*p, st->data);
  }
  st->born = t.born;  // the value was made when the tensor was, not when it is computed
  std::lock_guard<std::mutex> lock(reg.m);
  t.store = std::move(st);
  p->release_leaves();  // now, so that a writer waiting for the readers of a leaf sees them gone
  t.pending.reset();
  t.deferred.store(false, std::memory_order_release);
}
#endif

// While the readers found are being settled, another thread may copy the program of one of them
// into a new deferred tensor (it reads the deferred tensor, not this buffer, as far as it knows).
// So this repeats until no reader is left: a new reader can only come from an existing one.
XFUNC_RUNTIME void settle_readers_of(const storage& s);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME void settle_readers_of(const storage& s) {
  auto& reg = deferred_registry::instance();
  while (s.deferred_readers.load(std::memory_order_acquire) > 0) {
    std::vector<std::shared_ptr<tensor_impl>> readers;
    {
      std::lock_guard<std::mutex> lock(reg.m);
      for (auto& w : reg.live)
        if (auto p = w.lock())
          if (p->deferred.load(std::memory_order_relaxed) && p->pending->reads(&s)) readers.push_back(std::move(p));
    }
    for (const auto& p : readers) settle_deferred(*p);
    if (readers.empty()) std::this_thread::yield();  // a reader is being dropped on another thread
  }
}
#endif

}  // namespace xfunc::detail
