#pragma once
// Random numbers: the counter-based Philox 4x32-10 generator (Salmon, Moraes, Dror and Shaw,
// "Parallel random numbers: as easy as 1, 2, 3", SC 2011) and the maps from its 32-bit words to
// uniform and normal values, written once for every device; and the CPU kernel that fills a
// buffer with them.
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>

#include <xfunc/backend/parallel.hpp>

namespace xfunc::detail::backend {

// NOTE: [Philox streams]
// A random tensor of n elements draws from the blocks of 4 words at counters offset,
// offset + 1, ... of the generator's key (xf::manual_seed), and the generator's offset then
// moves past them. Element i's value depends only on the key, the offset and i:
//   float32 uniform: 4 per block, u = (word >> 8) * 2^-24 in [0, 1)
//   float64 uniform: 2 per block, u = (the two words as 64 bits >> 11) * 2^-53 in [0, 1)
//   normal: Box-Muller on pairs of uniforms (u1, u2) -> sqrt(-2 ln(1 - u1)) (cos, sin)(2 pi u2),
//     computed in double: 4 float32 or 2 float64 per block
// So the values are bitwise the same for every thread count, and a device that runs the same
// arithmetic (issue 13: the GPU) draws the same words, and the same values to the rounding of
// its math library.

using philox_words = std::array<std::uint32_t, 4>;

/// Philox 4x32 with 10 rounds: the 4 words at counter c under key k.
inline philox_words philox4x32_10(philox_words c, std::array<std::uint32_t, 2> k) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u, w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += w0;
      k[1] += w1;
    }
    const std::uint64_t p0 = std::uint64_t(m0) * c[0], p1 = std::uint64_t(m1) * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
  }
  return c;
}

enum class distribution { uniform, normal };

/// Values per Philox block for T (NOTE: [Philox streams]).
template <class T>
inline constexpr std::int64_t values_per_block = sizeof(T) == 4 ? 4 : 2;

/// The values of block `b` (counter offset + b) for T and distribution D, into out[0, count).
template <distribution D, class T>
void philox_block(std::uint64_t key, std::uint64_t counter, T* out, std::int64_t count) {
  const philox_words w = philox4x32_10(
      {static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), 0u, 0u},
      {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)});
  double u[4];
  if constexpr (sizeof(T) == 4) {
    for (int j = 0; j < 4; ++j) u[j] = static_cast<double>(w[static_cast<std::size_t>(j)] >> 8) * 0x1p-24;
  } else {
    for (int j = 0; j < 2; ++j) {
      const std::uint64_t bits = (std::uint64_t(w[2 * static_cast<std::size_t>(j)]) << 32) | w[2 * static_cast<std::size_t>(j) + 1];
      u[j] = static_cast<double>(bits >> 11) * 0x1p-53;
    }
  }
  constexpr int per = static_cast<int>(values_per_block<T>);
  double v[4];
  if constexpr (D == distribution::uniform) {
    for (int j = 0; j < per; ++j) v[j] = u[j];
  } else {
    for (int j = 0; j < per; j += 2) {
      const double r = std::sqrt(-2.0 * std::log(1.0 - u[j])), a = 2.0 * std::numbers::pi * u[j + 1];
      v[j] = r * std::cos(a);
      v[j + 1] = r * std::sin(a);
    }
  }
  for (std::int64_t j = 0; j < count; ++j) out[j] = static_cast<T>(v[j]);
}

/// Fills out[0, n) from the stream of `key` starting at block `offset` (NOTE: [Philox streams]),
/// over the thread pool; returns the number of blocks used.
template <distribution D, class T>
std::uint64_t philox_fill(T* out, std::int64_t n, std::uint64_t key, std::uint64_t offset) {
  constexpr std::int64_t per = values_per_block<T>;
  const std::int64_t blocks = (n + per - 1) / per;
  constexpr std::int64_t blocks_per_task = 4096;
  parallel_for((blocks + blocks_per_task - 1) / blocks_per_task, blocks_per_task * per * 8, [&](std::int64_t t) {
    const std::int64_t b0 = t * blocks_per_task, b1 = b0 + blocks_per_task < blocks ? b0 + blocks_per_task : blocks;
    for (std::int64_t b = b0; b < b1; ++b) {
      const std::int64_t i = b * per;
      philox_block<D, T>(key, offset + static_cast<std::uint64_t>(b), out + i, n - i < per ? n - i : per);
    }
  });
  return static_cast<std::uint64_t>(blocks);
}

}  // namespace xfunc::detail::backend
