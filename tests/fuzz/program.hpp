#pragma once
// The differential fuzzer's programs: random straight-line programs over the ops of API section
// 2 (and a custom op and an autograd function), generated from a stream of choices, run by an
// interpreter, and printed as C++ for a reproducer (NOTE: [Fuzzer] in fuzz.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <xfunc/xfunc.hpp>

namespace fuzz {
namespace xf = xfunc;
using xf::tensor;

/// The source of every random choice: a seeded generator, or a libFuzzer input's bytes (zeros
/// once they run out), so that the same programs come from the same seed or bytes.
class chooser {
 public:
  explicit chooser(std::uint64_t seed) : gen_(seed) {}
  chooser(const std::uint8_t* data, std::size_t size) : data_(data), size_(size), bytes_(true) {}
  /// A value in [0, n).
  int pick(int n) {
    if (n <= 1) return 0;
    if (!bytes_) return static_cast<int>(gen_() % static_cast<std::uint64_t>(n));
    std::uint32_t v = 0;
    for (int k = 0; k < 2; ++k) v = v << 8 | (pos_ < size_ ? data_[pos_++] : 0u);
    return static_cast<int>(v % static_cast<std::uint32_t>(n));
  }
  bool chance(int percent) { return pick(100) < percent; }
  template <class T>
  const T& one_of(const std::vector<T>& v) { return v[static_cast<std::size_t>(pick(static_cast<int>(v.size())))]; }

 private:
  std::mt19937_64 gen_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0, pos_ = 0;
  bool bytes_ = false;
};

/// Bounds of a value's elements (interval arithmetic), so that ops get arguments in their domain:
/// log and sqrt positive ones, exp bounded ones.
struct bounds {
  double lo = -1, hi = 1;
  bool positive() const { return lo >= 0.1; }
  double mag() const { return std::max(std::abs(lo), std::abs(hi)); }
};

enum class op {
  // unary
  neg, exp, log, sin, cos, tan, tanh, sigmoid, relu, abs, sqrt, rsqrt, square, log1p, expm1, reciprocal, erf, sign,
  mul_scalar, add_scalar, pow_scalar, clamp, custom_op, autograd_fn,
  // higher-order ops (shape-preserving)
  cond, scan, map,
  // binary (broadcasting)
  add, sub, mul, div, pow, maximum, minimum, atan2, where,
  // reductions
  sum_all, sum_dims, mean_dims, prod, amax, amin, logsumexp, var, norm,
  // nn
  softmax, log_softmax, linear, mse_loss, cross_entropy,
  // linalg
  matmul, outer,
  // views and copies
  reshape, transpose, permute, unsqueeze, squeeze_dim, expand, flatten, select, narrow, diagonal, movedim, contiguous,
  clone, flip, split_part, index_select, gather,
  // several values
  cat, stack,
  // an in-place op through a view of a clone
  inplace_view,
};

/// One step: an op, its operand value ids and its integer and real parameters.
struct step {
  op o;
  std::vector<int> a;
  std::vector<std::int64_t> i;
  double s = 0;
  int out = -1;  // the value id it defines
  step(op o_, std::vector<int> a_ = {}, std::vector<std::int64_t> i_ = {}, double s_ = 0)
      : o(o_), a(std::move(a_)), i(std::move(i_)), s(s_) {}
};

/// How an input is laid out in memory: contiguous, a transpose of a contiguous buffer, a view
/// with an offset into a larger buffer, or a broadcast (stride 0) of a smaller one.
enum class layout { contiguous, transposed, offset, expanded };

struct input_spec {
  xf::shape_t shape;
  bool positive = false;
  layout lay = layout::contiguous;
  int id = -1;  // the value id it defines
};

struct program {
  std::vector<input_spec> inputs;
  std::vector<step> steps;
  std::vector<xf::shape_t> shapes;  // every value's shape by id, as the generator expects it
  int output = 0;
  bool smooth = true;  // no kinks (relu, abs, max, where, ...): finite differences apply

