// In-place variants against their out-of-place ops: for each in-place method, `y = x.clone();
// y.op_(args)` must equal the out-of-place op, plainly and under grad (gradients), jvp
// (tangents) and vmap (against a loop), including writes through a view.
#include <catch2/catch.hpp>

#include <functional>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

namespace {
struct inplace_row {
  const char* name;
  std::function<void(xf::tensor&, const xf::tensor&)> in_place;             // y.op_(other)
  std::function<xf::tensor(const xf::tensor&, const xf::tensor&)> reference;  // op(y, other)
};

const std::vector<inplace_row>& rows() {
  static const std::vector<inplace_row> r = {
      {"add_", [](xf::tensor& y, const xf::tensor& o) { y.add_(o); }, [](const xf::tensor& y, const xf::tensor& o) { return y + o; }},
      {"add_(double)", [](xf::tensor& y, const xf::tensor&) { y.add_(0.5); }, [](const xf::tensor& y, const xf::tensor&) { return y + 0.5; }},
      {"sub_", [](xf::tensor& y, const xf::tensor& o) { y.sub_(o); }, [](const xf::tensor& y, const xf::tensor& o) { return y - o; }},
      {"sub_(double)", [](xf::tensor& y, const xf::tensor&) { y.sub_(0.5); }, [](const xf::tensor& y, const xf::tensor&) { return y - 0.5; }},
      {"mul_", [](xf::tensor& y, const xf::tensor& o) { y.mul_(o); }, [](const xf::tensor& y, const xf::tensor& o) { return y * o; }},
      {"mul_(double)", [](xf::tensor& y, const xf::tensor&) { y.mul_(3.0); }, [](const xf::tensor& y, const xf::tensor&) { return y * 3.0; }},
      {"div_", [](xf::tensor& y, const xf::tensor& o) { y.div_(o); }, [](const xf::tensor& y, const xf::tensor& o) { return y / o; }},
      {"div_(double)", [](xf::tensor& y, const xf::tensor&) { y.div_(4.0); }, [](const xf::tensor& y, const xf::tensor&) { return y / 4.0; }},
      {"copy_", [](xf::tensor& y, const xf::tensor& o) { y.copy_(o); }, [](const xf::tensor&, const xf::tensor& o) { return o * 1.0; }},
      {"zero_", [](xf::tensor& y, const xf::tensor&) { y.zero_(); }, [](const xf::tensor& y, const xf::tensor&) { return y * 0.0; }},
      {"fill_", [](xf::tensor& y, const xf::tensor&) { y.fill_(2.5); }, [](const xf::tensor& y, const xf::tensor&) { return y * 0.0 + 2.5; }},
      {"neg_", [](xf::tensor& y, const xf::tensor&) { y.neg_(); }, [](const xf::tensor& y, const xf::tensor&) { return -y; }},
      {"exp_", [](xf::tensor& y, const xf::tensor&) { y.exp_(); }, [](const xf::tensor& y, const xf::tensor&) { return xf::exp(y); }},
      {"sin_", [](xf::tensor& y, const xf::tensor&) { y.sin_(); }, [](const xf::tensor& y, const xf::tensor&) { return xf::sin(y); }},
      {"cos_", [](xf::tensor& y, const xf::tensor&) { y.cos_(); }, [](const xf::tensor& y, const xf::tensor&) { return xf::cos(y); }},
      {"clamp_", [](xf::tensor& y, const xf::tensor&) { y.clamp_(-0.5, 0.6); },
       [](const xf::tensor& y, const xf::tensor&) { return xf::clamp(y, -0.5, 0.6); }},
  };
  return r;
}

// f(x, o) = sum(w * g(x, o)) with g the in-place op on a clone (written through a view of the
// clone when `through_view`), so that gradients see every element
xf::tensor weights() { return xf::tensor{{0.3, -1.1, 0.7}, {1.3, 0.2, -0.4}}; }
xf::tensor apply(const inplace_row& r, const xf::tensor& x, const xf::tensor& o, bool through_view) {
  xf::tensor y = x.clone();
  xf::tensor target = through_view ? y.t().t() : y;  // a (permuted twice) view of y
  r.in_place(target, o);
  return y;
}
xf::tensor loss_in_place(const inplace_row& r, const xf::tensor& x, const xf::tensor& o, bool view) {
  return xf::sum(apply(r, x, o, view) * weights());
}
xf::tensor loss_reference(const inplace_row& r, const xf::tensor& x, const xf::tensor& o) {
  return xf::sum(r.reference(x, o) * weights());
}
}  // namespace

