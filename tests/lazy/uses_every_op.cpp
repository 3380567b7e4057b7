// A program touching every built-in op (directly or through the ops its rules call) under grad,
// jvp and vmap. check_precompiled.sh compiles it against xfunc::kernels' declarations and checks
// that it instantiates none of them itself (NOTE: [Precompiled kernels]).
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

static xf::tensor every_op(const xf::tensor& x) {
  xf::tensor y = xf::neg(x) + xf::exp(x) - xf::log(xf::abs(x) + 1.0) * xf::sin(x) / (xf::cos(x) + 2.0);
  y = y + xf::tan(x * 0.1) + xf::tanh(x) + xf::sigmoid(x) + xf::relu(x) + xf::sqrt(xf::square(x) + 1.0);
  y = y + xf::rsqrt(xf::square(x) + 1.0) + xf::log1p(xf::abs(x)) + xf::expm1(x * 0.1) + xf::sign(x);
  y = y + xf::reciprocal(xf::abs(x) + 1.0) + xf::erf(x) + xf::pow(xf::abs(x) + 1.0, x) + xf::pow(x, 2.0);
  y = y + xf::maximum(x, y) + xf::minimum(x, y) + xf::atan2(x, y + 3.0) + xf::clamp(x, -1.0, 1.0);
  y = xf::where(xf::logical_or(xf::logical_and(xf::lt(x, y), xf::le(x, y)), xf::logical_not(xf::eq(x, y))), y, x);
  y = xf::where(xf::logical_or(xf::ne(x, y), xf::logical_or(xf::gt(x, y), xf::ge(x, y))), y, x);
  xf::tensor m = xf::matmul(y.reshape({2, 3}), y.reshape({3, 2}).t().t()) + xf::bmm(y.reshape({1, 2, 3}), y.reshape({1, 3, 2})).select(0, 0);
  m = xf::softmax(m, 1) + xf::log_softmax(m, 0) + xf::flip(m, {0}) + m.diagonal().expand({2, 2}) + m.permute({1, 0});
  m = xf::cat({m, m.narrow(0, 0, 1) * 2.0}, 0).select(0, 1).expand({2, 2}).clone() + xf::gather(m, 1, xf::tensor{{0, 1}, {1, 0}});
  m = m + xf::index_select(m, 0, xf::tensor{1, 0});  // (gather's vjp: scatter_add)
  m = m + xf::stop_gradient(m).detach() + m.to(xf::f64).to(x.dtype());
  return xf::sum(m) + xf::prod(y, 0, false) * 1e-3 + xf::amax(y, {0}) + xf::amin(y, {0}) + xf::norm(y) + xf::logsumexp(y, {0}) +
         xf::argmax(y, 0, false).to(x.dtype()) * 0.0 + xf::mean(y);
}

int main() {
  const xf::tensor x = xf::tensor{0.1, -0.2, 0.3, 0.4, -0.5, 0.6};
  const xf::tensor g = xf::grad(every_op)(x);
  const auto [value, tangent] = xf::jvp(every_op, std::make_tuple(x), std::make_tuple(xf::ones_like(x)));
  const xf::tensor batched = xf::vmap(every_op)(xf::stack({x, x}, 0));
  return g.shape() == x.shape() && tangent.dim() == 0 && batched.numel() == 2 ? 0 : 1;
}
