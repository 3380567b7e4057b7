// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: expected -> and the return type after the schema's parameters.*schema_text_at<23, xfunc::schema_literal<7>."Tensor".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // the -> is missing
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor x) Tensor">([](const xf::tensor& x) { return x * 2.0; });
#else
  xf::custom_op<"mylib::scale(Tensor x) -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#endif
  return 0;
}
