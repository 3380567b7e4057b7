#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

TEST_CASE("tensors from nested braces", "[tensor]") {
  xf::tensor a{1.0, 2.0};
  CHECK(a.shape() == xf::shape_t{2});
  CHECK(a.dtype() == xf::f64);
  xf::tensor b{{1.0f, 2.0f}, {3.0f, 4.0f}};
  CHECK(b.shape() == xf::shape_t{2, 2});
  CHECK(b.dtype() == xf::f32);
  CHECK(xf::tensor{0, 2}.dtype() == xf::i64);
  CHECK_THROWS_AS((xf::tensor{{1.0, 2.0}, {3.0}}), xf::error);
}
