#pragma once
/// \file
/// xf::cpu_simd_target(): which SIMD instruction set the CPU kernels in use were compiled for.
#include <xsimd/xsimd.hpp>

#include <xfunc/core/linkage.hpp>

// NOTE: [Kernels per x86-64 level]
// The kernels use what the compiler targets: a build without -march (as distributions, and
// RelWithDebInfo, build) runs SSE2 code on a CPU with AVX-512, several times slower (exp of 2^22
// floats 6.4 ms against 0.8 ms for AVX-512 on the development VM; docs/performance.md). Rather
// than compile every kernel several times into one library and choose through a table of
// pointers (which would split each op's kernels from its rules), xfunc::kernels built shared
// (XFUNC_KERNELS_SHARED) is compiled once more for each x86-64 level in XFUNC_KERNELS_LEVELS
// (x86-64-v3: AVX2 and FMA; x86-64-v4: AVX-512), each copy installed as
// <libdir>/glibc-hwcaps/<level>/libxfunc_kernels.so. glibc's dynamic loader (2.33 and later)
// loads the copy for the best level the CPU supports, and the baseline one otherwise. The copies
// export the same symbols: the program, compiled for the baseline, calls the ops' instantiations
// (dispatch<Op>, the composites, the compiled runtime) in whichever copy was loaded.
// What this relies on: no inline function, variable or type of xfunc's headers changes its layout
// or calling convention with the target (buffers are 64-byte aligned whatever the target;
// register types carry their instruction set in their mangled names; vectors of GCC's vector
// extension are passed by reference), so the program's baseline copies of inline functions and a
// copy's can be mixed; an inline function may differ between targets in speed and in the last
// bits of a result, never in what it does (a streaming store's fallback stores the same bytes:
// backend/streaming.hpp); and the data they share (the thread pool, the layer stack, the caches:
// one instance each, as the dynamic linker unifies them) look the same to both.
// The library is linked with -Bsymbolic-functions: its calls to its own functions, inline ones
// included, are bound inside it, so each copy runs its own code whatever the program was
// compiled with. (Otherwise a program built at -O0, which defines and exports its own copies of
// the inline functions the library calls, wrapper and graph bookkeeping among them, would have
// the library run those unoptimised copies.) The price: a function's address taken in the
// library differs from the same function's taken in the program, so no code may compare
// function addresses across the two (xfunc's one such test, DLPack's deleter, is in a header the
// library does not compile; std::any and std::function fall back to comparing typeid). Data
// stay unified.
// tests/backend/kernel_levels.sh checks that every copy exports the same data, by name and size,
// and runs the kernel and conformance tests on each. Other systems (macOS, Windows, glibc
// before 2.33, other processors) load the baseline library.

namespace xfunc {

/// The SIMD instruction set that the CPU kernels in use were compiled for, as xsimd names it
/// ("sse2", "fma3+avx2", "avx512bw", ...). With xfunc::kernels it is the loaded library's, so it
/// says which of its copies the dynamic loader chose for this CPU (NOTE: [Kernels per x86-64
/// level]); header-only, the calling translation unit's.
XFUNC_RUNTIME const char* cpu_simd_target() noexcept;
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME const char* cpu_simd_target() noexcept { return xsimd::default_arch::name(); }
#endif

}  // namespace xfunc
