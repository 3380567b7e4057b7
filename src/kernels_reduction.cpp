// xfunc::kernels: the ops of XFUNC_OPS_REDUCTION, compiled once (NOTE: [Precompiled kernels]).
#include "kernels.hpp"

namespace xfunc::detail {
XFUNC_OPS_REDUCTION(XFUNC_INSTANTIATE_DISPATCH)
}  // namespace xfunc::detail
namespace xfunc {
// (NOTE: [Precompiled composites])
template tensor mean<0>(const tensor&, const dims_t&, bool);
XFUNC_FUNCTIONS_REDUCTION(XFUNC_INSTANTIATE_TEMPLATE)
}  // namespace xfunc
