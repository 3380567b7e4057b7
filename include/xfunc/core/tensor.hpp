#pragma once
/// \file
/// xf::tensor: a value-semantic handle to a dense strided buffer, a meta (shape-only) tensor, or
/// a transform wrapper (grad-tracking, dual, batched). Copies share the implementation.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <atomic>
#include <mutex>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>  // madvise (NOTE: [Buffer allocation])
#endif

#include <xfunc/core/device.hpp>
#include <xfunc/core/device_backend.hpp>
#include <xfunc/core/dtype.hpp>
#include <xfunc/core/error.hpp>
#include <xfunc/core/layer.hpp>
#include <xfunc/core/linkage.hpp>
#include <xfunc/core/object_pool.hpp>
#include <xfunc/core/release_queue.hpp>
#include <xfunc/core/sanitizer.hpp>
#include <xfunc/core/shape.hpp>

namespace xfunc {

namespace detail {
struct tensor_impl;
struct grad_node;
struct storage;
struct deferred_value;
// see core/deferred.hpp, NOTE: [Deferred elementwise]
void settle_deferred(const tensor_impl& t);
void settle_readers_of(const storage& s);

// NOTE: [Buffer allocation]
// Tiny buffers live inline in their storage object, which is allocated without over-alignment
// so that it takes malloc's fast (thread-cache) path: a 1-element op then costs two small
// mallocs (impl and storage), not an aligned allocation. Heap buffers are 64-byte aligned.
// Buffers of 64 KiB and more are recycled through a process-wide cache of freed blocks (exact
// size match, most recently freed first, bounded in total bytes and in count, oldest evicted
// first): the C allocator hands such blocks back to the OS on free (an mmap, or the heap's top
// trimmed), and touching a fresh mapping page-faults and zero-fills every page, which costs
// more than a streaming kernel over the same bytes. (The threshold was 1 MiB until 2026-12-03:
// a loop over chunks of a vmap, whose sums are 400 KB each, then took 1300 page faults per step.)
// Kernels take their working memory from the same cache (`scratch`), not from std::vector,
// which would zero-fill fresh pages on every call.
// Blocks of 2 MiB and more are 2 MiB aligned and advised as transparent huge pages (Linux,
// where the system's setting is "madvise", Debian's default): a streaming kernel then crosses a
// page, and misses the TLB, 512 times less often (a 64 MiB sum was 10-20% faster on the VM of
// 2026-12-01; on the AMD VM of 2026-12-05 reading huge pages from memory was 6-14% slower, and
// copies were unchanged: docs/performance.md), and a fresh block faults once per 2 MiB, which
// is what decides it: a first touch of 4 KiB pages cost up to 20 us a page on that VM. Only the
// pages touched are backed, so rounding the size up to 2 MiB costs address space, not memory.
// Contents of a reused block are unspecified, as for any fresh allocation. Under AddressSanitizer
// the cache is off so that use-after-free stays detectable.
#ifndef XFUNC_DETAIL_BUFFER_CACHE  // (a build may also turn it off by defining it 0)
#define XFUNC_DETAIL_BUFFER_CACHE (!XFUNC_DETAIL_ASAN)
#endif

class large_buffer_cache {
 public:
  static constexpr std::size_t min_bytes = std::size_t(64) << 10;    // cache blocks this large
  static constexpr std::size_t max_cached = std::size_t(512) << 20;  // at most this much held
  static constexpr std::size_t max_blocks = 1024;                    // and this many (bounds a lookup)

