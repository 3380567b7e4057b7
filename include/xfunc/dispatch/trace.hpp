#pragma once
// Tracing (xf::make_fx): while a trace is active on this thread, every op that reaches a backend
// kernel (after all transforms) is recorded with a closure that replays it. cond and while_loop
// are recorded as one node each, holding their branches / condition and body as subprograms.
#include <algorithm>
#include <functional>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <xfunc/dispatch/wrappers.hpp>

namespace xfunc::detail {
struct program;

struct trace_node {
  std::string op;          // "xf::add", in-place "xf::add_"
  std::vector<int> args;   // value ids
  int out = -1;            // value id of the result (in-place: a new id for the mutated value)
  std::function<tensor(std::span<const tensor>)> replay;  // returns the result (in-place: the mutated self)
  bool is_view = false;    // a view op's node (its result aliases its first argument)
  /// Subprograms of a control-flow node (cond: true_fn, false_fn; while_loop: cond_fn, body_fn).
  std::vector<std::pair<std::string, std::shared_ptr<const program>>> subgraphs;
};

/// A traced program: what xf::graph prints and replays; the subprograms of control-flow nodes
/// are programs too. Values are numbered; inputs, node results and constants each have an id.
struct program {
  std::vector<trace_node> nodes;
  std::vector<std::string> names;  // per value id
  std::vector<int> inputs, outputs;
  std::vector<shape_t> input_shapes;
  std::vector<dtype> input_dtypes;
  std::vector<std::pair<int, tensor>> constants;  // tensors made outside the trace, by value
  bool mutates = false;                           // an in-place node here or in a subprogram

  /// One node per line: `%t3 = xf::mul(%x0, %t2)`, subprograms indented below their node.
  void print(std::ostream& os, const std::string& indent) const {
    os << "graph(";
    for (std::size_t i = 0; i < inputs.size(); ++i)
      os << (i ? ", " : "") << '%' << names[static_cast<std::size_t>(inputs[i])] << ": " << input_dtypes[i]
         << input_shapes[i];
    os << "):\n";
    for (const auto& n : nodes) {
      os << indent << "  %" << names[static_cast<std::size_t>(n.out)] << " = " << n.op << '(';
      for (std::size_t i = 0; i < n.args.size(); ++i) os << (i ? ", " : "") << '%' << names[static_cast<std::size_t>(n.args[i])];
      os << ")\n";
      for (const auto& [label, sub] : n.subgraphs) {
        os << indent << "    " << label << ": ";
        sub->print(os, indent + "    ");
      }
    }
    os << indent << "  return (";
    for (std::size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : "") << '%' << names[static_cast<std::size_t>(outputs[i])];
    os << ")\n";
  }

  /// Replays the program on inputs of the traced shapes and dtypes; returns its outputs. (A
  /// template only to be instantiated on use: NOTE: [Lazy instantiation].)
  template <int = 0>
  std::vector<tensor> run(std::span<const tensor> in) const {
    if (in.size() != inputs.size()) fail("xf::graph: expected ", inputs.size(), " input tensors, got ", in.size());
    std::vector<tensor> env(names.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      tensor t = strip_dead(in[i]);
      if (!t.impl()->is_dense()) fail("xf::graph: replay takes plain tensors (call it outside transforms)");
      if (!(t.shape() == input_shapes[i]) || t.dtype() != input_dtypes[i])
        fail("xf::graph: input ", i, " has shape ", t.shape(), " and dtype ", t.dtype(), " but the graph was traced with ",
             input_shapes[i], " and ", input_dtypes[i]);
      env[static_cast<std::size_t>(inputs[i])] = t;
    }
    // constants are copied when the program mutates anything, so every replay starts afresh
    for (const auto& [id, c] : constants) env[static_cast<std::size_t>(id)] = mutates ? c.clone() : c;
    std::vector<tensor> xs;
    for (const auto& n : nodes) {
      xs.clear();
      for (int a : n.args) xs.push_back(env[static_cast<std::size_t>(a)]);
      env[static_cast<std::size_t>(n.out)] = n.replay(xs);
    }
    std::vector<tensor> out;
    for (int o : outputs) out.push_back(env[static_cast<std::size_t>(o)]);
    return out;
  }
};

/// The recording of one make_fx call, or of one subprogram of a control-flow op (then `parent`
/// is the enclosing recording: a value of it that the subprogram uses becomes an extra input).
struct trace_state {
  explicit trace_state(trace_state* parent_trace = nullptr, std::string value_prefix = "t")
      : parent(parent_trace), prefix(std::move(value_prefix)) {}

