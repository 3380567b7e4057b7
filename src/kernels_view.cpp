// xfunc::kernels: the ops of XFUNC_OPS_VIEW, the strided copies, the random fills and the backward
// pass's driver, compiled once (NOTE: [Precompiled kernels]).
#include "kernels.hpp"

namespace xfunc::detail {
XFUNC_OPS_VIEW(XFUNC_INSTANTIATE_DISPATCH)
// the strided copies behind every layout change and in-place write
template tensor backend::materialized_copy<0>(const tensor&, const shape_t&, dtype);
template void write_through<0>(const tensor&, const tensor&, const char*);
// rand and randn with their Philox fills
template tensor random_tensor<backend::distribution::uniform>(const shape_t&, dtype, device, const char*);
template tensor random_tensor<backend::distribution::normal>(const shape_t&, dtype, device, const char*);
// composites and the backward pass's driver (NOTE: [Precompiled composites])
template tensor reshape_as<0>(const tensor&, shape_t, const char*);
template tensor_list run_backward<0>(const std::vector<std::shared_ptr<grad_node>>&, const tensor_list&,
                                     const std::vector<std::shared_ptr<grad_node>>&);
template tensor unwrap_batched_output<0>(const tensor&, const layer*, std::optional<std::int64_t>);
}  // namespace xfunc::detail
// the functions and tensor methods of the view and creation headers (NOTE: [Precompiled composites])
namespace xfunc {
XFUNC_FUNCTIONS_VIEW(XFUNC_INSTANTIATE_TEMPLATE)
XFUNC_FUNCTIONS_CREATION(XFUNC_INSTANTIATE_TEMPLATE)
}  // namespace xfunc
