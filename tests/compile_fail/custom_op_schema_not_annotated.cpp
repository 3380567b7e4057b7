// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: parameter 0 is Tensor in the schema but fn takes xf::tensor& .writes it in place..*schema_vs_fn_param<0, xfunc::schema_literal<7>."Tensor"., xfunc::tensor&>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // fn writes x in place (xf::tensor&), so the schema must say Tensor(a!)
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::add_one_(Tensor x) -> ()">([](xf::tensor& x) { x.add_(1.0); });
#else
  xf::custom_op<"mylib::add_one_(Tensor(a!) x) -> ()">([](xf::tensor& x) { x.add_(1.0); });
#endif
  return 0;
}
