// Reverse-mode differentiation with xf::grad and xf::grad_and_value: argnums, has_aux, pytree
// arguments and grad of grad. Every result is checked against a hand-derived formula; the
// program exits non-zero if one is wrong.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <tuple>
#include <utility>

#include <xfunc/xfunc.hpp>

#include "example_check.hpp"

namespace xf = xfunc;

namespace {
using example::check;
using example::failures;
}  // namespace

int main() try {
  const xf::tensor x{1.0, 2.0, 3.0};  // float64 (from the C++ element type)

  // 1. grad of a scalar function: d/dx sum(x^2) = 2x
  std::cout << "1. grad(f) for f(x) = sum(x^2)\n";
  auto f = [](const xf::tensor& t) { return xf::sum(t * t); };
  const xf::tensor g = xf::grad(f)(x);
  std::cout << "   x       = " << x << "\n   grad(f) = " << g << '\n';
  check(xf::allclose(g, 2.0 * x), "grad(f)(x) == 2x");

  // 2. grad_and_value: the gradient and f's value in one pass
  std::cout << "2. grad_and_value(f)\n";
  auto [g2, value] = xf::grad_and_value(f)(x);
  std::cout << "   value = " << value << '\n';
  check(xf::allclose(g2, 2.0 * x), "gradient part == 2x");
  check(std::abs(value.item<double>() - 14.0) < 1e-12, "value == 14");

  // 3. argnums: which arguments to differentiate (several → a std::tuple of gradients)
  std::cout << "3. argnums for h(w, b) = sum(tanh(w * x + b))\n";
  auto h = [&](const xf::tensor& w, const xf::tensor& b) { return xf::sum(xf::tanh(w * x + b)); };
  const xf::tensor w = xf::scalar(0.5), b = xf::scalar(-0.25);
  const xf::tensor gw = xf::grad(h)(w, b);                    // default argnums<0>
  const xf::tensor gb = xf::grad(h, xf::argnums<1>)(w, b);    // only b
  auto [gw2, gb2] = xf::grad(h, xf::argnums<0, 1>)(w, b);     // both, in that order
  const xf::tensor sech2 = 1.0 - xf::square(xf::tanh(w * x + b));
  std::cout << "   dh/dw = " << gw << "\n   dh/db = " << gb << '\n';
  check(xf::allclose(gw, xf::sum(sech2 * x)), "dh/dw == sum(sech^2(wx+b) * x)");
  check(xf::allclose(gb, xf::sum(sech2)), "dh/db == sum(sech^2(wx+b))");
  check(xf::allclose(gw2, gw) && xf::allclose(gb2, gb), "argnums<0, 1> gives both, in order");
  check(xf::allclose(xf::grad(h, xf::argnums<-1>)(w, b), gb), "argnums<-1> counts from the end");

  // 4. has_aux: f returns {loss, aux}; aux comes back untouched (not differentiated)
  std::cout << "4. has_aux\n";
  auto with_aux = [](const xf::tensor& t) {
    xf::tensor y = xf::sin(t);
    return std::pair{xf::sum(y), y};  // differentiate sum(sin t), also return sin t
  };
  auto [g4, aux] = xf::grad(with_aux, xf::has_aux)(x);
  std::cout << "   grad = " << g4 << "\n   aux  = " << aux << '\n';
  check(xf::allclose(g4, xf::cos(x)), "grad of sum(sin x) == cos x");
  check(xf::allclose(aux, xf::sin(x)), "aux == sin x");
  auto [g4b, value_aux] = xf::grad_and_value(with_aux, xf::has_aux)(x);
  check(xf::allclose(g4b, g4) && xf::allclose(value_aux.first, xf::sum(xf::sin(x))) &&
            xf::allclose(value_aux.second, aux),
        "grad_and_value with has_aux gives {grad, {value, aux}}");

  // 5. pytree arguments: the gradient mirrors the structure of the argument
  std::cout << "5. gradient of a pytree of parameters (std::tuple<tensor, tensor>)\n";
  auto model_loss = [&](const std::tuple<xf::tensor, xf::tensor>& p) {
    const auto& [a, c] = p;
    return xf::mean(xf::square(a * x + c - 1.0));
  };
  const auto params = std::tuple{xf::scalar(2.0), xf::scalar(0.5)};
  auto [ga, gc] = xf::grad(model_loss)(params);
  // d/da mean((ax+c-1)^2) = mean(2(ax+c-1)x), d/dc = mean(2(ax+c-1))
  const xf::tensor r = 2.0 * x + 0.5 - 1.0;
  std::cout << "   d/da = " << ga << ", d/dc = " << gc << '\n';
  check(xf::allclose(ga, xf::mean(2.0 * r * x)) && xf::allclose(gc, xf::mean(2.0 * r)),
        "pytree gradient matches the formula");

  // 6. grad of grad: higher derivatives by composition
  std::cout << "6. grad(grad(f)) for f(s) = s^3 at s = 2\n";
  auto cube = [](const xf::tensor& s) { return s * s * s; };
  const xf::tensor s = xf::scalar(2.0);
  const xf::tensor d1 = xf::grad(cube)(s);
  const xf::tensor d2 = xf::grad(xf::grad(cube))(s);
  const xf::tensor d3 = xf::grad(xf::grad(xf::grad(cube)))(s);
  std::cout << "   f' = " << d1.item<double>() << ", f'' = " << d2.item<double>() << ", f''' = " << d3.item<double>()
            << '\n';
  check(std::abs(d1.item<double>() - 12.0) < 1e-12, "f'(2) == 3*2^2 == 12");
  check(std::abs(d2.item<double>() - 12.0) < 1e-12, "f''(2) == 6*2 == 12");
  check(std::abs(d3.item<double>() - 6.0) < 1e-12, "f'''(2) == 6");

  // 7. nested grads of a closure that captures the outer variable (no perturbation confusion):
  //    d/dx [ x * (d/dy (x + y))|_{y=x} ] = d/dx [x * 1] = 1
  std::cout << "7. nested grad with a captured outer variable\n";
  auto outer = [](const xf::tensor& xo) {
    auto inner = [&](const xf::tensor& y) { return xo + y; };
    return xo * xf::grad(inner)(xo);
  };
  const xf::tensor d = xf::grad(outer)(xf::scalar(1.0));
  std::cout << "   d/dx [x * d/dy (x + y)] = " << d.item<double>() << '\n';
  check(std::abs(d.item<double>() - 1.0) < 1e-12, "result is 1 (not 2)");

  // 8. errors: grad needs a scalar output
  std::cout << "8. errors are xf::error with a readable message\n";
  try {
    (void)xf::grad([](const xf::tensor& t) { return t * 2.0; })(x);
    check(false, "grad of a non-scalar function throws");
  } catch (const xf::error& e) {
    std::cout << "   caught: " << e.what() << '\n';
    check(std::string(e.what()).find("scalar") != std::string::npos, "message mentions \"scalar\"");
  }

  if (failures != 0) {
    std::cout << failures << " check(s) FAILED\n";
    return EXIT_FAILURE;
  }
  std::cout << "all grad checks passed\n";
  return EXIT_SUCCESS;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << '\n';
  return EXIT_FAILURE;
}