  static large_buffer_cache& instance() {
    // Never destroyed: tensors in static objects may release buffers during exit.
    static large_buffer_cache* c = new large_buffer_cache;
    return *c;
  }
  /// A 64-byte aligned block of `bytes` (a multiple of 64), or null when out of memory.
  std::byte* get(std::size_t bytes) {
    if (XFUNC_DETAIL_BUFFER_CACHE && bytes >= min_bytes) {
      std::lock_guard<std::mutex> lock(m_);
      for (std::size_t i = blocks_.size(); i-- > 0;)
        if (blocks_[i].bytes == bytes) {
          std::byte* p = blocks_[i].p;
          blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
          cached_ -= bytes;
          return p;
        }
    }
#if defined(MADV_HUGEPAGE)
    if (bytes >= huge_page) {
      const std::size_t whole = (bytes + huge_page - 1) / huge_page * huge_page;
      void* p = std::aligned_alloc(huge_page, whole);
      if (p) ::madvise(p, whole, MADV_HUGEPAGE);  // advice only: its failure changes nothing
      return static_cast<std::byte*>(p);
    }
#endif
    return static_cast<std::byte*>(std::aligned_alloc(64, bytes));
  }
  static constexpr std::size_t huge_page = std::size_t(2) << 20;
  void put(std::byte* p, std::size_t bytes) {
    if (!XFUNC_DETAIL_BUFFER_CACHE || bytes < min_bytes || bytes > max_cached) {
      std::free(p);
      return;
    }
    std::vector<std::byte*> evicted;
    {
      std::lock_guard<std::mutex> lock(m_);
      blocks_.push_back({p, bytes});
      cached_ += bytes;
      std::size_t n = 0;
      while (cached_ > max_cached || blocks_.size() - n > max_blocks) {
        evicted.push_back(blocks_[n].p);
        cached_ -= blocks_[n].bytes;
        ++n;
      }
      blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    for (auto* q : evicted) std::free(q);
  }
  /// What the cache holds now (for tests and diagnostics).
  std::size_t cached_blocks() {
    std::lock_guard<std::mutex> lock(m_);
    return blocks_.size();
  }
  std::size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(m_);
    return cached_;
  }

 private:
  struct block {
    std::byte* p;
    std::size_t bytes;
  };
  std::mutex m_;
  std::vector<block> blocks_;  // oldest first
  std::size_t cached_ = 0;
};

/// A contiguous buffer (64-byte aligned on the heap). Tiny buffers live inline (no second
/// allocation); see NOTE: [Buffer allocation].
/// Test hook for allocation faults (tests/reliability): while positive, counts heap buffer
/// allocations down, and the one that brings it to 0 fails as if the allocator had no memory.
inline std::atomic<std::int64_t> buffer_fault_countdown{0};
inline bool injected_buffer_fault() {
  return buffer_fault_countdown.load(std::memory_order_relaxed) > 0 &&
         buffer_fault_countdown.fetch_sub(1, std::memory_order_relaxed) == 1;
}

struct storage {
  /// `nbytes` of memory on the cpu; throws ("out of memory", with the bytes and the device) when
  /// the allocator has none.
  explicit storage(std::size_t nbytes) : nbytes(nbytes) {
    if (nbytes <= sizeof(small)) {
      data = small;
    } else {
      // rounded() must not wrap (only possible where std::size_t is narrower than int64_t)
      data = nbytes <= SIZE_MAX - 63 && !injected_buffer_fault() ? large_buffer_cache::instance().get(rounded())
                                                                  : nullptr;
      if (!data) [[unlikely]]
        fail("xf: out of memory allocating ", nbytes, " bytes on ", xfunc::cpu,
             " (the allocator returned no memory); use smaller tensors or free some first");
    }
  }
  /// `nbytes` at `data` on `dev`, memory another library owns (a DLPack import): the destructor
  /// gives it back with `release(release_context)` (NOTE: [Memory shared with other libraries]).
  storage(std::byte* data, std::size_t nbytes, void (*release)(void*), void* release_context, xfunc::device dev = cpu)
      : data(data), nbytes(nbytes), release(release), release_context(release_context), shared_externally(true),
        dev(dev) {}
  /// `nbytes` of memory on device `dev` (not the cpu), from its backend (NOTE: [Device backends]).
  storage(xfunc::device dev, std::size_t nbytes, const char* fn)
      : data(backend_of(dev, fn).allocate(dev, nbytes)), nbytes(nbytes), dev(dev) {}
  ~storage() {
    if (release) release(release_context);
    else if (dev.kind != device_kind::cpu) backend_of(dev, "xf").release(dev, data);
    else if (data != small) large_buffer_cache::instance().put(data, rounded());
  }
  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;

  std::byte* data;
  std::size_t nbytes;
  std::atomic<int> deferred_readers{0};  // deferred values reading this buffer (core/deferred.hpp)
  void (*release)(void*) = nullptr;       // set for memory owned by another library
  void* release_context = nullptr;
  // Another library may read or write this buffer (DLPack), so no deferred program may read it.
  std::atomic<bool> shared_externally{false};
  xfunc::device dev = cpu;  // where `data` points (NOTE: [Device backends])
  // the level counter when the data was made: a view made inside a transform of a tensor from
  // outside it still has outside data (NOTE: [Tensors created inside transforms])
  std::uint64_t born = creation_stamp();
  alignas(16) std::byte small[32];

