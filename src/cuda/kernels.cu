// xfunc's CUDA kernels: compiled by nvcc into the fatbinary that xfunc::cuda embeds, and as host
// C++ into the tests' fake driver (NOTE: [Kernels compiled twice]). Every pointwise op computes
// with the same per-element `fn` as the cpu (NOTE: [Element math]); a kernel is named
// xf_<op>_<dtype> (xf_exp_f32, xf_cast_f64_i64), the name the host side asks the module for
// (include/xfunc/cuda/ops.hpp). Each kernel walks its elements with a grid-stride loop.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <xfunc/xfunc.hpp>
#include <xfunc/cuda/kernel_args.hpp>

#include "cuda/kernel_support.hpp"

namespace xd = xfunc::detail;
using xfunc::detail::cuda::elementwise_args;
using xfunc::detail::cuda::fused_args;
using xfunc::detail::cuda::random_args;
using xfunc::detail::cuda::reduce_args;

namespace {

/// The closure type of D::fn, made in device code (the static member itself lives on the host).
template <class D>
using element_fn = std::remove_cvref_t<decltype(D::fn)>;

/// The offset of element i (in row-major order of `sizes`) of a strided array. One dim (what
/// merging leaves of a contiguous operand and a broadcast scalar, or of a single reduced dim)
/// needs no division, which costs tens of instructions per element on a GPU.
XFUNC_DEVICE inline long long strided_offset(long long i, int ndim, const long long* sizes, const long long* strides) {
  if (ndim == 1) return i * strides[0];
  long long off = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    off += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return off;
}
/// Where operand k's element i is (k = out_operand: the output's).
XFUNC_DEVICE inline long long operand_offset(const elementwise_args& a, int k, long long i) {
  return a.contiguous ? i : strided_offset(i, a.ndim, a.sizes, a.strides[k]);
}
template <class T>
XFUNC_DEVICE inline T input(const elementwise_args& a, int k, long long i) {
  if (!a.in[k]) {  // a scalar in the arguments (NOTE: [Scalar operands])
    T v;
    memcpy(&v, &a.scalar_bits[k], sizeof(T));
    return v;
  }
  return static_cast<const T*>(a.in[k])[operand_offset(a, k, i)];
}
template <class O>
XFUNC_DEVICE inline O& output(const elementwise_args& a, long long i) {
  return static_cast<O*>(a.out)[operand_offset(a, xfunc::detail::cuda::out_operand, i)];
}

/// N elements of T aligned to their whole size (a power of two): vector accesses on the GPU.
template <class T, int N>
struct alignas(sizeof(T) * N) lanes_of {
  T v[N];
};
/// How many T make 16 bytes.
template <class T>
inline constexpr int lanes16 = 16 / static_cast<int>(sizeof(T));
/// 16 bytes of T: one vector load or store.
template <class T>
using pack16 = lanes_of<T, lanes16<T>>;

/// out = g(x, w) for whole packs of 16 bytes of input, x the K input packs and w the lane, when
/// every operand is read at the output's index (contiguous), every input buffer is 16-byte
/// aligned and the output is aligned to its pack of W results of type O (16 bytes when the op
/// keeps the type, 4 bytes of bool for a float comparison, 32 for a float-to-double cast); a
/// scalar operand fills its pack. Returns where the elements it did not compute start (0 when it
/// computed none, n - n % W after the packs): the caller's loop does those.
template <class T, int K, class O, class G>
XFUNC_DEVICE long long map_packs(const elementwise_args& a, G g) {
  using P = pack16<T>;
  constexpr int W = lanes16<T>;
  using Q = lanes_of<O, W>;
  if (!a.contiguous) return 0;
  std::uintptr_t bits = 0;
  for (int k = 0; k < K; ++k) bits |= reinterpret_cast<std::uintptr_t>(a.in[k]);  // (a scalar's is null)
  if (bits % 16 != 0 || reinterpret_cast<std::uintptr_t>(a.out) % sizeof(Q) != 0) return 0;
  const long long packs = a.n / W;
  for (long long p = XFUNC_THREAD_ID; p < packs; p += XFUNC_THREAD_COUNT) {
    P x[K];
XFUNC_UNROLL
    for (int k = 0; k < K; ++k) {
      if (a.in[k]) {
        x[k] = load_aligned<P>(static_cast<const T*>(a.in[k]) + p * W);
      } else {
        const T s = input<T>(a, k, 0);
XFUNC_UNROLL
        for (int w = 0; w < W; ++w) x[k].v[w] = s;
      }
    }
    Q y;
XFUNC_UNROLL
    for (int w = 0; w < W; ++w) y.v[w] = g(x, w);
    store_aligned(static_cast<O*>(a.out) + p * W, y);
  }
  return packs * W;
}

// The op-by-op kernels: whole 16-byte packs of input where map_packs can take them (for
// comparisons and casts too: their results are packs of another type), then element by element.
template <class D, class T, class O>
XFUNC_DEVICE void unary(const elementwise_args& a) {
  const element_fn<D> f{};
  const long long from =
      map_packs<T, 1, O>(a, [&](const pack16<T>* x, int w) { return static_cast<O>(f(x[0].v[w])); });
  for (long long i = from + XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT)
    output<O>(a, i) = static_cast<O>(f(input<T>(a, 0, i)));
}
template <class D, class T, class O>
XFUNC_DEVICE void binary(const elementwise_args& a) {
  const element_fn<D> f{};
  const long long from =
      map_packs<T, 2, O>(a, [&](const pack16<T>* x, int w) { return static_cast<O>(f(x[0].v[w], x[1].v[w])); });
  for (long long i = from + XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT)
    output<O>(a, i) = static_cast<O>(f(input<T>(a, 0, i), input<T>(a, 1, i)));
}
template <class T, class O>
XFUNC_DEVICE void cast(const elementwise_args& a) {
  const long long from = map_packs<T, 1, O>(a, [](const pack16<T>* x, int w) { return static_cast<O>(x[0].v[w]); });
  for (long long i = from + XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT)
    output<O>(a, i) = static_cast<O>(input<T>(a, 0, i));
}
template <class T>
XFUNC_DEVICE void fill(const elementwise_args& a) {
  const T v = static_cast<T>(a.scalar);
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT) output<T>(a, i) = v;
}
template <class T>
XFUNC_DEVICE void where(const elementwise_args& a) {
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT)
    output<T>(a, i) = input<bool>(a, 0, i) ? input<T>(a, 1, i) : input<T>(a, 2, i);
}

