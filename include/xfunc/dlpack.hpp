#pragma once
/// \file
/// DLPack interchange: xf::to_dlpack and xf::from_dlpack share a tensor's memory with PyTorch,
/// NumPy, JAX, CuPy and any other DLPack library, without copying (docs/interchange.md).
// The structs come from the `dlpack/dlpack.h` of Debian's libdlpack-dev (DLPack 0.6, the version
// torch 1.13 speaks; its ATen/dlpack.h has the same include guard and layout).
#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>

#include <xfunc/core/error.hpp>
#include <xfunc/core/tensor.hpp>
#include <xfunc/dispatch/wrappers.hpp>

namespace xfunc {
namespace detail {

// NOTE: [Memory shared with other libraries]
// A DLPack export or import makes a buffer that another library reads and writes behind our
// back. Two rules keep that sound:
//  - ownership: an imported buffer lives in a storage whose destructor calls the producer's
//    deleter, so the memory is given back exactly when the last xfunc view of it dies; an
//    exported DLManagedTensor holds a tensor handle (keeping our storage alive) until the
//    consumer calls its deleter.
//  - ordering: a deferred pointwise program (NOTE: [Deferred elementwise]) reads its inputs when
//    its result is first read, which could be after the other library wrote the buffer. Such
//    storages are marked shared_externally and are never a deferred program's input; the export
//    settles the deferred programs already reading the buffer before it hands the buffer out.

/// DLPack 0.8 added kDLBool (6); the 0.6 header we build against lacks it, so we spell it here.
/// (torch 1.13 refuses to export bool tensors at all.)
inline constexpr std::uint8_t dlpack_bool_code = 6;

inline DLDataType dlpack_dtype_of(dtype dt) {
  switch (dt) {
    case dtype::float32: return {static_cast<std::uint8_t>(kDLFloat), 32, 1};
    case dtype::float64: return {static_cast<std::uint8_t>(kDLFloat), 64, 1};
    case dtype::int64: return {static_cast<std::uint8_t>(kDLInt), 64, 1};
    case dtype::boolean: return {dlpack_bool_code, 8, 1};
  }
  fail("xf::to_dlpack: unknown dtype");
}

inline dtype dtype_of_dlpack(DLDataType t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return dtype::float32;
    if (t.code == kDLFloat && t.bits == 64) return dtype::float64;
    if (t.code == kDLInt && t.bits == 64) return dtype::int64;
    if (t.code == dlpack_bool_code && t.bits == 8) return dtype::boolean;
  }
  fail("xf::from_dlpack: unsupported dlpack dtype (type code ", int(t.code), ", ", int(t.bits), " bits, ", t.lanes,
       " lanes); xfunc holds float32, float64, int64 and bool (8-bit): convert it in the producer first "
       "(e.g. torch's .to(torch.float32))");
}

/// What an exported DLManagedTensor points into: the tensor keeps our storage alive, the arrays
/// hold the shape and strides DLTensor points at.
struct dlpack_export {
  DLManagedTensor managed{};
  tensor keep;
  std::int64_t shape[shape_t::max_dims + 1]{};
  std::int64_t strides[shape_t::max_dims + 1]{};
};

/// The deleter of our exports: drops the tensor (and so our reference to its storage).
inline void delete_dlpack_export(DLManagedTensor* self) { delete static_cast<dlpack_export*>(self->manager_ctx); }

/// The deleter of an imported tensor's storage: hands the buffer back to its producer.
inline void release_dlpack_import(void* managed) {
  auto* m = static_cast<DLManagedTensor*>(managed);
  if (m->deleter) m->deleter(m);
}

}  // namespace detail

/// Exports `t` as a DLManagedTensor sharing its storage (no copy): `dl_tensor.data` points at t's
/// first element with `byte_offset` 0 (as PyTorch exports; torch 1.13 ignores byte_offset on
/// import), strides are kept, and the consumer's call of `deleter` releases our reference.
/// Throws ("dlpack") for an undefined or meta tensor and for one inside a running transform.
inline DLManagedTensor* to_dlpack(const tensor& t) {
  using namespace detail;
  if (!t.defined()) fail("xf::to_dlpack: the tensor is undefined (a default-constructed xf::tensor); assign it first");
  // a tensor that escaped grad or jvp is its value; one that escaped vmap has none
  const tensor v = strip_dead(t, "export (xf::to_dlpack)");
  const tensor_impl* p = v.impl();
  if (!p->is_dense())
    fail("xf::to_dlpack: cannot export a tensor inside a running transform (it is a ", p->kind == impl_kind::batched ? "vmap" : "grad/jvp",
         " wrapper with no buffer of its own); export the result after the transform returns");
  if (p->dev == meta) fail("xf::to_dlpack: a meta tensor has no memory to share");
  // a cuda tensor: the work queued for it is finished first, since the consumer may read it on
  // any stream (DLPack's C interface has no stream to order by)
  if (p->dev.kind == device_kind::cuda) backend_of(p->dev, "xf::to_dlpack").synchronize(p->dev, "xf::to_dlpack");
  p->prepare_access();  // evaluates t if deferred (giving it a buffer)
  // Mark, then settle again: no deferred program may keep reading the buffer after the export.
  p->store->shared_externally.store(true, std::memory_order_release);
  p->prepare_access();  // evaluates the deferred programs reading the buffer
  auto out = std::make_unique<dlpack_export>();
  out->keep = v;
  const std::size_t r = p->shape.size();
  for (std::size_t d = 0; d < r; ++d) {
    out->shape[d] = p->shape[d];
    out->strides[d] = p->strides[d];
  }
  DLTensor& dl = out->managed.dl_tensor;
  dl.data = p->store->data + static_cast<std::size_t>(p->offset) * dtype_size(p->dt);
  dl.device = p->dev.kind == device_kind::cuda ? DLDevice{kDLCUDA, p->dev.index} : DLDevice{kDLCPU, 0};
  dl.ndim = static_cast<int>(r);
  dl.dtype = dlpack_dtype_of(p->dt);
  dl.shape = out->shape;
  dl.strides = out->strides;
  dl.byte_offset = 0;
  out->managed.manager_ctx = out.get();
  out->managed.deleter = &delete_dlpack_export;
  return &out.release()->managed;
}

