// A custom operator with a hand-written CPU kernel: smooth_abs(x, eps) = sqrt(x^2 + eps), a
// differentiable stand-in for |x|. The kernel is one loop over the raw data (a fused op that no
// composition of built-in ops would run in one pass). We register a fake kernel (shapes only,
// for meta tensors and make_fx), an autograd formula and a vmap rule, then use the op under
// grad, vmap(grad), jacfwd (forward mode by transposing the backward formula) and make_fx, where
// it stays one node. Every result is checked; the program exits non-zero if one is wrong.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <xfunc/xfunc.hpp>

#include "example_check.hpp"

namespace xf = xfunc;

namespace {
using example::check;
using example::failures;

// The CPU kernel. It runs below every transform, so x is a plain dense tensor here; it may be a
// non-contiguous view, so make it contiguous before walking its buffer.
template <class T>
void smooth_abs_loop(const T* x, T* y, std::int64_t n, T eps) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i] * x[i] + eps);
}

xf::tensor smooth_abs_kernel(const xf::tensor& x, double eps) {
  const xf::tensor xc = x.contiguous();
  xf::tensor y = xf::empty(x.shape(), x.dtype());  // a new tensor: custom ops may not alias
  if (x.dtype() == xf::f64)
    smooth_abs_loop(xc.impl()->data<double>(), y.impl()->data<double>(), x.numel(), eps);
  else if (x.dtype() == xf::f32)
    smooth_abs_loop(xc.impl()->data<float>(), y.impl()->data<float>(), x.numel(), static_cast<float>(eps));
  else
    throw xf::error("mylib::smooth_abs: expected a float32 or float64 tensor");
  return y;
}

}  // namespace

