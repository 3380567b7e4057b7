// A fake NCCL for the tests of xf::dist's NCCL transport without a GPU (loaded in place of
// libnccl.so.2 through XFUNC_NCCL_LIBRARY). It serves the fake CUDA driver, whose device memory
// is host memory, so each NCCL collective is the MPI one on the same pointers, run at once (the
// fake driver's streams are always done). A communicator may be any group of MPI ranks (a split
// of the world). Every call checks that it is given a stream and that its buffers are device
// memory of the fake driver ($XFUNC_CUDA_DRIVER), since host memory would pass unnoticed here.
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define XFUNC_FAKE_EXPORT __attribute__((visibility("default")))

struct ncclComm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
};

namespace {
constexpr char magic[] = "xfunc fake nccl";

struct pending {  // a send or receive queued between ncclGroupStart and ncclGroupEnd
  bool send;
  void* buf;
  int count;
  MPI_Datatype type;
  int peer;
  MPI_Comm comm;
};
long long calls = 0;  // the collectives and sends/receives so far (xfunc_fake_nccl_calls)
thread_local int group_depth = 0;
thread_local std::vector<pending> queued;

ncclResult_t complain(const char* call, const char* what) {
  std::fprintf(stderr, "fake NCCL: %s: %s\n", call, what);
  return ncclInvalidUsage;
}
bool mpi_type(ncclDataType_t t, MPI_Datatype* out) {
  switch (t) {
    case ncclFloat32: *out = MPI_FLOAT; return true;
    case ncclFloat64: *out = MPI_DOUBLE; return true;
    case ncclInt64: *out = MPI_INT64_T; return true;
    case ncclUint8: *out = MPI_UINT8_T; return true;
    default: return false;
  }
}
bool mpi_op(ncclRedOp_t op, MPI_Op* out) {
  switch (op) {
    case ncclSum:
    case ncclAvg: *out = MPI_SUM; return true;  // (average: the sum, then divided)
    case ncclMax: *out = MPI_MAX; return true;
    case ncclMin: *out = MPI_MIN; return true;
    default: return false;
  }
}
std::size_t element_bytes(ncclDataType_t t) { return t == ncclUint8 ? 1 : t == ncclFloat32 ? 4 : 8; }
/// Whether `bytes` at p are the fake driver's device memory (true when no fake driver is loaded:
/// a real one's memory cannot be checked here).
bool on_device(const void* p, std::size_t bytes) {
  using check_fn = int (*)(const void*, size_t);
  static const check_fn check = [] {
    const char* driver = std::getenv("XFUNC_CUDA_DRIVER");
    void* h = driver ? dlopen(driver, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    return h ? reinterpret_cast<check_fn>(dlsym(h, "xfunc_fake_cuda_is_device_memory")) : nullptr;
  }();
  return !check || bytes == 0 || check(p, bytes) == 1;
}
/// Checks that a collective's input and output are device memory (n_in, n_out elements).
ncclResult_t buffers(const char* call, const void* in, std::size_t n_in, const void* out, std::size_t n_out,
                     ncclDataType_t t) {
  if (!on_device(in, n_in * element_bytes(t)) || !on_device(out, n_out * element_bytes(t)))
    return complain(call, "a buffer that is not device memory (of the fake driver)");
  return ncclSuccess;
}

/// Checks the arguments every collective shares; fills in the MPI type.
ncclResult_t common(const char* call, ncclComm_t comm, cudaStream_t stream, size_t count, ncclDataType_t t,
                    MPI_Datatype* type) {
  if (!comm || comm->comm == MPI_COMM_NULL) return complain(call, "no communicator");
  if (!stream) return complain(call, "no stream (xfunc enqueues on its own streams)");
  if (count > static_cast<size_t>(1) << 30) return complain(call, "more elements than the fake handles");
  if (!mpi_type(t, type)) return complain(call, "a data type the fake does not handle");
  return ncclSuccess;
}
/// The same for a reducing collective; fills in the MPI reduction too.
ncclResult_t reducing(const char* call, ncclComm_t comm, cudaStream_t stream, size_t count, ncclDataType_t t,
                      ncclRedOp_t op, MPI_Datatype* type, MPI_Op* mop) {
  if (const ncclResult_t r = common(call, comm, stream, count, t, type); r != ncclSuccess) return r;
  if (!mpi_op(op, mop)) return complain(call, "a reduction the fake does not handle");
  ++calls;
  return ncclSuccess;
}
ncclResult_t mpi(int rc) { return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError; }
void divide(void* buf, size_t n, ncclDataType_t t, int by) {
  if (t == ncclFloat32)
    for (size_t i = 0; i < n; ++i) static_cast<float*>(buf)[i] /= static_cast<float>(by);
  if (t == ncclFloat64)
    for (size_t i = 0; i < n; ++i) static_cast<double*>(buf)[i] /= by;
}
}  // namespace

extern "C" {

XFUNC_FAKE_EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  return r == ncclSuccess ? "no error" : r == ncclInvalidUsage ? "invalid usage (fake NCCL)" : "error (fake NCCL)";
}

// The id carries the maker's MPI world rank and a number of its own: the members of a group
// find each other through that rank (below), as NCCL's bootstrap does through the id's address.
struct id_contents {
  char tag[sizeof magic];
  int root_world_rank;
  int serial;
};
static_assert(sizeof(id_contents) <= sizeof(ncclUniqueId));

XFUNC_FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static int serial = 0;
  int init = 0;
  MPI_Initialized(&init);
  if (!id || !init) return complain("ncclGetUniqueId", "no id, or MPI is not initialised");
  id_contents c{};
  std::memcpy(c.tag, magic, sizeof magic);
  MPI_Comm_rank(MPI_COMM_WORLD, &c.root_world_rank);
  c.serial = serial++ % 1000;
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, &c, sizeof c);
  return ncclSuccess;
}

