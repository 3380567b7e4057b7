// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: two Tensor.x!. parameters of the schema share an alias set.*schema_parameter_at<1, 40, xfunc::schema_literal<13>."a!. y. -> ..".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // both written in place, both in alias set a
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale_both_(Tensor(a!) x, Tensor(a!) y) -> ()">([](xf::tensor& x, xf::tensor& y) { x.mul_(2.0); y.mul_(3.0); });
#else
  xf::custom_op<"mylib::scale_both_(Tensor(a!) x, Tensor(b!) y) -> ()">([](xf::tensor& x, xf::tensor& y) { x.mul_(2.0); y.mul_(3.0); });
#endif
  return 0;
}
