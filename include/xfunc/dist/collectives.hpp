#pragma once
/// \file
/// The collectives as ops: all_reduce, all_gather, reduce_scatter, broadcast, all_to_all,
/// ppermute (and reduce, the transpose of broadcast). Each op has, like any op (NOTE: [Op
/// definitions]), a kernel (meta shapes, or the communicator's buffer-level collective), a vjp (its
/// transpose), a jvp (the same collective on the tangent: they are linear) and a batch rule that
/// sends one message for the whole batch.
#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <xfunc/dist/communicator.hpp>
#include <xfunc/ops/creation.hpp>
#include <xfunc/ops/pointwise.hpp>
#include <xfunc/ops/view.hpp>
#include <xfunc/rules/common.hpp>

namespace xfunc::dist {
namespace detail {
using xfunc::detail::batched;
using xfunc::detail::bdim_to_front;
using xfunc::detail::call;
using xfunc::detail::no_bdim;
using xfunc::detail::tensor_list;

// NOTE: [Transposes of collectives]
// Under transforms the collectives have pmap's semantics: the gradient a rank computes is that of
// the sum of every rank's output with respect to its own input. So each collective's vjp is its
// linear transpose across ranks: all_reduce(sum) is its own transpose (every rank's input reaches
// every rank's output, so a rank's gradient sums every rank's cotangent), all_reduce(mean) too,
// all_gather and reduce_scatter(sum) transpose to each other, broadcast to a sum onto the root
// (reduce), all_to_all to all_to_all with its dims swapped, ppermute to the inverse permutation.
// Their jvps apply the collective itself to the tangents. max and min are not differentiable.

/// Which collective a call is, in the cross-rank check's header.
enum class collective_code : std::int64_t { all_reduce = 1, all_gather, reduce_scatter, broadcast, reduce, all_to_all,
                                             ppermute, average_gradients, refused };

inline const char* collective_name(std::int64_t code) {
  switch (static_cast<collective_code>(code)) {
    case collective_code::all_reduce: return "all_reduce";
    case collective_code::all_gather: return "all_gather";
    case collective_code::reduce_scatter: return "reduce_scatter";
    case collective_code::broadcast: return "broadcast";
    case collective_code::reduce: return "reduce";
    case collective_code::all_to_all: return "all_to_all";
    case collective_code::ppermute: return "ppermute";
    case collective_code::average_gradients: return "average_gradients";
    case collective_code::refused: return "a call it refused";
  }
  return "an unknown collective";
}

// NOTE: [Cross-rank checks]
// Before a collective moves data, every rank shares a small header (which collective, its
// arguments, the dtype and shape of its buffer) in one MPI_Allgather. Every rank then sees every
// header, so a mismatch (a shape that differs on one rank, a rank that called another collective)
// makes every rank throw the same "ranks" error, where MPI would corrupt a buffer or hang. The
// communicator stays usable afterwards. set_checks(false) skips it (one message less per call).
/// FNV-1a over 64-bit words: the hashes in cross-rank headers (NOTE: [Cross-rank checks]).
inline constexpr std::uint64_t fnv_start = 1469598103934665603ull;
inline std::uint64_t fnv_mix(std::uint64_t h, std::uint64_t word) { return (h ^ word) * 1099511628211ull; }

struct call_header {
  static constexpr int max_dims = 8;
  static constexpr int device_word = 6;  // the tensor is on a device: not compared, it picks the transport
  static constexpr int words = 7 + max_dims;
  std::int64_t w[words] = {};  // code, arg a, arg b, arg hash, dtype, rank, on a device, dims (the rest hashed in)

