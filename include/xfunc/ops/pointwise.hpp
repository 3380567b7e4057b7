#pragma once
/// \file
/// Pointwise ops: each with its kernel, derivative (used by both vjp and jvp) and batch rule.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <numbers>

#include <xfunc/dispatch/precompiled.hpp>
#include <xfunc/backend/cpu.hpp>
#include <xfunc/backend/fusion.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc {
namespace detail {

// NOTE: [Pointwise unary ops]
// A unary op states its per-element `fn` (NOTE: [Element math]) and its derivative
// dy/dx = derivative(x, y); the vjp is g * dy/dx and the jvp t * dy/dx, and the batch rule
// applies the op to the batched value as it is (pointwise ops do not care where the batch dim is). Math ops compute in floating
// point (integer inputs give float32); `keeps_dtype` ops (neg, abs, sign, relu, square) keep it.
/// Refuses a boolean operand of a unary op that says why in `boolean_refusal` (neg, abs: as torch).
template <class D>
void check_boolean_operand(dtype dt) {
  if constexpr (requires { D::boolean_refusal; })
    if (dt == dtype::boolean) fail(D::name, ": ", D::boolean_refusal);
}

template <class D>
struct pointwise_unary {
  using attrs = no_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs&) {
    if (tensor r = backend::defer_unary<D>(in[0]); r.defined()) return r;
    const dtype dt = in[0].dtype();
    check_boolean_operand<D>(dt);
    if constexpr (D::keeps_dtype) {
      const dtype c = dt == dtype::boolean ? dtype::int64 : dt;
      return backend::unary<backend::numeric_types>(in[0], c, c, D::fn);
    } else {
      const dtype c = promote_with_double(dt);
      return backend::unary<backend::floating_types>(in[0], c, c, D::fn);
    }
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor& out, const tensor& g, const attrs&) {
    return {sum_to(g * D::derivative(in[0], out), in[0])};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor& out, const attrs&) {
    return t[0] * D::derivative(in[0], out);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return {dispatch<D>(in, a), bdims[0]};
  }
};

