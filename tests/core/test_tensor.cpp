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

TEST_CASE("a tensor with no elements is contiguous, whatever its strides", "[tensor]") {
  // as torch's is_contiguous: zeros({2, 0, 3}) has strides [3, 3, 1] here, [0, 3, 1] in torch
  const xf::tensor e = xf::zeros({2, 0, 3});
  CHECK(e.is_contiguous());
  CHECK(e.permute({2, 0, 1}).is_contiguous());
  CHECK(xf::same_storage(e.contiguous(), e));
  CHECK(xf::sum(e.contiguous(), {1}).shape() == xf::shape_t{2, 3});
  CHECK_FALSE(xf::zeros({2, 3}).t().is_contiguous());
}
