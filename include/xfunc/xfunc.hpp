#pragma once
/// \file
/// The whole CPU library: tensors, every operator, and the function transforms.
#include <xfunc/backend/simd_target.hpp>
#include <xfunc/core/device.hpp>
#include <xfunc/core/dtype.hpp>
#include <xfunc/core/error.hpp>
#include <xfunc/core/pytree.hpp>
#include <xfunc/core/shape.hpp>
#include <xfunc/core/tensor.hpp>
#include <xfunc/core/tensor_io.hpp>
#include <xfunc/dispatch/dispatcher.hpp>
#include <xfunc/dispatch/layer_stack.hpp>
#include <xfunc/extend/context.hpp>
#include <xfunc/extend/custom_op.hpp>
#include <xfunc/extend/function.hpp>
#include <xfunc/extend/opcheck.hpp>
#include <xfunc/extend/control_flow.hpp>
#include <xfunc/extend/higher_order_op.hpp>
#include <xfunc/extend/interpreter.hpp>
#include <xfunc/io/npy.hpp>
#include <xfunc/io/npz.hpp>
#include <xfunc/ops/comparison.hpp>
#include <xfunc/ops/creation.hpp>
#include <xfunc/ops/indexing.hpp>
#include <xfunc/ops/inplace.hpp>
#include <xfunc/ops/linalg.hpp>
#include <xfunc/ops/nn.hpp>
#include <xfunc/ops/pointwise.hpp>
#include <xfunc/ops/reduction.hpp>
#include <xfunc/ops/view.hpp>
#include <xfunc/optim.hpp>
#include <xfunc/transforms/functionalize.hpp>
#include <xfunc/transforms/grad.hpp>
#include <xfunc/transforms/jacobian.hpp>
#include <xfunc/transforms/jvp.hpp>
#include <xfunc/transforms/linearize.hpp>
#include <xfunc/transforms/make_fx.hpp>
#include <xfunc/transforms/options.hpp>
#include <xfunc/transforms/transformed.hpp>
#include <xfunc/transforms/vjp.hpp>
#include <xfunc/transforms/vmap.hpp>

// The CUDA backend, when the program is built with xfunc::cuda (NOTE: [Device backends]).
#ifdef XFUNC_WITH_CUDA
#include <xfunc/cuda.hpp>
#endif
