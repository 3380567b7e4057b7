#pragma once
// release_owner: drops a shared owner without recursing through long chains of ownership.
#include <memory>
#include <utility>
#include <vector>

namespace xfunc::detail {

// NOTE: [Iterative destruction]
// A recorded autograd graph is a chain of shared ownership: a node owns the nodes of its
// arguments, a wrapper tensor owns its node and its inner value, a node owns the tensors it
// saved. Released naively, a chain of 100000 ops under grad destroys itself through 100000
// nested destructor frames and overflows the stack. So the destructors of grad nodes and tensor
// impls drop what they own through release_owner: inside another such destructor on this thread
// an owner that would be destroyed now (the last one) is moved to a per-thread queue instead,
// and the outermost call empties the queue in a loop. The stack depth stays a few frames
// whatever the graph's length. An owner that is not the last is simply released (no cascade),
// so the common case costs a load of the reference count.
struct release_queue {
  static inline thread_local std::vector<std::shared_ptr<void>>* active = nullptr;
};

/// Releases p; anything only p kept alive is destroyed iteratively (NOTE: [Iterative destruction]).
template <class T>
void release_owner(std::shared_ptr<T>& p) noexcept {
  if (!p) return;
  if (p.use_count() != 1) {
    p.reset();
    return;
  }
  if (auto* q = release_queue::active) {
    try {
      q->push_back(std::move(p));
    } catch (...) {
      p.reset();  // out of memory for the queue: release it here (deeper, but still correct)
    }
    return;
  }
  std::vector<std::shared_ptr<void>> queue;
  release_queue::active = &queue;
  p.reset();
  while (!queue.empty()) {
    std::shared_ptr<void> next = std::move(queue.back());
    queue.pop_back();
    next.reset();  // may queue more
  }
  release_queue::active = nullptr;
}

}  // namespace xfunc::detail
