// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op.name, fn.: fn must return xf::tensor, std::tuple<xf::tensor, ...>, std::vector<xf::tensor> or void
#include <xfunc/xfunc.hpp>
#include <xfunc/schema/signature.hpp>
namespace xf = xfunc;
int main() {
#ifdef XFUNC_CF_FAIL
  auto fn = [](const xf::tensor& x) { return x.item<double>(); };
#else
  auto fn = [](const xf::tensor& x) { return xf::sum(x); };
#endif
  // infer_schema runs check_signature first and instantiates nothing more when it fails.
  return xf::detail::schema::infer_schema<decltype(fn)>("test::total").empty() ? 1 : 0;
}
