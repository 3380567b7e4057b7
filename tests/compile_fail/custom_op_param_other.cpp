// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::custom_op.name, fn.: parameter 0 of fn has an unsupported type; use one of the types listed in API.md
#include <xfunc/xfunc.hpp>
#include <xfunc/schema/signature.hpp>
namespace xf = xfunc;
int main() {
#ifdef XFUNC_CF_FAIL
  auto fn = [](const char* tag, const xf::tensor& x) { return tag ? x : x; };
#else
  auto fn = [](const std::string& tag, const xf::tensor& x) { return tag.empty() ? x : x; };
#endif
  // infer_schema runs check_signature first and instantiates nothing more when it fails.
  return xf::detail::schema::infer_schema<decltype(fn)>("test::tagged").empty() ? 1 : 0;
}
