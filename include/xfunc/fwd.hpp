#pragma once
/// \file
/// Declarations of every public op, so that rules in one op family can use ops of another
/// (backward formulas are written with xfunc ops) without include cycles.
#include <cstdint>
#include <optional>
#include <vector>

#include <xfunc/core/tensor.hpp>

/// Everything public in xfunc (examples write `namespace xf = xfunc;`): xf::tensor and its ops,
/// the function transforms (xf::grad, xf::vjp, xf::jvp, xf::vmap, ...) with their options, and
/// the extension points (xf::custom_op, xf::autograd::function, xf::higher_order_op).
/// Implementation lives in xfunc::detail and is not part of the API.
namespace xfunc {

// NOTE: [Lazy instantiation]
// Every op that dispatches is a function template with one defaulted, unused parameter
// (`template <int D = 0> tensor exp(const tensor&)`), and so are the tensor methods, operators
// and internal helpers that call ops; op structs are class templates (`exp_op` is an alias of
// `exp_op_t<>`). A template used in the body of a non-template inline function is instantiated
// in every translation unit that sees the function, called or not; used in the body of a
// template it is instantiated only when that template is. So a translation unit pays for the
// ops it (transitively) uses: their dispatch, rules and kernels for every dtype. The parameter
// types do not depend on D, so calls look and convert exactly as for plain functions
// (`xf::add(t, 2.0)`, `t + 1.0`, `t.reshape({2, 3})`). Keep it so: a non-template function that
// calls an op (or a function with a deduced `auto` return type called from a template) brings
// that op's whole closure back into every translation unit; benchmarks/jacobians/compile_time
// measures it. The definitions repeat `template <int D>` without the default.

// pointwise unary (ops/pointwise.hpp)
/// Elementwise negation, -x (also unary `-`).
template <int D = 0>
tensor neg(const tensor& x);
/// Elementwise exponential, e^x.
template <int D = 0>
tensor exp(const tensor& x);
/// Elementwise natural logarithm.
template <int D = 0>
tensor log(const tensor& x);
/// Elementwise sine.
template <int D = 0>
tensor sin(const tensor& x);
/// Elementwise cosine.
template <int D = 0>
tensor cos(const tensor& x);
/// Elementwise tangent.
template <int D = 0>
tensor tan(const tensor& x);
/// Elementwise hyperbolic tangent.
template <int D = 0>
tensor tanh(const tensor& x);
/// Elementwise logistic sigmoid, 1 / (1 + e^-x).
template <int D = 0>
tensor sigmoid(const tensor& x);
/// Elementwise max(x, 0) (gradient 0 where x <= 0).
template <int D = 0>
tensor relu(const tensor& x);
/// Elementwise absolute value.
template <int D = 0>
tensor abs(const tensor& x);
/// Elementwise square root.
template <int D = 0>
tensor sqrt(const tensor& x);
/// Elementwise reciprocal square root, 1 / sqrt(x).
template <int D = 0>
tensor rsqrt(const tensor& x);
/// Elementwise square, x * x.
template <int D = 0>
tensor square(const tensor& x);
/// Elementwise log(1 + x), accurate for small x.
template <int D = 0>
tensor log1p(const tensor& x);
/// Elementwise e^x - 1, accurate for small x.
template <int D = 0>
tensor expm1(const tensor& x);
/// Elementwise sign: -1, 0 or 1 (gradient 0).
template <int D = 0>
tensor sign(const tensor& x);
/// Elementwise reciprocal, 1 / x.
template <int D = 0>
tensor reciprocal(const tensor& x);
/// Elementwise Gauss error function.
template <int D = 0>
tensor erf(const tensor& x);

// pointwise binary (ops/pointwise.hpp); a double on either side is a 0-d tensor that does not
// widen a floating tensor
///@{
/// Elementwise sum a + b (also `+`), broadcasting like NumPy.
template <int D = 0>
tensor add(const tensor& a, const tensor& b);
template <int D = 0>
tensor add(const tensor& a, double b);
template <int D = 0>
tensor add(double a, const tensor& b);
///@}
///@{
/// Elementwise difference a - b (also binary `-`), broadcasting like NumPy.
template <int D = 0>
tensor sub(const tensor& a, const tensor& b);
template <int D = 0>
tensor sub(const tensor& a, double b);
template <int D = 0>
tensor sub(double a, const tensor& b);
///@}
///@{
/// Elementwise product a * b (also `*`), broadcasting like NumPy.
template <int D = 0>
tensor mul(const tensor& a, const tensor& b);
template <int D = 0>
tensor mul(const tensor& a, double b);
template <int D = 0>
tensor mul(double a, const tensor& b);
///@}
///@{
/// Elementwise quotient a / b (also `/`), broadcasting like NumPy; true division (integer
/// operands give float32).
template <int D = 0>
tensor div(const tensor& a, const tensor& b);
template <int D = 0>
tensor div(const tensor& a, double b);
template <int D = 0>
tensor div(double a, const tensor& b);
///@}
template <int D = 0>
tensor pow(const tensor& a, const tensor& b);
template <int D = 0>
tensor pow(const tensor& a, double b);
template <int D = 0>
tensor pow(double a, const tensor& b);
template <int D = 0>
tensor maximum(const tensor& a, const tensor& b);
template <int D = 0>
tensor minimum(const tensor& a, const tensor& b);
template <int D = 0>
tensor atan2(const tensor& a, const tensor& b);
template <int D = 0>
tensor where(const tensor& cond, const tensor& a, const tensor& b);
template <int D = 0>
tensor clamp(const tensor& t, double lo, double hi);

// comparison and logical (ops/comparison.hpp): boolean results, never differentiable
/// Boolean tensor: a equal to b elementwise (also `==`), broadcasting.
template <int D = 0>
tensor eq(const tensor& a, const tensor& b);
/// Boolean tensor: a not equal to b elementwise (also `!=`), broadcasting.
template <int D = 0>
tensor ne(const tensor& a, const tensor& b);
/// Boolean tensor: a less than b elementwise (also `<`), broadcasting.
template <int D = 0>
tensor lt(const tensor& a, const tensor& b);
/// Boolean tensor: a less than or equal to b elementwise (also `<=`), broadcasting.
template <int D = 0>
tensor le(const tensor& a, const tensor& b);
/// Boolean tensor: a greater than b elementwise (also `>`), broadcasting.
template <int D = 0>
tensor gt(const tensor& a, const tensor& b);
/// Boolean tensor: a greater than or equal to b elementwise (also `>=`), broadcasting.
template <int D = 0>
tensor ge(const tensor& a, const tensor& b);
/// Boolean tensor: a equal to the scalar b elementwise (also `==`).
template <int D = 0>
tensor eq(const tensor& a, double b);
/// Boolean tensor: a not equal to the scalar b elementwise (also `!=`).
template <int D = 0>
tensor ne(const tensor& a, double b);
/// Boolean tensor: a less than the scalar b elementwise (also `<`).
template <int D = 0>
tensor lt(const tensor& a, double b);
/// Boolean tensor: a less than or equal to the scalar b elementwise (also `<=`).
template <int D = 0>
tensor le(const tensor& a, double b);
/// Boolean tensor: a greater than the scalar b elementwise (also `>`).
template <int D = 0>
tensor gt(const tensor& a, double b);
/// Boolean tensor: a greater than or equal to the scalar b elementwise (also `>=`).
template <int D = 0>
tensor ge(const tensor& a, double b);
///@{
/// The comparisons with the scalar on the left: `lt(a, t)` is `a < t`, so `gt(t, a)`.
template <int D = 0>
tensor eq(double a, const tensor& b) { return eq(b, a); }
template <int D = 0>
tensor ne(double a, const tensor& b) { return ne(b, a); }
template <int D = 0>
tensor lt(double a, const tensor& b) { return gt(b, a); }
template <int D = 0>
tensor le(double a, const tensor& b) { return ge(b, a); }
template <int D = 0>
tensor gt(double a, const tensor& b) { return lt(b, a); }
template <int D = 0>
tensor ge(double a, const tensor& b) { return le(b, a); }
///@}
template <int D = 0>
tensor logical_not(const tensor& a);
template <int D = 0>
tensor logical_and(const tensor& a, const tensor& b);
template <int D = 0>
tensor logical_or(const tensor& a, const tensor& b);

// reductions (ops/reduction.hpp)
template <int D = 0>
tensor sum(const tensor& t);
template <int D = 0>
tensor sum(const tensor& t, const dims_t& dims, bool keepdim = false);
template <int D = 0>
tensor mean(const tensor& t);
template <int D = 0>
tensor mean(const tensor& t, const dims_t& dims, bool keepdim = false);
template <int D = 0>
tensor prod(const tensor& t, std::int64_t dim, bool keepdim = false);
template <int D = 0>
tensor amax(const tensor& t, const dims_t& dims, bool keepdim = false);
template <int D = 0>
tensor amin(const tensor& t, const dims_t& dims, bool keepdim = false);
template <int D = 0>
tensor argmax(const tensor& t, std::int64_t dim, bool keepdim = false);
template <int D = 0>
tensor logsumexp(const tensor& t, const dims_t& dims, bool keepdim = false);
template <int D = 0>
tensor var(const tensor& t, const dims_t& dims, std::int64_t correction = 1, bool keepdim = false);
template <int D = 0>
tensor norm(const tensor& t);

// neural-network helpers (ops/nn.hpp)
template <int D = 0>
tensor softmax(const tensor& t, std::int64_t dim);
template <int D = 0>
tensor log_softmax(const tensor& t, std::int64_t dim);
template <int D = 0>
tensor cross_entropy(const tensor& logits, const tensor& target);
template <int D = 0>
tensor mse_loss(const tensor& a, const tensor& b);
template <int D = 0>
tensor linear(const tensor& x, const tensor& w, const tensor& b);

// linear algebra (ops/linalg.hpp)
template <int D = 0>
tensor matmul(const tensor& a, const tensor& b);
template <int D = 0>
tensor dot(const tensor& a, const tensor& b);
template <int D = 0>
tensor outer(const tensor& a, const tensor& b);
template <int D = 0>
tensor mm(const tensor& a, const tensor& b);
template <int D = 0>
tensor mv(const tensor& a, const tensor& b);
template <int D = 0>
tensor bmm(const tensor& a, const tensor& b);

// shape and indexing (ops/view.hpp, ops/indexing.hpp)
template <int D = 0>
tensor cat(const std::vector<tensor>& ts, std::int64_t dim = 0);
template <int D = 0>
tensor stack(const std::vector<tensor>& ts, std::int64_t dim);
template <int D = 0>
std::vector<tensor> split(const tensor& t, std::int64_t size, std::int64_t dim = 0);
template <int D = 0>
tensor flip(const tensor& t, const dims_t& dims);
template <int D = 0>
tensor index_select(const tensor& t, std::int64_t dim, const tensor& index);
template <int D = 0>
tensor gather(const tensor& t, std::int64_t dim, const tensor& index);
template <int D = 0>
tensor stop_gradient(const tensor& t);

// creation (ops/creation.hpp)
tensor zeros(const shape_t& shape, dtype dt = f32, device dev = cpu);
tensor ones(const shape_t& shape, dtype dt = f32, device dev = cpu);
tensor empty(const shape_t& shape, dtype dt = f32, device dev = cpu);
tensor full(const shape_t& shape, double value, dtype dt = f32, device dev = cpu);
tensor eye(std::int64_t n, dtype dt = f32, device dev = cpu);
tensor arange(std::int64_t end, device dev = cpu);
tensor arange(double start, double end, double step = 1.0, dtype dt = f32, device dev = cpu);
tensor linspace(double a, double b, std::int64_t n, dtype dt = f32, device dev = cpu);
tensor rand(const shape_t& shape, dtype dt = f32, device dev = cpu);
tensor randn(const shape_t& shape, dtype dt = f32, device dev = cpu);
// The *_like factories make their tensor on `dev` when given, else on t's device.
tensor zeros_like(const tensor& t, std::optional<device> dev = {});
tensor ones_like(const tensor& t, std::optional<device> dev = {});
tensor empty_like(const tensor& t, std::optional<device> dev = {});
tensor full_like(const tensor& t, double v, std::optional<device> dev = {});
template <int D = 0>
tensor rand_like(const tensor& t, std::optional<device> dev = {});
template <int D = 0>
tensor randn_like(const tensor& t, std::optional<device> dev = {});
void manual_seed(std::uint64_t seed);

namespace detail {
// Plain factories for library code: unlifted, so the tensors a rule makes stay at the level it
// computes at (NOTE: [Tensors created inside transforms], dispatch/created.hpp).
tensor plain_full(const shape_t& shape, double v, dtype dt, device dev);
tensor plain_eye(std::int64_t n, dtype dt, device dev);
tensor plain_zeros_like(const tensor& t);
tensor plain_ones_like(const tensor& t);
}  // namespace detail

bool allclose(const tensor& a, const tensor& b, double rtol = 1e-5, double atol = 1e-8);
bool equal(const tensor& a, const tensor& b);

// operators
///@{
/// Arithmetic operators: `-a` is neg(a), and `+ - * /` are add, sub, mul and div (a double on
/// either side).
template <int D = 0>
tensor operator-(const tensor& a) { return neg(a); }
template <int D = 0>
tensor operator+(const tensor& a, const tensor& b) { return add(a, b); }
template <int D = 0>
tensor operator+(const tensor& a, double b) { return add(a, b); }
template <int D = 0>
tensor operator+(double a, const tensor& b) { return add(a, b); }
template <int D = 0>
tensor operator-(const tensor& a, const tensor& b) { return sub(a, b); }
template <int D = 0>
tensor operator-(const tensor& a, double b) { return sub(a, b); }
template <int D = 0>
tensor operator-(double a, const tensor& b) { return sub(a, b); }
template <int D = 0>
tensor operator*(const tensor& a, const tensor& b) { return mul(a, b); }
template <int D = 0>
tensor operator*(const tensor& a, double b) { return mul(a, b); }
template <int D = 0>
tensor operator*(double a, const tensor& b) { return mul(a, b); }
template <int D = 0>
tensor operator/(const tensor& a, const tensor& b) { return div(a, b); }
template <int D = 0>
tensor operator/(const tensor& a, double b) { return div(a, b); }
template <int D = 0>
tensor operator/(double a, const tensor& b) { return div(a, b); }
///@}
///@{
/// Comparison operators: `== != < <= > >=` are eq, ne, lt, le, gt and ge, giving boolean
/// tensors (a double on either side).
template <int D = 0>
tensor operator==(const tensor& a, const tensor& b) { return eq(a, b); }
template <int D = 0>
tensor operator!=(const tensor& a, const tensor& b) { return ne(a, b); }
template <int D = 0>
tensor operator<(const tensor& a, const tensor& b) { return lt(a, b); }
template <int D = 0>
tensor operator<=(const tensor& a, const tensor& b) { return le(a, b); }
template <int D = 0>
tensor operator>(const tensor& a, const tensor& b) { return gt(a, b); }
template <int D = 0>
tensor operator>=(const tensor& a, const tensor& b) { return ge(a, b); }
template <int D = 0>
tensor operator==(const tensor& a, double b) { return eq(a, b); }
template <int D = 0>
tensor operator!=(const tensor& a, double b) { return ne(a, b); }
template <int D = 0>
tensor operator<(const tensor& a, double b) { return lt(a, b); }
template <int D = 0>
tensor operator<=(const tensor& a, double b) { return le(a, b); }
template <int D = 0>
tensor operator>(const tensor& a, double b) { return gt(a, b); }
template <int D = 0>
tensor operator>=(const tensor& a, double b) { return ge(a, b); }
template <int D = 0>
tensor operator<(double a, const tensor& b) { return gt(b, a); }
template <int D = 0>
tensor operator<=(double a, const tensor& b) { return ge(b, a); }
template <int D = 0>
tensor operator>(double a, const tensor& b) { return lt(b, a); }
template <int D = 0>
tensor operator>=(double a, const tensor& b) { return le(b, a); }
template <int D = 0>
tensor operator==(double a, const tensor& b) { return eq(b, a); }
template <int D = 0>
tensor operator!=(double a, const tensor& b) { return ne(b, a); }
///@}

}  // namespace xfunc