template <class = void>
struct neg_op_t;
using neg_op = neg_op_t<>;
template <class>
struct neg_op_t : pointwise_unary<neg_op> {
  static constexpr const char* name = "xf::neg";
  static constexpr bool keeps_dtype = true;
  static constexpr const char* boolean_refusal =  // as torch
      "negation (the - operator) of a boolean tensor is not supported; to invert a mask use xf::logical_not, or "
      "convert it first with .to(xf::i64) or .to(xf::f32)";
  static constexpr auto fn = [](const auto& x) { return -x; };
  static tensor derivative(const tensor& x, const tensor&) { return plain_full(x.shape(), -1.0, x.dtype(), x.device()); }
};
template <class = void>
struct exp_op_t;
using exp_op = exp_op_t<>;
template <class>
struct exp_op_t : pointwise_unary<exp_op> {
  static constexpr const char* name = "xf::exp";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::exp(x); };
  static tensor derivative(const tensor&, const tensor& y) { return y; }
};
template <class = void>
struct log_op_t;
using log_op = log_op_t<>;
template <class>
struct log_op_t : pointwise_unary<log_op> {
  static constexpr const char* name = "xf::log";
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::log(x); };
  static tensor derivative(const tensor& x, const tensor&) { return reciprocal(x); }
};
template <class = void>
struct sin_op_t;
using sin_op = sin_op_t<>;
template <class>
struct sin_op_t : pointwise_unary<sin_op> {
  static constexpr const char* name = "xf::sin";
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::sin(x); };
  static tensor derivative(const tensor& x, const tensor&) { return cos(x); }
};
template <class = void>
struct cos_op_t;
using cos_op = cos_op_t<>;
template <class>
struct cos_op_t : pointwise_unary<cos_op> {
  static constexpr const char* name = "xf::cos";
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::cos(x); };
  static tensor derivative(const tensor& x, const tensor&) { return -sin(x); }
};
template <class = void>
struct tan_op_t;
using tan_op = tan_op_t<>;
template <class>
struct tan_op_t : pointwise_unary<tan_op> {
  static constexpr const char* name = "xf::tan";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::tan(x); };
  static tensor derivative(const tensor&, const tensor& y) { return 1.0 + square(y); }
};
template <class = void>
struct tanh_op_t;
using tanh_op = tanh_op_t<>;
template <class>
struct tanh_op_t : pointwise_unary<tanh_op> {
  static constexpr const char* name = "xf::tanh";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::tanh(x); };
  static tensor derivative(const tensor&, const tensor& y) { return 1.0 - square(y); }
};
template <class = void>
struct sigmoid_op_t;
using sigmoid_op = sigmoid_op_t<>;
template <class>
struct sigmoid_op_t : pointwise_unary<sigmoid_op> {
  static constexpr const char* name = "xf::sigmoid";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::lit(x, 1) / (element::lit(x, 1) + element::exp(-x)); };
  static tensor derivative(const tensor&, const tensor& y) { return y * (1.0 - y); }
};
template <class = void>
struct relu_op_t;
using relu_op = relu_op_t<>;
template <class>
struct relu_op_t : pointwise_unary<relu_op> {
  static constexpr const char* name = "xf::relu";
  static constexpr bool keeps_dtype = true;
  static constexpr auto fn = [](const auto& x) {  // NaN stays NaN, as in torch
    return element::select(element::either(x > element::lit(x, 0), element::is_nan(x)), x, element::lit(x, 0));
  };
  static tensor derivative(const tensor& x, const tensor&) { return (x > 0.0).to(x.dtype()); }
};
template <class = void>
struct abs_op_t;
using abs_op = abs_op_t<>;
template <class>
struct abs_op_t : pointwise_unary<abs_op> {
  static constexpr const char* name = "xf::abs";
  static constexpr bool keeps_dtype = true;
  static constexpr const char* boolean_refusal =  // as torch (no abs kernel for bool)
      "the absolute value of a boolean tensor is not supported; convert it first with .to(xf::i64) or .to(xf::f32)";
  static constexpr auto fn = [](const auto& x) { return element::abs(x); };
  static tensor derivative(const tensor& x, const tensor&) { return sign(x); }
};
template <class = void>
struct sqrt_op_t;
using sqrt_op = sqrt_op_t<>;
template <class>
struct sqrt_op_t : pointwise_unary<sqrt_op> {
  static constexpr const char* name = "xf::sqrt";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::sqrt(x); };
  static tensor derivative(const tensor&, const tensor& y) { return 0.5 / y; }
};
template <class = void>
struct rsqrt_op_t;
using rsqrt_op = rsqrt_op_t<>;
template <class>
struct rsqrt_op_t : pointwise_unary<rsqrt_op> {
  static constexpr const char* name = "xf::rsqrt";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::lit(x, 1) / element::sqrt(x); };
  static tensor derivative(const tensor&, const tensor& y) { return -0.5 * y * y * y; }
};
template <class = void>
struct square_op_t;
using square_op = square_op_t<>;
template <class>
struct square_op_t : pointwise_unary<square_op> {
  static constexpr const char* name = "xf::square";
  static constexpr bool keeps_dtype = true;
  static constexpr auto fn = [](const auto& x) { return x * x; };
  static tensor derivative(const tensor& x, const tensor&) { return 2.0 * x; }
};
template <class = void>
struct log1p_op_t;
using log1p_op = log1p_op_t<>;
template <class>
struct log1p_op_t : pointwise_unary<log1p_op> {
  static constexpr const char* name = "xf::log1p";
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::log1p(x); };
  static tensor derivative(const tensor& x, const tensor&) { return reciprocal(1.0 + x); }
};
template <class = void>
struct expm1_op_t;
using expm1_op = expm1_op_t<>;
template <class>
struct expm1_op_t : pointwise_unary<expm1_op> {
  static constexpr const char* name = "xf::expm1";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::expm1(x); };
  static tensor derivative(const tensor&, const tensor& y) { return y + 1.0; }
};
template <class = void>
struct sign_op_t;
using sign_op = sign_op_t<>;
template <class>
struct sign_op_t : pointwise_unary<sign_op> {
  static constexpr const char* name = "xf::sign";
  static constexpr bool keeps_dtype = true;
  static constexpr auto fn = [](const auto& x) { return element::sign(x); };
  static tensor derivative(const tensor& x, const tensor&) { return plain_zeros_like(x); }
};
template <class = void>
struct reciprocal_op_t;
using reciprocal_op = reciprocal_op_t<>;
template <class>
struct reciprocal_op_t : pointwise_unary<reciprocal_op> {
  static constexpr const char* name = "xf::reciprocal";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::lit(x, 1) / x; };
  static tensor derivative(const tensor&, const tensor& y) { return -square(y); }
};
template <class = void>
struct erf_op_t;
using erf_op = erf_op_t<>;
template <class>
struct erf_op_t : pointwise_unary<erf_op> {
  static constexpr const char* name = "xf::erf";
  static constexpr bool keeps_dtype = false;
  static constexpr auto fn = [](const auto& x) { return element::erf(x); };
  static tensor derivative(const tensor& x, const tensor&) {
    return (2.0 / std::sqrt(std::numbers::pi)) * exp(-square(x));
  }
};

