// The CUDA runtime layer on a GPU: a kernel compiled by NVRTC for the device's own architecture,
// loaded, launched on device memory, its result copied back. Exits 77 (ctest: skipped) where CUDA
// is not available, so a machine without a GPU never reports it as passed.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <xfunc/cuda.hpp>

namespace xf = xfunc;
namespace xc = xfunc::detail::cuda;

int main() try {
  if (!xf::cuda_is_available()) {
    std::printf("skipped: CUDA is not available (%s)\n", xf::cuda_unavailable_reason().c_str());
    return 77;
  }
  const xc::driver_api& d = xc::driver();
  xc::make_current(d, 0, "test");
  CUdevice dev = 0;
  xc::check(d, d.device_get(&dev, 0), "cuDeviceGet");
  int major = 0, minor = 0;
  xc::check(d, d.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attribute");
  xc::check(d, d.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attribute");
  const std::string arch = "sm_" + std::to_string(major * 10 + minor);
  const std::string source = R"(
extern "C" __global__ void axpy(float* y, const float* x, float a, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";
  const std::string cubin = xc::kernels().get(xc::nvrtc(), source, arch, {}, "test");
  CUmodule module = nullptr;
  xc::check(d, d.module_load_data(&module, cubin.data()), "cuModuleLoadData");
  CUfunction fn = nullptr;
  xc::check(d, d.module_get_function(&fn, module, "axpy"), "cuModuleGetFunction");

  long long n = 1 << 20;
  std::vector<float> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  for (long long i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = float(i % 97), y[static_cast<std::size_t>(i)] = 1.0f;
  CUdeviceptr dx = 0, dy = 0;
  const std::size_t bytes = x.size() * sizeof(float);
  xc::check(d, d.mem_alloc(&dx, bytes), "cuMemAlloc");
  xc::check(d, d.mem_alloc(&dy, bytes), "cuMemAlloc");
  xc::check(d, d.memcpy_htod(dx, x.data(), bytes), "cuMemcpyHtoD");
  xc::check(d, d.memcpy_htod(dy, y.data(), bytes), "cuMemcpyHtoD");
  float a = 2.0f;
  void* args[] = {&dy, &dx, &a, &n};
  xc::check(d, d.launch_kernel(fn, static_cast<unsigned>((n + 255) / 256), 1, 1, 256, 1, 1, 0, nullptr, args, nullptr),
            "cuLaunchKernel");
  xf::cuda_synchronize();
  xc::check(d, d.memcpy_dtoh(y.data(), dy, bytes), "cuMemcpyDtoH");
  d.mem_free(dx);
  d.mem_free(dy);
  for (long long i = 0; i < n; ++i)
    if (y[static_cast<std::size_t>(i)] != 2.0f * float(i % 97) + 1.0f) {
      std::printf("FAILED: y[%lld] = %g\n", i, double(y[static_cast<std::size_t>(i)]));
      return 1;
    }
  std::printf("passed: axpy of %lld floats on %s (%d device(s), driver %d)\n", n, arch.c_str(), xf::cuda_device_count(),
              d.version);
  return 0;
} catch (const std::exception& e) {
  std::printf("FAILED: %s\n", e.what());
  return 1;
}
