// The collectives under every transform, on 1, 2 and 3 ranks, against single-process
// equivalents: each rank's result must equal what one process computes for that rank from every
// rank's data, with the collectives simulated by plain ops (NOTE: [Transposes of collectives]:
// the gradient a rank computes is that of the sum of every rank's output).
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "dist/dist_support.hpp"

using namespace dist_test;
using xf::tensor;

namespace {

struct collective_case {
  std::string op;  // the node make_fx records
  std::function<tensor(const tensor&)> dist;
  std::function<tensors(const tensors&)> sim;
};

std::vector<collective_case> cases() {
  namespace d = xf::dist;
  using R = d::reduce_op;
  const int N = size();
  perm_t partial;  // rank 0 sends to the last rank; every other rank receives zeros
  if (N > 1) partial.emplace_back(0, N - 1);
  return {
      {"xf::dist::all_reduce", [](const tensor& x) { return d::all_reduce(x); },
       [](const tensors& xs) { return sim_all_reduce(xs); }},
      {"xf::dist::all_reduce", [](const tensor& x) { return d::all_reduce(x, R::mean); },
       [](const tensors& xs) { return sim_all_reduce(xs, R::mean); }},
      {"xf::dist::all_gather", [](const tensor& x) { return d::all_gather(x, 0); },
       [](const tensors& xs) { return sim_all_gather(xs, 0); }},
      {"xf::dist::all_gather", [](const tensor& x) { return d::all_gather(x, -1); },
       [](const tensors& xs) { return sim_all_gather(xs, 1); }},
      {"xf::dist::reduce_scatter", [](const tensor& x) { return d::reduce_scatter(x, 1); },
       [](const tensors& xs) { return sim_reduce_scatter(xs, 1); }},
      {"xf::dist::reduce_scatter", [](const tensor& x) { return d::reduce_scatter(x.reshape({12}), 0, R::mean); },
       [N](const tensors& xs) {
         tensors flat;
         for (const auto& x : xs) flat.push_back(x.reshape({12}));
         tensors out = sim_reduce_scatter(flat, 0);
         for (auto& o : out) o = o / static_cast<double>(N);
         return out;
       }},
      {"xf::dist::broadcast", [N](const tensor& x) { return d::broadcast(x, N - 1); },
       [N](const tensors& xs) { return sim_broadcast(xs, N - 1); }},
      {"xf::dist::reduce", [](const tensor& x) { return d::reduce(x, 0); },
       [](const tensors& xs) { return sim_reduce(xs, 0); }},
      {"xf::dist::all_to_all", [](const tensor& x) { return d::all_to_all(x, 1, 0); },
       [](const tensors& xs) { return sim_all_to_all(xs, 1, 0); }},
      {"xf::dist::all_to_all", [](const tensor& x) { return d::all_to_all(x, 1, 1); },
       [](const tensors& xs) { return sim_all_to_all(xs, 1, 1); }},
      {"xf::dist::ppermute", [N](const tensor& x) { return d::ppermute(x, ring(N)); },
       [N](const tensors& xs) { return sim_ppermute(xs, ring(N)); }},
      {"xf::dist::ppermute", [partial](const tensor& x) { return d::ppermute(x, partial); },
       [partial](const tensors& xs) { return sim_ppermute(xs, partial); }},
  };
}

bool close(const tensor& a, const tensor& b) {
  if (!(a.shape() == b.shape())) return false;
  return xf::allclose(a, b, 1e-10, 1e-12);
}

}  // namespace

