#pragma once
// What every src/kernels_*.cpp includes: the library, declared as the xfunc::kernels target
// builds it (NOTE: [Precompiled kernels]).
#include <xfunc/xfunc.hpp>

#if !defined(XFUNC_PRECOMPILED_KERNELS)
#error "src/kernels_*.cpp are built by the xfunc::kernels target, which defines XFUNC_PRECOMPILED_KERNELS"
#endif
