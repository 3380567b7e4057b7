#pragma once
/// \file
/// NCCL, the transport for cuda buffers (NOTE: [Communicator backends]): the collective ops use it
/// for cuda tensors (NOTE: [Collectives on device tensors]), and nccl_communicator offers the same
/// buffer-level collectives on device pointers and a stream. Part of <xfunc/distributed.hpp> when
/// the program is built with xfunc::cuda (XFUNC_WITH_CUDA). Like the driver, NCCL is opened at run
/// time (NOTE: [Lazy CUDA libraries]): a machine without it, or without a GPU, runs the same
/// program with MPI moving cpu copies.
#include <nccl.h>  // types and constants only: every function is called through a loaded pointer

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <xfunc/cuda/runtime.hpp>
#include <xfunc/dist/communicator.hpp>

namespace xfunc::dist {
namespace detail {
namespace xc = xfunc::detail::cuda;

/// The NCCL functions xfunc calls, from one loaded libnccl.
struct nccl_api {
  xc::shared_library library;
  decltype(&::ncclGetErrorString) get_error_string = nullptr;
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&::ncclCommDestroy) comm_destroy = nullptr;
  decltype(&::ncclCommAbort) comm_abort = nullptr;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclReduce) reduce = nullptr;
  decltype(&::ncclSend) send = nullptr;
  decltype(&::ncclRecv) recv = nullptr;
  decltype(&::ncclGroupStart) group_start = nullptr;
  decltype(&::ncclGroupEnd) group_end = nullptr;
  std::string why_not;  // empty when usable
};

/// The process's NCCL: $XFUNC_NCCL_LIBRARY, else libnccl.so.2 from the loader's path or the
/// toolkit xfunc::cuda was configured with.
inline const nccl_api& nccl_library() {
  static const nccl_api api = [] {
    nccl_api n;
    n.library = xc::shared_library(xc::library_candidates("XFUNC_NCCL_LIBRARY", {"libnccl.so.2"}));
    if (!n.library) {
      n.why_not = "NCCL (libnccl.so.2) cannot be loaded: " + n.library.why_not() +
                  "; install NCCL or set XFUNC_NCCL_LIBRARY";
      return n;
    }
    xc::shared_library& l = n.library;
    l.bind(n.get_error_string, "ncclGetErrorString");
    l.bind(n.get_unique_id, "ncclGetUniqueId");
    l.bind(n.comm_init_rank, "ncclCommInitRank");
    l.bind(n.comm_destroy, "ncclCommDestroy");
    l.bind(n.comm_abort, "ncclCommAbort");
    l.bind(n.comm_get_async_error, "ncclCommGetAsyncError");
    l.bind(n.all_reduce, "ncclAllReduce");
    l.bind(n.all_gather, "ncclAllGather");
    l.bind(n.reduce_scatter, "ncclReduceScatter");
    l.bind(n.broadcast, "ncclBroadcast");
    l.bind(n.reduce, "ncclReduce");
    l.bind(n.send, "ncclSend");
    l.bind(n.recv, "ncclRecv");
    l.bind(n.group_start, "ncclGroupStart");
    l.bind(n.group_end, "ncclGroupEnd");
    if (!l.missing_symbols().empty())
      n.why_not =
          l.name() + " lacks functions of NCCL xfunc calls (" + l.missing_symbols() + "); use NCCL 2.10 or later";
    return n;
  }();
  return api;
}

inline void check_nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  const nccl_api& n = nccl_library();
  fail(what, ": NCCL failed: ", n.get_error_string ? n.get_error_string(r) : "error", " (", static_cast<int>(r), ")");
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
inline std::size_t nccl_count(std::int64_t n) { return static_cast<std::size_t>(n); }
}  // namespace detail

/// Why NCCL cannot run here (no CUDA driver or GPU, no NCCL library); empty when it can. Never
/// throws or crashes on a machine without them.
inline std::string nccl_why_not() {
  const auto& d = xfunc::detail::cuda::driver();
  if (!d.usable) return "CUDA is not available: " + d.why_not;
  return detail::nccl_library().why_not;
}
/// Whether NCCL can run here: a CUDA driver, at least one device and the NCCL library.
inline bool nccl_available() { return nccl_why_not().empty(); }

