#pragma once
/// \file
/// Factories. Inside transforms they return values of every grad, jvp and functionalize layer
/// on the stack and stay unbatched at vmap layers, except the *_like(t) factories, which follow
/// t's batching (NOTE: [Tensors created inside transforms]); random factories consult the vmap
/// layers on the stack for their randomness option. Library code uses the plain factories of
/// namespace detail.
#include <cmath>
#include <cstdint>
#include <mutex>

#include <xfunc/backend/cpu.hpp>
#include <xfunc/backend/random.hpp>
#include <xfunc/core/generator.hpp>
#include <xfunc/core/linkage.hpp>
#include <xfunc/dispatch/created.hpp>
#include <xfunc/dispatch/precompiled.hpp>
#include <xfunc/dispatch/layer_stack.hpp>
#include <xfunc/dispatch/trace.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc {
namespace detail {

/// make(dev), a factory's plain result, recorded as one node named `op` while make_fx traces;
/// the replay calls make again (on the cpu when the trace is shape-only). For a cuda device the
/// values are made on the cpu and copied by the backend (so random numbers are the cpu's, as
/// API.md section 7 requires), unless make fills on the device itself (`on_device`: fills).
template <bool on_device = false, class Make>
tensor factory_node(const char* op, device dev, Make make) {
  if constexpr (!on_device)
    if (dev.kind == device_kind::cuda) {
      const device_backend* b = &backend_of(dev, op);  // (a build without xfunc::cuda: said in the factory's name)
      return factory_node<true>(op, dev, [make, b](device d) {
        return d.kind == device_kind::cuda ? b->upload(make(cpu), d) : make(d);
      });
    }
  if (!tls_trace) return make(dev);
  const device replay_on = dev == meta ? cpu : dev;
  return tls_trace->record_factory(op, make(dev), [make, replay_on] { return make(replay_on); });
}

/// A plain tensor of `shape` filled with v; `fn` (the factory) names the call in errors.
XFUNC_RUNTIME tensor fill_now(const shape_t& shape, double v, dtype dt, device dev, const char* fn);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor fill_now(const shape_t& shape, double v, dtype dt, device dev, const char* fn) {
  check_fill_value(v, dt, fn);
  tensor t = empty_dense(shape, dt, dev, fn);  // checks the shape (NOTE: [Checked shape arithmetic])
  if (dev.kind == device_kind::cuda && t.numel() > 0) backend_of(dev, fn).fill(t, v);
  if (dev == cpu)
    visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = t.impl()->template data<T>();
      std::fill(p, p + t.numel(), static_cast<T>(v));
    });
  return t;
}
#endif

/// fill_now as one node named `fn` while make_fx traces.
XFUNC_RUNTIME tensor filled(const shape_t& shape, double v, dtype dt, device dev, const char* fn = "xf::full");
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor filled(const shape_t& shape, double v, dtype dt, device dev, const char* fn) {
  return factory_node<true>(fn, dev, [shape, v, dt, fn](device d) { return fill_now(shape, v, dt, d, fn); });
}
#endif

// NOTE: [Random numbers]
// One process-wide counter-based generator (Philox 4x32-10, NOTE: [Philox streams]): a key set
// by xf::manual_seed and an offset. Each random tensor takes the next blocks of the stream (the
// offset moves under a lock), so results are reproducible for a given seed and call order, do
// not depend on the thread count, and the GPU can draw the same stream. Under vmap, random
// factories look at every vmap layer on the stack (outermost first): randomness::error throws,
// ::same draws one value for that layer's whole batch, ::different draws one per example (the
// value gets that layer's batch dim). A vmap with chunk_size maps each chunk under its own
// layer: with ::same every chunk starts from the generator's offset at the first, so that all
// draw the unchunked call's values (NOTE: [Chunked vmap]). The state: core/generator.hpp.

template <backend::distribution D>
tensor random_tensor(const shape_t& shape, dtype dt, device dev, const char* name) {
  if (!is_floating(dt)) fail(name, ": needs a floating dtype, got ", dt);
  std::vector<layer_ptr> per_example;
  for (const auto& l : current_stack().layers) {
    if (l->kind != transform_kind::vmap) continue;
    if (l->rand == xfunc::randomness::error)
      fail(name, ": random operations under vmap need a randomness option; pass "
                 "xf::randomness::same (one value for the batch) or xf::randomness::different "
                 "(one per example) to xf::vmap");
    if (l->rand == xfunc::randomness::different) per_example.push_back(l);
  }
  // one leading batch dim per such layer, outermost first
  shape_t full_shape = shape;
  small_list<batch_entry, 4> batched;
  for (auto it = per_example.rbegin(); it != per_example.rend(); ++it) full_shape.insert(0, (*it)->batch_size);
  for (const auto& l : per_example) batched.push_back({&l, l->level.load(std::memory_order_relaxed), 0});
  tensor t = factory_node<true>(name, dev, [full_shape, dt, name](device d) {
    tensor r = empty_dense(full_shape, dt, d, name);
    if (d == meta) return r;
    visit_floating(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::uint64_t key, offset;
      {  // reserve this tensor's blocks; they are filled outside the lock
        std::lock_guard<std::mutex> lock(rng().mu);
        key = rng().key;
        offset = rng().offset;
        rng().offset += static_cast<std::uint64_t>(backend::blocks_for<T>(r.numel()));
      }
      if (d == cpu) backend::philox_fill<D>(r.impl()->template data<T>(), r.numel(), key, offset);
      else if (r.numel() > 0) backend_of(d, name).random(r, D == backend::distribution::normal, key, offset);
    });
    return r;
  });
  return lift_created(std::move(t), batched);
}
// rand and randn with their Philox fills (the normal transform in SIMD registers, threaded):
// compiled once in xfunc::kernels (NOTE: [Precompiled composites]).
XFUNC_EXTERN_TEMPLATE(tensor random_tensor<backend::distribution::uniform>(const shape_t&, dtype, device, const char*))
XFUNC_EXTERN_TEMPLATE(tensor random_tensor<backend::distribution::normal>(const shape_t&, dtype, device, const char*))