  call_header(collective_code code, std::int64_t a, std::int64_t b, std::uint64_t h, dtype dt, const shape_t& s,
              bool on_device = false) {
    w[0] = static_cast<std::int64_t>(code);
    w[1] = a;
    w[2] = b;
    w[4] = static_cast<std::int64_t>(dt);
    w[5] = static_cast<std::int64_t>(s.size());
    w[device_word] = on_device ? 1 : 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (i < max_dims) w[7 + i] = s[i];
      else h = fnv_mix(h, static_cast<std::uint64_t>(s[i]));  // dims past max_dims: in the hash
    }
    w[3] = static_cast<std::int64_t>(h);
  }
  static std::string describe(const std::int64_t* w) {
    std::ostringstream os;
    if (w[0] == static_cast<std::int64_t>(collective_code::refused))
      return std::string(collective_name(w[1])) + " with arguments it refused (its own error says why)";
    os << collective_name(w[0]) << " of " << dtype_name(static_cast<dtype>(w[4])) << " [";
    const std::int64_t rank = w[5];
    for (std::int64_t i = 0; i < std::min<std::int64_t>(rank, max_dims); ++i) os << (i ? ", " : "") << w[7 + i];
    if (rank > max_dims) os << ", ...";
    os << "]";
    if (w[0] == static_cast<std::int64_t>(collective_code::all_reduce) ||
        w[0] == static_cast<std::int64_t>(collective_code::reduce_scatter))
      os << " (" << reduce_op_name(static_cast<reduce_op>(w[1])) << ")";
    return os.str();
  }
};

/// Throws "ranks" on every rank unless every rank's header equals this one (NOTE: [Cross-rank
/// checks]); returns whether every rank's tensor is on a device (NOTE: [Collectives on device
/// tensors]), which is this rank's own answer when there is no exchange.
inline bool agree(const comm_state& c, const char* op, const call_header& h) {
  if (!checks_enabled() || c.size == 1) return h.w[call_header::device_word] != 0;
  const std::vector<std::int64_t> all = c.gather_words(h.w, call_header::words, op);
  bool same = true, every_on_device = true;
  for (int r = 0; r < c.size; ++r) {
    const std::int64_t* w = all.data() + r * call_header::words;
    every_on_device = every_on_device && w[call_header::device_word] != 0;
    for (int i = 0; i < call_header::words && same; ++i)
      same = i == call_header::device_word || w[i] == all[static_cast<std::size_t>(i)];
  }
  if (same) return every_on_device;
  std::ostringstream os;
  for (int r = 0; r < c.size; ++r)
    os << (r ? "; " : "") << "rank " << r << ": " << call_header::describe(all.data() + r * call_header::words);
  fail(op, ": the ranks disagree about this call (", os.str(),
       "); every rank must make the same collective calls, in the same order, with tensors of the same shape and "
       "dtype");
}

/// Runs a collective's own argument checks on this rank (a dim out of range, a size not
/// divisible, ...). When they fail here while checks are on, this rank first joins the
/// cross-rank check that the other ranks may already wait in, with a header that matches none
/// of theirs: they throw "ranks" instead of waiting forever, and this rank throws its own error.
template <class Check>
void check_arguments(const tensor& t, const communicator& comm, const char* op, collective_code code, Check&& check) {
  try {
    xfunc::detail::require_defined(t, op);
    check();
  } catch (const error&) {
    const comm_state* c = nullptr;
    try {
      c = &comm.state(op);
    } catch (const error&) {
    }
    if (c && checks_enabled() && c->size > 1 && !(t.defined() && t.device() == meta)) {
      call_header h(collective_code::refused, static_cast<std::int64_t>(code), 0, 0, dtype::float32, shape_t{});
      try {
        agree(*c, op, h);
      } catch (const error&) {  // (the others' "ranks"; this rank reports its own error)
      }
    }
    throw;
  }
}

/// Kernels reshape and move their buffers with ops; those must not land in a make_fx recording.
struct kernel_scope {
  xfunc::detail::trace_scope no_trace{nullptr};
};

/// A fresh contiguous copy of a dense tensor (the buffer a collective writes into).
inline tensor fresh_copy(const tensor& x) {
  if (x.device() == cpu) return xfunc::detail::backend::materialized_copy(x, x.shape(), x.dtype());
  kernel_scope k;
  return x.clone();  // (a device's clone is contiguous)
}
/// The buffer of a dense contiguous tensor on its own device (a transport reads or writes it).
inline void* data_of(const tensor& t) {
  return xfunc::detail::visit_dtype(t.dtype(), [&](auto tag) -> void* {
    return t.impl()->template device_data<typename decltype(tag)::type>();
  });
}

// NOTE: [Collectives on device tensors]
// A collective on cuda tensors moves device buffers with NCCL when every rank of the
// communicator holds its tensor on a cuda device and NCCL runs on every rank: the device
// transport (dist/nccl.hpp), made by all ranks together at the communicator's first such call,
// enqueues on the calling thread's stream and waits under the collective timeout. Otherwise (a
// rank holds a cpu tensor, some rank lacks NCCL or a GPU, the program is built without
// xfunc::cuda) the tensor goes through a cpu copy, MPI moves it, and the result is copied back to
// the tensor's device. The choice must be the same on every rank, or ranks would wait in different
// libraries: the cross-rank header says whether the tensor is on a device, so every rank sees
// every rank's answer. With the checks off (set_checks(false)) each rank decides from its own
// tensor, so all ranks must then hold theirs on the same kind of device.

/// Runs body(transport, v) with v = x's values on the memory of the transport chosen for this
/// call (NOTE: [Collectives on device tensors]) and returns its result on x's device.
template <class Body>
tensor on_transport(const comm_state& c, const tensor& x, bool every_rank_on_device, Body&& body) {
  const transport* t = &c;
  if (every_rank_on_device)
    if (const transport* dt = c.device_transport(x.device())) t = dt;
  if (t->memory() == x.device()) return body(*t, x);
  kernel_scope k;
  return body(*t, x.to(t->memory())).to(x.device());
}
/// Whether t lives on a device (the cross-rank header's word: NOTE: [Collectives on device tensors]).
inline bool on_device(const tensor& t) { return t.device().kind == xfunc::device_kind::cuda; }

/// Whether a derivative reaches grad node n from an input of its layer (a leaf): values made
/// inside the function from constants (factories) have nodes too, with no path to a leaf.
inline bool reaches_leaf(const xfunc::detail::grad_node* n) {
  std::vector<const xfunc::detail::grad_node*> frontier{n};  // depth first
  std::unordered_set<const xfunc::detail::grad_node*> seen;
  while (!frontier.empty()) {
    const xfunc::detail::grad_node* m = frontier.back();
    frontier.pop_back();
    if (!m || !seen.insert(m).second) continue;
    if (m->is_leaf()) return true;
    for (const auto& k : m->next) frontier.push_back(k.get());
  }
  return false;
}

/// Whether a grad or jvp layer now running differentiates t (max and min refuse it).
inline bool differentiated(const tensor& t) {
  for (const xfunc::detail::tensor_impl* p = t.impl(); p && !p->is_dense(); p = p->inner.impl()) {
    if (!p->is_live_wrapper()) continue;
    if (p->owner->kind == xfunc::transform_kind::grad && reaches_leaf(p->node.get())) return true;
    if (p->owner->kind == xfunc::transform_kind::jvp && p->tangent.defined()) return true;
  }
  return false;
}
[[noreturn]] inline void fail_not_differentiable(const char* op, reduce_op r) {
  fail(op, ": ", reduce_op_name(r), " is not differentiable; use sum or mean under grad, vjp, jvp and the jacobians "
       "(or compute the ", reduce_op_name(r), " outside the differentiated function)");
}
inline bool is_extreme(reduce_op r) { return r == reduce_op::max || r == reduce_op::min; }
/// The checks of a reducing collective's operator on t: max and min are not differentiable,
/// mean needs a floating dtype.
inline void check_reduce_op(const tensor& t, reduce_op op, const char* name) {
  if (is_extreme(op) && differentiated(t)) fail_not_differentiable(name, op);
  if (op == reduce_op::mean && !is_floating(t.dtype()))
    fail(name, ": mean needs a floating tensor, got ", t.dtype(), "; convert it with .to(xf::f32) or use sum");
}

struct all_reduce_attrs {
  communicator comm;
  reduce_op op = reduce_op::sum;
};
struct dim_attrs {  // all_gather
  communicator comm;
  std::int64_t dim = 0;
};
struct reduce_scatter_attrs {
  communicator comm;
  std::int64_t dim = 0;
  reduce_op op = reduce_op::sum;
};
struct root_attrs {  // broadcast, reduce
  communicator comm;
  int root = 0;
};
struct all_to_all_attrs {
  communicator comm;
  std::int64_t split_dim = 0, concat_dim = 0;
};
struct ppermute_attrs {
  communicator comm;
  std::vector<std::pair<int, int>> perm;
};

template <class = void>
struct all_reduce_op_t;
template <class = void>
struct all_gather_op_t;
template <class = void>
struct reduce_scatter_op_t;
template <class = void>
struct broadcast_op_t;
template <class = void>
struct reduce_op_t;
template <class = void>
struct all_to_all_op_t;
template <class = void>
struct ppermute_op_t;
using all_reduce_op = all_reduce_op_t<>;
using all_gather_op = all_gather_op_t<>;
using reduce_scatter_op = reduce_scatter_op_t<>;
using broadcast_op = broadcast_op_t<>;
using reduce_to_root_op = reduce_op_t<>;
using all_to_all_op = all_to_all_op_t<>;
using ppermute_op = ppermute_op_t<>;

/// The batch rule of a collective that acts on every element alike: the batch dim goes in front
/// (so every rank's buffer has the same layout) and the whole batch is one message.
template <class Op>
batched front_batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, const typename Op::attrs& a) {
  return {call<Op>(a, bdim_to_front(in[0], bdims[0])), 0};
}

