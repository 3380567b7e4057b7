#pragma once
/// \file
/// CUDA devices (API.md section 7; CMake target xfunc::cuda): whether CUDA can be used, how many
/// devices there are, and waiting for them. The driver and NVRTC are loaded on first use, so a
/// program linked with xfunc::cuda starts and runs on the cpu where there is no driver or no GPU
/// (NOTE: [Lazy CUDA libraries]). Including it also brings the CUDA backend of the ops
/// (include/xfunc/cuda/ops.hpp; docs/cuda.md lists the ops with cuda kernels).
#include <xfunc/cuda/driver.hpp>
#include <xfunc/cuda/nvrtc.hpp>
#include <xfunc/cuda/ops.hpp>

namespace xfunc {

/// Whether CUDA can be used: the NVIDIA driver loads, starts, and sees at least one device.
/// False, never a crash, without a driver or a device. The answer is fixed for the process.
inline bool cuda_is_available() { return detail::cuda::driver().usable; }

/// The number of CUDA devices (0 when CUDA is not available).
inline int cuda_device_count() { return detail::cuda::driver().device_count; }

/// Why CUDA is not available ("" when it is): the loader's or the driver's message.
inline const std::string& cuda_unavailable_reason() { return detail::cuda::driver().why_not; }

/// Waits until all work queued on `d` (default: the first GPU) is done. Throws xf::error ("CUDA is
/// not available", with the reason) when CUDA cannot be used, and for a device that does not exist.
inline void cuda_synchronize(device d = cuda) {
  constexpr const char* what = "xf::cuda_synchronize";
  if (d.kind != device_kind::cuda) detail::fail(what, ": ", d, " is not a cuda device; pass xf::cuda or device{cuda, i}");
  const detail::cuda::driver_api& drv = detail::cuda::usable_driver(what);
  detail::cuda::make_current(drv, d.index, what);
  detail::cuda::check(drv, drv.ctx_synchronize(), what);
}

}  // namespace xfunc