/// An NCCL communicator over the ranks of an MPI communicator, one GPU per rank (by default the
/// rank's index on its node modulo the node's device count). Every rank of `comm` constructs it
/// together. Operations are enqueued on `stream` (a cudaStream_t or CUstream; null: the calling
/// thread's xfunc stream on the device) and return at once; `wait(stream)` blocks until they are
/// done, under the collective timeout (xf::dist::set_timeout), after which the NCCL communicator is
/// aborted and wait throws ("timeout").
class nccl_communicator {
 public:
  /// Joins the ranks of `comm` in an NCCL communicator on GPU `device` (-1: chosen by the
  /// node-local rank); collective over `comm`, and throws on every rank ("not available") when
  /// one of them cannot run NCCL.
  explicit nccl_communicator(const communicator& comm, int device = -1)
      : nccl_communicator(comm.state("xf::dist::nccl_communicator"), device) {}
  /// The same from a communicator's state (the collective ops' device transport).
  nccl_communicator(const detail::comm_state& c, int device) {
    const char* what = "xf::dist::nccl_communicator";
    const auto& drv = xfunc::detail::cuda::driver();
    if (device < 0) {  // (collective over comm: every rank takes part, whatever it can do)
      MPI_Comm node;
      detail::check_mpi(MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &node), what);
      int local = 0;
      MPI_Comm_rank(node, &local);
      MPI_Comm_free(&node);
      device = drv.device_count > 0 ? local % drv.device_count : 0;
    }
    device_ = device;
    // every rank must agree that NCCL can run before any of them waits in ncclCommInitRank
    std::string why = nccl_why_not();
    if (why.empty()) {
      try {  // NCCL uses the context current on this thread (the device's primary one, as xfunc's kernels)
        xfunc::detail::cuda::make_current(drv, device_, what);
      } catch (const error& e) {
        why = e.what();
      }
    }
    int ok = why.empty() ? 1 : 0, all_ok = 0;
    detail::check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c.comm), what);
    if (!all_ok)
      detail::fail(what, ": NCCL is not available (", ok ? "on another rank" : why,
                   "); use cpu tensors, which MPI moves");
    // rank 0's unique id goes out with whether it could make one, so no rank waits for a failed one
    struct {
      ncclUniqueId id;
      int made;
    } start{};
    const detail::nccl_api& api = detail::nccl_library();
    if (c.rank == 0) start.made = api.get_unique_id(&start.id) == ncclSuccess ? 1 : 0;
    detail::check_mpi(MPI_Bcast(&start, sizeof start, MPI_BYTE, 0, c.comm), what);
    if (!start.made) detail::fail(what, ": NCCL could not start a communicator (ncclGetUniqueId failed on rank 0)");
    const ncclResult_t r = api.comm_init_rank(&comm_, c.size, start.id, c.rank);
    int joined = r == ncclSuccess ? 1 : 0, all_joined = 0;
    detail::check_mpi(MPI_Allreduce(&joined, &all_joined, 1, MPI_INT, MPI_MIN, c.comm), what);
    if (!all_joined) {
      if (comm_) api.comm_destroy(comm_);
      comm_ = nullptr;
      detail::check_nccl(r, what);
      detail::fail(what, ": NCCL failed to start a communicator on another rank");
    }
    rank_ = c.rank;
    size_ = c.size;
  }
  nccl_communicator(const nccl_communicator&) = delete;
  nccl_communicator& operator=(const nccl_communicator&) = delete;
  ~nccl_communicator() {
    if (comm_) detail::nccl_library().comm_destroy(comm_);
  }

  /// This process's index in the group.
  int rank() const { return rank_; }
  /// The number of ranks in the group.
  int size() const { return size_; }
  /// The CUDA device this rank uses.
  int device() const { return device_; }

  /// buf = op over ranks of buf (n elements, in place; mean averages floating values).
  void all_reduce(void* buf, std::int64_t n, dtype dt, reduce_op op, CUstream s) const {
    const char* what = "xf::dist::all_reduce";
    count();
    detail::check_nccl(api().all_reduce(buf, buf, detail::nccl_count(n), detail::nccl_type(dt), detail::nccl_op(op, dt),
                                        live(what), s),
                       what);
  }
  /// out = [rank 0's n elements, rank 1's, ...].
  void all_gather(const void* in, void* out, std::int64_t n, dtype dt, CUstream s) const {
    const char* what = "xf::dist::all_gather";
    count();
    detail::check_nccl(api().all_gather(in, out, detail::nccl_count(n), detail::nccl_type(dt), live(what), s), what);
  }
  /// out = chunk `rank` (n elements) of the reduction over ranks of in (size * n elements).
  void reduce_scatter(const void* in, void* out, std::int64_t n, dtype dt, reduce_op op, CUstream s) const {
    const char* what = "xf::dist::reduce_scatter";
    count();
    detail::check_nccl(api().reduce_scatter(in, out, detail::nccl_count(n), detail::nccl_type(dt),
                                            detail::nccl_op(op, dt), live(what), s),
                       what);
  }
  /// buf = root's buf.
  void broadcast(void* buf, std::int64_t n, dtype dt, int root, CUstream s) const {
    const char* what = "xf::dist::broadcast";
    count();
    detail::check_nccl(api().broadcast(buf, buf, detail::nccl_count(n), detail::nccl_type(dt), root, live(what), s),
                       what);
  }
  /// On root, out = the sum over ranks of in.
  void reduce_sum(const void* in, void* out, std::int64_t n, dtype dt, int root, CUstream s) const {
    const char* what = "xf::dist::reduce";
    count();
    detail::check_nccl(api().reduce(in, out, detail::nccl_count(n), detail::nccl_type(dt),
                                    detail::nccl_op(reduce_op::sum, dt), root, live(what), s),
                       what);
  }
  /// Chunk j (n elements) of in goes to rank j; out = the chunks received, in rank order.
  void all_to_all(const void* in, void* out, std::int64_t n, dtype dt, CUstream s) const {
    const char* what = "xf::dist::all_to_all";
    count();
    const std::size_t bytes = detail::nccl_count(n) * dtype_size(dt);
    ncclComm_t c = live(what);
    detail::check_nccl(api().group_start(), what);
    for (int r = 0; r < size_; ++r) {
      detail::check_nccl(api().send(static_cast<const char*>(in) + r * bytes, detail::nccl_count(n),
                                    detail::nccl_type(dt), r, c, s),
                         what);
      detail::check_nccl(api().recv(static_cast<char*>(out) + r * bytes, detail::nccl_count(n), detail::nccl_type(dt),
                                    r, c, s),
                         what);
    }
    detail::check_nccl(api().group_end(), what);
  }
  /// Sends in to rank `to` and receives out from rank `from` (-1: none), n elements each.
  void send_recv(const void* in, void* out, std::int64_t n, dtype dt, int to, int from, CUstream s) const {
    const char* what = "xf::dist::ppermute";
    count();
    ncclComm_t c = live(what);
    detail::check_nccl(api().group_start(), what);
    if (to >= 0) detail::check_nccl(api().send(in, detail::nccl_count(n), detail::nccl_type(dt), to, c, s), what);
    if (from >= 0) detail::check_nccl(api().recv(out, detail::nccl_count(n), detail::nccl_type(dt), from, c, s), what);
    detail::check_nccl(api().group_end(), what);
  }

  /// Blocks until the work enqueued on s is done. Past the collective timeout the NCCL
  /// communicator is aborted (every later call fails) and this throws "timeout", naming `what`
  /// (NOTE: [Collective timeout]: unlike MPI, NCCL can abort a communicator).
  void wait(CUstream s, const char* what = "xf::dist::nccl_communicator::wait") {
    const auto& drv = xfunc::detail::cuda::driver();
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const CUresult e = drv.stream_query(s);
      if (e == CUDA_SUCCESS) return;
      if (e != CUDA_ERROR_NOT_READY) xfunc::detail::cuda::check_sync(drv, e, what);
      ncclResult_t async = ncclSuccess;
      detail::check_nccl(api().comm_get_async_error(live(what), &async), what);
      detail::check_nccl(async, what);
      const auto limit = std::chrono::milliseconds(detail::config().timeout_ms.load(std::memory_order_relaxed));
      if (limit.count() > 0 && std::chrono::steady_clock::now() - start > limit) {
        api().comm_abort(comm_);
        comm_ = nullptr;
        detail::fail(what, ": rank ", rank_, " waited more than the timeout (xf::dist::set_timeout) for the other "
                     "ranks in NCCL; its NCCL communicator is aborted");
      }
      std::this_thread::yield();
    }
  }

 private:
  static const detail::nccl_api& api() { return detail::nccl_library(); }
  static void count() { detail::config().messages.fetch_add(1, std::memory_order_relaxed); }
  ncclComm_t live(const char* what) const {
    if (!comm_)
      detail::fail(what, ": the NCCL communicator was aborted after a timeout; make a new one (for the collective "
                   "ops: a new communicator, e.g. with split)");
    return comm_;
  }
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 1, device_ = 0;
};