template <class D>
struct all_reduce_op_t {
  static constexpr const char* name = "xf::dist::all_reduce";
  static constexpr bool device_generic = true;  // (NOTE: [Collectives on device tensors])
  using attrs = all_reduce_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor& x = in[0];
    if (x.device() == meta) return xfunc::detail::backend::meta_like(x.shape(), x.dtype(), name);
    const comm_state& c = a.comm.state(name);
    const bool dev = agree(c, name, call_header(collective_code::all_reduce, static_cast<std::int64_t>(a.op), 0, 0,
                                                x.dtype(), x.shape(), on_device(x)));
    return on_transport(c, x, dev, [&](const transport& t, const tensor& v) {
      tensor out = fresh_copy(v);
      t.all_reduce(data_of(out), out.numel(), out.dtype(), a.op, name);
      if (a.op == reduce_op::mean && c.size > 1) {
        kernel_scope k;
        out = out / static_cast<double>(c.size);
      }
      return out;
    });
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs& a) {
    if (is_extreme(a.op)) fail_not_differentiable(name, a.op);
    return {call<all_reduce_op_t<D>>(a, g)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    if (is_extreme(a.op)) fail_not_differentiable(name, a.op);
    return t[0].defined() ? call<all_reduce_op_t<D>>(a, t[0]) : tensor();
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t, const attrs& a) {
    return front_batch<all_reduce_op_t<D>>(in, bdims, a);
  }
};