  // Values are numbered in the order the generator made them; inputs may come between steps.
  int values() const { return static_cast<int>(shapes.size()); }
  std::string value_name(int id) const {
    for (std::size_t k = 0; k < inputs.size(); ++k)
      if (inputs[k].id == id) return "x" + std::to_string(k);
    return "v" + std::to_string(id);
  }
  tensor run(const std::vector<tensor>& xs) const;
  std::string cpp() const;
};

/// The fuzzer's own custom op and autograd function: x * sin(x) with hand-written rules.
/// Registering it again replaces the definition (the thread stress test does, concurrently).
inline auto register_x_sin_x() {
  auto o = xf::custom_op("fuzz::x_sin_x", [](const tensor& x) { return x * xf::sin(x); });
  o.register_autograd(
      [](xf::autograd::context& ctx, const tensor& g) {
        const tensor x = ctx.saved_tensors()[0];
        return g * (xf::sin(x) + x * xf::cos(x));
      },
      [](xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
        ctx.save_for_backward(std::get<0>(in));
      });
  o.register_vmap([](const xf::vmap_info&, const std::array<std::optional<std::int64_t>, 1>& dims, const tensor& x) {
    return std::pair{x * xf::sin(x), dims[0]};
  });
  return o;
}
inline auto& x_sin_x_op() {
  static auto op = register_x_sin_x();
  return op;
}
struct softplus_fn : xf::autograd::function<softplus_fn> {
  static tensor forward(const tensor& x) { return xf::log1p(xf::exp(x)); }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>& in, const tensor&) {
    ctx.save_for_backward(std::get<0>(in));
    ctx.save_for_forward(std::get<0>(in));
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) { return g * xf::sigmoid(ctx.saved_tensors()[0]); }
  static tensor jvp(xf::autograd::context& ctx, const tensor& t) { return t * xf::sigmoid(ctx.saved_tensors()[0]); }
  static constexpr bool generate_vmap_rule = true;
};

namespace detail {
inline std::vector<std::int64_t> dims_vec(const std::vector<std::int64_t>& v, std::size_t from) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from), v.end()};
}
/// An int64 index tensor from the step's integers (a constant of the program).
inline tensor index_tensor(const std::vector<std::int64_t>& v, std::size_t from, const xf::shape_t& shape) {
  std::vector<double> d;
  for (std::size_t k = from; k < v.size(); ++k) d.push_back(static_cast<double>(v[k]));
  tensor t = xf::zeros({static_cast<std::int64_t>(d.size())}, xf::i64);
  for (std::size_t k = 0; k < d.size(); ++k) t.select(0, static_cast<std::int64_t>(k)).fill_(d[k]);
  return t.reshape(shape);
}
}  // namespace detail

inline const char* op_name(op o) {
  static const char* names[] = {
      "neg", "exp", "log", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "abs", "sqrt", "rsqrt", "square", "log1p",
      "expm1", "reciprocal", "erf", "sign", "mul_scalar", "add_scalar", "pow_scalar", "clamp", "custom_op",
      "autograd_fn", "cond", "scan", "map", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "where", "sum_all", "sum_dims",
      "mean_dims", "prod", "amax", "amin", "logsumexp", "var", "norm", "softmax", "log_softmax", "linear", "mse_loss",
      "cross_entropy", "matmul", "outer", "reshape", "transpose", "permute", "unsqueeze", "squeeze_dim", "expand",
      "flatten", "select", "narrow", "diagonal", "movedim", "contiguous", "clone", "flip", "split_part",
      "index_select", "gather", "cat", "stack", "inplace_view"};
  return names[static_cast<int>(o)];
}

namespace detail {
// The higher-order ops' steps. cond's predicate depends on the data (so under vmap it is batched
// and both branches run) but not its value: always true (i = 1) or always false (i = 0), so that
// finite differences and make_fx's replays on new inputs take the same branch.
inline tensor cond_step(const tensor& x, bool take_true) {
  const tensor pred = take_true ? xf::sum(x) > -1e30 : xf::sum(x) < -1e30;
  return xf::cond(pred, [](const tensor& t) { return xf::sin(t) * 2.0; },
                  [](const tensor& t) { return t * xf::tanh(t) - 0.5; }, x);
}
/// ys of a scan along dim 0: carry c -> c / 2 + sin(x), y = c' x.
inline tensor scan_step(const tensor& x) {
  auto step = [](const tensor& c, const tensor& xi) {
    const tensor n = c * 0.5 + xf::sin(xi);
    return std::pair{n, n * xi};
  };
  return xf::scan(step, xf::zeros_like(x.select(0, 0)), x).second;
}
inline tensor map_step(const tensor& x) {
  return xf::map([](const tensor& r) { return r * xf::tanh(r); }, x);
}
}  // namespace detail

