#pragma once
/// \file
/// The CUDA backend behind the dispatcher: device memory and copies for the core (NOTE: [Device
/// backends]) and the cuda kernels of the ops (NOTE: [Device dispatch]). Included by xfunc.hpp
/// when the program is built with xfunc::cuda (XFUNC_WITH_CUDA); registers itself at start-up.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <xfunc/cuda/cublas.hpp>
#include <xfunc/cuda/kernel_args.hpp>
#include <xfunc/cuda/runtime.hpp>
#include <xfunc/xfunc.hpp>  // every op (their rules call one another); it includes this header last

namespace xfunc::detail::cuda {

/// The dtype's part of a kernel name (xf_exp_f32).
inline const char* dtype_tag(dtype dt) {
  switch (dt) {
    case dtype::float32: return "f32";
    case dtype::float64: return "f64";
    case dtype::int64: return "i64";
    case dtype::boolean: return "b8";
  }
  return "?";
}
/// The kernel for op `op_name` ("xf::exp") in dtype dt: "xf_exp_f32".
inline std::string kernel_name(const char* op_name, dtype dt) {
  return str_cat("xf_", op_name + 4, "_", dtype_tag(dt));  // op names start with "xf::"
}

inline device_context context_of(device d, const char* op) { return context_for(d.index, op); }

/// The address of t's first element (on its own device), as bytes; a deferred value is computed
/// first, and so is every deferred value reading t's buffer (the caller may write it).
inline std::byte* first_byte(const tensor& t) {
  const tensor_impl& p = *t.impl();
  p.prepare_access();
  return p.store->data + p.offset * static_cast<std::int64_t>(dtype_size(p.dt));
}

/// The elementwise arguments for writing `out` (any strides: a fresh tensor, or a view written
/// in place) from `in` broadcast to out's shape. Dims of size 1 are dropped and dims that every
/// operand walks as one are merged, so that most launches index few dims.
inline elementwise_args elementwise_layout(const tensor& out, std::initializer_list<const tensor*> in, const char* op) {
  elementwise_args a;
  a.n = out.numel();
  a.out = first_byte(out);
  const shape_t& shape = out.shape();
  const std::int64_t nd = static_cast<std::int64_t>(shape.size());
  const int n_in = static_cast<int>(in.size());
  bool contiguous = backend::is_contiguous_layout(shape, out.impl()->strides);
  int k = 0;
  for (const tensor* t : in) {
    if (t->device() == cpu) {  // a 0-d cpu tensor: a scalar, passed by value (NOTE: [Scalar operands])
      const tensor v = backend::contiguous_as(*t, t->dtype());
      v.impl()->prepare_access();
      std::memcpy(&a.scalar_bits[k], first_byte(v), dtype_size(v.dtype()));
      a.in[k++] = nullptr;  // (its strides stay 0: it broadcasts, and is read at no offset)
      continue;
    }
    a.in[k++] = first_byte(*t);
    const tensor_impl& p = *t->impl();
    contiguous = contiguous && p.shape == shape && backend::is_contiguous_layout(p.shape, p.strides);
  }
  a.contiguous = contiguous ? 1 : 0;
  if (contiguous) return a;
  // operand k's stride along out's dim d (0 where an input is broadcast); k == n_in is out
  const auto stride_of = [&](int k, std::int64_t d) -> long long {
    const tensor_impl& p = k == n_in ? *out.impl() : *in.begin()[k]->impl();
    const std::int64_t pd = d - (nd - static_cast<std::int64_t>(p.shape.size()));
    return pd < 0 || p.shape[static_cast<std::size_t>(pd)] == 1 ? 0 : p.strides[static_cast<std::size_t>(pd)];
  };
  const auto slot = [&](int k) { return k == n_in ? out_operand : k; };
  // from the innermost dim out, filled innermost first, then reversed into row-major order
  int m = 0;
  for (std::int64_t d = nd; d-- > 0;) {
    const long long size = shape[static_cast<std::size_t>(d)];
    if (size == 1) continue;
    bool merge = m > 0;  // dim d steps through every operand as a run of the dim merged last
    for (int k = 0; merge && k <= n_in; ++k)
      merge = stride_of(k, d) == a.strides[slot(k)][m - 1] * a.sizes[m - 1];
    if (merge) {
      a.sizes[m - 1] *= size;
      continue;
    }
    if (m == max_kernel_dims)
      fail(op, ": on cuda an operand may have at most ", max_kernel_dims,
           " dims that cannot be merged; make it contiguous first (.contiguous())");
    a.sizes[m] = size;
    for (int k = 0; k <= n_in; ++k) a.strides[slot(k)][m] = stride_of(k, d);
    ++m;
  }
  a.ndim = m;
  std::reverse(a.sizes, a.sizes + m);
  for (auto& s : a.strides) std::reverse(s, s + m);
  return a;
}

/// out = kernel(in...) elementwise, for a fresh `out` of `shape`.
inline tensor elementwise(const std::string& kernel, const shape_t& shape, dtype out_dt, std::initializer_list<const tensor*> in,
                          const char* op) {
  device d = cpu;  // the device of the first operand that is not a scalar (NOTE: [Scalar operands])
  for (const tensor* t : in)
    if (t->device() != cpu) {
      d = t->device();
      break;
    }
  tensor out = empty_dense(shape, out_dt, d, op);
  if (out.numel() == 0) return out;
  const device_context c = context_of(d, op);
  launch(c, kernel, out.numel(), elementwise_layout(out, in, op), op);
  return out;
}

/// The kernel that copies dtype `from` into dtype `to`.
inline std::string cast_kernel(dtype from, dtype to) { return str_cat("xf_cast_", dtype_tag(from), "_", dtype_tag(to)); }

/// A contiguous copy of x in dtype dt (clone, to(dtype), and the layout fix-ups below).
inline tensor convert(const tensor& x, dtype dt, const char* op) {
  return elementwise(cast_kernel(x.dtype(), dt), x.shape(), dt, {&x}, op);
}
/// x converted to dtype dt (itself when it has it; a scalar operand, a 0-d cpu tensor, on the cpu:
/// NOTE: [Scalar operands]). Kernels call the backend's own functions, never ops: an op called
/// here would be traced by make_fx, and a view would be a copy under
/// functionalize(remove::mutations_and_views) (NOTE: [Views as copies]).
inline tensor as_dtype(const tensor& x, dtype dt, const char* op) {
  if (x.dtype() == dt) return x;
  return x.device() == cpu ? backend::contiguous_as(x, dt) : convert(x, dt, op);
}

/// Writes src (broadcast to dst's shape, converted to its dtype) through dst's strides.
inline void copy_into(const tensor& dst, const tensor& src, const char* op) {
  if (dst.numel() == 0) return;
  launch(context_of(dst.device(), op), cast_kernel(src.dtype(), dst.dtype()), dst.numel(),
         elementwise_layout(dst, {&src}, op), op);
}

// ---- the core's table (NOTE: [Device backends]) ----

inline std::byte* allocate(device d, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const device_context c = context_for(d.index, "xf: cuda allocation");
  return static_cast<std::byte*>(
      device_allocator().allocate(d.index, reinterpret_cast<std::uintptr_t>(c.stream), bytes));
}
inline void release(device, std::byte* p) { device_allocator().free(p); }

inline tensor upload(const tensor& host, device d) {
  const tensor src = backend::contiguous_as(host, host.dtype());
  tensor out = empty_dense(host.shape(), host.dtype(), d, "xf::to");
  const std::size_t bytes = static_cast<std::size_t>(host.numel()) * dtype_size(host.dtype());
  if (bytes == 0) return out;
  src.impl()->prepare_access();  // (a deferred cpu value is computed first)
  const device_context c = context_of(d, "xf::to");
  copy_to_device(c, first_byte(out), first_byte(src), bytes, "xf::to");
  // memory another library owns may be pinned, which the copy reads later: wait for it
  if (src.impl()->store->shared_externally.load(std::memory_order_acquire)) synchronize(c, "xf::to");
  return out;
}
inline tensor download(const tensor& t) {
  const tensor src = backend::is_contiguous_layout(t.shape(), t.impl()->strides) ? t : convert(t, t.dtype(), "xf::to");
  tensor out = empty_dense(t.shape(), t.dtype(), cpu, "xf::to");
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
  copy_to_host(context_of(t.device(), "xf::to"), first_byte(out), first_byte(src), bytes, "xf::to");
  return out;
}
inline void fill(const tensor& t, double v) {
  elementwise_args a = elementwise_layout(t, {}, "xf::full");
  a.scalar = v;
  launch(context_of(t.device(), "xf::full"), str_cat("xf_fill_", dtype_tag(t.dtype())), t.numel(), a, "xf::full");
}

inline void synchronize_thread(device d, const char* what) { synchronize(context_of(d, what), what); }

/// rand and randn on the device: one thread per Philox block (NOTE: [Philox streams]).
inline void fill_random(const tensor& t, bool normal, std::uint64_t key, std::uint64_t offset) {
  const char* op = normal ? "xf::randn" : "xf::rand";
  random_args a;
  a.n = t.numel();
  a.out = first_byte(t);
  a.key = key;
  a.offset = offset;
  visit_floating(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(context_of(t.device(), op), str_cat(normal ? "xf_normal_" : "xf_uniform_", dtype_tag(t.dtype())),
           backend::blocks_for<T>(a.n), a, op);
  });
}

