// Conformance rows: comparisons and logical ops (boolean results, never differentiable).
#include <catch2/catch.hpp>

#include "conformance.hpp"

namespace conformance {
namespace {
using T = tensors;

// Samples with ties, so eq/le/ge are exercised on equal elements too (the default second example
// maps both inputs through the same affine function, which keeps the ties).
xf::tensor lhs() { return xf::tensor{{0.5, -1.0, 0.25, 2.0}, {0.0, 1.5, -0.75, 0.25}, {1.0, 1.0, -2.0, 3.0}}; }
xf::tensor rhs_row() { return xf::tensor{0.5, 1.0, -0.75, 3.0}; }
xf::tensor rhs_full() { return xf::tensor{{0.5, 0.0, 0.25, 1.0}, {1.0, 1.5, 0.5, 0.25}, {-1.0, 1.0, -2.0, 4.0}}; }

op_fn cmp(double (*f)(double, double)) { return ref_binary(f); }

#define CMP_ROWS(NAME, FN, OP, EXPR)                                                                           \
  {NAME, {lhs(), rhs_full()}, [](const T& x) { return xf::FN(x[0], x[1]); },                                  \
   cmp([](double a, double b) { return (EXPR) ? 1.0 : 0.0; }), false},                                         \
      {NAME " (broadcast [3,4], [4])", {lhs(), rhs_row()}, [](const T& x) { return x[0] OP x[1]; },           \
       cmp([](double a, double b) { return (EXPR) ? 1.0 : 0.0; }), false},                                     \
      {NAME " (broadcast [3,1], [4])", {lhs().narrow(1, 1, 1), rhs_row()},                                     \
       [](const T& x) { return xf::FN(x[0], x[1]); }, cmp([](double a, double b) { return (EXPR) ? 1.0 : 0.0; }), \
       false},                                                                                                 \
      {NAME " (tensor, double)", {lhs()}, [](const T& x) { return x[0] OP 0.25; },                            \
       ref_unary([](double a) { return [](double a, double b) { return (EXPR) ? 1.0 : 0.0; }(a, 0.25); }), false}, \
      {NAME " (double, tensor)", {lhs()}, [](const T& x) { return 0.25 OP x[0]; },                            \
       ref_unary([](double b) { return [](double a, double b) { return (EXPR) ? 1.0 : 0.0; }(0.25, b); }), false}

const bool registered = add({
    CMP_ROWS("eq", eq, ==, a == b),
    CMP_ROWS("ne", ne, !=, a != b),
    CMP_ROWS("lt", lt, <, a < b),
    CMP_ROWS("le", le, <=, a <= b),
    CMP_ROWS("gt", gt, >, a > b),
    CMP_ROWS("ge", ge, >=, a >= b),
    {"logical_not", {lhs()}, [](const T& x) { return xf::logical_not(x[0]); },
     ref_unary([](double a) { return a == 0.0 ? 1.0 : 0.0; }), false},
    {"logical_not (bool)", {lhs() > 0.3}, [](const T& x) { return xf::logical_not(x[0]); },
     ref_unary([](double a) { return a == 0.0 ? 1.0 : 0.0; }), false},
    {"logical_and", {lhs(), rhs_full()}, [](const T& x) { return xf::logical_and(x[0], x[1]); },
     cmp([](double a, double b) { return (a != 0.0 && b != 0.0) ? 1.0 : 0.0; }), false},
    {"logical_and (bool, broadcast)", {lhs() > 0.3, rhs_row() < 1.0},
     [](const T& x) { return xf::logical_and(x[0], x[1]); },
     cmp([](double a, double b) { return (a != 0.0 && b != 0.0) ? 1.0 : 0.0; }), false},
    {"logical_or", {lhs(), rhs_full()}, [](const T& x) { return xf::logical_or(x[0], x[1]); },
     cmp([](double a, double b) { return (a != 0.0 || b != 0.0) ? 1.0 : 0.0; }), false},
    {"logical_or (bool, broadcast)", {lhs() > 0.3, rhs_row() < 1.0},
     [](const T& x) { return xf::logical_or(x[0], x[1]); },
     cmp([](double a, double b) { return (a != 0.0 || b != 0.0) ? 1.0 : 0.0; }), false},
});
#undef CMP_ROWS

TEST_CASE("comparison: results are boolean and carry no gradient", "[ops][comparison]") {
  const xf::tensor x = xf::tensor{1.0, 2.0, 3.0};
  CHECK((x < 2.0).dtype() == xf::b8);
  CHECK((x == x).dtype() == xf::b8);
  CHECK(xf::logical_not(x).dtype() == xf::b8);
  CHECK(xf::equal(xf::tensor{1, 2, 3} >= 2.0, xf::tensor{false, true, true}));  // i64 with a double
  CHECK(xf::equal(xf::tensor{1, 2, 3} == xf::tensor{1.0f, 0.0f, 3.0f}, xf::tensor{true, false, true}));
  // the named comparisons take a double on either side, as the operators do
  CHECK(xf::equal(xf::lt(2.0, x), xf::tensor{false, false, true}));
  CHECK(xf::equal(xf::le(2.0, x), 2.0 <= x));
  CHECK(xf::equal(xf::gt(2.0, x), xf::tensor{true, false, false}));
  CHECK(xf::equal(xf::ge(2.0, x), 2.0 >= x));
  CHECK(xf::equal(xf::eq(2.0, x), xf::tensor{false, true, false}));
  CHECK(xf::equal(xf::ne(2.0, x), 2.0 != x));
  // a function of a comparison has zero gradient
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum((t > 1.5).to(xf::f64) * 2.0); })(x);
  CHECK(xf::allclose(g, xf::zeros({3}, xf::f64)));
}

TEST_CASE("comparison: errors", "[ops][comparison]") {
  CHECK_THROWS_WITH((xf::tensor{1.0, 2.0} < xf::tensor{1.0, 2.0, 3.0}), Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(xf::logical_and(xf::tensor{true, false}, xf::tensor{true, false, true}),
                    Catch::Contains("cannot be broadcast"));
}
}  // namespace
}  // namespace conformance
