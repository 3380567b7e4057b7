#include <xfunc/xfunc.hpp>

#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>

namespace xf = xfunc;

int main() {
  auto f = [](const xf::tensor& x) { return xf::sum(xf::sin(x) * x); };
  xf::tensor xs{{0.1, 0.2}, {0.3, 0.4}};
  xf::tensor g = xf::vmap(xf::grad(f))(xs);
  std::cout << g << "\n";
  // an npz round trip: the link line must carry libzip
  const auto path = std::filesystem::temp_directory_path() / ("xfunc_consumer_" + std::to_string(getpid()) + ".npz");
  xf::save_npz(path, {{"g", g}});
  const xf::tensor back = xf::load_npz(path).at("g");
  std::filesystem::remove(path);
  return xf::allclose(g, xf::cos(xs) * xs + xf::sin(xs)) && xf::equal(back, g) ? 0 : 1;
}
