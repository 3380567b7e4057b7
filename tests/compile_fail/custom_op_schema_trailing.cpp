// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: unexpected text after the schema's return type.*schema_text_at<33, xfunc::schema_literal<4>."out".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // returns are not named
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale(Tensor x) -> Tensor out">([](const xf::tensor& x) { return x * 2.0; });
#else
  xf::custom_op<"mylib::scale(Tensor x) -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#endif
  return 0;
}
