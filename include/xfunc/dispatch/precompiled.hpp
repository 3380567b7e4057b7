#pragma once
// The boundary between a user's translation unit and the precompiled kernel library.
#include <span>

#include <xfunc/dispatch/dispatcher.hpp>

// NOTE: [Precompiled kernels]
// Header-only by default: a translation unit that calls an op instantiates its dispatch<Op>, and
// with it the op's kernels for every dtype, its rules and every op the rules call (NOTE: [Lazy
// instantiation]). That code generation is what a user's compile spends most of its time on.
// Like {fmt}, xfunc also comes compiled: the CMake target xfunc::kernels (src/kernels_*.cpp) holds
// one explicit instantiation of dispatch<Op> for every built-in op and defines
// XFUNC_PRECOMPILED_KERNELS for whoever links it. With that macro each op header ends with an
// explicit instantiation *declaration* of its ops' dispatch (`extern template`), so the
// translation unit calls them and instantiates none of their closure; what it still compiles is
// the headers, the transforms around the user's own functions, and custom ops. Results are the
// same code either way: the library is built from these headers.
// Each op header lists its ops once, XFUNC_OPS_<FAMILY>(X); src/kernels_*.cpp instantiate the
// same lists, so an op added to a header is precompiled by adding it to its list.

// NOTE: [Precompiled composites]
// Some functions that are not ops still cost a user's compile a lot: composites that call
// several ops with their checks and messages (linear, cross_entropy, mean, matmul and reshape's
// shape logic), the backward pass's driver, and rand / randn with their SIMD Philox fills. With
// the kernel library they are declared `extern template` after their definitions (guarded by
// XFUNC_PRECOMPILED_KERNELS) and instantiated in src/kernels_*.cpp. On
// examples/per_example_gradients.cpp (g++ 12, -O2) this took the object's code from 153 to 97
// KB and the compile from 9.2-9.9 to 7.3-7.9 s (five alternating runs each on one VM). Each
// declaration names an instantiation that callers use (D = 0 of NOTE: [Lazy instantiation], or
// each distribution of random_tensor); one they do not use would still be compiled by them.
// The public functions and tensor methods of each op header are small, but a program calls
// dozens: each header lists them once, XFUNC_FUNCTIONS_<FAMILY>(X) with X applied to the whole
// declaration of the D = 0 instantiation, declared here with XFUNC_EXTERN_TEMPLATE and compiled
// by src/kernels_*.cpp with XFUNC_INSTANTIATE_TEMPLATE (a signature that drifts from its template
// fails to compile there). tests/lazy/check_precompiled.sh checks that a program using every
// op defines none of them.

/// X-macro action: declares an instantiation (`tensor f<0>(const tensor&)`, the whole
/// declaration) compiled in xfunc::kernels (NOTE: [Precompiled composites]); nothing header-only.
#if defined(XFUNC_PRECOMPILED_KERNELS)
#define XFUNC_EXTERN_TEMPLATE(...) extern template __VA_ARGS__;
#else
#define XFUNC_EXTERN_TEMPLATE(...)
#endif
/// X-macro action: the explicit instantiation definition (used by src/kernels_*.cpp).
#define XFUNC_INSTANTIATE_TEMPLATE(...) template __VA_ARGS__;

/// X-macro action: declares dispatch<Op> instantiated elsewhere (only with the kernel library).
#if defined(XFUNC_PRECOMPILED_KERNELS)
#define XFUNC_EXTERN_DISPATCH(Op) extern template tensor dispatch<Op>(std::span<const tensor>, const Op::attrs&);
#else
#define XFUNC_EXTERN_DISPATCH(Op)
#endif

/// X-macro action: the explicit instantiation definition (used by src/kernels_*.cpp).
#define XFUNC_INSTANTIATE_DISPATCH(Op) template tensor dispatch<Op>(std::span<const tensor>, const Op::attrs&);
