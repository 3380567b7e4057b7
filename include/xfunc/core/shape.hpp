#pragma once
/// \file
/// xf::shape_t: a small inline vector of int64_t extents (no heap allocation per tensor).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <sstream>
#include <vector>

#include <xfunc/core/error.hpp>
#include <xfunc/core/linkage.hpp>

namespace xfunc {

/// Shape or strides of a tensor: a random-access range of int64_t, brace-initialisable.
class shape_t {
 public:
  /// The most dimensions a tensor can have.
  static constexpr std::size_t max_dims = 16;
  ///@{
  /// Container types: the elements are int64_t extents, the iterators plain pointers.
  using value_type = std::int64_t;
  using iterator = std::int64_t*;
  using const_iterator = const std::int64_t*;
  ///@}

  /// No extents (the shape of a 0-d tensor).
  shape_t() {}  // NOLINT: user-provided, so value-initialisation does not zero the array
  // Copies only the used extents: shapes are copied on every op, and most have few dims.
  /// Copies the extents.
  shape_t(const shape_t& o) : n_(o.n_) { copy_extents(o); }
  /// Copies the extents.
  shape_t& operator=(const shape_t& o) {
    n_ = o.n_;
    copy_extents(o);
    return *this;
  }
  /// From a braced list of extents: `shape_t{2, 3}`.
  shape_t(std::initializer_list<std::int64_t> l) { assign(l.begin(), l.end()); }
  /// n extents, each equal to v.
  explicit shape_t(std::size_t n, std::int64_t v = 0) { resize(n, v); }
  /// From a range of integers.
  template <class It>
  shape_t(It b, It e) { assign(b, e); }
  /// From a std::vector of extents (implicit, so a vector converts where a shape is expected).
  shape_t(const std::vector<std::int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT

  /// Replaces the extents with those of the range [b, e).
  template <class It>
  void assign(It b, It e) {
    n_ = 0;
    for (; b != e; ++b) push_back(static_cast<std::int64_t>(*b));
  }
  /// Appends an extent (throws xf::error beyond max_dims).
  void push_back(std::int64_t v) {
    if (n_ == max_dims) detail::fail("xf: tensors have at most ", max_dims, " dimensions");
    d_[n_++] = v;
  }
  /// Inserts extent v before position pos.
  void insert(std::size_t pos, std::int64_t v) {
    push_back(0);
    for (std::size_t i = n_ - 1; i > pos; --i) d_[i] = d_[i - 1];
    d_[pos] = v;
  }
  /// Removes the extent at position pos.
  void erase(std::size_t pos) {
    for (std::size_t i = pos; i + 1 < n_; ++i) d_[i] = d_[i + 1];
    --n_;
  }
  /// Makes the number of extents n, new ones equal to v (throws xf::error beyond max_dims).
  void resize(std::size_t n, std::int64_t v = 0) {
    if (n > max_dims) detail::fail("xf: tensors have at most ", max_dims, " dimensions");
    for (std::size_t i = n_; i < n; ++i) d_[i] = v;
    n_ = n;
  }
  /// Number of extents (a tensor's dim()).
  std::size_t size() const { return n_; }
  /// Whether there are no extents (a 0-d tensor's shape).
  bool empty() const { return n_ == 0; }
  /// Extent i (unchecked).
  std::int64_t& operator[](std::size_t i) { return d_[i]; }
// Entries past n_ are never read, but once a default-constructed shape is copied inline GCC 12
// cannot always see that (-Wmaybe-uninitialized false positives at the reads below).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  /// Extent i (unchecked).
  std::int64_t operator[](std::size_t i) const { return d_[i]; }
  /// The last extent.
  std::int64_t back() const { return d_[n_ - 1]; }
  ///@{
  /// Iterators over the extents.
  std::int64_t* begin() { return d_; }
  std::int64_t* end() { return d_ + n_; }
  const std::int64_t* begin() const { return d_; }
  const std::int64_t* end() const { return d_ + n_; }
  ///@}
  /// Pointer to the first extent.
  const std::int64_t* data() const { return d_; }
  /// The extents as a std::vector.
  std::vector<std::int64_t> vec() const { return {begin(), end()}; }

  /// Same number of dimensions and the same extents.
  friend bool operator==(const shape_t& a, const shape_t& b) {
    // a plain loop: std::equal becomes a memcmp call, which costs more for a few extents
    if (a.n_ != b.n_) return false;
    for (std::size_t i = 0; i < a.n_; ++i)
      if (a.d_[i] != b.d_[i]) return false;
    return true;
  }
  /// Prints the extents as `[2, 3]`.
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
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  std::int64_t d_[max_dims];  // entries past n_ are never read (not zeroed: impls hold two shapes)
  std::size_t n_ = 0;
};

/// Dimension lists for reductions and permutations (negative entries count from the end).
using dims_t = std::vector<std::int64_t>;

namespace detail {

// NOTE: [Checked shape arithmetic]
// Extents are int64_t, and so are a tensor's element count, its size in bytes and its
// contiguous strides: all four must fit (API.md §1), and an op whose result shape would not
// throws xf::error ("shape") naming the op and the shape. Every product or sum of extents in
// xfunc that could exceed int64_t goes through the helpers below, never a plain `*` or `+`
// (which would overflow silently, undefined behaviour): mul_fits / add_fits for single steps,
// try_numel / checked_numel for element counts, check_shape for a whole tensor shape (count,
// bytes and strides in one pass; the path every new tensor takes, in make_dense_impl). Plain
// products remain only for partial counts and offsets of a tensor with elements whose shape
// already passed check_shape (they cannot exceed its count). On the common path each extent
// costs one multiplication with an overflow flag and no allocation; messages (with the exact,
// unbounded count, for which exact_count does decimal arithmetic) are built only on the failure
// path.
// A shape with a zero extent has 0 elements however large its other extents, but its
// contiguous strides must still fit (as in torch).

/// r = a * b; false (r unspecified) when the product does not fit in int64_t.
[[nodiscard]] inline bool mul_fits(std::int64_t a, std::int64_t b, std::int64_t& r) noexcept {
  return !__builtin_mul_overflow(a, b, &r);
}
/// r = a + b; false (r unspecified) when the sum does not fit in int64_t.
[[nodiscard]] inline bool add_fits(std::int64_t a, std::int64_t b, std::int64_t& r) noexcept {
  return !__builtin_add_overflow(a, b, &r);
}

/// An unbounded non-negative integer (decimal limbs), for the exact counts in error messages.
class exact_count {
 public:
  explicit exact_count(std::uint64_t v = 0) {
    do {
      d_.push_back(static_cast<std::uint32_t>(v % base));
      v /= base;
    } while (v);
  }
  exact_count& operator*=(const exact_count& o) {
    std::vector<std::uint32_t> r(d_.size() + o.d_.size(), 0);
    for (std::size_t i = 0; i < d_.size(); ++i) {
      std::uint64_t carry = 0;
      for (std::size_t j = 0; j < o.d_.size() || carry; ++j) {
        const std::uint64_t cur =
            r[i + j] + carry + (j < o.d_.size() ? std::uint64_t{d_[i]} * o.d_[j] : 0);  // < 2^64
        r[i + j] = static_cast<std::uint32_t>(cur % base);
        carry = cur / base;
      }
    }
    d_ = std::move(r);
    trim();
    return *this;
  }
  exact_count& operator+=(const exact_count& o) {
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < std::max(d_.size(), o.d_.size()) || carry; ++i) {
      if (i == d_.size()) d_.push_back(0);
      const std::uint64_t cur = d_[i] + carry + (i < o.d_.size() ? o.d_[i] : 0);
      d_[i] = static_cast<std::uint32_t>(cur % base);
      carry = cur / base;
    }
    return *this;
  }
  /// Whether the value is at most `limit`.
  bool at_most(std::uint64_t limit) const {
    if (d_.size() > 3) return false;
    std::uint64_t v = 0;
    for (std::size_t i = d_.size(); i-- > 0;) {
      if (v > (limit - d_[i]) / base) return false;  // v * base + d_[i] > limit
      v = v * base + d_[i];
    }
    return v <= limit;
  }
  friend std::ostream& operator<<(std::ostream& os, const exact_count& c) {
    os << c.d_.back();
    for (std::size_t i = c.d_.size() - 1; i-- > 0;) {
      const std::uint32_t limb = c.d_[i];
      for (std::uint32_t p = base / 10; p > 1 && limb < p; p /= 10) os << '0';
      os << limb;
    }
    return os;
  }