inline tensor plain_eye(std::int64_t n, dtype dt, device dev) {
  // [n, n]: a negative n, or n * n elements that do not fit, throws ("shape")
  return factory_node("xf::eye", dev, [n, dt](device d) {
    tensor t = fill_now({n, n}, 0.0, dt, d, "xf::eye");
    if (d == cpu)
      visit_dtype(dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = t.impl()->template data<T>();
        for (std::int64_t i = 0; i < n; ++i) p[i * n + i] = T(1);
      });
    return t;
  });
}
inline tensor plain_full(const shape_t& shape, double v, dtype dt, device dev) { return filled(shape, v, dt, dev); }
inline tensor plain_zeros_like(const tensor& t) { return filled(t.shape(), 0.0, t.dtype(), t.device()); }
inline tensor plain_ones_like(const tensor& t) { return filled(t.shape(), 1.0, t.dtype(), t.device()); }

/// A tensor like t filled with v, on `dev` (else t's device): t's physical shape, batched where t
/// is, lifted to the grad, jvp and functionalize layers on the stack (NOTE: [Tensors created
/// inside transforms]).
inline tensor filled_like(const tensor& t, double v, std::optional<device> dev, const char* op) {
  require_defined(t, op);
  const tensor s = strip_dead(t);
  const device d = dev.value_or(s.device());
  if (s.impl()->is_dense() && current_stack().layers.empty()) return filled(s.shape(), v, s.dtype(), d, op);
  return lift_created(filled(dense_of(s)->shape, v, s.dtype(), d, op), batch_entries_of(s));
}
}  // namespace detail

/// Seeds the generator of every random op (rand, randn, ...); the same seed and call order give
/// the same values.
inline void manual_seed(std::uint64_t seed) {
  std::lock_guard<std::mutex> lock(detail::rng().mu);
  detail::rng().key = seed;
  detail::rng().offset = 0;
}

