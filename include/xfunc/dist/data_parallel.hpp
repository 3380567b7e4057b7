#pragma once
/// \file
/// Data parallelism: shard (this rank's part of a batch), average_gradients (a pytree of
/// gradients averaged across ranks in few large messages), rank_seed.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include <xfunc/core/pytree.hpp>
#include <xfunc/dist/collectives.hpp>
#include <xfunc/ops/creation.hpp>
#include <xfunc/ops/view.hpp>

namespace xfunc::dist {

/// This rank's contiguous chunk of t along `dim`: the chunks of all ranks cover t in rank order,
/// and their sizes differ by at most one (the first `t.size(dim) % size` ranks get one more).
template <int = 0>
tensor shard(const tensor& t, std::int64_t dim = 0, const communicator& comm = world()) {
  const char* name = "xf::dist::shard";
  const std::int64_t d = detail::collective_dim(t, dim, name);
  const std::int64_t n = t.size(d), size = comm.size(), rank = comm.rank();
  const std::int64_t base = n / size, rem = n % size;
  return t.narrow(d, rank * base + std::min(rank, rem), base + (rank < rem ? 1 : 0));
}

/// Seeds the generator (xf::manual_seed) with s combined with this rank's index: the ranks draw
/// different, reproducible streams.
inline void rank_seed(std::uint64_t s, const communicator& comm = world()) {
  // splitmix64 of (s, rank): nearby seeds and ranks give unrelated keys
  std::uint64_t z = s + 0x9e3779b97f4a7c15ull * (static_cast<std::uint64_t>(comm.rank()) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  manual_seed(z ^ (z >> 31));
}

namespace detail {

// NOTE: [Gradient buckets]
// average_gradients packs the leaves, in pytree order and per dtype, into buckets of up to
// bucket_bytes (25 MiB, PyTorch DDP's default) and reduces each bucket with one message, and
// the leaves come back as views of the averaged buckets (no copy out). With the cross-rank check
// that is 1 + buckets messages for any number of leaves. A small bucket (up to
// nonblocking_bytes) goes out as a non-blocking MPI_Iallreduce, which travels while the next
// bucket is packed; a larger one as a blocking MPI_Allreduce, because Open MPI 4.1's
// non-blocking all-reduce is slower than its tuned blocking one from a few hundred KiB on
// (1.7-1.8x the time at 64 MiB, measured by bench_distributed; faster below 100 KiB). Under a
// transform (or make_fx) the leaves go through the all_reduce op instead, one flat tensor per
// dtype, so the averaging is differentiable and batchable.
inline constexpr std::int64_t bucket_bytes = std::int64_t{25} << 20;
inline constexpr std::int64_t nonblocking_bytes = std::int64_t{256} << 10;

/// A bucket's non-blocking reduction, once started. Dropped unfinished (an exception while a
/// later bucket is packed: a failed allocation), it is waited for first, under the collective
/// timeout, so that MPI never writes into a freed bucket and every started collective completes
/// on every rank; the others started it too.
struct pending_reduction {
  MPI_Request req = MPI_REQUEST_NULL;
  std::unique_ptr<in_collective> guard;  // the watchdog's, from the start to the wait

  pending_reduction() = default;
  pending_reduction(pending_reduction&& o) noexcept
      : req(std::exchange(o.req, MPI_REQUEST_NULL)), guard(std::move(o.guard)) {}
  pending_reduction& operator=(pending_reduction&&) = delete;
  ~pending_reduction() {
    if (req != MPI_REQUEST_NULL) MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
  void wait(const char* name) {
    if (req != MPI_REQUEST_NULL) check_mpi(MPI_Wait(&req, MPI_STATUS_IGNORE), name);
    guard.reset();
  }
};

struct bucket {
  dtype dt;
  std::vector<std::size_t> leaves;
  std::int64_t numel = 0;
  tensor buf;
  pending_reduction reduction;  // (destroyed, and so waited for, before buf)
};

/// Every leaf averaged through the all_reduce op (transform-aware; one message per dtype).
template <int = 0>
std::vector<tensor> average_through_ops(const std::vector<tensor>& leaves, const communicator& comm) {
  std::vector<tensor> out(leaves.size());
  std::vector<bool> done(leaves.size());
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (done[i]) continue;
    std::vector<std::size_t> group;
    std::vector<tensor> flat;
    for (std::size_t j = i; j < leaves.size(); ++j)
      if (!done[j] && leaves[j].dtype() == leaves[i].dtype()) {
        group.push_back(j);
        flat.push_back(leaves[j].reshape({-1}));
        done[j] = true;
      }
    const tensor avg = all_reduce(xfunc::cat(flat, 0), reduce_op::mean, comm);
    std::int64_t off = 0;
    for (std::size_t j : group) {
      out[j] = avg.narrow(0, off, leaves[j].numel()).reshape(leaves[j].shape());
      off += leaves[j].numel();
    }
  }
  return out;
}

template <int = 0>
std::vector<tensor> average_leaves(const std::vector<tensor>& leaves, const communicator& comm) {
  const char* name = "xf::dist::average_gradients";
  const comm_state& c = comm.state(name);
  bool plain = xfunc::detail::current_stack().layers.empty() && !xfunc::detail::tls_trace;
  std::uint64_t h = fnv_start;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const tensor& t = leaves[i];
    if (!t.defined()) fail(name, ": gradient leaf ", i, " is an undefined tensor");
    if (!is_floating(t.dtype()))
      fail(name, ": gradient leaf ", i, " has dtype ", t.dtype(), "; gradients are float32 or float64");
    plain = plain && t.impl()->is_dense() && t.device() == cpu;
    h = fnv_mix(h, static_cast<std::uint64_t>(t.dtype()));
    for (std::int64_t d : t.shape()) h = fnv_mix(h, static_cast<std::uint64_t>(d));
    h = fnv_mix(h, 0xff);  // ends a shape
    total += t.numel();
  }
  if (!plain) return average_through_ops(leaves, comm);
  agree(c, name,
        call_header(collective_code::average_gradients, static_cast<std::int64_t>(leaves.size()), total, h,
                    leaves.empty() ? dtype::float32 : leaves[0].dtype(), {}));
  // buckets, per dtype in order of first appearance (NOTE: [Gradient buckets])
  std::vector<bucket> buckets;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const dtype dt = leaves[i].dtype();
    const std::int64_t bytes = leaves[i].numel() * static_cast<std::int64_t>(dtype_size(dt));
    bucket* b = nullptr;
    for (auto it = buckets.rbegin(); it != buckets.rend(); ++it)
      if (it->dt == dt) {
        b = &*it;
        break;
      }
    if (!b || (b->numel * static_cast<std::int64_t>(dtype_size(dt)) + bytes > bucket_bytes && b->numel > 0)) {
      buckets.push_back(bucket{dt, {}, 0, {}, {}});
      b = &buckets.back();
    }
    b->leaves.push_back(i);
    b->numel += leaves[i].numel();
  }
  for (auto& b : buckets) {  // pack, and start the reduction
    b.buf = xfunc::detail::empty_dense({b.numel}, b.dt, cpu, name);
    auto* dst = static_cast<char*>(data_of(b.buf));
    for (std::size_t i : b.leaves) {
      tensor scratch;
      const tensor& src = xfunc::detail::backend::materialized(leaves[i], leaves[i].shape(), b.dt, scratch);
      const std::size_t n = static_cast<std::size_t>(src.numel()) * dtype_size(b.dt);
      if (n) std::memcpy(dst, data_of(src), n);
      dst += n;
      for (auto& earlier : buckets) {  // let MPI move the buckets already started
        if (&earlier == &b) break;
        int flag = 0;
        if (earlier.reduction.req != MPI_REQUEST_NULL) MPI_Test(&earlier.reduction.req, &flag, MPI_STATUS_IGNORE);
      }
    }
    if (c.size == 1) continue;
    if (b.numel * static_cast<std::int64_t>(dtype_size(b.dt)) > nonblocking_bytes) {
      c.all_reduce(data_of(b.buf), b.numel, b.dt, reduce_op::sum, name);  // (in pieces past 2^30 elements)
      continue;
    }
    b.reduction.guard = std::make_unique<in_collective>(name);
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data_of(b.buf), mpi_count(b.numel, name), mpi_type(b.dt),
                             mpi_op(reduce_op::sum, b.dt), c.comm, &b.reduction.req),
              name);
  }
  std::vector<tensor> out(leaves.size());
  for (auto& b : buckets) {  // wait, average, and hand out views of the bucket
    b.reduction.wait(name);
    const tensor avg = c.size == 1 ? b.buf : b.buf / static_cast<double>(c.size);
    std::int64_t off = 0;
    for (std::size_t i : b.leaves) {
      out[i] = avg.narrow(0, off, leaves[i].numel()).reshape(leaves[i].shape());
      off += leaves[i].numel();
    }
  }
  return out;
}
}  // namespace detail

/// The pytree `grads` averaged across ranks: every leaf the mean of that leaf over the ranks,
/// in few large bucketed reductions rather than one message per leaf (NOTE: [Gradient buckets]).
/// Every rank passes a pytree of the same structure, shapes and dtypes.
template <class T>
T average_gradients(const T& grads, const communicator& comm = world()) {
  const std::vector<tensor> avg = detail::average_leaves(xfunc::detail::tree_leaves(grads), comm);
  std::size_t k = 0;
  return xfunc::detail::tree_map(grads, [&](const tensor&) { return avg[k++]; });
}

}  // namespace xfunc::dist
