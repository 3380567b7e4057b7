// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: the only alias annotation is Tensor.a!..*schema_parameter_at<0, 19, xfunc::schema_literal<17>.".a. x. -> Tensor".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // a read-only alias annotation
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor(a) x) -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#else
  xf::custom_op<"mylib::scale(Tensor x) -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#endif
  return 0;
}
