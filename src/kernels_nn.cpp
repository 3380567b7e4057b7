// xfunc::kernels: the ops of XFUNC_OPS_NN, XFUNC_OPS_LINALG and XFUNC_OPS_INDEXING and their
// functions, compiled once (NOTE: [Precompiled kernels]).
#include "kernels.hpp"

namespace xfunc::detail {
XFUNC_OPS_NN(XFUNC_INSTANTIATE_DISPATCH)
XFUNC_OPS_LINALG(XFUNC_INSTANTIATE_DISPATCH)
XFUNC_OPS_INDEXING(XFUNC_INSTANTIATE_DISPATCH)
// composites that call several ops (NOTE: [Precompiled composites])
template tensor matmul_as<0>(const tensor&, const tensor&, const char*);
}  // namespace xfunc::detail
namespace xfunc {
template tensor cross_entropy<0>(const tensor&, const tensor&);
template tensor linear<0>(const tensor&, const tensor&, const tensor&);
XFUNC_FUNCTIONS_NN(XFUNC_INSTANTIATE_TEMPLATE)
XFUNC_FUNCTIONS_LINALG(XFUNC_INSTANTIATE_TEMPLATE)
XFUNC_FUNCTIONS_INDEXING(XFUNC_INSTANTIATE_TEMPLATE)
}  // namespace xfunc
