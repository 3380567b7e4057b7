// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: parameter 1 has one type in the schema and another in fn.*schema_vs_fn_param<1, xfunc::schema_literal<4>."int"., double>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // parameter 1: int in the schema, double in fn
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor x, int n) -> Tensor">([](const xf::tensor& x, double n) { return x * n; });
#else
  xf::custom_op<"mylib::scale(Tensor x, float n) -> Tensor">([](const xf::tensor& x, double n) { return x * n; });
#endif
  return 0;
}
