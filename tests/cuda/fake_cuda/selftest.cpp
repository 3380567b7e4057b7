// The fake CUDA driver and cuBLAS's own test (ctest: test_fake_cuda). Loads the fake as xfunc
// does, with dlopen and dlsym: argv[1] is its self-test build (with selftest_kernels.cpp), an
// optional argv[2] the build xfunc's tests load, checked for its exported names only. Prints
// each failed check and exits 1 if any failed.
#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "selftest_args.hpp"
#include <limits>
#include <thread>
#include <type_traits>
#include <vector>

// The fake's test hooks (fake_driver.cpp), for their types.
extern "C" long long xfunc_fake_cuda_launches();
extern "C" long long xfunc_fake_cuda_bytes_in_use();

namespace {

using fake_cuda_selftest::axpy_args;
using fake_cuda_selftest::ids_args;

// Every name xfunc may look up, as exported.
#define XF_FAKE_FUNCTIONS(X)   \
  X(cuInit)                    \
  X(cuDriverGetVersion)        \
  X(cuDeviceGetCount)          \
  X(cuDeviceGet)               \
  X(cuDeviceGetAttribute)      \
  X(cuDevicePrimaryCtxRetain)  \
  X(cuCtxSetCurrent)           \
  X(cuCtxSynchronize)          \
  X(cuGetErrorName)            \
  X(cuGetErrorString)          \
  X(cuModuleLoadData)          \
  X(cuModuleGetFunction)       \
  X(cuLaunchKernel)            \
  X(cuMemAlloc_v2)             \
  X(cuMemFree_v2)              \
  X(cuMemcpyHtoD_v2)           \
  X(cuMemcpyDtoH_v2)           \
  X(cuMemcpyHtoDAsync_v2)      \
  X(cuMemcpyDtoHAsync_v2)      \
  X(cuMemcpyDtoDAsync_v2)      \
  X(cuMemsetD8Async)           \
  X(cuMemsetD32Async)          \
  X(cuStreamCreate)            \
  X(cuStreamDestroy_v2)        \
  X(cuStreamSynchronize)       \
  X(cuMemGetInfo_v2)           \
  X(cublasCreate_v2)           \
  X(cublasDestroy_v2)          \
  X(cublasSetStream_v2)        \
  X(cublasGetStream_v2)        \
  X(cublasSgemm_v2)            \
  X(cublasDgemm_v2)            \
  X(cublasSgemmStridedBatched) \
  X(cublasDgemmStridedBatched)

struct fake_api {
#define XF_MEMBER(fn) decltype(&::fn) fn = nullptr;
  XF_FAKE_FUNCTIONS(XF_MEMBER)
  XF_MEMBER(xfunc_fake_cuda_launches)
  XF_MEMBER(xfunc_fake_cuda_bytes_in_use)
#undef XF_MEMBER
};

std::atomic<int> failures{0};

void failed(int line, const char* what) {
  std::fprintf(stderr, "selftest.cpp:%d: failed: %s\n", line, what);
  ++failures;
}

template <class R>
void expect_result(int line, const char* call, R got, R want) {
  if (got == want) return;
  std::fprintf(stderr, "selftest.cpp:%d: %s returned %d, expected %d\n", line, call, static_cast<int>(got),
               static_cast<int>(want));
  ++failures;
}

#define CHECK(cond) ((cond) ? void() : failed(__LINE__, #cond))
#define CHECK_RESULT(call, want) expect_result(__LINE__, #call, (call), (want))
#define CHECK_OK(call) CHECK_RESULT(call, CUDA_SUCCESS)
#define CHECK_BLAS_OK(call) CHECK_RESULT(call, CUBLAS_STATUS_SUCCESS)

bool load(const char* path, fake_api& api) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    return false;
  }
  bool complete = true;
  const auto find = [&](const char* name) {
    void* p = dlsym(lib, name);
    if (!p) std::fprintf(stderr, "%s does not export %s\n", path, name);
    complete = complete && p;
    return p;
  };
#define XF_LOAD(fn) api.fn = reinterpret_cast<decltype(api.fn)>(find(#fn));
  XF_FAKE_FUNCTIONS(XF_LOAD)
  XF_LOAD(xfunc_fake_cuda_launches)
  XF_LOAD(xfunc_fake_cuda_bytes_in_use)
#undef XF_LOAD
  return complete;  // the library stays loaded for the process's life
}

fake_api cu;
CUcontext contexts[3] = {};

