// Compiled by the host compiler alone and linked with xfunc::cuda: it starts, and answers, on a
// machine without a driver or a GPU as on one with them.
#include <xfunc/cuda.hpp>

#include <iostream>

int main() {
  const bool available = xfunc::cuda_is_available();
  std::cout << "cuda available: " << (available ? "yes" : "no") << ", devices: " << xfunc::cuda_device_count();
  if (!available) std::cout << " (" << xfunc::cuda_unavailable_reason() << ")";
  std::cout << "\n";
  return available == (xfunc::cuda_device_count() > 0) ? 0 : 1;
}