inline void write(const tensor& dst, const tensor& src, const char* op) {
  tensor s = src.device() == dst.device() ? src : upload(src.device() == cpu ? src : download(src), dst.device());
  // a value that shares dst's memory (copy_ from a view of it) is copied out before the write
  if (s.impl()->store == dst.impl()->store) s = convert(s, s.dtype(), op);
  copy_into(dst, s, op);
}

// ---- op kernels (NOTE: [Device dispatch]); each computes in the dtype its cpu kernel does ----

template <class D>
tensor unary_kernel(std::span<const tensor> in, const no_attrs&) {
  if (tensor r = backend::defer_unary<D>(in[0]); r.defined()) return r;  // NOTE: [Fused device programs]
  const dtype dt = in[0].dtype();
  check_boolean_operand<D>(dt);
  const dtype c = D::keeps_dtype ? (dt == dtype::boolean ? dtype::int64 : dt) : promote_with_double(dt);
  const tensor x = as_dtype(in[0], c, D::name);
  return elementwise(kernel_name(D::name, c), x.shape(), c, {&x}, D::name);
}

template <class D>
tensor binary_kernel(std::span<const tensor> in, const no_attrs&) {
  const dtype c = D::compute_dtype(in[0].dtype(), in[1].dtype());
  const bool boolean = gives_boolean<D>(in[0].dtype(), in[1].dtype());  // (xf_add_b8: bool in, bool out)
  if constexpr (!D::types::bool_out)
    if (!boolean)
      if (tensor r = backend::defer_binary<D>(in[0], in[1], c); r.defined()) return r;  // NOTE: [Fused device programs]
  const dtype out_dt = boolean || D::types::bool_out ? dtype::boolean : c;
  const shape_t shape = broadcast_shapes(in[0].shape(), in[1].shape(), D::name);
  check_shape(shape, D::name, dtype_size(out_dt));
  if (boolean) return elementwise(kernel_name(D::name, dtype::boolean), shape, out_dt, {&in[0], &in[1]}, D::name);
  const tensor a = as_dtype(in[0], c, D::name), b = as_dtype(in[1], c, D::name);
  return elementwise(kernel_name(D::name, c), shape, out_dt, {&a, &b}, D::name);
}