/// Whether binary op D gives a boolean for these operand dtypes: add, mul, maximum and minimum
/// of two booleans do (or, and, or, and), as in torch (`bool_closed`); other integer results are
/// int64.
template <class D>
bool gives_boolean(dtype a, dtype b) {
  if constexpr (requires { D::bool_closed; }) return a == dtype::boolean && b == dtype::boolean;
  else return false;
}

// NOTE: [Pointwise binary ops]
// Binary ops broadcast; their gradients are summed back to each argument's shape and dtype
// (sum_to). The batch rule is shared: align the batched arguments (align_for_broadcast) and
// call the op itself. `partials(a, b, y)` returns (dy/da, dy/db), used by vjp and jvp alike.
template <class D>
struct pointwise_binary {
  using attrs = no_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs&) {
    const dtype c = D::compute_dtype(in[0].dtype(), in[1].dtype());
    if (gives_boolean<D>(in[0].dtype(), in[1].dtype()))  // computed in int64, each result nonzero or not
      return backend::binary<backend::compare_types>(in[0], in[1], c, dtype::boolean, D::fn, D::name);
    if constexpr (!D::types::bool_out)
      if (tensor r = backend::defer_binary<D>(in[0], in[1], c); r.defined()) return r;
    return backend::binary<typename D::types>(in[0], in[1], c, c, D::fn, D::name);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor& out, const tensor& g, const attrs&,
                         std::span<const bool> need) {
    auto [da, db] = D::partials(in[0], in[1], out);
    return {need[0] ? sum_to(g * da, in[0]) : tensor(), need[1] ? sum_to(g * db, in[1]) : tensor()};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor& out, const attrs&) {
    auto [da, db] = D::partials(in[0], in[1], out);
    if (!t[1].defined()) return t[0] * da;
    if (!t[0].defined()) return t[1] * db;
    return t[0] * da + t[1] * db;
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs& a) {
    return broadcast_batch<D>(in, bdims, B, a);
  }
};

inline dtype arithmetic_dtype(dtype a, dtype b) {
  dtype c = promote(a, b);
  return c == dtype::boolean ? dtype::int64 : c;
}
inline dtype floating_dtype(dtype a, dtype b) { return promote_with_double(promote(a, b)); }
/// sub's dtype; a boolean operand is refused, as torch refuses it.
inline dtype subtraction_dtype(dtype a, dtype b) {
  if (a == dtype::boolean || b == dtype::boolean)
    fail("xf::sub: subtraction (the - operator) with a boolean tensor is not supported; to invert a mask use "
         "xf::logical_not, or convert it first with .to(xf::i64) or .to(xf::f32)");
  return arithmetic_dtype(a, b);
}

