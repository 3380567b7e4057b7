// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: unknown parameter type in the schema.*schema_parameter_at<1, 23, xfunc::schema_literal<24>."double alpha. -> Tensor".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // double is C++; the schema type is float
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor x, double alpha) -> Tensor">([](const xf::tensor& x, double a) { return x * a; });
#else
  xf::custom_op<"mylib::scale(Tensor x, float alpha) -> Tensor">([](const xf::tensor& x, double a) { return x * a; });
#endif
  return 0;
}