namespace detail {

/// The collective ops' transport for cuda buffers (NOTE: [Collectives on device tensors]): each
/// call enqueues on the calling thread's xfunc stream on the device, after the kernels that made
/// its input, and waits for it under the collective timeout.
class nccl_transport final : public transport {
 public:
  nccl_transport(const comm_state& c, device d) : nc_(c, static_cast<int>(d.index)), device_(d) {}

  void all_reduce(void* buf, std::int64_t n, dtype dt, reduce_op op, const char* what) const override {
    run(what, [&](CUstream s) { nc_.all_reduce(buf, n, dt, summed(op), s); });
  }
  void all_gather(const void* in, void* out, std::int64_t n, dtype dt, const char* what) const override {
    run(what, [&](CUstream s) { nc_.all_gather(in, out, n, dt, s); });
  }
  void reduce_scatter(const void* in, void* out, std::int64_t n, dtype dt, reduce_op op,
                      const char* what) const override {
    run(what, [&](CUstream s) { nc_.reduce_scatter(in, out, n, dt, summed(op), s); });
  }
  void broadcast(void* buf, std::int64_t n, dtype dt, int root, const char* what) const override {
    run(what, [&](CUstream s) { nc_.broadcast(buf, n, dt, root, s); });
  }
  void reduce_sum(const void* in, void* out, std::int64_t n, dtype dt, int root, const char* what) const override {
    run(what, [&](CUstream s) { nc_.reduce_sum(in, out, n, dt, root, s); });
  }
  void all_to_all(const void* in, void* out, std::int64_t n, dtype dt, const char* what) const override {
    run(what, [&](CUstream s) { nc_.all_to_all(in, out, n, dt, s); });
  }
  void send_recv(const void* in, void* out, std::int64_t n, dtype dt, int to, int from,
                 const char* what) const override {
    run(what, [&](CUstream s) { nc_.send_recv(in, out, n, dt, to, from, s); });
  }
  device memory() const override { return device_; }