/// f(x, scalar, scalar2) elementwise: the ops with number attributes (pow by a scalar, clamp).
template <class T, class F>
XFUNC_DEVICE void unary_with(const elementwise_args& a, F f) {
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT)
    output<T>(a, i) = f(input<T>(a, 0, i), static_cast<T>(a.scalar), static_cast<T>(a.scalar2));
}
struct pow_scalar_fn {
  template <class T>
  XFUNC_DEVICE T operator()(T x, T p, T) const { return xfunc::detail::element::pow(x, p); }
};
/// clamp: NaN stays NaN; a NaN bound (scalar + scalar2 is then NaN) makes every element NaN.
struct clamp_fn {
  template <class T>
  XFUNC_DEVICE T operator()(T x, T lo, T hi) const {
    if (lo != lo || hi != hi) return lo + hi;
    return x < lo ? lo : hi < x ? hi : x;
  }
};
template <class T>
XFUNC_DEVICE void logical_not(const elementwise_args& a) {
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT) output<bool>(a, i) = input<T>(a, 0, i) == T(0);
}

/// P filled with v (a scalar operand of a fused step).
template <class P, class T>
XFUNC_DEVICE inline P splat(T v) {
  P p;
XFUNC_UNROLL
  for (int w = 0; w < static_cast<int>(sizeof(P) / sizeof(T)); ++w) p.v[w] = v;
  return p;
}
/// op(x, y) on every lane of the packs, for the fused op numbered `op` (NOTE: [Fused device
/// programs]); y is unused by unary ops. The op is decoded once per pack, not per element: the
/// interpreter costs a few instructions per 16 bytes, which the memory bound leaves room for.
template <class T, class P>
XFUNC_DEVICE P fused_apply(int op, const P& x, const P& y) {
  using xfunc::detail::cuda::fused_op;
  constexpr int W = static_cast<int>(sizeof(P) / sizeof(T));
  P r = x;
#define XFUNC_FUSED_CASE(name, ...)                                                     \
  case static_cast<int>(fused_op::name): {                                               \
    const element_fn<xd::name##_op> f{};                                                 \
    XFUNC_UNROLL for (int w = 0; w < W; ++w) r.v[w] = static_cast<T>(f(__VA_ARGS__)); \
    return r;                                                                            \
  }
#define XFUNC_FUSED_UNARY_CASE(name) XFUNC_FUSED_CASE(name, x.v[w])
#define XFUNC_FUSED_BINARY_CASE(name) XFUNC_FUSED_CASE(name, x.v[w], y.v[w])
  switch (op) { XFUNC_CUDA_FUSED_OPS(XFUNC_FUSED_UNARY_CASE, XFUNC_FUSED_BINARY_CASE) }
#undef XFUNC_FUSED_UNARY_CASE
#undef XFUNC_FUSED_BINARY_CASE
#undef XFUNC_FUSED_CASE
  return r;  // (the host numbers only the ops above)
}
/// Leaf j's pack (a chain of selects, not an index: the packs stay in registers).
template <class P>
XFUNC_DEVICE P leaf_pack(const P* in, int j) {
  P v;
XFUNC_UNROLL
  for (int w = 0; w < static_cast<int>(sizeof(P::v) / sizeof(P::v[0])); ++w)
    v.v[w] = j == 0 ? in[0].v[w] : j == 1 ? in[1].v[w] : j == 2 ? in[2].v[w] : in[3].v[w];
  return v;
}
/// The program's values for the leaves' packs `in`, step by step over whole packs. The previous
/// step's result stays in registers (`last`); only results that a later step reads again are
/// stored in `r` (keep), which the dynamic index puts in (cached) local memory.
template <class T, class P>
XFUNC_DEVICE P fused_pack(const fused_args& a, const P* in) {
  static_assert(xfunc::detail::cuda::fused_max_leaves == 4, "leaf_pack selects among four leaves");
  using form = xfunc::detail::step_form;
  P r[xfunc::detail::cuda::fused_max_steps];
  P last = in[0];
  for (int k = 0; k < a.n_steps; ++k) {
    const xfunc::detail::cuda::fused_step& s = a.steps[k];
    auto operand = [&](int code) -> P { return code < 0 ? leaf_pack(in, -1 - code) : code == k - 1 ? last : r[code]; };
    const P x = s.form == static_cast<int>(form::scalar_left) ? splat<P>(static_cast<T>(s.scalar)) : operand(s.a);
    const P y = s.form == static_cast<int>(form::scalar_right) ? splat<P>(static_cast<T>(s.scalar)) : operand(s.b);
    last = fused_apply<T>(s.op, x, y);
    if (s.keep) r[k] = last;
  }
  return last;
}
/// A fused program (NOTE: [Fused device programs]): work item p computes the 16 bytes of
/// elements from p * W, through vector accesses when they are whole and aligned; the last,
/// partial pack is read and written element by element (its other lanes compute zeros).
template <class T>
XFUNC_DEVICE void fused(const fused_args& a) {
  using pack = pack16<T>;
  constexpr int W = lanes16<T>;
  constexpr int L = xfunc::detail::cuda::fused_max_leaves;
  const long long packs = (a.n + W - 1) / W;
  for (long long p = XFUNC_THREAD_ID; p < packs; p += XFUNC_THREAD_COUNT) {
    const long long i0 = p * W;
    const int here = a.n - i0 < W ? static_cast<int>(a.n - i0) : W;
    const bool vector = a.aligned && here == W;
    pack in[L]{};
XFUNC_UNROLL
    for (int j = 0; j < L; ++j) {
      if (j >= a.n_leaves) continue;
      const T* l = static_cast<const T*>(a.leaves[j]) + i0;
      if (vector) {
        in[j] = load_aligned<pack>(l);
      } else {
XFUNC_UNROLL
        for (int w = 0; w < W; ++w)
          if (w < here) in[j].v[w] = l[w];
      }
    }
    const pack out = fused_pack<T>(a, in);
    T* o = static_cast<T*>(a.out) + i0;
    if (vector) {
      store_aligned(o, out);
    } else {
XFUNC_UNROLL
      for (int w = 0; w < W; ++w)
        if (w < here) o[w] = out.v[w];
    }
  }
}