template <class D>
tensor comparison_kernel(std::span<const tensor> in, const no_attrs&) {
  const dtype c = arithmetic_dtype(in[0].dtype(), in[1].dtype());
  const shape_t shape = broadcast_shapes(in[0].shape(), in[1].shape(), D::name);
  const tensor a = as_dtype(in[0], c, D::name), b = as_dtype(in[1], c, D::name);
  return elementwise(kernel_name(D::name, c), shape, dtype::boolean, {&a, &b}, D::name);
}

inline tensor where_kernel(std::span<const tensor> in, const no_attrs&) {
  constexpr const char* name = where_op::name;
  const dtype dt = promote(in[1].dtype(), in[2].dtype());
  const shape_t shape = broadcast_shapes(broadcast_shapes(in[0].shape(), in[1].shape(), name), in[2].shape(), name);
  check_shape(shape, name, dtype_size(dt));
  const tensor c = as_dtype(in[0], dtype::boolean, name), a = as_dtype(in[1], dt, name), b = as_dtype(in[2], dt, name);
  return elementwise(kernel_name(name, dt), shape, dt, {&c, &a, &b}, name);
}

inline tensor to_dtype_kernel(std::span<const tensor> in, const to_dtype_op::attrs& a) {
  return convert(in[0], a.dt, to_dtype_op::name);
}
inline tensor clone_kernel(std::span<const tensor> in, const no_attrs&) {
  return convert(in[0], in[0].dtype(), clone_op::name);
}

inline tensor cat_kernel(std::span<const tensor> in, const cat_op::attrs& a) {
  dtype dt;
  bool is_meta;
  const shape_t shape = cat_op::result(in, a, dt, is_meta);  // (a meta input is refused before this)
  tensor out = empty_dense(shape, dt, in[0].device(), cat_op::name);
  std::int64_t start = 0;
  const auto du = static_cast<std::size_t>(a.dim);
  const shape_t& st = out.impl()->strides;
  for (const tensor& t : in) {
    copy_into(alias_of(out, t.shape(), st, start * st[du]), t, cat_op::name);  // out's slice for t
    start += t.shape()[du];
  }
  return out;
}