 private:
  std::size_t rounded() const { return (nbytes + 63) / 64 * 64; }
};

/// Uninitialised working memory for a kernel: n elements of T, 64-byte aligned above 32 bytes,
/// recycled through the buffer cache (NOTE: [Buffer allocation]).
template <class T>
class scratch {
 public:
  scratch() = default;
  explicit scratch(std::int64_t n) : s_(std::make_unique<storage>(static_cast<std::size_t>(n) * sizeof(T))) {}
  T* data() const { return s_ ? reinterpret_cast<T*>(s_->data) : nullptr; }
  T& operator[](std::int64_t i) const { return data()[i]; }

 private:
  std::unique_ptr<storage> s_;
};

enum class impl_kind : std::uint8_t { dense, grad, dual, batched, functional };

struct view_info;
}  // namespace detail

template <class T>
concept tensor_element = std::is_arithmetic_v<T>;

/// The tensor handle. Copying shares storage; `clone()` copies the data.
class tensor {
 public:
  /// An undefined tensor (defined() is false), as torch's default tensor.
  tensor() = default;
  /// A handle to an implementation (library use: ops and factories make tensors).
  explicit tensor(std::shared_ptr<detail::tensor_impl> impl) : impl_(std::move(impl)) {}

  ///@{
  /// 1-d to 4-d tensors from nested braces; the dtype follows the element type.
  template <tensor_element T>
  tensor(std::initializer_list<T> v);
  template <tensor_element T>
  tensor(std::initializer_list<std::initializer_list<T>> v);
  template <tensor_element T>
  tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v);
  template <tensor_element T>
  tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> v);
  ///@}

  /// Whether the handle refers to a tensor (a default-constructed one does not).
  bool defined() const { return impl_ != nullptr; }
  /// The extents, one per dimension.
  const shape_t& shape() const;
  /// The extent of dimension d (negative d counts from the end).
  std::int64_t size(std::int64_t d) const;
  /// The number of dimensions (0 for a scalar).
  std::int64_t dim() const { return static_cast<std::int64_t>(shape().size()); }
  /// The number of elements (the product of the extents).
  std::int64_t numel() const { return detail::numel_of(shape()); }
  /// The element type.
  xfunc::dtype dtype() const;
  /// Where the data lives (cpu, a cuda device, or meta for a shape-only tensor).
  xfunc::device device() const;
  /// Strides (in elements) of the underlying dense buffer, as seen through this tensor.
  shape_t strides() const;
  /// Whether the elements are laid out densely in row-major order.
  bool is_contiguous() const;
  /// The value of a 0-d or one-element tensor as T.
  template <class T>
  T item() const;

  /// The values converted to dtype d (this tensor itself when it already has d).
  template <int D = 0>
  tensor to(xfunc::dtype d) const;
  /// The tensor on device d (this tensor itself when it is already there): a copy between the
  /// cpu and a cuda device, differentiable and batchable like any op.
  template <int D = 0>
  tensor to(xfunc::device d) const;
  /// to(cuda device `index`).
  template <int D = 0>
  tensor cuda(std::int32_t index = 0) const;
  /// to(xf::cpu).
  template <int D = 0>
  tensor cpu() const;

  // shape and views (see ops/view.hpp); methods that dispatch are templates only so that they
  // are instantiated on use (NOTE: [Lazy instantiation] in fwd.hpp)
  /// The elements in shape s (one extent may be -1): a view when the strides allow it, else a
  /// copy.
  template <int D = 0>
  tensor reshape(shape_t s) const;
  /// A view in shape s (one extent may be -1); throws when the strides cannot express it (use
  /// reshape).
  template <int D = 0>
  tensor view(shape_t s) const;
  /// A view with dims d0 and d1 swapped.
  template <int D = 0>
  tensor transpose(std::int64_t d0, std::int64_t d1) const;
  /// The transpose of a 2-d tensor (a view).
  template <int D = 0>
  tensor t() const;
  /// A view with the dims reordered: dim i of the result is dim dims[i] of this tensor.
  template <int D = 0>
  tensor permute(dims_t dims) const;
  /// A view with a new dim of size 1 at position d.
  template <int D = 0>
  tensor unsqueeze(std::int64_t d) const;
  /// A view without the dims of size 1.
  template <int D = 0>
  tensor squeeze() const;
  /// A view without dim d if its size is 1 (the same shape otherwise).
  template <int D = 0>
  tensor squeeze(std::int64_t d) const;
  /// A view broadcast to shape s (size-1 and new leading dims repeat; -1 keeps an extent), no
  /// copy.
  template <int D = 0>
  tensor expand(shape_t s) const;
  /// The elements as a 1-d tensor (a view when the strides allow it).
  template <int D = 0>
  tensor flatten() const;
  /// A view of index i along dim, without that dim (negative i counts from the end).
  template <int D = 0>
  tensor select(std::int64_t dim, std::int64_t i) const;
  /// A view of `len` elements along dim, from `start`.
  template <int D = 0>
  tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t len) const;
  /// A view of the diagonal of dims 0 and 1, as the last dim (as torch's diagonal()).
  template <int D = 0>
  tensor diagonal() const;
  /// A view with dim src moved to position dst.
  template <int D = 0>
  tensor movedim(std::int64_t src, std::int64_t dst) const;
  /// This tensor when it is contiguous, else a contiguous copy.
  template <int D = 0>
  tensor contiguous() const;
  /// A copy with storage of its own.
  template <int D = 0>
  tensor clone() const;
  /// The same values (sharing storage) with no derivative flowing back through them.
  template <int D = 0>
  tensor detach() const;

  // in-place (see ops/inplace.hpp)
  ///@{
  /// In place: adds o (a tensor broadcast to this shape, or a double); returns *this.
  template <int D = 0>
  tensor& add_(const tensor& o);
  template <int D = 0>
  tensor& add_(double v);
  ///@}
  ///@{
  /// In place: subtracts o (a tensor broadcast to this shape, or a double); returns *this.
  template <int D = 0>
  tensor& sub_(const tensor& o);
  template <int D = 0>
  tensor& sub_(double v);
  ///@}
  ///@{
  /// In place: multiplies by o (a tensor broadcast to this shape, or a double); returns *this.
  template <int D = 0>
  tensor& mul_(const tensor& o);
  template <int D = 0>
  tensor& mul_(double v);
  ///@}
  ///@{
  /// In place: divides by o (a tensor broadcast to this shape, or a double); returns *this.
  template <int D = 0>
  tensor& div_(const tensor& o);
  template <int D = 0>
  tensor& div_(double v);
  ///@}
  /// In place: copies src's values (broadcast, converted to this dtype); returns *this.
  template <int D = 0>
  tensor& copy_(const tensor& src);
  /// In place: sets every element to 0; returns *this.
  template <int D = 0>
  tensor& zero_();
  /// In place: sets every element to v; returns *this.
  template <int D = 0>
  tensor& fill_(double v);
  /// In place: negates every element; returns *this.
  template <int D = 0>
  tensor& neg_();
  /// In place: exp of every element; returns *this.
  template <int D = 0>
  tensor& exp_();
  /// In place: sine of every element; returns *this.
  template <int D = 0>
  tensor& sin_();
  /// In place: cosine of every element; returns *this.
  template <int D = 0>
  tensor& cos_();
  /// In place: limits every element to [lo, hi]; returns *this.
  template <int D = 0>
  tensor& clamp_(double lo, double hi);

  /// The implementation behind the handle (library use).
  detail::tensor_impl* impl() const { return impl_.get(); }
  /// The shared owner of the implementation (library use).
  const std::shared_ptr<detail::tensor_impl>& impl_ptr() const { return impl_; }

 private:
  friend struct detail::tensor_impl;  // releases its inner tensors iteratively
  void check_defined() const;
  std::shared_ptr<detail::tensor_impl> impl_;
};

