#pragma once
/// \file
/// NCCL, the transport for device buffers (NOTE: [Communicator backends]): the same buffer-level
/// collectives as comm_state's MPI ones, on CUDA device pointers and a stream. CMake target
/// xfunc::distributed_nccl (when the CUDA toolkit with NCCL is found); not part of
/// <xfunc/distributed.hpp>, whose users need no CUDA headers.
///
/// Status: the collective ops do not use this layer yet (they move cuda tensors through cpu
/// copies: NOTE: [Collectives on device tensors]); it is usable directly on device buffers,
/// compiled in CI, and tested on a GPU only where one exists (tests/dist/test_nccl.cpp reports
/// "skipped" otherwise).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include <xfunc/dist/communicator.hpp>

namespace xfunc::dist {
namespace detail {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(what, ": CUDA failed: ", cudaGetErrorString(e));
}
inline void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) fail(what, ": NCCL failed: ", ncclGetErrorString(r));
}
inline ncclDataType_t nccl_type(dtype dt) {
  switch (dt) {
    case dtype::float32: return ncclFloat32;
    case dtype::float64: return ncclFloat64;
    case dtype::int64: return ncclInt64;
    case dtype::boolean: return ncclUint8;  // bool is one byte holding 0 or 1
  }
  return ncclUint8;
}
/// NCCL's reduction for op on dt. Booleans as bytes: sum and max are "or" (max), min is "and".
inline ncclRedOp_t nccl_op(reduce_op op, dtype dt) {
  if (dt == dtype::boolean) return op == reduce_op::min ? ncclMin : ncclMax;
  switch (op) {
    case reduce_op::max: return ncclMax;
    case reduce_op::min: return ncclMin;
    case reduce_op::mean: return is_floating(dt) ? ncclAvg : ncclSum;  // (integer mean is refused above)
    default: return ncclSum;
  }
}
}  // namespace detail

