// xfunc::kernels: the ops of XFUNC_OPS_COMPARISON, compiled once (NOTE: [Precompiled kernels]).
#include "kernels.hpp"

namespace xfunc::detail {
XFUNC_OPS_COMPARISON(XFUNC_INSTANTIATE_DISPATCH)
}  // namespace xfunc::detail
namespace xfunc {
XFUNC_FUNCTIONS_COMPARISON(XFUNC_INSTANTIATE_TEMPLATE)
}  // namespace xfunc
