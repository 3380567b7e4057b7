#pragma once
// Bitwise equality of tensors, for the tests that results do not depend on the thread count.
#include <cstring>

#include <xfunc/xfunc.hpp>

namespace xfunc_test {

/// Whether a and b have the same dtype, shape and bytes, element by element.
inline bool bitwise_equal(const xfunc::tensor& a, const xfunc::tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  // contiguous data from offset 0 (data<unsigned char>() would add a view's element offset in bytes)
  auto plain = [](const xfunc::tensor& t) {
    xfunc::tensor c = t.contiguous();
    return c.impl()->offset == 0 ? c : t.clone();
  };
  const xfunc::tensor ac = plain(a), bc = plain(b);
  const std::size_t bytes = static_cast<std::size_t>(ac.numel()) * xfunc::dtype_size(ac.dtype());
  return bytes == 0 ||
         std::memcmp(ac.impl()->data<unsigned char>(), bc.impl()->data<unsigned char>(), bytes) == 0;
}

}  // namespace xfunc_test
