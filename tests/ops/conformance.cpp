#include "conformance.hpp"

#include <catch2/catch.hpp>

namespace conformance {

std::vector<op_row>& rows() {
  static std::vector<op_row> r;
  return r;
}
bool add(std::vector<op_row> rs) {
  for (auto& r : rs) rows().push_back(std::move(r));
  return true;
}

xt::xarray<double> to_x(const xf::tensor& t) { return xf::to_xtensor<double>(t); }
xf::tensor from_x(const xt::xarray<double>& a) { return xf::from_xtensor(a); }

op_fn ref_unary(std::function<double(double)> f) {
  return [f](const tensors& in) {
    auto vf = xt::vectorize(f);
    return from_x(xt::xarray<double>(vf(to_x(in[0]))));
  };
}
op_fn ref_binary(std::function<double(double, double)> f) {
  return [f](const tensors& in) {
    auto vf = xt::vectorize(f);
    return from_x(xt::xarray<double>(vf(to_x(in[0]), to_x(in[1]))));
  };
}

xf::tensor ref_reduce(const xf::tensor& x, std::vector<std::int64_t> dims, bool keepdim,
                      const std::function<double(const std::vector<double>&)>& f) {
  const xt::xarray<double> a = to_x(x);
  const auto r = static_cast<std::int64_t>(a.dimension());
  std::vector<bool> red(static_cast<std::size_t>(r), dims.empty());
  for (auto d : dims) red[static_cast<std::size_t>(d < 0 ? d + r : d)] = true;
  std::vector<std::size_t> oshape;
  for (std::int64_t i = 0; i < r; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (!red[u]) oshape.push_back(a.shape()[u]);
    else if (keepdim) oshape.push_back(1);
  }
  xt::xarray<double> out(oshape);
  std::vector<std::vector<double>> groups(out.size());
  std::vector<std::size_t> idx(static_cast<std::size_t>(r), 0);
  for (std::size_t flat = 0; flat < a.size(); ++flat) {
    std::size_t rem = flat, key = 0;
    for (std::int64_t i = r - 1; i >= 0; --i) {
      const auto u = static_cast<std::size_t>(i);
      idx[u] = rem % a.shape()[u];
      rem /= a.shape()[u];
    }
    for (std::size_t u = 0; u < static_cast<std::size_t>(r); ++u)
      if (!red[u]) key = key * a.shape()[u] + idx[u];
    groups[key].push_back(a.flat(flat));
  }
  for (std::size_t k = 0; k < groups.size(); ++k) out.flat(k) = f(groups[k]);
  return from_x(out);
}

xf::tensor ref_matmul(const xf::tensor& a, const xf::tensor& b) {
  xt::xarray<double> A = to_x(a), B = to_x(b);
  const bool a1 = A.dimension() == 1, b1 = B.dimension() == 1;
  if (a1) A.reshape({1, A.size()});
  if (b1) B.reshape({B.size(), 1});
  const std::size_t n = A.shape()[A.dimension() - 2], k = A.shape()[A.dimension() - 1];
  const std::size_t m = B.shape()[B.dimension() - 1];
  // batch dims, broadcast by hand
  std::vector<std::size_t> ba(A.shape().begin(), A.shape().end() - 2), bb(B.shape().begin(), B.shape().end() - 2);
  const std::size_t nb = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), nb - ba.size(), 1);
  bb.insert(bb.begin(), nb - bb.size(), 1);
  std::vector<std::size_t> batch(nb);
  for (std::size_t i = 0; i < nb; ++i) batch[i] = std::max(ba[i], bb[i]);
  std::size_t P = 1;
  for (auto e : batch) P *= e;
  std::vector<std::size_t> oshape = batch;
  oshape.push_back(n);
  oshape.push_back(m);
  xt::xarray<double> out(oshape);
  for (std::size_t p = 0; p < P; ++p) {
    std::size_t rem = p, pa = 0, pb = 0, sa = 1, sb = 1;
    for (std::size_t i = nb; i-- > 0;) {
      const std::size_t j = rem % batch[i];
      rem /= batch[i];
      pa += (ba[i] == 1 ? 0 : j) * sa;
      pb += (bb[i] == 1 ? 0 : j) * sb;
      sa *= ba[i];
      sb *= bb[i];
    }
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j) {
        double s = 0;
        for (std::size_t q = 0; q < k; ++q) s += A.flat(pa * n * k + i * k + q) * B.flat(pb * k * m + q * m + j);
        out.flat(p * n * m + i * m + j) = s;
      }
  }
  std::vector<std::size_t> final_shape = batch;
  if (!a1) final_shape.push_back(n);
  if (!b1) final_shape.push_back(m);
  out.reshape(final_shape);
  return from_x(out);
}

