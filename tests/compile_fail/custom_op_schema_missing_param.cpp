// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: fn has fewer parameters than the schema.*schema_param_not_in_fn<1, xfunc::schema_literal<6>."float".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // the schema has a parameter 1 (float alpha) that fn does not take
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor x, float alpha) -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#else
  xf::custom_op<"mylib::scale(Tensor x, float alpha) -> Tensor">([](const xf::tensor& x, double a) { return x * a; });
#endif
  return 0;
}
