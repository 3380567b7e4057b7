// A function that mutates tensors (in place, through views, and its own input), traced with
// xf::make_fx before and after xf::functionalize. The functionalized graph has no in-place op
// left except the final copy of the new value into the caller's input.
#include <xfunc/xfunc.hpp>

#include <iostream>

namespace xf = xfunc;

namespace {
xf::tensor step(const xf::tensor& x) {
  xf::tensor y = x.clone();
  y.mul_(2.0);                        // in place on an intermediate
  y.select(0, 0).add_(1.0);           // in place through a view: writes row 0 of y
  xf::tensor flat = x.view({-1});
  flat.sub_(0.5);                     // mutates the caller's tensor through a view
  return xf::sum(y * y, {1});
}
}  // namespace

int main() {
  xf::tensor x = xf::arange(0.0, 6.0, 1.0, xf::f32).reshape({2, 3});

  xf::graph before = xf::make_fx(step)(x);
  std::cout << "traced as written (" << before.count("xf::mul_") + before.count("xf::add_") + before.count("xf::sub_")
            << " in-place ops):\n"
            << before << "\n";

  xf::graph after = xf::make_fx(xf::functionalize(step))(x);
  std::cout << "functionalized (" << after.count("xf::mul_") + after.count("xf::add_") + after.count("xf::sub_")
            << " in-place ops, " << after.count("xf::copy_") << " copy back into the input):\n"
            << after << "\n";

  // both graphs, and both functions, compute the same thing and mutate the input the same way
  xf::tensor a = x.clone(), b = x.clone(), c = x.clone();
  xf::tensor ya = step(a);
  xf::tensor yb = xf::functionalize(step)(b);
  xf::tensor yc = after(c)[0];
  std::cout << "step(x) = " << ya << "\nx afterwards = " << a << "\n";
  const bool same = xf::allclose(ya, yb) && xf::allclose(ya, yc) && xf::allclose(a, b) && xf::allclose(a, c);
  // and the functionalized function composes with grad
  xf::tensor g = xf::grad([](const xf::tensor& t) { return xf::sum(xf::functionalize(step)(t)); })(x.clone());
  std::cout << "grad of sum(step(x)) = " << g << "\n";
  const bool no_inplace = after.count("xf::mul_") + after.count("xf::add_") + after.count("xf::sub_") == 0;
  std::cout << (same && no_inplace ? "ok" : "MISMATCH") << "\n";
  return same && no_inplace ? 0 : 1;
}
