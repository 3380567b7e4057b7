// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: expected , or . after a parameter of the schema.*schema_parameter_at<1, 34, xfunc::schema_literal<16>."=1.0. -> Tensor".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // a default value
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor x, float alpha=1.0) -> Tensor">([](const xf::tensor& x, double a) { return x * a; });
#else
  xf::custom_op<"mylib::scale(Tensor x, float alpha) -> Tensor">([](const xf::tensor& x, double a) { return x * a; });
#endif
  return 0;
}