  program prog;
  trace_state* parent;
  std::string prefix;              // names of node results ("t0", ...)
  std::vector<int> lifted;         // per extra input: the value id in `parent` it stands for
  std::vector<tensor> keep;        // holds every traced tensor so that its impl address stays unique
  std::unordered_map<const tensor_impl*, int> ids;

  int new_value(const tensor& t, const std::string& name) {
    const int id = static_cast<int>(prog.names.size());
    prog.names.push_back(name);
    ids[t.impl()] = id;
    keep.push_back(t);
    return id;
  }
  int add_input(const tensor& t) {
    // str_cat, not "x" + std::to_string(...), which GCC 12 wrongly warns about (-Wrestrict, PR 105329)
    const int id = new_value(t, str_cat(parent ? "a" : "x", prog.inputs.size()));
    prog.inputs.push_back(id);
    prog.input_shapes.push_back(t.shape());
    prog.input_dtypes.push_back(t.dtype());
    return id;
  }
  /// The id of a value this recording (or an enclosing one) has seen; -1 if none has.
  int find(const tensor& t) {
    auto it = ids.find(t.impl());
    if (it != ids.end()) return it->second;
    if (!parent) return -1;
    const int outer = parent->find(t);
    if (outer < 0) return -1;
    lifted.push_back(outer);
    return add_input(t);
  }
  /// The value id of t; a tensor no recording has seen is a constant captured by value.
  int id_of(const tensor& t) {
    const int id = find(t);
    if (id >= 0) return id;
    const int c = new_value(t, str_cat("c", prog.constants.size()));
    prog.constants.emplace_back(c, t);
    return c;
  }
  int result_id(const tensor& t) { return new_value(t, prefix + std::to_string(prog.nodes.size())); }

