// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op.name, fn.: parameter 2 of fn has an integer type other than int64_t .*; use int64_t
#include <xfunc/xfunc.hpp>
#include <xfunc/schema/signature.hpp>
namespace xf = xfunc;
int main() {
#ifdef XFUNC_CF_FAIL
  auto fn = [](const xf::tensor& x, double, int n) { return x * static_cast<double>(n); };
#else
  auto fn = [](const xf::tensor& x, double, std::int64_t n) { return x * static_cast<double>(n); };
#endif
  // infer_schema runs check_signature first and instantiates nothing more when it fails.
  return xf::detail::schema::infer_schema<decltype(fn)>("test::times").empty() ? 1 : 0;
}
