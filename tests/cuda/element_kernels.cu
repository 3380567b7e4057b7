// Every pointwise op's per-element `fn` (NOTE: [Element math]) compiled into a CUDA kernel for
// float and double, from the same op structs the CPU backend maps over xsimd registers. Compile
// only (CI has no GPU): check_element_kernels.sh compiles this to PTX and checks that every
// kernel computes and stores (a call that device code cannot make leaves an empty body, not an
// error). The CUDA backend (issue 13) builds its kernels this way.
#include <type_traits>

#include <xfunc/xfunc.hpp>

namespace xd = xfunc::detail;

/// The closure of D::fn, made in device code (the static member itself lives on the host).
template <class D>
using element_fn = std::remove_cvref_t<decltype(D::fn)>;

template <class D, class T, class O>
__global__ void unary_kernel(O* out, const T* x, long n) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<O>(element_fn<D>{}(x[i]));
}
template <class D, class T, class O>
__global__ void binary_kernel(O* out, const T* a, const T* b, long n) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<O>(element_fn<D>{}(a[i], b[i]));
}

#define XFUNC_UNARY_KERNELS(op)                                                            \
  template __global__ void unary_kernel<xd::op, float, float>(float*, const float*, long); \
  template __global__ void unary_kernel<xd::op, double, double>(double*, const double*, long);
#define XFUNC_BINARY_KERNELS(op)                                                                          \
  template __global__ void binary_kernel<xd::op, float, float>(float*, const float*, const float*, long); \
  template __global__ void binary_kernel<xd::op, double, double>(double*, const double*, const double*, long);
#define XFUNC_COMPARISON_KERNELS(op)                                                                    \
  template __global__ void binary_kernel<xd::op, float, bool>(bool*, const float*, const float*, long); \
  template __global__ void binary_kernel<xd::op, double, bool>(bool*, const double*, const double*, long);

XFUNC_UNARY_KERNELS(neg_op)
XFUNC_UNARY_KERNELS(exp_op)
XFUNC_UNARY_KERNELS(log_op)
XFUNC_UNARY_KERNELS(sin_op)
XFUNC_UNARY_KERNELS(cos_op)
XFUNC_UNARY_KERNELS(tan_op)
XFUNC_UNARY_KERNELS(tanh_op)
XFUNC_UNARY_KERNELS(sigmoid_op)
XFUNC_UNARY_KERNELS(relu_op)
XFUNC_UNARY_KERNELS(abs_op)
XFUNC_UNARY_KERNELS(sqrt_op)
XFUNC_UNARY_KERNELS(rsqrt_op)
XFUNC_UNARY_KERNELS(square_op)
XFUNC_UNARY_KERNELS(log1p_op)
XFUNC_UNARY_KERNELS(expm1_op)
XFUNC_UNARY_KERNELS(sign_op)
XFUNC_UNARY_KERNELS(reciprocal_op)
XFUNC_UNARY_KERNELS(erf_op)
XFUNC_BINARY_KERNELS(add_op)
XFUNC_BINARY_KERNELS(sub_op)
XFUNC_BINARY_KERNELS(mul_op)
XFUNC_BINARY_KERNELS(div_op)
XFUNC_BINARY_KERNELS(pow_op)
XFUNC_BINARY_KERNELS(maximum_op)
XFUNC_BINARY_KERNELS(minimum_op)
XFUNC_BINARY_KERNELS(atan2_op)
XFUNC_COMPARISON_KERNELS(eq_op)
XFUNC_COMPARISON_KERNELS(ne_op)
XFUNC_COMPARISON_KERNELS(lt_op)
XFUNC_COMPARISON_KERNELS(le_op)
XFUNC_COMPARISON_KERNELS(gt_op)
XFUNC_COMPARISON_KERNELS(ge_op)
XFUNC_COMPARISON_KERNELS(logical_and_op)
XFUNC_COMPARISON_KERNELS(logical_or_op)