/// How many threads share each of n_out outputs of m elements (NOTE: [Split reductions]): enough
/// for about 2^20 threads in all, each folding at least 128 elements, in whole warps.
inline long long reduction_splits(long long n_out, long long m) {
  constexpr long long target_threads = 1LL << 20, min_per_thread = 128;
  if (n_out >= target_threads || m < 2 * min_per_thread) return 1;
  long long s = std::min((target_threads + n_out - 1) / n_out, m / min_per_thread);
  if (s >= 32) s -= s % 32;
  return s;
}

/// A reduction over a.dims of x (already in its compute dtype) by kernel `kernel` into dtype
/// out_dt; over no elements every output is `empty_value` (the extremes and argmax refuse empty
/// dims before they get here). Kernels that split (NOTE: [Split reductions]) give the dtype of
/// their accumulator, `partial_dt`.
inline tensor reduce(const tensor& x, const reduce_attrs& a, const std::string& kernel, const char* op,
                     double empty_value = 0.0, std::optional<dtype> out_dt = std::nullopt,
                     std::optional<dtype> partial_dt = std::nullopt, const tensor* shift = nullptr) {
  check_reduce_dims(x, a.dims);
  const std::int64_t m = reduced_count(x.shape(), a.dims, op);
  tensor out = empty_dense(reduced_shape(x.shape(), a.dims, a.keepdim), out_dt.value_or(x.dtype()), x.device(), op);
  if (out.numel() == 0) return out;
  if (m == 0) {
    fill(out, empty_value);
    return out;
  }
  const tensor_impl& p = *x.impl();
  reduce_args r;
  r.n_out = out.numel();
  r.m = m;
  for (std::size_t d = 0; d < p.shape.size(); ++d) {
    const bool reduced = std::find(a.dims.begin(), a.dims.end(), static_cast<std::int64_t>(d)) != a.dims.end();
    if (p.shape[d] == 1) continue;  // (indexes nothing)
    int& nd = reduced ? r.reduced_ndim : r.kept_ndim;
    if (nd == max_kernel_dims)
      fail(op, ": on cuda a reduction handles at most ", max_kernel_dims, " kept and ", max_kernel_dims, " reduced dims");
    (reduced ? r.reduced_sizes : r.kept_sizes)[nd] = p.shape[d];
    (reduced ? r.reduced_strides : r.kept_strides)[nd] = p.strides[d];
    ++nd;
  }
  // neighbouring threads read neighbouring elements: along the reduced dim when it is the
  // contiguous one, else across outputs
  r.outputs_fast = r.reduced_ndim == 0 || r.reduced_strides[r.reduced_ndim - 1] != 1;
  r.in = first_byte(x);
  if (shift) r.shift = first_byte(*shift);
  const device_context c = context_of(x.device(), op);
  tensor partials;  // the last level's accumulators, read by the next
  for (;;) {
    r.splits = partial_dt ? reduction_splits(r.n_out, r.m) : 1;
    const tensor level = r.splits == 1 ? out : empty_dense({r.n_out * r.splits}, *partial_dt, x.device(), op);
    r.out = first_byte(level);
    launch(c, kernel, r.n_out * r.splits, r, op);
    if (r.splits == 1) return out;
    partials = level;  // (freed once queued work is done: the allocator's blocks are stream-ordered)
    r.in = first_byte(partials);
    r.m = r.splits;
    r.from_partials = 1;
    r.outputs_fast = 0;
  }
}
/// The accumulator of the summing kernels (sum, prod, norm): double for floating dtypes, int64
/// for the others.
inline dtype sum_accumulator(dtype dt) { return is_floating(dt) ? dtype::float64 : dtype::int64; }
inline tensor sum_kernel(std::span<const tensor> in, const reduce_attrs& a) {
  const dtype dt = is_floating(in[0].dtype()) ? in[0].dtype() : dtype::int64;
  return reduce(as_dtype(in[0], dt, sum_op::name), a, kernel_name(sum_op::name, dt), sum_op::name, 0.0, std::nullopt,
                sum_accumulator(dt));
}
template <class D>
tensor extreme_kernel(std::span<const tensor> in, const reduce_attrs& a) {
  check_extreme_dims(in[0], a.dims, D::name);
  const dtype dt = in[0].dtype() == dtype::boolean ? dtype::int64 : in[0].dtype();
  const tensor r = reduce(as_dtype(in[0], dt, D::name), a, kernel_name(D::name, dt), D::name, 0.0, std::nullopt, dt);
  return as_dtype(r, in[0].dtype(), D::name);  // (booleans compared as int64 stay boolean, as on the cpu)
}
inline tensor argmax_kernel(std::span<const tensor> in, const reduce_attrs& a) {
  check_extreme_dims(in[0], a.dims, argmax_op::name);
  const dtype dt = in[0].dtype() == dtype::boolean ? dtype::int64 : in[0].dtype();
  return reduce(as_dtype(in[0], dt, argmax_op::name), a, kernel_name(argmax_op::name, dt), argmax_op::name, 0.0, dtype::int64);
}
inline tensor prod_kernel(std::span<const tensor> in, const reduce_attrs& a) {
  const dtype dt = is_floating(in[0].dtype()) ? in[0].dtype() : dtype::int64;
  return reduce(as_dtype(in[0], dt, prod_op::name), a, kernel_name(prod_op::name, dt), prod_op::name, 1.0, std::nullopt,
                sum_accumulator(dt));
}
/// norm: floating (integers promoted as a double scalar would); over nothing 0.
inline tensor norm_kernel(std::span<const tensor> in, const reduce_attrs& a) {
  const dtype dt = promote_with_double(in[0].dtype());
  return reduce(as_dtype(in[0], dt, norm_op::name), a, kernel_name(norm_op::name, dt), norm_op::name, 0.0, std::nullopt,
                dtype::float64);
}
/// The largest value of x over dims (kept as size-1 dims) and the sum of exp(x - it), in double
/// (NOTE: [Split reductions]): what softmax, log_softmax and logsumexp need; x is floating.
inline std::pair<tensor, tensor> max_and_sum_exp(const tensor& x, const dims_t& dims, const char* op) {
  const dtype dt = x.dtype();
  const reduce_attrs kept{dims, true};
  const tensor largest = reduce(x, kept, kernel_name(amax_op::name, dt), op, 0.0, std::nullopt, dt);
  const tensor sum = reduce(x, kept, str_cat("xf_sum_exp_", dtype_tag(dt)), op, 0.0, dtype::float64, dtype::float64, &largest);
  return {largest, sum};
}
/// logsumexp: floating (integers promoted as a double scalar would); over nothing -inf.
inline tensor logsumexp_kernel(std::span<const tensor> in, const reduce_attrs& a) {
  constexpr const char* name = logsumexp_op::name;
  const dtype dt = promote_with_double(in[0].dtype());
  const tensor x = as_dtype(in[0], dt, name);
  check_reduce_dims(x, a.dims);
  tensor out = empty_dense(reduced_shape(x.shape(), a.dims, a.keepdim), dt, x.device(), name);
  if (out.numel() == 0) return out;
  if (reduced_count(x.shape(), a.dims, name) == 0) {
    fill(out, -std::numeric_limits<double>::infinity());
    return out;
  }
  const auto [largest, sum] = max_and_sum_exp(x, a.dims, name);
  // both hold one value per output, in the output's order: seen with its shape
  const shape_t& st = out.impl()->strides;
  const tensor l = alias_of(largest, out.shape(), st, 0), s = alias_of(sum, out.shape(), st, 0);
  launch(context_of(x.device(), name), kernel_name(name, dt), out.numel(), elementwise_layout(out, {&s, &l}, name), name);
  return out;
}

