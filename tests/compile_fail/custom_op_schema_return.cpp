// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: the schema's return type and fn's disagree.*schema_vs_fn_return<xfunc::schema_literal<17>.".Tensor, Tensor."., xfunc::tensor>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // the schema returns two tensors, fn one
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::twice(Tensor x) -> (Tensor,Tensor)">([](const xf::tensor& x) { return x * 2.0; });
#else
  xf::custom_op<"mylib::twice(Tensor x) -> (Tensor,Tensor)">(
      [](const xf::tensor& x) { return std::tuple<xf::tensor, xf::tensor>{x * 2.0, x * 3.0}; });
#endif
  return 0;
}