/// A tensor viewing the memory `managed` describes (no copy), strides and byte_offset included;
/// its deleter is called when the last view of that memory dies. cpu memory (kDLCPU, and
/// kDLCUDAHost, pinned host memory) of dtype float32, float64, int64 or bool (8-bit).
/// Throws ("dlpack") for other dtypes or devices, negative strides, misaligned data or a bad
/// shape; when it throws, `managed` still belongs to the caller (its deleter has not run).
inline tensor from_dlpack(DLManagedTensor* managed) {
  using namespace detail;
  if (!managed) fail("xf::from_dlpack: null DLManagedTensor pointer; pass what the producer's to_dlpack returned");
  if (managed->deleter == &delete_dlpack_export) {  // one of ours coming back: the same tensor
    tensor t = static_cast<dlpack_export*>(managed->manager_ctx)->keep;
    managed->deleter(managed);
    return t;
  }
  const DLTensor& dl = managed->dl_tensor;
  device dev = cpu;
  if (dl.device.device_type == kDLCUDA || dl.device.device_type == kDLCUDAManaged) {
    dev = device{device_kind::cuda, dl.device.device_id};
    if (!cuda_backend_slot())
      fail("xf::from_dlpack: a cuda dlpack tensor (device ", dl.device.device_id,
           ") needs the CUDA backend, which is not in this build (link xfunc::cuda); or copy it to the host in the "
           "producer first (e.g. torch's .cpu())");
  } else if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDAHost) {
    fail("xf::from_dlpack: unsupported dlpack device type ", int(dl.device.device_type),
         "; xfunc imports cpu memory (kDLCPU, kDLCUDAHost) and cuda memory (kDLCUDA, kDLCUDAManaged)");
  }
  const dtype dt = dtype_of_dlpack(dl.dtype);
  if (dl.ndim < 0 || static_cast<std::size_t>(dl.ndim) > shape_t::max_dims)
    fail("xf::from_dlpack: a dlpack tensor with ", dl.ndim, " dimensions; xfunc tensors have 0 to ", shape_t::max_dims);
  if (dl.ndim > 0 && !dl.shape) fail("xf::from_dlpack: the dlpack tensor has ", dl.ndim, " dimensions but no shape array");
  shape_t shape, strides;
  for (int d = 0; d < dl.ndim; ++d) shape.push_back(dl.shape[d]);
  const std::size_t esize = dtype_size(dt);
  shape_t compact;
  const std::int64_t numel = check_shape(shape, "xf::from_dlpack", esize, &compact);  // throws "shape"
  // The byte span the elements cover: 1 + sum (extent - 1) * stride, in elements.
  std::int64_t span = numel > 0 ? 1 : 0;
  for (int d = 0; d < dl.ndim; ++d) {
    const std::int64_t stride = dl.strides ? dl.strides[d] : compact[static_cast<std::size_t>(d)];
    if (stride < 0)
      fail("xf::from_dlpack: dimension ", d, " has stride ", stride,
           "; xfunc views need non-negative strides: make the producer's tensor contiguous first");
    strides.push_back(stride);
    if (numel > 0 && shape[static_cast<std::size_t>(d)] > 1) {
      const std::int64_t extent = shape[static_cast<std::size_t>(d)] - 1;
      if (stride > (std::numeric_limits<std::int64_t>::max() - span) / extent)
        fail("xf::from_dlpack: the strides of shape ", shape, " reach past the int64 range");
      span += extent * stride;
    }
  }
  auto* base = static_cast<std::byte*>(dl.data) + dl.byte_offset;
  if (numel > 0 && !dl.data) fail("xf::from_dlpack: the dlpack tensor has ", numel, " elements but a null data pointer");
  if (reinterpret_cast<std::uintptr_t>(base) % esize != 0)
    fail("xf::from_dlpack: the data pointer (after byte_offset ", dl.byte_offset, ") is not aligned to the ", esize,
         "-byte ", dt, " elements");
  if (span > std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(esize))
    fail("xf::from_dlpack: the strides of shape ", shape, " reach past the int64 range");
  auto impl = make_pooled<tensor_impl>();
  impl->dt = dt;
  impl->dev = dev;
  impl->shape = shape;
  impl->strides = strides;
  // From here on the storage owns `managed`: it calls the deleter when the last view dies.
  impl->store = make_pooled<storage>(base, static_cast<std::size_t>(span) * esize, &release_dlpack_import,
                                     static_cast<void*>(managed), dev);
  return tensor(std::move(impl));
}

}  // namespace xfunc
