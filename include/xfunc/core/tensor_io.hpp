#pragma once
/// \file
/// Reading values out of tensors: item(), printing, allclose/equal, to(device), xtensor interop.
#include <cmath>
#include <iomanip>
#include <ostream>
#include <type_traits>

#include <xtensor/xarray.hpp>

#include <xfunc/backend/cpu.hpp>
#include <xfunc/core/linkage.hpp>
#include <xfunc/dispatch/wrappers.hpp>
#include <xfunc/fwd.hpp>

namespace xfunc {
namespace detail {
/// The plain value behind grad and dual wrappers; batched values have none ("data-dependent").
inline const tensor& concrete_value(const tensor& t, const char* what) {
  if (!t.defined())
    fail("xf: ", what, ": operation on an undefined tensor (a default-constructed xf::tensor); assign it a value first");
  const tensor* p = &t;
  while (!p->impl()->is_dense()) {
    refresh_view(*p);
    if (p->impl()->kind == impl_kind::batched) {
      if (!p->impl()->is_live_wrapper()) fail_escaped_vmap(what);
      fail("xf: ", what, " of a batched tensor inside vmap is data-dependent: each example has its own value. "
           "Express the computation with tensor ops (e.g. xf::where instead of a branch), or move it out of vmap");
    }
    p = &p->impl()->inner;
  }
  if (p->device() == meta) fail("xf: ", what, " of a meta tensor: meta tensors have no data");
  return *p;
}
/// concrete_value on the cpu: a device's tensor is copied to the host (which waits for it).
XFUNC_RUNTIME tensor host_value(const tensor& t, const char* what);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor host_value(const tensor& t, const char* what) {
  const tensor& v = concrete_value(t, what);
  if (v.impl()->dev == cpu) return v;
  return backend_of(v.impl()->dev, what).download(v);
}
#endif
}  // namespace detail

template <class T>
T tensor::item() const {
  const tensor v = detail::host_value(*this, "item()");
  if (v.numel() != 1)
    detail::fail("xf: item() needs a tensor with exactly one element, got shape ", v.shape());
  T out{};
  detail::visit_dtype(v.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    out = static_cast<T>(v.impl()->template data<E>()[0]);
  });
  return out;
}

/// Copies any xtensor expression into a new tensor (dtype from its value type) on device `dev`.
template <class E>
tensor from_xtensor(const xt::xexpression<E>& expr, device dev = cpu) {
  using V = typename E::value_type;
  xt::xarray<V> a = expr.derived_cast();
  shape_t s(a.shape().begin(), a.shape().end());
  tensor t = detail::empty_dense(s, dtype_of<V>(), cpu, "xf::from_xtensor");
  detail::visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::copy(a.begin(), a.end(), t.impl()->template data<T>());
  });
  return dev == cpu ? t : t.to(dev);
}

/// The values of t as an xt::xarray<T>.
template <class T>
xt::xarray<T> to_xtensor(const tensor& t) {
  const tensor v = detail::host_value(t, "to_xtensor");
  std::vector<std::size_t> s(v.shape().begin(), v.shape().end());
  xt::xarray<T> out(s);
  tensor c = detail::backend::contiguous_as(v, dtype_of<T>());
  const auto* p = c.impl()->template data<std::conditional_t<std::is_same_v<T, float>, float,
      std::conditional_t<std::is_floating_point_v<T>, double, std::conditional_t<std::is_same_v<T, bool>, bool, std::int64_t>>>>();
  std::copy(p, p + v.numel(), out.begin());
  return out;
}

