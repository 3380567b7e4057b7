// A fake cuBLAS for xfunc's tests: the GEMMs xfunc calls (cublas_v2.h), computed on the host
// over the fake driver's memory (fake_driver.cpp), so that xfunc's CUDA matmul runs on a machine
// with no GPU. It checks what the host side decides (transposes, leading dimensions, batch
// strides, alpha and beta), with exact BLAS semantics: column-major, beta == 0 overwrites C
// without reading it, arguments validated as cuBLAS does. Sums are accumulated in double.
#include <cublas_v2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>
#include <vector>

// Built with hidden visibility, as fake_driver.cpp: the cuBLAS names are exported one by one.
#define XFUNC_FAKE_EXPORT __attribute__((visibility("default")))

// cuBLAS's opaque handle, defined here.
struct cublasContext {
  cudaStream_t stream;
  int device;  // the device current when it was created: where its faults land
};

// From fake_driver.cpp.
namespace xfunc_fake_cuda {
__attribute__((visibility("hidden"))) bool device_range_ok(std::uintptr_t p, std::size_t bytes);
__attribute__((visibility("hidden"))) void fault_device(int device);
__attribute__((visibility("hidden"))) int this_thread_device();
}  // namespace xfunc_fake_cuda

namespace {

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// C[p] = alpha * op(A[p]) * op(B[p]) + beta * C[p] for every batch item p, where X[p] is X + p * strideX.
template <class T>
cublasStatus_t gemm(const char* function, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                    int m, int n, int k, const T* alpha, const T* A, int lda, long long strideA, const T* B, int ldb,
                    long long strideB, const T* beta, T* C, int ldc, long long strideC, int batchCount) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid_op(transa) || !valid_op(transb) || m < 0 || n < 0 || k < 0 || batchCount < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  // op(A) is m x k and op(B) is k x n; as stored, A is a_rows x a_cols and B is b_rows x b_cols
  const bool a_plain = transa == CUBLAS_OP_N, b_plain = transb == CUBLAS_OP_N;
  const long long a_rows = a_plain ? m : k, a_cols = a_plain ? k : m;
  const long long b_rows = b_plain ? k : n, b_cols = b_plain ? n : k;
  if (lda < std::max(1LL, a_rows) || ldb < std::max(1LL, b_rows) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || batchCount == 0) return CUBLAS_STATUS_SUCCESS;
  const double al = *alpha, be = *beta;
  const bool reads_ab = al != 0 && k > 0;  // as BLAS: alpha == 0 reads neither A nor B
  if (!reads_ab && be == 1) return CUBLAS_STATUS_SUCCESS;

  // Every operand's extent must lie inside one allocation. On a GPU a wrong leading dimension or
  // stride is an illegal access: the call returns, the next wait fails, and so it does here.
  // (in integers: a bad pointer plus an offset is not something to compute as a pointer)
  const auto inside = [](const T* x, long long p, long long stride, long long rows, long long cols, long long ld) {
    const std::uintptr_t start =
        reinterpret_cast<std::uintptr_t>(x) + static_cast<std::uintptr_t>(p * stride) * sizeof(T);
    return xfunc_fake_cuda::device_range_ok(start, static_cast<std::size_t>((cols - 1) * ld + rows) * sizeof(T));
  };
  for (long long p = 0; p < batchCount; ++p) {
    const char* bad = nullptr;
    if (reads_ab && !inside(A, p, strideA, a_rows, a_cols, lda)) bad = "A";
    if (reads_ab && !bad && !inside(B, p, strideB, b_rows, b_cols, ldb)) bad = "B";
    if (!bad && !inside(C, p, strideC, m, n, ldc)) bad = "C";
    if (bad) {
      std::fprintf(stderr, "xfunc fake CUDA: %s: operand %s of batch item %lld is not inside one allocation\n",
                   function, bad, p);
      xfunc_fake_cuda::fault_device(handle->device);
      return CUBLAS_STATUS_SUCCESS;
    }
  }

  std::vector<double> column;
  try {
    column.resize(static_cast<std::size_t>(m));
  } catch (...) {
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  for (long long p = 0; p < batchCount; ++p) {
    const T* a = A + p * strideA;
    const T* b = B + p * strideB;
    T* c = C + p * strideC;
    for (long long j = 0; j < n; ++j) {
      // column j of op(A) * op(B), in an order that walks A's storage contiguously
      std::fill(column.begin(), column.end(), 0.0);
      if (reads_ab) {
        const auto b_at = [&](long long l) { return double(b_plain ? b[l + j * ldb] : b[j + l * ldb]); };
        if (a_plain) {
          for (long long l = 0; l < k; ++l) {
            const double bl = b_at(l);
            for (long long i = 0; i < m; ++i) column[static_cast<std::size_t>(i)] += double(a[i + l * lda]) * bl;
          }
        } else {
          for (long long i = 0; i < m; ++i) {
            double sum = 0;
            for (long long l = 0; l < k; ++l) sum += double(a[l + i * lda]) * b_at(l);
            column[static_cast<std::size_t>(i)] = sum;
          }
        }
      }
      for (long long i = 0; i < m; ++i) {
        const double product = reads_ab ? al * column[static_cast<std::size_t>(i)] : 0.0;
        T& out = c[i + j * ldc];
        out = static_cast<T>(be == 0 ? product : product + be * double(out));  // beta == 0: C is not read
      }
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

// cuBLAS's functions under the names cublas_v2.h maps to (cublasCreate to cublasCreate_v2 and so
// on), with C linkage as cublas_api.h declares them.
extern "C" {

XFUNC_FAKE_EXPORT cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new (std::nothrow) cublasContext{nullptr, std::max(0, xfunc_fake_cuda::this_thread_device())};
  return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

XFUNC_FAKE_EXPORT cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

XFUNC_FAKE_EXPORT cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = streamId;  // every call is synchronous: the stream is only remembered
  return CUBLAS_STATUS_SUCCESS;
}

XFUNC_FAKE_EXPORT cublasStatus_t CUBLASWINAPI cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* streamId) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!streamId) return CUBLAS_STATUS_INVALID_VALUE;
  *streamId = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

XFUNC_FAKE_EXPORT cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                                             cublasOperation_t transb, int m, int n, int k,
                                                             const float* alpha, const float* A, int lda,
                                                             const float* B, int ldb, const float* beta, float* C,
                                                             int ldc) {
  return gemm("cublasSgemm_v2", handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

XFUNC_FAKE_EXPORT cublasStatus_t CUBLASWINAPI cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                                             cublasOperation_t transb, int m, int n, int k,
                                                             const double* alpha, const double* A, int lda,
                                                             const double* B, int ldb, const double* beta, double* C,
                                                             int ldc) {
  return gemm("cublasDgemm_v2", handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

XFUNC_FAKE_EXPORT cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const float* alpha,
    const float* A, int lda, long long int strideA, const float* B, int ldb, long long int strideB, const float* beta,
    float* C, int ldc, long long int strideC, int batchCount) {
  return gemm("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
              beta, C, ldc, strideC, batchCount);
}

XFUNC_FAKE_EXPORT cublasStatus_t CUBLASWINAPI cublasDgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const double* alpha,
    const double* A, int lda, long long int strideA, const double* B, int ldb, long long int strideB,
    const double* beta, double* C, int ldc, long long int strideC, int batchCount) {
  return gemm("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
              beta, C, ldc, strideC, batchCount);
}

}  // extern "C"
