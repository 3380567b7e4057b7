// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: the schema's parentheses do not balance.*schema_text_at<12, xfunc::schema_literal<20>.".Tensor x -> Tensor".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // the ( at character 12 is never closed
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor x -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#else
  xf::custom_op<"mylib::scale(Tensor x) -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#endif
  return 0;
}