template <class D>
struct all_gather_op_t {
  static constexpr const char* name = "xf::dist::all_gather";
  static constexpr bool device_generic = true;  // (NOTE: [Collectives on device tensors])
  using attrs = dim_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor& x = in[0];
    const comm_state& c = a.comm.state(name);
    shape_t out_shape = x.shape();
    out_shape[static_cast<std::size_t>(a.dim)] *= c.size;
    if (x.device() == meta) return xfunc::detail::backend::meta_like(out_shape, x.dtype(), name);
    const bool dev =
        agree(c, name, call_header(collective_code::all_gather, a.dim, 0, 0, x.dtype(), x.shape(), on_device(x)));
    return on_transport(c, x, dev, [&](const transport& t, const tensor& v) {
      kernel_scope k;
      const tensor src = fresh_copy(v);
      shape_t gathered = v.shape();
      gathered.insert(0, c.size);  // [ranks, x's shape]
      tensor all = xfunc::detail::empty_dense(gathered, v.dtype(), v.device(), name);
      t.all_gather(data_of(src), data_of(all), v.numel(), v.dtype(), name);
      return a.dim == 0 ? all.reshape(out_shape) : all.movedim(0, a.dim).contiguous().reshape(out_shape);
    });
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs& a) {
    return {call<reduce_scatter_op_t<D>>(reduce_scatter_attrs{a.comm, a.dim, reduce_op::sum}, g)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].defined() ? call<all_gather_op_t<D>>(a, t[0]) : tensor();
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t, const attrs& a) {
    return {call<all_gather_op_t<D>>(attrs{a.comm, a.dim + 1}, bdim_to_front(in[0], bdims[0])), 0};
  }
};

