// Bad input, everywhere (reliability): every public function of API.md sections 1-5 gets its
// invalid arguments -- dims and indices out of range, shapes that do not fit, wrong dtypes and
// devices, empty, 0-d and undefined tensors, misused transforms, custom ops and higher-order ops
// -- and each call must end in an xf::error (never a crash, a hang, undefined behaviour or a
// silently wrong number) whose message names the function and, where docs/errors.md gives one,
// contains the documented phrase. The table has one row per (function, bad argument); rows with a
// tensor argument run again with that argument batched under vmap, tracked under grad and jvp, and
// wrapped by functionalize, and must fail there with the same name and phrase. Afterwards no
// transform may be left on the stack. At the end the test prints how many bad calls it made.
//
// Values that torch 1.13 defines rather than rejects (NaN propagation, inf, empty reductions,
// derivatives at singular points) are checked against torch's values, written here as constants
// (computed with torch 1.13; the test needs no python). tests/ops/test_reduce_kernels.cpp ("special
// values as torch 1.13 gives them", "reduction kernels: dtypes, empty and one-element tensors,
// NaN") already covers softmax / log_softmax / logsumexp of -inf rows, the mean of nothing, var of
// one value, the gradient of sqrt at 0, integer true division by zero and NaN in amax / amin; they
// are not repeated here.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <iostream>
#include <limits>
#include <numbers>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>
// after xfunc.hpp: single_level_function (API.md §4.2)
#include <xfunc/extend/function.hpp>

namespace xf = xfunc;
using xf::tensor;