TEST_CASE("in-place variants equal their out-of-place ops under every transform", "[inplace][conformance]") {
  const xf::tensor x{{0.2, -0.7, 0.9}, {0.4, 1.1, -0.3}};
  const xf::tensor o{{1.5, 0.8, -1.2}, {0.6, -0.9, 2.0}};
  const xf::tensor tx = xf::ones_like(x) * 0.5, to = xf::ones_like(o) * -0.25;
  for (const auto& r : rows()) {
    for (bool view : {false, true}) {
      INFO(r.name << (view ? " through a view" : ""));
      CHECK(xf::allclose(apply(r, x, o, view), r.reference(x, o)));
      // grad with respect to both arguments
      auto gi = xf::grad([&](const xf::tensor& a, const xf::tensor& b) { return loss_in_place(r, a, b, view); },
                         xf::argnums<0, 1>)(x, o);
      auto gr = xf::grad([&](const xf::tensor& a, const xf::tensor& b) { return loss_reference(r, a, b); },
                         xf::argnums<0, 1>)(x, o);
      CHECK(xf::allclose(std::get<0>(gi), std::get<0>(gr)));
      CHECK(xf::allclose(std::get<1>(gi), std::get<1>(gr)));
      // jvp
      auto fi = [&](const xf::tensor& a, const xf::tensor& b) { return apply(r, a, b, view); };
      auto [yi, ti] = xf::jvp(fi, std::tuple{x, o}, std::tuple{tx, to});
      auto [yr, tr] = xf::jvp(r.reference, std::tuple{x, o}, std::tuple{tx, to});
      CHECK(xf::allclose(yi, yr));
      CHECK(xf::allclose(ti, tr));
      // vmap against a loop, both arguments batched, and only x batched
      xf::tensor xs = xf::stack({x, x * 0.5}, 0), os = xf::stack({o, o * -1.0}, 0);
      CHECK(xf::allclose(xf::vmap(fi)(xs, os), xf::stack({r.reference(x, o), r.reference(x * 0.5, o * -1.0)}, 0)));
      CHECK(xf::allclose(xf::vmap(fi, xf::in_dims(0, xf::none))(xs, o),
                         xf::stack({r.reference(x, o), r.reference(x * 0.5, o)}, 0)));
      // functionalize
      CHECK(xf::allclose(xf::functionalize(fi)(x, o), r.reference(x, o)));
    }
  }
}

TEST_CASE("make_fx records every in-place method under its own name", "[inplace][make_fx][names]") {
  const xf::tensor x{{0.2, -0.7, 0.9}, {0.4, 1.1, -0.3}};
  const xf::tensor o{{1.5, 0.8, -1.2}, {0.6, -0.9, 2.0}};
  for (const auto& r : rows()) {
    // "add_(double)" -> "xf::add_"
    const std::string name = "xf::" + std::string(r.name).substr(0, std::string(r.name).find('('));
    INFO(name);
    for (bool view : {false, true}) {
      const xf::graph g = xf::make_fx([&](const xf::tensor& a, const xf::tensor& b) { return apply(r, a, b, view); })(x, o);
      CHECK(g.count(name) == 1);
      // and exactly one in-place node in all (a method is one node, not the ops it is made of)
      std::size_t inplace = 0;
      for (const auto& n : xf::detail::graph_access::of(g).nodes) inplace += n.op.back() == '_';
      CHECK(inplace == 1);
      CHECK(xf::allclose(g(x, o)[0], r.reference(x, o)));
      // functionalize removes it
      const xf::graph gf = xf::make_fx(xf::functionalize([&](const xf::tensor& a, const xf::tensor& b) {
        return apply(r, a, b, view);
      }))(x, o);
      CHECK(gf.count(name) == 0);
      CHECK(xf::allclose(gf(x, o)[0], r.reference(x, o)));
    }
  }
}