/// f(x, scalar, scalar2) elementwise by kernel `kernel`, in dtype dt.
inline tensor unary_with_scalars(const tensor& x, dtype dt, const std::string& kernel, double s1, double s2,
                                 const char* op) {
  const tensor xc = as_dtype(x, dt, op);
  tensor out = empty_dense(x.shape(), dt, x.device(), op);
  if (out.numel() == 0) return out;
  elementwise_args e = elementwise_layout(out, {&xc}, op);
  e.scalar = s1;
  e.scalar2 = s2;
  launch(context_of(x.device(), op), kernel, out.numel(), e, op);
  return out;
}
inline tensor pow_scalar_kernel(std::span<const tensor> in, const pow_scalar_op::attrs& a) {
  const dtype c = promote_with_double(in[0].dtype());
  return unary_with_scalars(in[0], c, str_cat("xf_pow_scalar_", dtype_tag(c)), a.p, 0.0, pow_scalar_op::name);
}
inline tensor clamp_kernel(std::span<const tensor> in, const clamp_op::attrs& a) {
  const dtype c = promote_with_double(in[0].dtype());  // (an integer tensor becomes float32, as on cpu)
  return unary_with_scalars(in[0], c, kernel_name(clamp_op::name, c), a.lo, a.hi, clamp_op::name);
}
inline tensor logical_not_kernel(std::span<const tensor> in, const no_attrs&) {
  const dtype c = in[0].dtype() == dtype::boolean ? dtype::int64 : in[0].dtype();
  const tensor x = as_dtype(in[0], c, logical_not_op::name);
  return elementwise(kernel_name(logical_not_op::name, c), x.shape(), dtype::boolean, {&x}, logical_not_op::name);
}

// ---- index ops: the indices are checked on the host first (the kernels cannot throw), which
// waits for the device; the message is the cpu's (the first bad index in row-major order) ----

