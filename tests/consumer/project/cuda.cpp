// Compiled by the host compiler alone and linked with xfunc::cuda: it starts, and answers, on a
// machine with or without a GPU. With one it computes on a cuda tensor (the kernels come with
// xfunc::cuda); without one, a cuda tensor is refused with "CUDA is not available".
#include <iostream>
#include <string>

#include <xfunc/xfunc.hpp>  // with xfunc::cuda: the CUDA backend too

int main() {
  namespace xf = xfunc;
  const bool available = xf::cuda_is_available();
  std::cout << "cuda available: " << (available ? "yes" : "no") << ", devices: " << xf::cuda_device_count();
  if (!available) std::cout << " (" << xf::cuda_unavailable_reason() << ")";
  std::cout << '\n';
  if (available != (xf::cuda_device_count() > 0)) return 1;
  if (available) {
    const xf::tensor t = xf::sum(xf::ones({3}, xf::f32, xf::cuda) * 2.0);
    std::cout << "sum on cuda: " << t << '\n';
    return t.item<float>() == 6.0f ? 0 : 1;
  }
  try {
    (void)xf::ones({3}, xf::f32, xf::cuda);
  } catch (const xf::error& e) {
    std::cout << "refused: " << e.what() << '\n';
    return std::string(e.what()).find("CUDA is not available") != std::string::npos ? 0 : 1;
  }
  return 1;
}
