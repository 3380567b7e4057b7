#pragma once
/// \file
/// xf::dist communicators: the MPI environment, the communicator handle, and the buffer-level
/// collectives beneath the collective ops (dist/collectives.hpp). MPI moves cpu buffers; the ops
/// never call MPI themselves (NOTE: [Communicator backends]).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only: Open MPI's deprecated C++ bindings warn under -Wpedantic
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <xfunc/core/device.hpp>
#include <xfunc/core/dtype.hpp>
#include <xfunc/core/error.hpp>

/// Distributed xfunc (`<xfunc/distributed.hpp>`, CMake target xfunc::distributed): collectives
/// that are ops under every transform, over communicators backed by MPI (cpu) or NCCL (device
/// buffers), and data-parallel helpers (docs/distributed.md).
namespace xfunc::dist {

/// How all_reduce and reduce_scatter combine the ranks' values.
enum class reduce_op { sum, mean, max, min };

/// "sum", "mean", "max" or "min".
inline const char* reduce_op_name(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::mean: return "mean";
    case reduce_op::max: return "max";
    case reduce_op::min: return "min";
  }
  return "?";
}

namespace detail {
using xfunc::detail::fail;

// NOTE: [Communicator backends]
// A communicator is a shared handle to an MPI communicator (comm_state). The collective ops see
// only the buffer-level operations of `transport` (all_reduce on a buffer of n elements of a
// dtype, ...): comm_state is the MPI transport, for host buffers; a device transport (NCCL for
// cuda buffers, dist/nccl.hpp) is made by every rank of the communicator together at its first
// collective on device tensors (NOTE: [Collectives on device tensors]). Every operation counts the
// messages it starts (tests and benchmarks read the count); MPI's run under the watchdog (NOTE:
// [Collective timeout]), a device transport waits for its own under the same timeout.

/// Process-wide switches and counters.
struct settings {
  std::atomic<bool> checks{true};
  std::atomic<std::int64_t> timeout_ms{10 * 60 * 1000};  // 10 minutes; 0: no timeout
  std::atomic<std::uint64_t> messages{0};                 // collectives started by this process
};
inline settings& config() {
  static settings s;
  return s;
}

inline int world_rank_or_minus_one() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  int r = -1;
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// NOTE: [Collective timeout]
// A rank that fails (throws and leaves, crashes, or calls another collective) would leave the
// others blocked in MPI forever. A watchdog thread watches every collective in progress; one
// that has waited longer than the timeout (xf::dist::set_timeout, 10 minutes by default) prints
// which collective on which rank gave up and aborts the whole job (MPI_Abort), as PyTorch's NCCL
// watchdog does: MPI cannot cancel a collective that other ranks may still join, so throwing on
// one rank would only move the hang. The collectives themselves stay blocking MPI calls (the
// library's tuned algorithms); the watchdog costs one short locked insert and erase per call.
class watchdog {
 public:
  static watchdog& get() {
    static watchdog w;
    return w;
  }
  ~watchdog() { stop(); }

  /// Registers a collective that starts now; returns its ticket (0 when there is no timeout).
  std::uint64_t enter(const char* what) {
    if (config().timeout_ms.load(std::memory_order_relaxed) <= 0) return 0;
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) {
      stopping_ = false;
      thread_ = std::thread([this] { run(); });
    }
    const std::uint64_t id = ++next_;
    waiting_.emplace(id, entry{what, std::chrono::steady_clock::now()});
    return id;
  }
  void leave(std::uint64_t id) {
    if (id == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.erase(id);
  }
  /// Stops the thread (before MPI_Finalize).
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct entry {
    const char* what;
    std::chrono::steady_clock::time_point since;
  };
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      const auto limit = std::chrono::milliseconds(config().timeout_ms.load(std::memory_order_relaxed));
      const auto now = std::chrono::steady_clock::now();
      for (const auto& [id, e] : waiting_) {
        if (limit.count() <= 0 || now - e.since < limit) continue;
        std::fprintf(stderr,
                     "xf::dist: rank %d waited %.1f s in %s for the other ranks (longer than the timeout set by "
                     "xf::dist::set_timeout): another rank has failed, or called a different collective; "
                     "aborting the job\n",
                     world_rank_or_minus_one(), std::chrono::duration<double>(now - e.since).count(), e.what);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  bool stopping_ = false;
  std::uint64_t next_ = 0;
  std::map<std::uint64_t, entry> waiting_;
};

/// RAII: one collective under the watchdog, counted as `messages` messages.
class in_collective {
 public:
  explicit in_collective(const char* what, std::uint64_t messages = 1) : id_(watchdog::get().enter(what)) {
    config().messages.fetch_add(messages, std::memory_order_relaxed);
  }
  ~in_collective() { watchdog::get().leave(id_); }
  in_collective(const in_collective&) = delete;
  in_collective& operator=(const in_collective&) = delete;

 private:
  std::uint64_t id_;
};

inline void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, msg, &n);
  fail(what, ": MPI failed: ", std::string(msg, static_cast<std::size_t>(n)));
}