/// The tangent t of one argument of add/sub, as a tangent of the output: broadcast to the
/// output's shape and promoted to its dtype (computed from the arguments, not the output).
template <int = 0>
tensor tangent_to_output(const tensor& t, std::span<const tensor> in) {
  const shape_t s = broadcast_shapes(in[0].shape(), in[1].shape());
  return sum_to(t.expand(s), s, arithmetic_dtype(in[0].dtype(), in[1].dtype()));
}

template <class = void>
struct add_op_t;
using add_op = add_op_t<>;
template <class>
struct add_op_t : pointwise_binary<add_op> {
  static constexpr const char* name = "xf::add";
  using types = backend::numeric_types;
  static constexpr auto compute_dtype = arithmetic_dtype;
  static constexpr bool bool_closed = true;  // (gives_boolean)
  static constexpr auto fn = [](const auto& a, const auto& b) { return a + b; };
  // add and sub need no multiplication by a constant 1
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs&) {
    return {sum_to(g, in[0]), sum_to(g, in[1])};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor&, const attrs&) {
    if (!t[1].defined()) return tangent_to_output(t[0], in);
    if (!t[0].defined()) return tangent_to_output(t[1], in);
    return t[0] + t[1];
  }
};
template <class = void>
struct sub_op_t;
using sub_op = sub_op_t<>;
template <class>
struct sub_op_t : pointwise_binary<sub_op> {
  static constexpr const char* name = "xf::sub";
  using types = backend::numeric_types;
  static constexpr auto compute_dtype = subtraction_dtype;
  static constexpr auto fn = [](const auto& a, const auto& b) { return a - b; };
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs&) {
    return {sum_to(g, in[0]), sum_to(-g, in[1])};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor&, const attrs&) {
    if (!t[1].defined()) return tangent_to_output(t[0], in);
    if (!t[0].defined()) return tangent_to_output(-t[1], in);
    return t[0] - t[1];
  }
};
template <class = void>
struct mul_op_t;
using mul_op = mul_op_t<>;
template <class>
struct mul_op_t : pointwise_binary<mul_op> {
  static constexpr const char* name = "xf::mul";
  using types = backend::numeric_types;
  static constexpr auto compute_dtype = arithmetic_dtype;
  static constexpr bool bool_closed = true;  // (gives_boolean)
  static constexpr auto fn = [](const auto& a, const auto& b) { return a * b; };
  static std::pair<tensor, tensor> partials(const tensor& a, const tensor& b, const tensor&) { return {b, a}; }
};
template <class = void>
struct div_op_t;
using div_op = div_op_t<>;
template <class>
struct div_op_t : pointwise_binary<div_op> {
  static constexpr const char* name = "xf::div";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  using types = backend::floating_types;
  static constexpr auto compute_dtype = floating_dtype;
  static constexpr auto fn = [](const auto& a, const auto& b) { return a / b; };
  static std::pair<tensor, tensor> partials(const tensor&, const tensor& b, const tensor& y) {
    tensor rb = reciprocal(b);
    return {rb, -y * rb};
  }
};
template <class = void>
struct pow_op_t;
using pow_op = pow_op_t<>;
template <class>
struct pow_op_t : pointwise_binary<pow_op> {
  static constexpr const char* name = "xf::pow";
  static constexpr bool reads_output = true;  // NOTE: [Saved outputs]
  using types = backend::numeric_types;
  static constexpr auto compute_dtype = arithmetic_dtype;  // int64 ** int64 is int64, as in torch
  static constexpr auto fn = [](const auto& a, const auto& b) { return element::pow(a, b); };
  // As torch: d/da = b a^(b-1), taken as 0 where b == 0 (0^0 included); d/db = a^b log a, taken
  // as 0 where a == 0 and b >= 0, NaN for a negative base (log a). The log reads 1 where masked,
  // so that its derivative stays finite there for higher orders.
  static std::pair<tensor, tensor> partials(const tensor& a, const tensor& b, const tensor& y) {
    const tensor zero_base = logical_and(a == 0.0, b >= 0.0);
    return {where(b == 0.0, plain_zeros_like(y), b * pow(a, b - 1.0)),
            where(zero_base, plain_zeros_like(y), y * log(where(zero_base, plain_ones_like(a), a)))};
  }
};
template <class = void>
struct maximum_op_t;
using maximum_op = maximum_op_t<>;
template <class>
struct maximum_op_t : pointwise_binary<maximum_op> {
  static constexpr const char* name = "xf::maximum";
  using types = backend::numeric_types;
  static constexpr auto compute_dtype = arithmetic_dtype;
  static constexpr bool bool_closed = true;  // (gives_boolean)
  static constexpr auto fn = [](const auto& a, const auto& b) { return element::maximum(a, b); };
  // as torch: ties split the gradient evenly, and a NaN on either side passes it to both
  static std::pair<tensor, tensor> partials(const tensor& a, const tensor& b, const tensor&) {
    const dtype dt = promote(a.dtype(), b.dtype());
    const tensor half = 0.5 * (a == b).to(dt);
    return {1.0 - (a < b).to(dt) - half, 1.0 - (a > b).to(dt) - half};
  }
};
template <class = void>
struct minimum_op_t;
using minimum_op = minimum_op_t<>;
template <class>
struct minimum_op_t : pointwise_binary<minimum_op> {
  static constexpr const char* name = "xf::minimum";
  using types = backend::numeric_types;
  static constexpr auto compute_dtype = arithmetic_dtype;
  static constexpr bool bool_closed = true;  // (gives_boolean)
  static constexpr auto fn = [](const auto& a, const auto& b) { return element::minimum(a, b); };
  // as torch: ties split the gradient evenly, and a NaN on either side passes it to both
  static std::pair<tensor, tensor> partials(const tensor& a, const tensor& b, const tensor&) {
    const dtype dt = promote(a.dtype(), b.dtype());
    const tensor half = 0.5 * (a == b).to(dt);
    return {1.0 - (a > b).to(dt) - half, 1.0 - (a < b).to(dt) - half};
  }
};
template <class = void>
struct atan2_op_t;
using atan2_op = atan2_op_t<>;
template <class>
struct atan2_op_t : pointwise_binary<atan2_op> {
  static constexpr const char* name = "xf::atan2";
  using types = backend::floating_types;
  static constexpr auto compute_dtype = floating_dtype;
  static constexpr auto fn = [](const auto& a, const auto& b) { return element::atan2(a, b); };
  static std::pair<tensor, tensor> partials(const tensor& a, const tensor& b, const tensor&) {
    tensor r = reciprocal(square(a) + square(b));
    return {b * r, -a * r};
  }
};

