#pragma once
// Tracing (xf::make_fx): while a trace is active on this thread, every op that reaches a backend
// kernel (after all transforms) is recorded with a closure that replays it.
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <xfunc/dispatch/wrappers.hpp>

namespace xfunc::detail {

struct trace_node {
  std::string op;          // "xf::add", in-place "xf::add_"
  std::vector<int> args;   // value ids
  int out = -1;            // value id of the result (in-place: a new id for the mutated value)
  std::function<tensor(std::span<const tensor>)> replay;  // returns the result (in-place: the mutated self)
};

/// The recording of one make_fx call.
struct trace_state {
  std::vector<trace_node> nodes;
  std::vector<std::string> names;  // per value id
  std::vector<int> inputs;         // value ids of the graph's inputs
  std::vector<std::pair<int, tensor>> constants;  // value ids of tensors made outside the trace
  std::vector<tensor> keep;        // holds every traced tensor so that its impl address stays unique
  std::unordered_map<const tensor_impl*, int> ids;

  int new_value(const tensor& t, const std::string& prefix, std::size_t k) {
    const int id = static_cast<int>(names.size());
    names.push_back(prefix + std::to_string(k));
    ids[t.impl()] = id;
    keep.push_back(t);
    return id;
  }
  int add_input(const tensor& t) {
    const int id = new_value(t, "x", inputs.size());
    inputs.push_back(id);
    return id;
  }
  /// The value id of t; a tensor the trace has not seen is a constant captured by value.
  int id_of(const tensor& t) {
    auto it = ids.find(t.impl());
    if (it != ids.end()) return it->second;
    const int id = new_value(t, "c", constants.size());
    constants.emplace_back(id, t);
    return id;
  }
  template <class Op>
  tensor record(std::span<const tensor> in, const typename Op::attrs& a) {
    return record_kernel(Op::name, in, [a](std::span<const tensor> xs) { return Op::kernel(xs, a); });
  }
  /// Runs kernel(in) and records it as one node named `op`, replayed by the same kernel.
  template <class K>
  tensor record_kernel(const char* op, std::span<const tensor> in, K kernel) {
    trace_node n;
    n.op = op;
    for (const auto& t : in) n.args.push_back(id_of(t));
    tensor out = kernel(in);
    n.out = new_value(out, "t", nodes.size());
    n.replay = std::move(kernel);
    nodes.push_back(std::move(n));
    return out;
  }
  /// A factory called on the meta device while tracing: a node that makes the tensor anew.
  tensor record_factory(const char* op, const tensor& meta_out, std::function<tensor()> make) {
    trace_node n;
    n.op = op;
    n.out = new_value(meta_out, "t", nodes.size());
    n.replay = [make = std::move(make)](std::span<const tensor>) { return make(); };
    nodes.push_back(std::move(n));
    return meta_out;
  }
  /// A custom op call (computed on meta tensors by its fake kernel): one node per output, the
  /// later ones `op[k]` reading the outputs the first one's replay computed. A call with no
  /// outputs is recorded as mutating its first argument.
  std::vector<tensor> record_call(const std::string& op, std::span<const tensor> in, std::vector<tensor> outs,
                                  std::function<std::vector<tensor>(std::span<const tensor>)> replay) {
    if (outs.empty()) {
      if (!in.empty())
        record_inplace(op, in[0], in.subspan(1), [replay](std::span<const tensor> xs) {
          replay(xs);
          return xs[0];
        });
      return outs;
    }
    auto results = std::make_shared<std::vector<tensor>>();
    for (std::size_t k = 0; k < outs.size(); ++k) {
      trace_node n;
      n.op = k == 0 ? op : op + "[" + std::to_string(k) + "]";
      for (const auto& t : in) n.args.push_back(id_of(t));
      n.out = new_value(outs[k], "t", nodes.size());
      if (k == 0)
        n.replay = [replay, results](std::span<const tensor> xs) {
          *results = replay(xs);
          return (*results)[0];
        };
      else
        n.replay = [results, k](std::span<const tensor>) { return (*results)[k]; };
      nodes.push_back(std::move(n));
    }
    return outs;
  }
  void record_inplace(const std::string& op, const tensor& self, std::span<const tensor> others,
                      std::function<tensor(std::span<const tensor>)> replay) {
    trace_node n;
    n.op = op;
    n.args.push_back(id_of(self));
    for (const auto& t : others) n.args.push_back(id_of(t));
    // the mutated tensor keeps its identity: later uses of it refer to this node's result
    const int id = static_cast<int>(names.size());
    names.push_back("t" + std::to_string(nodes.size()));
    ids[self.impl()] = id;
    n.out = id;
    n.replay = std::move(replay);
    nodes.push_back(std::move(n));
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