xf::tensor sample(const xf::shape_t& shape, double lo, double hi, std::uint64_t seed) {
  xf::tensor t = xf::zeros(shape, xf::f64);
  double* p = t.impl()->data<double>();
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    // golden-ratio sequence: deterministic, well spread, no ties
    double u = std::fmod(0.6180339887 * static_cast<double>(i + 1) + 0.1 * static_cast<double>(seed), 1.0);
    p[i] = lo + (hi - lo) * u;
  }
  return t;
}

xf::tensor noncontiguous(const xf::tensor& t) {
  if (t.dim() < 2) return xf::flip(xf::flip(t, {0}).clone(), {0}).expand(t.shape()).narrow(0, 0, t.size(0));
  return t.transpose(0, 1).contiguous().transpose(0, 1);
}

namespace {

tensors second_example(const op_row& r) {
  if (!r.inputs2.empty()) return r.inputs2;
  tensors out;
  for (const auto& x : r.inputs) out.push_back(xf::is_floating(x.dtype()) ? x * 0.9 + 0.05 : x);
  return out;
}

template <std::size_t N>
xf::tensor run_vmap(const op_fn& op, const std::array<std::optional<std::int64_t>, N>& d, const tensors& args) {
  auto f = [&op](const auto&... xs) { return op(tensors{xs...}); };
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return xf::vmap(f, xf::in_dims(d[I]...))(args[I]...);
  }(std::make_index_sequence<N>{});
}

template <std::size_t N>
xf::tensor run_vmap_vmap(const op_fn& op, const tensors& args) {
  auto f = [&op](const auto&... xs) { return op(tensors{xs...}); };
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return xf::vmap(xf::vmap(f))(args[I]...); }(
      std::make_index_sequence<N>{});
}

template <std::size_t N>
bool run_gradcheck(const op_fn& op, const tensors& args) {
  // The result is cloned: xf::testing::gradcheck perturbs its input buffers in place and keeps
  // the outputs of f, so an output that aliases an input (a view op) would read the restored
  // values and give zero finite differences (see testing.hpp, gradcheck_impl: `plus`/`minus`).
  // clone's derivative is the identity, so the view op's own vjp and jvp are still what is checked.
  auto f = [&op](const auto&... xs) { return op(tensors{xs...}).clone(); };
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return xf::testing::gradcheck(f, xf::testing::raise, args[I]...);
  }(std::make_index_sequence<N>{});
}

template <class Fn>
decltype(auto) by_arity(std::size_t n, Fn&& fn) {
  switch (n) {
    case 1: return fn(std::integral_constant<std::size_t, 1>{});
    case 2: return fn(std::integral_constant<std::size_t, 2>{});
    case 3: return fn(std::integral_constant<std::size_t, 3>{});
    case 4: return fn(std::integral_constant<std::size_t, 4>{});
  }
  throw std::runtime_error("conformance: rows take 1 to 4 tensors");
}

tensors as_dtype(const tensors& in, xf::dtype d) {
  tensors out;
  for (const auto& x : in) out.push_back(xf::is_floating(x.dtype()) ? x.to(d) : x);
  return out;
}

void check_forward(const op_row& r) {
  xf::tensor expect = r.reference(r.inputs);
  xf::tensor got = r.op(r.inputs);
  INFO("op output " << got << "\nreference " << expect);
  REQUIRE(got.shape() == expect.shape());
  CHECK(xf::allclose(got.to(xf::f64), expect.to(xf::f64), 1e-10, 1e-12));
  // float32 inputs give a float32 (or integer/bool) result close to the reference
  xf::tensor got32 = r.op(as_dtype(r.inputs, xf::f32));
  if (r.dtype32) CHECK(got32.dtype() == *r.dtype32);
  else if (xf::is_floating(got.dtype())) CHECK(got32.dtype() == xf::f32);
  else CHECK(got32.dtype() == got.dtype());
  CHECK(xf::allclose(got32.to(xf::f64), expect.to(xf::f64), 1e-4, 1e-5));
  // non-contiguous inputs give the same values
  tensors nc;
  for (const auto& x : r.inputs) nc.push_back(x.dim() >= 2 ? noncontiguous(x) : x);
  CHECK(xf::allclose(r.op(nc).to(xf::f64), expect.to(xf::f64), 1e-10, 1e-12));
}