/// Runs one step on its operands.
inline tensor run_step(const step& s, const std::vector<tensor>& v) {
  auto A = [&](std::size_t k) -> const tensor& { return v[static_cast<std::size_t>(s.a[k])]; };
  const auto& I = s.i;
  switch (s.o) {
    case op::neg: return -A(0);
    case op::exp: return xf::exp(A(0));
    case op::log: return xf::log(A(0));
    case op::sin: return xf::sin(A(0));
    case op::cos: return xf::cos(A(0));
    case op::tan: return xf::tan(A(0));
    case op::tanh: return xf::tanh(A(0));
    case op::sigmoid: return xf::sigmoid(A(0));
    case op::relu: return xf::relu(A(0));
    case op::abs: return xf::abs(A(0));
    case op::sqrt: return xf::sqrt(A(0));
    case op::rsqrt: return xf::rsqrt(A(0));
    case op::square: return xf::square(A(0));
    case op::log1p: return xf::log1p(A(0));
    case op::expm1: return xf::expm1(A(0));
    case op::reciprocal: return xf::reciprocal(A(0));
    case op::erf: return xf::erf(A(0));
    case op::sign: return xf::sign(A(0));
    case op::mul_scalar: return A(0) * s.s;
    case op::add_scalar: return s.s - A(0);
    case op::pow_scalar: return xf::pow(A(0), s.s);
    case op::clamp: return xf::clamp(A(0), -s.s, s.s);
    case op::cond: return detail::cond_step(A(0), I[0] != 0);
    case op::scan: return detail::scan_step(A(0));
    case op::map: return detail::map_step(A(0));
    case op::custom_op: return x_sin_x_op()(A(0));
    case op::autograd_fn: return softplus_fn::apply(A(0));
    case op::add: return A(0) + A(1);
    case op::sub: return A(0) - A(1);
    case op::mul: return A(0) * A(1);
    case op::div: return A(0) / A(1);
    case op::pow: return xf::pow(A(0), A(1));
    case op::maximum: return xf::maximum(A(0), A(1));
    case op::minimum: return xf::minimum(A(0), A(1));
    case op::atan2: return xf::atan2(A(0), A(1));
    case op::where: return xf::where(A(2) > 0.0, A(0), A(1));
    case op::sum_all: return xf::sum(A(0));
    case op::sum_dims: return xf::sum(A(0), detail::dims_vec(I, 1), I[0] != 0);
    case op::mean_dims: return xf::mean(A(0), detail::dims_vec(I, 1), I[0] != 0);
    case op::prod: return xf::prod(A(0), I[1], I[0] != 0);
    case op::amax: return xf::amax(A(0), detail::dims_vec(I, 1), I[0] != 0);
    case op::amin: return xf::amin(A(0), detail::dims_vec(I, 1), I[0] != 0);
    case op::logsumexp: return xf::logsumexp(A(0), detail::dims_vec(I, 1), I[0] != 0);
    case op::var: return xf::var(A(0), detail::dims_vec(I, 1), 1, I[0] != 0);
    case op::norm: return xf::norm(A(0));
    case op::softmax: return xf::softmax(A(0), I[0]);
    case op::log_softmax: return xf::log_softmax(A(0), I[0]);
    case op::linear: return xf::linear(A(0), A(1), A(2));
    case op::mse_loss: return xf::mse_loss(A(0), A(1));
    case op::cross_entropy:  // logits [C] with a 0-d target, or [N, C] with a target [N]
      return xf::cross_entropy(A(0), detail::index_tensor(I, 0, A(0).dim() == 1 ? xf::shape_t{} : xf::shape_t{A(0).size(0)}));
    case op::matmul: return xf::matmul(A(0), A(1));
    case op::outer: return xf::outer(A(0), A(1));
    case op::reshape: return A(0).reshape(xf::shape_t(I.begin(), I.end()));
    case op::transpose: return A(0).transpose(I[0], I[1]);
    case op::permute: return A(0).permute(I);
    case op::unsqueeze: return A(0).unsqueeze(I[0]);
    case op::squeeze_dim: return A(0).squeeze(I[0]);
    case op::expand: return A(0).expand(xf::shape_t(I.begin(), I.end()));
    case op::flatten: return A(0).flatten();
    case op::select: return A(0).select(I[0], I[1]);
    case op::narrow: return A(0).narrow(I[0], I[1], I[2]);
    case op::diagonal: return A(0).diagonal();
    case op::movedim: return A(0).movedim(I[0], I[1]);
    case op::contiguous: return A(0).contiguous();
    case op::clone: return A(0).clone();
    case op::flip: return xf::flip(A(0), I);
    case op::split_part: return xf::split(A(0), I[0], I[1])[static_cast<std::size_t>(I[2])];
    case op::index_select: return xf::index_select(A(0), I[0], detail::index_tensor(I, 1, {static_cast<std::int64_t>(I.size() - 1)}));
    case op::gather: {
      xf::shape_t is = A(0).shape();
      is[static_cast<std::size_t>(I[0] < 0 ? I[0] + A(0).dim() : I[0])] = I[1];
      return xf::gather(A(0), I[0], detail::index_tensor(I, 2, is));
    }
    case op::cat: return xf::cat({A(0), A(1)}, I[0]);
    case op::stack: return xf::stack({A(0), A(1)}, I[0]);
    case op::inplace_view: {
      // c = clone(x); a view of c (narrow along I[1], or c transposed when I[1] < 0) gets an
      // in-place op I[0] with operand y (or the scalar s); the value is c
      tensor c = A(0).clone();
      tensor w = I[1] >= 0 ? c.narrow(I[1], I[2], I[3]) : c.transpose(0, 1);
      switch (I[0]) {
        case 0: w.add_(A(1)); break;
        case 1: w.mul_(A(1)); break;
        case 2: w.sub_(s.s); break;
        case 3: w.copy_(A(1)); break;
        case 4: w.zero_(); break;
        case 5: w.sin_(); break;
        case 6: w.neg_(); break;
        default: w.mul_(s.s); break;
      }
      return c;
    }
  }
  return tensor();
}