template <class D>
struct reduce_scatter_op_t {
  static constexpr const char* name = "xf::dist::reduce_scatter";
  static constexpr bool device_generic = true;  // (NOTE: [Collectives on device tensors])
  using attrs = reduce_scatter_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor& x = in[0];
    const comm_state& c = a.comm.state(name);
    shape_t out_shape = x.shape();
    out_shape[static_cast<std::size_t>(a.dim)] /= c.size;
    if (x.device() == meta) return xfunc::detail::backend::meta_like(out_shape, x.dtype(), name);
    const bool dev = agree(c, name, call_header(collective_code::reduce_scatter, static_cast<std::int64_t>(a.op), a.dim, 0,
                                                x.dtype(), x.shape(), on_device(x)));
    return on_transport(c, x, dev, [&](const transport& t, const tensor& v) {
      kernel_scope k;
      // the reduced dim in front, so that rank r's chunk is one contiguous block
      const tensor src = fresh_copy(a.dim == 0 ? v : v.movedim(a.dim, 0));
      shape_t chunk = src.shape();
      chunk[0] = out_shape[static_cast<std::size_t>(a.dim)];
      tensor out = xfunc::detail::empty_dense(chunk, v.dtype(), v.device(), name);
      t.reduce_scatter(data_of(src), data_of(out), out.numel(), v.dtype(), a.op, name);
      if (a.op == reduce_op::mean && c.size > 1) out = out / static_cast<double>(c.size);
      return a.dim == 0 ? out : out.movedim(0, a.dim).contiguous();
    });
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs& a) {
    if (is_extreme(a.op)) fail_not_differentiable(name, a.op);
    tensor r = call<all_gather_op_t<D>>(dim_attrs{a.comm, a.dim}, g);
    if (a.op == reduce_op::mean) r = r / static_cast<double>(a.comm.size());
    return {r};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    if (is_extreme(a.op)) fail_not_differentiable(name, a.op);
    return t[0].defined() ? call<reduce_scatter_op_t<D>>(a, t[0]) : tensor();
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t, const attrs& a) {
    return {call<reduce_scatter_op_t<D>>(attrs{a.comm, a.dim + 1, a.op}, bdim_to_front(in[0], bdims[0])), 0};
  }
};

template <class D>
struct broadcast_op_t {
  static constexpr const char* name = "xf::dist::broadcast";
  static constexpr bool device_generic = true;  // (NOTE: [Collectives on device tensors])
  using attrs = root_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor& x = in[0];
    if (x.device() == meta) return xfunc::detail::backend::meta_like(x.shape(), x.dtype(), name);
    const comm_state& c = a.comm.state(name);
    const bool dev =
        agree(c, name, call_header(collective_code::broadcast, a.root, 0, 0, x.dtype(), x.shape(), on_device(x)));
    return on_transport(c, x, dev, [&](const transport& t, const tensor& v) {
      tensor out = fresh_copy(v);
      t.broadcast(data_of(out), out.numel(), out.dtype(), a.root, name);
      return out;
    });
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs& a) {
    return {call<reduce_op_t<D>>(a, g)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].defined() ? call<broadcast_op_t<D>>(a, t[0]) : tensor();
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t, const attrs& a) {
    return front_batch<broadcast_op_t<D>>(in, bdims, a);
  }
};