 private:
  static constexpr std::uint32_t base = 1000000000;
  void trim() {
    while (d_.size() > 1 && d_.back() == 0) d_.pop_back();
  }
  std::vector<std::uint32_t> d_;  // little-endian base-1e9 digits, never empty
};

/// The exact product of the extents of `s` (from dimension `from` on; 0 when one of them is 0).
inline exact_count exact_numel(const shape_t& s, std::size_t from = 0) {
  exact_count n(1);
  for (std::size_t i = from; i < s.size(); ++i) n *= exact_count(static_cast<std::uint64_t>(s[i]));
  return n;
}

inline constexpr std::uint64_t max_extent_product = static_cast<std::uint64_t>(INT64_MAX);
/// The largest byte size a buffer may have: it must fit in both int64_t and std::size_t.
inline constexpr std::uint64_t max_byte_size =
    std::min<std::uint64_t>(static_cast<std::uint64_t>(INT64_MAX), static_cast<std::uint64_t>(SIZE_MAX));

/// Throws the xf::error ("shape") for a shape that failed a check: names `fn` and the shape
/// (`what`, if given, says which shape it is) and says what is wrong: a negative extent, an
/// element count, contiguous strides (when `layout`) or a byte size (when `itemsize` > 0) that
/// do not fit in int64_t. NOTE: [Checked shape arithmetic]
[[noreturn, gnu::cold]] XFUNC_RUNTIME void fail_shape(const char* fn, const shape_t& s, const char* what,
                                                       std::size_t itemsize, bool layout);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME void fail_shape(const char* fn, const shape_t& s, const char* what, std::size_t itemsize,
                              bool layout) {
  std::ostringstream os;
  os << fn << ": shape " << s;
  if (what) os << " (" << what << ")";
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] < 0)
      fail(os.str(), " has a negative extent (", s[i], " in dimension ", i, "); every extent must be >= 0");
  const exact_count n = exact_numel(s);
  if (!n.at_most(max_extent_product))
    fail(os.str(), " has ", n, " elements, more than int64_t can hold (at most ", INT64_MAX,
         "); a tensor's element count and byte size must fit in int64_t");
  if (layout) {
    exact_count stride(1);  // the contiguous stride of dimension i: product of the extents after it
    for (std::size_t i = s.size(); i-- > 0;) {
      if (!stride.at_most(max_extent_product))
        fail(os.str(), " has ", n, " elements, but its contiguous strides do not fit in int64_t (dimension ", i,
             " would need a stride of ", stride, ", more than ", INT64_MAX, ")");
      stride *= exact_count(static_cast<std::uint64_t>(std::max<std::int64_t>(s[i], 1)));
    }
  }
  if (itemsize > 0) {
    exact_count bytes = n;
    bytes *= exact_count(itemsize);
    if (!bytes.at_most(max_byte_size))
      fail(os.str(), " with ", itemsize, "-byte elements needs ", bytes, " bytes, more than ",
           max_byte_size == max_extent_product ? "int64_t" : "std::size_t", " can hold (at most ", max_byte_size,
           "); use fewer elements or a smaller dtype");
  }
  fail(os.str(), " failed a size check");  // not reached: the caller saw one of the above
}
#endif