namespace detail {

/// One implementation struct for every kind of tensor, so that shape/dtype queries need no
/// virtual call. Logical shape/dtype/device are cached on every kind.
struct tensor_impl {
  // User-provided, so that make_shared's value-initialisation does not zero the whole struct
  // (its shapes' inline arrays) before running the member initialisers.
  tensor_impl() {}  // NOLINT(modernize-use-equals-default)
  // A wrapper may hold the last owner of a long recorded graph (NOTE: [Iterative destruction]).
  ~tensor_impl() {
    release_owner(node);
    release_owner(inner.impl_);
    release_owner(tangent.impl_);
  }
  impl_kind kind = impl_kind::dense;
  xfunc::dtype dt = dtype::float32;
  xfunc::device dev = cpu;
  shape_t shape;
  // dense: strides in elements and offset into the storage (meta tensors have no storage)
  shape_t strides;
  std::int64_t offset = 0;
  std::shared_ptr<storage> store;
  // wrappers: the layer that made it, the wrapped value one layer down, and per-kind data
  layer_ptr owner;                   // not owning: NOTE: [Levels and life handles]
  std::uint64_t owner_level = 0;     // owner's level when this wrapper was made
  tensor inner;                      // grad: value, dual: primal, batched: value with bdim
  tensor tangent;                    // dual: tangent (undefined = zero)
  std::int64_t bdim = 0;             // batched: physical batch dim of `inner`
  std::shared_ptr<grad_node> node;   // grad: the node that produced it (or its leaf)
  // grad, dual and functional wrappers: mutation tracking (see NOTE: [Mutation under transforms])
  std::uint64_t version = 0;         // bumped by every in-place write into this wrapper
  std::uint64_t born = creation_stamp();  // NOTE: [Tensors created inside transforms]
  std::shared_ptr<view_info> view;   // set when this wrapper is a view of another wrapper