namespace {

// ---- the table ---------------------------------------------------------------------------------

/// A call with a bad argument, and what its xf::error must say (every entry a substring of
/// what(): the function's name first, then the documented phrase where there is one). In a
/// bad_op row, an entry that starts with '=' is checked in the plain call only: under vmap the
/// batch rules report the physical (batched) shapes and dims.
struct bad_call {
  std::string what;
  std::function<void()> call;
  std::vector<std::string> says;
};

/// The transforms a row with a tensor argument runs under, besides the plain call.
enum mode : unsigned { plain = 1, under_vmap = 2, under_grad = 4, under_jvp = 8, under_functionalize = 16 };
constexpr unsigned every_mode = plain | under_vmap | under_grad | under_jvp | under_functionalize;

/// A row whose bad call takes one tensor argument `x` (valid by itself: the bad part is in the
/// call), so that it can also run with x batched, tracked by grad or jvp, or functionalized.
/// Modes that do not apply (vmap for rows whose error is about a value vmap cannot see, grad and
/// jvp for a non-floating x) are left out.
struct bad_op {
  std::string what;
  tensor x;
  std::function<void(const tensor&)> call;
  std::vector<std::string> says;
  unsigned modes = every_mode;
};

struct table {
  std::vector<bad_op> ops;
  std::vector<bad_call> calls;
  std::size_t rows() const { return ops.size() + calls.size(); }
  void op(std::string what, tensor x, std::function<void(const tensor&)> f, std::vector<std::string> says,
          unsigned modes = every_mode) {
    ops.push_back({std::move(what), std::move(x), std::move(f), std::move(says), modes});
  }
  void call(std::string what, std::function<void()> f, std::vector<std::string> says) {
    calls.push_back({std::move(what), std::move(f), std::move(says)});
  }
};

/// The calls of the table: each bad_op once per mode that applies to it.
std::vector<bad_call> expand(const table& t) {
  std::vector<bad_call> out;
  for (const bad_op& r : t.ops) {
    const bool dense = r.x.defined() && r.x.device() == xf::cpu;
    const bool floating = dense && xf::is_floating(r.x.dtype());
    auto f = r.call;
    const tensor x = r.x;
    std::vector<std::string> plain_says, says;
    for (const std::string& s : r.says) {
      plain_says.push_back(s.starts_with('=') ? s.substr(1) : s);
      if (!s.starts_with('=')) says.push_back(s);
    }
    if (r.modes & plain) out.push_back({r.what, [f, x] { f(x); }, plain_says});
    if ((r.modes & under_vmap) && dense)
      out.push_back({r.what + " [x batched under vmap]",
                     [f, x] {
                       (void)xf::vmap([&](const tensor& b) {
                         f(b);
                         return b;
                       })(xf::stack({x, x}, 0));
                     },
                     says});
    if ((r.modes & under_grad) && floating)
      out.push_back({r.what + " [x tracked by grad]",
                     [f, x] {
                       (void)xf::grad([&](const tensor& g) {
                         f(g);
                         return xf::sum(g);
                       })(x);
                     },
                     says});
    if ((r.modes & under_jvp) && floating)
      out.push_back({r.what + " [x a dual of jvp]",
                     [f, x] {
                       (void)xf::jvp(
                           [&](const tensor& d) {
                             f(d);
                             return d;
                           },
                           x, xf::ones_like(x));
                     },
                     says});
    if ((r.modes & under_functionalize) && dense)
      out.push_back({r.what + " [x functionalized]",
                     [f, x] {
                       (void)xf::functionalize([&](const tensor& v) {
                         f(v);
                         return v;
                       })(x);
                     },
                     says});
  }
  for (const bad_call& c : t.calls) out.push_back(c);
  return out;
}

// ---- inputs ------------------------------------------------------------------------------------

tensor x23() { return xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({2, 3}); }  // [[0, 1, 2], [3, 4, 5]]
tensor x3() { return tensor{1.0, 2.0, 3.0}; }
tensor s0() { return xf::scalar(2.0); }
tensor e0() { return xf::zeros({0}, xf::f64); }
tensor i3() { return tensor{0, 1, 2}; }
tensor b3() { return tensor{true, false, true}; }
tensor m23() { return xf::zeros({2, 3}, xf::f32, xf::meta); }
const tensor undefined{};

// ---- custom functions and ops used by the rows -------------------------------------------------

/// An autograd::function without backward, jvp or vmap rule.
struct no_rules : xf::autograd::function<no_rules> {
  static tensor forward(const tensor& x) { return x * 2.0; }
  static void setup_context(xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {}
};
/// backward reads a context key that setup_context never set.
struct missing_key : xf::autograd::function<missing_key> {
  static tensor forward(const tensor& x) { return x * 2.0; }
  static void setup_context(xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {}
  static tensor backward(xf::autograd::context& ctx, const tensor& g) { return g * ctx.get<double>("scale"); }
};
/// backward reads a context key with another type than the stored one.
struct wrong_type_key : xf::autograd::function<wrong_type_key> {
  static tensor forward(const tensor& x) { return x * 2.0; }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<tensor>&, const tensor&) {
    ctx.set("scale", 2.0);
  }
  static tensor backward(xf::autograd::context& ctx, const tensor& g) {
    return g * static_cast<double>(ctx.get<std::int64_t>("scale"));
  }
};
/// a single-level function applied where none may be.
struct lone_single_level : xf::autograd::single_level_function<lone_single_level> {
  static tensor forward(const tensor& x) { return x * 2.0; }
  static void setup_context(xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {}
  static tensor backward(xf::autograd::context&, const tensor& g) { return g * 2.0; }
};

/// forward 2 x, backward 3 g: a wrong derivative for the testing helpers to find.
struct wrong_grad : xf::autograd::function<wrong_grad> {
  static tensor forward(const tensor& x) { return x * 2.0; }
  static void setup_context(xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {}
  static tensor backward(xf::autograd::context&, const tensor& g) { return g * 3.0; }
};
tensor wrong_derivative(const tensor& x) { return wrong_grad::apply(x); }

// ---- rows --------------------------------------------------------------------------------------

using dims_fn = std::function<tensor(const tensor&, const xf::dims_t&)>;
using dim_fn = std::function<tensor(const tensor&, std::int64_t)>;

void tensors_and_factories(table& t) {
  // construction from values
  t.call("xf::tensor from a ragged nested list", [] { (void)tensor{{1.0, 2.0}, {3.0}}; },
         {"xf::tensor", "ragged nested list"});
  t.call("xf::tensor from a ragged 3-level list", [] { (void)tensor{{{1, 2}, {3, 4}}, {{5, 6}}}; },
         {"xf::tensor", "ragged nested list"});
  // negative extents and sizes that do not fit
  t.call("xf::zeros with a negative extent", [] { (void)xf::zeros({-1, 3}); }, {"xf::zeros", "shape", "negative extent"});
  t.call("xf::ones with a negative extent", [] { (void)xf::ones({2, -3}); }, {"xf::ones", "shape", "negative extent"});
  t.call("xf::empty with a negative extent", [] { (void)xf::empty({-5}); }, {"xf::empty", "shape", "negative extent"});
  t.call("xf::full with a negative extent", [] { (void)xf::full({-2}, 1.0); }, {"xf::full", "shape", "negative extent"});
  t.call("xf::rand with a negative extent", [] { (void)xf::rand({-2}); }, {"xf::rand", "shape", "negative extent"});
  t.call("xf::randn with a negative extent", [] { (void)xf::randn({3, -1}); }, {"xf::randn", "shape", "negative extent"});
  t.call("xf::eye(-1)", [] { (void)xf::eye(-1); }, {"xf::eye", "shape", "negative extent"});
  t.call("xf::linspace with n = -1", [] { (void)xf::linspace(0.0, 1.0, -1); }, {"xf::linspace", "shape", "negative extent"});
  t.call("xf::zeros with more elements than int64_t holds", [] { (void)xf::zeros({1LL << 62, 4}); },
         {"xf::zeros", "shape", "more than int64_t can hold"});
  t.call("xf::zeros with more bytes than int64_t holds (meta)", [] { (void)xf::zeros({1LL << 62}, xf::f64, xf::meta); },
         {"xf::zeros", "shape", "bytes"});
  t.call("xf::eye(n) with n * n past int64_t", [] { (void)xf::eye(1LL << 32); }, {"xf::eye", "shape"});
  // arange
  t.call("xf::arange with step 0", [] { (void)xf::arange(0.0, 1.0, 0.0); }, {"xf::arange", "step must be nonzero"});
  t.call("xf::arange with a NaN end", [] { (void)xf::arange(0.0, std::nan(""), 1.0); }, {"xf::arange", "is not a number"});
  // as torch: a range against the sign of step is refused (it was empty before 2026-12-05)
  t.call("xf::arange(5, 1, 1)", [] { (void)xf::arange(5.0, 1.0, 1.0); },
         {"xf::arange", "the range from 5 to 1 goes against the sign of step 1"});
  t.call("xf::arange(1, 5, -1)", [] { (void)xf::arange(1.0, 5.0, -1.0); }, {"xf::arange", "against the sign of step -1"});
  t.call("xf::arange(-3)", [] { (void)xf::arange(-3); }, {"xf::arange", "the range from 0 to -3"});
  t.call("xf::arange with an infinite end", [] { (void)xf::arange(0.0, INFINITY, 1.0); },
         {"xf::arange", "more elements than int64_t can hold"});
  t.call("xf::arange of int64 past int64_t (1e300 / 1e298 steps)", [] { (void)xf::arange(0.0, 1e300, 1e298, xf::i64); },
         {"xf::arange", "cannot be converted to int64"});
  t.call("xf::arange of int64 from -inf", [] { (void)xf::arange(-INFINITY, 0.0, 1.0, xf::i64); }, {"xf::arange"});
  t.call("xf::linspace of int64 to NaN", [] { (void)xf::linspace(0.0, std::nan(""), 3, xf::i64); },
         {"xf::linspace", "cannot be converted to int64"});
  // dtypes
  t.call("xf::rand of int64", [] { (void)xf::rand({2}, xf::i64); }, {"xf::rand", "needs a floating dtype"});
  t.call("xf::randn of bool", [] { (void)xf::randn({2}, xf::b8); }, {"xf::randn", "needs a floating dtype"});
  t.call("xf::rand_like of an int64 tensor", [] { (void)xf::rand_like(i3()); }, {"xf::rand", "needs a floating dtype"});
  t.call("xf::randn_like of a bool tensor", [] { (void)xf::randn_like(b3()); }, {"xf::randn", "needs a floating dtype"});
  t.call("xf::full of int64 with NaN (torch: 'cannot be converted to type int64_t')",
         [] { (void)xf::full({2}, std::nan(""), xf::i64); }, {"xf::full", "int64"});
  t.call("xf::full of int64 with 1e300", [] { (void)xf::full({2}, 1e300, xf::i64); }, {"xf::full", "int64"});
  t.call("xf::full_like of an int64 tensor with inf", [] { (void)xf::full_like(i3(), INFINITY); },
         {"xf::full_like", "int64"});
  // the cuda device (this program is not linked with xfunc::cuda)
  t.call("xf::zeros on cuda", [] { (void)xf::zeros({2}, xf::f32, xf::cuda); },
         {"xf::zeros", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::ones on cuda", [] { (void)xf::ones({2}, xf::f32, xf::cuda); },
         {"xf::ones", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::full on cuda", [] { (void)xf::full({2}, 1.0, xf::f32, xf::cuda); },
         {"xf::full", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::eye on cuda", [] { (void)xf::eye(2, xf::f32, xf::cuda); },
         {"xf::eye", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::zeros_like on cuda", [] { (void)xf::zeros_like(i3(), xf::cuda); },
         {"xf::zeros_like", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::randn_like on cuda", [] { (void)xf::randn_like(xf::ones({2}), xf::cuda); },
         {"xf::randn", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::arange on cuda", [] { (void)xf::arange(0.0, 3.0, 1.0, xf::i64, xf::cuda); },
         {"xf::arange", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::linspace on cuda", [] { (void)xf::linspace(0.0, 1.0, 3, xf::f32, xf::cuda); },
         {"xf::linspace", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::rand on cuda", [] { (void)xf::rand({2}, xf::f32, xf::cuda); },
         {"xf::rand", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::randn on cuda", [] { (void)xf::randn({2}, xf::f32, xf::cuda); },
         {"xf::randn", "cuda:0 is not available in this build", "xfunc::cuda"});
  t.call("xf::tensor::to(cuda)", [] { (void)x3().to(xf::cuda); }, {"xf::to", "cuda:0 is not available in this build", "xfunc::cuda"});
  // undefined tensors into the *_like factories
  t.call("xf::zeros_like(undefined)", [] { (void)xf::zeros_like(undefined); },
         {"xf::zeros_like", "operation on an undefined tensor"});
  t.call("xf::ones_like(undefined)", [] { (void)xf::ones_like(undefined); },
         {"xf::ones_like", "operation on an undefined tensor"});
  t.call("xf::empty_like(undefined)", [] { (void)xf::empty_like(undefined); },
         {"xf::empty_like", "operation on an undefined tensor"});
  t.call("xf::full_like(undefined)", [] { (void)xf::full_like(undefined, 1.0); },
         {"xf::full_like", "operation on an undefined tensor"});
  t.call("xf::rand_like(undefined)", [] { (void)xf::rand_like(undefined); },
         {"xf::rand_like", "operation on an undefined tensor"});
  t.call("xf::randn_like(undefined)", [] { (void)xf::randn_like(undefined); },
         {"xf::randn_like", "operation on an undefined tensor"});
}

void accessors_and_io(table& t) {
  // item()
  t.op("item() of a tensor of 3 elements", x3(), [](const tensor& x) { (void)x.item<double>(); },
       {"item()", "item() needs a tensor with exactly one element"}, plain | under_grad | under_jvp | under_functionalize);
  t.op("item() of an empty tensor", e0(), [](const tensor& x) { (void)x.item<double>(); },
       {"item()", "item() needs a tensor with exactly one element"}, plain | under_grad | under_jvp | under_functionalize);
  t.op("item() of a batched tensor", s0(), [](const tensor& x) { (void)x.item<double>(); }, {"item()", "data-dependent"},
       under_vmap);
  t.call("item() of a meta tensor", [] { (void)xf::zeros({1}, xf::f32, xf::meta).item<float>(); },
         {"item()", "meta tensors have no data"});
  t.call("item() of an undefined tensor", [] { (void)undefined.item<double>(); },
         {"item()", "operation on an undefined tensor"});
  // size(d), to(), to_xtensor, allclose, equal
  t.op("size(2) of a 2-d tensor", x23(), [](const tensor& x) { (void)x.size(2); },
       {"xf::tensor::size", "dim 2 is out of range"});
  t.op("size(-3) of a 2-d tensor", x23(), [](const tensor& x) { (void)x.size(-3); },
       {"xf::tensor::size", "dim -3 is out of range"});
  t.op("size(0) of a 0-d tensor (torch: 'tensor has no dimensions')", s0(), [](const tensor& x) { (void)x.size(0); },
       {"xf::tensor::size", "0-d"});
  t.op("size(-1) of a 0-d tensor", s0(), [](const tensor& x) { (void)x.size(-1); }, {"xf::tensor::size", "0-d"});
  t.call("size(0) of an undefined tensor", [] { (void)undefined.size(0); },
         {"xf::tensor::size", "operation on an undefined tensor"});
  t.call("to(cpu) of a meta tensor", [] { (void)m23().to(xf::cpu); }, {"xf::to", "has no data to move to cpu"});
  t.call("to(f64) of an undefined tensor", [] { (void)undefined.to(xf::f64); },
         {"xf::to", "operation on an undefined tensor"});
  t.call("to(meta) of an undefined tensor", [] { (void)undefined.to(xf::meta); },
         {"xf::to", "operation on an undefined tensor"});
  t.call("to_xtensor of a meta tensor", [] { (void)xf::to_xtensor<float>(m23()); },
         {"to_xtensor", "meta tensors have no data"});
  t.call("to_xtensor of an undefined tensor", [] { (void)xf::to_xtensor<double>(undefined); },
         {"to_xtensor", "operation on an undefined tensor"});
  t.op("to_xtensor of a batched tensor", x3(), [](const tensor& x) { (void)xf::to_xtensor<double>(x); },
       {"to_xtensor", "data-dependent"}, under_vmap);
  t.call("allclose with a meta tensor", [] { (void)xf::allclose(m23(), m23()); }, {"allclose", "meta tensors have no data"});
  t.call("allclose with an undefined tensor", [] { (void)xf::allclose(undefined, x3()); },
         {"allclose", "operation on an undefined tensor"});
  t.call("equal with an undefined tensor", [] { (void)xf::equal(x3(), undefined); },
         {"equal", "operation on an undefined tensor"});
  t.call("equal with a meta tensor", [] { (void)xf::equal(x3(), x3().to(xf::meta)); }, {"equal", "meta tensors have no data"});
  t.op("allclose of a batched tensor", x3(), [](const tensor& x) { (void)xf::allclose(x, x); },
       {"allclose", "data-dependent"}, under_vmap);
}

void reductions(table& t) {
  const std::vector<std::pair<std::string, dims_fn>> by_dims = {
      {"xf::sum", [](const tensor& x, const xf::dims_t& d) { return xf::sum(x, d); }},
      {"xf::mean", [](const tensor& x, const xf::dims_t& d) { return xf::mean(x, d); }},
      {"xf::amax", [](const tensor& x, const xf::dims_t& d) { return xf::amax(x, d); }},
      {"xf::amin", [](const tensor& x, const xf::dims_t& d) { return xf::amin(x, d); }},
      {"xf::logsumexp", [](const tensor& x, const xf::dims_t& d) { return xf::logsumexp(x, d); }},
      {"xf::var", [](const tensor& x, const xf::dims_t& d) { return xf::var(x, d); }},
  };
  for (const auto& entry : by_dims) {
    const std::string& name = entry.first;
    const auto& f = entry.second;
    t.op(name + " over dim 2 of a 2-d tensor", x23(), [f](const tensor& x) { (void)f(x, {2}); },
         {name, "dim 2 is out of range", "[-2, 1]"});
    t.op(name + " over dim -3 of a 2-d tensor", x23(), [f](const tensor& x) { (void)f(x, {0, -3}); },
         {name, "dim -3 is out of range", "[-2, 1]"});
    t.op(name + " over dims {1, -1} (the same dim twice)", x23(), [f](const tensor& x) { (void)f(x, {1, -1}); },
         {name, "more than once"});
    t.op(name + " over dim 1 of a 0-d tensor", s0(), [f](const tensor& x) { (void)f(x, {1}); },
         {name, "dim 1 is out of range"});
    t.call(name + " of an undefined tensor", [f] { (void)f(undefined, {}); }, {name, "operation on an undefined tensor"});
  }
  // as in torch, mean and var need a floating tensor (mean gave float32 before 2026-12-05)
  const std::vector<std::pair<std::string, std::function<tensor(const tensor&)>>> floating_only = {
      {"xf::mean", [](const tensor& x) { return xf::mean(x); }},
      {"xf::var", [](const tensor& x) { return xf::var(x, {0}); }},
  };
  for (const auto& entry : floating_only) {
    const std::string& name = entry.first;
    const auto& f = entry.second;
    t.call(name + " of an int64 tensor", [f] { (void)f(xf::zeros({3}, xf::i64)); },
           {name, "needs a floating tensor, got int64", "t.to(xf::f32)"});
    t.call(name + " of a boolean tensor", [f] { (void)f(xf::zeros({3}, xf::b8)); },
           {name, "needs a floating tensor, got bool"});
  }
  const std::vector<std::pair<std::string, dim_fn>> by_dim = {
      {"xf::prod", [](const tensor& x, std::int64_t d) { return xf::prod(x, d); }},
      {"xf::argmax", [](const tensor& x, std::int64_t d) { return xf::argmax(x, d); }},
      {"xf::softmax", [](const tensor& x, std::int64_t d) { return xf::softmax(x, d); }},
      {"xf::log_softmax", [](const tensor& x, std::int64_t d) { return xf::log_softmax(x, d); }},
  };
  for (const auto& entry : by_dim) {
    const std::string& name = entry.first;
    const auto& f = entry.second;
    t.op(name + " over dim 2 of a 2-d tensor", x23(), [f](const tensor& x) { (void)f(x, 2); },
         {name, "dim 2 is out of range", "[-2, 1]"});
    t.op(name + " over dim -3 of a 2-d tensor", x23(), [f](const tensor& x) { (void)f(x, -3); },
         {name, "dim -3 is out of range", "[-2, 1]"});
    t.op(name + " over dim 1 of a 0-d tensor", s0(), [f](const tensor& x) { (void)f(x, 1); },
         {name, "dim 1 is out of range"});
    t.call(name + " of an undefined tensor", [f] { (void)f(undefined, 0); }, {name, "operation on an undefined tensor"});
  }
  t.call("xf::norm of an undefined tensor", [] { (void)xf::norm(undefined); }, {"xf::norm", "operation on an undefined tensor"});
  // empty: the max, min or argmax of nothing (torch: 'Expected reduction dim 0 to have non-zero size')
  t.op("xf::amax over an empty dim", e0(), [](const tensor& x) { (void)xf::amax(x, {0}); },
       {"xf::amax", "cannot reduce over dim"});
  t.op("xf::amin of every dim of an empty tensor", e0(), [](const tensor& x) { (void)xf::amin(x, {}); },
       {"xf::amin", "cannot reduce over dim"});
  t.op("xf::argmax over an empty dim", e0(), [](const tensor& x) { (void)xf::argmax(x, 0); },
       {"xf::argmax", "cannot reduce over dim"});
  t.op("xf::amax over the empty dim 0 of a [0, 2] tensor", xf::zeros({0, 2}, xf::f64),
       [](const tensor& x) { (void)xf::amax(x, {0}); }, {"xf::amax", "cannot reduce over dim"});
  t.op("xf::argmax over the empty dim 1 of a [2, 0] tensor", xf::zeros({2, 0}, xf::f64),
       [](const tensor& x) { (void)xf::argmax(x, 1); }, {"xf::argmax", "cannot reduce over dim"});
}

void pointwise(table& t) {
  // shapes that do not broadcast, for every binary op
  using bin = std::function<tensor(const tensor&, const tensor&)>;
  const std::vector<std::pair<std::string, bin>> binary = {
      {"xf::add", [](const tensor& a, const tensor& b) { return a + b; }},
      {"xf::sub", [](const tensor& a, const tensor& b) { return a - b; }},
      {"xf::mul", [](const tensor& a, const tensor& b) { return a * b; }},
      {"xf::div", [](const tensor& a, const tensor& b) { return a / b; }},
      {"xf::pow", [](const tensor& a, const tensor& b) { return xf::pow(a, b); }},
      {"xf::maximum", [](const tensor& a, const tensor& b) { return xf::maximum(a, b); }},
      {"xf::minimum", [](const tensor& a, const tensor& b) { return xf::minimum(a, b); }},
      {"xf::atan2", [](const tensor& a, const tensor& b) { return xf::atan2(a, b); }},
      {"xf::eq", [](const tensor& a, const tensor& b) { return a == b; }},
      {"xf::ne", [](const tensor& a, const tensor& b) { return a != b; }},
      {"xf::lt", [](const tensor& a, const tensor& b) { return a < b; }},
      {"xf::le", [](const tensor& a, const tensor& b) { return a <= b; }},
      {"xf::gt", [](const tensor& a, const tensor& b) { return a > b; }},
      {"xf::ge", [](const tensor& a, const tensor& b) { return a >= b; }},
      {"xf::logical_and", [](const tensor& a, const tensor& b) { return xf::logical_and(a > 0.0, b > 0.0); }},
      {"xf::logical_or", [](const tensor& a, const tensor& b) { return xf::logical_or(a > 0.0, b > 0.0); }},
      {"xf::mse_loss", [](const tensor& a, const tensor& b) { return xf::mse_loss(a, b); }},
  };
  for (const auto& entry : binary) {
    const std::string& name = entry.first;
    const auto& f = entry.second;
    // (logical ops compare first, so the broadcast fails in their own call)
    t.op(name + " of [2, 3] and [4]", x23(), [f](const tensor& x) { (void)f(x, xf::ones({4}, xf::f64)); },
         {name == "xf::mse_loss" ? "xf::sub" : name, "cannot be broadcast together", "=shapes [2, 3] and [4]"});
    t.op(name + " of [3] and [2, 3] swapped to [3, 2]", x3(), [f](const tensor& x) { (void)f(x23().t(), x); },
         {name == "xf::mse_loss" ? "xf::sub" : name, "cannot be broadcast together"});
    if (name != "xf::logical_and" && name != "xf::logical_or" && name != "xf::mse_loss") {
      t.call(name + " of undefined and a tensor", [f] { (void)f(undefined, x3()); },
             {name, "operation on an undefined tensor"});
      t.call(name + " of a tensor and undefined", [f] { (void)f(x3(), undefined); },
             {name, "operation on an undefined tensor"});
    }
  }
  t.op("xf::where with a condition that does not broadcast", x23(),
       [](const tensor& x) { (void)xf::where(xf::tensor{true, false}, x, x); }, {"xf::where", "cannot be broadcast together"});
  t.op("xf::where with branches that do not broadcast", x23(),
       [](const tensor& x) { (void)xf::where(x > 1.0, x, xf::ones({2}, xf::f64)); },
       {"xf::where", "cannot be broadcast together"});
  // a condition that is not boolean is refused, as in torch (it was read as "nonzero" before 2026-12-05)
  t.op("xf::where with a floating condition", x23(), [](const tensor& x) { (void)xf::where(x, x, x); },
       {"xf::where", "the condition must be a boolean tensor, got float64", "c != 0.0"});
  t.call("xf::where with an int64 condition", [] { (void)xf::where(xf::zeros({3}, xf::i64), x3(), x3()); },
         {"xf::where", "the condition must be a boolean tensor, got int64"});
  t.call("xf::where with an undefined condition", [] { (void)xf::where(undefined, x3(), x3()); },
         {"xf::where", "operation on an undefined tensor"});
  t.call("xf::where with an undefined branch", [] { (void)xf::where(x3() > 1.0, x3(), undefined); },
         {"xf::where", "operation on an undefined tensor"});
  t.op("xf::clamp with lo > hi", x3(), [](const tensor& x) { (void)xf::clamp(x, 1.0, -1.0); }, {"xf::clamp", "must not exceed"});
  // every unary op on an undefined tensor
  using un = std::function<tensor(const tensor&)>;
  const std::vector<std::pair<std::string, un>> unary = {
      {"xf::neg", [](const tensor& a) { return -a; }},
      {"xf::exp", [](const tensor& a) { return xf::exp(a); }},
      {"xf::log", [](const tensor& a) { return xf::log(a); }},
      {"xf::sin", [](const tensor& a) { return xf::sin(a); }},
      {"xf::cos", [](const tensor& a) { return xf::cos(a); }},
      {"xf::tan", [](const tensor& a) { return xf::tan(a); }},
      {"xf::tanh", [](const tensor& a) { return xf::tanh(a); }},
      {"xf::sigmoid", [](const tensor& a) { return xf::sigmoid(a); }},
      {"xf::relu", [](const tensor& a) { return xf::relu(a); }},
      {"xf::abs", [](const tensor& a) { return xf::abs(a); }},
      {"xf::sqrt", [](const tensor& a) { return xf::sqrt(a); }},
      {"xf::rsqrt", [](const tensor& a) { return xf::rsqrt(a); }},
      {"xf::square", [](const tensor& a) { return xf::square(a); }},
      {"xf::log1p", [](const tensor& a) { return xf::log1p(a); }},
      {"xf::expm1", [](const tensor& a) { return xf::expm1(a); }},
      {"xf::sign", [](const tensor& a) { return xf::sign(a); }},
      {"xf::reciprocal", [](const tensor& a) { return xf::reciprocal(a); }},
      {"xf::erf", [](const tensor& a) { return xf::erf(a); }},
      {"xf::logical_not", [](const tensor& a) { return xf::logical_not(a); }},
      {"xf::clamp", [](const tensor& a) { return xf::clamp(a, 0.0, 1.0); }},
      {"xf::pow", [](const tensor& a) { return xf::pow(a, 2.0); }},
      {"xf::add", [](const tensor& a) { return a + 1.0; }},
      {"xf::mul", [](const tensor& a) { return 2.0 * a; }},
      {"xf::lt", [](const tensor& a) { return a < 1.0; }},
  };
  for (const auto& entry : unary) {
    const std::string& name = entry.first;
    const auto& f = entry.second;
    t.call(name + " of an undefined tensor", [f] { (void)f(undefined); }, {name, "operation on an undefined tensor"});
  }
}

void nn_and_linalg(table& t) {
  const tensor logits = xf::arange(0.0, 12.0, 1.0, xf::f64).reshape({3, 4}) / 10.0;
  t.op("xf::cross_entropy with a float target", logits,
       [](const tensor& l) { (void)xf::cross_entropy(l, tensor{0.0, 1.0, 2.0}); },
       {"xf::cross_entropy", "target must hold int64 class indices"});
  t.op("xf::cross_entropy with a bool target", logits, [](const tensor& l) { (void)xf::cross_entropy(l, b3()); },
       {"xf::cross_entropy", "target must hold int64 class indices"});
  t.op("xf::cross_entropy with a target of 2 for 3 rows", logits,
       [](const tensor& l) { (void)xf::cross_entropy(l, tensor{0, 1}); }, {"xf::cross_entropy", "[3, 4]", "[2]"});
  t.op("xf::cross_entropy with a 2-d target", logits,
       [](const tensor& l) { (void)xf::cross_entropy(l, tensor{{0, 1, 2}}); }, {"xf::cross_entropy", "expects logits"});
  t.op("xf::cross_entropy with 3-d logits", xf::zeros({2, 3, 4}, xf::f64),
       [](const tensor& l) { (void)xf::cross_entropy(l, xf::zeros({2, 3}, xf::i64)); }, {"xf::cross_entropy", "expects logits"});
  t.op("xf::cross_entropy with class 4 of 4", logits, [](const tensor& l) { (void)xf::cross_entropy(l, tensor{0, 4, 1}); },
       {"xf::cross_entropy", "out of range for 4 classes"});
  t.op("xf::cross_entropy with class -1 (gather would take it from the end)", logits,
       [](const tensor& l) { (void)xf::cross_entropy(l, tensor{0, -1, 1}); }, {"xf::cross_entropy", "out of range (negative)"});
  t.call("xf::cross_entropy under vmap with a batched target holding class -1 (torch refuses it)", [logits] {
    (void)xf::vmap([&](const tensor& target) { return xf::cross_entropy(logits, target); })(tensor{{0, 1, 2}, {0, -1, 1}});
  }, {"xf::gather", "index -1 is out of range", "negative ones are refused"});
  t.op("xf::cross_entropy with class -100 (torch's ignore_index is not supported)", logits,
       [](const tensor& l) { (void)xf::cross_entropy(l, tensor{0, -100, 1}); }, {"xf::cross_entropy", "out of range"});
  t.op("xf::cross_entropy of a 0-d target with class 7 of 4", x3(),
       [](const tensor& l) { (void)xf::cross_entropy(xf::cat({l, l}, 0).narrow(0, 0, 4), xf::scalar(std::int64_t{7})); },
       {"xf::cross_entropy", "out of range for 4 classes"});
  t.call("xf::cross_entropy with undefined logits", [] { (void)xf::cross_entropy(undefined, i3()); },
         {"xf::cross_entropy", "operation on an undefined tensor"});
  t.call("xf::cross_entropy with an undefined target", [] { (void)xf::cross_entropy(x23(), undefined); },
         {"xf::cross_entropy", "operation on an undefined tensor"});
  // linear
  t.op("xf::linear with an inner size that does not fit", x23(),
       [](const tensor& x) { (void)xf::linear(x, xf::ones({4, 2}, xf::f64), xf::ones({4}, xf::f64)); },
       {"xf::linear", "cannot be multiplied"});
  t.op("xf::linear with a bias of the wrong size", x23(),
       [](const tensor& x) { (void)xf::linear(x, xf::ones({4, 3}, xf::f64), xf::ones({3}, xf::f64)); },
       {"xf::linear", "cannot be broadcast together"});
  t.op("xf::linear with a 1-d weight", x23(), [](const tensor& x) { (void)xf::linear(x, x3(), undefined); },
       {"xf::linear", "2-d"});
  t.op("xf::linear with a 3-d weight", x23(),
       [](const tensor& x) { (void)xf::linear(x, xf::ones({1, 4, 3}, xf::f64), undefined); }, {"xf::linear", "2-d"});
  t.call("xf::linear with undefined input", [] { (void)xf::linear(undefined, xf::ones({4, 3}, xf::f64), undefined); },
         {"xf::linear", "operation on an undefined tensor"});
  t.call("xf::linear with an undefined weight", [] { (void)xf::linear(x23(), undefined, undefined); },
         {"xf::linear", "operation on an undefined tensor"});
  // matrix products
  using bin = std::function<tensor(const tensor&, const tensor&)>;
  struct mat_case {
    std::string name;
    bin f;
    tensor a;
    tensor b;
    std::string phrase;
  };
  const bin matmul = [](const tensor& a, const tensor& b) { return xf::matmul(a, b); };
  const bin mm = [](const tensor& a, const tensor& b) { return xf::mm(a, b); };
  const bin mv = [](const tensor& a, const tensor& b) { return xf::mv(a, b); };
  const bin bmm = [](const tensor& a, const tensor& b) { return xf::bmm(a, b); };
  const bin dot = [](const tensor& a, const tensor& b) { return xf::dot(a, b); };
  const bin outer = [](const tensor& a, const tensor& b) { return xf::outer(a, b); };
  const std::vector<mat_case> cases = {
      {"xf::matmul", matmul, x23(), x23(), "cannot be multiplied"},
      {"xf::matmul", matmul, x3(), xf::ones({4}, xf::f64), "cannot be multiplied"},
      {"xf::matmul", matmul, x3(), xf::ones({2, 2}, xf::f64), "cannot be multiplied"},
      {"xf::matmul", matmul, x23(), xf::ones({2}, xf::f64), "cannot be multiplied"},
      {"xf::matmul", matmul, xf::ones({2, 2, 3}, xf::f64), xf::ones({3, 3, 2}, xf::f64), "cannot be broadcast together"},
      {"xf::matmul", matmul, s0(), x3(), "at least one dimension"},
      {"xf::matmul", matmul, x3(), s0(), "at least one dimension"},
      {"xf::mm", mm, x3(), x23(), "2-d"},
      {"xf::mm", mm, x23(), x23(), "cannot be multiplied"},
      {"xf::mv", mv, x23(), x23(), "1-d"},
      {"xf::mv", mv, x23(), xf::ones({2}, xf::f64), "cannot be multiplied"},
      {"xf::bmm", bmm, x23(), x23(), "3-d"},
      {"xf::bmm", bmm, xf::ones({2, 2, 3}, xf::f64), xf::ones({3, 3, 2}, xf::f64), "same batch size"},
      {"xf::bmm", bmm, xf::ones({2, 2, 3}, xf::f64), xf::ones({2, 4, 2}, xf::f64), "cannot be multiplied"},
      {"xf::dot", dot, x23(), x3(), "1-d"},
      {"xf::dot", dot, x3(), xf::ones({4}, xf::f64), "cannot be multiplied"},
      {"xf::outer", outer, x23(), x3(), "1-d"},
      {"xf::outer", outer, x3(), s0(), "1-d"},
  };
  for (const mat_case& c : cases) {
    std::ostringstream what;
    what << c.name << " of shapes " << c.a.shape() << " and " << c.b.shape();
    const bin f = c.f;
    const tensor b = c.b;
    t.op(what.str(), c.a, [f, b](const tensor& a) { (void)f(a, b); }, {c.name, c.phrase});
  }
  for (const auto& entry : std::vector<std::pair<std::string, bin>>{
           {"xf::matmul", matmul}, {"xf::mm", mm}, {"xf::mv", mv}, {"xf::bmm", bmm}, {"xf::dot", dot}, {"xf::outer", outer}}) {
    const std::string& name = entry.first;
    const auto& f = entry.second;
    t.call(name + " with an undefined tensor", [f] { (void)f(undefined, x3()); }, {name, "operation on an undefined tensor"});
  }
}

void views_and_indexing(table& t) {
  using op1 = std::function<void(const tensor&)>;
  struct view_case {
    std::string what;
    std::string name;
    op1 f;
    std::vector<std::string> phrase;
  };
  const std::vector<view_case> on_x23 = {
      {"select(2, 0)", "xf::select", [](const tensor& x) { (void)x.select(2, 0); }, {"dim 2 is out of range"}},
      {"select(-3, 0)", "xf::select", [](const tensor& x) { (void)x.select(-3, 0); }, {"dim -3 is out of range"}},
      {"select(0, 2)", "xf::select", [](const tensor& x) { (void)x.select(0, 2); }, {"index 2 is out of range"}},
      {"select(1, -4)", "xf::select", [](const tensor& x) { (void)x.select(1, -4); }, {"index -4 is out of range"}},
      {"narrow(2, 0, 1)", "xf::narrow", [](const tensor& x) { (void)x.narrow(2, 0, 1); }, {"dim 2 is out of range"}},
      {"narrow(-3, 0, 1)", "xf::narrow", [](const tensor& x) { (void)x.narrow(-3, 0, 1); }, {"dim -3 is out of range"}},
      {"narrow(1, 4, 0)", "xf::narrow", [](const tensor& x) { (void)x.narrow(1, 4, 0); }, {"do not fit"}},
      {"narrow(1, -4, 1)", "xf::narrow", [](const tensor& x) { (void)x.narrow(1, -4, 1); }, {"do not fit"}},
      {"narrow(1, 2, 2)", "xf::narrow", [](const tensor& x) { (void)x.narrow(1, 2, 2); }, {"do not fit"}},
      {"narrow(1, 1, -1)", "xf::narrow", [](const tensor& x) { (void)x.narrow(1, 1, -1); }, {"do not fit"}},
      {"narrow(1, 1, INT64_MAX)", "xf::narrow",
       [](const tensor& x) { (void)x.narrow(1, 1, std::numeric_limits<std::int64_t>::max()); }, {"do not fit"}},
      {"transpose(0, 2)", "xf::transpose", [](const tensor& x) { (void)x.transpose(0, 2); }, {"dim 2 is out of range"}},
      {"transpose(-3, 0)", "xf::transpose", [](const tensor& x) { (void)x.transpose(-3, 0); }, {"dim -3 is out of range"}},
      {"movedim(0, 2)", "xf::movedim", [](const tensor& x) { (void)x.movedim(0, 2); }, {"dim 2 is out of range"}},
      {"movedim(-3, 0)", "xf::movedim", [](const tensor& x) { (void)x.movedim(-3, 0); }, {"dim -3 is out of range"}},
      {"squeeze(2)", "xf::squeeze", [](const tensor& x) { (void)x.squeeze(2); }, {"dim 2 is out of range"}},
      {"squeeze(-3)", "xf::squeeze", [](const tensor& x) { (void)x.squeeze(-3); }, {"dim -3 is out of range"}},
      {"unsqueeze(3)", "xf::unsqueeze", [](const tensor& x) { (void)x.unsqueeze(3); }, {"dim 3 is out of range"}},
      {"unsqueeze(-4)", "xf::unsqueeze", [](const tensor& x) { (void)x.unsqueeze(-4); }, {"dim -4 is out of range"}},
      {"permute({0, 2})", "xf::permute", [](const tensor& x) { (void)x.permute({0, 2}); }, {"dim 2 is out of range"}},
      {"permute({0, -3})", "xf::permute", [](const tensor& x) { (void)x.permute({0, -3}); }, {"dim -3 is out of range"}},
      {"permute({0, 0})", "xf::permute", [](const tensor& x) { (void)x.permute({0, 0}); }, {"more than once"}},
      {"permute({1, -1})", "xf::permute", [](const tensor& x) { (void)x.permute({1, -1}); }, {"more than once"}},
      {"permute({0})", "xf::permute", [](const tensor& x) { (void)x.permute({0}); }, {"one entry per dimension"}},
      {"permute({0, 1, 2})", "xf::permute", [](const tensor& x) { (void)x.permute({0, 1, 2}); }, {"one entry per dimension"}},
      {"reshape({4, 2})", "xf::reshape", [](const tensor& x) { (void)x.reshape({4, 2}); }, {"is invalid for a tensor of 6 elements"}},
      {"reshape({-1, -1})", "xf::reshape", [](const tensor& x) { (void)x.reshape({-1, -1}); }, {"only one dimension can be -1"}},
      {"reshape({-1, 4})", "xf::reshape", [](const tensor& x) { (void)x.reshape({-1, 4}); }, {"is invalid for a tensor of 6 elements"}},
      {"reshape({-2, 3})", "xf::reshape", [](const tensor& x) { (void)x.reshape({-2, 3}); }, {"invalid size -2"}},
      {"view({5})", "xf::view", [](const tensor& x) { (void)x.view({5}); }, {"is invalid for a tensor of 6 elements"}},
      {"view({-1, -1, 1})", "xf::view", [](const tensor& x) { (void)x.view({-1, -1, 1}); }, {"only one dimension can be -1"}},
      {"expand({2, 4})", "xf::expand", [](const tensor& x) { (void)x.expand({2, 4}); }, {"=cannot expand dimension 1", "cannot expand dimension"}},
      {"expand({3})", "xf::expand", [](const tensor& x) { (void)x.expand({3}); }, {"fewer dimensions"}},
      {"expand({-1, 2, 3})", "xf::expand", [](const tensor& x) { (void)x.expand({-1, 2, 3}); }, {"-1 is not allowed"}},
      {"expand({2, -2})", "xf::expand", [](const tensor& x) { (void)x.expand({2, -2}); }, {"shape"}},
      {"expand({-3, 2, 3})", "xf::expand", [](const tensor& x) { (void)x.expand({-3, 2, 3}); }, {"shape", "negative extent"}},
      {"expand({2^62, 2, 3}) (too many elements)", "xf::expand",
       [](const tensor& x) { (void)x.expand({1LL << 62, 2, 3}); }, {"shape", "more than int64_t can hold"}},
      {"xf::split size 0", "xf::split", [](const tensor& x) { (void)xf::split(x, 0, 0); }, {"size must be positive"}},
      {"xf::split size -1", "xf::split", [](const tensor& x) { (void)xf::split(x, -1, 1); }, {"size must be positive"}},
      {"xf::split dim 2", "xf::split", [](const tensor& x) { (void)xf::split(x, 1, 2); }, {"dim 2 is out of range"}},
      {"xf::split dim -3", "xf::split", [](const tensor& x) { (void)xf::split(x, 1, -3); }, {"dim -3 is out of range"}},
      {"xf::flip dims {2}", "xf::flip", [](const tensor& x) { (void)xf::flip(x, {2}); }, {"dim 2 is out of range"}},
      {"xf::flip dims {-3}", "xf::flip", [](const tensor& x) { (void)xf::flip(x, {-3}); }, {"dim -3 is out of range"}},
      {"xf::flip dims {0, -2}", "xf::flip", [](const tensor& x) { (void)xf::flip(x, {0, -2}); }, {"more than once"}},
      {"xf::cat dim 2", "xf::cat", [](const tensor& x) { (void)xf::cat({x, x}, 2); }, {"dim 2 is out of range"}},
      {"xf::cat dim -3", "xf::cat", [](const tensor& x) { (void)xf::cat({x, x}, -3); }, {"dim -3 is out of range"}},
      {"xf::cat of [2, 3] and [2, 4] along 0", "xf::cat", [](const tensor& x) { (void)xf::cat({x, xf::ones({2, 4}, xf::f64)}, 0); },
       {"=sizes must match except in dimension 0", "sizes must match except in dimension"}},
      {"xf::cat of [2, 3] and [3]", "xf::cat", [](const tensor& x) { (void)xf::cat({x, x3()}, 0); }, {"same number of dimensions"}},
      {"xf::cat with an undefined tensor", "xf::cat", [](const tensor& x) { (void)xf::cat({x, undefined}, 0); },
       {"operation on an undefined tensor"}},
      {"xf::stack dim 3", "xf::stack", [](const tensor& x) { (void)xf::stack({x, x}, 3); }, {"dim 3 is out of range"}},
      {"xf::stack dim -4", "xf::stack", [](const tensor& x) { (void)xf::stack({x, x}, -4); }, {"dim -4 is out of range"}},
      {"xf::stack of [2, 3] and [3, 2]", "xf::stack", [](const tensor& x) { (void)xf::stack({x, x.t()}, 0); }, {"same shape"}},
      {"xf::stack with an undefined tensor", "xf::stack", [](const tensor& x) { (void)xf::stack({x, undefined}, 0); },
       {"operation on an undefined tensor"}},
      {"xf::index_select dim 2", "xf::index_select", [](const tensor& x) { (void)xf::index_select(x, 2, tensor{0}); },
       {"dim 2 is out of range"}},
      {"xf::index_select dim -3", "xf::index_select", [](const tensor& x) { (void)xf::index_select(x, -3, tensor{0}); },
       {"dim -3 is out of range"}},
      {"xf::index_select index 2 of 2", "xf::index_select", [](const tensor& x) { (void)xf::index_select(x, 0, tensor{0, 2}); },
       {"=index 2 is out of range for dimension 0 of size 2", "index 2 is out of range"}},
      {"xf::index_select index -4", "xf::index_select", [](const tensor& x) { (void)xf::index_select(x, 1, tensor{-4}); },
       {"=index -4 is out of range for dimension 1 of size 3", "index -4 is out of range"}},
      {"xf::index_select index -1 (torch refuses negative indices)", "xf::index_select",
       [](const tensor& x) { (void)xf::index_select(x, 1, tensor{-1}); },
       {"=index -1 is out of range for dimension 1 of size 3", "negative ones are refused, as in torch"}},
      {"xf::index_select float index", "xf::index_select",
       [](const tensor& x) { (void)xf::index_select(x, 0, tensor{0.0}); }, {"index must be an int64 tensor"}},
      {"xf::index_select 2-d index", "xf::index_select", [](const tensor& x) { (void)xf::index_select(x, 0, tensor{{0}}); },
       {"0-d or 1-d"}},
      {"xf::index_select undefined index", "xf::index_select", [](const tensor& x) { (void)xf::index_select(x, 0, undefined); },
       {"operation on an undefined tensor"}},
      {"xf::gather dim 2", "xf::gather", [](const tensor& x) { (void)xf::gather(x, 2, tensor{{0, 1}}); },
       {"dim 2 is out of range"}},
      {"xf::gather dim -3", "xf::gather", [](const tensor& x) { (void)xf::gather(x, -3, tensor{{0, 1}}); },
       {"dim -3 is out of range"}},
      {"xf::gather index 3 of 3", "xf::gather", [](const tensor& x) { (void)xf::gather(x, 1, tensor{{0, 3}}); },
       {"=index 3 is out of range for dimension 1 of size 3", "index 3 is out of range"}},
      {"xf::gather index -4", "xf::gather", [](const tensor& x) { (void)xf::gather(x, 1, tensor{{0, -4}}); },
       {"=index -4 is out of range for dimension 1 of size 3", "index -4 is out of range"}},
      {"xf::gather index -1 (torch refuses negative indices)", "xf::gather",
       [](const tensor& x) { (void)xf::gather(x, 1, tensor{{0, -1}}); },
       {"=index -1 is out of range for dimension 1 of size 3", "negative ones are refused, as in torch"}},
      {"xf::gather 1-d index into 2-d", "xf::gather", [](const tensor& x) { (void)xf::gather(x, 1, tensor{0, 1}); },
       {"as many dimensions"}},
      {"xf::gather index larger than the input", "xf::gather",
       [](const tensor& x) { (void)xf::gather(x, 1, tensor{{0}, {1}, {2}}); }, {"exceeds the input's size"}},
      {"xf::gather float index", "xf::gather", [](const tensor& x) { (void)xf::gather(x, 1, tensor{{0.0, 1.0}}); },
       {"index must be an int64 tensor"}},
      {"xf::gather undefined index", "xf::gather", [](const tensor& x) { (void)xf::gather(x, 1, undefined); },
       {"operation on an undefined tensor"}},
  };
  t.op("t().view({6}) of a [2, 3] tensor (incompatible strides)", x23(), [](const tensor& x) { (void)x.t().view({6}); },
       {"xf::view", "use reshape(), which copies when it must"}, plain | under_grad | under_jvp | under_functionalize);
  for (const view_case& c : on_x23) {
    std::vector<std::string> says{c.name};
    says.insert(says.end(), c.phrase.begin(), c.phrase.end());
    t.op(c.what + " of a [2, 3] tensor", x23(), c.f, says);
  }
  // 1-d and 0-d inputs
  const std::vector<view_case> on_small = {
      {"select(0, 0) of a 0-d tensor", "xf::select", [](const tensor&) { (void)s0().select(0, 0); }, {"0-d"}},
      {"narrow(0, 0, 1) of a 0-d tensor", "xf::narrow", [](const tensor&) { (void)s0().narrow(0, 0, 1); }, {"0-d"}},
      {"diagonal() of a 1-d tensor", "xf::diagonal", [](const tensor&) { (void)x3().diagonal(); }, {"at least 2"}},
      {"diagonal() of a 0-d tensor", "xf::diagonal", [](const tensor&) { (void)s0().diagonal(); }, {"at least 2"}},
      {"t() of a 1-d tensor", "xf::t", [](const tensor&) { (void)x3().t(); }, {"2-d"}},
      {"t() of a 3-d tensor", "xf::t", [](const tensor&) { (void)xf::ones({1, 2, 3}).t(); }, {"2-d"}},
      {"transpose(0, 5) of a 0-d tensor (torch: out of range)", "xf::transpose",
       [](const tensor&) { (void)s0().transpose(0, 5); }, {"dim 5 is out of range"}},
      {"squeeze(1) of a 0-d tensor", "xf::squeeze", [](const tensor&) { (void)s0().squeeze(1); }, {"dim 1 is out of range"}},
      {"unsqueeze(1) of a 0-d tensor", "xf::unsqueeze", [](const tensor&) { (void)s0().unsqueeze(1); },
       {"dim 1 is out of range"}},
      {"unsqueeze(-2) of a 0-d tensor", "xf::unsqueeze", [](const tensor&) { (void)s0().unsqueeze(-2); },
       {"dim -2 is out of range"}},
      {"movedim(0, 1) of a 0-d tensor", "xf::movedim", [](const tensor&) { (void)s0().movedim(0, 1); },
       {"dim 1 is out of range"}},
      {"permute({0}) of a 0-d tensor", "xf::permute", [](const tensor&) { (void)s0().permute({0}); },
       {"one entry per dimension"}},
      {"xf::split of a 0-d tensor (torch: 'split expects at least a 1-dimensional tensor')", "xf::split",
       [](const tensor&) { (void)xf::split(s0(), 1, 0); }, {"0-d"}},
      {"xf::cat of 0-d tensors", "xf::cat", [](const tensor&) { (void)xf::cat({s0(), s0()}, 0); }, {"zero-dimensional"}},
      {"xf::cat of no tensors", "xf::cat", [](const tensor&) { (void)xf::cat({}, 0); }, {"at least one tensor"}},
      {"xf::stack of no tensors", "xf::stack", [](const tensor&) { (void)xf::stack({}, 0); }, {"at least one tensor"}},
      {"xf::index_select of a 0-d tensor with 2 indices", "xf::index_select",
       [](const tensor&) { (void)xf::index_select(s0(), 0, tensor{0, 0}); }, {"a 0-d input takes an index of one element"}},
      {"xf::index_select of a 0-d tensor at index 1", "xf::index_select",
       [](const tensor&) { (void)xf::index_select(s0(), 0, tensor{1}); }, {"out of range"}},
      {"reshape({0, -1}) of an empty tensor (ambiguous)", "xf::reshape",
       [](const tensor&) { (void)xf::zeros({0, 3}).reshape({-1, 0}); }, {"is invalid for a tensor of 0 elements"}},
  };
  for (const view_case& c : on_small) {
    std::vector<std::string> says{c.name};
    says.insert(says.end(), c.phrase.begin(), c.phrase.end());
    t.call(c.what, [f = c.f] { f(undefined); }, says);
  }
  // methods and free functions on an undefined tensor
  const std::vector<std::pair<std::string, op1>> on_undefined = {
      {"xf::reshape", [](const tensor& u) { (void)u.reshape({-1}); }},
      {"xf::view", [](const tensor& u) { (void)u.view({-1}); }},
      {"xf::flatten", [](const tensor& u) { (void)u.flatten(); }},
      {"xf::transpose", [](const tensor& u) { (void)u.transpose(0, 1); }},
      {"xf::t", [](const tensor& u) { (void)u.t(); }},
      {"xf::permute", [](const tensor& u) { (void)u.permute({0}); }},
      {"xf::unsqueeze", [](const tensor& u) { (void)u.unsqueeze(0); }},
      {"xf::squeeze", [](const tensor& u) { (void)u.squeeze(); }},
      {"xf::squeeze", [](const tensor& u) { (void)u.squeeze(0); }},
      {"xf::expand", [](const tensor& u) { (void)u.expand({2}); }},
      {"xf::select", [](const tensor& u) { (void)u.select(0, 0); }},
      {"xf::narrow", [](const tensor& u) { (void)u.narrow(0, 0, 1); }},
      {"xf::diagonal", [](const tensor& u) { (void)u.diagonal(); }},
      {"xf::movedim", [](const tensor& u) { (void)u.movedim(0, 0); }},
      {"xf::contiguous", [](const tensor& u) { (void)u.contiguous(); }},
      {"xf::clone", [](const tensor& u) { (void)u.clone(); }},
      {"xf::detach", [](const tensor& u) { (void)u.detach(); }},
      {"xf::detach", [](const tensor& u) { (void)xf::stop_gradient(u); }},
      {"xf::split", [](const tensor& u) { (void)xf::split(u, 1, 0); }},
      {"xf::flip", [](const tensor& u) { (void)xf::flip(u, {0}); }},
      {"xf::index_select", [](const tensor& u) { (void)xf::index_select(u, 0, tensor{0}); }},
      {"xf::gather", [](const tensor& u) { (void)xf::gather(u, 0, tensor{0}); }},
      {"xf::cat", [](const tensor& u) { (void)xf::cat({u, x3()}, 0); }},
      {"xf::stack", [](const tensor& u) { (void)xf::stack({u, x3()}, 0); }},
  };
  for (const auto& entry : on_undefined) {
    const std::string& name = entry.first;
    const auto& f = entry.second;
    t.call(name + " of an undefined tensor", [f] { f(undefined); }, {name, "operation on an undefined tensor"});
  }
}

void in_place(table& t) {
  using op1 = std::function<void(const tensor&)>;
  // the destination is a fresh copy of x (made inside the call: mutating it is allowed everywhere)
  const std::vector<std::tuple<std::string, std::string, op1, std::string>> rows = {
      {"add_ of a [4] into [2, 3]", "xf::add_", [](const tensor& x) { x.clone().add_(xf::ones({4}, xf::f64)); },
       "cannot be broadcast together"},
      {"add_ of a [2, 2, 3] into [2, 3] (the result does not fit)", "xf::add_",
       [](const tensor& x) { x.clone().add_(xf::ones({2, 2, 3}, xf::f64)); }, "does not fit the destination's shape"},
      {"sub_ of a [3, 2]", "xf::sub_", [](const tensor& x) { x.clone().sub_(xf::ones({3, 2}, xf::f64)); },
       "cannot be broadcast together"},
      {"mul_ of a [2, 2, 3]", "xf::mul_", [](const tensor& x) { x.clone().mul_(xf::ones({2, 2, 3}, xf::f64)); },
       "does not fit the destination's shape"},
      {"div_ of a [4]", "xf::div_", [](const tensor& x) { x.clone().div_(xf::ones({4}, xf::f64)); },
       "cannot be broadcast together"},
      {"copy_ of a [3, 2]", "xf::copy_", [](const tensor& x) { x.clone().copy_(xf::ones({3, 2}, xf::f64)); },
       "cannot be broadcast together"},
      {"copy_ of a [1, 2, 3] (broadcasts past the destination)", "xf::copy_",
       [](const tensor& x) { x.clone().copy_(xf::ones({1, 2, 3}, xf::f64)); }, "does not fit the destination's shape"},
      {"add_ into an expanded tensor", "xf::add_", [](const tensor& x) { x.select(0, 0).clone().expand({2, 3}).add_(1.0); },
       "clone() it first"},
      {"clamp_ with lo > hi", "xf::clamp", [](const tensor& x) { x.clone().clamp_(1.0, 0.0); }, "must not exceed"},
      {"mul_ of a bool [2] into [2, 3]", "xf::mul_", [](const tensor& x) { x.clone().mul_(tensor{true, false}); },
       "cannot be broadcast together"},
      {"add_ of an undefined tensor", "xf::add_", [](const tensor& x) { x.clone().add_(undefined); },
       "operation on an undefined tensor"},
      {"copy_ of an undefined tensor", "xf::copy_", [](const tensor& x) { x.clone().copy_(undefined); },
       "operation on an undefined tensor"},
      {"copy_ of a meta tensor into data", "xf::copy_", [](const tensor& x) { x.clone().copy_(x23().to(xf::meta)); },
       "meta"},
  };
  for (const auto& [what, name, f, phrase] : rows) t.op("xf::tensor::" + what, x23(), f, {name, phrase});
  // dtypes: a floating result into an integer tensor (torch: "result type Float can't be cast")
  const std::vector<std::tuple<std::string, std::string, op1>> int_rows = {
      {"add_ of a float tensor into int64", "xf::add_", [](const tensor& x) { x.clone().add_(x3()); }},
      {"add_(0.5) into int64", "xf::add_", [](const tensor& x) { x.clone().add_(0.5); }},
      {"mul_ of a float tensor into int64", "xf::mul_", [](const tensor& x) { x.clone().mul_(x3()); }},
      {"div_(2) of int64 (true division)", "xf::div_", [](const tensor& x) { x.clone().div_(2.0); }},
      {"div_ of an int64 tensor by int64 (true division)", "xf::div_", [](const tensor& x) { x.clone().div_(x); }},
      {"exp_ of int64", "xf::exp_", [](const tensor& x) { x.clone().exp_(); }},
      {"sin_ of int64", "xf::sin_", [](const tensor& x) { x.clone().sin_(); }},
      {"cos_ of int64", "xf::cos_", [](const tensor& x) { x.clone().cos_(); }},
  };
  for (const auto& [what, name, f] : int_rows)
    t.op("xf::tensor::" + what, i3(), f, {name, "cannot be written into a int64 tensor in place"});
  // an integer result into a boolean tensor (torch: "result type Long can't be cast to ... Bool")
  t.op("xf::tensor::add_ of an int64 tensor into bool", b3(), [](const tensor& x) { x.clone().add_(xf::tensor{1, 1, 1}); },
       {"xf::add_", "a int64 result cannot be written into a bool tensor in place"});
  t.op("xf::tensor::neg_ of bool (torch: 'Negation ... on a bool tensor is not supported')", b3(),
       [](const tensor& x) { x.clone().neg_(); }, {"xf::neg", "negation (the - operator) of a boolean tensor"});
  t.op("xf::abs of bool (torch: no abs kernel for Bool)", b3(), [](const tensor& x) { (void)xf::abs(x); },
       {"xf::abs", "the absolute value of a boolean tensor is not supported", ".to(xf::i64)"});
  t.op("xf::sub of bool tensors (torch: 'Subtraction ... with two bool tensors is not supported')", b3(),
       [](const tensor& x) { (void)(x - x); }, {"xf::sub", "with a boolean tensor is not supported", "xf::logical_not"});
  t.op("xf::tensor::fill_(NaN) of int64 (torch: 'cannot be converted to type int64_t')", i3(),
       [](const tensor& x) { x.clone().fill_(std::nan("")); }, {"xf::fill_", "int64"});
  t.op("xf::tensor::fill_(1e300) of int64", i3(), [](const tensor& x) { x.clone().fill_(1e300); }, {"xf::fill_", "int64"});
  // undefined destinations
  using op0 = std::function<void(tensor&)>;
  const std::vector<std::pair<std::string, op0>> undef_rows = {
      {"xf::add_", [](tensor& u) { u.add_(x3()); }},     {"xf::sub_", [](tensor& u) { u.sub_(1.0); }},
      {"xf::mul_", [](tensor& u) { u.mul_(2.0); }},      {"xf::div_", [](tensor& u) { u.div_(x3()); }},
      {"xf::copy_", [](tensor& u) { u.copy_(x3()); }},   {"xf::zero_", [](tensor& u) { u.zero_(); }},
      {"xf::fill_", [](tensor& u) { u.fill_(1.0); }},    {"xf::neg_", [](tensor& u) { u.neg_(); }},
      {"xf::exp_", [](tensor& u) { u.exp_(); }},         {"xf::sin_", [](tensor& u) { u.sin_(); }},
      {"xf::cos_", [](tensor& u) { u.cos_(); }},         {"xf::clamp_", [](tensor& u) { u.clamp_(0.0, 1.0); }},
  };
  for (const auto& entry : undef_rows) {
    const std::string& name = entry.first;
    const auto& f = entry.second;
    t.call(name + " into an undefined tensor",
           [f] {
             tensor u;
             f(u);
           },
           {name, "operation on an undefined tensor"});
  }
  // in-place on a tensor captured from outside a transform, and batched into unbatched
  t.call("add_ on a tensor captured from outside grad",
         [] {
           tensor outside = xf::zeros({3}, xf::f64);
           (void)xf::grad([&](const tensor& a) {
             outside.add_(a);
             return xf::sum(a);
           })(x3());
         },
         {"xf::add_", "captured"});
  t.call("mul_ on a tensor captured from outside jvp",
         [] {
           tensor outside = xf::ones({3}, xf::f64);
           (void)xf::jvp(
               [&](const tensor& a) {
                 outside.mul_(a);
                 return a;
               },
               x3(), x3());
         },
         {"xf::mul_", "captured"});
  t.call("copy_ into a tensor captured from outside vjp",
         [] {
           tensor outside = xf::ones({3}, xf::f64);
           (void)xf::vjp(
               [&](const tensor& a) {
                 outside.copy_(a);
                 return a;
               },
               x3());
         },
         {"xf::copy_", "captured"});
  t.call("add_ of a batched value into an unbatched tensor under vmap",
         [] {
           tensor outside = xf::zeros({3}, xf::f64);
           (void)xf::vmap([&](const tensor& a) {
             outside.add_(a);
             return a;
           })(x23().reshape({3, 2}).t().contiguous().reshape({2, 3}));
         },
         {"xf::add_", "in-place"});
  t.call("add_ into a view of a tensor made only from captured tensors under grad",
         [] {
           const tensor outside = xf::ones({3}, xf::f64);
           (void)xf::grad([&](const tensor& a) {
             tensor made = outside * 2.0;
             made.narrow(0, 0, 2).add_(a.narrow(0, 0, 2));
             return xf::sum(made);
           })(x3());
         },
         {"xf::add_", "made inside it only from tensors captured from outside"});
}

void transforms(table& t) {
  // grad
  t.call("grad of a function returning a [2] tensor",
         [] { (void)xf::grad([](const tensor& x) { return x * 2.0; })(tensor{1.0, 2.0}); }, {"xf::grad", "scalar"});
  t.call("grad of a function returning an int64 scalar",
         [] { (void)xf::grad([](const tensor& x) { return xf::argmax(x, 0); })(x3()); }, {"xf::grad", "scalar"});
  t.call("grad of a function returning an undefined tensor",
         [] { (void)xf::grad([](const tensor&) { return tensor(); })(x3()); }, {"xf::grad", "undefined tensor"});
  t.call("grad with respect to an int64 tensor",
         [] { (void)xf::grad([](const tensor& x) { return xf::sum(x); })(i3()); },
         {"xf::grad", "only floating tensors can be differentiated (convert it with .to(xf::f32) or leave it out of argnums)"});
  t.call("grad with respect to a bool tensor",
         [] { (void)xf::grad([](const tensor& x) { return xf::sum(x.to(xf::f64)); })(b3()); },
         {"xf::grad", "only floating tensors can be differentiated"});
  t.call("grad argnums<1> with respect to an int64 tensor",
         [] {
           (void)xf::grad([](const tensor& x, const tensor& i) { return xf::sum(x * i); }, xf::argnums<1>)(x3(), i3());
         },
         {"xf::grad", "only floating tensors can be differentiated"});
  t.call("grad with respect to an undefined tensor",
         [] { (void)xf::grad([](const tensor& x) { return xf::sum(x); })(undefined); },
         {"xf::grad", "holds an undefined tensor"});
  t.call("grad_and_value of a function returning a [3] tensor",
         [] { (void)xf::grad_and_value([](const tensor& x) { return x * 2.0; })(x3()); }, {"xf::grad", "scalar"});
  t.call("grad with has_aux of a non-scalar output",
         [] { (void)xf::grad([](const tensor& x) { return std::pair{x * 2.0, x}; }, xf::has_aux)(x3()); },
         {"xf::grad", "scalar"});
  // vjp
  t.call("vjp_fn with a cotangent of the wrong shape",
         [] {
           auto [out, vjp_fn] = xf::vjp([](const tensor& x) { return x * 2.0; }, x3());
           (void)vjp_fn(xf::ones({2}, xf::f64));
         },
         {"xf::vjp", "cotangent 0 has shape [2] but the output has shape [3]"});
  t.call("vjp_fn with a 0-d cotangent for a [3] output",
         [] {
           auto [out, vjp_fn] = xf::vjp([](const tensor& x) { return x * 2.0; }, x3());
           (void)vjp_fn(s0());
         },
         {"xf::vjp", "cotangent 0 has shape [] but the output has shape [3]"});
  t.call("vjp_fn with an undefined cotangent",
         [] {
           auto [out, vjp_fn] = xf::vjp([](const tensor& x) { return x * 2.0; }, x3());
           (void)vjp_fn(undefined);
         },
         {"xf::vjp", "undefined"});
  t.call("vjp_fn with a cotangent of the wrong shape for the second output",
         [] {
           auto [out, vjp_fn] = xf::vjp([](const tensor& x) { return std::tuple{x * 2.0, xf::sum(x)}; }, x3());
           (void)vjp_fn(std::tuple{xf::ones({3}, xf::f64), xf::ones({3}, xf::f64)});
         },
         {"xf::vjp", "cotangent 1 has shape [3] but the output has shape []"});
  t.call("vjp with an undefined primal", [] { (void)xf::vjp([](const tensor& x) { return x * 2.0; }, undefined); },
         {"xf::vjp", "holds an undefined tensor"});
  // jvp
  t.call("jvp with a tangent of the wrong shape",
         [] { (void)xf::jvp([](const tensor& x) { return x * 2.0; }, x3(), xf::ones({2}, xf::f64)); },
         {"xf::jvp", "a tangent has shape [2] but its primal has shape [3]"});
  t.call("jvp with a 0-d tangent for a [3] primal", [] { (void)xf::jvp([](const tensor& x) { return x * 2.0; }, x3(), s0()); },
         {"xf::jvp", "a tangent has shape [] but its primal has shape [3]"});
  t.call("jvp with an undefined primal",
         [] { (void)xf::jvp([](const tensor& x) { return x * 2.0; }, undefined, x3()); }, {"xf::jvp", "undefined"});
  t.call("jvp with an undefined tangent",
         [] { (void)xf::jvp([](const tensor& x) { return x * 2.0; }, x3(), undefined); }, {"xf::jvp", "undefined"});
  // linearize
  t.call("linearize jvp_fn with a tangent of the wrong shape",
         [] {
           auto [out, jvp_fn] = xf::linearize([](const tensor& x) { return xf::sin(x); }, x3());
           (void)jvp_fn(xf::ones({4}, xf::f64));
         },
         {"xf::linearize", "tangent 0 has shape [4] but its primal has shape [3]"});
  t.call("linearize of an int64 primal", [] { (void)xf::linearize([](const tensor& x) { return x * 2.0; }, i3()); },
         {"xf::linearize", "only floating tensors can be differentiated"});
  t.call("linearize of an undefined primal",
         [] { (void)xf::linearize([](const tensor& x) { return x * 2.0; }, undefined); },
         {"xf::linearize", "holds an undefined tensor"});
  // jacobians and hessian
  const auto sq = [](const tensor& x) { return x * x; };
  t.call("jacrev with chunk_size(0)", [sq] { (void)xf::jacrev(sq, xf::chunk_size(0))(x3()); }, {"xf::jacrev", "chunk_size"});
  t.call("jacrev with chunk_size(-2)", [sq] { (void)xf::jacrev(sq, xf::chunk_size(-2))(x3()); }, {"xf::jacrev", "chunk_size"});
  t.call("jacfwd with chunk_size(0)", [sq] { (void)xf::jacfwd(sq, xf::chunk_size(0))(x3()); }, {"xf::jacfwd", "chunk_size"});
  t.call("hessian with chunk_size(0)",
         [] { (void)xf::hessian([](const tensor& x) { return xf::sum(x * x); }, xf::chunk_size(0))(x3()); }, {"chunk_size"});
  t.call("jacrev argnums<1> with respect to an int64 tensor",
         [] { (void)xf::jacrev([](const tensor& x, const tensor& i) { return x * i; }, xf::argnums<1>)(x3(), i3()); },
         {"xf::jacrev", "argument 1 has dtype int64"});
  t.call("jacrev with respect to an int64 tensor", [sq] { (void)xf::jacrev(sq)(i3()); },
         {"xf::jacrev", "only floating tensors can be differentiated"});
  t.call("jacfwd with respect to an int64 tensor", [sq] { (void)xf::jacfwd(sq)(i3()); },
         {"xf::jacfwd", "only floating tensors can be differentiated"});
  t.call("jacrev of an undefined tensor", [sq] { (void)xf::jacrev(sq)(undefined); }, {"xf::jacrev", "undefined tensor"});
  t.call("jacfwd of an undefined tensor", [sq] { (void)xf::jacfwd(sq)(undefined); }, {"xf::jacfwd", "undefined tensor"});
  t.call("hessian of an undefined tensor",
         [] { (void)xf::hessian([](const tensor& x) { return xf::sum(x * x); })(undefined); }, {"undefined tensor"});
  t.call("jacfwd over a random op (randomness::error)",
         [] { (void)xf::jacfwd([](const tensor& x) { return x * xf::randn({3}, xf::f64); })(x3()); }, {"xf::randn", "randomness"});
  // vmap
  const auto add = [](const tensor& a, const tensor& b) { return a + b; };
  t.call("vmap over inputs of different sizes", [add] { (void)xf::vmap(add)(xf::ones({2, 3}), xf::ones({3, 3})); },
         {"xf::vmap", "same size in the mapped dimension"});
  t.call("vmap in_dim 2 of a 2-d input", [add] { (void)xf::vmap(add, xf::in_dims(2, 0))(xf::ones({2, 3}), xf::ones({3, 3})); },
         {"xf::vmap", "in_dim"});
  t.call("vmap in_dim -3 of a 2-d input",
         [add] { (void)xf::vmap(add, xf::in_dims(-3, 0))(xf::ones({2, 3}), xf::ones({2, 3})); }, {"xf::vmap", "in_dim"});
  t.call("vmap in_dim 0 of a 0-d input", [] { (void)xf::vmap([](const tensor& a) { return a; })(s0()); },
         {"xf::vmap", "in_dim"});
  t.call("vmap with every in_dim none",
         [add] { (void)xf::vmap(add, xf::in_dims(xf::none, xf::none))(xf::ones({2}), xf::ones({2})); },
         {"xf::vmap", "at least one"});
  t.call("vmap of a function of a double only", [] { (void)xf::vmap([](double v) { return xf::scalar(v); })(2.0); },
         {"xf::vmap", "at least one"});
  t.call("vmap of an undefined tensor", [] { (void)xf::vmap([](const tensor& a) { return a; })(undefined); },
         {"xf::vmap", "undefined tensor"});
  t.call("vmap with chunk_size(0)", [] { (void)xf::vmap([](const tensor& a) { return a; }, xf::chunk_size(0))(x23()); },
         {"xf::vmap", "chunk_size"});
  t.call("vmap with chunk_size(-1)", [] { (void)xf::vmap([](const tensor& a) { return a; }, xf::chunk_size(-1))(x23()); },
         {"xf::vmap", "chunk_size"});
  t.call("vmap out_dims(2) for a 1-d output", [] { (void)xf::vmap([](const tensor& a) { return a; }, xf::out_dims(2))(x23()); },
         {"xf::vmap", "out_dim"});
  t.call("vmap out_dims(none) for a batched output",
         [] { (void)xf::vmap([](const tensor& a) { return a; }, xf::out_dims(xf::none))(x23()); },
         {"xf::vmap", "an output with out_dims none depends on the mapped inputs"});
  t.call("vmap over randn with randomness::error",
         [] { (void)xf::vmap([](const tensor& a) { return a + xf::randn({3}, xf::f64); })(x23()); }, {"xf::randn", "randomness"});
  t.call("vmap over rand_like with randomness::error",
         [] { (void)xf::vmap([](const tensor& a) { return xf::rand_like(a); })(x23()); }, {"xf::rand", "randomness"});
  t.call("vmap of a branch on a batched value",
         [] {
           (void)xf::vmap([](const tensor& a) { return xf::sum(a).item<double>() > 0 ? a : -a; })(x23());
         },
         {"item()", "data-dependent"});
  t.call("a tensor that escaped a vmap call, used afterwards",
         [] {
           tensor leaked;
           (void)xf::vmap([&](const tensor& r) { return leaked = r * 2.0; })(x23());
           (void)(leaked + 1.0);
         },
         {"escaped a vmap call"});
  t.call("vmap_matches_loop with nothing mapped",
         [] { (void)xf::testing::vmap_matches_loop([](const tensor& a) { return a; }, xf::in_dims(xf::none), x3()); },
         {"xf::vmap", "at least one"});
  // make_fx and graphs
  t.call("make_fx called inside a transform",
         [] {
           (void)xf::grad([](const tensor& x) {
             (void)xf::make_fx([](const tensor& y) { return y * 2.0; })(x);
             return xf::sum(x);
           })(x3());
         },
         {"xf::make_fx", "outside transforms"});
  t.call("make_fx of an undefined example", [] { (void)xf::make_fx([](const tensor& y) { return y * 2.0; })(undefined); },
         {"xf::make_fx", "undefined tensor"});
  t.call("graph replayed on an input of another shape",
         [] {
           auto g = xf::make_fx([](const tensor& y) { return y * 2.0; })(x3());
           (void)g(xf::ones({4}, xf::f64));
         },
         {"xf::graph", "input 0 has shape [4]"});
  t.call("graph replayed on an input of another dtype",
         [] {
           auto g = xf::make_fx([](const tensor& y) { return y * 2.0; })(x3());
           (void)g(xf::ones({3}, xf::f32));
         },
         {"xf::graph", "input 0 has shape [3] and dtype float32"});
  t.call("graph replayed with two inputs for one",
         [] {
           auto g = xf::make_fx([](const tensor& y) { return y * 2.0; })(x3());
           (void)g(x3(), x3());
         },
         {"xf::graph", "expected 1 input tensors, got 2"});
  t.call("graph replayed under a transform",
         [] {
           auto g = xf::make_fx([](const tensor& y) { return y * 2.0; })(x3());
           (void)xf::vmap([&](const tensor& r) { return g(r)[0]; })(x23().reshape({3, 2}).t().contiguous().reshape({2, 3}));
         },
         {"xf::graph", "plain tensors"});
  t.call("graph of a transformed cond replayed on inputs taking the other branch",
         [] {
           auto f = xf::grad([](const tensor& x) {
             return xf::sum(xf::cond(
                 xf::sum(x) > 0.0, [](const tensor& a) { return xf::sin(a); }, [](const tensor& a) { return xf::cos(a); }, x));
           });
           auto g = xf::make_fx(f)(x3());
           (void)g(-x3());
         },
         {"xf::graph", "another path through xf::cond"});
  // layers and interpreters
  t.call("layers::top() outside every transform", [] { (void)xf::layers::top(); },
         {"xf::layers::top", "no transform is active on this thread"});
  t.call("interpreter::batch_size() on a grad layer",
         [] {
           (void)xf::grad([](const tensor& x) {
             (void)xf::layers::top().batch_size();
             return xf::sum(x);
           })(x3());
         },
         {"xf::interpreter::batch_size()", "is only defined for vmap layers"});
  t.call("interpreter::randomness() on a jvp layer",
         [] {
           (void)xf::jvp(
               [](const tensor& x) {
                 (void)xf::layers::top().randomness();
                 return x;
               },
               x3(), x3());
         },
         {"xf::interpreter::randomness()", "is only defined for vmap layers"});
}

void extending(table& t) {
  // custom_op
  t.call("custom_op returning its input (alias)",
         [] {
           auto op = xf::custom_op("xfbad::alias_in", [](const tensor& a) { return a; });
           (void)op(x3());
         },
         {"xfbad::alias_in", "alias"});
  t.call("custom_op returning a view of its input (alias)",
         [] {
           auto op = xf::custom_op("xfbad::alias_view", [](const tensor& a) { return a.narrow(0, 0, 2); });
           (void)op(x3());
         },
         {"xfbad::alias_view", "alias"});
  t.call("custom_op returning one tensor twice (alias)",
         [] {
           auto op = xf::custom_op("xfbad::alias_out", [](const tensor& a) {
             tensor y = a * 2.0;
             return std::tuple{y, y};
           });
           (void)op(x3());
         },
         {"xfbad::alias_out", "alias"});
  t.call("grad through a custom_op without register_autograd",
         [] {
           auto op = xf::custom_op("xfbad::no_autograd", [](const tensor& a) { return a * 2.0; });
           (void)xf::grad([&](const tensor& x) { return xf::sum(op(x)); })(x3());
         },
         {"cannot differentiate xfbad::no_autograd: it has no derivative formula"});
  t.call("jvp through a custom_op without register_autograd",
         [] {
           auto op = xf::custom_op("xfbad::no_autograd_jvp", [](const tensor& a) { return a * 2.0; });
           (void)xf::jvp(op, x3(), x3());
         },
         {"cannot differentiate xfbad::no_autograd_jvp", "register_autograd"});
  t.call("custom_op on meta tensors without register_fake",
         [] {
           auto op = xf::custom_op("xfbad::no_fake", [](const tensor& a) { return a * 2.0; });
           (void)op(m23());
         },
         {"xfbad::no_fake", "has no fake kernel; register one with op.register_fake(fn)"});
  t.call("make_fx with meta examples through a custom_op without register_fake",
         [] {
           auto op = xf::custom_op("xfbad::no_fake_fx", [](const tensor& a) { return a * 2.0; });
           (void)xf::make_fx([&](const tensor& x) { return op(x); })(m23());
         },
         {"xfbad::no_fake_fx", "register_fake"});
  t.call("custom_op with 2 arg_names for 1 parameter",
         [] { (void)xf::custom_op("xfbad::names", [](const tensor& a) { return a * 1.0; }, xf::arg_names("a", "b")); },
         {"xf::custom_op", "names are expected"});
  t.call("custom_op backward returning 2 gradients for 1 tensor input",
         [] {
           auto op = xf::custom_op("xfbad::two_grads", [](const tensor& a, double s) { return a * s; });
           op.register_autograd([](xf::autograd::context&, const tensor& g) { return std::tuple{g, g}; },
                                [](xf::autograd::context&, const std::tuple<tensor, double>&, const tensor&) {});
           (void)xf::grad([&](const tensor& x) { return xf::sum(op(x, 2.0)); })(x3());
         },
         {"xfbad::two_grads", "the backward formula returned 2 gradients but the op has 1 tensor inputs"});
  t.call("an old custom_op handle after re-registration with another signature",
         [] {
           auto first = xf::custom_op("xfbad::rereg", [](const tensor& a) { return a * 2.0; });
           (void)xf::custom_op("xfbad::rereg", [](const tensor& a, double s) { return a * s; });
           (void)first(x3());
         },
         {"xf::custom_op", "registered again with a different signature; use the new handle"});
  t.call("custom_op vmap rule returning 2 out dims for 1 output",
         [] {
           auto op = xf::custom_op("xfbad::bad_vmap_rule", [](const tensor& a) { return a * 2.0; });
           op.register_vmap([](const xf::vmap_info&, const std::array<std::optional<std::int64_t>, 1>& d, const tensor& a) {
             return std::pair{a * 2.0, std::tuple{d[0], d[0]}};
           });
           (void)xf::vmap(op)(x23());
         },
         {"xfbad::bad_vmap_rule", "out dims for"});
  t.call("vmap over an empty batch of a custom_op without register_vmap",
         [] {
           auto op = xf::custom_op("xfbad::empty_batch", [](const tensor& a) { return a * 2.0; });
           (void)xf::vmap(op)(xf::zeros({0, 3}, xf::f64));
         },
         {"xfbad::empty_batch", "has no vmap rule and the batch is empty"});
  t.call("custom_op on an undefined tensor",
         [] {
           auto op = xf::custom_op("xfbad::undef_in", [](const tensor& a) { return a * 2.0; });
           (void)op(undefined);
         },
         {"xfbad::undef_in", "undefined tensor"});
  t.call("custom_op whose kernel returns an undefined tensor",
         [] {
           auto op = xf::custom_op("xfbad::undef_out", [](const tensor&) { return tensor(); });
           (void)op(x3());
         },
         {"xfbad::undef_out", "the kernel returned an undefined tensor"});
  t.call("opcheck of a custom_op without register_autograd",
         [] {
           auto op = xf::custom_op("xfbad::opcheck_autograd", [](const tensor& a) { return a * 2.0; });
           op.register_fake([](const tensor& a) { return xf::empty_like(a); });
           xf::opcheck(op, x3());
         },
         {"xf::opcheck(xfbad::opcheck_autograd): check \"autograd\" failed"});
  t.call("opcheck of a custom_op whose fake kernel gives another shape",
         [] {
           auto op = xf::custom_op("xfbad::opcheck_fake", [](const tensor& a) { return a * 2.0; });
           op.register_fake([](const tensor& a) { return xf::empty({a.size(0) + 1}, a.dtype(), xf::meta); });
           op.register_autograd([](xf::autograd::context&, const tensor& g) { return g * 2.0; },
                                [](xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {});
           xf::opcheck(op, x3());
         },
         {"xf::opcheck(xfbad::opcheck_fake): check \"fake\" failed"});
  t.call("opcheck of a custom_op with a wrong derivative",
         [] {
           auto op = xf::custom_op("xfbad::opcheck_grad", [](const tensor& a) { return a * 2.0; });
           op.register_fake([](const tensor& a) { return xf::empty_like(a); });
           op.register_autograd([](xf::autograd::context&, const tensor& g) { return g * 3.0; },
                                [](xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {});
           xf::opcheck(op, x3());
         },
         {"xf::opcheck(xfbad::opcheck_grad): check \"gradcheck\" failed"});
  // autograd::function
  t.call("grad through an autograd::function without backward",
         [] { (void)xf::grad([](const tensor& x) { return xf::sum(no_rules::apply(x)); })(x3()); },
         {"cannot differentiate", "no_rules", "it has no derivative formula"});
  t.call("jvp through an autograd::function without backward or jvp",
         [] { (void)xf::jvp([](const tensor& x) { return no_rules::apply(x); }, x3(), x3()); },
         {"cannot differentiate", "no_rules", "it has no derivative formula"});
  t.call("vmap over an autograd::function without a vmap rule",
         [] { (void)xf::vmap([](const tensor& x) { return no_rules::apply(x); })(x23()); },
         {"xf::vmap", "no_rules", "has no vmap rule; define a static vmap(...) rule or set static constexpr bool generate_vmap_rule = true"});
  t.call("context::get of a key never set",
         [] { (void)xf::grad([](const tensor& x) { return xf::sum(missing_key::apply(x)); })(x3()); },
         {"xf::autograd::context::get", "no value stored under \"scale\""});
  t.call("context::get with another type than stored",
         [] { (void)xf::grad([](const tensor& x) { return xf::sum(wrong_type_key::apply(x)); })(x3()); },
         {"xf::autograd::context::get", "was stored as"});
  t.call("single_level_function applied outside a higher-order op's grad rule",
         [] { (void)lone_single_level::apply(x3()); }, {"xf::autograd::single_level_function", "single-level"});
  t.call("single_level_function applied under grad, outside a rule",
         [] { (void)xf::grad([](const tensor& x) { return xf::sum(lone_single_level::apply(x)); })(x3()); },
         {"xf::autograd::single_level_function", "single-level"});
  // higher_order_op
  t.call("higher_order_op under a transform it has no rule for",
         [] {
           xf::higher_order_op<tensor(const tensor&)> op{"xfbad::hop", [](const tensor& x) { return x * x; }};
           (void)xf::grad([&](const tensor& x) { return xf::sum(op(x)); })(x3());
         },
         {"xfbad::hop: no rule for the grad transform"});
  t.call("higher_order_op under vmap without a vmap rule",
         [] {
           xf::higher_order_op<tensor(const tensor&)> op{"xfbad::hop_v", [](const tensor& x) { return x * x; }};
           (void)xf::vmap([&](const tensor& x) { return op(x); })(x23());
         },
         {"xfbad::hop_v: no rule for the vmap transform"});
  t.call("higher_order_op without a dense implementation",
         [] { xf::higher_order_op<tensor(const tensor&)> op{"xfbad::hop_empty", {}}; }, {"xfbad::hop_empty", "dense implementation"});
  t.call("higher_order_op::impl with an empty rule",
         [] {
           xf::higher_order_op<tensor(const tensor&)> op{"xfbad::hop_rule", [](const tensor& x) { return x * x; }};
           op.impl(xf::transform_kind::vmap, {});
         },
         {"xfbad::hop_rule", "empty rule"});
  // cond
  const auto twice = [](const tensor& a) { return a * 2.0; };
  const auto summed = [](const tensor& a) { return xf::sum(a); };
  t.call("cond with a [3] predicate", [twice] { (void)xf::cond(x3() > 1.0, twice, twice, x3()); },
         {"xf::cond", "the predicate must be a 0-d tensor"});
  t.call("cond with an undefined predicate", [twice] { (void)xf::cond(undefined, twice, twice, x3()); },
         {"xf::cond", "the predicate is an undefined tensor"});
  t.call("cond with branches of different shapes (true taken)",
         [twice, summed] { (void)xf::cond(xf::scalar(true), twice, summed, x3()); }, {"xf::cond", "output 0 has shape"});
  t.call("cond with branches of different shapes (false taken)",
         [twice, summed] { (void)xf::cond(xf::scalar(false), twice, summed, x3()); }, {"xf::cond", "output 0 has shape"});
  t.call("cond with branches of different dtypes",
         [twice] { (void)xf::cond(xf::scalar(true), twice, [](const tensor& a) { return a.to(xf::f32); }, x3()); },
         {"xf::cond", "dtype"});
  t.call("cond with branches returning different numbers of tensors",
         [] {
           (void)xf::cond(
               xf::scalar(true), [](const tensor& a) { return std::vector<tensor>{a, a}; },
               [](const tensor& a) { return std::vector<tensor>{a}; }, x3());
         },
         {"xf::cond", "returns 2 tensors but"});
  t.call("cond under vmap with a batched predicate and branches of different shapes",
         [twice, summed] {
           (void)xf::vmap([&](const tensor& r) { return xf::cond(xf::sum(r) > 1.5, twice, summed, r); })(x23());
         },
         {"xf::cond", "shape"});
  // map, scan, while_loop
  const auto row_fn = [](const tensor& r) { return r * 2.0; };
  t.call("map over xs of different lengths",
         [] { (void)xf::map([](const tensor& r, const tensor& s) { return r * s; }, x23(), xf::ones({3}, xf::f64)); },
         {"xf::map", "same size in dim 0"});
  t.call("map over a 0-d xs", [row_fn] { (void)xf::map(row_fn, s0()); }, {"xf::map", "no dim 0 to slice"});
  t.call("map over an empty xs", [row_fn] { (void)xf::map(row_fn, e0()); }, {"xf::map", "length 0"});
  t.call("map over an undefined xs", [row_fn] { (void)xf::map(row_fn, undefined); }, {"xf::map", "undefined tensor"});
  const auto step = [](const tensor& c, const tensor& x) { return std::pair{c + x, c}; };
  t.call("scan over a 0-d xs", [step] { (void)xf::scan(step, xf::scalar(0.0), s0()); }, {"xf::scan", "no dim 0 to slice"});
  t.call("scan over an empty xs", [step] { (void)xf::scan(step, xf::scalar(0.0), e0()); }, {"xf::scan", "length 0"});
  t.call("scan with an undefined init", [step] { (void)xf::scan(step, undefined, x3()); }, {"xf::scan", "undefined tensor"});
  t.call("scan whose step changes the carry's dtype",
         [] { (void)xf::scan([](const tensor& c, const tensor& x) { return std::pair{(c + x).to(xf::f32), c}; }, xf::scalar(0.0), x3()); },
         {"xf::scan", "dtype float32 from fn", "the carry must keep its shapes and dtypes"});
  t.call("scan whose step grows the carry",
         [] { (void)xf::scan([](const tensor& c, const tensor& x) { return std::pair{xf::cat({c, x.unsqueeze(0)}, 0), x}; }, x3(), x3()); },
         {"xf::scan", "shape [4] and dtype float64 from fn"});
  const auto below = [](const tensor& c) { return xf::sum(c) < 10.0; };
  t.call("while_loop whose body grows the carry",
         [below] { (void)xf::while_loop(below, [](const tensor& c) { return xf::cat({c, c}, 0); }, xf::tensor{1.0}); },
         {"xf::while_loop", "from body_fn", "the carry must keep its shapes and dtypes"});
  t.call("while_loop under vmap whose body grows the carry",
         [below] {
           (void)xf::vmap([&](const tensor& c) {
             return xf::while_loop(below, [](const tensor& v) { return xf::cat({v, v}, 0); }, c);
           })(xf::tensor{1.0, 20.0}.reshape({2, 1}));
         },
         {"xf::while_loop", "from body_fn"});
  t.call("grad through while_loop",
         [below] {
           (void)xf::grad([&](const tensor& x) {
             return xf::sum(xf::while_loop(below, [](const tensor& c) { return c * 2.0; }, x));
           })(x3());
         },
         {"xf::while_loop", "reverse-mode differentiation (grad, vjp, jacrev, hessian) through while_loop is not supported"});
  t.call("while_loop whose predicate is not 0-d",
         [] { (void)xf::while_loop([](const tensor& c) { return c < 10.0; }, [](const tensor& c) { return c * 2.0; }, x3()); },
         {"xf::while_loop", "the predicate must be a 0-d tensor"});
  t.call("while_loop with an undefined carry", [below] { (void)xf::while_loop(below, [](const tensor& c) { return c; }, undefined); },
         {"xf::while_loop", "undefined tensor"});
}

void testing_helpers(table& t) {
  t.call("gradcheck with raise of a function with a wrong derivative",
         [] {
           (void)xf::testing::gradcheck([](const tensor& x) { return xf::sum(wrong_derivative(x)); }, xf::testing::raise, x3());
         },
         {"xf::testing::gradcheck failed"});
  t.call("gradgradcheck with raise of a function with a wrong second derivative",
         [] {
           (void)xf::testing::gradgradcheck([](const tensor& x) { return xf::sum(wrong_derivative(x) * x); },
                                            xf::testing::raise, x3());
         },
         {"xf::testing::gradcheck failed"});
  t.call("gradcheck of a function with no tensor output",
         [] { (void)xf::testing::gradcheck([](const tensor&) { return std::vector<tensor>{}; }, x3()); },
         {"xf::testing", "no tensor output"});
  t.call("gradcheck of an undefined input",
         [] { (void)xf::testing::gradcheck([](const tensor& x) { return xf::sum(x); }, undefined); }, {"undefined tensor"});
}

}  // namespace

namespace {
table build_table() {
  table t;
  tensors_and_factories(t);
  accessors_and_io(t);
  reductions(t);
  pointwise(t);
  nn_and_linalg(t);
  views_and_indexing(t);
  in_place(t);
  transforms(t);
  extending(t);
  testing_helpers(t);
  return t;
}

/// Runs one call: the message of the xf::error it threw, or why it did not count as one.
struct outcome {
  bool xf_error = false;
  std::string message;
};
outcome run(const bad_call& c) {
  outcome o;
  try {
    c.call();
    o.message = "(returned normally)";
  } catch (const xf::error& e) {
    o.xf_error = true;
    o.message = e.what();
  } catch (const std::exception& e) {
    o.message = std::string("(not an xf::error: ") + typeid(e).name() + ") " + e.what();
  } catch (...) {
    o.message = "(an exception not derived from std::exception)";
  }
  return o;
}
}  // namespace

TEST_CASE("bad input: every public function answers with an xf::error that names it", "[reliability][errors]") {
  const table t = build_table();
  const std::vector<bad_call> calls = expand(t);
  const bool dump = std::getenv("XF_BAD_INPUT_DUMP") != nullptr;
  std::size_t failed = 0;
  for (const bad_call& c : calls) {
    const outcome o = run(c);
    if (dump) std::cout << c.what << "\n    => " << o.message << "\n";
    bool ok = o.xf_error;
    for (const std::string& s : c.says) ok = ok && o.message.find(s) != std::string::npos;
    const bool unwound = xf::layers::depth() == 0;
    INFO(c.what);
    INFO("message: " << o.message);
    CHECK(o.xf_error);
    for (const std::string& s : c.says) CHECK_THAT(o.message, Catch::Matchers::Contains(s));
    CHECK(unwound);
    if (!ok || !unwound) ++failed;
  }
  if (failed == 0)
    std::cout << "bad-input table: " << calls.size() << " calls (" << t.rows() << " rows), all answered by xf::error\n";
  else
    std::cout << "bad-input table: " << calls.size() << " calls (" << t.rows() << " rows), " << failed
              << " not answered as expected\n";
}

// ---- values torch 1.13 defines -----------------------------------------------------------------

namespace {
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();

/// An input torch 1.13 answers with a value rather than an error, and that value (computed with
/// torch 1.13; the expected dtype and shape too).
struct defined_value {
  std::string what;
  std::function<tensor()> got;
  xf::shape_t shape;
  std::vector<double> expect;  // row-major; NaN means NaN
  std::optional<xf::dtype> dtype = std::nullopt;
};

/// A 1-d float64 tensor of these values (NaN and infinities included).
tensor vec(const std::vector<double>& values) {
  tensor t = xf::zeros({static_cast<std::int64_t>(values.size())}, xf::f64);
  for (std::size_t i = 0; i < values.size(); ++i) t.narrow(0, static_cast<std::int64_t>(i), 1).fill_(values[i]);
  return t;
}

/// grad of sum(f(x)) at x (float64), the torch 1.13 derivative at a singular point.
std::function<tensor()> grad_at(std::function<tensor(const tensor&)> f, std::vector<double> x) {
  return [f, x] { return xf::grad([&](const tensor& t) { return xf::sum(f(t)); })(vec(x)); };
}

std::vector<defined_value> defined_values() {
  const double pi = std::numbers::pi;
  auto v = [](std::initializer_list<double> l) { return vec(l); };
  return {
      // argmax: NaN is the maximum (the first NaN wins); ties give the first index
      {"argmax([1, nan, 3])", [v] { return xf::argmax(v({1.0, nan, 3.0}), 0); }, {}, {1}, xf::i64},
      {"argmax([nan, 1, nan])", [v] { return xf::argmax(v({nan, 1.0, nan}), 0); }, {}, {0}, xf::i64},
      {"argmax([[1, nan], [3, 2]], 1)", [v] { return xf::argmax(v({1.0, nan, 3.0, 2.0}).reshape({2, 2}), 1); }, {2}, {1, 0}, xf::i64},
      {"argmax([2, 5, 5]) (ties)", [v] { return xf::argmax(v({2.0, 5.0, 5.0}), 0); }, {}, {1}, xf::i64},
      {"argmax of an int64 row with ties", [] { return xf::argmax(tensor{{2, 7, 7}}, 1); }, {1}, {1}, xf::i64},
      {"argmax([1, nan, 3]) as float32", [v] { return xf::argmax(v({1.0, nan, 3.0}).to(xf::f32), 0); }, {}, {1}, xf::i64},
      // pointwise at the edges of their domains (relu, maximum, minimum, clamp, exp, sigmoid, tanh(inf),
      // log(0), sqrt(-1): tests/backend/test_backend_kernels.cpp)
      {"log(-1)", [v] { return xf::log(v({-1.0})); }, {1}, {nan}},
      {"0 * inf", [v] { return v({0.0}) * v({inf}); }, {1}, {nan}},
      {"rsqrt(0)", [v] { return xf::rsqrt(v({0.0})); }, {1}, {inf}},
      {"reciprocal([0, -0])", [v] { return xf::reciprocal(v({0.0, -0.0})); }, {2}, {inf, -inf}},
      {"pow(0, -1.0)", [v] { return xf::pow(v({0.0}), -1.0); }, {1}, {inf}},
      {"pow(-1, 0.5)", [v] { return xf::pow(v({-1.0}), 0.5); }, {1}, {nan}},
      {"atan2([0, 0], [0, -0])", [v] { return xf::atan2(v({0.0, 0.0}), v({0.0, -0.0})); }, {2}, {0.0, pi}},
      {"log1p([-1, -2])", [v] { return xf::log1p(v({-1.0, -2.0})); }, {2}, {-inf, nan}},
      {"tanh([-inf, inf])", [v] { return xf::tanh(v({-inf, inf})); }, {2}, {-1.0, 1.0}},
      {"erf([-inf, inf])", [v] { return xf::erf(v({-inf, inf})); }, {2}, {-1.0, 1.0}},
      {"expm1(-inf)", [v] { return xf::expm1(v({-inf})); }, {1}, {-1.0}},
      {"clamp(1, nan, 2) (a NaN bound)", [v] { return xf::clamp(v({1.0}), nan, 2.0); }, {1}, {nan}},
      {"clamp(1, 0, nan) (a NaN bound)", [v] { return xf::clamp(v({1.0}), 0.0, nan); }, {1}, {nan}},
      {"clamp([-inf, inf], -inf, inf)", [v] { return xf::clamp(v({-inf, inf}), -inf, inf); }, {2}, {-inf, inf}},
      {"d/dx clamp(x, nan, 2) (a NaN bound)", grad_at([](const tensor& x) { return xf::clamp(x, nan, 2.0); }, {1.0}), {1}, {0.0}},
      {"[true, false] / [false, false] (true division)", [] { return tensor{true, false} / tensor{false, false}; }, {2},
       {inf, nan}, xf::f32},
      {"int64 [1, 0, -1] / 0.0", [] { return tensor{1, 0, -1} / 0.0; }, {3}, {inf, nan, -inf}, xf::f32},
      {"0.0 / int64 [0]", [] { return 0.0 / tensor{0}; }, {1}, {nan}, xf::f32},
      // reductions with NaN and infinities
      {"norm([inf, 1])", [v] { return xf::norm(v({inf, 1.0})); }, {}, {inf}},
      {"norm([nan, inf])", [v] { return xf::norm(v({nan, inf})); }, {}, {nan}},
      {"prod([0, inf])", [v] { return xf::prod(v({0.0, inf}), 0); }, {}, {nan}},
      {"logsumexp([nan, 1])", [v] { return xf::logsumexp(v({nan, 1.0}), {0}); }, {}, {nan}},
      {"logsumexp([inf, -inf])", [v] { return xf::logsumexp(v({inf, -inf}), {0}); }, {}, {inf}},
      {"softmax([nan, 1])", [v] { return xf::softmax(v({nan, 1.0}), 0); }, {2}, {nan, nan}},
      {"var([inf, 1])", [v] { return xf::var(v({inf, 1.0}), {0}); }, {}, {nan}},
      {"sum([inf, -inf])", [v] { return xf::sum(v({inf, -inf})); }, {}, {nan}},
      // empty tensors (the mean of nothing: tests/ops/test_reduce_kernels.cpp)
      {"prod of nothing", [] { return xf::prod(xf::zeros({0}, xf::f64), 0); }, {}, {1.0}},
      {"logsumexp of nothing", [] { return xf::logsumexp(xf::zeros({0}, xf::f64), {0}); }, {}, {-inf}},
      {"norm of nothing", [] { return xf::norm(xf::zeros({0}, xf::f64)); }, {}, {0.0}},
      {"var of nothing", [] { return xf::var(xf::zeros({0}, xf::f64), {0}); }, {}, {nan}},
      {"softmax of nothing", [] { return xf::softmax(xf::zeros({0}, xf::f64), 0); }, {0}, {}},
      {"cross_entropy of an empty batch", [] { return xf::cross_entropy(xf::zeros({0, 4}, xf::f64), xf::zeros({0}, xf::i64)); },
       {}, {nan}},
      {"mse_loss of nothing", [] { return xf::mse_loss(xf::zeros({0}, xf::f64), xf::zeros({0}, xf::f64)); }, {}, {nan}},
      {"amax over the full dim 0 of a [2, 0] tensor", [] { return xf::amax(xf::zeros({2, 0}, xf::f64), {0}); }, {0}, {}},
      {"argmax over the full dim 0 of a [2, 0] tensor", [] { return xf::argmax(xf::zeros({2, 0}, xf::f64), 0); }, {0}, {},
       xf::i64},
      {"sum over the empty dim 1 of a [3, 0] tensor", [] { return xf::sum(xf::zeros({3, 0}, xf::f64), {1}); }, {3},
       {0.0, 0.0, 0.0}},
      // derivatives at singular points (sqrt at 0: tests/ops/test_reduce_kernels.cpp)
      {"d/dx norm(x) at 0", grad_at([](const tensor& x) { return xf::norm(x); }, {0.0, 0.0, 0.0}), {3}, {0.0, 0.0, 0.0}},
      {"d/dx x^0 at 0", grad_at([](const tensor& x) { return xf::pow(x, 0.0); }, {0.0}), {1}, {0.0}},
      {"d/dx x^0.5 at 0", grad_at([](const tensor& x) { return xf::pow(x, 0.5); }, {0.0}), {1}, {inf}},
      {"d/dx log(x) at 0", grad_at([](const tensor& x) { return xf::log(x); }, {0.0}), {1}, {inf}},
      {"d/dx abs(x) at 0", grad_at([](const tensor& x) { return xf::abs(x); }, {0.0}), {1}, {0.0}},
      {"d/dx relu(x) at 0", grad_at([](const tensor& x) { return xf::relu(x); }, {0.0}), {1}, {0.0}},
      {"d/dx clamp(x, 0, 1) at the bounds and outside", grad_at([](const tensor& x) { return xf::clamp(x, 0.0, 1.0); },
                                                              {0.0, 1.0, 2.0, -1.0}),
       {4}, {1.0, 1.0, 0.0, 0.0}},
      {"d/dx maximum(x, 1) at a tie", grad_at([](const tensor& x) { return xf::maximum(x, xf::ones({1}, xf::f64)); }, {1.0}),
       {1}, {0.5}},
      {"d/dx amax(x) with a tie", grad_at([](const tensor& x) { return xf::amax(x, {0}); }, {1.0, 1.0, 0.0}), {3},
       {0.5, 0.5, 0.0}},
      {"d/dx sign(x) at 0", grad_at([](const tensor& x) { return xf::sign(x); }, {0.0}), {1}, {0.0}},
      {"d/dx rsqrt(x) at 0", grad_at([](const tensor& x) { return xf::rsqrt(x); }, {0.0}), {1}, {-inf}},
      {"d/dx x / 0 at 1", grad_at([](const tensor& x) { return x / xf::zeros({1}, xf::f64); }, {1.0}), {1}, {inf}},
      {"d/dx softmax(x)[0] on a row of -inf", grad_at([](const tensor& x) { return xf::softmax(x, 0).select(0, 0); }, {-inf, -inf}),
       {2}, {nan, nan}},
      {"d/dx logsumexp(x) on a row of -inf", grad_at([](const tensor& x) { return xf::logsumexp(x, {0}); }, {-inf, -inf}), {2},
       {nan, nan}},
      {"d/dx logsumexp(x) at [inf, 1]", grad_at([](const tensor& x) { return xf::logsumexp(x, {0}); }, {inf, 1.0}), {2},
       {nan, 0.0}},
      {"d/dx sqrt(x * x) at 0", grad_at([](const tensor& x) { return xf::sqrt(x * x); }, {0.0}), {1}, {nan}},
      {"d/dx var(x) of one value", grad_at([](const tensor& x) { return xf::var(x, {0}); }, {1.0}), {1}, {nan}},
      {"d/dx atan2(x, 0) at 0", grad_at([](const tensor& x) { return xf::atan2(x, xf::zeros({1}, xf::f64)); }, {0.0}), {1},
       {nan}},
      {"d/dx amax(x) with a NaN", grad_at([](const tensor& x) { return xf::amax(x, {0}); }, {1.0, nan}), {2}, {nan, nan}},
      {"d/dx maximum(x, nan) at 1", grad_at([](const tensor& x) { return xf::maximum(x, xf::full({1}, nan, xf::f64)); }, {1.0}),
       {1}, {1.0}},
      {"d/dx minimum(x, nan) at 1", grad_at([](const tensor& x) { return xf::minimum(x, xf::full({1}, nan, xf::f64)); }, {1.0}),
       {1}, {1.0}},
      {"d/dx where(x > 3, sqrt(x - 3), x) at 2 (the NaN of the branch not taken)",
       grad_at([](const tensor& x) { return xf::where(x > 3.0, xf::sqrt(x - 3.0), x); }, {2.0}), {1}, {nan}},
  };
}

bool same_value(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want) || want == 0.0) return got == want;
  return std::abs(got - want) <= 1e-6 * std::abs(want);
}
}  // namespace

TEST_CASE("bad input: values torch 1.13 defines (NaN, inf, empty, singular derivatives)", "[reliability][nan]") {
  std::size_t checked = 0;
  for (const defined_value& d : defined_values()) {
    INFO(d.what);
    tensor r;
    REQUIRE_NOTHROW(r = d.got());
    CHECK(r.shape() == d.shape);
    if (d.dtype) CHECK(r.dtype() == *d.dtype);
    if (!(r.shape() == d.shape)) continue;
    const xt::xarray<double> got = xf::to_xtensor<double>(r);
    REQUIRE(got.size() == d.expect.size());
    for (std::size_t i = 0; i < d.expect.size(); ++i) {
      INFO("element " << i << ": got " << got.flat(i) << ", torch 1.13 gives " << d.expect[i]);
      CHECK(same_value(got.flat(i), d.expect[i]));
    }
    ++checked;
    CHECK(xf::layers::depth() == 0);
  }
  CHECK(checked == defined_values().size());
}

TEST_CASE("bad input: what is not an error (printing meta and undefined tensors, same_storage)", "[reliability]") {
  std::ostringstream os;
  os << xf::zeros({2, 3}, xf::f32, xf::meta) << ' ' << tensor();
  CHECK(os.str() == "tensor(..., shape=[2, 3], dtype=float32, device=meta) tensor(undefined)");
  CHECK_FALSE(xf::same_storage(undefined, x3()));
  CHECK_FALSE(xf::same_storage(undefined, undefined));
  CHECK_FALSE(undefined.defined());
  // an integer tensor becomes float32 under clamp (its bounds are doubles: API.md section 2, as
  // torch), so infinite, huge, fractional and NaN bounds need no conversion to int64
  CHECK(xf::equal(xf::clamp(tensor{0, 1, 2}, -inf, 1.0), tensor{0.0f, 1.0f, 1.0f}));
  CHECK(xf::equal(xf::clamp(tensor{0, 5}, 1.0, 1e300), tensor{1.0f, 5.0f}));
  CHECK(xf::equal(xf::clamp(tensor{-1, 1, 2, 3}, -0.5, 2.5), tensor{-0.5f, 1.0f, 2.0f, 2.5f}));
  CHECK(xf::clamp(tensor{true, false}, 0.0, 1.0).dtype() == xf::f32);
  const tensor nan_bound = xf::clamp(tensor{0, 5}, std::nan(""), 1.0);
  CHECK((nan_bound.dtype() == xf::f32 && std::isnan(nan_bound.select(0, 1).item<float>())));
  // clamp_ of an integer tensor cannot hold its float32 result (torch: the same error)
  tensor ints{1, 2};
  CHECK_THROWS_WITH(ints.clamp_(0.5, 1.5), Catch::Contains("xf::clamp_") && Catch::Contains("float32"));
}