/// n = the element count of `s` (0 when an extent is 0, however large the others); false when
/// an extent is negative or the count does not fit in int64_t. NOTE: [Checked shape arithmetic]
[[nodiscard]] inline bool try_numel(const shape_t& s, std::int64_t& n) noexcept {
  std::int64_t acc = 1;  // product of max(extent, 1): the count unless an extent is 0
  bool negative = false, zero = false, overflow = false;
  for (auto e : s) {
    negative |= e < 0;
    zero |= e == 0;
    overflow |= !mul_fits(acc, e > 1 ? e : 1, acc);
  }
  n = zero ? 0 : acc;
  return !negative && (zero || !overflow);
}

/// The element count of `s`; throws ("shape") naming `fn` when an extent is negative or the
/// count does not fit in int64_t. `what` (optional) says which shape `s` is in the message.
inline std::int64_t checked_numel(const shape_t& s, const char* fn, const char* what = nullptr) {
  std::int64_t n;
  if (!try_numel(s, n)) [[unlikely]]
    fail_shape(fn, s, what, 0, false);
  return n;
}

/// Checks `s` as the shape of a tensor of `itemsize`-byte elements (0: no byte-size check):
/// no negative extent, and element count, byte size and contiguous strides that fit in int64_t
/// (and the bytes in std::size_t). Returns the element count; writes the contiguous strides to
/// `*strides` when given. Throws ("shape") naming `fn`. NOTE: [Checked shape arithmetic]
inline std::int64_t check_shape(const shape_t& s, const char* fn, std::size_t itemsize = 0,
                                shape_t* strides = nullptr) {
  const std::size_t r = s.size();
  if (strides) strides->resize(r);
  std::int64_t acc = 1;  // product of max(extent, 1) over the dims after i: the stride of dim i
  bool negative = false, zero = false, stride_overflow = false, count_overflow = false;
  for (std::size_t i = r; i-- > 0;) {
    const std::int64_t e = s[i];
    if (strides) (*strides)[i] = acc;
    negative |= e < 0;
    zero |= e == 0;
    const bool o = !mul_fits(acc, e > 1 ? e : 1, acc);
    stride_overflow |= o && i > 0;  // the product is the stride of dim i - 1
    count_overflow |= o;
  }
  const std::int64_t n = zero ? 0 : acc;
  std::int64_t bytes = 0;
  if (negative || stride_overflow || (count_overflow && !zero) ||
      (itemsize > 0 && (!mul_fits(n, static_cast<std::int64_t>(itemsize), bytes) ||
                        static_cast<std::uint64_t>(bytes) > max_byte_size))) [[unlikely]]
    fail_shape(fn, s, nullptr, itemsize, true);
  return n;
}