  // dense: a deferred value, computed into `store` on first access (NOTE: [Deferred elementwise])
  std::atomic<bool> deferred{false};
  std::shared_ptr<deferred_value> pending;

  bool is_dense() const { return kind == impl_kind::dense; }
  /// A wrapper whose transform call has not returned (its layer alive and not reused since).
  bool is_live_wrapper() const {
    return !is_dense() && owner->alive.load(std::memory_order_acquire) &&
           owner->level.load(std::memory_order_relaxed) == owner_level;
  }
  /// Makes the buffer safe to touch: evaluates this tensor if deferred, and every deferred value
  /// that reads its storage (the caller may be about to write it). Every kernel goes through it.
  void prepare_access() const {
    if (deferred.load(std::memory_order_acquire) ||
        (store && store->deferred_readers.load(std::memory_order_acquire) > 0)) [[unlikely]]
      settle_for_access();
  }
  void settle_for_access() const {
    if (deferred.load(std::memory_order_acquire)) settle_deferred(*this);
    settle_readers_of(*store);  // returns at once when nothing reads it
  }
  /// The cpu data (after prepare_access); a tensor elsewhere has none the host may touch.
  template <class T>
  T* data() const {
    if (dev.kind != device_kind::cpu) [[unlikely]] fail_host_access();
    prepare_access();
    return reinterpret_cast<T*>(store->data) + offset;
  }
  /// The data on the tensor's own device (device backends; never dereferenced on the host), after
  /// prepare_access (a deferred device value is computed first).
  template <class T>
  T* device_data() const {
    prepare_access();
    return reinterpret_cast<T*>(store->data) + offset;
  }
  [[noreturn]] void fail_host_access() const {
    fail("xf: internal error: host access to the data of a ", dev, " tensor; an op reached a cpu kernel with it, "
         "please report this with the program that triggered it");
  }
};

/// A fresh contiguous dense impl. Every new tensor comes through here, so its shape is checked
/// here (NOTE: [Checked shape arithmetic]); `fn` names the op in the message ("shape").
XFUNC_RUNTIME std::shared_ptr<tensor_impl> make_dense_impl(const shape_t& s, dtype dt, device dev, const char* fn = "xf");
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME std::shared_ptr<tensor_impl> make_dense_impl(const shape_t& s, dtype dt, device dev, const char* fn) {
  auto impl = make_pooled<tensor_impl>();
  impl->dt = dt;
  impl->dev = dev;
  impl->shape = s;
  // one pass: the strides, the element count, and the checks that count, bytes and strides fit
  const std::int64_t n = check_shape(s, fn, dtype_size(dt), &impl->strides);
  const auto bytes = static_cast<std::size_t>(n) * dtype_size(dt);
  if (dev.kind == device_kind::cpu) impl->store = make_pooled<storage>(bytes);
  else if (dev.kind != device_kind::meta) impl->store = make_pooled<storage>(dev, bytes, fn);
  return impl;
}
#endif

/// A fresh contiguous dense tensor (uninitialised data); `fn` names the op if the shape is invalid.
inline tensor empty_dense(const shape_t& s, dtype dt, device dev = cpu, const char* fn = "xf") {
  return tensor(make_dense_impl(s, dt, dev, fn));
}

template <class T, class L>
void flatten_list(const L& l, shape_t& shp, std::size_t depth, std::vector<T>& out) {
  if constexpr (std::is_arithmetic_v<L>) {
    out.push_back(l);
  } else {
    auto n = static_cast<std::int64_t>(l.size());
    if (shp.size() <= depth) shp.push_back(n);
    else if (shp[depth] != n)
      fail("xf::tensor: ragged nested list (a row of length ", n, " where ", shp[depth],
           " was expected); every row must have the same length");
    for (const auto& e : l) flatten_list<T>(e, shp, depth + 1, out);
  }
}

template <class T, class L>
tensor tensor_from_list(const L& l) {
  shape_t shp;
  std::vector<T> vals;
  flatten_list<T>(l, shp, 0, vals);
  using E = std::conditional_t<std::is_same_v<T, bool>, bool,
                               std::conditional_t<std::is_same_v<T, float>, float,
                                                  std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>>>;
  tensor t = empty_dense(shp, dtype_of<T>(), cpu, "xf::tensor");
  E* p = t.impl()->template data<E>();
  for (std::size_t i = 0; i < vals.size(); ++i) p[i] = static_cast<E>(vals[i]);
  return t;
}
}  // namespace detail