void check_vmap(const op_row& r) {
  const std::size_t n = r.inputs.size();
  const tensors ex0 = r.inputs, ex1 = second_example(r);
  // every combination of {0}^n and {-1, none}^n except all-none
  std::vector<std::vector<std::optional<std::int64_t>>> combos{std::vector<std::optional<std::int64_t>>(n, 0)};
  for (std::size_t mask = 0; mask < (1u << n); ++mask) {
    std::vector<std::optional<std::int64_t>> c(n);
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (mask & (1u << i)) {
        c[i] = -1;
        any = true;
      }
    }
    if (any) combos.push_back(c);
  }
  for (const auto& c : combos) {
    std::string label;
    tensors args, a0, a1;
    for (std::size_t i = 0; i < n; ++i) {
      label += c[i] ? std::to_string(*c[i]) + " " : "none ";
      if (c[i]) {
        const std::int64_t d = *c[i] < 0 ? ex0[i].dim() : 0;
        args.push_back(xf::stack({ex0[i], ex1[i]}, d));
        a1.push_back(ex1[i]);
      } else {
        args.push_back(ex0[i]);
        a1.push_back(ex0[i]);
      }
      a0.push_back(ex0[i]);
    }
    INFO("in_dims: " << label);
    xf::tensor expect = xf::stack({r.op(a0), r.op(a1)}, 0);
    xf::tensor got = by_arity(n, [&](auto N) {
      std::array<std::optional<std::int64_t>, decltype(N)::value> d;
      for (std::size_t i = 0; i < n; ++i) d[i] = c[i];
      return run_vmap<decltype(N)::value>(r.op, d, args);
    });
    REQUIRE(got.shape() == expect.shape());
    CHECK(xf::allclose(got, expect, 1e-10, 1e-12));
  }
  // vmap of vmap: batches of 2 (outer) and 3 (inner) over dim 0 of every input
  tensors outer;
  std::vector<tensors> examples(6);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<xf::tensor> rows2;
    for (int a = 0; a < 2; ++a) {
      std::vector<xf::tensor> rows3;
      for (int b = 0; b < 3; ++b) {
        xf::tensor x = xf::is_floating(ex0[i].dtype()) ? ex0[i] * (1.0 - 0.05 * (3 * a + b)) + 0.01 * b : ex0[i];
        rows3.push_back(x);
        examples[static_cast<std::size_t>(3 * a + b)].push_back(x);
      }
      rows2.push_back(xf::stack(rows3, 0));
    }
    outer.push_back(xf::stack(rows2, 0));
  }
  std::vector<xf::tensor> flat;
  for (const auto& e : examples) flat.push_back(r.op(e));
  xf::tensor expect = xf::stack(flat, 0).reshape([&] {
    xf::shape_t s = flat[0].shape();
    s.insert(0, 3);
    s.insert(0, 2);
    return s;
  }());
  xf::tensor got = by_arity(n, [&](auto N) { return run_vmap_vmap<decltype(N)::value>(r.op, outer); });
  INFO("vmap(vmap)");
  REQUIRE(got.shape() == expect.shape());
  CHECK(xf::allclose(got, expect, 1e-10, 1e-12));
}

// ---- compositions of transforms ----------------------------------------------------------------
// The op as a function of its floating inputs only (index tensors and masks stay fixed), checked
// under second-order and mixed transforms:
//   vjp∘vjp and jvp∘vjp   gradgradcheck (gradcheck of a vjp) against finite differences
//   vmap∘vjp              vmap of the pullback over a batch of cotangents, against a loop
//   vmap∘jvp              vmap of jvp over a batch of tangents, against a loop
//   vjp∘vmap              the pullback of vmap(op) against per-example pullbacks
template <std::size_t>
using tensor_t = xf::tensor;