/// Whether NCCL can run here: a CUDA driver and at least one device. Never throws or crashes on a
/// machine without them (the CUDA runtime reports the missing driver as an error code).
inline bool nccl_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/// An NCCL communicator over the ranks of an MPI communicator, one GPU per rank (by default the
/// rank's index on its node modulo the node's device count). Every rank of `comm` constructs it
/// together. Operations are enqueued on `stream` and return at once; `wait(stream)` blocks until
/// they are done, under the collective timeout (xf::dist::set_timeout), after which the NCCL
/// communicator is aborted and wait throws ("timeout").
class nccl_communicator {
 public:
  /// Joins the ranks of `comm` in an NCCL communicator on GPU `device` (-1: chosen by the node-local
  /// rank); collective over `comm`, and throws on every rank when one has no usable GPU.
  explicit nccl_communicator(const communicator& comm, int device = -1) {
    const char* what = "xf::dist::nccl_communicator";
    const detail::comm_state& c = comm.state(what);
    // every rank must agree that NCCL can run before any of them waits in ncclCommInitRank
    int ok = nccl_available() ? 1 : 0, all_ok = 0;
    detail::check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c.comm), what);
    if (!all_ok)
      detail::fail(what, ": NCCL is not available (", ok ? "another rank" : "this rank",
                   " has no CUDA driver or no GPU); use cpu tensors with MPI instead");
    if (device < 0) {
      MPI_Comm node;
      detail::check_mpi(MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &node), what);
      int local = 0, devices = 1;
      MPI_Comm_rank(node, &local);
      MPI_Comm_free(&node);
      detail::check_cuda(cudaGetDeviceCount(&devices), what);
      device = local % devices;
    }
    device_ = device;
    detail::check_cuda(cudaSetDevice(device_), what);
    ncclUniqueId id;
    if (c.rank == 0) detail::check_nccl(ncclGetUniqueId(&id), what);
    detail::check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c.comm), what);
    detail::check_nccl(ncclCommInitRank(&comm_, c.size, id, c.rank), what);
    rank_ = c.rank;
    size_ = c.size;
  }
  nccl_communicator(const nccl_communicator&) = delete;
  nccl_communicator& operator=(const nccl_communicator&) = delete;
  ~nccl_communicator() {
    if (comm_) ncclCommDestroy(comm_);
  }

  /// This process's index in the group.
  int rank() const { return rank_; }
  /// The number of ranks in the group.
  int size() const { return size_; }
  /// The CUDA device this rank uses.
  int device() const { return device_; }

  /// buf = op over ranks of buf (n elements, in place; mean averages floating values).
  void all_reduce(void* buf, std::int64_t n, dtype dt, reduce_op op, cudaStream_t s) const {
    count("xf::dist::all_reduce");
    detail::check_nccl(ncclAllReduce(buf, buf, static_cast<std::size_t>(n), detail::nccl_type(dt),
                                     detail::nccl_op(op, dt), comm_, s),
                       "xf::dist::all_reduce");
  }
  /// out = [rank 0's n elements, rank 1's, ...].
  void all_gather(const void* in, void* out, std::int64_t n, dtype dt, cudaStream_t s) const {
    count("xf::dist::all_gather");
    detail::check_nccl(ncclAllGather(in, out, static_cast<std::size_t>(n), detail::nccl_type(dt), comm_, s),
                       "xf::dist::all_gather");
  }
  /// out = chunk `rank` (n elements) of the reduction over ranks of in (size * n elements).
  void reduce_scatter(const void* in, void* out, std::int64_t n, dtype dt, reduce_op op, cudaStream_t s) const {
    count("xf::dist::reduce_scatter");
    detail::check_nccl(ncclReduceScatter(in, out, static_cast<std::size_t>(n), detail::nccl_type(dt),
                                         detail::nccl_op(op, dt), comm_, s),
                       "xf::dist::reduce_scatter");
  }
  /// buf = root's buf.
  void broadcast(void* buf, std::int64_t n, dtype dt, int root, cudaStream_t s) const {
    count("xf::dist::broadcast");
    detail::check_nccl(ncclBroadcast(buf, buf, static_cast<std::size_t>(n), detail::nccl_type(dt), root, comm_, s),
                       "xf::dist::broadcast");
  }
  /// On root, out = the sum over ranks of in.
  void reduce_sum(const void* in, void* out, std::int64_t n, dtype dt, int root, cudaStream_t s) const {
    count("xf::dist::reduce");
    detail::check_nccl(ncclReduce(in, out, static_cast<std::size_t>(n), detail::nccl_type(dt),
                                  detail::nccl_op(reduce_op::sum, dt), root, comm_, s),
                       "xf::dist::reduce");
  }
  /// Chunk j (n elements) of in goes to rank j; out = the chunks received, in rank order.
  void all_to_all(const void* in, void* out, std::int64_t n, dtype dt, cudaStream_t s) const {
    const char* what = "xf::dist::all_to_all";
    count(what);
    const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(dt);
    detail::check_nccl(ncclGroupStart(), what);
    for (int r = 0; r < size_; ++r) {
      detail::check_nccl(ncclSend(static_cast<const char*>(in) + r * bytes, static_cast<std::size_t>(n),
                                  detail::nccl_type(dt), r, comm_, s),
                         what);
      detail::check_nccl(ncclRecv(static_cast<char*>(out) + r * bytes, static_cast<std::size_t>(n),
                                  detail::nccl_type(dt), r, comm_, s),
                         what);
    }
    detail::check_nccl(ncclGroupEnd(), what);
  }
  /// Sends in to rank `to` and receives out from rank `from` (-1: none), n elements each.
  void send_recv(const void* in, void* out, std::int64_t n, dtype dt, int to, int from, cudaStream_t s) const {
    const char* what = "xf::dist::ppermute";
    count(what);
    detail::check_nccl(ncclGroupStart(), what);
    if (to >= 0) detail::check_nccl(ncclSend(in, static_cast<std::size_t>(n), detail::nccl_type(dt), to, comm_, s), what);
    if (from >= 0)
      detail::check_nccl(ncclRecv(out, static_cast<std::size_t>(n), detail::nccl_type(dt), from, comm_, s), what);
    detail::check_nccl(ncclGroupEnd(), what);
  }

  /// Blocks until the work enqueued on s is done. Past the collective timeout the NCCL
  /// communicator is aborted (every later call fails) and this throws "timeout"
  /// (NOTE: [Collective timeout]: unlike MPI, NCCL can abort a communicator).
  void wait(cudaStream_t s) {
    const char* what = "xf::dist::nccl_communicator::wait";
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const cudaError_t e = cudaStreamQuery(s);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) detail::check_cuda(e, what);
      ncclResult_t async = ncclSuccess;
      detail::check_nccl(ncclCommGetAsyncError(comm_, &async), what);
      detail::check_nccl(async, what);
      const auto limit = std::chrono::milliseconds(detail::config().timeout_ms.load(std::memory_order_relaxed));
      if (limit.count() > 0 && std::chrono::steady_clock::now() - start > limit) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        detail::fail(what, ": rank ", rank_, " waited more than the timeout (xf::dist::set_timeout) for the other "
                     "ranks; the NCCL communicator is aborted");
      }
      std::this_thread::yield();
    }
  }

 private:
  static void count(const char*) { detail::config().messages.fetch_add(1, std::memory_order_relaxed); }
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 1, device_ = 0;
};

}  // namespace xfunc::dist