/// pow with a C++ double exponent: d/dx x^p = p x^(p-1).
template <class = void>
struct pow_scalar_op_t;
using pow_scalar_op = pow_scalar_op_t<>;
template <class>
struct pow_scalar_op_t {
  static constexpr const char* name = "xf::pow";
  struct attrs {
    double p;
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const dtype c = promote_with_double(in[0].dtype());
    return backend::unary<backend::floating_types>(in[0], c, c, [p = a.p](const auto& x) { return element::pow(x, element::lit(x, p)); });
  }
  static tensor derivative(const tensor& x, const attrs& a) {
    if (a.p == 0.0) return plain_zeros_like(x);  // x^0 is constant: 0 everywhere, also at x = 0 (as torch)
    if (a.p == 2.0) return 2.0 * x;
    return a.p * pow(x, a.p - 1.0);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    return {sum_to(g * derivative(in[0], a), in[0])};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0] * derivative(in[0], a);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return {dispatch<pow_scalar_op>(in, a), bdims[0]};
  }
};

/// clamp(t, lo, hi): the gradient passes where lo <= t <= hi.
template <class = void>
struct clamp_op_t;
using clamp_op = clamp_op_t<>;
template <class>
struct clamp_op_t {
  static constexpr const char* name = "xf::clamp";
  struct attrs {
    double lo, hi;
  };
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    // the bounds are doubles: an integer or boolean tensor becomes float32 (API.md section 2, torch)
    const dtype c = promote_with_double(in[0].dtype());
    // a NaN bound makes every element NaN, as in torch
    const bool nan_bound = std::isnan(a.lo) || std::isnan(a.hi);
    return backend::unary<backend::floating_types>(in[0], c, c, [a, nan_bound](const auto& x) {  // NaN stays NaN
      const auto lo = element::lit(x, a.lo), hi = element::lit(x, a.hi);
      return nan_bound ? element::lit(x, a.lo + a.hi) : element::select(x < lo, lo, element::select(hi < x, hi, x));
    });
  }
  static tensor mask(const tensor& x, const attrs& a) {
    return logical_and(x >= a.lo, x <= a.hi).to(x.dtype());
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs& a) {
    return {sum_to(g * mask(in[0], a), in[0])};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0] * mask(in[0], a);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t,
                       const attrs& a) {
    return {dispatch<clamp_op>(in, a), bdims[0]};
  }
};

