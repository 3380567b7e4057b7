#pragma once
// Declarations of every public op, so that rules in one op family can use ops of another
// (backward formulas are written with xfunc ops) without include cycles.
#include <cstdint>
#include <vector>

#include <xfunc/core/tensor.hpp>

namespace xfunc {

// pointwise unary (ops/pointwise.hpp)
tensor neg(const tensor& x);
tensor exp(const tensor& x);
tensor log(const tensor& x);
tensor sin(const tensor& x);
tensor cos(const tensor& x);
tensor tan(const tensor& x);
tensor tanh(const tensor& x);
tensor sigmoid(const tensor& x);
tensor relu(const tensor& x);
tensor abs(const tensor& x);
tensor sqrt(const tensor& x);
tensor rsqrt(const tensor& x);
tensor square(const tensor& x);
tensor log1p(const tensor& x);
tensor expm1(const tensor& x);
tensor sign(const tensor& x);
tensor reciprocal(const tensor& x);
tensor erf(const tensor& x);

// pointwise binary (ops/pointwise.hpp); a double on either side is a 0-d tensor that does not
// widen a floating tensor
tensor add(const tensor& a, const tensor& b);
tensor add(const tensor& a, double b);
tensor add(double a, const tensor& b);
tensor sub(const tensor& a, const tensor& b);
tensor sub(const tensor& a, double b);
tensor sub(double a, const tensor& b);
tensor mul(const tensor& a, const tensor& b);
tensor mul(const tensor& a, double b);
tensor mul(double a, const tensor& b);
tensor div(const tensor& a, const tensor& b);
tensor div(const tensor& a, double b);
tensor div(double a, const tensor& b);
tensor pow(const tensor& a, const tensor& b);
tensor pow(const tensor& a, double b);
tensor pow(double a, const tensor& b);
tensor maximum(const tensor& a, const tensor& b);
tensor minimum(const tensor& a, const tensor& b);
tensor atan2(const tensor& a, const tensor& b);
tensor where(const tensor& cond, const tensor& a, const tensor& b);
tensor clamp(const tensor& t, double lo, double hi);

// comparison and logical (ops/comparison.hpp): boolean results, never differentiable
tensor eq(const tensor& a, const tensor& b);
tensor ne(const tensor& a, const tensor& b);
tensor lt(const tensor& a, const tensor& b);
tensor le(const tensor& a, const tensor& b);
tensor gt(const tensor& a, const tensor& b);
tensor ge(const tensor& a, const tensor& b);
tensor eq(const tensor& a, double b);
tensor ne(const tensor& a, double b);
tensor lt(const tensor& a, double b);
tensor le(const tensor& a, double b);
tensor gt(const tensor& a, double b);
tensor ge(const tensor& a, double b);
tensor logical_not(const tensor& a);
tensor logical_and(const tensor& a, const tensor& b);
tensor logical_or(const tensor& a, const tensor& b);

// reductions (ops/reduction.hpp)
tensor sum(const tensor& t);
tensor sum(const tensor& t, const dims_t& dims, bool keepdim = false);
tensor mean(const tensor& t);
tensor mean(const tensor& t, const dims_t& dims, bool keepdim = false);
tensor prod(const tensor& t, std::int64_t dim, bool keepdim = false);
tensor amax(const tensor& t, const dims_t& dims, bool keepdim = false);
tensor amin(const tensor& t, const dims_t& dims, bool keepdim = false);
tensor argmax(const tensor& t, std::int64_t dim, bool keepdim = false);
tensor logsumexp(const tensor& t, const dims_t& dims, bool keepdim = false);
tensor var(const tensor& t, const dims_t& dims, std::int64_t correction = 1, bool keepdim = false);
tensor norm(const tensor& t);

// neural-network helpers (ops/nn.hpp)
tensor softmax(const tensor& t, std::int64_t dim);
tensor log_softmax(const tensor& t, std::int64_t dim);
tensor cross_entropy(const tensor& logits, const tensor& target);
tensor mse_loss(const tensor& a, const tensor& b);
tensor linear(const tensor& x, const tensor& w, const tensor& b);

// linear algebra (ops/linalg.hpp)
tensor matmul(const tensor& a, const tensor& b);
tensor dot(const tensor& a, const tensor& b);
tensor outer(const tensor& a, const tensor& b);
tensor mm(const tensor& a, const tensor& b);
tensor mv(const tensor& a, const tensor& b);
tensor bmm(const tensor& a, const tensor& b);

// shape and indexing (ops/view.hpp, ops/indexing.hpp)
tensor cat(const std::vector<tensor>& ts, std::int64_t dim = 0);
tensor stack(const std::vector<tensor>& ts, std::int64_t dim);
std::vector<tensor> split(const tensor& t, std::int64_t size, std::int64_t dim = 0);
tensor flip(const tensor& t, const dims_t& dims);
tensor index_select(const tensor& t, std::int64_t dim, const tensor& index);
tensor gather(const tensor& t, std::int64_t dim, const tensor& index);
tensor stop_gradient(const tensor& t);

// creation (ops/creation.hpp)
tensor zeros(const shape_t& shape, dtype dt = f32, device dev = cpu);
tensor ones(const shape_t& shape, dtype dt = f32, device dev = cpu);
tensor empty(const shape_t& shape, dtype dt = f32, device dev = cpu);
tensor full(const shape_t& shape, double value, dtype dt = f32, device dev = cpu);
tensor eye(std::int64_t n, dtype dt = f32, device dev = cpu);
tensor arange(std::int64_t end);
tensor arange(double start, double end, double step = 1.0, dtype dt = i64, device dev = cpu);
tensor linspace(double a, double b, std::int64_t n, dtype dt = f32, device dev = cpu);
tensor rand(const shape_t& shape, dtype dt = f32, device dev = cpu);
tensor randn(const shape_t& shape, dtype dt = f32, device dev = cpu);
tensor zeros_like(const tensor& t);
tensor ones_like(const tensor& t);
tensor empty_like(const tensor& t);
tensor full_like(const tensor& t, double v);
tensor rand_like(const tensor& t);
tensor randn_like(const tensor& t);
void manual_seed(std::uint64_t seed);

bool allclose(const tensor& a, const tensor& b, double rtol = 1e-5, double atol = 1e-8);
bool equal(const tensor& a, const tensor& b);

// operators
inline tensor operator-(const tensor& a) { return neg(a); }
inline tensor operator+(const tensor& a, const tensor& b) { return add(a, b); }
inline tensor operator+(const tensor& a, double b) { return add(a, b); }
inline tensor operator+(double a, const tensor& b) { return add(a, b); }
inline tensor operator-(const tensor& a, const tensor& b) { return sub(a, b); }
inline tensor operator-(const tensor& a, double b) { return sub(a, b); }
inline tensor operator-(double a, const tensor& b) { return sub(a, b); }
inline tensor operator*(const tensor& a, const tensor& b) { return mul(a, b); }
inline tensor operator*(const tensor& a, double b) { return mul(a, b); }
inline tensor operator*(double a, const tensor& b) { return mul(a, b); }
inline tensor operator/(const tensor& a, const tensor& b) { return div(a, b); }
inline tensor operator/(const tensor& a, double b) { return div(a, b); }
inline tensor operator/(double a, const tensor& b) { return div(a, b); }
inline tensor operator==(const tensor& a, const tensor& b) { return eq(a, b); }
inline tensor operator!=(const tensor& a, const tensor& b) { return ne(a, b); }
inline tensor operator<(const tensor& a, const tensor& b) { return lt(a, b); }
inline tensor operator<=(const tensor& a, const tensor& b) { return le(a, b); }
inline tensor operator>(const tensor& a, const tensor& b) { return gt(a, b); }
inline tensor operator>=(const tensor& a, const tensor& b) { return ge(a, b); }
inline tensor operator==(const tensor& a, double b) { return eq(a, b); }
inline tensor operator!=(const tensor& a, double b) { return ne(a, b); }
inline tensor operator<(const tensor& a, double b) { return lt(a, b); }
inline tensor operator<=(const tensor& a, double b) { return le(a, b); }
inline tensor operator>(const tensor& a, double b) { return gt(a, b); }
inline tensor operator>=(const tensor& a, double b) { return ge(a, b); }
inline tensor operator<(double a, const tensor& b) { return gt(b, a); }
inline tensor operator<=(double a, const tensor& b) { return ge(b, a); }
inline tensor operator>(double a, const tensor& b) { return lt(b, a); }
inline tensor operator>=(double a, const tensor& b) { return le(b, a); }
inline tensor operator==(double a, const tensor& b) { return eq(b, a); }
inline tensor operator!=(double a, const tensor& b) { return ne(b, a); }

}  // namespace xfunc