inline MPI_Datatype mpi_type(dtype dt) {
  switch (dt) {
    case dtype::float32: return MPI_FLOAT;
    case dtype::float64: return MPI_DOUBLE;
    case dtype::int64: return MPI_INT64_T;
    case dtype::boolean: return MPI_C_BOOL;
  }
  return MPI_BYTE;
}
/// The MPI reduction for op on dt (mean reduces with sum; the caller divides). Booleans reduce
/// logically: sum and max are "or", min is "and".
inline MPI_Op mpi_op(reduce_op op, dtype dt) {
  if (dt == dtype::boolean) return op == reduce_op::min ? MPI_LAND : MPI_LOR;
  switch (op) {
    case reduce_op::max: return MPI_MAX;
    case reduce_op::min: return MPI_MIN;
    default: return MPI_SUM;
  }
}
/// n as an MPI count; more than INT_MAX elements per rank in one message is refused.
inline int mpi_count(std::int64_t n, const char* what) {
  if (n > INT_MAX)
    fail(what, ": ", n, " elements per rank is more than one MPI message can carry (", INT_MAX,
         "); split the tensor and call the collective on the parts");
  return static_cast<int>(n);
}

/// The buffer-level collectives of one transport (NOTE: [Communicator backends]). Buffers hold n
/// elements of dtype dt per rank on the transport's memory (host for MPI, a device for NCCL);
/// `what` names the collective in errors.
struct transport {
  virtual ~transport() = default;
  /// buf[i] = op over ranks of buf[i], in place (mean: the sum; the caller divides).
  virtual void all_reduce(void* buf, std::int64_t n, dtype dt, reduce_op op, const char* what) const = 0;
  /// out = [rank 0's n elements, rank 1's, ...].
  virtual void all_gather(const void* in, void* out, std::int64_t n, dtype dt, const char* what) const = 0;
  /// out = chunk `rank` (n elements) of the reduction over ranks of in (size * n elements; mean: the sum).
  virtual void reduce_scatter(const void* in, void* out, std::int64_t n, dtype dt, reduce_op op,
                              const char* what) const = 0;
  /// buf = root's buf.
  virtual void broadcast(void* buf, std::int64_t n, dtype dt, int root, const char* what) const = 0;
  /// On root, out = the sum over ranks of in; out is untouched elsewhere.
  virtual void reduce_sum(const void* in, void* out, std::int64_t n, dtype dt, int root, const char* what) const = 0;
  /// Chunk j (n elements) of in goes to rank j; out = the chunks received, in rank order.
  virtual void all_to_all(const void* in, void* out, std::int64_t n, dtype dt, const char* what) const = 0;
  /// Sends in to rank `to` and receives out from rank `from` (-1: none), n elements each.
  virtual void send_recv(const void* in, void* out, std::int64_t n, dtype dt, int to, int from,
                         const char* what) const = 0;
  /// Where its buffers live (cpu for MPI).
  virtual device memory() const = 0;
};

struct comm_state;
/// Makes the device transport of communicator c for buffers on device d, together on every rank
/// of c; on failure (no NCCL, no GPU on some rank) every rank returns null with the reason in
/// why_not. Set by dist/nccl.hpp when the program is built with xfunc::cuda; null otherwise.
using device_transport_maker = std::unique_ptr<transport> (*)(const comm_state& c, device d, std::string& why_not);
inline device_transport_maker& device_transport_factory() {
  static device_transport_maker f = nullptr;
  return f;
}