/// Throws, as the cpu kernels do, when an index is outside [-n, n) for dimension `dim`.
inline void check_indices(const tensor& index, std::int64_t dim, std::int64_t n, const char* op) {
  if (index.numel() == 0) return;
  const tensor host = download(index);
  const std::int64_t* p = host.impl()->data<std::int64_t>();
  for (std::int64_t i = 0; i < host.numel(); ++i)
    if (!backend::index_in_range(p[i], n)) backend::fail_index(op, p[i], dim, n);
}
/// t with its stride along dim set to 0 (the index kernels add the indexed offset themselves).
inline tensor without_stride(const tensor& t, std::int64_t dim) {
  shape_t st = t.impl()->strides;
  if (!st.empty()) st[static_cast<std::size_t>(dim)] = 0;
  return alias_of(t, t.shape(), st, t.impl()->offset);
}
/// out[i] = t[..., wrap(index[i]), ...] along dim, for an index of out's shape (any strides).
inline tensor gather_along(const tensor& t, std::int64_t dim, const tensor& index, const shape_t& shape, const char* op) {
  const std::int64_t n = t.dim() ? t.size(dim) : 1;
  check_indices(index, dim, n, op);
  tensor out = empty_dense(shape, t.dtype(), t.device(), op);
  if (out.numel() == 0) return out;
  // t restricted to the index's extents (gather's index may be smaller in the other dims)
  const tensor src = without_stride(t, dim);
  const tensor view = alias_of(src, shape, src.impl()->strides, src.impl()->offset);
  elementwise_args e = elementwise_layout(out, {&view, &index}, op);
  e.index_stride = t.dim() ? t.impl()->strides[static_cast<std::size_t>(dim)] : 0;
  launch(context_of(t.device(), op), kernel_name("xf::gather", t.dtype()), out.numel(), e, op);
  return out;
}
inline tensor gather_kernel(std::span<const tensor> in, const gather_op::attrs& a) {
  const tensor &t = in[0], &index = in[1];
  gather_op::check(t, index, a);
  return gather_along(t, a.dim, as_dtype(index, dtype::int64, gather_op::name), index.shape(), gather_op::name);
}
/// index_select: a gather whose (1-d) index is broadcast along the other dims.
inline tensor index_select_kernel(std::span<const tensor> in, const index_select_op::attrs& a) {
  constexpr const char* name = index_select_op::name;
  const tensor &t = in[0], index = as_dtype(in[1], dtype::int64, name);
  shape_t s = t.shape();
  if (!s.empty()) s[static_cast<std::size_t>(a.dim)] = index.numel();
  check_shape(s, name, dtype_size(t.dtype()));
  if (s.empty() && index.numel() != 1) fail(name, ": a 0-d input takes an index of one element, got ", index.numel());
  shape_t ist(s.size(), 0);
  if (!s.empty()) ist[static_cast<std::size_t>(a.dim)] = index.dim() ? index.impl()->strides[0] : 0;
  return gather_along(t, a.dim, alias_of(index, s, ist, index.impl()->offset), s, name);
}
inline tensor scatter_add_kernel(std::span<const tensor> in, const scatter_add_op::attrs& a) {
  constexpr const char* name = scatter_add_op::name;
  const tensor &base = in[0], index = as_dtype(in[1], dtype::int64, name);
  const dtype dt = promote(base.dtype(), in[2].dtype());
  tensor out = convert(base, dt, name);  // a fresh buffer, added into
  const std::int64_t n = base.dim() ? base.size(a.dim) : 1;
  check_indices(index, a.dim, n, name);
  if (index.numel() == 0) return out;
  // the source read at the index's positions (its extents may be larger), as dtype dt
  const tensor src = as_dtype(in[2], dt, name);
  shape_t sst(index.shape().size(), 0);
  for (std::size_t d = 0; d < sst.size() && d < src.shape().size(); ++d)
    sst[d] = src.shape()[d] == 1 ? 0 : src.impl()->strides[d];
  const tensor src_view = alias_of(src, index.shape(), sst, src.impl()->offset);
  const tensor target = alias_of(without_stride(out, a.dim), index.shape(), without_stride(out, a.dim).impl()->strides, 0);
  elementwise_args e = elementwise_layout(target, {&src_view, &index}, name);
  e.index_stride = out.dim() ? out.impl()->strides[static_cast<std::size_t>(a.dim)] : 0;
  launch(context_of(out.device(), name), kernel_name(name, dt), index.numel(), e, name);
  return out;
}

