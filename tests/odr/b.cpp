#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

xf::tensor grad_in_a(const xf::tensor& x);
std::size_t depth_inside_transform_from_a();
std::size_t depth_seen_from_b() { return xf::layers::depth(); }

TEST_CASE("two translation units share one layer stack", "[odr]") {
  xf::tensor x{0.1, 0.2};
  CHECK(xf::allclose(grad_in_a(x), xf::cos(x)));
  CHECK(depth_inside_transform_from_a() == 1);
  CHECK(xf::layers::depth() == 0);
}
