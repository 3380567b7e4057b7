// xf::custom_op (API.md §4.1): schema, kernels, fake, autograd, vmap, errors, opcheck; the op
// under every transform and nesting of them.
#include <catch2/catch.hpp>

#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using xf::tensor;

namespace {

bool message_has(const std::function<void()>& f, const std::string& phrase) {
  try {
    f();
  } catch (const xf::error& e) {
    if (std::string(e.what()).find(phrase) != std::string::npos) return true;
    FAIL("message without \"" << phrase << "\": " << e.what());
  }
  return false;
}

/// y = a * sin(x), with a CPU kernel that loops over the data, a fake kernel, an autograd
/// formula and a vmap rule. `calls` counts kernel runs.
int kernel_calls = 0, vmap_calls = 0;
auto make_scaled_sin(const std::string& name = "xftest::scaled_sin") {
  auto op = xf::custom_op(
      name,
      [](const tensor& x, double a) {
        ++kernel_calls;
        tensor xc = x.contiguous();
        tensor y = xf::empty_like(xc);
        const double* p = xc.impl()->data<double>();
        double* q = y.impl()->data<double>();
        for (std::int64_t i = 0; i < xc.numel(); ++i) q[i] = a * std::sin(p[i]);
        return y;
      },
      xf::arg_names("x", "a"));
  op.register_fake([](const tensor& x, double) { return xf::empty_like(x); });
  op.register_autograd(
      [](xf::autograd::context& ctx, const tensor& g) {
        return g * xf::cos(ctx.saved_tensors()[0]) * ctx.get<double>("a");
      },
      [](xf::autograd::context& ctx, const std::tuple<tensor, double>& in, const tensor&) {
        ctx.save_for_backward(std::get<0>(in));
        ctx.set("a", std::get<1>(in));
      });
  op.register_vmap([op_name = name](const xf::vmap_info&, const std::array<std::optional<std::int64_t>, 2>& in_dims,
                                    const tensor& x, double a) {
    ++vmap_calls;
    // elementwise: the physical op on the batched value, batch dim unchanged
    auto self = xf::custom_op_handle<tensor(const tensor&, double)>(xf::detail::custom_op_slot_for(op_name));
    return std::pair{self(x, a), in_dims[0]};
  });
  return op;
}

tensor x3() { return tensor{0.3, -1.2, 2.0}; }
tensor batch2x3() { return tensor{{0.3, -1.2, 2.0}, {0.7, 0.1, -0.4}}; }

}  // namespace

TEST_CASE("custom_op: schema inferred from the signature", "[custom_op]") {
  auto op = make_scaled_sin();
  CHECK(op.schema() == "xftest::scaled_sin(Tensor x, float a) -> Tensor");
  CHECK(op.name() == "xftest::scaled_sin");
  auto mut = xf::custom_op("xftest::fill_", [](tensor& x, const std::optional<tensor>& v, std::int64_t n,
                                               const std::vector<tensor>& xs) {
    (void)v, (void)n, (void)xs;
    x.mul_(0.0);
  });
  CHECK(mut.schema() == "xftest::fill_(Tensor(a!) a0, Tensor? a1, int a2, Tensor[] a3) -> ()");
}

TEST_CASE("custom_op: forward at depth 0 runs the kernel", "[custom_op]") {
  auto op = make_scaled_sin();
  kernel_calls = 0;
  tensor y = op(x3(), 2.0);
  CHECK(kernel_calls == 1);
  CHECK(xf::allclose(y, xf::sin(x3()) * 2.0));
}