/// The sum of every rank's t on the root, zeros elsewhere: broadcast's transpose.
template <class D>
struct reduce_op_t {
  static constexpr const char* name = "xf::dist::reduce";
  static constexpr bool device_generic = true;  // (NOTE: [Collectives on device tensors])
  using attrs = root_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor& x = in[0];
    if (x.device() == meta) return xfunc::detail::backend::meta_like(x.shape(), x.dtype(), name);
    const comm_state& c = a.comm.state(name);
    const bool dev =
        agree(c, name, call_header(collective_code::reduce, a.root, 0, 0, x.dtype(), x.shape(), on_device(x)));
    return on_transport(c, x, dev, [&](const transport& t, const tensor& v) {
      const tensor src = fresh_copy(v);
      tensor out = xfunc::detail::fill_now(v.shape(), 0.0, v.dtype(), v.device(), name);
      t.reduce_sum(data_of(src), data_of(out), out.numel(), out.dtype(), a.root, name);
      return out;
    });
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs& a) {
    return {call<broadcast_op_t<D>>(a, g)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].defined() ? call<reduce_op_t<D>>(a, t[0]) : tensor();
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t, const attrs& a) {
    return front_batch<reduce_op_t<D>>(in, bdims, a);
  }
};

template <class D>
struct all_to_all_op_t {
  static constexpr const char* name = "xf::dist::all_to_all";
  static constexpr bool device_generic = true;  // (NOTE: [Collectives on device tensors])
  using attrs = all_to_all_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor& x = in[0];
    const comm_state& c = a.comm.state(name);
    const auto sd = static_cast<std::size_t>(a.split_dim), cd = static_cast<std::size_t>(a.concat_dim);
    shape_t out_shape = x.shape();
    out_shape[sd] /= c.size;
    out_shape[cd] *= c.size;
    if (x.device() == meta) return xfunc::detail::backend::meta_like(out_shape, x.dtype(), name);
    const bool dev = agree(c, name, call_header(collective_code::all_to_all, a.split_dim, a.concat_dim, 0, x.dtype(),
                                                x.shape(), on_device(x)));
    return on_transport(c, x, dev, [&](const transport& t, const tensor& v) {
      kernel_scope k;
      // chunk j (along split_dim) is block j of the split dim moved in front
      const tensor src = fresh_copy(a.split_dim == 0 ? v : v.movedim(a.split_dim, 0));
      tensor recv = xfunc::detail::empty_dense(src.shape(), v.dtype(), v.device(), name);
      t.all_to_all(data_of(src), data_of(recv), src.numel() / c.size, v.dtype(), name);
      // recv: [ranks, chunk with its split dim in front] -> [ranks, chunk] -> ranks joined along concat_dim
      shape_t parts = src.shape();
      parts[0] = src.size(0) / c.size;
      parts.insert(0, c.size);
      tensor r = recv.view(parts).movedim(1, a.split_dim + 1).movedim(0, a.concat_dim);
      return r.contiguous().reshape(out_shape);
    });
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs& a) {
    return {call<all_to_all_op_t<D>>(attrs{a.comm, a.concat_dim, a.split_dim}, g)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].defined() ? call<all_to_all_op_t<D>>(a, t[0]) : tensor();
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t, const attrs& a) {
    return {call<all_to_all_op_t<D>>(attrs{a.comm, a.split_dim + 1, a.concat_dim + 1}, bdim_to_front(in[0], bdims[0])), 0};
  }
};

/// A hash of a permutation (for the cross-rank check).
inline std::uint64_t perm_hash(const std::vector<std::pair<int, int>>& perm) {
  std::uint64_t h = fnv_start;
  for (const auto& [s, d] : perm) h = fnv_mix(h, static_cast<std::uint64_t>(s) << 32 | static_cast<std::uint32_t>(d));
  return h;
}

