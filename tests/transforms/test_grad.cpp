#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

TEST_CASE("grad of a scalar function", "[grad]") {
  xf::tensor x{1.0, 2.0, 3.0};
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum(xf::sin(t) * t); })(x);
  CHECK(xf::allclose(g, xf::cos(x) * x + xf::sin(x)));
}
