// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op.name, fn.: parameter 1 of fn has type float; use double
#include <xfunc/xfunc.hpp>
#include <xfunc/schema/signature.hpp>
namespace xf = xfunc;
int main() {
#ifdef XFUNC_CF_FAIL
  auto fn = [](const xf::tensor& x, float s) { return x * static_cast<double>(s); };
#else
  auto fn = [](const xf::tensor& x, double s) { return x * s; };
#endif
  // infer_schema runs check_signature first and instantiates nothing more when it fails.
  return xf::detail::schema::infer_schema<decltype(fn)>("test::scale").empty() ? 1 : 0;
}
