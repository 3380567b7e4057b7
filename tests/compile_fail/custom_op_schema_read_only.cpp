// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op<"...">.fn.: parameter 1 is Tensor.a!. .written in place. in the schema but fn takes it read-only.*schema_vs_fn_param<1, xfunc::schema_literal<11>."Tensor.a!."., const xfunc::tensor&>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  // Tensor(a!) declares that fn writes out in place, but fn takes it as const xf::tensor&
#ifdef XFUNC_CF_FAIL
  xf::custom_op<"mylib::add_into(Tensor x, Tensor(a!) out) -> ()">([](const xf::tensor&, const xf::tensor&) {});
#else
  xf::custom_op<"mylib::add_into(Tensor x, Tensor(a!) out) -> ()">([](const xf::tensor& x, xf::tensor& out) { out.add_(x); });
#endif
  return 0;
}