/// gather (and index_select, as a gather with a broadcast index): operand 0 is the input with
/// its stride along dim set to 0, operand 1 the index; the indexed element is index_stride
/// further per unit of the index.
template <class T>
XFUNC_DEVICE void gather(const elementwise_args& a) {
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT) {
    const long long k = input<long long>(a, 1, i);  // (the host checked every index is in [0, n))
    output<T>(a, i) = static_cast<const T*>(a.in[0])[operand_offset(a, 0, i) + k * a.index_stride];
  }
}
/// scatter_add into `out` (a copy of the base): operand 0 is the source, 1 the index; the output
/// operand's stride along dim is 0, and the element added into is index_stride further per unit.
template <class T>
XFUNC_DEVICE void scatter_add(const elementwise_args& a) {
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT) {
    const long long k = input<long long>(a, 1, i);  // (the host checked every index is in [0, n))
    xfunc_atomic_add(&output<T>(a, i) + k * a.index_stride, input<T>(a, 0, i));
  }
}

/// The input offset of the first element output o reduces, and of the j-th of them.
XFUNC_DEVICE inline long long kept_offset(const reduce_args& a, long long o) {
  return strided_offset(o, a.kept_ndim, a.kept_sizes, a.kept_strides);
}
XFUNC_DEVICE inline long long reduced_offset(const reduce_args& a, long long j) {
  return strided_offset(j, a.reduced_ndim, a.reduced_sizes, a.reduced_strides);
}

