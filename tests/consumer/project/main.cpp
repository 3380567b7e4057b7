#include <xfunc/xfunc.hpp>

#include <iostream>

namespace xf = xfunc;

int main() {
  auto f = [](const xf::tensor& x) { return xf::sum(xf::sin(x) * x); };
  xf::tensor xs{{0.1, 0.2}, {0.3, 0.4}};
  xf::tensor g = xf::vmap(xf::grad(f))(xs);
  std::cout << g << "\n";
  return xf::allclose(g, xf::cos(xs) * xs + xf::sin(xs)) ? 0 : 1;
}
