#pragma once
/// \file
/// The argument structs of xfunc's CUDA kernels (src/cuda/kernels.cu), shared by the kernels and
/// the host code that launches them: plain data, passed by value as a kernel's one parameter
/// (NOTE: [Kernels compiled twice]).

namespace xfunc::detail::cuda {

/// The most dimensions a kernel indexes (tensors with more are first made contiguous).
inline constexpr int max_kernel_dims = 12;

// NOTE: [Scalar operands]
// A Python-like scalar (`x * 2.0`, `where(c, x, 0.0)`: a 0-d cpu tensor) reaches an elementwise
// kernel in its arguments, not in device memory: uploading it would cost an allocation and a
// copy to the device per call, as much as the launch itself for small tensors. Its in[k] is null
// and its value's bytes (already in the kernel's compute dtype) are in scalar_bits[k]; every
// thread reads that one value. The dispatcher hands 0-d cpu tensors as they are only to the ops
// whose cuda kernels are elementwise (cuda_kernel_takes_scalars); the others get them uploaded.

/// An elementwise kernel over `n` elements, the row-major order of `sizes`: element i of input
/// k is at in[k] + sum over d of index_d(i) * strides[k][d] (0 where the input is broadcast), or
/// is the scalar in scalar_bits[k] where in[k] is null (NOTE: [Scalar operands]), and goes to out
/// + the same sum over strides[out_operand] (a fresh result is contiguous; a view written in
/// place need not be). With `contiguous` set every operand is read and written at i.
inline constexpr int out_operand = 3;
struct elementwise_args {
  long long n = 0;
  int ndim = 0;
  int contiguous = 0;
  long long sizes[max_kernel_dims] = {};
  void* out = nullptr;
  const void* in[3] = {};
  long long strides[4][max_kernel_dims] = {};  // inputs 0..2, then the output
  double scalar = 0, scalar2 = 0;  // a fill's value, pow's exponent, clamp's bounds
  long long scalar_bits[3] = {};   // the value of input k where in[k] is null
  // index kernels: the stride along the indexed dim of the indexed tensor (gather: the input,
  // read; scatter_add: the output, added into)
  long long index_stride = 0;
};

// NOTE: [Split reductions]
// A GPU needs hundreds of thousands of threads in flight to reach its memory bandwidth, and a
// warp's 32 threads must read neighbouring addresses. One thread per output has neither when
// there are few outputs (a full sum) or when each output reads a contiguous row (row sums). So
// sum, prod, norm, amax and amin split each output's m elements over `splits` threads: split s
// folds elements s, s + splits, s + 2 splits, ... (neighbouring splits read neighbouring
// elements along a contiguous reduced dim) into an accumulator, written to a partials buffer
// [n_out, splits]; the next launch reduces that buffer the same way (from_partials), until a
// level has one split per output and writes the result. The host picks the splits from the
// shapes alone (include/xfunc/cuda/ops.hpp, reduction_splits), so results are the same in every
// run. Along a contiguous reduced dim a split reads 16-byte packs s, s + splits, ... instead,
// four loads at a time (kernels.cu, fold_row_packs): one 4-byte load in flight per thread left
// a 16384^2 row sum at 1.4 TB/s on an H200. When the kept dims are the contiguous ones (column
// sums), neighbouring threads take neighbouring outputs instead (outputs_fast). softmax, log_softmax and logsumexp are split
// reductions too (amax, then the sum of exp(x - max), then an elementwise pass); argmax keeps
// one thread per output.

/// A reduction: output element o (of n_out, contiguous) reduces the m elements of the input at
/// offset(o) + offset over the reduced dims; the kept and the reduced dims have their own sizes
/// and strides (in elements), kept dims in the output's order. Split over `splits` threads per
/// output (NOTE: [Split reductions]), `out` is the partials buffer unless splits is 1.
struct reduce_args {
  long long n_out = 0;
  long long m = 0;
  long long splits = 1;
  int outputs_fast = 0;   // work item t is output t % n_out (else t / splits)
  int from_partials = 0;  // `in` is the previous level's contiguous [n_out, m] accumulators
  int kept_ndim = 0;
  int reduced_ndim = 0;
  long long kept_sizes[max_kernel_dims] = {};
  long long kept_strides[max_kernel_dims] = {};
  long long reduced_sizes[max_kernel_dims] = {};
  long long reduced_strides[max_kernel_dims] = {};
  const void* in = nullptr;
  void* out = nullptr;
  const void* shift = nullptr;  // sum_exp: each output's largest value (n_out, contiguous)
};

// NOTE: [Fused device programs]
// Outside transforms, a pointwise op on large contiguous cuda tensors is deferred as on the cpu
// (NOTE: [Deferred elementwise] in include/xfunc/core/deferred.hpp): `y = x * a + b` becomes one
// program, computed when y is first read by one launch of xf_fused_<dt>, which reads x and
// writes y once (8 bytes per float, where two launches move 16). The kernel interprets the
// program for each element: up to fused_max_steps steps over up to fused_max_leaves inputs of
// the result's shape, each step calling the op's own per-element `fn` (the one its own kernel
// calls) on values held by the thread, so the result is bitwise that of the op-by-op launches.
// Each thread takes 16 bytes of every input and of the result (4 floats or 2 doubles), read and
// written as one vector access when every buffer is 16-byte aligned (fresh ones are; a view at
// an odd offset is not). The ops that fuse are those of XFUNC_CUDA_FUSED_OPS; an op's number is
// its place in that list, on the host (backend::device_fused_op) and in the kernel alike.
#define XFUNC_CUDA_FUSED_OPS(UNARY, BINARY)                                                                \
  UNARY(neg) UNARY(abs) UNARY(sign) UNARY(relu) UNARY(square) UNARY(exp) UNARY(log) UNARY(sin) UNARY(cos) \
  UNARY(tan) UNARY(tanh) UNARY(sigmoid) UNARY(sqrt) UNARY(rsqrt) UNARY(log1p) UNARY(expm1)                \
  UNARY(reciprocal) UNARY(erf) BINARY(add) BINARY(sub) BINARY(mul) BINARY(maximum) BINARY(minimum)        \
  BINARY(div) BINARY(pow) BINARY(atan2)
#define XFUNC_CUDA_FUSED_NAME(op) op,
enum class fused_op : int { XFUNC_CUDA_FUSED_OPS(XFUNC_CUDA_FUSED_NAME, XFUNC_CUDA_FUSED_NAME) };
#undef XFUNC_CUDA_FUSED_NAME

inline constexpr int fused_max_steps = 8;
inline constexpr int fused_max_leaves = 4;
/// A step of a fused program: r[k] = op(a, b), an operand being a step's result (code >= 0) or
/// a leaf (-1 - index); `form` is a step_form (unary, binary, scalar on the right or the
/// left, which then replaces operand a or b); `keep`: a step after the next reads r[k].
struct fused_step {
  int op = 0;
  int form = 0;
  int a = 0, b = 0;
  int keep = 0;
  double scalar = 0;
};
/// A fused program over n elements: the leaves and the result are contiguous, of one dtype.
struct fused_args {
  long long n = 0;
  void* out = nullptr;
  const void* leaves[fused_max_leaves] = {};
  fused_step steps[fused_max_steps] = {};
  int n_steps = 0, n_leaves = 0;
  int aligned = 0;  // every leaf and `out` 16-byte aligned
};

/// rand / randn: n values into a contiguous `out` from the Philox stream of `key`, blocks
/// offset, offset + 1, ... (NOTE: [Philox streams]); one work item per block.
struct random_args {
  long long n = 0;
  void* out = nullptr;
  unsigned long long key = 0, offset = 0;
};

}  // namespace xfunc::detail::cuda