/// Every in_dims in {0,...,0} ∪ {-1, none}^n minus all-none (-1 as the value of a batched
/// argument's last dim).
std::vector<std::vector<std::optional<std::int64_t>>> in_dims_combos(std::size_t n) {
  std::vector<std::vector<std::optional<std::int64_t>>> combos{std::vector<std::optional<std::int64_t>>(n, 0)};
  for (std::size_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<std::optional<std::int64_t>> c(n);
    for (std::size_t i = 0; i < n; ++i)
      if (mask & (1u << i)) c[i] = -1;
    combos.push_back(c);
  }
  return combos;
}

std::string in_dims_label(const std::vector<std::optional<std::int64_t>>& c) {
  std::string label;
  for (const auto& d : c) label += d ? std::to_string(*d) + " " : "none ";
  return label;
}

/// a and b stacked along in_dim d (0, or -1: after a's last dim).
xf::tensor stack_at(const xf::tensor& a, const xf::tensor& b, std::int64_t d) {
  return xf::stack({a, b}, d < 0 ? a.dim() : 0);
}

void same_values(const xf::tensor& got, const xf::tensor& expect) {
  REQUIRE(got.shape() == expect.shape());
  CHECK(xf::allclose(got, expect, 1e-10, 1e-12));
}

// jvp∘vmap and vjp∘vmap for every in_dims, and jvp∘vmap∘vmap and vjp∘vmap∘vmap, against the
// per-example jvp and vjp: a rule that reduces or broadcasts over the batch dim of a physical
// value (e.g. an empty dims list read as "every dim") gives a wrong tangent or gradient here.
template <std::size_t N, class G>
void check_transforms_of_vmap(const G& g, const std::array<xf::tensor, N>& xs, const std::array<xf::tensor, N>& xs1,
                              const std::array<xf::tensor, N>& t0, const std::array<xf::tensor, N>& t1) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    const xf::tensor out0 = g(xs[I]...);
    const xf::tensor c0 = sample(out0.shape(), -1, 1, 7), c1 = sample(out0.shape(), -1, 1, 8);
    for (const auto& c : in_dims_combos(N)) {
      INFO("in_dims: " << in_dims_label(c));
      std::array<xf::tensor, N> xb, tb, xe1, te1;  // batched arguments; example 1's arguments
      for (std::size_t i = 0; i < N; ++i) {
        xb[i] = c[i] ? stack_at(xs[i], xs1[i], *c[i]) : xs[i];
        tb[i] = c[i] ? stack_at(t0[i], t1[i], *c[i]) : t0[i];
        xe1[i] = c[i] ? xs1[i] : xs[i];
        te1[i] = c[i] ? t1[i] : t0[i];
      }
      auto vg = xf::vmap(g, xf::in_dims(c[I]...));
      {
        INFO("jvp∘vmap: jvp of vmap(op) against per-example jvps");
        auto [outb, tanb] = xf::jvp(vg, std::tuple{xb[I]...}, std::tuple<tensor_t<I>...>{tb[I]...});
        auto e0 = xf::jvp(g, std::tuple{xs[I]...}, std::tuple<tensor_t<I>...>{t0[I]...});
        auto e1 = xf::jvp(g, std::tuple{xe1[I]...}, std::tuple<tensor_t<I>...>{te1[I]...});
        same_values(outb, xf::stack({e0.first, e1.first}, 0));
        same_values(tanb, xf::stack({e0.second, e1.second}, 0));
      }
      {
        INFO("vjp∘vmap: pullback of vmap(op) against per-example pullbacks");
        auto [outb, pbb] = xf::vjp(vg, xb[I]...);
        auto gb = pbb(xf::stack({c0, c1}, 0));
        auto g0 = xf::vjp(g, xs[I]...).second(c0);
        auto g1 = xf::vjp(g, xe1[I]...).second(c1);
        // a batched argument gets per-example gradients; an unbatched one, their sum
        (same_values(std::get<I>(gb), c[I] ? stack_at(std::get<I>(g0), std::get<I>(g1), *c[I])
                                           : std::get<I>(g0) + std::get<I>(g1)),
         ...);
      }
    }
    {
      INFO("jvp∘vmap∘vmap and vjp∘vmap∘vmap over a 2x2 batch");
      auto grid = [](const xf::tensor& a, const xf::tensor& b) {
        return xf::stack({xf::stack({a, b}, 0), xf::stack({b * 0.5, a * 0.25}, 0)}, 0);
      };
      auto vvg = xf::vmap(xf::vmap(g));
      auto [outb, tanb] = xf::jvp(vvg, std::tuple{grid(xs[I], xs1[I])...}, std::tuple<tensor_t<I>...>{grid(t0[I], t1[I])...});
      auto [outv, pbv] = xf::vjp(vvg, grid(xs[I], xs1[I])...);
      const xf::tensor cb = grid(c0, c1);
      auto gb = pbv(cb);
      std::vector<xf::tensor> outs, tans;
      std::array<std::vector<xf::tensor>, N> grads;
      for (std::int64_t a = 0; a < 2; ++a)
        for (std::int64_t b = 0; b < 2; ++b) {
          auto e = xf::jvp(g, std::tuple{grid(xs[I], xs1[I]).select(0, a).select(0, b)...},
                           std::tuple<tensor_t<I>...>{grid(t0[I], t1[I]).select(0, a).select(0, b)...});
          outs.push_back(e.first);
          tans.push_back(e.second);
          auto ge = xf::vjp(g, grid(xs[I], xs1[I]).select(0, a).select(0, b)...).second(cb.select(0, a).select(0, b));
          (grads[I].push_back(std::get<I>(ge)), ...);
        }
      auto as_grid = [](const std::vector<xf::tensor>& v) {
        return xf::stack({xf::stack({v[0], v[1]}, 0), xf::stack({v[2], v[3]}, 0)}, 0);
      };
      same_values(outb, as_grid(outs));
      same_values(tanb, as_grid(tans));
      (same_values(std::get<I>(gb), as_grid(grads[I])), ...);
    }
  }(std::make_index_sequence<N>{});
}

