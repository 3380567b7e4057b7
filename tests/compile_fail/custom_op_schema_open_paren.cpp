// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: expected . after the op name ns::name.*schema_text_at<12, xfunc::schema_literal<28>."::inner.Tensor x. -> Tensor".>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // an op name has exactly one ::
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::scale::inner(Tensor x) -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#else
  xf::custom_op<"mylib::scale_inner(Tensor x) -> Tensor">([](const xf::tensor& x) { return x * 2.0; });
#endif
  return 0;
}
