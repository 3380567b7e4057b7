// xfunc::kernels: the ops of XFUNC_OPS_VIEW and the strided copies, compiled once (NOTE: [Precompiled kernels]).
#include "kernels.hpp"

namespace xfunc::detail {
XFUNC_OPS_VIEW(XFUNC_INSTANTIATE_DISPATCH)
// the strided copies behind every layout change and in-place write
template tensor backend::materialized_copy<0>(const tensor&, const shape_t&, dtype);
template void write_through<0>(const tensor&, const tensor&, const char*);
}  // namespace xfunc::detail