  /// Runs kernel(in) and records it as one node named `op` (a view op's when is_view), replayed
  /// by the same kernel. (Not a template over the kernel: that compiled this body again for
  /// every op.)
  tensor record_kernel(const char* op, std::span<const tensor> in, std::function<tensor(std::span<const tensor>)> kernel,
                       bool is_view = false) {
    trace_node n;
    n.op = op;
    n.is_view = is_view;
    for (const auto& t : in) n.args.push_back(id_of(t));
    tensor out = kernel(in);
    n.out = result_id(out);
    n.replay = std::move(kernel);
    prog.nodes.push_back(std::move(n));
    return out;
  }
  /// A factory's result: a node that makes the tensor anew on replay.
  tensor record_factory(const char* op, const tensor& out, std::function<tensor()> make) {
    trace_node n;
    n.op = op;
    n.out = result_id(out);
    n.replay = [make = std::move(make)](std::span<const tensor>) { return make(); };
    prog.nodes.push_back(std::move(n));
    return out;
  }
  /// A call with several outputs (a custom op, cond, while_loop): one node per output, the later
  /// ones `op[k]` reading what the first one's replay computed. `outs` must be tensors this
  /// recording has not seen (their ids become the nodes' results).
  std::vector<tensor> record_multi(const std::string& op, std::vector<int> args, std::vector<tensor> outs,
                                   std::function<std::vector<tensor>(std::span<const tensor>)> replay,
                                   std::vector<std::pair<std::string, std::shared_ptr<const program>>> subgraphs = {}) {
    auto results = std::make_shared<std::vector<tensor>>();
    for (std::size_t k = 0; k < outs.size(); ++k) {
      trace_node n;
      n.op = k == 0 ? op : op + "[" + std::to_string(k) + "]";
      n.args = args;
      n.out = result_id(outs[k]);
      if (k == 0) {
        n.replay = [replay, results](std::span<const tensor> xs) {
          *results = replay(xs);
          return (*results)[0];
        };
        n.subgraphs = std::move(subgraphs);
      } else {
        n.replay = [results, k](std::span<const tensor>) { return (*results)[k]; };
      }
      prog.nodes.push_back(std::move(n));
    }
    return outs;
  }
  /// A custom op call: its outputs as record_multi's nodes. `mutated` is the index of the first
  /// argument it writes in place (or -1); a call with no outputs is recorded as the in-place node
  /// of that argument (of its first one when it declares none).
  std::vector<tensor> record_call(const std::string& op, std::span<const tensor> in, std::vector<tensor> outs,
                                  std::function<std::vector<tensor>(std::span<const tensor>)> replay,
                                  std::ptrdiff_t mutated = -1) {
    std::vector<int> args;
    for (const auto& t : in) args.push_back(id_of(t));
    prog.mutates = prog.mutates || mutated >= 0;
    if (!outs.empty()) return record_multi(op, std::move(args), std::move(outs), std::move(replay));
    if (in.empty()) return outs;
    const auto k = static_cast<std::size_t>(std::max<std::ptrdiff_t>(mutated, 0));
    trace_node n;
    n.op = op;
    n.args = std::move(args);
    n.out = result_id(in[k]);  // later uses of the written argument refer to this node
    n.replay = [replay, k](std::span<const tensor> xs) {
      replay(xs);
      return xs[k];
    };
    prog.nodes.push_back(std::move(n));
    prog.mutates = true;
    return outs;
  }
  void record_inplace(const std::string& op, const tensor& self, std::span<const tensor> others,
                      std::function<tensor(std::span<const tensor>)> replay) {
    trace_node n;
    n.op = op;
    n.args.push_back(id_of(self));
    for (const auto& t : others) n.args.push_back(id_of(t));
    // the mutated tensor keeps its identity: later uses of it refer to this node's result
    n.out = result_id(self);
    n.replay = std::move(replay);
    prog.nodes.push_back(std::move(n));
    prog.mutates = true;
  }
  /// A data-dependent choice a transform made while tracing (cond's branch, a while_loop step):
  /// the graph follows that choice only, so replay checks that the choice is the same.
  void record_guard(const tensor& pred, bool expected, const char* who) {
    trace_node n;
    n.op = "xf::guard";
    n.args.push_back(id_of(pred));
    n.out = result_id(pred);
    n.replay = [expected, who](std::span<const tensor> xs) {
      if (xs[0].item<bool>() != expected)
        fail("xf::graph: the replayed inputs take another path through ", who, " than the traced ones did (it ran "
             "under a transform inside make_fx, so only the path taken was traced); trace again with these inputs, "
             "or call make_fx on a function without that transform around ", who);
      return xs[0];
    };
    prog.nodes.push_back(std::move(n));
  }
  /// The finished program (a subprogram's extra inputs, `lifted`, follow its own).
  program finish() {
    for (const auto& n : prog.nodes)
      for (const auto& [label, sub] : n.subgraphs) prog.mutates = prog.mutates || sub->mutates;
    return std::move(prog);
  }
};

inline thread_local trace_state* tls_trace = nullptr;

/// Suspends (or replaces) the active trace for a scope.
class trace_scope {
 public:
  explicit trace_scope(trace_state* s) : saved_(tls_trace) { tls_trace = s; }
  ~trace_scope() { tls_trace = saved_; }
  trace_scope(const trace_scope&) = delete;
  trace_scope& operator=(const trace_scope&) = delete;

 private:
  trace_state* saved_;
};

}  // namespace xfunc::detail