/// The state behind a communicator handle.
struct comm_state final : transport {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;  // made by split: freed with the last handle (unless MPI is finalized)
  int rank = 0, size = 1;
  comm_state() = default;
  comm_state(const comm_state&) = delete;
  comm_state& operator=(const comm_state&) = delete;
  ~comm_state() {
    int fin = 0;
    MPI_Finalized(&fin);
    if (owned && !fin && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }

  // ---- the MPI transport (NOTE: [Communicator backends]) --------------------------------------
  // Large single-buffer reductions and broadcasts go in messages of at most 2^30 elements.
  static constexpr std::int64_t max_piece = std::int64_t{1} << 30;

  void all_reduce(void* buf, std::int64_t n, dtype dt, reduce_op op, const char* what) const override {
    in_collective guard(what, static_cast<std::uint64_t>((n + max_piece - 1) / max_piece));
    auto* p = static_cast<char*>(buf);
    for (std::int64_t done = 0; done < n; done += max_piece)
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, p + done * dtype_size(dt), static_cast<int>(std::min(max_piece, n - done)),
                              mpi_type(dt), mpi_op(op, dt), comm),
                what);
  }
  void all_gather(const void* in, void* out, std::int64_t n, dtype dt, const char* what) const override {
    in_collective guard(what);
    const int c = mpi_count(n, what);
    check_mpi(MPI_Allgather(in, c, mpi_type(dt), out, c, mpi_type(dt), comm), what);
  }
  void reduce_scatter(const void* in, void* out, std::int64_t n, dtype dt, reduce_op op,
                      const char* what) const override {
    in_collective guard(what);
    check_mpi(MPI_Reduce_scatter_block(in, out, mpi_count(n, what), mpi_type(dt), mpi_op(op, dt), comm), what);
  }
  void broadcast(void* buf, std::int64_t n, dtype dt, int root, const char* what) const override {
    in_collective guard(what);
    auto* p = static_cast<char*>(buf);
    for (std::int64_t done = 0; done < n; done += max_piece)
      check_mpi(MPI_Bcast(p + done * dtype_size(dt), static_cast<int>(std::min(max_piece, n - done)), mpi_type(dt),
                          root, comm),
                what);
  }
  void reduce_sum(const void* in, void* out, std::int64_t n, dtype dt, int root, const char* what) const override {
    in_collective guard(what);
    const auto* pi = static_cast<const char*>(in);
    auto* po = static_cast<char*>(out);
    for (std::int64_t done = 0; done < n; done += max_piece) {
      const std::int64_t off = done * dtype_size(dt);
      check_mpi(MPI_Reduce(pi + off, po + off, static_cast<int>(std::min(max_piece, n - done)), mpi_type(dt),
                           mpi_op(reduce_op::sum, dt), root, comm),
                what);
    }
  }
  void all_to_all(const void* in, void* out, std::int64_t n, dtype dt, const char* what) const override {
    in_collective guard(what);
    const int c = mpi_count(n, what);
    check_mpi(MPI_Alltoall(in, c, mpi_type(dt), out, c, mpi_type(dt), comm), what);
  }
  void send_recv(const void* in, void* out, std::int64_t n, dtype dt, int to, int from,
                 const char* what) const override {
    in_collective guard(what);
    const int c = mpi_count(n, what);
    MPI_Request reqs[2];
    int k = 0;
    if (from >= 0) check_mpi(MPI_Irecv(out, c, mpi_type(dt), from, 7101, comm, &reqs[k++]), what);
    if (to >= 0) check_mpi(MPI_Isend(in, c, mpi_type(dt), to, 7101, comm, &reqs[k++]), what);
    check_mpi(MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE), what);
  }
  /// Every rank's `n` int64 words, rank by rank (the cross-rank checks).
  std::vector<std::int64_t> gather_words(const std::int64_t* words, int n, const char* what) const {
    in_collective guard(what);
    std::vector<std::int64_t> all(static_cast<std::size_t>(n) * static_cast<std::size_t>(size));
    check_mpi(MPI_Allgather(words, n, MPI_INT64_T, all.data(), n, MPI_INT64_T, comm), what);
    return all;
  }
  void barrier(const char* what) const {
    in_collective guard(what);
    check_mpi(MPI_Barrier(comm), what);
  }
  device memory() const override { return cpu; }

  /// The device transport for buffers on device d, made (together with every rank) at the first
  /// call; null when it cannot be made here (then why_not_device() says why), and from then on.
  /// Called only when every rank asks at the same point (NOTE: [Collectives on device tensors]).
  const transport* device_transport(device d) const {
    std::lock_guard<std::mutex> lock(device_mu_);
    if (!device_tried_) {
      device_tried_ = true;
      if (const device_transport_maker make = device_transport_factory())
        device_ = make(*this, d, device_why_not_);
      else
        device_why_not_ = "the program is not built with xfunc::cuda, so it has no transport for device buffers";
    }
    return device_.get();
  }
  /// The device transport if one was made (never makes one).
  const transport* device_transport_if_made() const {
    std::lock_guard<std::mutex> lock(device_mu_);
    return device_.get();
  }
  /// Destroys the device transport (before MPI_Finalize: the driver may be gone at exit).
  void release_device_transport() const {
    std::lock_guard<std::mutex> lock(device_mu_);
    device_.reset();
  }
  /// Why there is no device transport (empty when there is one, or none was asked for yet).
  std::string why_not_device() const {
    std::lock_guard<std::mutex> lock(device_mu_);
    return device_why_not_;
  }

 private:
  mutable std::mutex device_mu_;
  mutable bool device_tried_ = false;
  mutable std::unique_ptr<transport> device_;
  mutable std::string device_why_not_;
};