// Every member sends (its NCCL rank, its world rank) to the id's maker, which answers with the
// world ranks of the whole group in NCCL rank order; then the members make an MPI communicator
// of that group (MPI_Comm_create_group is collective over the group only).
XFUNC_FAKE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  int init = 0, me = 0;
  MPI_Initialized(&init);
  if (!comm || !init) return complain("ncclCommInitRank", "no result pointer, or MPI is not initialised");
  id_contents c;
  std::memcpy(&c, id.internal, sizeof c);
  if (std::memcmp(c.tag, magic, sizeof magic) != 0) return complain("ncclCommInitRank", "not an id of this fake");
  if (nranks < 1 || rank < 0 || rank >= nranks) return complain("ncclCommInitRank", "a rank outside the group");
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int tag = 7300 + c.serial;
  std::vector<int> members(static_cast<std::size_t>(nranks), -1);
  if (rank == 0) {
    if (me != c.root_world_rank) return complain("ncclCommInitRank", "NCCL rank 0 is not the id's maker");
    members[0] = me;
    for (int k = 1; k < nranks; ++k) {
      int pair[2];
      if (MPI_Recv(pair, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return ncclSystemError;
      if (pair[0] <= 0 || pair[0] >= nranks || members[static_cast<std::size_t>(pair[0])] != -1)
        return complain("ncclCommInitRank", "two members with the same rank");
      members[static_cast<std::size_t>(pair[0])] = pair[1];
    }
    for (int k = 1; k < nranks; ++k)
      MPI_Send(members.data(), nranks, MPI_INT, members[static_cast<std::size_t>(k)], tag, MPI_COMM_WORLD);
  } else {
    const int pair[2] = {rank, me};
    MPI_Send(pair, 2, MPI_INT, c.root_world_rank, tag, MPI_COMM_WORLD);
    MPI_Recv(members.data(), nranks, MPI_INT, c.root_world_rank, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Group world_group, group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, nranks, members.data(), &group);
  auto* made = new ncclComm;
  const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &made->comm);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  if (rc != MPI_SUCCESS) {
    delete made;
    return ncclSystemError;
  }
  made->rank = rank;
  made->size = nranks;
  *comm = made;
  return ncclSuccess;
}

XFUNC_FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return complain("ncclCommDestroy", "no communicator");
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Comm_free(&comm->comm);
  delete comm;
  return ncclSuccess;
}
XFUNC_FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }
XFUNC_FAKE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async) {
  if (!comm || !async) return complain("ncclCommGetAsyncError", "no communicator or result pointer");
  *async = ncclSuccess;
  return ncclSuccess;
}

XFUNC_FAKE_EXPORT ncclResult_t ncclAllReduce(const void* in, void* out, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                             ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  MPI_Op mop;
  if (const ncclResult_t r = reducing("ncclAllReduce", comm, stream, count, t, op, &type, &mop); r != ncclSuccess)
    return r;
  if (const ncclResult_t r = buffers("ncclAllReduce", in, count, out, count, t); r != ncclSuccess) return r;
  const ncclResult_t r =
      mpi(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, static_cast<int>(count), type, mop, comm->comm));
  if (op == ncclAvg) divide(out, count, t, comm->size);
  return r;
}

