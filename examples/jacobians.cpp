// Newton's method on a small nonlinear system F(x) = 0 with the jacobian from xf::jacfwd.
//
//   F(x, y) = [ x^2 + y^2 - 4,  exp(x) + y - 1 ]
//
// Each step solves J dx = -F; J comes from forward mode (one jvp per input, batched by vmap).
#include <xfunc/xfunc.hpp>

#include <cmath>
#include <cstdio>

namespace xf = xfunc;

namespace {
xf::tensor F(const xf::tensor& v) {
  xf::tensor x = v.select(0, 0), y = v.select(0, 1);
  return xf::stack({x * x + y * y - 4.0, xf::exp(x) + y - 1.0}, 0);
}

/// Solves the 2x2 system J d = r by Cramer's rule (plain C++: the example is about the jacobian).
xf::tensor solve2(const xf::tensor& J, const xf::tensor& r) {
  const double a = J.select(0, 0).select(0, 0).item<double>(), b = J.select(0, 0).select(0, 1).item<double>();
  const double c = J.select(0, 1).select(0, 0).item<double>(), d = J.select(0, 1).select(0, 1).item<double>();
  const double r0 = r.select(0, 0).item<double>(), r1 = r.select(0, 1).item<double>();
  const double det = a * d - b * c;
  return xf::tensor{(r0 * d - b * r1) / det, (a * r1 - c * r0) / det};
}
}  // namespace

int main() {
  xf::tensor v{1.0, -1.0};
  auto jacobian = xf::jacfwd(F);
  for (int it = 0; it < 20; ++it) {
    xf::tensor Fv = F(v);
    const double res = xf::norm(Fv).item<double>();
    std::printf("step %2d  x = (% .10f, % .10f)  |F| = %.3e\n", it, v.select(0, 0).item<double>(),
                v.select(0, 1).item<double>(), res);
    if (res < 1e-12) break;
    v = v + solve2(jacobian(v), -Fv);
  }
  // the jacobian from forward mode equals the one from reverse mode
  const bool same = xf::allclose(xf::jacfwd(F)(v), xf::jacrev(F)(v));
  const double res = xf::norm(F(v)).item<double>();
  std::printf("root: (%.10f, %.10f), |F| = %.2e, jacfwd == jacrev: %s\n", v.select(0, 0).item<double>(),
              v.select(0, 1).item<double>(), res, same ? "yes" : "no");
  return res < 1e-10 && same ? 0 : 1;
}
