// Two translation units that both include the whole library link into one program: header-only
// state (layer stack, level counter, RNG, once-flags) is shared, not duplicated.
#include <xfunc/xfunc.hpp>

// The whole library must not pull <immintrin.h> (58k lines, a second of every user's compile) into
// a build that does not target AVX: xsimd takes only the SSE headers there, and so must we.
// (_IMMINTRIN_H_INCLUDED is GCC's include guard, __IMMINTRIN_H clang's.)
#if !defined(__AVX__) && (defined(_IMMINTRIN_H_INCLUDED) || defined(__IMMINTRIN_H))
#error "<xfunc/xfunc.hpp> includes <immintrin.h> in a build without AVX (see backend/streaming.hpp)"
#endif

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
