// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op.name, fn.: fn must be a function, a function pointer, a non-generic lambda
#include <xfunc/xfunc.hpp>
#include <xfunc/schema/signature.hpp>
namespace xf = xfunc;
int main() {
#ifdef XFUNC_CF_FAIL
  auto fn = [](const auto& x) { return x; };
#else
  auto fn = [](const xf::tensor& x) { return x; };
#endif
  // infer_schema runs check_signature first and instantiates nothing more when it fails.
  return xf::detail::schema::infer_schema<decltype(fn)>("test::same").empty() ? 1 : 0;
}