XFUNC_FAKE_EXPORT ncclResult_t ncclAllGather(const void* in, void* out, size_t count, ncclDataType_t t,
                                             ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  if (const ncclResult_t r = common("ncclAllGather", comm, stream, count, t, &type); r != ncclSuccess) return r;
  if (const ncclResult_t r = buffers("ncclAllGather", in, count, out, count * static_cast<std::size_t>(comm->size), t);
      r != ncclSuccess)
    return r;
  ++calls;
  return mpi(MPI_Allgather(in, static_cast<int>(count), type, out, static_cast<int>(count), type, comm->comm));
}

XFUNC_FAKE_EXPORT ncclResult_t ncclReduceScatter(const void* in, void* out, size_t count, ncclDataType_t t,
                                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  MPI_Op mop;
  if (const ncclResult_t r = reducing("ncclReduceScatter", comm, stream, count, t, op, &type, &mop); r != ncclSuccess)
    return r;
  const std::size_t in_count = count * static_cast<std::size_t>(comm->size);
  if (const ncclResult_t r = buffers("ncclReduceScatter", in, in_count, out, count, t); r != ncclSuccess) return r;
  const ncclResult_t r = mpi(MPI_Reduce_scatter_block(in, out, static_cast<int>(count), type, mop, comm->comm));
  if (op == ncclAvg) divide(out, count, t, comm->size);
  return r;
}

XFUNC_FAKE_EXPORT ncclResult_t ncclBroadcast(const void* in, void* out, size_t count, ncclDataType_t t, int root,
                                             ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  if (const ncclResult_t r = common("ncclBroadcast", comm, stream, count, t, &type); r != ncclSuccess) return r;
  if (in != out) return complain("ncclBroadcast", "the fake broadcasts in place only");
  if (const ncclResult_t r = buffers("ncclBroadcast", in, count, out, count, t); r != ncclSuccess) return r;
  ++calls;
  return mpi(MPI_Bcast(out, static_cast<int>(count), type, root, comm->comm));
}

XFUNC_FAKE_EXPORT ncclResult_t ncclReduce(const void* in, void* out, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                          int root, ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  MPI_Op mop;
  if (const ncclResult_t r = reducing("ncclReduce", comm, stream, count, t, op, &type, &mop); r != ncclSuccess)
    return r;
  if (const ncclResult_t r = buffers("ncclReduce", in, count, out, count, t); r != ncclSuccess) return r;
  return mpi(MPI_Reduce(in, out, static_cast<int>(count), type, mop, root, comm->comm));
}

XFUNC_FAKE_EXPORT ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}
/// Posts every queued send and receive at once and waits for them (as NCCL runs a group).
XFUNC_FAKE_EXPORT ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) return complain("ncclGroupEnd", "no ncclGroupStart");
  if (--group_depth > 0) return ncclSuccess;
  std::vector<MPI_Request> reqs(queued.size());
  for (std::size_t i = 0; i < queued.size(); ++i) {
    const pending& p = queued[i];
    const int rc = p.send ? MPI_Isend(p.buf, p.count, p.type, p.peer, 7202, p.comm, &reqs[i])
                          : MPI_Irecv(p.buf, p.count, p.type, p.peer, 7202, p.comm, &reqs[i]);
    if (rc != MPI_SUCCESS) return ncclSystemError;
  }
  queued.clear();
  return mpi(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE));
}

static ncclResult_t point_to_point(const char* call, bool send, const void* buf, size_t count, ncclDataType_t t,
                                   int peer, ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  if (const ncclResult_t r = common(call, comm, stream, count, t, &type); r != ncclSuccess) return r;
  if (peer < 0 || peer >= comm->size) return complain(call, "a peer outside the communicator");
  if (const ncclResult_t r = buffers(call, buf, count, buf, count, t); r != ncclSuccess) return r;
  ++calls;
  queued.push_back({send, const_cast<void*>(buf), static_cast<int>(count), type, peer, comm->comm});
  return group_depth > 0 ? ncclSuccess : (++group_depth, ncclGroupEnd());
}
XFUNC_FAKE_EXPORT ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                                        cudaStream_t stream) {
  return point_to_point("ncclSend", true, buf, count, t, peer, comm, stream);
}
XFUNC_FAKE_EXPORT ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                                        cudaStream_t stream) {
  return point_to_point("ncclRecv", false, buf, count, t, peer, comm, stream);
}

// Test hook, not NCCL: the collectives and sends/receives this process made.
XFUNC_FAKE_EXPORT long long xfunc_fake_nccl_calls() { return calls; }

}  // extern "C"
