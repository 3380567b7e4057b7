#pragma once
/// \file
/// xf::cpu_simd_target(): which SIMD instruction set the CPU kernels in use were compiled for.
#include <xsimd/xsimd.hpp>

#include <xfunc/core/linkage.hpp>

// NOTE: [Kernels per x86-64 level]
// The kernels use what the compiler targets: a build without -march (as distributions, and
// RelWithDebInfo, build) runs SSE2 code on a CPU with AVX-512, several times slower (exp of 2^22
// floats 6.4 against 0.89 ms on the development VM; docs/performance.md). Rather than compile
// every kernel several times into one library and choose through a table of pointers (which
// would split each op's kernels from its rules), xfunc::kernels built shared
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
// copy's can be mixed, and the data they share (the thread pool, the layer stack, the caches:
// one instance each, as the dynamic linker unifies them) look the same to both.
// tests/backend/kernel_levels.sh checks that every copy exports the same data, by name and size,
// and runs the kernel and conformance tests on each. Where the program's copy of an inline
// function wins (the dynamic linker binds the library's calls to a function both define to the
// program's), that function runs baseline code, correctly; the op kernels, instantiated by the
// ops' dispatch, are the library's. Other systems (macOS, Windows, glibc
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