/// xf::bmm through cuBLAS's strided-batched GEMM: row-major C = A B is column-major
/// C^T = B^T A^T, so B is BLAS's first operand. Each operand is used in place when one of its
/// matrix strides is 1 (BLAS reads it transposed or not) and its batch stride is anything
/// (0 for an operand expanded over the batch); otherwise a contiguous copy is made.
inline tensor bmm_kernel(std::span<const tensor> in, const no_attrs&) {
  constexpr const char* name = bmm_op::name;
  dtype dt = promote(in[0].dtype(), in[1].dtype());
  if (!is_floating(dt))
    fail(name, ": on cuda matrix products need floating tensors (cuBLAS), got ", dt, "; convert with .to(xf::f32)");
  tensor a = as_dtype(in[0], dt, name), b = as_dtype(in[1], dt, name);
  const long long P = a.size(0), n = a.size(1), k = a.size(2), m = b.size(2);
  tensor out = empty_dense({P, n, m}, dt, a.device(), name);
  if (out.numel() == 0) return out;
  if (k == 0) {
    fill(out, 0.0);
    return out;
  }
  auto layout = [&](tensor& t, long long rows, long long cols) {
    blas_layout l = blas_layout_of(rows, cols, t.impl()->strides[1], t.impl()->strides[2]);
    if (!l.usable) {
      t = convert(t, dt, name);
      l = blas_layout_of(rows, cols, t.impl()->strides[1], t.impl()->strides[2]);
    }
    return l;
  };
  const blas_layout la = layout(a, n, k), lb = layout(b, k, m);
  constexpr long long int_max = INT_MAX;
  if (P > int_max || n > int_max || k > int_max || m > int_max || la.ld > int_max || lb.ld > int_max)
    fail(name, ": on cuda each extent and leading dimension of a matrix product must fit in 32 bits (cuBLAS), got [", P,
         ", ", n, ", ", k, "] x [", P, ", ", k, ", ", m, "]");
  const device_context c = context_of(a.device(), name);
  cublasHandle_t h = cublas_handle(c, name);
  // BLAS's op(first) is B^T (m x k): B stored row by row reads as B^T already (no transpose)
  const cublasOperation_t op_b = lb.transposed ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_a = la.transposed ? CUBLAS_OP_N : CUBLAS_OP_T;
  const long long sa = a.size(0) == 1 ? 0 : a.impl()->strides[0], sb = b.size(0) == 1 ? 0 : b.impl()->strides[0];
  tls_last_op = name;
  visit_floating(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T one = 1, zero = 0;
    const T* pa = a.impl()->device_data<T>();
    const T* pb = b.impl()->device_data<T>();
    T* pc = out.impl()->device_data<T>();
    const auto gemm = [&](auto strided_batched) {
      check_cublas(strided_batched(h, op_b, op_a, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &one,
                                   pb, static_cast<int>(lb.ld), sb, pa, static_cast<int>(la.ld), sa, &zero, pc,
                                   static_cast<int>(m), n * m, static_cast<int>(P)),
                   name);
    };
    if constexpr (std::is_same_v<T, float>) gemm(cublas().sgemm_strided_batched);
    else gemm(cublas().dgemm_strided_batched);
  });
  return out;
}

/// softmax and log_softmax over one dim (or each element alone, dim < 0): the largest value and
/// the sum of exp(x - it) along the dim, then one elementwise pass.
template <class D>
tensor normalize_kernel(std::span<const tensor> in, const normalize_attrs& a) {
  const dtype dt = is_floating(in[0].dtype()) ? in[0].dtype() : promote_with_double(in[0].dtype());
  const tensor x = as_dtype(in[0], dt, D::name);
  tensor out = empty_dense(x.shape(), dt, x.device(), D::name);
  if (out.numel() == 0) return out;
  const auto [largest, sum] = max_and_sum_exp(x, a.dims(), D::name);
  launch(context_of(x.device(), D::name), kernel_name(D::name, dt), out.numel(),
         elementwise_layout(out, {&x, &largest, &sum}, D::name), D::name);
  return out;
}

