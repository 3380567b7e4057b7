// A fake NCCL for the tests of xf::dist's NCCL transport without a GPU (loaded in place of
// libnccl.so.2 through XFUNC_NCCL_LIBRARY). It serves the fake CUDA driver, whose device memory
// is host memory, so each NCCL collective is the MPI one on the same pointers, run at once (the
// fake driver's streams are always done). Communicators must span every MPI rank (the tests' jobs);
// another group is refused with ncclInvalidUsage. Every call checks that it is given a stream.
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
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
/// Checks the arguments every collective shares; fills in the MPI type and count.
ncclResult_t common(const char* call, ncclComm_t comm, cudaStream_t stream, size_t count, ncclDataType_t t,
                    MPI_Datatype* type) {
  if (!comm || comm->comm == MPI_COMM_NULL) return complain(call, "no communicator");
  if (!stream) return complain(call, "no stream (xfunc enqueues on its own streams)");
  if (count > static_cast<size_t>(1) << 30) return complain(call, "more elements than the fake handles");
  if (!mpi_type(t, type)) return complain(call, "a data type the fake does not handle");
  return ncclSuccess;
}
ncclResult_t mpi(int rc) { return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError; }
void divide(void* buf, size_t n, ncclDataType_t t, int by) {
  if (t == ncclFloat32)
    for (size_t i = 0; i < n; ++i) static_cast<float*>(buf)[i] /= static_cast<float>(by);
  if (t == ncclFloat64)
    for (size_t i = 0; i < n; ++i) static_cast<double*>(buf)[i] /= by;
}
long long calls = 0;
}  // namespace

extern "C" {

XFUNC_FAKE_EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  return r == ncclSuccess ? "no error" : r == ncclInvalidUsage ? "invalid usage (fake NCCL)" : "error (fake NCCL)";
}

XFUNC_FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return complain("ncclGetUniqueId", "no id");
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, magic, sizeof magic);
  return ncclSuccess;
}

XFUNC_FAKE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  int init = 0, world = 0;
  MPI_Initialized(&init);
  if (!comm || !init) return complain("ncclCommInitRank", "no result pointer, or MPI is not initialised");
  if (std::memcmp(id.internal, magic, sizeof magic) != 0) return complain("ncclCommInitRank", "not an id of this fake");
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (nranks != world || rank < 0 || rank >= nranks)
    return complain("ncclCommInitRank", "the fake serves communicators of every MPI rank only");
  auto* c = new ncclComm;
  // ordered by the NCCL rank (every MPI rank is here: the group is the world)
  if (MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c->comm) != MPI_SUCCESS) {
    delete c;
    return ncclSystemError;
  }
  c->rank = rank;
  c->size = nranks;
  *comm = c;
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
  if (const ncclResult_t r = common("ncclAllReduce", comm, stream, count, t, &type); r != ncclSuccess) return r;
  if (!mpi_op(op, &mop)) return complain("ncclAllReduce", "a reduction the fake does not handle");
  ++calls;
  const ncclResult_t r =
      mpi(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, static_cast<int>(count), type, mop, comm->comm));
  if (op == ncclAvg) divide(out, count, t, comm->size);
  return r;
}

XFUNC_FAKE_EXPORT ncclResult_t ncclAllGather(const void* in, void* out, size_t count, ncclDataType_t t,
                                             ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  if (const ncclResult_t r = common("ncclAllGather", comm, stream, count, t, &type); r != ncclSuccess) return r;
  ++calls;
  return mpi(MPI_Allgather(in, static_cast<int>(count), type, out, static_cast<int>(count), type, comm->comm));
}

XFUNC_FAKE_EXPORT ncclResult_t ncclReduceScatter(const void* in, void* out, size_t count, ncclDataType_t t,
                                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  MPI_Op mop;
  if (const ncclResult_t r = common("ncclReduceScatter", comm, stream, count, t, &type); r != ncclSuccess) return r;
  if (!mpi_op(op, &mop)) return complain("ncclReduceScatter", "a reduction the fake does not handle");
  ++calls;
  const ncclResult_t r = mpi(MPI_Reduce_scatter_block(in, out, static_cast<int>(count), type, mop, comm->comm));
  if (op == ncclAvg) divide(out, count, t, comm->size);
  return r;
}

XFUNC_FAKE_EXPORT ncclResult_t ncclBroadcast(const void* in, void* out, size_t count, ncclDataType_t t, int root,
                                             ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  if (const ncclResult_t r = common("ncclBroadcast", comm, stream, count, t, &type); r != ncclSuccess) return r;
  if (in != out) return complain("ncclBroadcast", "the fake broadcasts in place only");
  ++calls;
  return mpi(MPI_Bcast(out, static_cast<int>(count), type, root, comm->comm));
}

XFUNC_FAKE_EXPORT ncclResult_t ncclReduce(const void* in, void* out, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                          int root, ncclComm_t comm, cudaStream_t stream) {
  MPI_Datatype type;
  MPI_Op mop;
  if (const ncclResult_t r = common("ncclReduce", comm, stream, count, t, &type); r != ncclSuccess) return r;
  if (!mpi_op(op, &mop)) return complain("ncclReduce", "a reduction the fake does not handle");
  ++calls;
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