// The folds that split (NOTE: [Split reductions] in include/xfunc/cuda/kernel_args.hpp): how an
// element enters the accumulator (lift), how two accumulators combine, and the result from the
// last one. Floating sums accumulate in double, integer ones in int64.
template <class T>
using sum_acc = std::conditional_t<std::is_floating_point_v<T>, double, long long>;
template <class T>
struct sum_fold {
  using A = sum_acc<T>;
  XFUNC_DEVICE static A lift(T x, T) { return static_cast<A>(x); }
  XFUNC_DEVICE static A combine(A a, A b) { return a + b; }
  XFUNC_DEVICE static T finish(A a) { return static_cast<T>(a); }
};
template <class T>
struct prod_fold {
  using A = sum_acc<T>;
  XFUNC_DEVICE static A lift(T x, T) { return static_cast<A>(x); }
  XFUNC_DEVICE static A combine(A a, A b) { return a * b; }
  XFUNC_DEVICE static T finish(A a) { return static_cast<T>(a); }
};
/// The 2-norm: sqrt of the sum of squares, in double.
template <class T>
struct norm_fold {
  using A = double;
  XFUNC_DEVICE static A lift(T x, T) { return static_cast<double>(x) * static_cast<double>(x); }
  XFUNC_DEVICE static A combine(A a, A b) { return a + b; }
  XFUNC_DEVICE static T finish(A a) { return static_cast<T>(xfunc::detail::element::sqrt(a)); }
};
/// The largest (Max) or smallest element; a NaN wins (as on the cpu and in torch).
template <class T, bool Max>
struct extreme_fold {
  using A = T;
  XFUNC_DEVICE static A lift(T x, T) { return x; }
  XFUNC_DEVICE static A combine(A a, A b) { return a != a ? a : (Max ? b > a : b < a) || b != b ? b : a; }
  XFUNC_DEVICE static T finish(A a) { return a; }
};