inline bool mpi_ready() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}
inline void require_mpi(const char* what) {
  if (!mpi_ready())
    fail(what, ": MPI is not initialised; create an xf::dist::environment (at the start of main) before using "
               "xf::dist");
}
}  // namespace detail

/// A group of ranks that make collective calls together (a cheap shared handle).
class communicator {
 public:
  communicator() = default;
  /// A handle to the given state (library use: world() and split() make communicators).
  explicit communicator(std::shared_ptr<detail::comm_state> s) : s_(std::move(s)) {}

  /// This process's index in the group, 0 .. size()-1.
  int rank() const { return state("xf::dist::communicator::rank").rank; }
  /// The number of ranks in the group.
  int size() const { return state("xf::dist::communicator::size").size; }
  /// Splits the group: ranks with the same color form a new communicator, ordered by key (then by
  /// rank). Every rank of this group must call it. A rank with a negative color (MPI_UNDEFINED's
  /// meaning) takes part but joins no group: it gets an empty communicator.
  communicator split(int color, int key) const {
    const auto& st = state("xf::dist::communicator::split");
    auto s = std::make_shared<detail::comm_state>();
    {
      detail::in_collective guard("xf::dist::communicator::split");
      detail::check_mpi(MPI_Comm_split(st.comm, color < 0 ? MPI_UNDEFINED : color, key, &s->comm),
                        "xf::dist::communicator::split");
    }
    if (color < 0) return communicator();
    s->owned = true;
    MPI_Comm_rank(s->comm, &s->rank);
    MPI_Comm_size(s->comm, &s->size);
    return communicator(std::move(s));
  }
  /// Waits until every rank of the group has called barrier.
  void barrier() const { state("xf::dist::communicator::barrier").barrier("xf::dist::communicator::barrier"); }

  /// The state behind the handle (collectives use it); `what` names the caller in errors.
  const detail::comm_state& state(const char* what) const {
    detail::require_mpi(what);
    if (!s_) detail::fail(what, ": the communicator is empty; use xf::dist::world() or a split of it");
    return *s_;
  }
  /// Whether a and b are handles to the same communicator.
  friend bool operator==(const communicator& a, const communicator& b) { return a.s_ == b.s_; }

 private:
  std::shared_ptr<detail::comm_state> s_;
};

/// Every process of the job (of the program alone when it was not started by mpirun).
inline communicator world() {
  detail::require_mpi("xf::dist::world");
  static const communicator w = [] {
    auto s = std::make_shared<detail::comm_state>();
    s->comm = MPI_COMM_WORLD;
    MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s->size);
    return communicator(std::move(s));
  }();
  return w;
}

/// Checks shapes and dtypes across ranks before each collective (on by default); off saves one
/// small message per collective.
inline void set_checks(bool on) { detail::config().checks.store(on); }
/// Whether the cross-rank checks of set_checks are on.
inline bool checks_enabled() { return detail::config().checks.load(std::memory_order_relaxed); }
/// How long a rank may wait in one collective before the job is aborted (NOTE: [Collective
/// timeout]); zero or less: wait forever.
inline void set_timeout(std::chrono::milliseconds t) { detail::config().timeout_ms.store(t.count()); }

/// RAII for MPI: initialises it (with thread support) unless it already is, and finalises it at
/// scope end if it initialised it. An exception leaving its scope on a job of several ranks aborts
/// the job, so the other ranks do not wait for this one forever.
class environment {
 public:
  /// Initialises MPI without the command line.
  environment() { init(nullptr, nullptr); }
  /// Initialises MPI with main's arguments (MPI may remove the ones it consumes).
  environment(int& argc, char**& argv) { init(&argc, &argv); }
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;
  ~environment() {
    detail::watchdog::get().stop();
    if (!detail::mpi_ready()) return;
    world().state("xf::dist::environment").release_device_transport();
    int size = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (std::uncaught_exceptions() > 0 && size > 1) {
      std::fprintf(stderr,
                   "xf::dist: an exception is leaving the scope of xf::dist::environment on rank %d; aborting the "
                   "job so that the other ranks do not wait for this one\n",
                   rank);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (owns_) MPI_Finalize();
  }
  /// The thread support MPI provides (MPI_THREAD_SINGLE .. MPI_THREAD_MULTIPLE).
  int thread_level() const { return provided_; }

 private:
  void init(int* argc, char*** argv) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin) detail::fail("xf::dist::environment: MPI was already finalised; create one environment for the program");
    if (init) {
      MPI_Query_thread(&provided_);
      return;
    }
    detail::check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided_), "xf::dist::environment");
    owns_ = true;
  }
  bool owns_ = false;
  int provided_ = MPI_THREAD_SINGLE;
};

}  // namespace xfunc::dist