template <std::size_t N>
void check_compositions_n(const op_row& r, const std::vector<std::size_t>& pos) {
  const tensors all = r.inputs;
  auto g = [&](const auto&... xs) {
    tensors a = all;
    std::size_t k = 0;
    ((a[pos[k++]] = xs), ...);
    return r.op(a);
  };
  auto flat_grads = [](const auto& gs) {
    return std::apply([](const auto&... t) { return xf::cat({t.reshape({-1})...}, 0); }, gs);
  };
  std::array<xf::tensor, N> xs, xs1, t0, t1;
  for (std::size_t i = 0; i < N; ++i) {
    xs[i] = all[pos[i]].contiguous();
    xs1[i] = xs[i] * 0.9 + 0.05;
    t0[i] = sample(xs[i].shape(), -1, 1, 11 + i);
    t1[i] = sample(xs[i].shape(), -1, 1, 21 + i);
  }
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    {
      INFO("vjp∘vjp and jvp∘vjp (gradgradcheck)");
      bool ok = false;
      try {
        ok = xf::testing::gradgradcheck(g, xf::testing::raise, xs[I]...);
      } catch (const std::exception& e) {
        FAIL_CHECK(e.what());
      }
      CHECK(ok);
    }
    // not a structured binding: clang 14 cannot capture those in lambdas
    auto out_and_pullback = xf::vjp(g, xs[I]...);
    const xf::tensor& out = out_and_pullback.first;
    auto& pb = out_and_pullback.second;
    const xf::tensor c0 = sample(out.shape(), -1, 1, 7), c1 = sample(out.shape(), -1, 1, 8);
    {
      INFO("vmap∘vjp: vmap of the pullback over cotangents");
      auto pull = [&](const xf::tensor& c) { return flat_grads(pb(c)); };
      xf::tensor expect = xf::stack({pull(c0), pull(c1)}, 0);
      xf::tensor got = xf::vmap(pull)(xf::stack({c0, c1}, 0));
      REQUIRE(got.shape() == expect.shape());
      CHECK(xf::allclose(got, expect, 1e-10, 1e-12));
    }
    {
      INFO("vmap∘jvp: vmap of jvp over tangents");
      auto push = [&](const auto&... ts) {
        return xf::jvp(g, std::tuple{xs[I]...}, std::tuple<tensor_t<I>...>{ts...}).second;
      };
      xf::tensor expect = xf::stack({push(t0[I]...), push(t1[I]...)}, 0);
      xf::tensor got = xf::vmap(push)(xf::stack({t0[I], t1[I]}, 0)...);
      REQUIRE(got.shape() == expect.shape());
      CHECK(xf::allclose(got, expect, 1e-10, 1e-12));
    }
  }(std::make_index_sequence<N>{});
  check_transforms_of_vmap<N>(g, xs, xs1, t0, t1);
}

