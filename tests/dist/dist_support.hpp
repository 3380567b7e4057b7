#pragma once
// Shared by the xf::dist tests: every rank's input, computable on any rank, and the collectives
// simulated in one process with plain ops (the single-process equivalents the distributed
// results are checked against).
#include <cstdint>
#include <utility>
#include <vector>

#include <xfunc/distributed.hpp>

namespace xf = xfunc;
namespace dist_test {

using tensors = std::vector<xf::tensor>;
using perm_t = std::vector<std::pair<int, int>>;

inline int rank() { return xf::dist::world().rank(); }
inline int size() { return xf::dist::world().size(); }

/// Rank r's value in a test: the same on every rank that computes it (it reseeds the generator).
inline xf::tensor data_of_rank(int r, const xf::shape_t& shape, std::uint64_t seed, xf::dtype dt = xf::f64) {
  xf::manual_seed(seed * 7919 + static_cast<std::uint64_t>(r) + 1);
  return xf::randn(shape, dt);
}
/// Every rank's value, rank by rank.
inline tensors all_ranks(const xf::shape_t& shape, std::uint64_t seed, xf::dtype dt = xf::f64) {
  tensors xs;
  for (int r = 0; r < size(); ++r) xs.push_back(data_of_rank(r, shape, seed, dt));
  return xs;
}
inline tensors unstack(const xf::tensor& x) {
  tensors xs;
  for (std::int64_t r = 0; r < x.size(0); ++r) xs.push_back(x.select(0, r));
  return xs;
}

// ---- the collectives in one process: every rank's output from every rank's input ----------

inline xf::tensor total(const tensors& xs) {
  xf::tensor s = xs[0];
  for (std::size_t r = 1; r < xs.size(); ++r) s = s + xs[r];
  return s;
}
inline tensors sim_all_reduce(const tensors& xs, xf::dist::reduce_op op = xf::dist::reduce_op::sum) {
  xf::tensor s = xs[0];
  for (std::size_t r = 1; r < xs.size(); ++r) {
    switch (op) {
      case xf::dist::reduce_op::max: s = xf::maximum(s, xs[r]); break;
      case xf::dist::reduce_op::min: s = xf::minimum(s, xs[r]); break;
      default: s = s + xs[r];
    }
  }
  if (op == xf::dist::reduce_op::mean) s = s / static_cast<double>(xs.size());
  return tensors(xs.size(), s);
}
inline tensors sim_all_gather(const tensors& xs, std::int64_t dim) { return tensors(xs.size(), xf::cat(xs, dim)); }
inline tensors sim_reduce_scatter(const tensors& xs, std::int64_t dim) {
  const xf::tensor s = total(xs);
  const std::int64_t n = s.size(dim) / static_cast<std::int64_t>(xs.size());
  tensors out;
  for (std::size_t r = 0; r < xs.size(); ++r) out.push_back(s.narrow(dim, static_cast<std::int64_t>(r) * n, n));
  return out;
}
inline tensors sim_broadcast(const tensors& xs, int root) { return tensors(xs.size(), xs[static_cast<std::size_t>(root)]); }
inline tensors sim_reduce(const tensors& xs, int root) {
  tensors out;
  for (std::size_t r = 0; r < xs.size(); ++r)
    out.push_back(static_cast<int>(r) == root ? total(xs) : xf::zeros_like(xs[r]));
  return out;
}
inline tensors sim_all_to_all(const tensors& xs, std::int64_t split_dim, std::int64_t concat_dim) {
  const auto N = static_cast<std::int64_t>(xs.size());
  const std::int64_t n = xs[0].size(split_dim) / N;
  tensors out;
  for (std::int64_t r = 0; r < N; ++r) {
    tensors parts;
    for (const auto& x : xs) parts.push_back(x.narrow(split_dim, r * n, n));
    out.push_back(xf::cat(parts, concat_dim));
  }
  return out;
}
inline tensors sim_ppermute(const tensors& xs, const perm_t& perm) {
  tensors out;
  for (const auto& x : xs) out.push_back(xf::zeros_like(x));
  for (const auto& [s, d] : perm) out[static_cast<std::size_t>(d)] = xs[static_cast<std::size_t>(s)];
  return out;
}

/// A ring: rank r sends to r + 1.
inline perm_t ring(int n) {
  perm_t p;
  for (int r = 0; r < n; ++r) p.emplace_back(r, (r + 1) % n);
  return p;
}

}  // namespace dist_test
