// xfunc::kernels: the ops of XFUNC_OPS_POINTWISE_BINARY, compiled once (NOTE: [Precompiled kernels]).
#include "kernels.hpp"

namespace xfunc::detail {
XFUNC_OPS_POINTWISE_BINARY(XFUNC_INSTANTIATE_DISPATCH)
}  // namespace xfunc::detail
namespace xfunc {
XFUNC_FUNCTIONS_POINTWISE_BINARY(XFUNC_INSTANTIATE_TEMPLATE)
}  // namespace xfunc
