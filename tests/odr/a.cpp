// Two translation units that both include the whole library link into one program: header-only
// state (layer stack, level counter, RNG, once-flags) is shared, not duplicated.
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

std::size_t depth_seen_from_b();

xf::tensor grad_in_a(const xf::tensor& x) {
  return xf::grad([](const xf::tensor& t) { return xf::sum(xf::sin(t)); })(x);
}

std::size_t depth_inside_transform_from_a() {
  std::size_t seen = 0;
  xf::vmap([&](const xf::tensor& t) {
    seen = depth_seen_from_b();  // b's view of the thread-local layer stack
    return t;
  })(xf::ones({2, 2}));
  return seen;
}
