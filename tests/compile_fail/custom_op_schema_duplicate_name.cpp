// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: two parameters of the schema have the same name.*schema_parameter_at<1, 29, xfunc::schema_literal<26>."x, float alpha. -> Tensor".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // x twice
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::axpy(Tensor x, Tensor x, float alpha) -> Tensor">([](const xf::tensor& x, const xf::tensor& y, double a) { return x * a + y; });
#else
  xf::custom_op<"mylib::axpy(Tensor x, Tensor y, float alpha) -> Tensor">([](const xf::tensor& x, const xf::tensor& y, double a) { return x * a + y; });
#endif
  return 0;
}
