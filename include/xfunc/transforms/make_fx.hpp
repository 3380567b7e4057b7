#pragma once
/// \file
/// xf::make_fx: traces the primitive ops f runs (after every transform inside f) into an
/// xf::graph that prints, counts and replays them. Tracing runs on the example values (meta
/// example inputs give a shape-only trace, which needs fake kernels for custom ops).
#include <cstring>
#include <ostream>
#include <sstream>

#include <xfunc/backend/cpu.hpp>

#include <xfunc/dispatch/trace.hpp>
#include <xfunc/transforms/grad.hpp>

namespace xfunc {
namespace detail {
template <class F>
struct make_fx_transform;
struct graph_access;
}

/// A traced program: one node per primitive op (cond and while_loop: one node each, holding
/// their branches / condition and body as subgraphs), replayable on inputs of the traced shapes.
class graph {
 public:
  /// One node per line: `%t3 = xf::mul(%x0, %t2)`; subgraphs indented below their node.
  std::string str() const {
    std::ostringstream os;
    prog_.print(os, "");
    return os.str();
  }
  /// Number of nodes of op `name` (e.g. "xf::mul_"), subgraphs included.
  std::size_t count(std::string_view name) const { return count_in(prog_, name); }
  /// Number of nodes (subgraphs not included).
  std::size_t size() const { return prog_.nodes.size(); }
  /// Prints g.str().
  friend std::ostream& operator<<(std::ostream& os, const graph& g) { return os << g.str(); }

  /// Replays the graph on new inputs of the traced shapes and dtypes; returns the flattened
  /// outputs. In-place nodes mutate the given inputs as f would.
  template <class... A>
  std::vector<tensor> operator()(const A&... args) const {
    std::vector<tensor> in;
    (detail::tree_for_each(args, [&](const tensor& t) { in.push_back(t); }), ...);
    return prog_.run(in);
  }

 private:
  template <class F>
  friend struct detail::make_fx_transform;
  friend struct detail::graph_access;

  static std::size_t count_in(const detail::program& p, std::string_view name) {
    std::size_t c = 0;
    for (const auto& n : p.nodes) {
      c += n.op == name;
      for (const auto& [label, sub] : n.subgraphs) c += count_in(*sub, name);
    }
    return c;
  }

  detail::program prog_;
};

namespace detail {
/// Read access to a graph's program (tests and tools).
struct graph_access {
  static const program& of(const graph& g) { return g.prog_; }
};

/// A copy of dense t with t's strides (a view's layout kept: a trace that depends on it, such as
/// reshape viewing or copying, then records what the caller's tensor would take).
template <int = 0>
tensor copy_keeping_layout(const tensor& t) {
  const tensor_impl& s = *t.impl();
  if (backend::is_contiguous_layout(s.shape, s.strides)) return t.clone();
  std::int64_t extent = 1;  // elements from the first to the last one the strides reach
  for (std::size_t i = 0; i < s.shape.size(); ++i)
    if (s.shape[i] > 0) extent += (s.shape[i] - 1) * s.strides[i];
  tensor copy = empty_dense({t.numel() == 0 ? 0 : extent}, s.dt, s.dev, "xf::make_fx");
  copy.impl()->shape = s.shape;
  copy.impl()->strides = s.strides;
  s.prepare_access();
  const std::size_t size = dtype_size(s.dt);
  const std::byte* src = s.store->data;
  std::byte* dst = copy.impl()->store->data;
  backend::for_each_offset(s.shape, s.strides, 0, [&](std::int64_t off) {
    std::memcpy(dst + static_cast<std::size_t>(off) * size, src + static_cast<std::size_t>(off + s.offset) * size, size);
  });
  return copy;
}

template <class F>
struct make_fx_transform {
  F f;
  template <class... Args>
  graph operator()(const Args&... args) const {
    if (layers::depth() != 0) fail("xf::make_fx: call it outside transforms (put the transforms inside f)");
    trace_state st;
    // Traced on the example values (torch's tracing_mode="real"), copied (with their layout) so
    // that a function that writes into its inputs does not change the caller's; meta inputs give
    // a shape-only trace.
    auto to_input = [&](const tensor& t) {
      if (!t.defined()) fail("xf::make_fx: an example input is an undefined tensor (a default-constructed xf::tensor)");
      const tensor s = strip_dead(t);
      const tensor x = s.device() == meta ? s : copy_keeping_layout(s);
      st.add_input(x);
      return x;
    };
    std::tuple<Args...> traced_args{tree_map(args, to_input)...};
    {
      trace_scope scope(&st);
      auto result = std::apply(f, traced_args);
      tree_for_each(result, [&](const tensor& t) { st.prog.outputs.push_back(st.id_of(strip_dead(t))); });
    }
    graph g;
    g.prog_ = st.finish();
    return g;
  }
};
struct make_fx_fn {
  template <class F>
  constexpr auto operator()(F f) const {
    return make_fx_transform<F>{std::move(f)};
  }
};
}  // namespace detail

/// make_fx(f)(example_args...) → xf::graph of the primitive ops f runs.
inline constexpr detail::make_fx_fn make_fx{};

}  // namespace xfunc
