#pragma once
/// \file
/// XFUNC_RUNTIME: how the functions of xfunc's runtime are linked (NOTE: [Compiled runtime]).

// NOTE: [Compiled runtime]
// Some ordinary (non-template) functions of the runtime are large and called from nearly every
// program: allocation with its shape checks, the deferred pointwise programs' evaluation,
// factories' fills and lifting, the guard of every transform call's layer, allclose,
// fail_shape. Header-only, they are `inline`, and every translation unit that calls them
// compiles its own copy (about a third of the object code of examples/per_example_gradients.cpp). With the kernel library (NOTE: [Precompiled kernels],
// XFUNC_PRECOMPILED_KERNELS) they are only declared, as {fmt}'s compiled mode does, and defined
// once in src/runtime.cpp, which defines XFUNC_DEFINE_RUNTIME before including xfunc. Such a
// function is written
//   XFUNC_RUNTIME tensor f(args with defaults);           // the declaration, always seen
//   #if XFUNC_RUNTIME_DEFINITIONS
//   XFUNC_RUNTIME tensor f(args) { ... }                  // the definition
//   #endif
// Only cold or large functions belong here: in the kernel library their callers can no longer
// inline them.
#if defined(XFUNC_PRECOMPILED_KERNELS)
#define XFUNC_RUNTIME
#if defined(XFUNC_DEFINE_RUNTIME)
#define XFUNC_RUNTIME_DEFINITIONS 1
#else
#define XFUNC_RUNTIME_DEFINITIONS 0
#endif
#else
#define XFUNC_RUNTIME inline
#define XFUNC_RUNTIME_DEFINITIONS 1
#endif