/// where(cond, a, b): cond is not differentiable; gradients are routed by cond.
template <class = void>
struct where_op_t;
using where_op = where_op_t<>;
template <class>
struct where_op_t {
  static constexpr const char* name = "xf::where";
  static constexpr bool reads_output = true;  // jvp; NOTE: [Saved outputs]
  using attrs = no_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs&) {
    const tensor &c = in[0], &a = in[1], &b = in[2];
    if (c.dtype() != dtype::boolean)  // as torch: a number is not silently read as a truth value
      fail(name, ": the condition must be a boolean tensor, got ", c.dtype(),
           "; compare it first, e.g. xf::where(c != 0.0, a, b)");
    const dtype dt = promote(a.dtype(), b.dtype());
    shape_t shape = broadcast_shapes(broadcast_shapes(c.shape(), a.shape(), name), b.shape(), name);
    if (c.device() == meta || a.device() == meta || b.device() == meta) return backend::meta_like(shape, dt, name);
    check_shape(shape, name, dtype_size(dt));  // before the operands are broadcast to it
    return backend::where(c, a, b, shape, dt, name);
  }
  static tensor_list vjp(std::span<const tensor> in, const tensor&, const tensor& g, const attrs&) {
    tensor z = plain_zeros_like(g);
    return {tensor(), sum_to(where(in[0], g, z), in[1]), sum_to(where(in[0], z, g), in[2])};
  }
  static tensor jvp(std::span<const tensor> in, std::span<const tensor> t, const tensor& out, const attrs&) {
    tensor ta = t[1].defined() ? t[1] : plain_zeros_like(out);
    tensor tb = t[2].defined() ? t[2] : plain_zeros_like(out);
    return where(in[0], ta, tb);
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const attrs& a) {
    return broadcast_batch<where_op>(in, bdims, B, a);
  }
};

// NOTE: [Zero-dim operands in type promotion]
// As in torch, a 0-d tensor next to a tensor with dimensions does not widen it within the same
// category: f32 [n] * f64 0-d is f32 (a 0-d tensor of a higher category still wins: i64 [n] *
// f64 0-d is f64, as promote() gives). Among xfunc's dtypes the only case where this differs from
// promote() is a float32 tensor with dimensions next to a 0-d float64 one; the 0-d operand is
// cast (differentiably: its gradient comes back as float64) before the op is dispatched. This
// happens on the logical tensors, before any transform layer, so vmap and a loop agree.
template <int = 0>
tensor zero_dim_operand(const tensor& z, const tensor& other) {
  if (!z.defined() || !other.defined()) [[unlikely]] return z;  // the op's dispatch names the error
  return z.dim() == 0 && other.dim() > 0 && z.dtype() == dtype::float64 && other.dtype() == dtype::float32
             ? z.to(dtype::float32)
             : z;
}
}  // namespace detail

#define XFUNC_UNARY(fname, op) \
  template <int D>             \
  tensor fname(const tensor& x) { return detail::call<detail::op>({}, x); }
