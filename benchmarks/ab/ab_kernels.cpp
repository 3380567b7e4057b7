// One side of an A/B comparison of two versions of xfunc's headers (ab_headers.sh): compiled as
// a shared library against one version, with hidden visibility so that two copies of xfunc can
// live in one process (ab_host.cpp loads each with RTLD_LOCAL). Exports the kernels by number;
// each call computes its result to the end (a deferred pointwise result is evaluated too).
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

namespace {

struct kernel {
  const char* name;
  std::function<xf::tensor()> run;
};

// The inputs come from the host, so that every version reads the same values.
xf::tensor from_host(const float* values, const xf::shape_t& shape) {
  xf::tensor t = xf::empty(shape, xf::f32);
  std::memcpy(t.impl()->data<float>(), values, static_cast<std::size_t>(t.numel()) * sizeof(float));
  return t;
}

std::vector<kernel>& kernels() {
  static std::vector<kernel> k;
  return k;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int ab_init(const float* values, std::int64_t n) {
  if (n < (std::int64_t(1) << 24)) return 0;  // the host passes 2^24 values
  xf::set_num_threads(1);
  const xf::tensor x = from_host(values, {std::int64_t(1) << 24});
  const xf::tensor sq = from_host(values, {2048, 2048});
  const xf::tensor big = from_host(values, {4096, 4096});
  const xf::tensor sq64 = from_host(values, {1448, 1448}).to(xf::f64);  // 16 MiB, as sq
  kernels() = {
      {"x * a + b, 2^24", [x] { return x * 1.7 + (-0.3); }},
      {"exp(x), 2^24", [x] { return xf::exp(x); }},
      {"exp(x * a + b), 2^24", [x] { return xf::exp(x * 1.7 + (-0.3)); }},
      {"t().contiguous(), 2048^2", [sq] { return sq.t().contiguous(); }},
      {"t().contiguous(), 4096^2", [big] { return big.t().contiguous(); }},
      {"t().contiguous(), 1448^2 f64", [sq64] { return sq64.t().contiguous(); }},
      {"permute({2,0,1}), [64,256,256]", [sq] { return sq.view({64, 256, 256}).permute({2, 0, 1}).contiguous(); }},
      {"sum(a), 2048^2", [sq] { return xf::sum(sq); }},
      {"sum(a, {1}), 2048^2", [sq] { return xf::sum(sq, {1}); }},
      {"sum(a, {0}), 2048^2", [sq] { return xf::sum(sq, {0}); }},
      {"amax(a, {1}), 2048^2", [sq] { return xf::amax(sq, {1}); }},
      {"sum(a, {1}), 4096^2", [big] { return xf::sum(big, {1}); }},
      {"amax(a, {1}), 4096^2", [big] { return xf::amax(big, {1}); }},
      {"softmax(a, 1), 2048^2", [sq] { return xf::softmax(sq, 1); }},
  };
  return static_cast<int>(kernels().size());
}

extern "C" __attribute__((visibility("default"))) const char* ab_name(int i) { return kernels()[std::size_t(i)].name; }

extern "C" __attribute__((visibility("default"))) void ab_run(int i) {
  const xf::tensor r = kernels()[std::size_t(i)].run();
  r.impl()->prepare_access();  // computes a deferred result
}
