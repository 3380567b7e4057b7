#pragma once
/// \file
/// cuBLAS, loaded on first use like the driver (NOTE: [Lazy CUDA libraries]), for the batched
/// matrix products of xf::bmm (and so matmul and its vmap) on cuda tensors.
#include <cublas_api.h>  // types and constants only

#include <climits>
#include <mutex>
#include <string>

#include <xfunc/core/error.hpp>
#include <xfunc/cuda/runtime.hpp>
#include <xfunc/cuda/shared_library.hpp>

namespace xfunc::detail::cuda {

/// The cuBLAS functions xfunc calls, from one loaded libcublas.
struct cublas_api {
  shared_library library;
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&::cublasDgemmStridedBatched) dgemm_strided_batched = nullptr;
  std::string why_not;  // empty when usable
};

/// The process's cuBLAS: $XFUNC_CUBLAS_LIBRARY, else libcublas.so.13 from the loader's path or
/// the toolkit xfunc::cuda was configured with.
inline const cublas_api& cublas() {
  static const cublas_api api = [] {
    cublas_api c;
    c.library = shared_library(library_candidates("XFUNC_CUBLAS_LIBRARY", {"libcublas.so.13"}));
    if (!c.library) {
      c.why_not = "cuBLAS (libcublas.so.13) cannot be loaded: " + c.library.why_not() +
                  "; install the CUDA toolkit's cuBLAS or set XFUNC_CUBLAS_LIBRARY";
      return c;
    }
    c.library.bind(c.create, "cublasCreate_v2");
    c.library.bind(c.set_stream, "cublasSetStream_v2");
    c.library.bind(c.sgemm_strided_batched, "cublasSgemmStridedBatched");
    c.library.bind(c.dgemm_strided_batched, "cublasDgemmStridedBatched");
    if (!c.library.missing_symbols().empty())
      c.why_not = c.library.name() + " lacks functions of cuBLAS xfunc calls (" + c.library.missing_symbols() +
                  "); use cuBLAS 13 or later";
    return c;
  }();
  return api;
}

/// Throws naming `what` when a cuBLAS call did not succeed.
inline void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(what, ": cuBLAS returned status ", static_cast<int>(s));
}

/// This thread's cuBLAS handle on the context's device, bound to its stream (handles are not
/// thread-safe, so each thread has its own, pooled like the streams).
inline cublasHandle_t cublas_handle(const device_context& c, const char* what) {
  const cublas_api& api = cublas();
  if (!api.why_not.empty()) fail(what, ": ", api.why_not);
  cublasHandle_t h = per_thread_pool<cublasHandle_t>::instance().get(c.index, [&] {
    cublasHandle_t made = nullptr;
    check_cublas(api.create(&made), what);
    return made;
  });
  check_cublas(api.set_stream(h, c.stream), what);
  return h;
}

/// How a row-major matrix view [rows, cols] with element strides (rs, cs) reads as a
/// column-major BLAS operand: `transposed` when it is stored row by row (BLAS then sees its
/// transpose), with leading dimension `ld`. `usable` is false when neither stride is 1.
struct blas_layout {
  bool usable = false;
  bool transposed = false;
  long long ld = 1;
};
inline blas_layout blas_layout_of(long long rows, long long cols, long long rs, long long cs) {
  if (cols == 1 || cs == 1) {  // row by row: BLAS's column-major view is the transpose
    const long long ld = rows == 1 ? std::max(cols, 1LL) : rs;
    if (ld >= std::max(cols, 1LL)) return {true, true, ld};
  }
  if (rows == 1 || rs == 1) {  // column by column
    const long long ld = cols == 1 ? std::max(rows, 1LL) : cs;
    if (ld >= std::max(rows, 1LL)) return {true, false, ld};
  }
  return {};
}

}  // namespace xfunc::detail::cuda
