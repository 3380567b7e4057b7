#pragma once
// Reverse mode: the nodes a grad layer records, and the backward pass over them.
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <xfunc/core/small_list.hpp>
#include <xfunc/dispatch/wrappers.hpp>
#include <xfunc/fwd.hpp>

namespace xfunc::detail {

// NOTE: [Reverse mode]
// A grad layer records, for every op whose arguments include its wrappers, a node holding the
// unwrapped arguments and output and, per argument, the node that produced it (null when that
// argument is not tracked at this layer). Backward formulas are written with xfunc ops on those
// unwrapped tensors, so they land on the layers below: a backward pass is itself differentiable
// and batchable (hessian, vmap(grad), jacrev = vmap(vjp) need no special cases).
struct grad_node {
  small_list<std::shared_ptr<grad_node>, 3> next;  // one per argument; null = not tracked
  // Long graphs are chains of these: NOTE: [Iterative destruction].
  virtual ~grad_node() {
    for (auto& n : next) release_owner(n);
  }
  /// One gradient per argument (undefined = zero or not needed) for the output cotangent g.
  virtual tensor_list apply(const tensor& g) = 0;
  virtual bool is_leaf() const { return false; }
  /// Nodes of calls with several outputs collect their cotangents through per-output nodes
  /// (see extend/dynamic_op.hpp); they run when any arrived, with `apply`'s argument unused.
  virtual bool has_pending() const { return false; }
  /// The output tangent from the arguments' tangents (forward mode through a recorded graph,
  /// used by xf::linearize).
  virtual tensor forward_tangent(const tensor_list&) {
    fail("xf::linearize: an operation in f has no forward-mode rule");
  }
};

/// The node of an input of a grad/vjp call: where its gradient is collected.
struct leaf_node final : grad_node {
  tensor_list apply(const tensor&) override { return {}; }
  bool is_leaf() const override { return true; }
};

/// A node whose backward is a closure (used by custom functions and composite rules).
struct closure_node final : grad_node {
  std::function<tensor_list(const tensor&)> fn;
  tensor_list apply(const tensor& g) override { return fn(g); }
};

/// Nodes reachable from `roots`, every node after all the nodes it depends on (inputs first).
/// Iterative DFS: graphs can be deeper than the call stack.
inline std::vector<grad_node*> topo_order(const std::vector<std::shared_ptr<grad_node>>& roots) {
  std::vector<grad_node*> order;
  std::unordered_map<grad_node*, bool> seen;
  for (const auto& root : roots) {
    if (!root || seen.count(root.get())) continue;
    std::vector<std::pair<grad_node*, std::size_t>> dfs{{root.get(), 0}};
    seen[root.get()] = true;
    while (!dfs.empty()) {
      auto& [n, i] = dfs.back();
      if (i < n->next.size()) {
        grad_node* c = n->next[i++].get();
        if (c && !seen.count(c)) {
          seen[c] = true;
          dfs.emplace_back(c, 0);
        }
      } else {
        order.push_back(n);
        dfs.pop_back();
      }
    }
  }
  return order;
}

/// Runs the backward pass from `roots` with cotangents `gs` (one per root); returns the
/// gradient reaching each leaf in `leaves` (undefined where none reaches it).
template <int = 0>
tensor_list run_backward(const std::vector<std::shared_ptr<grad_node>>& roots, const tensor_list& gs,
                                const std::vector<std::shared_ptr<grad_node>>& leaves) {
  const std::vector<grad_node*> order = topo_order(roots);
  // Only nodes with a path to a requested leaf run (as torch's engine): a chain that starts at
  // a constant (a factory's value inside the function) has no derivative to give, and running it
  // would do work for nothing, or throw where its op has none (a max all-reduce of a constant).
  std::unordered_set<const grad_node*> needed;
  for (const auto& l : leaves)
    if (l) needed.insert(l.get());
  for (grad_node* n : order)  // inputs first
    for (const auto& k : n->next)
      if (k && needed.count(k.get())) {
        needed.insert(n);
        break;
      }
  std::unordered_map<grad_node*, tensor> acc;
  auto accumulate = [&](grad_node* n, const tensor& g) {
    tensor& slot = acc[n];
    slot = slot.defined() ? xfunc::add(slot, g) : g;
  };
  for (std::size_t r = 0; r < roots.size(); ++r)
    if (roots[r] && gs[r].defined()) accumulate(roots[r].get(), gs[r]);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    grad_node* n = *it;
    if (n->is_leaf() || !needed.count(n)) continue;
    auto found = acc.find(n);
    const bool arrived = found != acc.end() && found->second.defined();
    if (!arrived && !n->has_pending()) continue;
    tensor gn;
    if (found != acc.end()) {
      gn = std::move(found->second);
      acc.erase(found);
    }
    tensor_list gi = n->apply(gn);
    for (std::size_t k = 0; k < n->next.size() && k < gi.size(); ++k)
      if (n->next[k] && gi[k].defined()) accumulate(n->next[k].get(), gi[k]);
  }
  tensor_list out;
  out.reserve(leaves.size());
  for (const auto& l : leaves) {
    auto f = acc.find(l.get());
    out.push_back(f == acc.end() ? tensor() : f->second);
  }
  return out;
}
#if defined(XFUNC_PRECOMPILED_KERNELS)  // compiled once in xfunc::kernels (NOTE: [Precompiled composites])
extern template tensor_list run_backward<0>(const std::vector<std::shared_ptr<grad_node>>&, const tensor_list&,
                                             const std::vector<std::shared_ptr<grad_node>>&);
#endif

/// Pushes tangents `tin` of `leaves` forward to `roots` through the recorded graph.
inline tensor_list run_forward_tangents(const std::vector<std::shared_ptr<grad_node>>& roots,
                                        const std::vector<std::shared_ptr<grad_node>>& leaves, const tensor_list& tin) {
  std::unordered_map<grad_node*, tensor> tan;
  for (std::size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i]) tan[leaves[i].get()] = tin[i];
  for (grad_node* n : topo_order(roots)) {
    if (n->is_leaf()) continue;
    tensor_list ti(n->next.size());
    bool any = false;
    for (std::size_t k = 0; k < n->next.size(); ++k) {
      if (!n->next[k]) continue;
      auto f = tan.find(n->next[k].get());
      if (f != tan.end() && f->second.defined()) {
        ti[k] = f->second;
        any = true;
      }
    }
    if (any) tan[n] = n->forward_tangent(ti);
  }
  tensor_list out;
  for (const auto& r : roots) {
    auto f = r ? tan.find(r.get()) : tan.end();
    out.push_back(f == tan.end() ? tensor() : f->second);
  }
  return out;
}

}  // namespace xfunc::detail