inline tensor program::run(const std::vector<tensor>& xs) const {
  std::vector<tensor> v(static_cast<std::size_t>(values()));
  for (std::size_t k = 0; k < inputs.size(); ++k) v[static_cast<std::size_t>(inputs[k].id)] = xs[k];
  for (const auto& s : steps) {
    tensor r = run_step(s, v);
    // the generator's shape rules and the library's must agree
    if (!(r.shape() == shapes[static_cast<std::size_t>(s.out)]))
      xf::detail::fail("fuzz: ", op_name(s.o), " gave shape ", r.shape(), " where the generator expects ",
                       shapes[static_cast<std::size_t>(s.out)]);
    v[static_cast<std::size_t>(s.out)] = r;
  }
  return v[static_cast<std::size_t>(output)];
}

/// C++ for one program (the reproducer's body): one xfunc call per step.
inline std::string program::cpp() const {
  std::ostringstream os;
  auto name = [&](int id) { return value_name(id); };
  auto list = [](const std::vector<std::int64_t>& v, std::size_t from = 0) {
    std::string r = "{";
    for (std::size_t k = from; k < v.size(); ++k) r += (k > from ? ", " : "") + std::to_string(v[k]);
    return r + "}";
  };
  auto index = [&](const std::vector<std::int64_t>& v, std::size_t from) {
    return "xf::tensor" + list(v, from);
  };
  os << "// inputs (float64):";
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    static const char* lay[] = {"", ", a transposed view", ", a view at an offset", ", an expanded view"};
    os << "\n//   x" << k << ": " << inputs[k].shape << (inputs[k].positive ? ", positive" : "")
       << lay[static_cast<int>(inputs[k].lay)];
  }
  os << "\nxf::tensor f(";
  for (std::size_t k = 0; k < inputs.size(); ++k) os << (k ? ", " : "") << "const xf::tensor& x" << k;
  os << ") {\n";
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const step& st = steps[k];
    const auto& I = st.i;
    auto a = [&](std::size_t j) { return name(st.a[j]); };
    auto i = [&](std::size_t j) { return std::to_string(I[j]); };
    std::string e, x = st.a.empty() ? "" : a(0), sc = std::to_string(st.s), kd = !I.empty() && I[0] ? "true" : "false";
    switch (st.o) {
      case op::mul_scalar: e = x + " * " + sc; break;
      case op::add_scalar: e = sc + " - " + x; break;
      case op::pow_scalar: e = "xf::pow(" + x + ", " + sc + ")"; break;
      case op::clamp: e = "xf::clamp(" + x + ", -" + sc + ", " + sc + ")"; break;
      case op::neg: e = "-" + x; break;
      case op::custom_op: e = "x_sin_x(" + x + ")  /* custom op with autograd and vmap rules */"; break;
      case op::autograd_fn: e = "softplus_fn::apply(" + x + ")  /* autograd::function */"; break;
      case op::cond: e = std::string("fuzz::detail::cond_step(") + x + ", " + (st.i[0] ? "true" : "false") + ")  /* xf::cond */"; break;
      case op::scan: e = "fuzz::detail::scan_step(" + x + ")  /* xf::scan */"; break;
      case op::map: e = "fuzz::detail::map_step(" + x + ")  /* xf::map */"; break;
      case op::add: e = x + " + " + a(1); break;
      case op::sub: e = x + " - " + a(1); break;
      case op::mul: e = x + " * " + a(1); break;
      case op::div: e = x + " / " + a(1); break;
      case op::where: e = "xf::where(" + a(2) + " > 0.0, " + x + ", " + a(1) + ")"; break;
      case op::sum_all: e = "xf::sum(" + x + ")"; break;
      case op::sum_dims: case op::mean_dims: case op::amax: case op::amin: case op::logsumexp:
        e = std::string("xf::") + (st.o == op::sum_dims ? "sum" : st.o == op::mean_dims ? "mean" : op_name(st.o)) + "(" +
            x + ", " + list(I, 1) + ", " + kd + ")";
        break;
      case op::var: e = "xf::var(" + x + ", " + list(I, 1) + ", 1, " + kd + ")"; break;
      case op::prod: e = "xf::prod(" + x + ", " + i(1) + ", " + kd + ")"; break;
      case op::softmax: case op::log_softmax: e = std::string("xf::") + op_name(st.o) + "(" + x + ", " + i(0) + ")"; break;
      case op::linear: e = "xf::linear(" + x + ", " + a(1) + ", " + a(2) + ")"; break;
      case op::cross_entropy: e = "xf::cross_entropy(" + x + ", " + index(I, 0) + (I.size() == 1 ? ".reshape({}))" : ")"); break;
      case op::reshape: e = x + ".reshape(" + list(I) + ")"; break;
      case op::expand: e = x + ".expand(" + list(I) + ")"; break;
      case op::permute: e = x + ".permute(" + list(I) + ")"; break;
      case op::flip: e = "xf::flip(" + x + ", " + list(I) + ")"; break;
      case op::transpose: e = x + ".transpose(" + i(0) + ", " + i(1) + ")"; break;
      case op::movedim: e = x + ".movedim(" + i(0) + ", " + i(1) + ")"; break;
      case op::unsqueeze: e = x + ".unsqueeze(" + i(0) + ")"; break;
      case op::squeeze_dim: e = x + ".squeeze(" + i(0) + ")"; break;
      case op::select: e = x + ".select(" + i(0) + ", " + i(1) + ")"; break;
      case op::narrow: e = x + ".narrow(" + i(0) + ", " + i(1) + ", " + i(2) + ")"; break;
      case op::flatten: case op::diagonal: case op::contiguous: case op::clone:
        e = x + "." + op_name(st.o) + "()";
        break;
      case op::split_part: e = "xf::split(" + x + ", " + i(0) + ", " + i(1) + ")[" + i(2) + "]"; break;
      case op::index_select: e = "xf::index_select(" + x + ", " + i(0) + ", " + index(I, 1) + ")"; break;
      case op::gather: e = "xf::gather(" + x + ", " + i(0) + ", " + index(I, 2) + ".reshape(/* " + x +
                           "'s shape with dim " + i(0) + " of size " + i(1) + " */))"; break;
      case op::cat: case op::stack: e = std::string("xf::") + op_name(st.o) + "({" + x + ", " + a(1) + "}, " + i(0) + ")"; break;
      case op::inplace_view: {
        static const char* ops[] = {"add_(%)", "mul_(%)", "sub_($)", "copy_(%)", "zero_()", "sin_()", "neg_()", "mul_($)"};
        std::string o = ops[std::min<std::int64_t>(I[0], 7)];
        if (auto p = o.find('%'); p != std::string::npos) o.replace(p, 1, a(1));
        if (auto p = o.find('$'); p != std::string::npos) o.replace(p, 1, sc);
        const std::string view = I[1] >= 0 ? ".narrow(" + i(1) + ", " + i(2) + ", " + i(3) + ")" : ".transpose(0, 1)";
        os << "  xf::tensor " << name(st.out) << " = " << x << ".clone();\n  "
           << name(st.out) << view << "." << o << ";\n";
        continue;
      }
      default:  // the unary and binary functions named like the op
        e = std::string("xf::") + op_name(st.o) + "(" + x + (st.a.size() > 1 ? ", " + a(1) : "") + ")";
    }
    os << "  xf::tensor " << name(st.out) << " = " << e << ";\n";
  }
  os << "  return " << name(output) << ";\n}\n";
  return os.str();
}

}  // namespace fuzz
