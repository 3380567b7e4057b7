#pragma once
// Shared helpers for the jacobian / hessian benchmarks: raw float access to xf tensors and the
// max abs difference against a row-major reference buffer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <xfunc/xfunc.hpp>

namespace jac_bench {

namespace xf = xfunc;

/// Row-major float data of t (t made contiguous first; keep the returned tensor alive).
inline std::vector<float> to_vector(const xf::tensor& t) {
  xf::tensor c = t.contiguous();
  const float* p = c.impl()->template data<float>();
  return std::vector<float>(p, p + c.numel());
}

inline const float* fdata(const xf::tensor& contiguous_t) { return contiguous_t.impl()->template data<float>(); }

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::abs(a[i] - b[i])));
  return m;
}
inline double max_abs(const std::vector<float>& a) {
  double m = 0;
  for (float v : a) m = std::max(m, double(std::abs(v)));
  return m;
}

/// The layer tanh(W x + b): W [out, in] scaled by 1/sqrt(in), b [out], x [in] (float32, seeded),
/// with raw float copies for the hand-written baselines.
struct tanh_layer {
  xf::tensor W, b, x;
  std::vector<float> Wv, bv, xv;
  tanh_layer(std::int64_t out, std::int64_t in, std::uint64_t seed) {
    xf::manual_seed(seed);
    W = xf::randn({out, in}) * (1.0 / std::sqrt(double(in)));
    b = xf::randn({out}) * 0.1;
    x = xf::randn({in});
    Wv = to_vector(W);
    bv = to_vector(b);
    xv = to_vector(x);
  }
};

}  // namespace jac_bench
