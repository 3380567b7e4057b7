// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: a parameter of the schema has no name.*schema_parameter_at<1, 28, xfunc::schema_literal<12>.". -> Tensor".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // parameter 1 has a type but no name
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor x, float) -> Tensor">([](const xf::tensor& x, double a) { return x * a; });
#else
  xf::custom_op<"mylib::scale(Tensor x, float alpha) -> Tensor">([](const xf::tensor& x, double a) { return x * a; });
#endif
  return 0;
}