void check_compositions(const op_row& r) {
  std::vector<std::size_t> pos;
  for (std::size_t i = 0; i < r.inputs.size(); ++i)
    if (xf::is_floating(r.inputs[i].dtype())) pos.push_back(i);
  if (pos.empty()) return;
  by_arity(pos.size(), [&](auto N) {
    check_compositions_n<decltype(N)::value>(r, pos);
    return 0;
  });
}

// ---- make_fx -------------------------------------------------------------------------------
// The op traced by make_fx replays to its eager value, and traced under
// functionalize(remove::mutations_and_views) leaves no view node (every view is recorded as its
// copying form, NOTE: [Views as copies]) and no output that shares memory with an input.
void each_node(const xf::detail::program& p, const std::function<void(const xf::detail::trace_node&)>& f) {
  for (const auto& n : p.nodes) {
    f(n);
    for (const auto& sub : n.subgraphs) each_node(*sub.second, f);
  }
}

void same_result(const xf::tensor& got, const xf::tensor& expect) {
  REQUIRE(got.shape() == expect.shape());
  REQUIRE(got.dtype() == expect.dtype());
  if (xf::is_floating(expect.dtype())) CHECK(xf::allclose(got, expect, 1e-12, 1e-14));
  else CHECK(xf::equal(got, expect));
}

template <std::size_t N>
void check_traced_n(const op_row& r) {
  auto f = [&r](const auto&... xs) { return r.op(tensors{xs...}); };
  const xf::tensor expect = r.op(r.inputs);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    {
      INFO("make_fx(op) replays to the eager value");
      const xf::graph g = xf::make_fx(f)(r.inputs[I]...);
      const auto out = g(r.inputs[I]...);
      REQUIRE(out.size() == 1);
      same_result(out[0], expect);
    }
    INFO("make_fx(functionalize(op, remove::mutations_and_views))");
    const xf::graph g = xf::make_fx(xf::functionalize(f, xf::remove::mutations_and_views))(r.inputs[I]...);
    INFO(g.str());
    each_node(xf::detail::graph_access::of(g), [](const xf::detail::trace_node& n) {
      INFO("node " << n.op);
      CHECK_FALSE(n.is_view);
      CHECK(n.op.back() != '_');
    });
    const auto out = g(r.inputs[I]...);
    REQUIRE(out.size() == 1);
    same_result(out[0], expect);
    for (const auto& x : r.inputs)
      if (out[0].impl() != x.impl()) CHECK_FALSE(xf::same_storage(out[0], x));
  }(std::make_index_sequence<N>{});
}

}  // namespace

void check_row(const op_row& r) {
  DYNAMIC_SECTION(r.name << ": forward") { check_forward(r); }
  if (r.differentiable) {
    DYNAMIC_SECTION(r.name << ": gradcheck (vjp and jvp against finite differences)") {
      CHECK(by_arity(r.inputs.size(), [&](auto N) { return run_gradcheck<decltype(N)::value>(r.op, r.inputs); }));
    }
    DYNAMIC_SECTION(r.name << ": compositions (vjp∘vjp, jvp∘vjp, vmap∘vjp, vmap∘jvp, vjp∘vmap, jvp∘vmap)") {
      check_compositions(r);
    }
  }
  DYNAMIC_SECTION(r.name << ": vmap against a loop") { check_vmap(r); }
  DYNAMIC_SECTION(r.name << ": make_fx, and make_fx of functionalize without views") {
    by_arity(r.inputs.size(), [&](auto N) {
      check_traced_n<decltype(N)::value>(r);
      return 0;
    });
  }
}

TEST_CASE("op conformance table", "[conformance]") {
  REQUIRE(!rows().empty());
  for (const auto& r : rows()) check_row(r);
}

}  // namespace conformance
