#pragma once
/// \file
/// The CUDA driver API, loaded on first use (NOTE: [Lazy CUDA libraries]).
#include <cuda.h>  // types and constants only: every function is called through a loaded pointer

#include <string>
#include <vector>

#include <xfunc/core/device.hpp>
#include <xfunc/core/error.hpp>
#include <xfunc/cuda/shared_library.hpp>

namespace xfunc::detail::cuda {

// NOTE: [Lazy CUDA libraries]
// A program linked with xfunc::cuda must start, and compute on the cpu, on a machine with no
// NVIDIA driver or no GPU (CI, laptops, a cluster's login node); "is CUDA available?" must be a
// question, never a crash or a loader error at start-up. So nothing links libcuda or libnvrtc:
// the driver (libcuda.so.1, shipped with the kernel driver, never with the toolkit) and NVRTC
// (libnvrtc.so.13, from the toolkit) are opened with dlopen on first use, and each function is
// called through a pointer looked up once. The driver API, not the runtime (cudart), because the
// driver API loads the modules NVRTC produces and needs no kernel registration at start-up; the
// toolkit's cuda.h still gives the types and constants at compile time. XFUNC_CUDA_DRIVER and
// XFUNC_NVRTC_LIBRARY name other files to load (tests use the toolkit's stub libcuda.so, which
// loads but answers every call with CUDA_ERROR_STUB_LIBRARY).

/// The driver functions xfunc calls, looked up in one loaded libcuda.
struct driver_api {
  shared_library library;
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuMemcpyHtoDAsync) memcpy_htod_async = nullptr;
  decltype(&::cuMemcpyDtoHAsync) memcpy_dtoh_async = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuStreamQuery) stream_query = nullptr;

  /// Whether CUDA can be used: the library loaded, every function was found, cuInit succeeded
  /// and there is at least one device.
  bool usable = false;
  /// The number of devices (0 unless usable).
  int device_count = 0;
  /// The driver's CUDA version (e.g. 13000), 0 if unknown.
  int version = 0;
  /// Why CUDA cannot be used (empty when usable).
  std::string why_not;
};

/// The name and description of a driver result, e.g. "CUDA_ERROR_NO_DEVICE (no CUDA-capable
/// device is detected)"; just the number when the driver cannot say.
inline std::string result_text(const driver_api& d, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.get_error_name) d.get_error_name(r, &name);
  if (d.get_error_string) d.get_error_string(r, &text);
  return str_cat(name ? name : "CUresult", " ", static_cast<int>(r), text ? str_cat(" (", text, ")") : std::string());
}

/// Loads a driver from `candidates` and asks it for its devices; never throws.
inline driver_api load_driver(const std::vector<std::string>& candidates) {
  driver_api d;
  d.library = shared_library(candidates);
  if (!d.library) {
    d.why_not = "the NVIDIA driver library (libcuda.so.1) cannot be loaded: " + d.library.why_not() +
                "; install the NVIDIA driver, or use the cpu";
    return d;
  }
  shared_library& l = d.library;
  // cuda.h maps the unversioned names to their current versions (cuMemAlloc -> cuMemAlloc_v2):
  // look up the versioned symbols it declares
  l.bind(d.init, "cuInit");
  l.bind(d.driver_get_version, "cuDriverGetVersion");
  l.bind(d.device_get_count, "cuDeviceGetCount");
  l.bind(d.device_get, "cuDeviceGet");
  l.bind(d.device_get_attribute, "cuDeviceGetAttribute");
  l.bind(d.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  l.bind(d.ctx_set_current, "cuCtxSetCurrent");
  l.bind(d.ctx_synchronize, "cuCtxSynchronize");
  l.bind(d.get_error_name, "cuGetErrorName");
  l.bind(d.get_error_string, "cuGetErrorString");
  l.bind(d.module_load_data, "cuModuleLoadData");
  l.bind(d.module_get_function, "cuModuleGetFunction");
  l.bind(d.launch_kernel, "cuLaunchKernel");
  l.bind(d.mem_alloc, "cuMemAlloc_v2");
  l.bind(d.mem_free, "cuMemFree_v2");
  l.bind(d.memcpy_htod, "cuMemcpyHtoD_v2");
  l.bind(d.memcpy_dtoh, "cuMemcpyDtoH_v2");
  l.bind(d.memcpy_htod_async, "cuMemcpyHtoDAsync_v2");
  l.bind(d.memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2");
  l.bind(d.stream_create, "cuStreamCreate");
  l.bind(d.stream_synchronize, "cuStreamSynchronize");
  l.bind(d.stream_query, "cuStreamQuery");
  if (!l.missing_symbols().empty()) {
    d.why_not = "the NVIDIA driver library " + l.name() + " lacks functions of the CUDA driver API (" +
                l.missing_symbols() + "); update the driver";
    return d;
  }
  if (const CUresult r = d.init(0); r != CUDA_SUCCESS) {
    d.why_not = str_cat("the NVIDIA driver (", l.name(), ") failed to start: cuInit returned ", result_text(d, r),
                        r == CUDA_ERROR_STUB_LIBRARY ? "; this is the toolkit's stub library, not a driver" : "");
    return d;
  }
  d.driver_get_version(&d.version);
  int count = 0;
  if (const CUresult r = d.device_get_count(&count); r != CUDA_SUCCESS || count <= 0) {
    d.why_not = r != CUDA_SUCCESS ? "cuDeviceGetCount returned " + result_text(d, r) : "the driver sees no CUDA device";
    return d;
  }
  d.device_count = count;
  d.usable = true;
  return d;
}

/// The process's driver, loaded on first use (thread-safe): $XFUNC_CUDA_DRIVER if set, else the
/// loader's libcuda.so.1.
inline const driver_api& driver() {
  static const driver_api d = load_driver(library_candidates("XFUNC_CUDA_DRIVER", {"libcuda.so.1"}, ships_with::driver));
  return d;
}

/// Throws xf::error ("CUDA is not available", with the reason) unless CUDA can be used; `what`
/// names the call.
inline const driver_api& usable_driver(const char* what) {
  const driver_api& d = driver();
  if (!d.usable) fail(what, ": CUDA is not available: ", d.why_not);
  return d;
}

/// Throws xf::error naming `what` and the driver's message when `r` is not CUDA_SUCCESS.
inline void check(const driver_api& d, CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) fail(what, ": the CUDA driver returned ", result_text(d, r));
}

/// Makes device `index`'s primary context current on this thread (once per thread and device).
inline void make_current(const driver_api& d, int index, const char* what) {
  if (index < 0 || index >= d.device_count)
    fail(what, ": cuda:", index, " does not exist (", d.device_count, " CUDA device", d.device_count == 1 ? "" : "s",
         " visible); use an index in [0, ", d.device_count, ")");
  thread_local int current = -1;
  if (current == index) return;
  CUdevice dev = 0;
  check(d, d.device_get(&dev, index), what);
  CUcontext ctx = nullptr;
  check(d, d.primary_ctx_retain(&ctx, dev), what);  // held for the process's life
  check(d, d.ctx_set_current(ctx), what);
  current = index;
}

}  // namespace xfunc::detail::cuda
