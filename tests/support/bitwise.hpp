#pragma once
// Bitwise equality of tensors, for the tests that results do not depend on the thread count.
#include <cstring>

#include <xfunc/xfunc.hpp>

namespace xfunc_test {

/// Whether a and b have the same dtype, shape and bytes, element by element.
inline bool bitwise_equal(const xfunc::tensor& a, const xfunc::tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  const xfunc::tensor ac = a.clone(), bc = b.clone();  // fresh buffers: their data starts at offset 0
  const std::size_t bytes = static_cast<std::size_t>(ac.numel()) * xfunc::dtype_size(ac.dtype());
  return bytes == 0 ||
         std::memcmp(ac.impl()->data<unsigned char>(), bc.impl()->data<unsigned char>(), bytes) == 0;
}

}  // namespace xfunc_test
