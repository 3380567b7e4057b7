#pragma once
// The state of the process-wide random generator: what xf::manual_seed sets, random factories
// draw from (NOTE: [Random numbers] in ops/creation.hpp), and a chunked vmap rewinds.
#include <cstdint>
#include <mutex>

namespace xfunc::detail {

/// A key set by xf::manual_seed and an offset: the Philox blocks (4 words each) used since the
/// last seed. Random tensors reserve their blocks under the mutex.
struct rng_state {
  std::mutex mu;
  std::uint64_t key = 0x5eed;
  std::uint64_t offset = 0;
};
inline rng_state& rng() {
  static rng_state s;
  return s;
}
inline std::uint64_t rng_offset() {
  std::lock_guard<std::mutex> lock(rng().mu);
  return rng().offset;
}
inline void set_rng_offset(std::uint64_t offset) {
  std::lock_guard<std::mutex> lock(rng().mu);
  rng().offset = offset;
}

}  // namespace xfunc::detail
