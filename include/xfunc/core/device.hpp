#pragma once
// Devices: where a tensor's data lives (cpu), or that it has none (meta).
#include <cstdint>
#include <ostream>

namespace xfunc {

enum class device_kind : std::uint8_t { cpu, meta, cuda };

/// A device kind and an index; compares with ==.
struct device {
  device_kind kind = device_kind::cpu;
  std::int32_t index = 0;
  friend constexpr bool operator==(device, device) = default;
};

inline constexpr device cpu{device_kind::cpu, 0};
/// Shape-only tensors: every op computes the output shape and dtype, no data.
inline constexpr device meta{device_kind::meta, 0};
inline constexpr device cuda{device_kind::cuda, 0};

inline std::ostream& operator<<(std::ostream& os, device d) {
  switch (d.kind) {
    case device_kind::cpu: return os << "cpu";
    case device_kind::meta: return os << "meta";
    case device_kind::cuda: return os << "cuda:" << d.index;
  }
  return os;
}
}  // namespace xfunc
