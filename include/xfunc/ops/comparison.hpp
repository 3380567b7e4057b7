#pragma once
/// \file
/// Comparison and logical ops: boolean results, never differentiable (no vjp/jvp: the grad and
/// jvp layers return their result untracked).
#include <xfunc/dispatch/precompiled.hpp>
#include <xfunc/backend/cpu.hpp>
#include <xfunc/ops/pointwise.hpp>

namespace xfunc {
namespace detail {

template <class D>
struct comparison_op {
  using attrs = no_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs&) {
    const dtype c = arithmetic_dtype(in[0].dtype(), in[1].dtype());
    return backend::binary<backend::compare_types>(in[0], in[1], c, dtype::boolean, D::fn, D::name);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs& a) {
    return broadcast_batch<D>(in, bdims, B, a);
  }
};

template <class = void>
struct eq_op_t;
using eq_op = eq_op_t<>;
template <class>
struct eq_op_t : comparison_op<eq_op> {
  static constexpr const char* name = "xf::eq";
  static constexpr auto fn = [](const auto& a, const auto& b) { return a == b; };
};
template <class = void>
struct ne_op_t;
using ne_op = ne_op_t<>;
template <class>
struct ne_op_t : comparison_op<ne_op> {
  static constexpr const char* name = "xf::ne";
  static constexpr auto fn = [](const auto& a, const auto& b) { return element::not_equal(a, b); };
};
template <class = void>
struct lt_op_t;
using lt_op = lt_op_t<>;
template <class>
struct lt_op_t : comparison_op<lt_op> {
  static constexpr const char* name = "xf::lt";
  static constexpr auto fn = [](const auto& a, const auto& b) { return a < b; };
};
template <class = void>
struct le_op_t;
using le_op = le_op_t<>;
template <class>
struct le_op_t : comparison_op<le_op> {
  static constexpr const char* name = "xf::le";
  static constexpr auto fn = [](const auto& a, const auto& b) { return a <= b; };
};
template <class = void>
struct gt_op_t;
using gt_op = gt_op_t<>;
template <class>
struct gt_op_t : comparison_op<gt_op> {
  static constexpr const char* name = "xf::gt";
  static constexpr auto fn = [](const auto& a, const auto& b) { return a > b; };
};
template <class = void>
struct ge_op_t;
using ge_op = ge_op_t<>;
template <class>
struct ge_op_t : comparison_op<ge_op> {
  static constexpr const char* name = "xf::ge";
  static constexpr auto fn = [](const auto& a, const auto& b) { return a >= b; };
};
template <class = void>
struct logical_and_op_t;
using logical_and_op = logical_and_op_t<>;
template <class>
struct logical_and_op_t : comparison_op<logical_and_op> {
  static constexpr const char* name = "xf::logical_and";
  static constexpr auto fn = [](const auto& a, const auto& b) {
    return element::not_equal(a, element::lit(a, 0)) && element::not_equal(b, element::lit(b, 0));
  };
};
template <class = void>
struct logical_or_op_t;
using logical_or_op = logical_or_op_t<>;
template <class>
struct logical_or_op_t : comparison_op<logical_or_op> {
  static constexpr const char* name = "xf::logical_or";
  static constexpr auto fn = [](const auto& a, const auto& b) {
    return element::not_equal(a, element::lit(a, 0)) || element::not_equal(b, element::lit(b, 0));
  };
};
template <class = void>
struct logical_not_op_t;
using logical_not_op = logical_not_op_t<>;
template <class>
struct logical_not_op_t {
  static constexpr const char* name = "xf::logical_not";
  using attrs = no_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs&) {
    const dtype c = in[0].dtype() == dtype::boolean ? dtype::int64 : in[0].dtype();
    return backend::unary<backend::compare_types>(in[0], c, dtype::boolean, [](const auto& x) { return x == element::lit(x, 0); });
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return {dispatch<logical_not_op>(in, a), bdims[0]};
  }
};

/// A double compared with a tensor keeps the tensor's dtype (integers compare exactly).
inline tensor compare_scalar(double v, const tensor& t) {
  return t.defined() && is_floating(t.dtype()) ? scalar_like(v, t) : scalar(v);  // (undefined: the op says so)
}
}  // namespace detail

#define XFUNC_COMPARE(fname, op)                                                                            \
  template <int D>                                                                                          \
  tensor fname(const tensor& a, const tensor& b) {                                                          \
    return detail::call<detail::op>({}, detail::zero_dim_operand(a, b), detail::zero_dim_operand(b, a));     \
  }                                                                                                         \
  template <int D>                                                                                          \
  tensor fname(const tensor& a, double b) { return fname(a, detail::compare_scalar(b, a)); }
XFUNC_COMPARE(eq, eq_op)
XFUNC_COMPARE(ne, ne_op)
XFUNC_COMPARE(lt, lt_op)
XFUNC_COMPARE(le, le_op)
XFUNC_COMPARE(gt, gt_op)
XFUNC_COMPARE(ge, ge_op)
#undef XFUNC_COMPARE

/// Boolean tensor: a and b are both nonzero, elementwise, broadcasting.
template <int D>
tensor logical_and(const tensor& a, const tensor& b) { return detail::call<detail::logical_and_op>({}, a, b); }
/// Boolean tensor: a or b is nonzero, elementwise, broadcasting.
template <int D>
tensor logical_or(const tensor& a, const tensor& b) { return detail::call<detail::logical_or_op>({}, a, b); }
/// Boolean tensor: a is zero, elementwise.
template <int D>
tensor logical_not(const tensor& a) { return detail::call<detail::logical_not_op>({}, a); }

}  // namespace xfunc

// This header's ops, precompiled by xfunc::kernels (NOTE: [Precompiled kernels]).
#define XFUNC_OPS_COMPARISON(X) X(eq_op) X(ne_op) X(lt_op) X(le_op) X(gt_op) X(ge_op) X(logical_and_op) \
  X(logical_or_op) X(logical_not_op)
namespace xfunc::detail {
XFUNC_OPS_COMPARISON(XFUNC_EXTERN_DISPATCH)
}  // namespace xfunc::detail
// Its functions (D = 0 of NOTE: [Lazy instantiation]), in namespace xfunc (NOTE: [Precompiled
// composites]).
#define XFUNC_FUNCTIONS_COMPARISON(X)                                                           \
  X(tensor eq<0>(const tensor&, const tensor&)) X(tensor eq<0>(const tensor&, double))          \
  X(tensor ne<0>(const tensor&, const tensor&)) X(tensor ne<0>(const tensor&, double))          \
  X(tensor lt<0>(const tensor&, const tensor&)) X(tensor lt<0>(const tensor&, double))          \
  X(tensor le<0>(const tensor&, const tensor&)) X(tensor le<0>(const tensor&, double))          \
  X(tensor gt<0>(const tensor&, const tensor&)) X(tensor gt<0>(const tensor&, double))          \
  X(tensor ge<0>(const tensor&, const tensor&)) X(tensor ge<0>(const tensor&, double))          \
  X(tensor logical_and<0>(const tensor&, const tensor&))                                        \
  X(tensor logical_or<0>(const tensor&, const tensor&)) X(tensor logical_not<0>(const tensor&))
namespace xfunc {
XFUNC_FUNCTIONS_COMPARISON(XFUNC_EXTERN_TEMPLATE)
}  // namespace xfunc