/// The shift that softmax, log_softmax and logsumexp take out of their inputs: the largest value
/// m, or 0 where m is infinite (as on the cpu: exp(x - m) would be NaN).
template <class T>
XFUNC_DEVICE inline T finite_shift(T m) { return m - m != T(0) && m == m ? T(0) : m; }
/// The sum of exp(x - shift) in double, the shift being the output's (reduce_args::shift):
/// softmax's, log_softmax's and logsumexp's denominator.
template <class T>
struct sum_exp_fold {
  using A = double;
  XFUNC_DEVICE static A lift(T x, T shift) { return static_cast<double>(xfunc::detail::element::exp(x - shift)); }
  XFUNC_DEVICE static A combine(A a, A b) { return a + b; }
  XFUNC_DEVICE static double finish(A a) { return a; }
};

/// Split s's fold of a contiguous row p of m elements, 16 bytes at a time: packs s, s + S, ...,
/// four loads in flight per thread and one accumulator per lane, then the lanes and the
/// elements after the last whole pack (at most one each for the first splits). The splits still
/// fold every element of the row once, grouped otherwise than by the element-wise walk, so a
/// floating result differs from that walk's by rounding only (and is the same in every run); a
/// warp reads 512 contiguous bytes per load. Returns false (nothing done) where some split would
/// get no whole aligned pack: the element-wise walk then runs.
template <class F, class T>
XFUNC_DEVICE bool fold_row_packs(const reduce_args& a, const T* p, long long s, T shift, typename F::A& out) {
  using A = typename F::A;
  using P = pack16<T>;
  constexpr int W = lanes16<T>;
  const long long S = a.splits, packs = a.m / W;
  if (a.reduced_ndim != 1 || a.reduced_strides[0] != 1 || packs < S || reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
    return false;
  const P* q = reinterpret_cast<const P*>(p);
  A acc[W];
  const P first = load_aligned<P>(q + s);
XFUNC_UNROLL
  for (int w = 0; w < W; ++w) acc[w] = F::lift(first.v[w], shift);
  long long k = s + S;
  for (; k + 3 * S < packs; k += 4 * S) {
    const P x0 = load_aligned<P>(q + k), x1 = load_aligned<P>(q + k + S), x2 = load_aligned<P>(q + k + 2 * S),
            x3 = load_aligned<P>(q + k + 3 * S);
XFUNC_UNROLL
    for (int w = 0; w < W; ++w) {
      acc[w] = F::combine(acc[w], F::lift(x0.v[w], shift));
      acc[w] = F::combine(acc[w], F::lift(x1.v[w], shift));
      acc[w] = F::combine(acc[w], F::lift(x2.v[w], shift));
      acc[w] = F::combine(acc[w], F::lift(x3.v[w], shift));
    }
  }
  for (; k < packs; k += S) {
    const P x = load_aligned<P>(q + k);
XFUNC_UNROLL
    for (int w = 0; w < W; ++w) acc[w] = F::combine(acc[w], F::lift(x.v[w], shift));
  }
  for (long long j = packs * W + s; j < a.m; j += S) acc[0] = F::combine(acc[0], F::lift(p[j], shift));
XFUNC_UNROLL
  for (int w = 1; w < W; ++w) acc[0] = F::combine(acc[0], acc[w]);
  out = acc[0];
  return true;
}

/// One level of a split reduction: work item t is output o's split s, which folds elements s,
/// s + splits, s + 2 splits, ... of o's m (read from the input, or from the previous level's
/// partials) and writes the result (one split) or its partial accumulator.
template <class F, class T>
XFUNC_DEVICE void split_fold(const reduce_args& a) {
  using A = typename F::A;
  using O = decltype(F::finish(A()));
  const long long S = a.splits;
  for (long long t = XFUNC_THREAD_ID; t < a.n_out * S; t += XFUNC_THREAD_COUNT) {
    const long long o = a.outputs_fast ? t % a.n_out : t / S;
    const long long s = a.outputs_fast ? t / a.n_out : t % S;
    A acc;
    if (a.from_partials) {  // contiguous [n_out, m] accumulators
      const A* p = static_cast<const A*>(a.in) + o * a.m;
      acc = p[s];
      for (long long j = s + S; j < a.m; j += S) acc = F::combine(acc, p[j]);
    } else {
      const T* p = static_cast<const T*>(a.in) + kept_offset(a, o);
      const T shift = a.shift ? finite_shift(static_cast<const T*>(a.shift)[o]) : T(0);
      if (!fold_row_packs<F>(a, p, s, shift, acc)) {
        acc = F::lift(p[reduced_offset(a, s)], shift);
        for (long long j = s + S; j < a.m; j += S) acc = F::combine(acc, F::lift(p[reduced_offset(a, j)], shift));
      }
    }
    if (S == 1) static_cast<O*>(a.out)[o] = F::finish(acc);
    else static_cast<A*>(a.out)[o * S + s] = acc;
  }
}
/// The index of the first largest element along the (one) reduced dim; a NaN is the largest.
template <class T>
XFUNC_DEVICE void argmax(const reduce_args& a) {
  for (long long o = XFUNC_THREAD_ID; o < a.n_out; o += XFUNC_THREAD_COUNT) {
    const T* p = static_cast<const T*>(a.in) + kept_offset(a, o);
    long long best = 0;
    T bv = p[0];
    for (long long j = 1; j < a.m && bv == bv; ++j) {
      const T x = p[reduced_offset(a, j)];
      if (x > bv || x != x) {
        best = j;
        bv = x;
      }
    }
    static_cast<long long*>(a.out)[o] = best;
  }
}

/// softmax (Log = false) or log_softmax, elementwise: operand 0 is x, 1 the largest value and 2
/// the sum of exp(x - shift) (double) of x's row, both broadcast along the normalised dim.
template <class T, bool Log>
XFUNC_DEVICE void normalize(const elementwise_args& a) {
  namespace el = xfunc::detail::element;
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT) {
    const T z = input<T>(a, 0, i) - finite_shift(input<T>(a, 1, i));
    const double sum = input<double>(a, 2, i);
    output<T>(a, i) = Log ? z - static_cast<T>(el::log(sum)) : static_cast<T>(static_cast<double>(el::exp(z)) / sum);
  }
}
/// logsumexp, elementwise over its result: operand 0 is the sum of exp(x - shift) (double), 1
/// the largest value.
template <class T>
XFUNC_DEVICE void logsumexp_finish(const elementwise_args& a) {
  namespace el = xfunc::detail::element;
  for (long long i = XFUNC_THREAD_ID; i < a.n; i += XFUNC_THREAD_COUNT)
    output<T>(a, i) = static_cast<T>(el::log(input<double>(a, 0, i))) + finite_shift(input<T>(a, 1, i));
}

