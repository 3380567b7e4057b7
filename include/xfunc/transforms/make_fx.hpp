#pragma once
// xf::make_fx: traces the primitive ops f runs (after every transform inside f) into an
// xf::graph that prints, counts and replays them. Tracing runs on meta tensors (shapes only).
#include <ostream>
#include <sstream>

#include <xfunc/dispatch/trace.hpp>
#include <xfunc/transforms/grad.hpp>

namespace xfunc {
namespace detail {
template <class F>
struct make_fx_transform;
}

/// A traced program: one node per primitive op, replayable on inputs of the traced shapes.
class graph {
 public:
  /// One node per line: `%t3 = xf::mul(%x0, %t2)`.
  std::string str() const {
    std::ostringstream os;
    os << "graph(";
    for (std::size_t i = 0; i < inputs_.size(); ++i)
      os << (i ? ", " : "") << '%' << names_[static_cast<std::size_t>(inputs_[i])] << ": " << input_dtypes_[i]
         << input_shapes_[i];
    os << "):\n";
    for (const auto& n : nodes_) {
      os << "  %" << names_[static_cast<std::size_t>(n.out)] << " = " << n.op << '(';
      for (std::size_t i = 0; i < n.args.size(); ++i) os << (i ? ", " : "") << '%' << names_[static_cast<std::size_t>(n.args[i])];
      os << ")\n";
    }
    os << "  return (";
    for (std::size_t i = 0; i < outputs_.size(); ++i) os << (i ? ", " : "") << '%' << names_[static_cast<std::size_t>(outputs_[i])];
    os << ")\n";
    return os.str();
  }
  /// Number of nodes of op `name` (e.g. "xf::mul_").
  std::size_t count(std::string_view name) const {
    std::size_t c = 0;
    for (const auto& n : nodes_) c += n.op == name;
    return c;
  }
  std::size_t size() const { return nodes_.size(); }
  friend std::ostream& operator<<(std::ostream& os, const graph& g) { return os << g.str(); }

  /// Replays the graph on new inputs of the traced shapes and dtypes; returns the flattened
  /// outputs. In-place nodes mutate the given inputs as f would.
  template <class... A>
  std::vector<tensor> operator()(const A&... args) const {
    std::vector<tensor> in;
    (detail::tree_for_each(args, [&](const tensor& t) { in.push_back(t); }), ...);
    if (in.size() != inputs_.size())
      detail::fail("xf::graph: expected ", inputs_.size(), " input tensors, got ", in.size());
    std::vector<tensor> env(names_.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      tensor t = detail::strip_dead(in[i]);
      if (!t.impl()->is_dense())
        detail::fail("xf::graph: replay takes plain tensors (call it outside transforms)");
      if (!(t.shape() == input_shapes_[i]) || t.dtype() != input_dtypes_[i])
        detail::fail("xf::graph: input ", i, " has shape ", t.shape(), " and dtype ", t.dtype(), " but the graph was traced with ",
                     input_shapes_[i], " and ", input_dtypes_[i]);
      env[static_cast<std::size_t>(inputs_[i])] = t;
    }
    // constants are copied when the graph mutates anything, so every replay starts afresh
    for (const auto& [id, c] : constants_) env[static_cast<std::size_t>(id)] = mutates_ ? c.clone() : c;
    std::vector<tensor> xs;
    for (const auto& n : nodes_) {
      xs.clear();
      for (int a : n.args) xs.push_back(env[static_cast<std::size_t>(a)]);
      env[static_cast<std::size_t>(n.out)] = n.replay(xs);
    }
    std::vector<tensor> out;
    for (int o : outputs_) out.push_back(env[static_cast<std::size_t>(o)]);
    return out;
  }

 private:
  template <class F>
  friend struct detail::make_fx_transform;

  std::vector<detail::trace_node> nodes_;
  std::vector<std::string> names_;
  std::vector<int> inputs_, outputs_;
  std::vector<shape_t> input_shapes_;
  std::vector<dtype> input_dtypes_;
  std::vector<std::pair<int, tensor>> constants_;
  bool mutates_ = false;
};

namespace detail {
template <class F>
struct make_fx_transform {
  F f;
  template <class... Args>
  graph operator()(const Args&... args) const {
    if (layers::depth() != 0) fail("xf::make_fx: call it outside transforms (put the transforms inside f)");
    trace_state st;
    graph g;
    auto to_meta = [&](const tensor& t) {
      tensor m = strip_dead(t).to(meta);
      st.add_input(m);
      g.input_shapes_.push_back(t.shape());
      g.input_dtypes_.push_back(t.dtype());
      return m;
    };
    std::tuple<Args...> meta_args{tree_map(args, to_meta)...};
    {
      trace_scope scope(&st);
      auto result = std::apply(f, meta_args);
      tree_for_each(result, [&](const tensor& t) { g.outputs_.push_back(st.id_of(strip_dead(t))); });
    }
    g.nodes_ = std::move(st.nodes);
    g.names_ = std::move(st.names);
    g.inputs_ = std::move(st.inputs);
    g.constants_ = std::move(st.constants);
    for (const auto& n : g.nodes_) g.mutates_ = g.mutates_ || (!n.op.empty() && n.op.back() == '_');
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