TEST_CASE("every collective under grad, vjp, jvp, vmap, hessian, vmap(grad), jvp(grad), make_fx, functionalize") {
  const int r = rank(), N = size();
  const tensors xs = all_ranks({12}, 1);
  const tensor X = xf::stack(xs, 0), x = xs[static_cast<std::size_t>(r)];
  const tensor T = xf::stack(all_ranks({12}, 2), 0), t = T.select(0, r);
  const tensors xbs = all_ranks({2, 12}, 3);  // a batch of two examples per rank
  const tensor xb = xbs[static_cast<std::size_t>(r)];

  const auto all = cases();
  for (std::size_t k = 0; k < all.size(); ++k) {
    const collective_case& c = all[k];
    INFO(c.op << " (case " << k << ") on rank " << r << " of " << N);
    // The rank's program and, in one process, every rank's program at once.
    auto F = [&](const tensor& v) { return xf::cos(c.dist((xf::sin(v) * v).reshape({2, 6}))); };
    auto G = [&](const tensor& V) {
      tensors pre;
      for (const auto& v : unstack(V)) pre.push_back((xf::sin(v) * v).reshape({2, 6}));
      tensors out = c.sim(pre);
      for (auto& o : out) o = xf::cos(o);
      return xf::stack(out, 0);
    };
    auto S = [&](const tensor& v) { return xf::sum(F(v)); };
    auto SG = [&](const tensor& V) { return xf::sum(G(V)); };

    const tensor y = F(x);
    CHECK(close(y, G(X).select(0, r)));

    // vjp with a different cotangent on each rank
    const tensor C = xf::stack(all_ranks(y.shape(), 4), 0);
    {
      auto [out, pull] = xf::vjp(F, x);
      auto [Out, Pull] = xf::vjp(G, X);
      CHECK(close(std::get<0>(pull(C.select(0, r))), std::get<0>(Pull(C)).select(0, r)));
    }
    // jvp with a different tangent on each rank
    CHECK(close(xf::jvp(F, x, t).second, xf::jvp(G, X, T).second.select(0, r)));
    // grad
    const tensor g = xf::grad(S)(x);
    CHECK(close(g, xf::grad(SG)(X).select(0, r)));
    // vmap against a loop, and against one process
    {
      const tensor vm = xf::vmap(F)(xb);
      tensors loop;
      for (std::int64_t b = 0; b < 2; ++b) loop.push_back(F(xb.select(0, b)));
      CHECK(close(vm, xf::stack(loop, 0)));
      tensors ref;
      for (std::int64_t b = 0; b < 2; ++b) {
        tensors col;
        for (const auto& v : xbs) col.push_back(v.select(0, b));
        ref.push_back(G(xf::stack(col, 0)).select(0, r));
      }
      CHECK(close(vm, xf::stack(ref, 0)));
    }
    // vmap(grad)
    {
      const tensor vg = xf::vmap(xf::grad(S))(xb);
      tensors ref;
      for (std::int64_t b = 0; b < 2; ++b) {
        tensors col;
        for (const auto& v : xbs) col.push_back(v.select(0, b));
        ref.push_back(xf::grad(SG)(xf::stack(col, 0)).select(0, r));
      }
      CHECK(close(vg, xf::stack(ref, 0)));
    }
    // jvp(grad)
    CHECK(close(xf::jvp(xf::grad(S), x, t).second, xf::jvp(xf::grad(SG), X, T).second.select(0, r)));
    // hessian = jacfwd(jacrev): every rank pushes the same basis tangent, so rank r's column j
    // is the derivative of its gradient when every rank's input moves along e_j
    {
      const tensor H = xf::hessian(S)(x);
      const tensor ref = xf::jacfwd([&](const tensor& e) { return xf::grad(SG)(X + e.unsqueeze(0)).select(0, r); })(
          xf::zeros({12}, xf::f64));
      CHECK(close(H, ref));
    }
    // make_fx: one node for the collective, and a replay that gives the same values
    {
      const xf::graph gr = xf::make_fx(F)(x);
      CHECK(gr.count(c.op) == 1);
      CHECK(close(gr(x)[0], y));
      // the backward pass holds the transpose collective
      const xf::graph gg = xf::make_fx(xf::grad(S))(x);
      CHECK(close(gg(x)[0], g));
    }
    // functionalize
    CHECK(close(xf::functionalize(F)(x), y));
  }
}

TEST_CASE("vmap sends one message per collective for the whole batch") {
  auto& messages = xf::dist::detail::config().messages;
  const tensor xb = all_ranks({5, 4}, 9)[static_cast<std::size_t>(rank())];
  const auto before = messages.load();
  const tensor out = xf::vmap([](const tensor& v) { return xf::dist::all_reduce(v * 2.0); })(xb);
  const auto used = messages.load() - before;
  // one all_reduce, plus its cross-rank check when there is more than one rank
  CHECK(used == (size() > 1 ? 2u : 1u));
  CHECK(close(out, total(all_ranks({5, 4}, 9)) * 2.0));
}

TEST_CASE("max and min are not differentiable") {
  const tensor x = all_ranks({3}, 5)[static_cast<std::size_t>(rank())];
  for (auto op : {xf::dist::reduce_op::max, xf::dist::reduce_op::min}) {
    auto f = [op](const tensor& v) { return xf::sum(xf::dist::all_reduce(v, op)); };
    CHECK_THROWS_WITH(xf::grad(f)(x), Catch::Contains("differentiable"));
    CHECK_THROWS_WITH(xf::jvp(f, x, x), Catch::Contains("differentiable"));
    CHECK_THROWS_WITH(xf::jacrev(f)(x), Catch::Contains("differentiable"));
    // outside a derivative they are fine, under vmap too
    CHECK(close(xf::dist::all_reduce(x, op), sim_all_reduce(all_ranks({3}, 5), op)[0]));
    const tensor xb = all_ranks({2, 3}, 6)[static_cast<std::size_t>(rank())];
    CHECK(close(xf::vmap([op](const tensor& v) { return xf::dist::all_reduce(v, op); })(xb),
                sim_all_reduce(all_ranks({2, 3}, 6), op)[0]));
    // and inside one, on values that do not depend on the differentiated input (made by a
    // factory there, or detached): no derivative flows through them, as for xf::amax
    auto scaled = [op](const tensor& v) {
      const tensor k = xf::dist::all_reduce(xf::ones_like(v) * 2.0 + v.detach() * 0.0, op);
      return xf::sum(v * k * xf::dist::all_reduce(v.detach(), op));
    };
    CHECK(close(xf::grad(scaled)(x), 2.0 * xf::dist::all_reduce(x, op)));
    CHECK(close(std::get<1>(xf::jvp(scaled, x, x)), xf::sum(2.0 * x * xf::dist::all_reduce(x, op))));
    auto scattered = [op](const tensor& v) {
      return xf::sum(v * xf::dist::reduce_scatter(xf::ones({3 * size()}, v.dtype()) * 2.0, 0, op));
    };
    CHECK(close(xf::grad(scattered)(x), xf::full_like(x, 2.0)));
  }
}