/// rand (Normal = false) and randn: work item b fills the values of Philox block b, as the cpu
/// does (NOTE: [Philox streams]); normal values from Box-Muller on each pair of uniforms.
template <class T, bool Normal>
XFUNC_DEVICE void philox_values(const random_args& a) {
  namespace bk = xfunc::detail::backend;
  namespace el = xfunc::detail::element;
  constexpr long long per = bk::values_per_block<T>;
  const long long blocks = (a.n + per - 1) / per;
  for (long long b = XFUNC_THREAD_ID; b < blocks; b += XFUNC_THREAD_COUNT) {
    const bk::philox_words w = bk::philox_block(a.key, a.offset + static_cast<unsigned long long>(b));
    T* out = static_cast<T*>(a.out) + b * per;
    const long long here = a.n - b * per < per ? a.n - b * per : per;
    for (long long j = 0; j < here; j += Normal ? 2 : 1) {
      const double u = bk::philox_uniform<T>(w, static_cast<std::size_t>(j));
      if constexpr (!Normal) {
        out[j] = static_cast<T>(u);
      } else {
        const double r = el::sqrt(-2.0 * el::log(1.0 - u));
        const double angle = bk::two_pi * bk::philox_uniform<T>(w, static_cast<std::size_t>(j + 1));
        out[j] = static_cast<T>(r * el::cos(angle));
        if (j + 1 < here) out[j + 1] = static_cast<T>(r * el::sin(angle));
      }
    }
  }
}

}  // namespace

