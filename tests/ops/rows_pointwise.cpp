// Conformance rows: pointwise unary and binary ops.
#include <cmath>

#include "conformance.hpp"

namespace conformance {
namespace {
using T = tensors;

const bool registered = add({
    {"sin", {sample({2, 3})}, [](const T& x) { return xf::sin(x[0]); }, ref_unary([](double v) { return std::sin(v); })},
    {"exp", {sample({2, 3})}, [](const T& x) { return xf::exp(x[0]); }, ref_unary([](double v) { return std::exp(v); })},
    {"log", {sample({2, 3}, 0.5, 2.0)}, [](const T& x) { return xf::log(x[0]); },
     ref_unary([](double v) { return std::log(v); })},
    {"mul (broadcast)", {sample({2, 3}), sample({3}, -1, 1, 2)}, [](const T& x) { return x[0] * x[1]; },
     ref_binary([](double a, double b) { return a * b; })},
    {"add (broadcast)", {sample({2, 1}), sample({3}, -1, 1, 2)}, [](const T& x) { return x[0] + x[1]; },
     ref_binary([](double a, double b) { return a + b; })},
    {"div", {sample({2, 3}), sample({2, 3}, 0.5, 2.0, 3)}, [](const T& x) { return x[0] / x[1]; },
     ref_binary([](double a, double b) { return a / b; })},
});
}  // namespace
}  // namespace conformance
