// Conformance rows: matrix products. The reference multiplies by plain loops (ref_matmul).
#include <catch2/catch.hpp>

#include "conformance.hpp"

namespace conformance {
namespace {
using T = tensors;

op_fn ref_mm = [](const T& in) { return ref_matmul(in[0], in[1]); };

const bool registered = add({
    {"matmul (1-d . 1-d)", {sample({4}), sample({4}, -1, 1, 2)}, [](const T& x) { return xf::matmul(x[0], x[1]); },
     ref_mm},
    {"matmul (2-d . 1-d)", {sample({3, 4}), sample({4}, -1, 1, 2)}, [](const T& x) { return xf::matmul(x[0], x[1]); },
     ref_mm},
    {"matmul (1-d . 2-d)", {sample({3}), sample({3, 4}, -1, 1, 2)}, [](const T& x) { return xf::matmul(x[0], x[1]); },
     ref_mm},
    {"matmul (2-d . 2-d)", {sample({2, 3}), sample({3, 4}, -1, 1, 2)},
     [](const T& x) { return xf::matmul(x[0], x[1]); }, ref_mm},
    {"matmul (2-d . 2-d, non-contiguous)", {noncontiguous(sample({3, 3})), sample({4, 3}, -1, 1, 2).t()},
     [](const T& x) { return xf::matmul(x[0], x[1]); }, ref_mm},
    {"matmul (batched 3-d . 3-d)", {sample({2, 2, 3}), sample({2, 3, 2}, -1, 1, 2)},
     [](const T& x) { return xf::matmul(x[0], x[1]); }, ref_mm},
    {"matmul (batched 3-d . 2-d)", {sample({2, 2, 3}), sample({3, 4}, -1, 1, 2)},
     [](const T& x) { return xf::matmul(x[0], x[1]); }, ref_mm},
    {"matmul (batched 2-d . 3-d)", {sample({2, 3}), sample({2, 3, 2}, -1, 1, 2)},
     [](const T& x) { return xf::matmul(x[0], x[1]); }, ref_mm},
    {"matmul (batched broadcast [2,1,2,3] . [3,3,2])", {sample({2, 1, 2, 3}), sample({3, 3, 2}, -1, 1, 2)},
     [](const T& x) { return xf::matmul(x[0], x[1]); }, ref_mm},
    {"matmul (batched 3-d . 1-d)", {sample({2, 2, 3}), sample({3}, -1, 1, 2)},
     [](const T& x) { return xf::matmul(x[0], x[1]); }, ref_mm},
    {"matmul (1-d . batched 3-d)", {sample({3}), sample({2, 3, 2}, -1, 1, 2)},
     [](const T& x) { return xf::matmul(x[0], x[1]); }, ref_mm},
    {"dot", {sample({5}), sample({5}, -1, 1, 2)}, [](const T& x) { return xf::dot(x[0], x[1]); }, ref_mm},
    {"outer", {sample({3}), sample({4}, -1, 1, 2)}, [](const T& x) { return xf::outer(x[0], x[1]); },
     [](const T& in) {
       const xt::xarray<double> a = to_x(in[0]), b = to_x(in[1]);
       xt::xarray<double> o = xt::zeros<double>({a.size(), b.size()});
       for (std::size_t i = 0; i < a.size(); ++i)
         for (std::size_t j = 0; j < b.size(); ++j) o(i, j) = a(i) * b(j);
       return from_x(o);
     }},
    {"mm", {sample({3, 2}), sample({2, 4}, -1, 1, 2)}, [](const T& x) { return xf::mm(x[0], x[1]); }, ref_mm},
    {"mm (transposed operand)", {sample({2, 3}).t(), sample({2, 4}, -1, 1, 2)},
     [](const T& x) { return xf::mm(x[0], x[1]); }, ref_mm},
    {"mv", {sample({3, 4}), sample({4}, -1, 1, 2)}, [](const T& x) { return xf::mv(x[0], x[1]); }, ref_mm},
    {"bmm", {sample({2, 3, 4}), sample({2, 4, 2}, -1, 1, 2)}, [](const T& x) { return xf::bmm(x[0], x[1]); }, ref_mm},
    {"bmm (transposed operand)", {sample({2, 4, 3}).transpose(1, 2), sample({2, 4, 2}, -1, 1, 2)},
     [](const T& x) { return xf::bmm(x[0], x[1]); }, ref_mm},
});

TEST_CASE("linalg: dtypes", "[ops][linalg]") {
  CHECK(xf::matmul(sample({2, 3}).to(xf::f32), sample({3, 2})).dtype() == xf::f64);
  CHECK(xf::matmul(sample({2, 3}).to(xf::f32), sample({3}).to(xf::f32)).dtype() == xf::f32);
  CHECK(xf::equal(xf::matmul(xf::tensor{{1, 2}, {3, 4}}, xf::tensor{1, 1}), xf::tensor{3, 7}));
  CHECK(xf::matmul(sample({4}), sample({4})).dim() == 0);
}

TEST_CASE("linalg: errors", "[ops][linalg]") {
  CHECK_THROWS_WITH(xf::matmul(sample({2, 3}), sample({4, 2})), Catch::Contains("cannot be multiplied"));
  CHECK_THROWS_WITH(xf::matmul(sample({3}), sample({4})), Catch::Contains("cannot be multiplied"));
  CHECK_THROWS_WITH(xf::matmul(sample({2, 2, 3}), sample({3, 3, 2})), Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(xf::matmul(xf::scalar(1.0), sample({3})), Catch::Contains("at least one dimension"));
  CHECK_THROWS_WITH(xf::mm(sample({3}), sample({3, 2})), Catch::Contains("2-d"));
  CHECK_THROWS_WITH(xf::mv(sample({3, 2}), sample({3, 2})), Catch::Contains("1-d"));
  CHECK_THROWS_WITH(xf::dot(sample({3, 2}), sample({3})), Catch::Contains("1-d"));
  CHECK_THROWS_WITH(xf::outer(sample({3, 2}), sample({3})), Catch::Contains("1-d"));
  CHECK_THROWS_WITH(xf::bmm(sample({2, 2, 3}), sample({3, 3, 2})), Catch::Contains("same batch size"));
  CHECK_THROWS_WITH(xf::bmm(sample({2, 2, 3}), sample({2, 4, 2})), Catch::Contains("cannot be multiplied"));
}
}  // namespace
}  // namespace conformance
