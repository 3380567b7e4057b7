// Allocation faults (issue 15, resource faults): every allocation of a transformed program is
// made to fail in turn -- each operator new of this process, and each tensor buffer through the
// library's hook (detail::buffer_fault_countdown) -- and after each failure the library must be
// usable: the exception reaches the caller (std::bad_alloc or an xf::error "out of memory"), the
// layer stack is empty, the caller's tensors are unchanged, the next run gives the right result,
// and nothing leaks (the ASan build checks with LeakSanitizer).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include <xfunc/xfunc.hpp>

#include "../support/bitwise.hpp"

namespace xf = xfunc;
using xfunc_test::bitwise_equal;

namespace {
// operator new (every form), replaced for this test program: counts calls, and fails the one
// that brings fail_countdown to 0.
std::atomic<long> new_calls{0};
std::atomic<long> fail_countdown{0};

void* allocate(std::size_t n, std::size_t align) {
  ++new_calls;
  if (fail_countdown.load(std::memory_order_relaxed) > 0 && fail_countdown.fetch_sub(1) == 1) throw std::bad_alloc();
  if (n == 0) n = 1;
  void* p = align <= alignof(std::max_align_t) ? std::malloc(n) : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return allocate(n, alignof(std::max_align_t)); }
void* operator new[](std::size_t n) { return allocate(n, alignof(std::max_align_t)); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n, alignof(std::max_align_t));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return allocate(n, static_cast<std::size_t>(a));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t& t) noexcept { return operator new(n, a, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

struct program {
  std::string name;
  std::vector<xf::tensor> inputs;
  std::function<xf::tensor(const std::vector<xf::tensor>&)> run;
};

std::vector<program> programs() {
  xf::manual_seed(5);
  std::vector<program> p;
  // per-example gradients: vmap of grad through matmul, tanh and a reduction
  p.push_back({"vmap(grad(mlp))", {xf::randn({4, 3}, xf::f64), xf::randn({5, 4}, xf::f64)}, [](const auto& in) {
                 auto loss = [](const xf::tensor& w, const xf::tensor& x) { return xf::sum(xf::tanh(xf::matmul(x, w)) * 2.0); };
                 return xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0))(in[0], in[1]);
               }});
  // second order: the Hessian of a softmax cross-entropy-like function
  p.push_back({"hessian", {xf::randn({4}, xf::f64)}, [](const auto& in) {
                 auto f = [](const xf::tensor& x) { return xf::logsumexp(x * x, {0}) + xf::sum(xf::sin(x)); };
                 return xf::hessian(f)(in[0]);
               }});
  // mutation through views, functionalized, under grad and jacrev
  p.push_back({"jacrev(functionalize(in-place on views))", {xf::randn({3, 4}, xf::f64)}, [](const auto& in) {
                 auto f = [](const xf::tensor& x) {
                   xf::tensor r = xf::zeros({3, 4}, xf::f64);
                   r.narrow(1, 1, 2).add_(x.narrow(1, 0, 2) * x.narrow(1, 2, 2));
                   r.select(0, 0).mul_(2.0);
                   return xf::sum(r, {1});
                 };
                 return xf::jacrev(xf::functionalize(f))(in[0]);
               }});
  // forward over reverse, large enough for heap buffers
  p.push_back({"jvp(grad) on heap buffers", {xf::randn({64, 32}, xf::f64), xf::randn({64, 32}, xf::f64)},
               [](const auto& in) {
                 auto g = xf::grad([](const xf::tensor& x) { return xf::sum(xf::exp(x * 0.1) * x); });
                 return xf::jvp(g, in[0], in[1]).second;
               }});
  return p;
}

bool failed_as_expected(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::bad_alloc&) {
    return true;
  } catch (const xf::error& e) {
    return std::string(e.what()).find("out of memory") != std::string::npos;
  }
  return false;
}

}  // namespace

TEST_CASE("a failed allocation anywhere in a transformed program leaves the library usable", "[reliability]") {
  xf::set_num_threads(1);  // one order of allocations
  for (const program& p : programs()) {
    INFO(p.name);
    std::vector<xf::tensor> saved;
    for (const auto& t : p.inputs) saved.push_back(t.clone());
    const xf::tensor expected = p.run(p.inputs).clone();
    for (int kind = 0; kind < 2; ++kind) {  // 0: operator new, 1: tensor buffers
      INFO((kind == 0 ? "operator new" : "tensor buffers"));
      // count the allocations of one run
      const long new_before = new_calls.load();
      xf::detail::buffer_fault_countdown = std::int64_t(1) << 40;
      (void)p.run(p.inputs);
      const long buffers = (std::int64_t(1) << 40) - xf::detail::buffer_fault_countdown.load();
      xf::detail::buffer_fault_countdown = 0;
      const long total = kind == 0 ? new_calls.load() - new_before : buffers;
      if (kind == 1 && p.name.find("heap") != std::string::npos) CHECK(total > 0);
      long injected = 0, unexpected = 0, survived_wrong = 0, stack_left = 0, inputs_changed = 0;
      for (long n = 1; n <= total; ++n) {
        xf::tensor result;
        bool threw = false, right_kind = false;
        if (kind == 0) fail_countdown = n;
        else xf::detail::buffer_fault_countdown = n;
        try {
          result = p.run(p.inputs);
        } catch (...) {
          threw = true;
          fail_countdown = 0;
          xf::detail::buffer_fault_countdown = 0;
          right_kind = failed_as_expected([] { throw; });
        }
        fail_countdown = 0;
        xf::detail::buffer_fault_countdown = 0;
        injected += threw;
        unexpected += threw && !right_kind;
        if (!threw && !xf::allclose(result, expected, 0, 0)) ++survived_wrong;  // a swallowed failure must not change results
        if (!xf::detail::current_stack().layers.empty()) {
          ++stack_left;
          xf::detail::current_stack().layers.clear();
        }
        for (std::size_t i = 0; i < saved.size(); ++i) inputs_changed += !bitwise_equal(p.inputs[i], saved[i]);
      }
      INFO(total << " allocations, " << injected << " failures reached the caller");
      CHECK(unexpected == 0);
      CHECK(survived_wrong == 0);
      CHECK(stack_left == 0);
      CHECK(inputs_changed == 0);
      CHECK(injected > 0);
      CHECK(xf::allclose(p.run(p.inputs), expected, 0, 0));  // and the library still works
    }
  }
}
