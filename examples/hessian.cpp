// Newton's method on the Rosenbrock function with the Hessian from xf::hessian
// (= jacfwd(jacrev(f))) and the gradient from xf::grad.
//
//   f(x, y) = (1 - x)^2 + 100 (y - x^2)^2,   minimum at (1, 1)
#include <xfunc/xfunc.hpp>

#include <cstdio>

namespace xf = xfunc;

namespace {
xf::tensor rosenbrock(const xf::tensor& v) {
  xf::tensor x = v.select(0, 0), y = v.select(0, 1);
  return xf::square(1.0 - x) + 100.0 * xf::square(y - x * x);
}

xf::tensor solve2(const xf::tensor& H, const xf::tensor& g) {
  const double a = H.select(0, 0).select(0, 0).item<double>(), b = H.select(0, 0).select(0, 1).item<double>();
  const double c = H.select(0, 1).select(0, 0).item<double>(), d = H.select(0, 1).select(0, 1).item<double>();
  const double g0 = g.select(0, 0).item<double>(), g1 = g.select(0, 1).item<double>();
  const double det = a * d - b * c;
  return xf::tensor{(g0 * d - b * g1) / det, (a * g1 - c * g0) / det};
}
}  // namespace

int main() {
  xf::tensor v{-1.2, 1.0};  // the classic starting point
  auto gradient = xf::grad(rosenbrock);
  auto hess = xf::hessian(rosenbrock);
  for (int it = 0; it < 50; ++it) {
    const double fv = rosenbrock(v).item<double>();
    xf::tensor g = gradient(v);
    const double gn = xf::norm(g).item<double>();
    std::printf("step %2d  (x, y) = (% .8f, % .8f)  f = %.3e  |grad| = %.3e\n", it, v.select(0, 0).item<double>(),
                v.select(0, 1).item<double>(), fv, gn);
    if (gn < 1e-10) break;
    v = v - solve2(hess(v), g);
  }
  // the analytic Hessian at the minimum is [[802, -400], [-400, 200]]
  const bool hessian_ok = xf::allclose(hess(xf::tensor{1.0, 1.0}), xf::tensor{{802.0, -400.0}, {-400.0, 200.0}});
  const bool converged = xf::allclose(v, xf::tensor{1.0, 1.0}, 1e-8, 1e-10);
  std::printf("minimum at (%.10f, %.10f); analytic Hessian matches: %s\n", v.select(0, 0).item<double>(),
              v.select(0, 1).item<double>(), hessian_ok ? "yes" : "no");
  return converged && hessian_ok ? 0 : 1;
}
