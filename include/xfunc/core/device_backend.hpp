#pragma once
/// \file
/// What a device backend gives the core (NOTE: [Device backends]): memory and copies for tensors
/// whose data lives on a device other than the cpu.
#include <cstddef>
#include <cstdint>

#include <xfunc/core/device.hpp>
#include <xfunc/core/error.hpp>

namespace xfunc {
class tensor;
namespace detail {
struct deferred_value;

// NOTE: [Device backends]
// The core knows cuda tensors only through this table, which the CUDA backend fills in when the
// program is built with xfunc::cuda (include/xfunc/cuda/backend.hpp, included by xfunc.hpp when
// XFUNC_WITH_CUDA is defined). So a program without xfunc::cuda, and the precompiled kernels
// (NOTE: [Precompiled kernels]), contain no CUDA code, and a cuda tensor in such a program is an
// error ("not available in this build") rather than a host pointer that is not one. The ops' own
// cuda kernels are found the same way, per op (cuda_kernel_of in dispatch/dispatcher.hpp).
struct device_backend {
  /// `bytes` of memory on device d (for the calling thread's stream); throws "out of memory"
  /// or "not available".
  std::byte* (*allocate)(device d, std::size_t bytes) = nullptr;
  /// Gives back what allocate returned.
  void (*release)(device d, std::byte* p) = nullptr;
  /// A dense tensor on the cpu (contiguous, any strides) copied to device d.
  tensor (*upload)(const tensor& host, device d) = nullptr;
  /// A dense tensor on the device copied to a new contiguous cpu tensor (waits for the device).
  tensor (*download)(const tensor& on_device) = nullptr;
  /// Sets every element of a dense tensor on the device (any strides) to v.
  void (*fill)(const tensor& t, double v) = nullptr;
  /// Writes src (broadcast to dst's shape, converted to its dtype, from any device) through the
  /// strides of dst, a dense tensor on the device: the in-place ops' last step; `op` names the op.
  void (*write)(const tensor& dst, const tensor& src, const char* op) = nullptr;
  /// Waits until the calling thread's work on device d is done; `what` names the call in errors.
  void (*synchronize)(device d, const char* what) = nullptr;
  /// Fills a fresh contiguous floating tensor on the device from the Philox stream of `key` at
  /// block `offset`, uniform in [0, 1) or normal (NOTE: [Philox streams]): the cpu's values.
  void (*random)(const tensor& t, bool normal, std::uint64_t key, std::uint64_t offset) = nullptr;
  /// Computes a deferred pointwise program of the device into `out`, a buffer of the device of
  /// v.numel elements (NOTE: [Deferred elementwise]; null: the device defers nothing).
  void (*evaluate_deferred)(const deferred_value& v, std::byte* out) = nullptr;
};

/// The CUDA backend's table (null in a program built without xfunc::cuda).
inline const device_backend*& cuda_backend_slot() {
  static const device_backend* b = nullptr;
  return b;
}

/// The backend of device d (a cuda device); throws when the program has none.
inline const device_backend& backend_of(device d, const char* fn) {
  const device_backend* b = cuda_backend_slot();
  if (!b)
    fail(fn, ": ", d, " is not available in this build: the program is not linked with xfunc::cuda "
         "(CMake: target_link_libraries(app PRIVATE xfunc::cuda)); use xf::cpu");
  return *b;
}

}  // namespace detail
}  // namespace xfunc