TEST_CASE("custom_op: grad, vjp, jvp, jacrev, jacfwd, hessian use the formula", "[custom_op]") {
  auto op = make_scaled_sin();
  tensor x = x3();
  auto f = [&](const tensor& t) { return xf::sum(op(t, 2.0)); };
  CHECK(xf::allclose(xf::grad(f)(x), xf::cos(x) * 2.0));
  auto [y, pb] = xf::vjp([&](const tensor& t) { return op(t, 2.0); }, x);
  CHECK(xf::allclose(std::get<0>(pb(xf::ones_like(y))), xf::cos(x) * 2.0));
  // forward mode transposes the backward formula
  auto [o, t] = xf::jvp([&](const tensor& u) { return op(u, 2.0); }, std::tuple{x}, std::tuple{tensor{1.0, 2.0, 3.0}});
  CHECK(xf::allclose(t, xf::cos(x) * 2.0 * tensor{1.0, 2.0, 3.0}));
  tensor J = xf::eye(3, xf::f64) * (xf::cos(x) * 2.0);
  CHECK(xf::allclose(xf::jacrev([&](const tensor& u) { return op(u, 2.0); })(x), J));
  CHECK(xf::allclose(xf::jacfwd([&](const tensor& u) { return op(u, 2.0); })(x), J));
  CHECK(xf::allclose(xf::hessian(f)(x), xf::eye(3, xf::f64) * (xf::sin(x) * -2.0)));
  CHECK(xf::testing::gradcheck([&](const tensor& u) { return op(u, 2.0); }, x));
  CHECK(xf::testing::gradgradcheck([&](const tensor& u) { return op(u, 2.0); }, x));
}

