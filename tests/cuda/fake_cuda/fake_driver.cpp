// A fake CUDA driver for xfunc's tests: a host emulation of the part of the CUDA driver API
// (cuda.h) that xfunc calls, so that its CUDA backend runs on a machine with no GPU
// (NOTE: [Kernels compiled twice] in src/cuda/kernel_support.hpp). Device memory is host memory
// (a CUdeviceptr is the host address), everything is synchronous, and a kernel launch runs the
// kernel's host build for every block and thread of the grid, one after the other, on the
// calling thread. It checks what the host side decides (which kernel, its arguments, sizes,
// copies, streams, contexts), not the GPU's own arithmetic or speed.
//
// Where the real driver would reject a call, this one does too (no cuInit, no current context,
// a copy that leaves its allocation, a freed stream, a launch over the limits), and says why on
// stderr. Tests steer it with environment variables, read at each call:
//   XFUNC_FAKE_CUDA_DEVICES      the number of devices (default 1)
//   XFUNC_FAKE_CUDA_MEMORY       each device's memory in bytes (default 1 GiB)
//   XFUNC_FAKE_CUDA_FAIL_KERNEL  a kernel name: launching it runs nothing and leaves the device
//                                with CUDA_ERROR_ILLEGAL_ADDRESS, as a faulting kernel would
//   XFUNC_FAKE_CUDA_STREAM_BUSY  set: cuStreamQuery answers CUDA_ERROR_NOT_READY for ever, as for
//                                work that never ends (an NCCL collective a rank never joins)
// and can ask it xfunc_fake_cuda_launches(), xfunc_fake_cuda_bytes_in_use() and
// xfunc_fake_cuda_is_device_memory(p, bytes).
#include <cuda.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>

#include "cuda/kernel_support.hpp"

// The library is built with hidden visibility (xfunc's headers, compiled in with its kernels,
// stay inside it): what xfunc looks up is exported by name.
#define XFUNC_FAKE_EXPORT __attribute__((visibility("default")))

// cuda.h's opaque handles, defined here so that a handle is a pointer to one of our objects.
struct CUctx_st {
  int device;
};
struct CUmod_st {
  int device;
};
struct CUstream_st {
  int device;
};

namespace xfunc_emulation {
thread_local long long thread_id = 0;
thread_local long long thread_count = 0;
kernel_entry*& kernel_list() {
  static kernel_entry* head = nullptr;  // constant-initialised: safe from the kernels' static initialisers
  return head;
}
}  // namespace xfunc_emulation