/// The element count of a shape (checked; the shapes of existing tensors always pass).
inline std::int64_t numel_of(const shape_t& s) { return checked_numel(s, "xf"); }
/// Row-major strides of a contiguous tensor of shape `s` (checked).
inline shape_t contiguous_strides(const shape_t& s) {
  shape_t st;
  check_shape(s, "xf", 0, &st);
  return st;
}
/// Normalises a possibly negative dim against `rank` (dims of a rank-r tensor are [-r, r); a 0-d
/// tensor takes -1 and 0, as in torch); `fn` names the call in the message.
inline std::int64_t wrap_dim(std::int64_t d, std::int64_t rank, const char* what = "dim", const char* fn = "xf") {
  std::int64_t r = std::max<std::int64_t>(rank, 1);
  if (d < -r || d >= r)
    fail(fn, ": ", what, " ", d, " is out of range for a tensor of ", rank,
         " dimensions (expected a value in [", -r, ", ", r - 1, "])");
  return d < 0 ? d + r : d;
}
/// Normalises the position of a new dimension inserted into a tensor of `rank` dims (unsqueeze,
/// stack, vmap's out_dim): [-(rank + 1), rank].
inline std::int64_t wrap_new_dim(std::int64_t d, std::int64_t rank, const char* what, const char* fn) {
  const std::int64_t r = rank + 1;
  if (d < -r || d >= r)
    fail(fn, ": ", what, " ", d, " is out of range for inserting a dimension into a tensor of ", rank,
         " dimensions (expected a value in [", -r, ", ", r - 1, "])");
  return d < 0 ? d + r : d;
}
/// NumPy broadcasting of two shapes; throws naming both shapes (and `fn`, the call) on mismatch.
inline shape_t broadcast_shapes(const shape_t& a, const shape_t& b, const char* fn = "xf") {
  std::size_t n = std::max(a.size(), b.size());
  shape_t out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    std::int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      fail(fn, ": shapes ", a, " and ", b, " cannot be broadcast together (dimension ", i, ": ", x, " vs ", y,
           "); each dimension must be equal or 1 in one of them");
    out[i] = x == 1 ? y : x;
  }
  return out;
}
}  // namespace detail
}  // namespace xfunc