XFUNC_UNARY(neg, neg_op)
XFUNC_UNARY(exp, exp_op)
XFUNC_UNARY(log, log_op)
XFUNC_UNARY(sin, sin_op)
XFUNC_UNARY(cos, cos_op)
XFUNC_UNARY(tan, tan_op)
XFUNC_UNARY(tanh, tanh_op)
XFUNC_UNARY(sigmoid, sigmoid_op)
XFUNC_UNARY(relu, relu_op)
XFUNC_UNARY(abs, abs_op)
XFUNC_UNARY(sqrt, sqrt_op)
XFUNC_UNARY(rsqrt, rsqrt_op)
XFUNC_UNARY(square, square_op)
XFUNC_UNARY(log1p, log1p_op)
XFUNC_UNARY(expm1, expm1_op)
XFUNC_UNARY(sign, sign_op)
XFUNC_UNARY(reciprocal, reciprocal_op)
XFUNC_UNARY(erf, erf_op)
#undef XFUNC_UNARY

#define XFUNC_BINARY(fname, op)                                                                          \
  template <int D>                                                                                       \
  tensor fname(const tensor& a, const tensor& b) {                                                       \
    return detail::call<detail::op>({}, detail::zero_dim_operand(a, b), detail::zero_dim_operand(b, a));  \
  }                                                                                                      \
  template <int D>                                                                                       \
  tensor fname(const tensor& a, double b) { return fname(a, detail::scalar_like(b, a)); }               \
  template <int D>                                                                                       \
  tensor fname(double a, const tensor& b) { return fname(detail::scalar_like(a, b), b); }
XFUNC_BINARY(add, add_op)
XFUNC_BINARY(sub, sub_op)
XFUNC_BINARY(mul, mul_op)
XFUNC_BINARY(div, div_op)
#undef XFUNC_BINARY

///@{
/// a raised to the power b elementwise, broadcasting; either side may be a double
/// (`pow(t, 2.0)`, `pow(2.0, t)`).
template <int D>
tensor pow(const tensor& a, const tensor& b) {
  return detail::call<detail::pow_op>({}, detail::zero_dim_operand(a, b), detail::zero_dim_operand(b, a));
}
template <int D>
tensor pow(const tensor& a, double b) { return detail::call<detail::pow_scalar_op>({b}, a); }
template <int D>
tensor pow(double a, const tensor& b) { return pow(detail::scalar_like(a, b), b); }
///@}
/// Elementwise larger of a and b, broadcasting.
template <int D>
tensor maximum(const tensor& a, const tensor& b) {
  return detail::call<detail::maximum_op>({}, detail::zero_dim_operand(a, b), detail::zero_dim_operand(b, a));
}
/// Elementwise smaller of a and b, broadcasting.
template <int D>
tensor minimum(const tensor& a, const tensor& b) {
  return detail::call<detail::minimum_op>({}, detail::zero_dim_operand(a, b), detail::zero_dim_operand(b, a));
}
/// Elementwise angle of the point (b, a), atan(a / b) in the right quadrant, broadcasting.
template <int D>
tensor atan2(const tensor& a, const tensor& b) {
  return detail::call<detail::atan2_op>({}, detail::zero_dim_operand(a, b), detail::zero_dim_operand(b, a));
}
/// Elementwise `cond ? a : b`, the three broadcast together (cond boolean, as in torch);
/// differentiable in a and b.
template <int D>
tensor where(const tensor& cond, const tensor& a, const tensor& b) {
  return detail::call<detail::where_op>({}, cond, detail::zero_dim_operand(a, b), detail::zero_dim_operand(b, a));
}
/// Each element of t limited to [lo, hi] (lo must not exceed hi; the gradient is zero where
/// an element was clamped). An integer or boolean t gives float32, as any op of it with a double.
template <int D>
tensor clamp(const tensor& t, double lo, double hi) {
  if (lo > hi) detail::fail("xf::clamp: lo (", lo, ") must not exceed hi (", hi, ")");
  detail::require_defined(t, "xf::clamp");
  return detail::call<detail::clamp_op>({lo, hi}, t);
}

}  // namespace xfunc