namespace {

constexpr int max_devices = 16;
// cuMemAlloc's alignment on real GPUs (at least 256 bytes), which kernels may rely on.
constexpr std::size_t allocation_alignment = 256;
// An H100/H200's limits, enforced at launch as the real driver does.
constexpr unsigned max_block_threads = 1024, max_block_z = 64, max_grid_y = 65535, max_grid_x = 0x7fffffff;
constexpr unsigned max_shared_bytes = 48 * 1024;

struct allocation {
  std::size_t bytes;
  int device;
};

struct driver_state {
  std::mutex mutex;  // guards allocations, in_use and streams
  std::map<std::uintptr_t, allocation> allocations;
  std::size_t in_use[max_devices] = {};
  std::set<const CUstream_st*> streams;
  std::atomic<bool> initialized{false};
  // a kernel faulted on the device: CUDA's sticky error, never cleared
  std::atomic<bool> faulted[max_devices] = {};
  std::atomic<long long> launches{0};
  CUctx_st contexts[max_devices];
  CUmod_st modules[max_devices];
  driver_state() {
    for (int d = 0; d < max_devices; ++d) contexts[d].device = modules[d].device = d;
  }
};

// Never destroyed: xfunc frees device memory from its own static destructors, which may run
// after this library's would have.
driver_state& state() {
  static driver_state& s = *new driver_state;
  return s;
}

// The device whose context is current on this thread, or -1.
thread_local int current_device = -1;

long long env_number(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  return *end == '\0' && errno == 0 && x >= 0 ? x : fallback;
}

int device_count() {
  const long long n = env_number("XFUNC_FAKE_CUDA_DEVICES", 1);
  return n > max_devices ? max_devices : static_cast<int>(n);
}

std::size_t device_memory() { return static_cast<std::size_t>(env_number("XFUNC_FAKE_CUDA_MEMORY", 1LL << 30)); }

// Misuse that a real driver would also reject: said on stderr, since the result code alone
// rarely tells a test's reader which argument was wrong.
void complain(const char* function, const char* what) {
  std::fprintf(stderr, "xfunc fake CUDA: %s: %s\n", function, what);
}

CUresult need_init() { return state().initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

// Most calls need cuInit and a current context, as on the real driver.
CUresult need_context() {
  if (!state().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return current_device >= 0 && current_device < device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// Whether [p, p + bytes) lies inside one live allocation. The caller holds the mutex.
bool inside_allocation(const driver_state& s, std::uintptr_t p, std::size_t bytes) {
  auto it = s.allocations.upper_bound(p);
  if (it == s.allocations.begin()) return false;
  --it;
  return p - it->first <= it->second.bytes && bytes <= it->second.bytes - (p - it->first);
}

// Whether [p, p + bytes) overlaps a live allocation. The caller holds the mutex.
bool overlaps_allocation(const driver_state& s, std::uintptr_t p, std::size_t bytes) {
  auto it = s.allocations.lower_bound(p + bytes);  // the first allocation starting at or past the end
  if (it == s.allocations.begin()) return false;
  --it;
  return it->first + it->second.bytes > p;
}

// The device a stream belongs to, or an error for a stream never created or destroyed already.
// The null and special streams are the current context's, so they need one; a created stream
// carries its own.
CUresult stream_device(CUstream stream, int* device) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    if (const CUresult r = need_context(); r != CUDA_SUCCESS) return r;
    *device = current_device;
    return CUDA_SUCCESS;
  }
  if (const CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  driver_state& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.streams.count(stream)) return CUDA_ERROR_INVALID_HANDLE;
  *device = stream->device;
  return CUDA_SUCCESS;
}

// A faulted kernel surfaces where the host waits for the device.
CUresult device_error(int device) { return state().faulted[device] ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS; }

enum class side { host, device };

// Every copy: checks both ranges (a device range must lie inside one allocation, a host range
// must not touch device memory, which here would silently work), then copies at once.
CUresult copy(const char* function, void* dst, side dst_side, const void* src, side src_side, std::size_t bytes,
              CUstream stream, bool waits_for_device) {
  int device = -1;
  if (const CUresult r = stream_device(stream, &device); r != CUDA_SUCCESS) return r;
  if (waits_for_device)
    if (const CUresult r = device_error(device); r != CUDA_SUCCESS) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  if (!dst || !src) {
    complain(function, "a null pointer");
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto d = reinterpret_cast<std::uintptr_t>(dst), s = reinterpret_cast<std::uintptr_t>(src);
  {
    driver_state& st = state();
    std::lock_guard lock(st.mutex);
    if (dst_side == side::device ? !inside_allocation(st, d, bytes) : overlaps_allocation(st, d, bytes)) {
      complain(function, dst_side == side::device ? "the destination range is not inside one allocation"
                                                  : "the host destination is device memory");
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (src_side == side::device ? !inside_allocation(st, s, bytes) : overlaps_allocation(st, s, bytes)) {
      complain(function, src_side == side::device ? "the source range is not inside one allocation"
                                                  : "the host source is device memory");
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::memmove(dst, src, bytes);
  return CUDA_SUCCESS;
}

template <class T>
CUresult fill(const char* function, CUdeviceptr dst, T value, std::size_t count, CUstream stream) {
  int device = -1;
  if (const CUresult r = stream_device(stream, &device); r != CUDA_SUCCESS) return r;
  if (count == 0) return CUDA_SUCCESS;
  if (dst % sizeof(T) != 0) {
    complain(function, "a misaligned destination");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (count > SIZE_MAX / sizeof(T)) return CUDA_ERROR_INVALID_VALUE;
  {
    driver_state& s = state();
    std::lock_guard lock(s.mutex);
    if (!inside_allocation(s, dst, count * sizeof(T))) {
      complain(function, "the range is not inside one allocation");
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  T* p = reinterpret_cast<T*>(dst);
  for (std::size_t i = 0; i < count; ++i) p[i] = value;
  return CUDA_SUCCESS;
}

const xfunc_emulation::kernel_entry* registered(CUfunction f) {
  for (const xfunc_emulation::kernel_entry* e = xfunc_emulation::kernel_list(); e; e = e->next)
    if (static_cast<const void*>(e) == static_cast<const void*>(f)) return e;
  return nullptr;
}

struct error_text {
  CUresult code;
  const char* name;
  const char* text;
};
#define XFUNC_FAKE_ERROR(code, text) \
  { code, #code, text }
constexpr error_text error_texts[] = {
    XFUNC_FAKE_ERROR(CUDA_SUCCESS, "no error"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    XFUNC_FAKE_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef XFUNC_FAKE_ERROR

const error_text* find_error(CUresult code) {
  for (const error_text& e : error_texts)
    if (e.code == code) return &e;
  return nullptr;
}

}  // namespace

// For fake_cublas.cpp: its operands are checked against the allocations, and an operand outside
// them faults the device as a kernel's illegal access would.
namespace xfunc_fake_cuda {
__attribute__((visibility("hidden"))) bool device_range_ok(std::uintptr_t p, std::size_t bytes) {
  driver_state& s = state();
  std::lock_guard lock(s.mutex);
  return inside_allocation(s, p, bytes);
}
__attribute__((visibility("hidden"))) void fault_device(int device) {
  if (device >= 0 && device < max_devices) state().faulted[device] = true;
}
__attribute__((visibility("hidden"))) int this_thread_device() { return current_device; }
}  // namespace xfunc_fake_cuda

// The driver API. cuda.h declares these with C linkage under their versioned names (it maps
// cuMemAlloc to cuMemAlloc_v2 and so on); the versioned names are written out here because they
// are what xfunc looks up.
extern "C" {

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const error_text* e = find_error(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const error_text* e = find_error(error);
  *pStr = e ? e->text : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (device_count() == 0) return CUDA_ERROR_NO_DEVICE;  // as the real driver on a machine without a GPU
  state().initialized = true;
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = 13000;
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (const CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = device_count();
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (const CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (const CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {  // an H100/H200 (sm_90), with the launch limits enforced by cuLaunchKernel
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *pi = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *pi = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = static_cast<int>(max_block_threads);
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *pi = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      *pi = static_cast<int>(max_block_threads);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      *pi = static_cast<int>(max_block_threads);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      *pi = static_cast<int>(max_block_z);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *pi = static_cast<int>(max_grid_x);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      *pi = static_cast<int>(max_grid_y);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      *pi = static_cast<int>(max_grid_y);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *pi = static_cast<int>(max_shared_bytes);
      break;
    default:
      *pi = 0;
      break;
  }
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (const CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *pctx = &state().contexts[dev];
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  if (const CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (!ctx) {  // no context current on this thread
    current_device = -1;
    return CUDA_SUCCESS;
  }
  driver_state& s = state();
  for (int d = 0; d < device_count(); ++d)
    if (ctx == &s.contexts[d]) {
      current_device = d;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_CONTEXT;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
  if (const CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  return device_error(current_device);
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  if (const CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  // every module holds every registered kernel: the image (xfunc's fatbinary) is not read
  *module = &state().modules[current_device];
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (const CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  if (!hfunc || !name) return CUDA_ERROR_INVALID_VALUE;
  driver_state& s = state();
  bool known = false;
  for (int d = 0; d < max_devices; ++d) known = known || hmod == &s.modules[d];
  if (!known) return CUDA_ERROR_INVALID_HANDLE;
  for (xfunc_emulation::kernel_entry* e = xfunc_emulation::kernel_list(); e; e = e->next)
    if (std::strcmp(e->name, name) == 0) {
      *hfunc = reinterpret_cast<CUfunction>(e);
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                  unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                                  unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                                  void** kernelParams, void** extra) {
  int device = -1;
  if (const CUresult r = stream_device(hStream, &device); r != CUDA_SUCCESS) return r;
  const xfunc_emulation::kernel_entry* e = registered(f);
  if (!e) {
    complain("cuLaunchKernel", "not a function from cuModuleGetFunction");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  const unsigned long long block_threads = 1ULL * blockDimX * blockDimY * blockDimZ;
  if (gridDimX == 0 || gridDimY == 0 || gridDimZ == 0 || blockDimX == 0 || blockDimY == 0 || blockDimZ == 0 ||
      gridDimX > max_grid_x || gridDimY > max_grid_y || gridDimZ > max_grid_y || blockDimX > max_block_threads ||
      blockDimY > max_block_threads || blockDimZ > max_block_z || block_threads > max_block_threads) {
    complain("cuLaunchKernel", "a grid or block outside the device's limits");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (sharedMemBytes > max_shared_bytes) {
    complain("cuLaunchKernel", "more dynamic shared memory than a block may have");
    return CUDA_ERROR_INVALID_VALUE;
  }
  // xfunc's kernels take their arguments as kernelParams, never through `extra`
  if (!kernelParams || extra) {
    complain("cuLaunchKernel", "no kernelParams, or `extra` given");
    return CUDA_ERROR_INVALID_VALUE;
  }
  driver_state& s = state();
  ++s.launches;
  if (const char* fail = std::getenv("XFUNC_FAKE_CUDA_FAIL_KERNEL"); fail && std::strcmp(fail, e->name) == 0) {
    // a kernel fault is asynchronous: the launch succeeds, the next wait reports it
    s.faulted[device] = true;
    return CUDA_SUCCESS;
  }
  // Each emulated thread sees what XFUNC_THREAD_ID and XFUNC_THREAD_COUNT give on the GPU, which
  // use x only: a launch with y or z above 1 repeats the x threads there, and so it does here.
  const long long count = static_cast<long long>(gridDimX) * blockDimX;
  const unsigned long long repeats = 1ULL * gridDimY * gridDimZ * blockDimY * blockDimZ;
  for (unsigned long long r = 0; r < repeats; ++r)
    for (long long id = 0; id < count; ++id) {
      xfunc_emulation::thread_id = id;
      xfunc_emulation::thread_count = count;
      e->run(kernelParams);
    }
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  if (const CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;  // 0 bytes: as the real driver
  driver_state& s = state();
  void* p = nullptr;
  {
    std::lock_guard lock(s.mutex);
    const std::size_t capacity = device_memory(), used = s.in_use[current_device];
    if (used > capacity || bytesize > capacity - used) return CUDA_ERROR_OUT_OF_MEMORY;
    p = ::operator new (bytesize, std::align_val_t{allocation_alignment}, std::nothrow);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    try {
      s.allocations.emplace(reinterpret_cast<std::uintptr_t>(p), allocation{bytesize, current_device});
    } catch (...) {
      ::operator delete (p, std::align_val_t{allocation_alignment});
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    s.in_use[current_device] += bytesize;
  }
  // device memory starts as garbage: all bits set reads as NaN, -1 or an invalid bool, so code
  // that reads what it never wrote shows up (no one else holds p yet, hence outside the lock)
  std::memset(p, 0xff, bytesize);
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  if (const CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  driver_state& s = state();
  {
    std::lock_guard lock(s.mutex);
    auto it = s.allocations.find(dptr);
    if (it == s.allocations.end()) {
      complain("cuMemFree_v2", "not a pointer from cuMemAlloc, or freed already");
      return CUDA_ERROR_INVALID_VALUE;
    }
    s.in_use[it->second.device] -= it->second.bytes;
    s.allocations.erase(it);
  }
  ::operator delete (reinterpret_cast<void*>(dptr), std::align_val_t{allocation_alignment});
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (const CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  driver_state& s = state();
  std::lock_guard lock(s.mutex);
  const std::size_t capacity = device_memory(), used = s.in_use[current_device];
  *total = capacity;
  *free = capacity > used ? capacity - used : 0;
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return copy("cuMemcpyHtoD_v2", reinterpret_cast<void*>(dstDevice), side::device, srcHost, side::host, ByteCount,
              nullptr, false);
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return copy("cuMemcpyDtoH_v2", dstHost, side::host, reinterpret_cast<const void*>(srcDevice), side::device, ByteCount,
              nullptr, true);
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                                        CUstream hStream) {
  return copy("cuMemcpyHtoDAsync_v2", reinterpret_cast<void*>(dstDevice), side::device, srcHost, side::host, ByteCount,
              hStream, false);
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                                        CUstream hStream) {
  return copy("cuMemcpyDtoHAsync_v2", dstHost, side::host, reinterpret_cast<const void*>(srcDevice), side::device,
              ByteCount, hStream, true);
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                                        CUstream hStream) {
  return copy("cuMemcpyDtoDAsync_v2", reinterpret_cast<void*>(dstDevice), side::device,
              reinterpret_cast<const void*>(srcDevice), side::device, ByteCount, hStream, false);
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                                   CUstream hStream) {
  return fill("cuMemsetD8Async", dstDevice, uc, N, hStream);
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                                    CUstream hStream) {
  return fill("cuMemsetD32Async", dstDevice, ui, N, hStream);
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  if (const CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (!phStream || (Flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = new (std::nothrow) CUstream_st{current_device};
  if (!stream) return CUDA_ERROR_OUT_OF_MEMORY;
  driver_state& s = state();
  try {
    std::lock_guard lock(s.mutex);
    s.streams.insert(stream);
  } catch (...) {
    delete stream;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *phStream = stream;
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
  if (const CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  driver_state& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (!s.streams.erase(hStream)) {
      complain("cuStreamDestroy_v2", "not a stream from cuStreamCreate, or destroyed already");
      return CUDA_ERROR_INVALID_HANDLE;
    }
  }
  delete hStream;
  return CUDA_SUCCESS;
}

XFUNC_FAKE_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  int device = -1;
  if (const CUresult r = stream_device(hStream, &device); r != CUDA_SUCCESS) return r;
  return device_error(device);
}

// The fake runs all work at once, so a stream is done (or reports its device's fault), unless a
// test says it never will be.
XFUNC_FAKE_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  const CUresult r = cuStreamSynchronize(hStream);
  if (r == CUDA_SUCCESS && std::getenv("XFUNC_FAKE_CUDA_STREAM_BUSY")) return CUDA_ERROR_NOT_READY;
  return r;
}

// Test hooks, not CUDA.
XFUNC_FAKE_EXPORT long long xfunc_fake_cuda_launches() { return state().launches; }

// Whether [p, p + bytes) is device memory of this driver (the fake NCCL checks its buffers).
XFUNC_FAKE_EXPORT int xfunc_fake_cuda_is_device_memory(const void* p, size_t bytes) {
  driver_state& s = state();
  std::lock_guard lock(s.mutex);
  return inside_allocation(s, reinterpret_cast<std::uintptr_t>(p), bytes) ? 1 : 0;
}

XFUNC_FAKE_EXPORT long long xfunc_fake_cuda_bytes_in_use() {
  driver_state& s = state();
  std::lock_guard lock(s.mutex);
  std::size_t total = 0;
  for (std::size_t used : s.in_use) total += used;
  return static_cast<long long>(total);
}

}  // extern "C"