/// A deferred program of this device, computed into `out` by one launch (NOTE: [Fused device
/// programs]). Its leaves are read through their buffers directly: settling them (first_byte)
/// would find this very program among their readers.
inline void evaluate_deferred(const deferred_value& v, std::byte* out) {
  static_assert(fused_max_steps == deferred_value::max_steps && fused_max_leaves == deferred_value::max_leaves);
  fused_args a;
  a.n = v.numel;
  a.out = out;
  std::uintptr_t addresses = reinterpret_cast<std::uintptr_t>(out);
  for (std::size_t j = 0; j < v.n_leaves; ++j) {
    const tensor_impl& l = *v.leaves[j];
    a.leaves[j] = l.store->data + l.offset * static_cast<std::int64_t>(v.elem_size);
    addresses |= reinterpret_cast<std::uintptr_t>(a.leaves[j]);
  }
  a.n_leaves = static_cast<int>(v.n_leaves);
  a.aligned = addresses % 16 == 0;
  for (std::size_t k = 0; k < v.n_steps; ++k) {
    const deferred_step& s = v.steps[k];
    a.steps[k] = {s.device_op, static_cast<int>(s.form), s.a, s.b, 0, s.scalar};
    // a result read by a step other than the next one is kept (the kernel holds the last in a register)
    for (std::size_t later = k + 2; later < v.n_steps; ++later)
      if (v.steps[later].a == static_cast<int>(k) || v.steps[later].b == static_cast<int>(k)) a.steps[k].keep = 1;
  }
  a.n_steps = static_cast<int>(v.n_steps);
  const long long per_thread = 16 / static_cast<long long>(v.elem_size);
  launch(context_of(v.dev, "xf"), str_cat("xf_fused_", dtype_tag(v.dt)), (a.n + per_thread - 1) / per_thread, a,
         "a fused pointwise program (xf::add, xf::exp, ...)");
}

template <class... D>
void register_comparison() { ((cuda_kernel_of<D> = &comparison_kernel<D>), ...); }
/// Ops whose cuda kernels take 0-d cpu tensors by value (NOTE: [Scalar operands]).
template <class... D>
void takes_scalars() { ((cuda_kernel_takes_scalars<D> = true), ...); }

/// Fills in the core's table and the ops' cuda kernels (once, at start-up).
inline bool register_backend() {
  static const device_backend table{&allocate, &release,           &upload,      &download,         &fill,
                                    &write,    &synchronize_thread, &fill_random, &evaluate_deferred};
  cuda_backend_slot() = &table;
  // the arithmetic ops: their kernels, and their numbers in fused programs (NOTE: [Fused device programs])
#define XFUNC_CUDA_REGISTER(op, kernel)              \
  cuda_kernel_of<op##_op> = &kernel<op##_op>; \
  backend::device_fused_op<op##_op> = static_cast<int>(fused_op::op);
#define XFUNC_CUDA_REGISTER_UNARY(op) XFUNC_CUDA_REGISTER(op, unary_kernel)
#define XFUNC_CUDA_REGISTER_BINARY(op) XFUNC_CUDA_REGISTER(op, binary_kernel)
  XFUNC_CUDA_FUSED_OPS(XFUNC_CUDA_REGISTER_UNARY, XFUNC_CUDA_REGISTER_BINARY)
#undef XFUNC_CUDA_REGISTER_UNARY
#undef XFUNC_CUDA_REGISTER_BINARY
#undef XFUNC_CUDA_REGISTER
  register_comparison<eq_op, ne_op, lt_op, le_op, gt_op, ge_op, logical_and_op, logical_or_op>();
  cuda_kernel_of<where_op> = &where_kernel;
  cuda_kernel_of<to_dtype_op> = &to_dtype_kernel;
  cuda_kernel_of<clone_op> = &clone_kernel;
  cuda_kernel_of<cat_op> = &cat_kernel;
  cuda_kernel_of<sum_op> = &sum_kernel;
  cuda_kernel_of<amax_op> = &extreme_kernel<amax_op>;
  cuda_kernel_of<amin_op> = &extreme_kernel<amin_op>;
  cuda_kernel_of<argmax_op> = &argmax_kernel;
  cuda_kernel_of<prod_op> = &prod_kernel;
  cuda_kernel_of<norm_op> = &norm_kernel;
  cuda_kernel_of<logsumexp_op> = &logsumexp_kernel;
  cuda_kernel_of<pow_scalar_op> = &pow_scalar_kernel;
  cuda_kernel_of<clamp_op> = &clamp_kernel;
  cuda_kernel_of<logical_not_op> = &logical_not_kernel;
  cuda_kernel_of<gather_op> = &gather_kernel;
  cuda_kernel_of<index_select_op> = &index_select_kernel;
  cuda_kernel_of<scatter_add_op> = &scatter_add_kernel;
  cuda_kernel_of<bmm_op> = &bmm_kernel;
  cuda_kernel_of<softmax_op> = &normalize_kernel<softmax_op>;
  cuda_kernel_of<log_softmax_op> = &normalize_kernel<log_softmax_op>;
  takes_scalars<add_op, sub_op, mul_op, maximum_op, minimum_op, div_op, pow_op, atan2_op, eq_op, ne_op, lt_op, le_op,
                gt_op, ge_op, logical_and_op, logical_or_op, where_op>();
  return true;
}
/// Registers the backend before main (every translation unit that includes this header asks;
/// the first one does it).
inline const bool backend_registered = register_backend();

}  // namespace xfunc::detail::cuda