 private:
  /// The reduction NCCL runs for op: a mean is summed, as on the MPI transport (the op divides).
  static reduce_op summed(reduce_op op) { return op == reduce_op::mean ? reduce_op::sum : op; }
  template <class Enqueue>
  void run(const char* what, Enqueue&& enqueue) const {
    const xfunc::detail::cuda::device_context ctx = xfunc::detail::cuda::context_for(device_.index, what);
    enqueue(ctx.stream);
    nc_.wait(ctx.stream, what);
  }
  mutable nccl_communicator nc_;
  device device_;
};

/// The device transport maker (NOTE: [Communicator backends]): NCCL on every rank, or none, with
/// the reason, on every rank.
inline std::unique_ptr<transport> make_nccl_transport(const comm_state& c, device d, std::string& why_not) {
  if (d.kind != device_kind::cuda) {  // (every rank is on the same kind: the caller checked)
    why_not = "NCCL moves cuda buffers only";
    return nullptr;
  }
  try {
    return std::make_unique<nccl_transport>(c, d);
  } catch (const error& e) {  // thrown on every rank (the constructor agrees before it throws)
    why_not = e.what();
    return nullptr;
  }
}
/// Registers NCCL as the device transport before main (every translation unit asks; the first does).
inline const bool nccl_transport_registered = (device_transport_factory() = &make_nccl_transport, true);

}  // namespace detail

/// Whether comm's collectives on cuda tensors move device buffers with NCCL (known after the
/// first of them; before, false). When not, nccl_status says why.
inline bool uses_nccl(const communicator& comm) {
  return comm.state("xf::dist::uses_nccl").device_transport_if_made() != nullptr;
}
/// Why comm's collectives on cuda tensors do not use NCCL (empty when they do, or before the
/// first of them).
inline std::string nccl_status(const communicator& comm) {
  return comm.state("xf::dist::nccl_status").why_not_device();
}

}  // namespace xfunc::dist
