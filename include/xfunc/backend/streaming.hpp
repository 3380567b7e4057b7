#pragma once
// Streaming (non-temporal) stores of whole registers and their fence, where the build targets
// them (NOTE: [Streaming stores]): used by transposed copies, outer products, large deferred
// results and large index_selects.
#include <cstddef>
#include <cstdint>
#include <cstring>

// <immintrin.h> only where the AVX stores are compiled: it is 58k lines, a second of every
// user's compile (xsimd includes only the SSE headers for an SSE build; tests/odr checks this)
#if defined(__AVX__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xfunc::detail::backend {

// NOTE: [Streaming stores]
// An ordinary store first reads the line it writes into the cache ("read for ownership") and
// later writes it back, evicting other lines on the way; a non-temporal ("streaming") store
// writes a whole line to memory without reading it. Kernels whose output is too large to stay in
// the caches for its next reader, and which write it in whole registers, use them: transposed
// copies (backend/strided.hpp), outer products (NOTE: [Outer products]), deferred programs
// (NOTE: [Streaming deferred results]) and large index_selects (NOTE: [Streaming
// index_select]). Streaming stores are weakly ordered: each task ends with stream_fence() before
// other threads may read its output.

/// Whether this build has a streaming store of Bytes (64 with AVX-512, 32 with AVX).
template <std::size_t Bytes>
inline constexpr bool can_stream_bytes =
#if defined(__CUDACC__)
    false;
#elif defined(__AVX512F__)
    Bytes == 64 || Bytes == 32;
#elif defined(__AVX__)
    Bytes == 32;
#else
    false;
#endif

/// Writes the Bytes at v to d (aligned to Bytes): by a streaming store where can_stream_bytes,
/// else by ordinary stores. (Callers test can_stream_bytes, and some only at run time, so a build
/// without the store still compiles this function; it must then store the bytes all the same: a
/// program's copy may serve a kernel library built for another target, NOTE: [Kernels per
/// x86-64 level].)
template <std::size_t Bytes>
void stream_bytes(void* d, const void* v) {
#if defined(__AVX512F__) && !defined(__CUDACC__)
  if constexpr (Bytes == 64) {
    __m512i x;
    std::memcpy(&x, v, 64);
    _mm512_stream_si512(static_cast<__m512i*>(d), x);
    return;
  }
#endif
#if defined(__AVX__) && !defined(__CUDACC__)
  if constexpr (Bytes == 32) {
    __m256i x;
    std::memcpy(&x, v, 32);
    _mm256_stream_si256(static_cast<__m256i*>(d), x);
    return;
  }
#endif
  std::memcpy(d, v, Bytes);
}

/// Copies n bytes from s to d: the part of d aligned to whole streaming registers by streaming
/// stores, its ends (and everything, where the build has no streaming store) by memcpy.
inline void stream_copy(void* d, const void* s, std::size_t n) {
  // (B is 1 without a streaming store: every byte then goes by memcpy; not 0, as a branch of
  // `if constexpr` outside a template is still compiled, and nvcc refuses `% 0` in it)
  constexpr std::size_t B = can_stream_bytes<64> ? 64 : can_stream_bytes<32> ? 32 : 1;
  if constexpr (B == 1) {
    std::memcpy(d, s, n);
  } else {
    auto* dc = static_cast<char*>(d);
    const auto* sc = static_cast<const char*>(s);
    std::size_t i = (B - reinterpret_cast<std::uintptr_t>(dc) % B) % B;
    if (i > n) i = n;
    std::memcpy(dc, sc, i);
    for (; i + B <= n; i += B) stream_bytes<B>(dc + i, sc + i);
    std::memcpy(dc + i, sc + i, n - i);
  }
}

/// Orders this thread's streaming stores before its later stores (NOTE: [Streaming stores]).
inline void stream_fence() {
#if defined(__SSE2__) && !defined(__CUDACC__)
  _mm_sfence();
#endif
}

}  // namespace xfunc::detail::backend