// This header's ops, precompiled by xfunc::kernels (NOTE: [Precompiled kernels]), in two lists so
// that the library builds them in two translation units.
#define XFUNC_OPS_POINTWISE_UNARY(X) X(neg_op) X(exp_op) X(log_op) X(sin_op) X(cos_op) X(tan_op) X(tanh_op) \
  X(sigmoid_op) X(relu_op) X(abs_op) X(sqrt_op) X(rsqrt_op) X(square_op) X(log1p_op) X(expm1_op) X(sign_op) \
  X(reciprocal_op) X(erf_op) X(pow_scalar_op) X(clamp_op)
#define XFUNC_OPS_POINTWISE_BINARY(X) X(add_op) X(sub_op) X(mul_op) X(div_op) X(pow_op) X(maximum_op) \
  X(minimum_op) X(atan2_op) X(where_op)
namespace xfunc::detail {
XFUNC_OPS_POINTWISE_UNARY(XFUNC_EXTERN_DISPATCH)
XFUNC_OPS_POINTWISE_BINARY(XFUNC_EXTERN_DISPATCH)
}  // namespace xfunc::detail
// Its functions (D = 0 of NOTE: [Lazy instantiation]), in namespace xfunc (NOTE: [Precompiled
// composites]).
#define XFUNC_FUNCTIONS_POINTWISE_UNARY(X)                                                              \
  X(tensor neg<0>(const tensor&)) X(tensor exp<0>(const tensor&)) X(tensor log<0>(const tensor&))       \
  X(tensor sin<0>(const tensor&)) X(tensor cos<0>(const tensor&)) X(tensor tan<0>(const tensor&))       \
  X(tensor tanh<0>(const tensor&)) X(tensor sigmoid<0>(const tensor&)) X(tensor relu<0>(const tensor&)) \
  X(tensor abs<0>(const tensor&)) X(tensor sqrt<0>(const tensor&)) X(tensor rsqrt<0>(const tensor&))    \
  X(tensor square<0>(const tensor&)) X(tensor log1p<0>(const tensor&))                                  \
  X(tensor expm1<0>(const tensor&)) X(tensor sign<0>(const tensor&))                                    \
  X(tensor reciprocal<0>(const tensor&)) X(tensor erf<0>(const tensor&))                                \
  X(tensor pow<0>(const tensor&, double)) X(tensor clamp<0>(const tensor&, double, double))
#define XFUNC_FUNCTIONS_POINTWISE_BINARY(X)                                                             \
  X(tensor add<0>(const tensor&, const tensor&)) X(tensor add<0>(double, const tensor&))                \
  X(tensor sub<0>(const tensor&, const tensor&)) X(tensor sub<0>(double, const tensor&))                \
  X(tensor mul<0>(const tensor&, const tensor&)) X(tensor mul<0>(double, const tensor&))                \
  X(tensor div<0>(const tensor&, const tensor&)) X(tensor div<0>(double, const tensor&))                \
  X(tensor pow<0>(const tensor&, const tensor&)) X(tensor pow<0>(double, const tensor&))                \
  X(tensor add<0>(const tensor&, double)) X(tensor sub<0>(const tensor&, double))                       \
  X(tensor mul<0>(const tensor&, double)) X(tensor div<0>(const tensor&, double))                       \
  X(tensor maximum<0>(const tensor&, const tensor&)) X(tensor minimum<0>(const tensor&, const tensor&)) \
  X(tensor atan2<0>(const tensor&, const tensor&))                                                      \
  X(tensor where<0>(const tensor&, const tensor&, const tensor&))                                       \
  X(tensor detail::zero_dim_operand<0>(const tensor&, const tensor&))
namespace xfunc {
XFUNC_FUNCTIONS_POINTWISE_UNARY(XFUNC_EXTERN_TEMPLATE)
XFUNC_FUNCTIONS_POINTWISE_BINARY(XFUNC_EXTERN_TEMPLATE)
}  // namespace xfunc
