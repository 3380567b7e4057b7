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

}  // namespace jac_bench