template <class D>
struct ppermute_op_t {
  static constexpr const char* name = "xf::dist::ppermute";
  static constexpr bool device_generic = true;  // (NOTE: [Collectives on device tensors])
  using attrs = ppermute_attrs;
  static tensor kernel(std::span<const tensor> in, const attrs& a) {
    const tensor& x = in[0];
    if (x.device() == meta) return xfunc::detail::backend::meta_like(x.shape(), x.dtype(), name);
    const comm_state& c = a.comm.state(name);
    const bool dev = agree(c, name, call_header(collective_code::ppermute, static_cast<std::int64_t>(a.perm.size()), 0,
                                                perm_hash(a.perm), x.dtype(), x.shape(), on_device(x)));
    int to = -1, from = -1;
    for (const auto& [s, d] : a.perm) {
      if (s == c.rank) to = d;
      if (d == c.rank) from = s;
    }
    return on_transport(c, x, dev, [&](const transport& t, const tensor& v) {
      const tensor src = fresh_copy(v);
      tensor out = xfunc::detail::fill_now(v.shape(), 0.0, v.dtype(), v.device(), name);  // zeros when nothing arrives
      t.send_recv(data_of(src), data_of(out), v.numel(), v.dtype(), to, from, name);
      return out;
    });
  }
  static std::vector<std::pair<int, int>> inverse(const std::vector<std::pair<int, int>>& perm) {
    std::vector<std::pair<int, int>> inv;
    inv.reserve(perm.size());
    for (const auto& [s, d] : perm) inv.emplace_back(d, s);
    return inv;
  }
  static tensor_list vjp(std::span<const tensor>, const tensor&, const tensor& g, const attrs& a) {
    return {call<ppermute_op_t<D>>(attrs{a.comm, inverse(a.perm)}, g)};
  }
  static tensor jvp(std::span<const tensor>, std::span<const tensor> t, const tensor&, const attrs& a) {
    return t[0].defined() ? call<ppermute_op_t<D>>(a, t[0]) : tensor();
  }
  static batched batch(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t, const attrs& a) {
    return front_batch<ppermute_op_t<D>>(in, bdims, a);
  }
};

/// A dim of t (negative counts from the end) for a collective that needs one.
inline std::int64_t collective_dim(const tensor& t, std::int64_t dim, const char* op, const char* what = "dim") {
  if (t.dim() == 0) fail(op, ": needs a tensor with at least one dimension (got a 0-d tensor); unsqueeze it first");
  return xfunc::detail::wrap_dim(dim, t.dim(), what);
}
inline void check_divisible(const tensor& t, std::int64_t dim, int size, const char* op) {
  if (t.size(dim) % size != 0)
    fail(op, ": size ", t.size(dim), " of dim ", dim, " of a tensor of shape ", t.shape(),
         " is not divisible by the number of ranks (", size, "); pad it to a multiple of ", size);
}
inline void check_root(int root, int size, const char* op) {
  if (root < 0 || root >= size) fail(op, ": root ", root, " is not a rank of the communicator (it has ", size, " ranks)");
}
}  // namespace detail

