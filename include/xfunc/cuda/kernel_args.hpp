#pragma once
/// \file
/// The argument structs of xfunc's CUDA kernels (src/cuda/kernels.cu), shared by the kernels and
/// the host code that launches them: plain data, passed by value as a kernel's one parameter
/// (NOTE: [Kernels compiled twice]).

namespace xfunc::detail::cuda {

/// The most dimensions a kernel indexes (tensors with more are first made contiguous).
inline constexpr int max_kernel_dims = 12;

/// An elementwise kernel over `n` elements, the row-major order of `sizes`: element i of input
/// k is at in[k] + sum over d of index_d(i) * strides[k][d] (0 where the input is broadcast), and
/// goes to out + the same sum over strides[out_operand] (a fresh result is contiguous; a view
/// written in place need not be). With `contiguous` set every operand is read and written at i.
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
  // index kernels: the extent n of the indexed dim and the stride along it of the indexed
  // tensor (gather: the input, read; scatter_add: the output, added into)
  long long index_n = 0, index_stride = 0;
};

/// A reduction: output element o (of n_out, contiguous) reduces the m elements of the input at
/// offset(o) + offset over the reduced dims; the kept and the reduced dims have their own sizes
/// and strides (in elements), kept dims in the output's order.
struct reduce_args {
  long long n_out = 0;
  long long m = 0;
  int kept_ndim = 0;
  int reduced_ndim = 0;
  long long kept_sizes[max_kernel_dims] = {};
  long long kept_strides[max_kernel_dims] = {};
  long long reduced_sizes[max_kernel_dims] = {};
  long long reduced_strides[max_kernel_dims] = {};
  const void* in = nullptr;
  void* out = nullptr;
};

/// softmax / log_softmax of a contiguous tensor viewed as [A, R, B], over R: one output run of R
/// per (a, b), written to the same place in the contiguous output.
struct normalize_args {
  long long A = 0, R = 0, B = 0;
  const void* in = nullptr;
  void* out = nullptr;
};

}  // namespace xfunc::detail::cuda