template <tensor_element T>
tensor::tensor(std::initializer_list<T> v) : tensor(detail::tensor_from_list<T>(v)) {}
template <tensor_element T>
tensor::tensor(std::initializer_list<std::initializer_list<T>> v) : tensor(detail::tensor_from_list<T>(v)) {}
template <tensor_element T>
tensor::tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v)
    : tensor(detail::tensor_from_list<T>(v)) {}
template <tensor_element T>
tensor::tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> v)
    : tensor(detail::tensor_from_list<T>(v)) {}

inline void tensor::check_defined() const {
  if (!impl_) detail::fail("xf: operation on an undefined tensor (default-constructed xf::tensor); assign it first");
}
namespace detail {
/// Throws, naming the call `fn`, when t is undefined (a default-constructed xf::tensor): public
/// functions check their arguments before they read a shape, so the message says whose they are.
[[noreturn]] inline void fail_undefined(const char* fn) {
  fail(fn, ": operation on an undefined tensor (a default-constructed xf::tensor); assign it a value first");
}
inline void require_defined(const tensor& t, const char* fn) {
  if (!t.defined()) [[unlikely]] fail_undefined(fn);
}
}  // namespace detail
inline const shape_t& tensor::shape() const {
  check_defined();
  return impl_->shape;
}
inline std::int64_t tensor::size(std::int64_t d) const {
  detail::require_defined(*this, "xf::tensor::size");
  if (dim() == 0)  // (wrap_dim accepts -1 and 0 for a 0-d tensor, which has no extent to return)
    detail::fail("xf::tensor::size: dim ", d, " of a 0-d tensor, which has no dimensions; use numel() or shape()");
  return shape()[static_cast<std::size_t>(detail::wrap_dim(d, dim(), "dim", "xf::tensor::size"))];
}
inline dtype tensor::dtype() const {
  check_defined();
  return impl_->dt;
}
inline device tensor::device() const {
  check_defined();
  return impl_->dev;
}

/// Whether two tensors share one storage buffer (a tensor and any view of it do).
inline bool same_storage(const tensor& a, const tensor& b) {
  const detail::tensor_impl* x = a.impl();
  const detail::tensor_impl* y = b.impl();
  while (x && !x->is_dense()) x = x->inner.impl();
  while (y && !y->is_dense()) y = y->inner.impl();
  if (!x || !y) return false;
  // a deferred tensor's buffer does not exist yet, and it has no views (making one evaluates it)
  if (x->deferred.load(std::memory_order_acquire) || y->deferred.load(std::memory_order_acquire)) return x == y;
  return x->store && x->store == y->store;
}

/// A 0-d tensor holding v; dtype from v's C++ type (double→f64, int→i64, bool→b8).
template <tensor_element T>
tensor scalar(T v) {
  tensor t = detail::empty_dense({}, dtype_of<T>());
  detail::visit_dtype(t.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    *t.impl()->template data<E>() = static_cast<E>(v);
  });
  return t;
}

}  // namespace xfunc

#include <xfunc/core/deferred.hpp>  // defines what tensor_impl::prepare_access() calls
