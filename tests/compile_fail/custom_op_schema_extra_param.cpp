// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: fn has more parameters than the schema.*fn_param_not_in_schema<1, double>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // fn's parameter 1 (double) is not in the schema
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor x) -> Tensor">([](const xf::tensor& x, double a) { return x * a; });
#else
  xf::custom_op<"mylib::scale(Tensor x) -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#endif
  return 0;
}