int main() try {
  // 1. Registration: the schema comes from the kernel's C++ signature.
  std::cout << "1. registering mylib::smooth_abs\n";
  auto smooth_abs = xf::custom_op("mylib::smooth_abs", smooth_abs_kernel, xf::arg_names("x", "eps"));
  std::cout << "   schema: " << smooth_abs.schema() << '\n';
  check(smooth_abs.schema() == "mylib::smooth_abs(Tensor x, float eps) -> Tensor", "schema inferred from the signature");

  // fake kernel: outputs with the right shape and dtype, on the input's device (meta)
  smooth_abs.register_fake([](const xf::tensor& x, double) { return xf::empty_like(x); });

  // autograd: d/dx sqrt(x^2 + eps) = x / y. setup_context sees the inputs as a tuple of the
  // decayed parameter types and the output; backward returns one gradient per tensor input.
  smooth_abs.register_autograd(
      [](xf::autograd::context& ctx, const xf::tensor& g) {
        const auto saved = ctx.saved_tensors();
        return g * saved[0] / saved[1];  // written with xfunc ops: itself differentiable and batchable
      },
      [](xf::autograd::context& ctx, const std::tuple<xf::tensor, double>& inputs, const xf::tensor& y) {
        ctx.save_for_backward(std::get<0>(inputs), y);
      });

  // vmap: the op is elementwise, so the batched value goes through the kernel as it is and the
  // batch dim stays where it was. One entry of in_dims per parameter (eps's is always nullopt).
  // (The rule calls the op again on the physical values: that call lands on the layers below.)
  smooth_abs.register_vmap([op = smooth_abs](const xf::vmap_info&,
                                             const std::array<std::optional<std::int64_t>, 2>& in_dims,
                                             const xf::tensor& x, double eps) {
    return std::pair{op(x, eps), in_dims[0]};
  });

  const double eps = 1e-2;
  const xf::tensor x{-2.0, -0.5, 0.0, 0.25, 3.0};
  auto reference = [eps](const xf::tensor& t) { return xf::sqrt(t * t + eps); };

  // 2. Plain call (the kernel) and on meta tensors (the fake kernel).
  std::cout << "2. plain call and meta tensors\n";
  const xf::tensor y = smooth_abs(x, eps);
  std::cout << "   smooth_abs(x) = " << y << '\n';
  check(xf::allclose(y, reference(x)), "kernel == sqrt(x^2 + eps)");
  check(xf::allclose(smooth_abs(x.to(xf::f32), eps), reference(x).to(xf::f32)), "float32 kernel");
  const xf::tensor xt = xf::tensor{{1.0, 2.0}, {3.0, 4.0}}.t();  // a non-contiguous view
  check(xf::allclose(smooth_abs(xt, eps), reference(xt)), "non-contiguous input");
  const xf::tensor ym = smooth_abs(xf::empty({7, 3}, xf::f64, xf::meta), eps);
  check(ym.device() == xf::meta && ym.shape() == xf::shape_t{7, 3} && ym.dtype() == xf::f64,
        "meta input runs the fake kernel (shape [7, 3], f64, meta)");

  // 3. grad: the registered backward formula.
  std::cout << "3. grad\n";
  auto loss = [&](const xf::tensor& t) { return xf::sum(smooth_abs(t, eps)); };
  const xf::tensor g = xf::grad(loss)(x);
  std::cout << "   grad = " << g << '\n';
  check(xf::allclose(g, x / reference(x)), "grad(sum(smooth_abs(x))) == x / sqrt(x^2 + eps)");
  // second derivative: the backward is written with xfunc ops, so grad of grad works too;
  // d^2/dx^2 sqrt(x^2 + eps) = eps / (x^2 + eps)^(3/2)
  auto dloss = [&](const xf::tensor& t) { return xf::sum(xf::grad(loss)(t)); };
  check(xf::allclose(xf::grad(dloss)(x), eps / xf::pow(x * x + eps, 1.5)), "grad(grad) == eps / (x^2 + eps)^1.5");

  // 4. vmap(grad): per-example gradients; vmap uses the registered rule.
  std::cout << "4. vmap(grad)\n";
  const xf::tensor batch = xf::stack({x, -2.0 * x, x + 1.0}, 0);  // [3, 5]
  const xf::tensor pg = xf::vmap(xf::grad(loss))(batch);
  check(pg.shape() == xf::shape_t{3, 5} && xf::allclose(pg, batch / reference(batch)), "vmap(grad) per example");
  const xf::tensor vm = xf::vmap(smooth_abs, xf::in_dims(1, xf::none))(batch, eps);  // batch along dim 1
  check(vm.shape() == xf::shape_t{5, 3} && xf::allclose(vm, reference(batch).t()), "vmap with in_dims(1, none)");

  // 5. jacfwd: forward mode has no separate formula; the library transposes the backward
  // (which is linear in g). The jacobian of an elementwise op is diagonal.
  std::cout << "5. jacfwd (transposed backward) and jacrev\n";
  auto f = [&](const xf::tensor& t) { return smooth_abs(t, eps); };
  const xf::tensor jf = xf::jacfwd(f)(x);
  const xf::tensor jr = xf::jacrev(f)(x);
  const xf::tensor expected_j = xf::eye(5, xf::f64) * (x / reference(x));
  check(jf.shape() == xf::shape_t{5, 5} && xf::allclose(jf, expected_j), "jacfwd == diag(x / y)");
  check(xf::allclose(jr, expected_j), "jacrev == diag(x / y)");
  auto [out, tangent] = xf::jvp(f, x, xf::ones_like(x));
  check(xf::allclose(out, reference(x)) && xf::allclose(tangent, x / reference(x)), "jvp with a ones tangent");

  // 6. make_fx: the op is a single node of the trace, named by its registered name.
  std::cout << "6. make_fx\n";
  auto h = [&](const xf::tensor& t) { return xf::sum(smooth_abs(t * 2.0, eps)); };
  const xf::graph gr = xf::make_fx(h)(x);
  std::cout << gr;
  check(gr.count("mylib::smooth_abs") == 1, "one mylib::smooth_abs node");
  check(gr.count("xf::sqrt") == 0, "its kernel's work is not traced");
  const xf::tensor x2{1.0, -1.0, 0.5, 2.0, -3.0};
  check(xf::allclose(gr(x2).at(0), h(x2)), "replaying the graph on new inputs");

  // 7. What the library refuses: differentiating an op with no formula, and an output that
  // aliases an input.
  std::cout << "7. errors\n";
  auto no_grad = xf::custom_op("mylib::double_it", [](const xf::tensor& t) { return t * 2.0; });
  auto throws_with = [](auto&& fn, const std::string& phrase) {
    try {
      fn();
    } catch (const xf::error& e) {
      std::cout << "   " << e.what() << '\n';
      return std::string(e.what()).find(phrase) != std::string::npos;
    }
    return false;
  };
  check(throws_with([&] { xf::grad([&](const xf::tensor& t) { return xf::sum(no_grad(t)); })(x); },
                    "mylib::double_it"),
        "grad through an op without register_autograd names the op");
  auto aliasing = xf::custom_op("mylib::bad_identity", [](const xf::tensor& t) { return t; });
  check(throws_with([&] { aliasing(x); }, "alias"), "returning an input throws (\"alias\")");

  // 8. opcheck: schema, fake vs real kernel, autograd registration, gradcheck.
  std::cout << "8. opcheck\n";
  xf::opcheck(smooth_abs, x, eps);
  check(true, "xf::opcheck(smooth_abs, x, eps) passes");

  std::cout << (failures == 0 ? "all checks passed\n" : "some checks FAILED\n");
  return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << '\n';
  return 1;
}
