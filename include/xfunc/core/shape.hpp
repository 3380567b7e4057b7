#pragma once
// xf::shape_t: a small inline vector of int64_t extents (no heap allocation per tensor).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include <xfunc/core/error.hpp>

namespace xfunc {

/// Shape or strides of a tensor: a random-access range of int64_t, brace-initialisable.
class shape_t {
 public:
  static constexpr std::size_t max_dims = 16;
  using value_type = std::int64_t;
  using iterator = std::int64_t*;
  using const_iterator = const std::int64_t*;

  shape_t() {}  // NOLINT: user-provided, so value-initialisation does not zero the array
  // Copies only the used extents: shapes are copied on every op, and most have few dims.
  shape_t(const shape_t& o) : n_(o.n_) { copy_extents(o); }
  shape_t& operator=(const shape_t& o) {
    n_ = o.n_;
    copy_extents(o);
    return *this;
  }
  shape_t(std::initializer_list<std::int64_t> l) { assign(l.begin(), l.end()); }
  explicit shape_t(std::size_t n, std::int64_t v = 0) { resize(n, v); }
  template <class It>
  shape_t(It b, It e) { assign(b, e); }
  shape_t(const std::vector<std::int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT

  template <class It>
  void assign(It b, It e) {
    n_ = 0;
    for (; b != e; ++b) push_back(static_cast<std::int64_t>(*b));
  }
  void push_back(std::int64_t v) {
    if (n_ == max_dims) detail::fail("xf: tensors have at most ", max_dims, " dimensions");
    d_[n_++] = v;
  }
  void insert(std::size_t pos, std::int64_t v) {
    push_back(0);
    for (std::size_t i = n_ - 1; i > pos; --i) d_[i] = d_[i - 1];
    d_[pos] = v;
  }
  void erase(std::size_t pos) {
    for (std::size_t i = pos; i + 1 < n_; ++i) d_[i] = d_[i + 1];
    --n_;
  }
  void resize(std::size_t n, std::int64_t v = 0) {
    if (n > max_dims) detail::fail("xf: tensors have at most ", max_dims, " dimensions");
    for (std::size_t i = n_; i < n; ++i) d_[i] = v;
    n_ = n;
  }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  std::int64_t& operator[](std::size_t i) { return d_[i]; }
  std::int64_t operator[](std::size_t i) const { return d_[i]; }
  std::int64_t back() const { return d_[n_ - 1]; }
  std::int64_t* begin() { return d_; }
  std::int64_t* end() { return d_ + n_; }
  const std::int64_t* begin() const { return d_; }
  const std::int64_t* end() const { return d_ + n_; }
  const std::int64_t* data() const { return d_; }
  std::vector<std::int64_t> vec() const { return {begin(), end()}; }

  friend bool operator==(const shape_t& a, const shape_t& b) {
    // a plain loop: std::equal becomes a memcmp call, which costs more for a few extents
    if (a.n_ != b.n_) return false;
    for (std::size_t i = 0; i < a.n_; ++i)
      if (a.d_[i] != b.d_[i]) return false;
    return true;
  }
  friend std::ostream& operator<<(std::ostream& os, const shape_t& s) {
    os << '[';
    for (std::size_t i = 0; i < s.n_; ++i) os << (i ? ", " : "") << s.d_[i];
    return os << ']';
  }

 private:
  // Up to four extents inline (std::copy_n becomes a memcpy call, which costs more than the copy).
  void copy_extents(const shape_t& o) {
    if (n_ > 4) {
      std::copy_n(o.d_, n_, d_);
      return;
    }
    if (n_ > 0) d_[0] = o.d_[0];
    if (n_ > 1) d_[1] = o.d_[1];
    if (n_ > 2) d_[2] = o.d_[2];
    if (n_ > 3) d_[3] = o.d_[3];
  }

  std::int64_t d_[max_dims];  // entries past n_ are never read (not zeroed: impls hold two shapes)
  std::size_t n_ = 0;
};

/// Dimension lists for reductions and permutations (negative entries count from the end).
using dims_t = std::vector<std::int64_t>;

namespace detail {
inline std::int64_t numel_of(const shape_t& s) {
  std::int64_t n = 1;
  for (auto e : s) n *= e;
  return n;
}
inline shape_t contiguous_strides(const shape_t& s) {
  shape_t st(s.size());
  std::int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<std::int64_t>(s[i], 1);
  }
  return st;
}
/// Normalises a possibly negative dim against `rank` (dims of a rank-r tensor are [-r, r)).
inline std::int64_t wrap_dim(std::int64_t d, std::int64_t rank, const char* what = "dim") {
  std::int64_t r = std::max<std::int64_t>(rank, 1);
  if (d < -r || d >= r)
    fail("xf: ", what, " ", d, " is out of range for a tensor of ", rank,
         " dimensions (expected a value in [", -r, ", ", r - 1, "])");
  return d < 0 ? d + r : d;
}
/// NumPy broadcasting of two shapes; throws naming both shapes on mismatch.
inline shape_t broadcast_shapes(const shape_t& a, const shape_t& b) {
  std::size_t n = std::max(a.size(), b.size());
  shape_t out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    std::int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      fail("xf: shapes ", a, " and ", b, " cannot be broadcast together (dimension ", i, ": ", x,
           " vs ", y, ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}
}  // namespace detail
}  // namespace xfunc
