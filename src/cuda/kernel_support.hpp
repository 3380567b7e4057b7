#pragma once
// How xfunc's CUDA kernels are written (NOTE: [Kernels compiled twice]): XFUNC_KERNEL declares a
// kernel by its C name and its one argument struct; kernels loop over their elements with a
// grid-stride loop between XFUNC_THREAD_ID and XFUNC_THREAD_COUNT, and use no shared memory and
// no barrier, so that the same source also runs in the host emulation of the tests.

// NOTE: [Kernels compiled twice]
// nvcc compiles src/cuda/kernels.cu into a fatbinary (sm_90 code and compute_90 PTX) that the
// xfunc::cuda library embeds; the host program loads it through the driver on first use, so a
// program built by g++ or clang alone runs cuda tensors. CI has no GPU, so the tests also compile
// the same file as host C++ into a fake CUDA driver (tests/cuda/fake_cuda): there each kernel is
// registered under its name, and cuLaunchKernel runs it for every block and thread of the
// launch, one after the other. That checks what the host side decides (which kernel, its
// arguments, shapes, strides, broadcasting, dtypes, the transforms on cuda tensors) against the
// cpu, though not the GPU's own arithmetic or speed. Every kernel takes one argument, a struct of
// plain data passed by value, so the emulation can call it from cuLaunchKernel's parameter list.
#if defined(__CUDACC__)

#define XFUNC_KERNEL(name, Args) extern "C" __global__ void name(const Args a)
#define XFUNC_DEVICE __device__
#define XFUNC_UNROLL _Pragma("unroll")
/// *p += v, atomically (several threads may add into one element).
template <class T>
__device__ inline void xfunc_atomic_add(T* p, T v) {
  if constexpr (sizeof(T) == 8 && !__is_same(T, double))
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  else
    atomicAdd(p, v);
}
#define XFUNC_THREAD_ID (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x)
#define XFUNC_THREAD_COUNT (static_cast<long long>(gridDim.x) * blockDim.x)
/// The P (16 bytes) at p, 16-byte aligned: one vector load on the GPU.
template <class P>
__device__ inline P load_aligned(const void* p) { return *static_cast<const P*>(p); }
template <class P>
__device__ inline void store_aligned(void* p, const P& v) { *static_cast<P*>(p) = v; }

#else  // the host emulation (tests/cuda/fake_cuda)

namespace xfunc_emulation {
/// The emulated thread's global index and the launch's thread count, set by the fake driver
/// around each call.
extern thread_local long long thread_id;
extern thread_local long long thread_count;
/// A kernel known to the fake driver: its name and how to call it with cuLaunchKernel's
/// parameters (params[0] points at the argument struct).
struct kernel_entry {
  const char* name;
  void (*run)(void* const* params);
  kernel_entry* next;
};
/// The registered kernels (a list built by static initialisers).
kernel_entry*& kernel_list();
/// Adds a kernel to the list.
struct kernel_registrar {
  kernel_registrar(kernel_entry& e) {
    e.next = kernel_list();
    kernel_list() = &e;
  }
};
}  // namespace xfunc_emulation

#define XFUNC_KERNEL(name, Args)                                                                    \
  static void name##_body(const Args a);                                                            \
  static void name##_run(void* const* params) { name##_body(*static_cast<const Args*>(params[0])); } \
  static xfunc_emulation::kernel_entry name##_entry{#name, &name##_run, nullptr};                   \
  static xfunc_emulation::kernel_registrar name##_registrar{name##_entry};                          \
  static void name##_body(const Args a)
#define XFUNC_DEVICE
#define XFUNC_UNROLL  // (the emulation runs one thread at a time: speed does not matter there)
template <class T>
inline void xfunc_atomic_add(T* p, T v) { *p += v; }  // (one thread at a time)
#define XFUNC_THREAD_ID (::xfunc_emulation::thread_id)
#define XFUNC_THREAD_COUNT (::xfunc_emulation::thread_count)
template <class P>
inline P load_aligned(const void* p) {
  P v;
  memcpy(&v, p, sizeof v);  // (no type punning on the host)
  return v;
}
template <class P>
inline void store_aligned(void* p, const P& v) { memcpy(p, &v, sizeof v); }

#endif
