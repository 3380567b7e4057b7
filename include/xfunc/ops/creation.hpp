#pragma once
// Factories. They make plain tensors (also inside vmap: factories are not batched); random
// factories consult the vmap layers on the stack for their randomness option.
#include <cmath>
#include <mutex>
#include <random>

#include <xfunc/backend/cpu.hpp>
#include <xfunc/dispatch/layer_stack.hpp>
#include <xfunc/dispatch/trace.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc {
namespace detail {

/// A tensor of `shape` filled with v; `fn` (the factory) names the call in errors.
inline tensor filled(const shape_t& shape, double v, dtype dt, device dev, const char* fn) {
  tensor t = empty_dense(shape, dt, dev, fn);  // checks the shape (NOTE: [Checked shape arithmetic])
  if (dev == meta && tls_trace)  // traced (make_fx): the replay makes the values
    return tls_trace->record_factory("xf::full", t, [shape, v, dt] { return filled(shape, v, dt, cpu, "xf::full"); });
  if (dev == cpu)
    visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = t.impl()->template data<T>();
      std::fill(p, p + t.numel(), static_cast<T>(v));
    });
  return t;
}

// NOTE: [Random numbers]
// One process-wide generator, seeded by xf::manual_seed and locked while drawing, so results
// are reproducible for a given seed and call order. Under vmap, random factories look at every
// vmap layer on the stack (outermost first): randomness::error throws, ::same draws one value
// for that layer's whole batch, ::different draws one per example (the value gets that layer's
// batch dim).
struct rng_state {
  std::mutex mu;
  std::mt19937_64 gen{0x5eed};
};
inline rng_state& rng() {
  static rng_state s;
  return s;
}

template <class Dist>
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
  shape_t full_shape = shape;
  for (auto it = per_example.rbegin(); it != per_example.rend(); ++it) full_shape.insert(0, (*it)->batch_size);
  tensor t = empty_dense(full_shape, dt, dev, name);
  if (dev == meta && tls_trace)
    t = tls_trace->record_factory(name, t, [full_shape, dt] { return random_tensor<Dist>(full_shape, dt, cpu, ""); });
  if (dev == cpu) {
    std::lock_guard<std::mutex> lock(rng().mu);
    Dist dist;
    visit_floating(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = t.impl()->template data<T>();
      for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(dist(rng().gen));
    });
  }
  for (const auto& l : per_example) t = wrap_batched(t, 0, l);
  return t;
}
}  // namespace detail

inline void manual_seed(std::uint64_t seed) {
  std::lock_guard<std::mutex> lock(detail::rng().mu);
  detail::rng().gen.seed(seed);
}

inline tensor zeros(const shape_t& shape, dtype dt, device dev) {
  return detail::filled(shape, 0.0, dt, dev, "xf::zeros");
}
inline tensor ones(const shape_t& shape, dtype dt, device dev) {
  return detail::filled(shape, 1.0, dt, dev, "xf::ones");
}
inline tensor empty(const shape_t& shape, dtype dt, device dev) {
  return detail::filled(shape, 0.0, dt, dev, "xf::empty");
}
inline tensor full(const shape_t& shape, double value, dtype dt, device dev) {
  return detail::filled(shape, value, dt, dev, "xf::full");
}
inline tensor eye(std::int64_t n, dtype dt, device dev) {
  // [n, n]: a negative n, or n * n elements that do not fit, throws ("shape")
  if (dev == meta && detail::tls_trace)
    return detail::tls_trace->record_factory("xf::eye", detail::empty_dense({n, n}, dt, meta, "xf::eye"),
                                             [n, dt] { return eye(n, dt, cpu); });
  tensor t = detail::filled({n, n}, 0.0, dt, dev, "xf::eye");
  if (dev == cpu)
    detail::visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = t.impl()->template data<T>();
      for (std::int64_t i = 0; i < n; ++i) p[i * n + i] = T(1);
    });
  return t;
}
inline tensor arange(double start, double end, double step, dtype dt, device dev) {
  if (step == 0) detail::fail("xf::arange: step must be nonzero");
  // the length ceil((end - start) / step) must be a finite count that fits in int64_t (a
  // double-to-integer conversion out of range would be undefined behaviour)
  const double len = std::ceil((end - start) / step);
  if (!(len < 9223372036854775808.0))  // 2^63; also NaN
    detail::fail("xf::arange: shape [", len, "] (the length ceil((end - start) / step) for start ", start, ", end ",
                 end, ", step ", step, ") ",
                 std::isnan(len) ? "is not a number; start, end and step must be finite"
                                 : "has more elements than int64_t can hold; use a smaller range or a larger step");
  const auto n = static_cast<std::int64_t>(std::max(0.0, len));
  tensor t = detail::empty_dense({n}, dt, dev, "xf::arange");
  if (dev == cpu)
    detail::visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = t.impl()->template data<T>();
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
    });
  return t;
}
inline tensor arange(std::int64_t end) { return arange(0.0, static_cast<double>(end), 1.0, i64, cpu); }
inline tensor linspace(double a, double b, std::int64_t n, dtype dt, device dev) {
  tensor t = detail::empty_dense({n}, dt, dev, "xf::linspace");  // a negative n throws ("shape")
  if (dev == cpu)
    detail::visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = t.impl()->template data<T>();
      for (std::int64_t i = 0; i < n; ++i)
        p[i] = static_cast<T>(n == 1 ? a : a + (b - a) * static_cast<double>(i) / static_cast<double>(n - 1));
    });
  return t;
}
inline tensor rand(const shape_t& shape, dtype dt, device dev) {
  return detail::random_tensor<std::uniform_real_distribution<double>>(shape, dt, dev, "xf::rand");
}
inline tensor randn(const shape_t& shape, dtype dt, device dev) {
  return detail::random_tensor<std::normal_distribution<double>>(shape, dt, dev, "xf::randn");
}
inline tensor zeros_like(const tensor& t) {
  return detail::filled(t.shape(), 0.0, t.dtype(), t.device(), "xf::zeros_like");
}
inline tensor ones_like(const tensor& t) {
  return detail::filled(t.shape(), 1.0, t.dtype(), t.device(), "xf::ones_like");
}
inline tensor empty_like(const tensor& t) {
  return detail::filled(t.shape(), 0.0, t.dtype(), t.device(), "xf::empty_like");
}
inline tensor full_like(const tensor& t, double v) {
  return detail::filled(t.shape(), v, t.dtype(), t.device(), "xf::full_like");
}
inline tensor rand_like(const tensor& t) {
  return detail::random_tensor<std::uniform_real_distribution<double>>(t.shape(), t.dtype(), t.device(),
                                                                      "xf::rand_like");
}
inline tensor randn_like(const tensor& t) {
  return detail::random_tensor<std::normal_distribution<double>>(t.shape(), t.dtype(), t.device(), "xf::randn_like");
}

}  // namespace xfunc
