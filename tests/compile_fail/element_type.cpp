// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf: unsupported element type
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  constexpr auto d = xf::dtype_of<std::string>(); (void)d;
#else
  constexpr auto d = xf::dtype_of<double>(); (void)d;
#endif
  return 0;
}
