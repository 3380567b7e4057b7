// xfunc::kernels: the ops of XFUNC_OPS_REDUCTION, compiled once (NOTE: [Precompiled kernels]).
#include <xfunc/xfunc.hpp>

#if !defined(XFUNC_PRECOMPILED_KERNELS)
#error "src/kernels_*.cpp are built by the xfunc::kernels target, which defines XFUNC_PRECOMPILED_KERNELS"
#endif

namespace xfunc::detail {
XFUNC_OPS_REDUCTION(XFUNC_INSTANTIATE_DISPATCH)
}  // namespace xfunc::detail