/// The reduction of every rank's t (same shape and dtype on every rank), on every rank.
template <int = 0>
tensor all_reduce(const tensor& t, reduce_op op = reduce_op::sum, const communicator& comm = world()) {
  const char* name = detail::all_reduce_op::name;
  detail::check_arguments(t, comm, name, detail::collective_code::all_reduce, [&] {
    detail::check_reduce_op(t, op, name);
  });
  comm.state(name);
  return detail::call<detail::all_reduce_op>({comm, op}, t);
}
/// Every rank's t, joined along `dim` in rank order.
template <int = 0>
tensor all_gather(const tensor& t, std::int64_t dim = 0, const communicator& comm = world()) {
  const char* name = detail::all_gather_op::name;
  comm.state(name);
  std::int64_t d = 0;
  detail::check_arguments(t, comm, name, detail::collective_code::all_gather,
                          [&] { d = detail::collective_dim(t, dim, name); });
  return detail::call<detail::all_gather_op>({comm, d}, t);
}
/// Chunk `rank` along `dim` of the reduction of every rank's t; t.size(dim) must be divisible by
/// the number of ranks.
template <int = 0>
tensor reduce_scatter(const tensor& t, std::int64_t dim = 0, reduce_op op = reduce_op::sum,
                             const communicator& comm = world()) {
  const char* name = detail::reduce_scatter_op::name;
  const int size = comm.state(name).size;
  std::int64_t d = 0;
  detail::check_arguments(t, comm, name, detail::collective_code::reduce_scatter, [&] {
    d = detail::collective_dim(t, dim, name);
    detail::check_divisible(t, d, size, name);
    detail::check_reduce_op(t, op, name);
  });
  return detail::call<detail::reduce_scatter_op>({comm, d, op}, t);
}
/// The root's t on every rank (every rank passes a tensor of the root's shape and dtype).
template <int = 0>
tensor broadcast(const tensor& t, int root = 0, const communicator& comm = world()) {
  const char* name = detail::broadcast_op::name;
  const int size = comm.state(name).size;
  detail::check_arguments(t, comm, name, detail::collective_code::broadcast, [&] { detail::check_root(root, size, name); });
  return detail::call<detail::broadcast_op>({comm, root}, t);
}
/// The sum of every rank's t on the root; zeros on the other ranks (broadcast's transpose).
template <int = 0>
tensor reduce(const tensor& t, int root = 0, const communicator& comm = world()) {
  const char* name = detail::reduce_to_root_op::name;
  const int size = comm.state(name).size;
  detail::check_arguments(t, comm, name, detail::collective_code::reduce, [&] { detail::check_root(root, size, name); });
  return detail::call<detail::reduce_to_root_op>({comm, root}, t);
}
/// t cut into `size` chunks along split_dim, chunk j sent to rank j; the chunks received are
/// joined along concat_dim in rank order.
template <int = 0>
tensor all_to_all(const tensor& t, std::int64_t split_dim, std::int64_t concat_dim,
                         const communicator& comm = world()) {
  const char* name = detail::all_to_all_op::name;
  const int size = comm.state(name).size;
  std::int64_t s = 0, c = 0;
  detail::check_arguments(t, comm, name, detail::collective_code::all_to_all, [&] {
    s = detail::collective_dim(t, split_dim, name, "split_dim");
    c = detail::collective_dim(t, concat_dim, name, "concat_dim");
    detail::check_divisible(t, s, size, name);
  });
  return detail::call<detail::all_to_all_op>({comm, s, c}, t);
}
/// Sends t from each source rank to its destination in `perm` ((source, destination) pairs, each
/// rank at most once as a source and once as a destination); a rank that receives nothing gets
/// zeros.
template <int = 0>
tensor ppermute(const tensor& t, const std::vector<std::pair<int, int>>& perm, const communicator& comm = world()) {
  const char* name = detail::ppermute_op::name;
  const int size = comm.state(name).size;
  detail::check_arguments(t, comm, name, detail::collective_code::ppermute, [&] {
    std::vector<char> is_src(static_cast<std::size_t>(size)), is_dst(static_cast<std::size_t>(size));
    for (const auto& [s, d] : perm) {
      if (s < 0 || s >= size || d < 0 || d >= size)
        xfunc::detail::fail(name, ": the pair (", s, ", ", d, ") names a rank outside [0, ", size, ")");
      if (is_src[static_cast<std::size_t>(s)]++ || is_dst[static_cast<std::size_t>(d)]++)
        xfunc::detail::fail(name, ": rank ", is_src[static_cast<std::size_t>(s)] > 1 ? s : d,
                            " appears more than once as a ", is_src[static_cast<std::size_t>(s)] > 1 ? "source" : "destination",
                            "; each rank may send at most once and receive at most once");
    }
  });
  return detail::call<detail::ppermute_op>({comm, perm}, t);
}

}  // namespace xfunc::dist
