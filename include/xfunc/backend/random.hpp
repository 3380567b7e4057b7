#pragma once
// Random numbers: the counter-based Philox 4x32-10 generator (Salmon, Moraes, Dror and Shaw,
// "Parallel random numbers: as easy as 1, 2, 3", SC 2011) and the maps from its 32-bit words to
// uniform and normal values, written once for every device; and the CPU kernel that fills a
// buffer with them.
#include <array>
#include <cstdint>
#include <numbers>

#include <xsimd/xsimd.hpp>

#include <xfunc/backend/element.hpp>
#include <xfunc/backend/parallel.hpp>

namespace xfunc::detail::backend {

// NOTE: [Philox streams]
// A random tensor of n elements draws from the blocks of 4 words at counters offset,
// offset + 1, ... of the generator's key (xf::manual_seed), and the generator's offset then
// moves past them. Element i's value depends only on the key, the offset and i:
//   float32 uniform: 4 per block, u = (word >> 8) * 2^-24 in [0, 1)
//   float64 uniform: 2 per block, u = (the two words as 64 bits >> 11) * 2^-53 in [0, 1)
//   normal: Box-Muller on pairs of uniforms (u1, u2) -> sqrt(-2 ln(1 - u1)) (cos, sin)(2 pi u2),
//     computed in double in SIMD registers (xsimd; every pair, wherever it falls in a call, takes
//     that path): 4 float32 or 2 float64 per block
// So the values are bitwise the same for every thread count, and the GPU (src/cuda/kernels.cu)
// runs the same functions below on its own threads: the same words and uniform values bitwise,
// and normal values to the rounding of its math library (there one pair at a time).

using philox_words = std::array<std::uint32_t, 4>;

/// Philox 4x32 with 10 rounds: the 4 words at counter c under key k.
XFUNC_ELEMENT_FN inline philox_words philox4x32_10(philox_words c, std::array<std::uint32_t, 2> k) {
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
/// The blocks that n values of T take (a partly used block is not shared).
template <class T>
constexpr std::int64_t blocks_for(std::int64_t n) {
  return (n + values_per_block<T> - 1) / values_per_block<T>;
}

/// The words of the block at `counter` of the stream of `key`.
XFUNC_ELEMENT_FN inline philox_words philox_block(std::uint64_t key, std::uint64_t counter) {
  return philox4x32_10({static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), 0u, 0u},
                       {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)});
}
/// Uniform value j in [0, 1) of a block's words w, for T (values_per_block<T> per block).
template <class T>
XFUNC_ELEMENT_FN inline double philox_uniform(const philox_words& w, std::size_t j) {
  if constexpr (sizeof(T) == 4) return static_cast<double>(w[j] >> 8) * 0x1p-24;
  else return static_cast<double>(((std::uint64_t(w[2 * j]) << 32) | w[2 * j + 1]) >> 11) * 0x1p-53;
}
/// The uniform values in [0, 1) of the block at `counter` (values_per_block<T> of them).
template <class T>
void philox_uniforms(std::uint64_t key, std::uint64_t counter, double* u) {
  const philox_words w = philox_block(key, counter);
  for (std::size_t j = 0; j < static_cast<std::size_t>(values_per_block<T>); ++j) u[j] = philox_uniform<T>(w, j);
}
/// 2 pi, the angle factor of Box-Muller.
inline constexpr double two_pi = 2.0 * std::numbers::pi;

/// Box-Muller on n pairs (u1[k], u2[k]) -> (c[k], s[k]), in whole SIMD registers (n rounded up:
/// the arrays have room), so that every value takes the same path wherever it falls.
inline void box_muller(const double* u1, const double* u2, double* c, double* s, std::int64_t n) {
  using V = xsimd::batch<double>;
  constexpr std::int64_t W = V::size;
  const V one(1.0), minus_two(-2.0), angle(two_pi);
  for (std::int64_t k = 0; k < n; k += W) {
    const V r = xsimd::sqrt(minus_two * xsimd::log(one - V::load_unaligned(u1 + k)));
    const auto [sin_a, cos_a] = xsimd::sincos(angle * V::load_unaligned(u2 + k));
    (r * cos_a).store_unaligned(c + k);
    (r * sin_a).store_unaligned(s + k);
  }
}

/// out[0, n) from the blocks at counters counter0, counter0 + 1, ... (n <= philox_run_blocks
/// blocks' worth).
inline constexpr std::int64_t philox_run_blocks = 256;
// GCC 12 warns, in some inlining contexts, that box_muller may read u1 and u2 uninitialised: it
// reads exactly the `padded` values written just before (zeroing 16 KiB per run to silence it
// would cost more than the warning is worth).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <distribution D, class T>
void philox_run(T* out, std::int64_t n, std::uint64_t key, std::uint64_t counter0) {
  constexpr std::int64_t per = values_per_block<T>, W = xsimd::batch<double>::size;
  constexpr std::int64_t max_values = philox_run_blocks * per, max_pairs = max_values / 2 + W;
  alignas(64) double u[max_values];
  const std::int64_t blocks = blocks_for<T>(n);
  for (std::int64_t b = 0; b < blocks; ++b) philox_uniforms<T>(key, counter0 + static_cast<std::uint64_t>(b), u + b * per);
  if constexpr (D == distribution::uniform) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(u[i]);
  } else {
    alignas(64) double u1[max_pairs], u2[max_pairs], c[max_pairs], s[max_pairs];
    const std::int64_t pairs = blocks * per / 2, padded = (pairs + W - 1) / W * W;
    for (std::int64_t k = 0; k < pairs; ++k) {
      u1[k] = u[2 * k];
      u2[k] = u[2 * k + 1];
    }
    for (std::int64_t k = pairs; k < padded; ++k) u1[k] = u2[k] = 0.5;
    box_muller(u1, u2, c, s, padded);
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(i % 2 == 0 ? c[i / 2] : s[i / 2]);
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/// Fills out[0, n) from the stream of `key` starting at block `offset` (NOTE: [Philox streams]),
/// over the thread pool (blocks_for<T>(n) blocks).
template <distribution D, class T>
void philox_fill(T* out, std::int64_t n, std::uint64_t key, std::uint64_t offset) {
  constexpr std::int64_t per = values_per_block<T>, run = philox_run_blocks * per;
  const std::int64_t runs = (n + run - 1) / run;
  parallel_for(runs, run * 8, [&](std::int64_t r) {
    const std::int64_t i = r * run;
    philox_run<D>(out + i, n - i < run ? n - i : run, key, offset + static_cast<std::uint64_t>(r * philox_run_blocks));
  });
}

}  // namespace xfunc::detail::backend