/// Whether a and b have the same shape and |a - b| <= atol + rtol * |b| elementwise (a NaN
/// matches nothing), compared in float64.
XFUNC_RUNTIME bool allclose(const tensor& a, const tensor& b, double rtol, double atol);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME bool allclose(const tensor& a, const tensor& b, double rtol, double atol) {
  const tensor x = detail::host_value(a, "allclose");
  const tensor y = detail::host_value(b, "allclose");
  if (!(x.shape() == y.shape())) return false;
  tensor xc = detail::backend::contiguous_as(x, f64), yc = detail::backend::contiguous_as(y, f64);
  const double* p = xc.impl()->data<double>();
  const double* q = yc.impl()->data<double>();
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(p[i]) || std::isnan(q[i])) return false;
    if (p[i] == q[i]) continue;
    if (std::abs(p[i] - q[i]) > atol + rtol * std::abs(q[i])) return false;
  }
  return true;
}
#endif

/// Whether a and b have the same shape, the same dtype and equal values.
inline bool equal(const tensor& a, const tensor& b) {
  const tensor& x = detail::concrete_value(a, "equal");
  const tensor& y = detail::concrete_value(b, "equal");
  if (!(x.shape() == y.shape()) || x.dtype() != y.dtype()) return false;
  return allclose(x, y, 0.0, 0.0);
}

namespace detail {
inline void print_values(std::ostream& os, const tensor& v) {
  tensor c = backend::contiguous_as(v, v.dtype());
  const shape_t& s = v.shape();
  const std::int64_t n = v.numel();
  visit_dtype(v.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = c.impl()->template data<T>();
    // one value; a NaN prints as "nan" whatever its sign bit (as torch and NumPy print it)
    auto put = [&](T x) {
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(x)) {
          os << "nan";
          return;
        }
      os << +x;
    };
    if (s.empty()) {
      put(p[0]);
      return;
    }
    // nested brackets, at most 6 entries per row shown ("..." elides the middle)
    std::vector<std::int64_t> idx(s.size(), 0);
    auto rec = [&](auto&& self, std::size_t d, std::int64_t base) -> void {
      os << '[';
      const std::int64_t m = s[d];
      std::int64_t stride = 1;
      for (std::size_t k = d + 1; k < s.size(); ++k) stride *= s[k];
      for (std::int64_t i = 0; i < m; ++i) {
        if (m > 6 && i == 3) {
          os << "..., ";
          i = m - 3;
        }
        if (d + 1 == s.size()) put(p[base + i]);
        else self(self, d + 1, base + i * stride);
        if (i + 1 < m) os << ", ";
      }
      os << ']';
    };
    if (n > 0) rec(rec, 0, 0);
    else os << "[]";
  });
}
}  // namespace detail

/// Prints values, shape and dtype; a transform wrapper prints as such with its parts.
inline std::ostream& operator<<(std::ostream& os, const tensor& maybe_escaped) {
  if (!maybe_escaped.defined()) return os << "tensor(undefined)";
  // A tensor that escaped a grad or jvp transform prints as its value; one that escaped a vmap
  // prints as the batched wrapper it was, marked as such.
  tensor t = maybe_escaped;
  while (detail::is_dead_wrapper(t.impl()) && t.impl()->kind != detail::impl_kind::batched)
    t = tensor(t.impl()->inner);
  const detail::tensor_impl& p = *t.impl();
  switch (p.kind) {
    case detail::impl_kind::dense:
      os << "tensor(";
      if (p.dev == meta) os << "...";
      else detail::print_values(os, detail::host_value(t, "printing"));
      os << ", shape=" << p.shape << ", dtype=" << p.dt;
      if (p.dev != cpu) os << ", device=" << p.dev;
      return os << ')';
    case detail::impl_kind::grad:
      return os << "grad_tracking(level=" << p.owner_level << ", value=" << p.inner << ')';
    case detail::impl_kind::dual:
      return os << "dual(level=" << p.owner_level << ", primal=" << p.inner << ", tangent=" << p.tangent << ')';
    case detail::impl_kind::batched:
      return os << (p.is_live_wrapper() ? "batched" : "escaped_batched") << "(level=" << p.owner_level
                << ", bdim=" << p.bdim << ", value=" << p.inner << ')';
    case detail::impl_kind::functional:
      detail::refresh_view(t);
      return os << "functional(level=" << p.owner_level << ", value=" << p.inner << ')';
  }
  return os;
}

}  // namespace xfunc
