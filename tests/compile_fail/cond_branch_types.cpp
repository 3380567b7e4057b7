// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::cond.pred, true_fn, false_fn, operands.*: true_fn and false_fn must return the same C
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
int main() {
  xf::tensor x{1.0, 2.0};
#ifdef XFUNC_CF_FAIL
  auto y = xf::cond(xf::scalar(true), [](const xf::tensor& t) { return t * 2.0; },
                    [](const xf::tensor& t) { return std::pair{t, t}; }, x);
#else
  auto y = xf::cond(xf::scalar(true), [](const xf::tensor& t) { return t * 2.0; },
                    [](const xf::tensor& t) { return t + 1.0; }, x);
  (void)y;
#endif
  return 0;
}
