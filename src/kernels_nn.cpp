// xfunc::kernels: the ops of XFUNC_OPS_NN, XFUNC_OPS_LINALG and XFUNC_OPS_INDEXING, compiled once
// (NOTE: [Precompiled kernels]).
#include <xfunc/xfunc.hpp>

#if !defined(XFUNC_PRECOMPILED_KERNELS)
#error "src/kernels_*.cpp are built by the xfunc::kernels target, which defines XFUNC_PRECOMPILED_KERNELS"
#endif

namespace xfunc::detail {
XFUNC_OPS_NN(XFUNC_INSTANTIATE_DISPATCH)
XFUNC_OPS_LINALG(XFUNC_INSTANTIATE_DISPATCH)
XFUNC_OPS_INDEXING(XFUNC_INSTANTIATE_DISPATCH)
}  // namespace xfunc::detail