unsigned bits(float f) {
  unsigned u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

void test_start() {
  setenv("XFUNC_FAKE_CUDA_DEVICES", "3", 1);
  unsetenv("XFUNC_FAKE_CUDA_MEMORY");
  unsetenv("XFUNC_FAKE_CUDA_FAIL_KERNEL");
  CUdeviceptr p = 0;
  int n = 0;
  CHECK_RESULT(cu.cuMemAlloc_v2(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_RESULT(cu.cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_OK(cu.cuDriverGetVersion(&n));
  CHECK(n == 13000);
  CHECK_RESULT(cu.cuInit(1), CUDA_ERROR_INVALID_VALUE);
  setenv("XFUNC_FAKE_CUDA_DEVICES", "0", 1);
  CHECK_RESULT(cu.cuInit(0), CUDA_ERROR_NO_DEVICE);
  setenv("XFUNC_FAKE_CUDA_DEVICES", "3", 1);
  CHECK_OK(cu.cuInit(0));
  CHECK_OK(cu.cuDeviceGetCount(&n));
  CHECK(n == 3);

  CUdevice dev = -1;
  CHECK_RESULT(cu.cuDeviceGet(&dev, 3), CUDA_ERROR_INVALID_DEVICE);
  CHECK_OK(cu.cuDeviceGet(&dev, 1));
  CHECK(dev == 1);
  int v = -1;
  CHECK_OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK(v == 9);
  CHECK_OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CHECK(v == 0);
  CHECK_OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CHECK(v == 132);
  CHECK_OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
  CHECK(v == 1024);
  CHECK_OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
  CHECK(v == 32);
  CHECK_OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_ECC_ENABLED, dev));
  CHECK(v == 0);
  CHECK_RESULT(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 5), CUDA_ERROR_INVALID_DEVICE);

  const char* s = nullptr;
  CHECK_OK(cu.cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
  CHECK(s && std::strcmp(s, "CUDA_ERROR_ILLEGAL_ADDRESS") == 0);
  CHECK_OK(cu.cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
  CHECK(s && std::strcmp(s, "out of memory") == 0);
  CHECK_RESULT(cu.cuGetErrorName(static_cast<CUresult>(555), &s), CUDA_ERROR_INVALID_VALUE);
  CHECK(s == nullptr);

  // no context yet
  CHECK_RESULT(cu.cuMemAlloc_v2(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
  for (int d = 0; d < 3; ++d) CHECK_OK(cu.cuDevicePrimaryCtxRetain(&contexts[d], d));
  CHECK(contexts[0] && contexts[1] && contexts[2] && contexts[0] != contexts[1] && contexts[1] != contexts[2]);
  CUcontext again = nullptr;
  CHECK_OK(cu.cuDevicePrimaryCtxRetain(&again, 0));
  CHECK(again == contexts[0]);
  CHECK_RESULT(cu.cuCtxSetCurrent(reinterpret_cast<CUcontext>(&again)), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_OK(cu.cuCtxSetCurrent(contexts[0]));
  CHECK_OK(cu.cuCtxSynchronize());
}

void test_memory() {
  const long long before = cu.xfunc_fake_cuda_bytes_in_use();
  CUdeviceptr a = 0, b = 0;
  CHECK_RESULT(cu.cuMemAlloc_v2(&a, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_OK(cu.cuMemAlloc_v2(&a, 1000 * sizeof(float)));
  CHECK_OK(cu.cuMemAlloc_v2(&b, 1000 * sizeof(float)));
  CHECK(a % 256 == 0 && b % 256 == 0);
  CHECK(cu.xfunc_fake_cuda_bytes_in_use() == before + 8000);

  std::vector<float> host(1000), back(1000);
  CHECK_OK(cu.cuMemcpyDtoH_v2(back.data(), a, 4000));
  CHECK(bits(back[0]) == 0xffffffffu && bits(back[999]) == 0xffffffffu);  // fresh memory is garbage
  for (int i = 0; i < 1000; ++i) host[static_cast<std::size_t>(i)] = float(i);
  CHECK_OK(cu.cuMemcpyHtoD_v2(a, host.data(), 4000));
  CHECK_OK(cu.cuMemsetD32Async(a + 40, bits(2.5f), 5, nullptr));
  CHECK_OK(cu.cuMemsetD8Async(a, 0, 8, nullptr));
  CHECK_OK(cu.cuMemcpyDtoDAsync_v2(b, a, 4000, nullptr));
  CHECK_OK(cu.cuMemcpyDtoHAsync_v2(back.data(), b, 4000, nullptr));
  CHECK(back[0] == 0.0f && back[1] == 0.0f && back[2] == 2.0f && back[9] == 9.0f);
  CHECK(back[10] == 2.5f && back[14] == 2.5f && back[15] == 15.0f && back[999] == 999.0f);
  CHECK_OK(cu.cuMemcpyHtoDAsync_v2(b + 4, host.data(), 4, nullptr));
  CHECK_OK(cu.cuMemcpyDtoH_v2(back.data(), b, 8));
  CHECK(back[0] == 0.0f && back[1] == 0.0f);
  CHECK_OK(cu.cuMemcpyHtoD_v2(a, host.data(), 0));

  // what the real driver rejects: ranges outside one allocation, device memory as host memory
  CHECK_RESULT(cu.cuMemcpyHtoD_v2(a, host.data(), 4001), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemcpyHtoD_v2(a + 3996, host.data(), 8), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemcpyDtoH_v2(back.data(), a + 4, 4000), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemcpyHtoD_v2(a, reinterpret_cast<const void*>(b), 4), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemcpyDtoH_v2(reinterpret_cast<void*>(b), a, 4), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemcpyHtoD_v2(reinterpret_cast<CUdeviceptr>(host.data()), back.data(), 4),
               CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemsetD32Async(a + 2, 0, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemsetD32Async(a, 0, 1001, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemsetD8Async(a + 1, 0, 4000, nullptr), CUDA_ERROR_INVALID_VALUE);

  CHECK_OK(cu.cuMemFree_v2(a));
  CHECK_RESULT(cu.cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemFree_v2(b + 4), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuMemFree_v2(reinterpret_cast<CUdeviceptr>(host.data())), CUDA_ERROR_INVALID_VALUE);
  CHECK_OK(cu.cuMemFree_v2(b));
  CHECK(cu.xfunc_fake_cuda_bytes_in_use() == before);

  // the capacity, per device
  setenv("XFUNC_FAKE_CUDA_MEMORY", "4096", 1);
  std::size_t free_bytes = 0, total = 0;
  CHECK_OK(cu.cuMemGetInfo_v2(&free_bytes, &total));
  CHECK(free_bytes == 4096 && total == 4096);
  CHECK_OK(cu.cuMemAlloc_v2(&a, 4000));
  CHECK_RESULT(cu.cuMemAlloc_v2(&b, 97), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_OK(cu.cuMemAlloc_v2(&b, 96));
  CHECK_RESULT(cu.cuMemAlloc_v2(&b, 1), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_OK(cu.cuMemGetInfo_v2(&free_bytes, &total));
  CHECK(free_bytes == 0 && total == 4096);
  CHECK_OK(cu.cuMemFree_v2(b));
  CHECK_OK(cu.cuCtxSetCurrent(contexts[2]));
  CHECK_OK(cu.cuMemAlloc_v2(&b, 4096));  // another device's memory
  CHECK_OK(cu.cuMemFree_v2(a));          // device 0's memory, freed with device 2 current
  CHECK_OK(cu.cuMemFree_v2(b));
  CHECK_OK(cu.cuCtxSetCurrent(contexts[0]));
  unsetenv("XFUNC_FAKE_CUDA_MEMORY");
  CHECK_OK(cu.cuMemGetInfo_v2(&free_bytes, &total));
  CHECK(total == 1ull << 30 && free_bytes == total - static_cast<std::size_t>(before));
  CHECK(cu.xfunc_fake_cuda_bytes_in_use() == before);

  // streams
  CUstream s1 = nullptr, s2 = nullptr;
  CHECK_OK(cu.cuStreamCreate(&s1, CU_STREAM_DEFAULT));
  CHECK_OK(cu.cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CHECK_RESULT(cu.cuStreamCreate(&s2, 4), CUDA_ERROR_INVALID_VALUE);
  CHECK(s1 && s2 && s1 != s2);
  CHECK_OK(cu.cuMemAlloc_v2(&a, 64));
  CHECK_OK(cu.cuMemsetD8Async(a, 7, 64, s1));
  CHECK_OK(cu.cuMemcpyDtoHAsync_v2(back.data(), a, 4, s2));
  CHECK(bits(back[0]) == 0x07070707u);
  CHECK_OK(cu.cuStreamSynchronize(s1));
  CHECK_OK(cu.cuStreamSynchronize(nullptr));
  CHECK_OK(cu.cuStreamSynchronize(CU_STREAM_PER_THREAD));
  CHECK_OK(cu.cuStreamDestroy_v2(s1));
  CHECK_RESULT(cu.cuStreamDestroy_v2(s1), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RESULT(cu.cuStreamSynchronize(s1), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RESULT(cu.cuMemsetD8Async(a, 7, 64, s1), CUDA_ERROR_INVALID_HANDLE);
  CHECK_OK(cu.cuStreamDestroy_v2(s2));
  CHECK_OK(cu.cuMemFree_v2(a));
}

CUfunction function(const char* name) {
  CUmodule module = nullptr;
  const char image[] = "not a fatbinary";
  CHECK_OK(cu.cuModuleLoadData(&module, image));
  CUfunction f = nullptr;
  CHECK_OK(cu.cuModuleGetFunction(&f, module, name));
  return f;
}

void test_kernels() {
  CUmodule module = nullptr;
  CHECK_RESULT(cu.cuModuleLoadData(&module, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_OK(cu.cuModuleLoadData(&module, "image"));
  CHECK(module != nullptr);
  CUfunction f = nullptr;
  CHECK_RESULT(cu.cuModuleGetFunction(&f, module, "xf_no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  CHECK_RESULT(cu.cuModuleGetFunction(&f, nullptr, "xf_test_axpy"), CUDA_ERROR_INVALID_HANDLE);
  CHECK_OK(cu.cuModuleGetFunction(&f, module, "xf_test_axpy"));
  CHECK(f != nullptr);

  // axpy over a grid-stride loop: 96 threads for 1000 elements
  const long long n = 1000;
  std::vector<float> x(n), y(n), out(n);
  for (long long i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = float(i % 17), y[static_cast<std::size_t>(i)] = 1;
  CUdeviceptr dx = 0, dy = 0;
  CHECK_OK(cu.cuMemAlloc_v2(&dx, n * sizeof(float)));
  CHECK_OK(cu.cuMemAlloc_v2(&dy, n * sizeof(float)));
  CHECK_OK(cu.cuMemcpyHtoD_v2(dx, x.data(), n * sizeof(float)));
  CHECK_OK(cu.cuMemcpyHtoD_v2(dy, y.data(), n * sizeof(float)));
  axpy_args args{n, 2.0f, reinterpret_cast<const float*>(dx), reinterpret_cast<float*>(dy)};
  void* params[] = {&args};
  const long long launches = cu.xfunc_fake_cuda_launches();
  CHECK_OK(cu.cuLaunchKernel(f, 3, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr));
  CHECK(cu.xfunc_fake_cuda_launches() == launches + 1);
  CHECK_OK(cu.cuCtxSynchronize());
  CHECK_OK(cu.cuMemcpyDtoH_v2(out.data(), dy, n * sizeof(float)));
  bool right = true;
  for (long long i = 0; i < n; ++i) right = right && out[static_cast<std::size_t>(i)] == 1 + 2.0f * float(i % 17);
  CHECK(right);

  // launches the real driver rejects run nothing
  CHECK_RESULT(cu.cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuLaunchKernel(f, 1, 1, 1, 0, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 1 << 20, nullptr, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_RESULT(cu.cuLaunchKernel(nullptr, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_INVALID_HANDLE);
  CHECK(cu.xfunc_fake_cuda_launches() == launches + 1);
  CHECK_OK(cu.cuMemcpyDtoH_v2(out.data(), dy, n * sizeof(float)));
  CHECK(out[0] == 1 && out[5] == 11);

  // on a created stream
  CUstream stream = nullptr;
  CHECK_OK(cu.cuStreamCreate(&stream, 0));
  CHECK_OK(cu.cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, stream, params, nullptr));
  CHECK_OK(cu.cuStreamSynchronize(stream));
  CHECK_OK(cu.cuMemcpyDtoHAsync_v2(out.data(), dy, n * sizeof(float), stream));
  CHECK(out[0] == 1 && out[5] == 21 && out[999] == 1 + 4.0f * float(999 % 17));
  CHECK_OK(cu.cuStreamDestroy_v2(stream));
  CHECK_OK(cu.cuMemFree_v2(dx));
  CHECK_OK(cu.cuMemFree_v2(dy));

  // the ids each emulated thread sees: those of XFUNC_THREAD_ID on a GPU, which uses x only
  const CUfunction ids = function("xf_test_ids");
  std::vector<long long> runs(96, 0);
  long long count = 0;
  ids_args ia{96, runs.data(), &count};
  void* ids_params[] = {&ia};
  CHECK_OK(cu.cuLaunchKernel(ids, 3, 1, 1, 32, 1, 1, 0, nullptr, ids_params, nullptr));
  bool once = true;
  for (long long r : runs) once = once && r == 1;
  CHECK(once && count == 96);
  std::vector<long long> runs2(32, 0);
  ids_args ib{32, runs2.data(), &count};
  void* ids_params2[] = {&ib};
  CHECK_OK(cu.cuLaunchKernel(ids, 2, 2, 1, 16, 1, 1, 0, nullptr, ids_params2, nullptr));
  bool twice = true;
  for (long long r : runs2) twice = twice && r == 2;
  CHECK(twice && count == 32);
}

template <class T>
T value_at(long long i) {
  return static_cast<T>(static_cast<int>((i * 7 + 3) % 9) - 4);  // small integers: every sum is exact
}

// One GEMM through the fake against a naive column-major reference. Strides of 0 mean one matrix
// for every batch item; rows below m (up to ldc) and gaps between C's items must stay untouched.
template <class T>
void check_gemm(int line, cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                int lda, int ldb, int ldc, long long stride_a, long long stride_b, long long stride_c, int batch,
                T alpha, T beta, bool batched_call, bool nan_in_c = false) {
  const bool a_plain = ta == CUBLAS_OP_N, b_plain = tb == CUBLAS_OP_N;
  const long long a_rows = a_plain ? m : k, a_cols = a_plain ? k : m;
  const long long b_rows = b_plain ? k : n, b_cols = b_plain ? n : k;
  const long long a_one = (a_cols - 1) * lda + a_rows, b_one = (b_cols - 1) * ldb + b_rows, c_one = (n - 1) * ldc + m;
  const auto total = [&](long long one, long long stride) { return (batch - 1) * stride + one; };
  std::vector<T> A(static_cast<std::size_t>(total(a_one, stride_a))),
      B(static_cast<std::size_t>(total(b_one, stride_b)));
  std::vector<T> C(static_cast<std::size_t>(total(c_one, stride_c)));
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = value_at<T>(static_cast<long long>(i));
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = value_at<T>(static_cast<long long>(i) + 5);
  for (std::size_t i = 0; i < C.size(); ++i)
    C[i] = nan_in_c ? std::numeric_limits<T>::quiet_NaN() : value_at<T>(static_cast<long long>(i) + 1);
  std::vector<T> want = C;
  for (long long p = 0; p < batch; ++p)
    for (long long j = 0; j < n; ++j)
      for (long long i = 0; i < m; ++i) {
        double sum = 0;
        for (long long l = 0; l < k; ++l) {
          const T a = a_plain ? A[static_cast<std::size_t>(p * stride_a + i + l * lda)]
                              : A[static_cast<std::size_t>(p * stride_a + l + i * lda)];
          const T b = b_plain ? B[static_cast<std::size_t>(p * stride_b + l + j * ldb)]
                              : B[static_cast<std::size_t>(p * stride_b + j + l * ldb)];
          sum += double(a) * double(b);
        }
        T& c = want[static_cast<std::size_t>(p * stride_c + i + j * ldc)];
        c = static_cast<T>(double(alpha) * sum + (beta == 0 ? 0.0 : double(beta) * double(c)));
      }
  // Gaps between C's items (for batches) and rows of C below m keep their values as `want` does.
  CUdeviceptr dA = 0, dB = 0, dC = 0;
  CHECK_OK(cu.cuMemAlloc_v2(&dA, std::max<std::size_t>(A.size(), 1) * sizeof(T)));  // k == 0: no A
  CHECK_OK(cu.cuMemAlloc_v2(&dB, std::max<std::size_t>(B.size(), 1) * sizeof(T)));
  CHECK_OK(cu.cuMemAlloc_v2(&dC, C.size() * sizeof(T)));
  CHECK_OK(cu.cuMemcpyHtoD_v2(dA, A.data(), A.size() * sizeof(T)));
  CHECK_OK(cu.cuMemcpyHtoD_v2(dB, B.data(), B.size() * sizeof(T)));
  CHECK_OK(cu.cuMemcpyHtoD_v2(dC, C.data(), C.size() * sizeof(T)));
  const T* a = reinterpret_cast<const T*>(dA);
  const T* b = reinterpret_cast<const T*>(dB);
  T* c = reinterpret_cast<T*>(dC);
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  if constexpr (std::is_same_v<T, float>) {
    status = batched_call ? cu.cublasSgemmStridedBatched(handle, ta, tb, m, n, k, &alpha, a, lda, stride_a, b, ldb,
                                                         stride_b, &beta, c, ldc, stride_c, batch)
                          : cu.cublasSgemm_v2(handle, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
  } else {
    status = batched_call ? cu.cublasDgemmStridedBatched(handle, ta, tb, m, n, k, &alpha, a, lda, stride_a, b, ldb,
                                                         stride_b, &beta, c, ldc, stride_c, batch)
                          : cu.cublasDgemm_v2(handle, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
  }
  expect_result(line, "gemm", status, CUBLAS_STATUS_SUCCESS);
  std::vector<T> got(C.size());
  CHECK_OK(cu.cuMemcpyDtoH_v2(got.data(), dC, got.size() * sizeof(T)));
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i];
    if (!same) {
      std::fprintf(stderr, "selftest.cpp:%d: gemm: C[%zu] is %g, expected %g\n", line, i, double(got[i]),
                   double(want[i]));
      ++failures;
      break;
    }
  }
  CHECK_OK(cu.cuMemFree_v2(dA));
  CHECK_OK(cu.cuMemFree_v2(dB));
  CHECK_OK(cu.cuMemFree_v2(dC));
}

void test_cublas() {
  cublasHandle_t h = nullptr;
  CHECK_BLAS_OK(cu.cublasCreate_v2(&h));
  CHECK_RESULT(cu.cublasCreate_v2(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  CUstream stream = nullptr;
  CHECK_OK(cu.cuStreamCreate(&stream, 0));
  CHECK_BLAS_OK(cu.cublasSetStream_v2(h, stream));
  cudaStream_t got = nullptr;
  CHECK_BLAS_OK(cu.cublasGetStream_v2(h, &got));
  CHECK(got == stream);

  const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  // m, n, k = 5, 4, 3 with leading dimensions above the rows
  check_gemm<float>(__LINE__, h, N, N, 5, 4, 3, 7, 3, 6, 0, 0, 0, 1, 0.5f, 2.0f, false);
  check_gemm<float>(__LINE__, h, T, N, 5, 4, 3, 4, 5, 5, 0, 0, 0, 1, 1.0f, -1.0f, false);
  check_gemm<float>(__LINE__, h, N, T, 5, 4, 3, 5, 6, 5, 0, 0, 0, 1, 1.0f, 0.0f, false);
  check_gemm<float>(__LINE__, h, T, T, 5, 4, 3, 3, 4, 8, 0, 0, 0, 1, 2.0f, 1.0f, false);
  check_gemm<float>(__LINE__, h, CUBLAS_OP_C, N, 5, 4, 3, 3, 3, 5, 0, 0, 0, 1, 1.0f, 0.0f, false);
  check_gemm<double>(__LINE__, h, N, N, 6, 2, 7, 6, 7, 6, 0, 0, 0, 1, 1.0, 0.0, false);
  check_gemm<double>(__LINE__, h, T, T, 6, 2, 7, 9, 2, 7, 0, 0, 0, 1, -0.5, 3.0, false);
  check_gemm<double>(__LINE__, h, N, T, 1, 1, 20, 1, 1, 1, 0, 0, 0, 1, 1.0, 1.0, false);
  // beta == 0 never reads C: NaN there must not come out
  check_gemm<float>(__LINE__, h, N, N, 5, 4, 3, 5, 3, 5, 0, 0, 0, 1, 1.0f, 0.0f, false, true);
  check_gemm<double>(__LINE__, h, T, N, 5, 4, 3, 3, 3, 5, 0, 0, 0, 1, 1.0, 0.0, true, true);
  // alpha == 0 scales C; k == 0 too
  check_gemm<float>(__LINE__, h, N, N, 5, 4, 3, 5, 3, 5, 0, 0, 0, 1, 0.0f, 2.0f, false);
  check_gemm<double>(__LINE__, h, N, N, 5, 4, 0, 5, 1, 5, 0, 0, 0, 1, 1.0, 0.5, false);
  // strided batches: one B for every item (stride 0), gaps between C's items
  check_gemm<float>(__LINE__, h, N, N, 4, 3, 5, 4, 5, 4, 20, 0, 14, 3, 1.0f, 0.0f, true);
  check_gemm<float>(__LINE__, h, T, N, 4, 3, 5, 5, 5, 6, 25, 15, 20, 2, 1.0f, 1.0f, true);
  check_gemm<double>(__LINE__, h, N, T, 4, 3, 5, 4, 3, 4, 0, 15, 12, 4, 2.0, 0.0, true);
  check_gemm<double>(__LINE__, h, T, T, 4, 3, 5, 5, 3, 4, 20, 0, 12, 1, 1.0, 1.0, true);

  // what cuBLAS rejects
  const float one = 1, zero = 0;
  const float* none = nullptr;
  float* out = nullptr;
  CHECK_RESULT(cu.cublasSgemm_v2(nullptr, N, N, 1, 1, 1, &one, none, 1, none, 1, &zero, out, 1),
               CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK_RESULT(cu.cublasSgemm_v2(h, N, N, -1, 1, 1, &one, none, 1, none, 1, &zero, out, 1),
               CUBLAS_STATUS_INVALID_VALUE);
  CHECK_RESULT(cu.cublasSgemm_v2(h, N, N, 5, 4, 3, &one, none, 4, none, 3, &zero, out, 5),
               CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  CHECK_RESULT(cu.cublasSgemm_v2(h, T, N, 5, 4, 3, &one, none, 2, none, 3, &zero, out, 5),
               CUBLAS_STATUS_INVALID_VALUE);  // lda < k
  CHECK_RESULT(cu.cublasSgemm_v2(h, N, T, 5, 4, 3, &one, none, 5, none, 3, &zero, out, 5),
               CUBLAS_STATUS_INVALID_VALUE);  // ldb < n
  CHECK_RESULT(cu.cublasSgemm_v2(h, N, N, 5, 4, 3, &one, none, 5, none, 3, &zero, out, 4),
               CUBLAS_STATUS_INVALID_VALUE);  // ldc < m
  CHECK_RESULT(cu.cublasSgemm_v2(h, N, N, 0, 0, 0, &one, none, 0, none, 1, &zero, out, 1),
               CUBLAS_STATUS_INVALID_VALUE);  // lda < 1
  CHECK_RESULT(cu.cublasSgemm_v2(h, CUBLAS_OP_CONJG, N, 1, 1, 1, &one, none, 1, none, 1, &zero, out, 1),
               CUBLAS_STATUS_INVALID_VALUE);
  CHECK_RESULT(cu.cublasSgemmStridedBatched(h, N, N, 1, 1, 1, &one, none, 1, 1, none, 1, 1, &zero, out, 1, 1, -1),
               CUBLAS_STATUS_INVALID_VALUE);
  CHECK_BLAS_OK(cu.cublasSgemm_v2(h, N, N, 0, 4, 3, &one, none, 1, none, 3, &zero, out, 1));  // nothing to do
  CHECK_BLAS_OK(cu.cublasSgemmStridedBatched(h, N, N, 1, 1, 1, &one, none, 1, 1, none, 1, 1, &zero, out, 1, 1, 0));
  CHECK_BLAS_OK(cu.cublasDestroy_v2(h));
  CHECK_RESULT(cu.cublasDestroy_v2(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK_OK(cu.cuStreamDestroy_v2(stream));

  // an operand outside its allocation is an illegal access, on device 2 only
  CHECK_OK(cu.cuCtxSetCurrent(contexts[2]));
  CHECK_BLAS_OK(cu.cublasCreate_v2(&h));
  CUdeviceptr d = 0;
  CHECK_OK(cu.cuMemAlloc_v2(&d, 16 * sizeof(float)));
  float* m = reinterpret_cast<float*>(d);
  CHECK_BLAS_OK(cu.cublasSgemm_v2(h, N, N, 4, 4, 4, &one, m, 4, m, 4, &zero, m, 4));  // fits (aliasing aside)
  CHECK_OK(cu.cuCtxSynchronize());
  CHECK_BLAS_OK(cu.cublasSgemm_v2(h, N, N, 4, 4, 4, &one, m, 5, m, 4, &zero, m, 4));  // A runs past the end
  CHECK_RESULT(cu.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_OK(cu.cuMemFree_v2(d));
  CHECK_BLAS_OK(cu.cublasDestroy_v2(h));
  CHECK_OK(cu.cuCtxSetCurrent(contexts[0]));
  CHECK_OK(cu.cuCtxSynchronize());
}

// XFUNC_FAKE_CUDA_FAIL_KERNEL, on device 1: the launch succeeds and runs nothing; every later
// wait on that device fails, and no other device's.
void test_failing_kernel() {
  CHECK_OK(cu.cuCtxSetCurrent(contexts[1]));
  const CUfunction f = function("xf_test_axpy");
  CUstream stream = nullptr;
  CHECK_OK(cu.cuStreamCreate(&stream, 0));
  CUdeviceptr dy = 0;
  CHECK_OK(cu.cuMemAlloc_v2(&dy, 4 * sizeof(float)));
  const float y[4] = {1, 2, 3, 4};
  CHECK_OK(cu.cuMemcpyHtoD_v2(dy, y, sizeof y));
  axpy_args args{4, 1.0f, reinterpret_cast<const float*>(dy), reinterpret_cast<float*>(dy)};
  void* params[] = {&args};
  setenv("XFUNC_FAKE_CUDA_FAIL_KERNEL", "xf_test_axpy", 1);
  const long long launches = cu.xfunc_fake_cuda_launches();
  CHECK_OK(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr));
  CHECK(cu.xfunc_fake_cuda_launches() == launches + 1);
  CHECK(reinterpret_cast<const float*>(dy)[3] == 4);  // ran nothing (device memory is host memory here)
  float back[4] = {};
  CHECK_RESULT(cu.cuStreamSynchronize(nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_RESULT(cu.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_RESULT(cu.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_RESULT(cu.cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_RESULT(cu.cuMemcpyDtoH_v2(back, dy, sizeof back), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_RESULT(cu.cuMemcpyDtoHAsync_v2(back, dy, sizeof back, stream), CUDA_ERROR_ILLEGAL_ADDRESS);
  unsetenv("XFUNC_FAKE_CUDA_FAIL_KERNEL");
  CHECK_OK(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr));
  CHECK(reinterpret_cast<const float*>(dy)[3] == 8);
  CHECK_RESULT(cu.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);  // sticky
  CHECK_OK(cu.cuCtxSetCurrent(contexts[0]));
  CHECK_OK(cu.cuCtxSynchronize());
  CHECK_RESULT(cu.cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_ADDRESS);  // device 1's stream
  CHECK_OK(cu.cuStreamDestroy_v2(stream));
  CHECK_OK(cu.cuMemFree_v2(dy));  // memory can still be freed
}

// Threads each with their own context, allocations and launches (run it under TSan too).
void test_threads() {
  const CUfunction f = function("xf_test_axpy");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([f, t] {
      CUdeviceptr p = 0;
      CHECK_RESULT(cu.cuMemAlloc_v2(&p, 64), CUDA_ERROR_INVALID_CONTEXT);  // a new thread has none
      CHECK_OK(cu.cuCtxSetCurrent(contexts[t % 2 == 0 ? 0 : 2]));
      for (int i = 0; i < 100; ++i) {
        CHECK_OK(cu.cuMemAlloc_v2(&p, 64 + static_cast<std::size_t>(i)));
        CHECK_OK(cu.cuMemFree_v2(p));
      }
      const long long n = 500;
      std::vector<float> x(n, float(t)), y(n, 1.0f);
      CUdeviceptr dx = 0, dy = 0;
      CHECK_OK(cu.cuMemAlloc_v2(&dx, n * sizeof(float)));
      CHECK_OK(cu.cuMemAlloc_v2(&dy, n * sizeof(float)));
      CHECK_OK(cu.cuMemcpyHtoD_v2(dx, x.data(), n * sizeof(float)));
      CHECK_OK(cu.cuMemcpyHtoD_v2(dy, y.data(), n * sizeof(float)));
      axpy_args args{n, 3.0f, reinterpret_cast<const float*>(dx), reinterpret_cast<float*>(dy)};
      void* params[] = {&args};
      for (int i = 0; i < 10; ++i) CHECK_OK(cu.cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr));
      CHECK_OK(cu.cuMemcpyDtoH_v2(y.data(), dy, n * sizeof(float)));
      bool right = true;
      for (float v : y) right = right && v == 1 + 30.0f * float(t);
      CHECK(right);
      CHECK_OK(cu.cuMemFree_v2(dx));
      CHECK_OK(cu.cuMemFree_v2(dy));
    });
  for (std::thread& t : threads) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <fake CUDA library with the self-test kernels> [<fake CUDA library>]\n", argv[0]);
    return 2;
  }
  if (argc > 2) {  // the build xfunc's tests load: every name there
    fake_api other;
    if (!load(argv[2], other)) ++failures;
  }
  if (!load(argv[1], cu)) {
    std::fprintf(stderr, "FAILED\n");
    return 1;
  }
  test_start();
  test_memory();
  test_kernels();
  test_threads();
  test_cublas();          // leaves device 2 faulted
  test_failing_kernel();  // leaves device 1 faulted
  CHECK(cu.xfunc_fake_cuda_bytes_in_use() == 0);
  if (failures) {
    std::fprintf(stderr, "FAILED: %d checks\n", failures.load());
    return 1;
  }
  std::printf("fake CUDA driver and cuBLAS: all checks passed\n");
  return 0;
}