TEST_CASE("custom_op: the registered backward is what every transform uses", "[custom_op]") {
  // a deliberately wrong formula (10 g) proves the rule is used, also in forward mode
  auto op = xf::custom_op("xftest::square_wrong", [](const tensor& x) { return x * x; });
  op.register_autograd([](xf::autograd::context&, const tensor& g) { return g * 10.0; },
                       [](xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {});
  tensor x = x3();
  auto f = [&](const tensor& t) { return xf::sum(op(t)); };
  CHECK(xf::allclose(xf::grad(f)(x), xf::full({3}, 10.0, xf::f64)));
  CHECK(xf::allclose(xf::vmap(xf::grad(f))(batch2x3()), xf::full({2, 3}, 10.0, xf::f64)));
  CHECK(xf::allclose(xf::grad([&](const tensor& b) { return xf::sum(xf::vmap(op)(b)); })(batch2x3()),
                     xf::full({2, 3}, 10.0, xf::f64)));
  CHECK(xf::allclose(xf::jacfwd([&](const tensor& t) { return op(t); })(x), xf::eye(3, xf::f64) * 10.0));
  CHECK(xf::allclose(xf::jacrev([&](const tensor& t) { return op(t); })(x), xf::eye(3, xf::f64) * 10.0));
}

TEST_CASE("custom_op: vmap uses the rule, only when an input is batched at that level", "[custom_op]") {
  auto op = make_scaled_sin();
  tensor b = batch2x3();
  vmap_calls = 0;
  tensor y = xf::vmap([&](const tensor& t) { return op(t, 2.0); })(b);
  CHECK(vmap_calls == 1);
  CHECK(xf::allclose(y, xf::sin(b) * 2.0));
  CHECK(xf::testing::vmap_matches_loop([&](const tensor& t) { return op(t, 2.0); }, xf::in_dims(1), b.t()));
  // a captured unbatched input: the vmap layer is not involved
  vmap_calls = 0;
  tensor z = xf::vmap([&](const tensor& t) { return op(x3(), 2.0) + t; })(b);
  CHECK(vmap_calls == 0);
  CHECK(xf::allclose(z, xf::sin(x3()) * 2.0 + b));
  // vmap of vmap, and vmap of grad (per-example gradients)
  tensor bb = xf::stack({b, b * 0.5}, 0);
  CHECK(xf::allclose(xf::vmap(xf::vmap([&](const tensor& t) { return op(t, 2.0); }))(bb), xf::sin(bb) * 2.0));
  CHECK(xf::allclose(xf::vmap(xf::grad([&](const tensor& t) { return xf::sum(op(t, 2.0)); }))(b), xf::cos(b) * 2.0));
}

TEST_CASE("custom_op: vmap falls back to a loop without a rule", "[custom_op]") {
  auto op = xf::custom_op("xftest::cube_loop", [](const tensor& x) { return x * x * x; });
  tensor b = batch2x3();
  CHECK(xf::allclose(xf::vmap(op)(b), b * b * b));
  CHECK(xf::testing::vmap_matches_loop(op, xf::in_dims(1), b.t()));
  // several outputs and a non-tensor argument through the loop
  auto two = xf::custom_op("xftest::two_loop", [](const tensor& x, double s) { return std::tuple{x * s, x + s}; });
  auto [p, q] = xf::vmap([&](const tensor& t) { return two(t, 3.0); })(b);
  CHECK(xf::allclose(p, b * 3.0));
  CHECK(xf::allclose(q, b + 3.0));
}

TEST_CASE("custom_op: several outputs, list arguments, optional arguments", "[custom_op]") {
  auto op = xf::custom_op("xftest::sum_and_prod", [](const std::vector<tensor>& xs, const std::optional<tensor>& w) {
    tensor s = xs[0] * 1.0, p = xs[0] * 1.0;
    for (std::size_t i = 1; i < xs.size(); ++i) {
      s = s + xs[i];
      p = p * xs[i];
    }
    if (w) s = s * *w;
    return std::tuple{s, p};
  });
  op.register_autograd(
      [](xf::autograd::context& ctx, const tensor& gs, const tensor& gp) {
        auto saved = ctx.saved_tensors();  // a, b (two-element lists only in this test)
        // one entry per tensor parameter: the list's gradients, and none for the weight
        return std::tuple{std::vector<tensor>{gs + gp * saved[1], gs + gp * saved[0]}, tensor()};
      },
      [](xf::autograd::context& ctx, const std::tuple<std::vector<tensor>, std::optional<tensor>>& in,
         const std::tuple<tensor, tensor>&) {
        ctx.save_for_backward(std::get<0>(in)[0], std::get<0>(in)[1]);
      });
  tensor a = x3(), b = tensor{1.0, 2.0, 3.0};
  auto [s, p] = op(std::vector<tensor>{a, b}, std::nullopt);
  CHECK(xf::allclose(s, a + b));
  CHECK(xf::allclose(p, a * b));
  // d/da sum(s + p) = 1 + b, d/db = 1 + a
  auto g = xf::grad(
      [&](const tensor& u, const tensor& v) {
        auto [s2, p2] = op(std::vector<tensor>{u, v}, std::nullopt);
        return xf::sum(s2 + p2);
      },
      xf::argnums<0, 1>)(a, b);
  CHECK(xf::allclose(std::get<0>(g), b + 1.0));
  CHECK(xf::allclose(std::get<1>(g), a + 1.0));
  // only one output used: the other one's cotangent is materialised as zeros
  tensor ga = xf::grad([&](const tensor& u) { return xf::sum(std::get<1>(op(std::vector<tensor>{u, b}, std::nullopt))); })(a);
  CHECK(xf::allclose(ga, b));
  // list inputs batched differently
  auto [bs, bp] = xf::vmap([&](const tensor& u, const tensor& v) { return op(std::vector<tensor>{u, v}, std::nullopt); },
                           xf::in_dims(0, xf::none))(batch2x3(), b);
  CHECK(xf::allclose(bs, batch2x3() + b));
  CHECK(xf::allclose(bp, batch2x3() * b));
}

TEST_CASE("custom_op: mutated arguments", "[custom_op]") {
  auto add_one = xf::custom_op("xftest::add_one_", [](tensor& x) { x.add_(1.0); });
  tensor x = x3();
  add_one(x);
  CHECK(xf::allclose(x, x3() + 1.0));
  // under vmap the write reaches the caller's tensor
  tensor b = batch2x3();
  xf::vmap([&](tensor t) {
    add_one(t);
    return t;
  })(b);
  CHECK(xf::allclose(b, batch2x3() + 1.0));
  // under functionalize the caller's tensor is written back
  tensor c = x3();
  xf::functionalize([&](tensor t) {
    add_one(t);
    return t * 2.0;
  })(c);
  CHECK(xf::allclose(c, x3() + 1.0));
  // under grad the wrapper sees the new value (the mutation itself has no derivative)
  tensor g = xf::grad([&](const tensor& t) {
    tensor u = t * 1.0;
    add_one(u);
    return xf::sum(u * t);
  })(x3());
  CHECK(xf::allclose(g, x3() + 1.0));
}

TEST_CASE("custom_op: writing a captured or unbatched argument is refused as for built-in in-place ops",
          "[custom_op][errors]") {
  // NOTE: [Tensors created inside transforms]: before, a written argument that was not a value of
  // the layer was written raw (under vmap once per example by the loop fallback, under grad with
  // no error at all)
  auto addto = xf::custom_op("xftest::addto_", [](tensor& dst, const tensor& src) { dst.add_(src); });
  tensor outside = xf::zeros({3}, xf::f64);
  CHECK(message_has([&] { xf::vmap([&](const tensor& x) { addto(outside, x); return x; })(batch2x3()); },
                    "in-place"));
  CHECK(message_has([&] { xf::grad([&](const tensor& x) { addto(outside, x); return xf::sum(x); })(x3()); },
                    "captured"));
  CHECK(message_has([&] { xf::grad([&](const tensor& x) { addto(outside, x3()); return xf::sum(x); })(x3()); },
                    "captured"));  // plain arguments only: the kernel's fast path
  CHECK(message_has(
      [&] {
        xf::jvp([&](const tensor& x) {
          tensor view = outside.narrow(0, 0, 3);  // made inside, of captured data
          addto(view, x);
          return x;
        }, x3(), x3());
      },
      "captured"));
  CHECK(xf::equal(outside, xf::zeros({3}, xf::f64)));
  // a tensor made inside takes the transform's values (the write itself has no derivative, as
  // for add_one above: d/dx sum(buf * x) is buf's new value)
  const tensor w = x3();
  const tensor g = xf::grad([&](const tensor& x) {
    tensor buf = w * 1.0;  // plain: made from a captured tensor only
    addto(buf, x * x);
    return xf::sum(buf * x);
  })(x3());
  CHECK(xf::allclose(g, w + x3() * x3()));
  // a batched destination under vmap, and an unbatched one written with unbatched values
  tensor b = batch2x3();
  xf::vmap([&](tensor t) { addto(t, x3()); return t; })(b);
  CHECK(xf::allclose(b, batch2x3() + x3()));
  xf::vmap([&](const tensor& t) { addto(outside, x3()); return t; })(batch2x3());
  CHECK(xf::allclose(outside, x3()));
}

TEST_CASE("custom_op: errors", "[custom_op][errors]") {
  tensor x = x3();
  auto alias = xf::custom_op("xftest::alias_in", [](const tensor& t) { return t; });
  CHECK(message_has([&] { alias(x); }, "alias"));
  auto view = xf::custom_op("xftest::alias_view", [](const tensor& t) { return t.narrow(0, 0, 2); });
  CHECK(message_has([&] { view(x); }, "alias"));
  auto both = xf::custom_op("xftest::alias_out", [](const tensor& t) {
    tensor y = t * 2.0;
    return std::tuple{y, y};
  });
  CHECK(message_has([&] { both(x); }, "alias"));
  auto noag = xf::custom_op("xftest::no_autograd", [](const tensor& t) { return t * 2.0; });
  CHECK(message_has([&] { xf::grad([&](const tensor& t) { return xf::sum(noag(t)); })(x); }, "xftest::no_autograd"));
  CHECK(message_has([&] { xf::jvp(noag, std::tuple{x}, std::tuple{x}); }, "register_autograd"));
  // no fake kernel: meta tensors and make_fx need one
  CHECK(message_has([&] { noag(x.to(xf::meta)); }, "register_fake"));
  // the loop fallback needs an example to learn the outputs
  auto looped = xf::custom_op("xftest::empty_batch", [](const tensor& t) { return t * 2.0; });
  CHECK(message_has([&] { xf::vmap(looped)(xf::zeros({0, 3}, xf::f64)); }, "batch is empty"));
  CHECK_THROWS_AS(xf::custom_op("xftest::names", [](const tensor& t) { return t * 1.0; }, xf::arg_names("a", "b")),
                  xf::error);
}

TEST_CASE("custom_op: re-registration replaces the definition for every handle", "[custom_op]") {
  auto first = xf::custom_op("xftest::rereg", [](const tensor& t) { return t * 2.0; });
  tensor x = x3();
  CHECK(xf::allclose(first(x), x * 2.0));
  auto second = xf::custom_op("xftest::rereg", [](const tensor& t) { return t * 3.0; });
  CHECK(xf::allclose(first(x), x * 3.0));
  CHECK(xf::allclose(second(x), x * 3.0));
  // the rules go with the old definition
  second.register_autograd([](xf::autograd::context&, const tensor& g) { return g * 3.0; },
                           [](xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {});
  CHECK(xf::allclose(xf::grad([&](const tensor& t) { return xf::sum(first(t)); })(x), xf::full({3}, 3.0, xf::f64)));
  xf::custom_op("xftest::rereg", [](const tensor& t) { return t * 4.0; });
  CHECK_THROWS_AS(xf::grad([&](const tensor& t) { return xf::sum(first(t)); })(x), xf::error);
  // a different signature: old handles say so
  xf::custom_op("xftest::rereg", [](const tensor& t, double s) { return t * s; });
  CHECK(message_has([&] { first(x); }, "different signature"));
}

TEST_CASE("custom_op: per-device kernels and the fake kernel", "[custom_op]") {
  auto op = xf::custom_op("xftest::device_kernel", [](const tensor& t) { return t * 2.0; });
  op.register_kernel(xf::cpu, [](const tensor& t) { return t * 5.0; });
  CHECK(xf::allclose(op(x3()), x3() * 5.0));
  op.register_fake([](const tensor& t) { return xf::empty({t.size(0) + 1}, t.dtype(), xf::meta); });
  tensor m = op(x3().to(xf::meta));
  CHECK(m.device() == xf::meta);
  CHECK(m.shape() == xf::shape_t{4});
}

TEST_CASE("custom_op: make_fx records the op as one node", "[custom_op]") {
  auto op = make_scaled_sin("xftest::scaled_sin_fx");
  auto g = xf::make_fx([&](const tensor& t) { return xf::exp(op(t, 2.0)); })(x3());
  CHECK(g.count("xftest::scaled_sin_fx") == 1);
  CHECK(g.size() == 2);
  CHECK(xf::allclose(g(x3())[0], xf::exp(xf::sin(x3()) * 2.0)));
  // traced under grad: the backward formula's ops appear, the op once in the forward
  auto gg = xf::make_fx(xf::grad([&](const tensor& t) { return xf::sum(op(t, 2.0)); }))(x3());
  CHECK(gg.count("xftest::scaled_sin_fx") == 1);
  CHECK(gg.count("xf::cos") == 1);
  CHECK(xf::allclose(gg(x3())[0], xf::cos(x3()) * 2.0));
}

TEST_CASE("custom_op: under jvp of grad, vmap of jvp and functionalize", "[custom_op]") {
  auto op = make_scaled_sin();
  tensor x = x3(), v = tensor{1.0, -1.0, 0.5};
  auto [g, hv] = xf::jvp(xf::grad([&](const tensor& t) { return xf::sum(op(t, 2.0)); }), std::tuple{x}, std::tuple{v});
  CHECK(xf::allclose(g, xf::cos(x) * 2.0));
  CHECK(xf::allclose(hv, xf::sin(x) * -2.0 * v));
  tensor b = batch2x3();
  auto jv = xf::vmap([&](const tensor& t) { return std::get<1>(xf::jvp([&](const tensor& u) { return op(u, 2.0); }, std::tuple{t}, std::tuple{v})); })(b);
  CHECK(xf::allclose(jv, xf::cos(b) * 2.0 * v));
  CHECK(xf::allclose(xf::functionalize([&](const tensor& t) { return op(t, 2.0); })(x), xf::sin(x) * 2.0));
}

TEST_CASE("opcheck: passes for a correct op and names each failed check", "[custom_op][opcheck]") {
  auto op = make_scaled_sin("xftest::opcheck_ok");
  CHECK_NOTHROW(xf::opcheck(op, x3(), 2.0));
  // schema: writes an input it does not declare mutable
  auto sneaky = xf::custom_op("xftest::opcheck_schema", [](const tensor& t) {
    tensor y = t * 2.0;
    tensor(t).mul_(0.0);
    return y;
  });
  CHECK(message_has([&] { xf::opcheck(sneaky, x3()); }, "\"schema\""));
  auto alias = xf::custom_op("xftest::opcheck_alias", [](const tensor& t) { return t; });
  CHECK(message_has([&] { xf::opcheck(alias, x3()); }, "\"schema\""));
  // fake: missing, then wrong shape
  auto nofake = xf::custom_op("xftest::opcheck_fake", [](const tensor& t) { return t * 2.0; });
  CHECK(message_has([&] { xf::opcheck(nofake, x3()); }, "\"fake\""));
  nofake.register_fake([](const tensor& t) { return xf::empty({t.numel() + 1}, t.dtype(), xf::meta); });
  CHECK(message_has([&] { xf::opcheck(nofake, x3()); }, "\"fake\""));
  // autograd: floating inputs and outputs without a formula
  nofake.register_fake([](const tensor& t) { return xf::empty_like(t); });
  CHECK(message_has([&] { xf::opcheck(nofake, x3()); }, "\"autograd\""));
  // gradcheck: a wrong formula
  nofake.register_autograd([](xf::autograd::context&, const tensor& g) { return g * 3.0; },
                           [](xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {});
  CHECK(message_has([&] { xf::opcheck(nofake, x3()); }, "\"gradcheck\""));
  nofake.register_autograd([](xf::autograd::context&, const tensor& g) { return g * 2.0; },
                           [](xf::autograd::context&, const std::tuple<tensor>&, const tensor&) {});
  CHECK_NOTHROW(xf::opcheck(nofake, x3()));
  // an integer-only op needs no formula
  auto count = xf::custom_op("xftest::opcheck_int", [](const tensor& t) { return xf::gt(t, 0.0); });
  count.register_fake([](const tensor& t) { return xf::empty(t.shape(), xf::b8, xf::meta); });
  CHECK_NOTHROW(xf::opcheck(count, x3()));
}

TEST_CASE("custom_op: linearize pushes tangents through the transposed formula", "[custom_op]") {
  auto op = make_scaled_sin();
  auto two = xf::custom_op("xftest::two_lin", [](const tensor& x) { return std::tuple{x * 2.0, x * x}; });
  two.register_autograd(
      [](xf::autograd::context& ctx, const tensor& g1, const tensor& g2) {
        return g1 * 2.0 + g2 * 2.0 * ctx.saved_tensors()[0];
      },
      [](xf::autograd::context& ctx, const std::tuple<tensor>& in, const std::tuple<tensor, tensor>&) {
        ctx.save_for_backward(std::get<0>(in));
      });
  tensor x = x3(), v = tensor{1.0, -1.0, 0.5};
  auto [y, jvp_fn] = xf::linearize([&](const tensor& t) { return op(t, 2.0); }, x);
  CHECK(xf::allclose(y, xf::sin(x) * 2.0));
  CHECK(xf::allclose(jvp_fn(v), xf::cos(x) * 2.0 * v));
  // several outputs: each output node reads its own tangent
  auto [z, jvp2] = xf::linearize([&](const tensor& t) {
    auto [a, b] = two(t);
    return a + b * 3.0;
  }, x);
  CHECK(xf::allclose(jvp2(v), v * 2.0 + x * v * 6.0));
}
