#pragma once
/// \file
/// Devices: where a tensor's data lives (cpu), or that it has none (meta).
#include <cstdint>
#include <ostream>

namespace xfunc {

/// Kinds of device: cpu (host memory), meta (shape and dtype only, no data) and cuda (reserved
/// for the CUDA backend, not available yet).
enum class device_kind : std::uint8_t { cpu, meta, cuda };

/// A device kind and an index; compares with ==.
struct device {
  /// What kind of device.
  device_kind kind = device_kind::cpu;
  /// Which device of that kind (a GPU's ordinal; 0 for cpu and meta).
  std::int32_t index = 0;
  /// Same kind and index.
  friend constexpr bool operator==(device, device) = default;
};

/// Host memory: the default device of every factory.
inline constexpr device cpu{device_kind::cpu, 0};
/// Shape-only tensors: every op computes the output shape and dtype, no data.
inline constexpr device meta{device_kind::meta, 0};
/// The first GPU (`device{device_kind::cuda, i}` names the others).
inline constexpr device cuda{device_kind::cuda, 0};

/// Prints "cpu", "meta" or "cuda:" and the index.
inline std::ostream& operator<<(std::ostream& os, device d) {
  switch (d.kind) {
    case device_kind::cpu: return os << "cpu";
    case device_kind::meta: return os << "meta";
    case device_kind::cuda: return os << "cuda:" << d.index;
  }
  return os;
}
}  // namespace xfunc