/// A tensor of `shape` filled with 0 (dtype `dt`, on `dev`).
inline tensor zeros(const shape_t& shape, dtype dt, device dev) {
  return detail::lift_created(detail::filled(shape, 0.0, dt, dev, "xf::zeros"));
}
/// A tensor of `shape` filled with 1.
inline tensor ones(const shape_t& shape, dtype dt, device dev) {
  return detail::lift_created(detail::filled(shape, 1.0, dt, dev, "xf::ones"));
}
/// A tensor of `shape` for values that will be overwritten (do not rely on its contents; they
/// are zeros today).
inline tensor empty(const shape_t& shape, dtype dt, device dev) {
  return detail::lift_created(detail::filled(shape, 0.0, dt, dev, "xf::empty"));
}
/// A tensor of `shape` filled with `value` (which must be representable in `dt`).
inline tensor full(const shape_t& shape, double value, dtype dt, device dev) {
  return detail::lift_created(detail::filled(shape, value, dt, dev, "xf::full"));
}
/// The n x n identity matrix.
inline tensor eye(std::int64_t n, dtype dt, device dev) { return detail::lift_created(detail::plain_eye(n, dt, dev)); }
/// The 1-d sequence start, start + step, start + 2 step and so on, stopping before `end` (for a
/// negative step, above it); float32 unless `dt` says otherwise (arange(end) alone is int64).
inline tensor arange(double start, double end, double step, dtype dt, device dev) {
  if (step == 0) detail::fail("xf::arange: step must be nonzero");
  if ((step > 0 && end < start) || (step < 0 && end > start))  // as torch (an empty range would hide a swap)
    detail::fail("xf::arange: the range from ", start, " to ", end, " goes against the sign of step ", step,
                 "; swap start and end or negate step");
  // the length ceil((end - start) / step) must be a finite count that fits in int64_t (a
  // double-to-integer conversion out of range would be undefined behaviour)
  const double len = std::ceil((end - start) / step);
  if (!(len < 9223372036854775808.0))  // 2^63; also NaN
    detail::fail("xf::arange: shape [", len, "] (the length ceil((end - start) / step) for start ", start, ", end ",
                 end, ", step ", step, ") ",
                 std::isnan(len) ? "is not a number; start, end and step must be finite"
                                 : "has more elements than int64_t can hold; use a smaller range or a larger step");
  const auto n = static_cast<std::int64_t>(std::max(0.0, len));
  if (n > 0) {  // the first and last values must be representable in dt (int64: no overflow)
    detail::check_fill_value(start, dt, "xf::arange");
    detail::check_fill_value(start + static_cast<double>(n - 1) * step, dt, "xf::arange");
  }
  return detail::lift_created(detail::factory_node("xf::arange", dev, [n, start, step, dt](device d) {
    tensor t = detail::empty_dense({n}, dt, d, "xf::arange");
    if (d == cpu)
      detail::visit_dtype(dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = t.impl()->template data<T>();
        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
      });
    return t;
  }));
}
/// 0, 1, ..., end - 1 as an int64 tensor.
inline tensor arange(std::int64_t end, device dev) { return arange(0.0, static_cast<double>(end), 1.0, i64, dev); }
/// `n` evenly spaced values from a to b inclusive, 1-d.
inline tensor linspace(double a, double b, std::int64_t n, dtype dt, device dev) {
  detail::check_fill_value(a, dt, "xf::linspace");
  detail::check_fill_value(b, dt, "xf::linspace");
  return detail::lift_created(detail::factory_node("xf::linspace", dev, [a, b, n, dt](device d) {
    tensor t = detail::empty_dense({n}, dt, d, "xf::linspace");  // a negative n throws ("shape")
    if (d == cpu)
      detail::visit_dtype(dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = t.impl()->template data<T>();
        for (std::int64_t i = 0; i < n; ++i)
          p[i] = static_cast<T>(n == 1 ? a : a + (b - a) * static_cast<double>(i) / static_cast<double>(n - 1));
      });
    return t;
  }));
}
/// Uniform random values in [0, 1) (floating dtypes); under vmap, as the randomness option says.
inline tensor rand(const shape_t& shape, dtype dt, device dev) {
  return detail::random_tensor<detail::backend::distribution::uniform>(shape, dt, dev, "xf::rand");
}
/// Standard normal random values (floating dtypes); under vmap, as the randomness option says.
inline tensor randn(const shape_t& shape, dtype dt, device dev) {
  return detail::random_tensor<detail::backend::distribution::normal>(shape, dt, dev, "xf::randn");
}
/// Zeros with t's shape and dtype, on `dev` or t's device; under vmap batched like t.
inline tensor zeros_like(const tensor& t, std::optional<device> dev) {
  return detail::filled_like(t, 0.0, dev, "xf::zeros_like");
}
/// Ones with t's shape and dtype, on `dev` or t's device; under vmap batched like t.
inline tensor ones_like(const tensor& t, std::optional<device> dev) {
  return detail::filled_like(t, 1.0, dev, "xf::ones_like");
}
/// A tensor with t's shape and dtype, on `dev` or t's device, for values that will be overwritten.
inline tensor empty_like(const tensor& t, std::optional<device> dev) {
  return detail::filled_like(t, 0.0, dev, "xf::empty_like");
}
/// `v` with t's shape and dtype, on `dev` or t's device; under vmap batched like t.
inline tensor full_like(const tensor& t, double v, std::optional<device> dev) {
  return detail::filled_like(t, v, dev, "xf::full_like");
}
// Drawn as a plain random factory would be (which handles each vmap layer's randomness option),
// then made like t (batched where t is) by adding zeros like t.
/// rand() with t's shape and dtype, on `dev` or t's device; under vmap batched like t.
template <int D>
tensor rand_like(const tensor& t, std::optional<device> dev) {
  detail::require_defined(t, "xf::rand_like");
  const tensor r = rand(t.shape(), t.dtype(), dev.value_or(t.device()));
  return detail::current_stack().layers.empty() ? r : add(r, zeros_like(t, dev));
}
/// randn() with t's shape and dtype, on `dev` or t's device; under vmap batched like t.
template <int D>
tensor randn_like(const tensor& t, std::optional<device> dev) {
  detail::require_defined(t, "xf::randn_like");
  const tensor r = randn(t.shape(), t.dtype(), dev.value_or(t.device()));
  return detail::current_stack().layers.empty() ? r : add(r, zeros_like(t, dev));
}

}  // namespace xfunc

// This header's functions (D = 0 of NOTE: [Lazy instantiation]), in namespace xfunc (NOTE:
// [Precompiled composites]).
#define XFUNC_FUNCTIONS_CREATION(X) X(tensor rand_like<0>(const tensor&, std::optional<device>)) \
  X(tensor randn_like<0>(const tensor&, std::optional<device>))
namespace xfunc {
XFUNC_FUNCTIONS_CREATION(XFUNC_EXTERN_TEMPLATE)
}  // namespace xfunc
