// xfunc::kernels: the ops of XFUNC_OPS_NN, XFUNC_OPS_LINALG and XFUNC_OPS_INDEXING, compiled once
// (NOTE: [Precompiled kernels]).
#include "kernels.hpp"

namespace xfunc::detail {
XFUNC_OPS_NN(XFUNC_INSTANTIATE_DISPATCH)
XFUNC_OPS_LINALG(XFUNC_INSTANTIATE_DISPATCH)
XFUNC_OPS_INDEXING(XFUNC_INSTANTIATE_DISPATCH)
}  // namespace xfunc::detail