// clang-format off
#define XFUNC_UNARY(op, dt, T) \
  XFUNC_KERNEL(xf_##op##_##dt, elementwise_args) { unary<xd::op##_op, T, T>(a); }
#define XFUNC_UNARY_FLOATING(op) XFUNC_UNARY(op, f32, float) XFUNC_UNARY(op, f64, double)
#define XFUNC_UNARY_NUMERIC(op) XFUNC_UNARY_FLOATING(op) XFUNC_UNARY(op, i64, long long)

XFUNC_UNARY_NUMERIC(neg)
XFUNC_UNARY_NUMERIC(abs)
XFUNC_UNARY_NUMERIC(sign)
XFUNC_UNARY_NUMERIC(relu)
XFUNC_UNARY_NUMERIC(square)
XFUNC_UNARY_FLOATING(exp)
XFUNC_UNARY_FLOATING(log)
XFUNC_UNARY_FLOATING(sin)
XFUNC_UNARY_FLOATING(cos)
XFUNC_UNARY_FLOATING(tan)
XFUNC_UNARY_FLOATING(tanh)
XFUNC_UNARY_FLOATING(sigmoid)
XFUNC_UNARY_FLOATING(sqrt)
XFUNC_UNARY_FLOATING(rsqrt)
XFUNC_UNARY_FLOATING(log1p)
XFUNC_UNARY_FLOATING(expm1)
XFUNC_UNARY_FLOATING(reciprocal)
XFUNC_UNARY_FLOATING(erf)

#define XFUNC_BINARY(op, dt, T, O) \
  XFUNC_KERNEL(xf_##op##_##dt, elementwise_args) { binary<xd::op##_op, T, O>(a); }
#define XFUNC_BINARY_FLOATING(op) XFUNC_BINARY(op, f32, float, float) XFUNC_BINARY(op, f64, double, double)
#define XFUNC_BINARY_NUMERIC(op) XFUNC_BINARY_FLOATING(op) XFUNC_BINARY(op, i64, long long, long long)
#define XFUNC_COMPARISON(op) \
  XFUNC_BINARY(op, f32, float, bool) XFUNC_BINARY(op, f64, double, bool) XFUNC_BINARY(op, i64, long long, bool)

XFUNC_BINARY_NUMERIC(add)
XFUNC_BINARY_NUMERIC(sub)
XFUNC_BINARY_NUMERIC(mul)
XFUNC_BINARY_NUMERIC(maximum)
XFUNC_BINARY_NUMERIC(minimum)
// of two booleans: a boolean (or, and, or, and), as on the cpu (gives_boolean in ops/pointwise.hpp)
XFUNC_BINARY(add, b8, bool, bool)
XFUNC_BINARY(mul, b8, bool, bool)
XFUNC_BINARY(maximum, b8, bool, bool)
XFUNC_BINARY(minimum, b8, bool, bool)
XFUNC_BINARY_FLOATING(div)
XFUNC_BINARY_NUMERIC(pow)
XFUNC_BINARY_FLOATING(atan2)
XFUNC_COMPARISON(eq)
XFUNC_COMPARISON(ne)
XFUNC_COMPARISON(lt)
XFUNC_COMPARISON(le)
XFUNC_COMPARISON(gt)
XFUNC_COMPARISON(ge)
XFUNC_COMPARISON(logical_and)
XFUNC_COMPARISON(logical_or)

#define XFUNC_CAST(from, F, to, T) \
  XFUNC_KERNEL(xf_cast_##from##_##to, elementwise_args) { cast<F, T>(a); }
#define XFUNC_CASTS_FROM(from, F) \
  XFUNC_CAST(from, F, f32, float) XFUNC_CAST(from, F, f64, double) XFUNC_CAST(from, F, i64, long long) XFUNC_CAST(from, F, b8, bool)
XFUNC_CASTS_FROM(f32, float)
XFUNC_CASTS_FROM(f64, double)
XFUNC_CASTS_FROM(i64, long long)
XFUNC_CASTS_FROM(b8, bool)

#define XFUNC_PER_DTYPE(kind, fn) \
  XFUNC_KERNEL(xf_##kind##_f32, elementwise_args) { fn<float>(a); }     \
  XFUNC_KERNEL(xf_##kind##_f64, elementwise_args) { fn<double>(a); }    \
  XFUNC_KERNEL(xf_##kind##_i64, elementwise_args) { fn<long long>(a); } \
  XFUNC_KERNEL(xf_##kind##_b8, elementwise_args) { fn<bool>(a); }
XFUNC_PER_DTYPE(fill, fill)
XFUNC_PER_DTYPE(where, where)

#define XFUNC_REDUCTIONS(dt, T)                                                  \
  XFUNC_KERNEL(xf_sum_##dt, reduce_args) { split_fold<sum_fold<T>, T>(a); }      \
  XFUNC_KERNEL(xf_prod_##dt, reduce_args) { split_fold<prod_fold<T>, T>(a); }    \
  XFUNC_KERNEL(xf_amax_##dt, reduce_args) { split_fold<extreme_fold<T, true>, T>(a); }  \
  XFUNC_KERNEL(xf_amin_##dt, reduce_args) { split_fold<extreme_fold<T, false>, T>(a); } \
  XFUNC_KERNEL(xf_argmax_##dt, reduce_args) { argmax<T>(a); }                    \
  XFUNC_KERNEL(xf_logical_not_##dt, elementwise_args) { logical_not<T>(a); }     \
  XFUNC_KERNEL(xf_clamp_##dt, elementwise_args) { unary_with<T>(a, clamp_fn{}); } \
  XFUNC_KERNEL(xf_gather_##dt, elementwise_args) { gather<T>(a); }               \
  XFUNC_KERNEL(xf_scatter_add_##dt, elementwise_args) { scatter_add<T>(a); }
XFUNC_REDUCTIONS(f32, float)
XFUNC_REDUCTIONS(f64, double)
XFUNC_REDUCTIONS(i64, long long)
XFUNC_KERNEL(xf_gather_b8, elementwise_args) { gather<bool>(a); }
#define XFUNC_FLOATING_REDUCTIONS(dt, T)                                         \
  XFUNC_KERNEL(xf_norm_##dt, reduce_args) { split_fold<norm_fold<T>, T>(a); }    \
  XFUNC_KERNEL(xf_sum_exp_##dt, reduce_args) { split_fold<sum_exp_fold<T>, T>(a); } \
  XFUNC_KERNEL(xf_logsumexp_##dt, elementwise_args) { logsumexp_finish<T>(a); }   \
  XFUNC_KERNEL(xf_pow_scalar_##dt, elementwise_args) { unary_with<T>(a, pow_scalar_fn{}); }
XFUNC_FLOATING_REDUCTIONS(f32, float)
XFUNC_FLOATING_REDUCTIONS(f64, double)
// clang-format on

XFUNC_KERNEL(xf_fused_f32, fused_args) { fused<float>(a); }
XFUNC_KERNEL(xf_fused_f64, fused_args) { fused<double>(a); }

#define XFUNC_NORMALIZE(dt, T)                                                       \
  XFUNC_KERNEL(xf_softmax_##dt, elementwise_args) { normalize<T, false>(a); }        \
  XFUNC_KERNEL(xf_log_softmax_##dt, elementwise_args) { normalize<T, true>(a); }
XFUNC_NORMALIZE(f32, float)
XFUNC_NORMALIZE(f64, double)

#define XFUNC_RANDOM(dt, T)                                                             \
  XFUNC_KERNEL(xf_uniform_##dt, random_args) { philox_values<T, false>(a); }            \
  XFUNC_KERNEL(xf_normal_##dt, random_args) { philox_values<T, true>(a); }
XFUNC_RANDOM(f32, float)
XFUNC_RANDOM(f64, double)
