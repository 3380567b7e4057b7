#pragma once
// Generating random programs (tests/fuzz/program.hpp). The generator computes every value's
// shape itself (a second implementation of the shape rules: the library's result must agree)
// and interval bounds of every value's elements, so that each op gets arguments in its domain.
#include <numeric>

#include "fuzz/program.hpp"

namespace fuzz {

struct gen_options {
  int max_steps = 8;
  std::int64_t max_extent = 4;  // extents of input dims are 1..max_extent (0 sometimes)
  int max_rank = 3;
  int max_inputs = 4;
  int empty_percent = 4;        // chance of a size-0 dim in an input
};

class generator {
 public:
  generator(chooser& c, gen_options o) : c_(c), o_(o) {}

  program make() {
    const int first = 1 + c_.pick(2);
    for (int k = 0; k < first; ++k) add_input(random_shape(), c_.chance(25));
    const int n = 1 + c_.pick(o_.max_steps);
    for (int k = 0; k < n; ++k)
      for (int attempt = 0; attempt < 20; ++attempt)
        if (try_step()) break;
    p_.output = p_.values() - 1;
    return p_;
  }

 private:
  // ---- values -------------------------------------------------------------------------------
  xf::shape_t random_shape(int max_rank = -1) {
    const int rank = c_.pick((max_rank < 0 ? o_.max_rank : max_rank) + 1);
    xf::shape_t s;
    for (int d = 0; d < rank; ++d) s.push_back(c_.chance(o_.empty_percent) ? 0 : 1 + c_.pick(static_cast<int>(o_.max_extent)));
    return s;
  }
  int add_input(const xf::shape_t& s, bool positive) {
    if (static_cast<int>(p_.inputs.size()) >= o_.max_inputs) return -1;
    const int id = p_.values();
    input_spec in{s, positive, layout::contiguous, id};
    const int lay = c_.pick(8);
    if (lay == 1 && s.size() >= 2) in.lay = layout::transposed;
    if (lay == 2) in.lay = layout::offset;
    if (lay == 3 && std::any_of(s.begin(), s.end(), [](std::int64_t e) { return e > 1; })) in.lay = layout::expanded;
    p_.inputs.push_back(in);
    p_.shapes.push_back(s);
    b_.push_back(positive ? bounds{0.5, 2.0} : bounds{-2.0, 2.0});
    return id;
  }
  int push(step s, const xf::shape_t& shape, bounds bd, bool kink = false) {
    s.out = p_.values();
    p_.steps.push_back(std::move(s));
    p_.shapes.push_back(shape);
    b_.push_back(bd);
    if (kink) p_.smooth = false;
    return p_.values() - 1;
  }
  const xf::shape_t& shape(int v) const { return p_.shapes[static_cast<std::size_t>(v)]; }
  std::int64_t rank(int v) const { return static_cast<std::int64_t>(shape(v).size()); }
  std::int64_t numel(int v) const {
    return std::accumulate(shape(v).begin(), shape(v).end(), std::int64_t{1}, std::multiplies<>());
  }
  int pick_value() { return c_.chance(50) ? p_.values() - 1 : c_.pick(p_.values()); }
  /// A random dim of v, sometimes written negative.
  std::int64_t any_dim(int v) {
    const std::int64_t d = c_.pick(static_cast<int>(rank(v)));
    return c_.chance(30) ? d - rank(v) : d;
  }
  static std::int64_t wrap(std::int64_t d, std::int64_t r) { return d < 0 ? d + r : d; }

  /// v itself when its elements are >= 0.1, else exp(tanh(v)) (in [0.37, 2.72]).
  int positive(int v) {
    if (b_[static_cast<std::size_t>(v)].positive()) return v;
    const int t = push({op::tanh, {v}}, shape(v), {-1, 1});
    return push({op::exp, {t}}, shape(v), {std::exp(-1.0), std::exp(1.0)});
  }
  /// v itself when its elements are within [-lim, lim], else tanh(v).
  int bounded(int v, double lim) {
    if (b_[static_cast<std::size_t>(v)].mag() <= lim) return v;
    return push({op::tanh, {v}}, shape(v), {-1, 1});
  }
  /// A value of exactly shape s: an existing one or a new input (-1 if neither).
  int value_of_shape(const xf::shape_t& s) {
    std::vector<int> same;
    for (int v = 0; v < p_.values(); ++v)
      if (shape(v) == s) same.push_back(v);
    if (!same.empty() && c_.chance(50)) return c_.one_of(same);
    const int in = add_input(s, c_.chance(25));
    if (in >= 0) return in;
    return same.empty() ? -1 : c_.one_of(same);
  }
  /// A shape that broadcasts with s: s with leading dims dropped and some dims set to 1, or s
  /// with a new leading dim.
  xf::shape_t broadcast_partner(const xf::shape_t& s) {
    xf::shape_t r = s;
    if (c_.chance(15)) {
      r.insert(0, 1 + c_.pick(3));
      return r;
    }
    const int drop = c_.pick(static_cast<int>(s.size()) + 1);
    r = xf::shape_t(s.begin() + drop, s.end());
    for (auto& e : r)
      if (c_.chance(25)) e = 1;
    return r;
  }
  static xf::shape_t broadcast(const xf::shape_t& a, const xf::shape_t& b) {
    const std::size_t n = std::max(a.size(), b.size());
    xf::shape_t r(n, 1);
    for (std::size_t k = 0; k < n; ++k) {
      const std::int64_t x = k + a.size() >= n ? a[k + a.size() - n] : 1, y = k + b.size() >= n ? b[k + b.size() - n] : 1;
      r[k] = x == 1 ? y : x;
    }
    return r;
  }
  /// Reduced dims (a non-empty subset, maybe negative) and the reduced element count.
  std::vector<std::int64_t> some_dims(int v, std::int64_t& count) {
    std::vector<std::int64_t> dims;
    count = 1;
    for (std::int64_t d = 0; d < rank(v); ++d)
      if (c_.chance(50)) {
        dims.push_back(c_.chance(30) ? d - rank(v) : d);
        count *= shape(v)[static_cast<std::size_t>(d)];
      }
    if (dims.empty()) {
      const std::int64_t d = c_.pick(static_cast<int>(rank(v)));
      dims.push_back(d);
      count = shape(v)[static_cast<std::size_t>(d)];
    }
    return dims;
  }
  static xf::shape_t reduced(const xf::shape_t& s, const std::vector<std::int64_t>& dims, bool keepdim) {
    xf::shape_t r;
    const auto n = static_cast<std::int64_t>(s.size());
    for (std::int64_t d = 0; d < n; ++d) {
      const bool gone = std::any_of(dims.begin(), dims.end(), [&](std::int64_t x) { return wrap(x, n) == d; });
      if (!gone) r.push_back(s[static_cast<std::size_t>(d)]);
      else if (keepdim) r.push_back(1);
    }
    return r;
  }

  // ---- steps --------------------------------------------------------------------------------
  bool try_step() {
    const int kind = c_.pick(100);
    if (kind < 28) return unary(pick_value());
    if (kind < 46) return binary(pick_value());
    if (kind < 58) return reduction(pick_value());
    if (kind < 66) return nn(pick_value());
    if (kind < 72) return linalg(pick_value());
    if (kind < 90) return view(pick_value());
    if (kind < 94) return combine(pick_value());
    return inplace(pick_value());
  }

  bool unary(int v) {
    const bounds bv = b_[static_cast<std::size_t>(v)];
    const double m = bv.mag();
    const int which = c_.pick(27);
    switch (which) {
      case 0: push({op::neg, {v}}, shape(v), {-bv.hi, -bv.lo}); return true;
      case 1: { const int u = bounded(v, 4); const bounds bu = b_[static_cast<std::size_t>(u)];
                push({op::exp, {u}}, shape(v), {std::exp(bu.lo), std::exp(bu.hi)}); return true; }
      case 2: { const int u = positive(v); const bounds bu = b_[static_cast<std::size_t>(u)];
                push({op::log, {u}}, shape(v), {std::log(bu.lo), std::log(bu.hi)}); return true; }
      // (periodic functions of large arguments: a finite-difference step moves them by whole
      // periods; found by a long run)
      case 3: case 4: {
        const int u = bounded(v, 10);  // (before shape(v): bounded may add a value, moving shapes)
        push({which == 3 ? op::sin : op::cos, {u}}, shape(v), {-1, 1});
        return true;
      }
      case 5: { const int u = bounded(v, 1.2); push({op::tan, {u}}, shape(v), {-2.6, 2.6}); return true; }
      case 6: push({op::tanh, {v}}, shape(v), {-1, 1}); return true;
      case 7: push({op::sigmoid, {v}}, shape(v), {0, 1}); return true;
      case 8: push({op::relu, {v}}, shape(v), {0, std::max(bv.hi, 0.0)}, true); return true;
      case 9: push({op::abs, {v}}, shape(v), {0, m}, true); return true;
      case 10: { const int u = positive(v); const bounds bu = b_[static_cast<std::size_t>(u)];
                 push({op::sqrt, {u}}, shape(v), {std::sqrt(bu.lo), std::sqrt(bu.hi)}); return true; }
      case 11: { const int u = positive(v); const bounds bu = b_[static_cast<std::size_t>(u)];
                 push({op::rsqrt, {u}}, shape(v), {1 / std::sqrt(bu.hi), 1 / std::sqrt(bu.lo)}); return true; }
      case 12: push({op::square, {v}}, shape(v), {bv.lo > 0 ? bv.lo * bv.lo : 0, m * m}); return true;
      case 13: { const int u = positive(v); const bounds bu = b_[static_cast<std::size_t>(u)];
                 push({op::log1p, {u}}, shape(v), {std::log1p(bu.lo), std::log1p(bu.hi)}); return true; }
      case 14: { const int u = bounded(v, 4); const bounds bu = b_[static_cast<std::size_t>(u)];
                 push({op::expm1, {u}}, shape(v), {std::expm1(bu.lo), std::expm1(bu.hi)}); return true; }
      case 15: { const int u = positive(v); const bounds bu = b_[static_cast<std::size_t>(u)];
                 push({op::reciprocal, {u}}, shape(v), {1 / bu.hi, 1 / bu.lo}); return true; }
      case 16: push({op::erf, {v}}, shape(v), {-1, 1}); return true;
      case 17: push({op::sign, {v}}, shape(v), {-1, 1}, true); return true;
      case 18: { const double s = c_.one_of(std::vector<double>{-2.0, 0.5, 3.0});
                 push({op::mul_scalar, {v}, {}, s}, shape(v), {-m * std::abs(s), m * std::abs(s)}); return true; }
      case 19: { const double s = c_.one_of(std::vector<double>{1.0, 2.5});
                 push({op::add_scalar, {v}, {}, s}, shape(v), {s - bv.hi, s - bv.lo}); return true; }
      case 20: { const int u = positive(bounded(v, 3)); const bounds bu = b_[static_cast<std::size_t>(u)];
                 const double s = c_.one_of(std::vector<double>{0.5, 2.0, 3.0, -1.5});
                 const double x = std::pow(bu.lo, s), y = std::pow(bu.hi, s);
                 push({op::pow_scalar, {u}, {}, s}, shape(v), {std::min(x, y), std::max(x, y)}); return true; }
      case 21: { const double s = c_.one_of(std::vector<double>{0.5, 1.0});
                 push({op::clamp, {v}, {}, s}, shape(v), {std::max(-s, bv.lo), std::min(s, bv.hi)}, true); return true; }
      case 22: { const int u = bounded(v, 10);
                 push({op::custom_op, {u}}, shape(v), {-b_[static_cast<std::size_t>(u)].mag(), b_[static_cast<std::size_t>(u)].mag()}); return true; }
      case 23: { const int u = bounded(v, 30); push({op::autograd_fn, {u}}, shape(v), {0, std::max(b_[static_cast<std::size_t>(u)].hi, 0.0) + 1}); return true; }
      // higher-order ops (scan and map need a dim 0 with at least one slice)
      case 24: { const int u = bounded(v, 10);
                 push({op::cond, {u}, {c_.pick(2)}}, shape(v), {-2, std::max(2.0, b_[static_cast<std::size_t>(u)].mag())}); return true; }
      default: {
        if (rank(v) == 0 || shape(v)[0] == 0) return false;
        const int u = bounded(v, 10);
        const double mu = b_[static_cast<std::size_t>(u)].mag();
        if (which == 25) push({op::scan, {u}}, shape(v), {-2 * mu, 2 * mu});
        else push({op::map, {u}}, shape(v), {0, mu});
        return true;
      }
    }
  }

  bool binary(int v) {
    const int which = c_.pick(9);
    xf::shape_t ps = broadcast_partner(shape(v));
    int w;
    if (c_.chance(20)) w = v;
    else w = value_of_shape(ps);
    if (w < 0) return false;
    if (which == 5 || which == 6) {  // maximum / minimum of one value with itself: every element ties
      if (w == v) return false;
    }
    if (which == 3) w = positive(w);      // div: a denominator >= 0.1
    if (which == 4) {                     // pow: a positive base, a bounded exponent
      v = positive(bounded(v, 3));
      w = bounded(w, 2);
    }
    if (which == 7) w = positive(w);      // atan2(y, x > 0): no branch cut
    const xf::shape_t out = broadcast(shape(v), shape(w));
    const bounds a = b_[static_cast<std::size_t>(v)], b = b_[static_cast<std::size_t>(w)];
    switch (which) {
      case 0: push({op::add, {v, w}}, out, {a.lo + b.lo, a.hi + b.hi}); return true;
      case 1: push({op::sub, {v, w}}, out, {a.lo - b.hi, a.hi - b.lo}); return true;
      case 2: { const double x[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
                push({op::mul, {v, w}}, out, {*std::min_element(x, x + 4), *std::max_element(x, x + 4)}); return true; }
      case 3: { const double r = a.mag() / b.lo; push({op::div, {v, w}}, out, {-r, r}); return true; }
      case 4: { const double r = std::pow(std::max(a.hi, 1 / a.lo), b.mag()); push({op::pow, {v, w}}, out, {1 / r, r}); return true; }
      case 5: push({op::maximum, {v, w}}, out, {std::max(a.lo, b.lo), std::max(a.hi, b.hi)}, true); return true;
      case 6: push({op::minimum, {v, w}}, out, {std::min(a.lo, b.lo), std::min(a.hi, b.hi)}, true); return true;
      case 7: push({op::atan2, {v, w}}, out, {-1.6, 1.6}); return true;
      default: {  // where(c > 0, v, w) with c a third value that broadcasts with both
        const int cond = value_of_shape(broadcast_partner(out));
        if (cond < 0) return false;
        push({op::where, {v, w, cond}}, broadcast(out, shape(cond)), {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}, true);
        return true;
      }
    }
  }

  bool reduction(int v) {
    const bounds bv = b_[static_cast<std::size_t>(v)];
    const double m = bv.mag(), n = static_cast<double>(std::max<std::int64_t>(numel(v), 1));
    const int which = c_.pick(9);
    if (which == 0) {
      push({op::sum_all, {v}}, {}, {-m * n, m * n});
      return true;
    }
    if (which == 8) {
      push({op::norm, {v}}, {}, {0, m * std::sqrt(n)}, true);
      return true;
    }
    if (rank(v) == 0) return false;
    std::int64_t count = 1;
    std::vector<std::int64_t> dims = some_dims(v, count);
    const bool keep = c_.chance(40);
    const auto cm = static_cast<double>(std::max<std::int64_t>(count, 1));
    switch (which) {
      case 1: { step s{op::sum_dims, {v}, {keep}};
                s.i.insert(s.i.end(), dims.begin(), dims.end());
                push(s, reduced(shape(v), dims, keep), {-m * cm, m * cm}); return true; }
      case 2: { if (count == 0) return false;  // the mean of nothing is NaN
                step s{op::mean_dims, {v}, {keep}};
                s.i.insert(s.i.end(), dims.begin(), dims.end());
                push(s, reduced(shape(v), dims, keep), {bv.lo, bv.hi}); return true; }
      case 3: { const std::int64_t d = any_dim(v);
                const std::int64_t len = shape(v)[static_cast<std::size_t>(wrap(d, rank(v)))];
                const int u = bounded(v, 1.5);
                const double r = std::pow(b_[static_cast<std::size_t>(u)].mag(), static_cast<double>(len));
                push({op::prod, {u}, {keep, d}}, reduced(shape(v), {d}, keep), {-std::max(r, 1.0), std::max(r, 1.0)}); return true; }
      case 4: case 5: {
        if (count == 0) return false;  // amax / amin of nothing is an error (tested elsewhere)
        step s{which == 4 ? op::amax : op::amin, {v}, {keep}};
        s.i.insert(s.i.end(), dims.begin(), dims.end());
        push(s, reduced(shape(v), dims, keep), bv, true); return true; }
      case 6: { if (count == 0) return false;
                const int u = bounded(v, 20);
                step s{op::logsumexp, {u}, {keep}};
                s.i.insert(s.i.end(), dims.begin(), dims.end());
                const bounds bu = b_[static_cast<std::size_t>(u)];
                push(s, reduced(shape(v), dims, keep), {bu.lo, bu.hi + std::log(cm)}); return true; }
      default: { if (count < 2) return false;  // correction 1 needs two elements
                 step s{op::var, {v}, {keep}};
                 s.i.insert(s.i.end(), dims.begin(), dims.end());
                 push(s, reduced(shape(v), dims, keep), {0, 4 * m * m * cm}); return true; }
    }
  }

  bool nn(int v) {
    switch (c_.pick(5)) {
      case 0: case 1: {
        if (rank(v) == 0) return false;
        const std::int64_t d = any_dim(v);
        if (c_.chance(50)) {
          push({op::softmax, {v}, {d}}, shape(v), {0, 1});
        } else {
          const int u = bounded(v, 20);
          const double n = static_cast<double>(shape(v)[static_cast<std::size_t>(wrap(d, rank(v)))]);
          push({op::log_softmax, {u}, {d}}, shape(v), {-2 * b_[static_cast<std::size_t>(u)].mag() - std::log(std::max(n, 1.0)), 0});
        }
        return true;
      }
      case 2: {  // linear(x [..., k], w [m, k], b [m])
        if (rank(v) < 1 || rank(v) > 2) return false;
        const std::int64_t k = shape(v).back(), mo = 1 + c_.pick(3);
        const int w = value_of_shape({mo, k}), b = value_of_shape({mo});
        if (w < 0 || b < 0) return false;
        xf::shape_t out = shape(v);
        out[out.size() - 1] = mo;
        const double r = static_cast<double>(k) * b_[static_cast<std::size_t>(v)].mag() * b_[static_cast<std::size_t>(w)].mag() +
                         b_[static_cast<std::size_t>(b)].mag();
        push({op::linear, {v, w, b}}, out, {-r, r});
        return true;
      }
      case 3: {
        const int w = value_of_shape(shape(v));
        if (w < 0) return false;
        const double r = b_[static_cast<std::size_t>(v)].mag() + b_[static_cast<std::size_t>(w)].mag();
        push({op::mse_loss, {v, w}}, {}, {0, r * r});
        return true;
      }
      default: {  // cross_entropy(logits [C] or [N, C], class indices)
        if (rank(v) < 1 || rank(v) > 2 || numel(v) == 0) return false;
        const int u = bounded(v, 20);
        const std::int64_t C = shape(v).back(), N = rank(v) == 2 ? shape(v)[0] : 1;
        step s{op::cross_entropy, {u}};
        for (std::int64_t k = 0; k < N; ++k) s.i.push_back(c_.pick(static_cast<int>(C)));
        push(s, {}, {0, 40 + std::log(static_cast<double>(C))});
        return true;
      }
    }
  }

  bool linalg(int v) {
    if (rank(v) == 0) return false;
    const double ma = b_[static_cast<std::size_t>(v)].mag();
    const std::int64_t k = shape(v).back();
    if (rank(v) == 1 && c_.chance(30)) {  // outer
      const int w = value_of_shape({1 + c_.pick(3)});
      if (w < 0) return false;
      const double r = ma * b_[static_cast<std::size_t>(w)].mag();
      push({op::outer, {v, w}}, {k, shape(w)[0]}, {-r, r});
      return true;
    }
    const bool vec = c_.chance(30);
    const std::int64_t m = 1 + c_.pick(3);
    const int w = value_of_shape(vec ? xf::shape_t{k} : xf::shape_t{k, m});
    if (w < 0) return false;
    xf::shape_t out(shape(v).begin(), shape(v).end() - 1);
    if (!vec) out.push_back(m);
    const double r = static_cast<double>(std::max<std::int64_t>(k, 1)) * ma * b_[static_cast<std::size_t>(w)].mag();
    push({op::matmul, {v, w}}, out, {-r, r});
    return true;
  }

  bool view(int v) {
    const xf::shape_t& s = shape(v);
    const std::int64_t r = rank(v);
    const bounds bv = b_[static_cast<std::size_t>(v)];
    switch (c_.pick(17)) {
      case 0: {  // reshape into a random factorisation of the element count
        const std::int64_t n = numel(v);
        if (n == 0) return false;
        xf::shape_t out;
        std::int64_t rest = n;
        while (rest > 1 && out.size() < 3) {
          std::vector<std::int64_t> divs;
          for (std::int64_t d = 2; d <= rest; ++d)
            if (rest % d == 0) divs.push_back(d);
          const std::int64_t d = c_.one_of(divs);
          out.push_back(d);
          rest /= d;
        }
        if (rest > 1) out[out.size() - 1] *= rest;
        if (c_.chance(30)) out.insert(c_.pick(static_cast<int>(out.size()) + 1), 1);
        step st{op::reshape, {v}, std::vector<std::int64_t>(out.begin(), out.end())};
        if (c_.chance(30) && !out.empty()) st.i[static_cast<std::size_t>(c_.pick(static_cast<int>(out.size())))] = -1;
        push(st, out, bv);
        return true;
      }
      case 1: {
        if (r < 2) return false;
        const std::int64_t a = any_dim(v), b = any_dim(v);
        xf::shape_t out = s;
        std::swap(out[static_cast<std::size_t>(wrap(a, r))], out[static_cast<std::size_t>(wrap(b, r))]);
        push({op::transpose, {v}, {a, b}}, out, bv);
        return true;
      }
      case 2: {
        std::vector<std::int64_t> perm(static_cast<std::size_t>(r));
        std::iota(perm.begin(), perm.end(), 0);
        for (std::size_t k = perm.size(); k > 1; --k) std::swap(perm[k - 1], perm[static_cast<std::size_t>(c_.pick(static_cast<int>(k)))]);
        xf::shape_t out;
        for (auto d : perm) out.push_back(s[static_cast<std::size_t>(d)]);
        push({op::permute, {v}, perm}, out, bv);
        return true;
      }
      case 3: {
        const std::int64_t d = c_.pick(static_cast<int>(r) + 1) - (c_.chance(30) ? r + 1 : 0);
        xf::shape_t out = s;
        out.insert(static_cast<std::size_t>(wrap(d, r + 1)), 1);
        push({op::unsqueeze, {v}, {d}}, out, bv);
        return true;
      }
      case 4: {
        std::vector<std::int64_t> ones;
        for (std::int64_t d = 0; d < r; ++d)
          if (s[static_cast<std::size_t>(d)] == 1) ones.push_back(d);
        if (ones.empty()) return false;
        const std::int64_t d = c_.one_of(ones);
        xf::shape_t out = s;
        out.erase(static_cast<std::size_t>(d));
        push({op::squeeze_dim, {v}, {d}}, out, bv);
        return true;
      }
      case 5: {  // expand size-1 dims, maybe with a new leading dim
        xf::shape_t out = s;
        for (auto& e : out)
          if (e == 1 && c_.chance(60)) e = 2 + c_.pick(2);
        if (c_.chance(40)) out.insert(0, 1 + c_.pick(3));
        push({op::expand, {v}, std::vector<std::int64_t>(out.begin(), out.end())}, out, bv);
        return true;
      }
      case 6: push({op::flatten, {v}}, {numel(v)}, bv); return true;
      case 7: {
        if (r == 0) return false;
        const std::int64_t d = any_dim(v), n = s[static_cast<std::size_t>(wrap(d, r))];
        if (n == 0) return false;
        const std::int64_t i = c_.pick(static_cast<int>(n)) - (c_.chance(30) ? n : 0);
        xf::shape_t out = s;
        out.erase(static_cast<std::size_t>(wrap(d, r)));
        push({op::select, {v}, {d, i}}, out, bv);
        return true;
      }
      case 8: {
        if (r == 0) return false;
        const std::int64_t d = any_dim(v), n = s[static_cast<std::size_t>(wrap(d, r))];
        const std::int64_t start = c_.pick(static_cast<int>(n) + 1), len = c_.pick(static_cast<int>(n - start) + 1);
        xf::shape_t out = s;
        out[static_cast<std::size_t>(wrap(d, r))] = len;
        push({op::narrow, {v}, {d, start, len}}, out, bv);
        return true;
      }
      case 9: {
        if (r != 2) return false;
        push({op::diagonal, {v}}, {std::min(s[0], s[1])}, bv);
        return true;
      }
      case 10: {
        if (r == 0) return false;
        const std::int64_t a = any_dim(v), b = any_dim(v);
        xf::shape_t out = s;
        const std::int64_t e = out[static_cast<std::size_t>(wrap(a, r))];
        out.erase(static_cast<std::size_t>(wrap(a, r)));
        out.insert(static_cast<std::size_t>(wrap(b, r)), e);
        push({op::movedim, {v}, {a, b}}, out, bv);
        return true;
      }
      case 11: push({op::contiguous, {v}}, s, bv); return true;
      case 12: push({op::clone, {v}}, s, bv); return true;
      case 13: {
        if (r == 0) return false;
        std::int64_t count = 0;
        push({op::flip, {v}, some_dims(v, count)}, s, bv);
        return true;
      }
      case 14: {  // split(t, size, dim)[k]
        if (r == 0) return false;
        const std::int64_t d = any_dim(v), n = s[static_cast<std::size_t>(wrap(d, r))];
        if (n == 0) return false;
        const std::int64_t size = 1 + c_.pick(static_cast<int>(n)), parts = (n + size - 1) / size, k = c_.pick(static_cast<int>(parts));
        xf::shape_t out = s;
        out[static_cast<std::size_t>(wrap(d, r))] = std::min(size, n - k * size);
        push({op::split_part, {v}, {size, d, k}}, out, bv);
        return true;
      }
      case 15: {  // index_select with 0..4 indices (repeats allowed)
        if (r == 0) return false;
        const std::int64_t d = any_dim(v), n = s[static_cast<std::size_t>(wrap(d, r))];
        const std::int64_t len = n == 0 ? 0 : c_.pick(5);
        step st{op::index_select, {v}, {d}};
        for (std::int64_t k = 0; k < len; ++k) st.i.push_back(c_.pick(static_cast<int>(n)));
        xf::shape_t out = s;
        out[static_cast<std::size_t>(wrap(d, r))] = len;
        push(st, out, bv);
        return true;
      }
      default: {  // gather along d with an index of v's shape but 1..3 along d
        if (r == 0) return false;
        const std::int64_t d = any_dim(v), n = s[static_cast<std::size_t>(wrap(d, r))];
        if (n == 0) return false;
        xf::shape_t out = s;
        out[static_cast<std::size_t>(wrap(d, r))] = 1 + c_.pick(3);
        step st{op::gather, {v}, {d, out[static_cast<std::size_t>(wrap(d, r))]}};
        const std::int64_t cnt = std::accumulate(out.begin(), out.end(), std::int64_t{1}, std::multiplies<>());
        for (std::int64_t k = 0; k < cnt; ++k) st.i.push_back(c_.pick(static_cast<int>(n)));
        push(st, out, bv);
        return true;
      }
    }
  }

  bool combine(int v) {
    const bounds a = b_[static_cast<std::size_t>(v)];
    if (c_.chance(50)) {  // stack with a value of the same shape
      const int w = value_of_shape(shape(v));
      if (w < 0) return false;
      const std::int64_t d = c_.pick(static_cast<int>(rank(v)) + 1) - (c_.chance(30) ? rank(v) + 1 : 0);
      xf::shape_t out = shape(v);
      out.insert(static_cast<std::size_t>(wrap(d, rank(v) + 1)), 2);
      const bounds b = b_[static_cast<std::size_t>(w)];
      push({op::stack, {v, w}, {d}}, out, {std::min(a.lo, b.lo), std::max(a.hi, b.hi)});
      return true;
    }
    if (rank(v) == 0) return false;
    const std::int64_t d = any_dim(v);
    xf::shape_t ws = shape(v);
    ws[static_cast<std::size_t>(wrap(d, rank(v)))] = c_.pick(4);
    const int w = value_of_shape(ws);
    if (w < 0) return false;
    xf::shape_t out = shape(v);
    out[static_cast<std::size_t>(wrap(d, rank(v)))] += ws[static_cast<std::size_t>(wrap(d, rank(v)))];
    const bounds b = b_[static_cast<std::size_t>(w)];
    push({op::cat, {v, w}, {d}}, out, {std::min(a.lo, b.lo), std::max(a.hi, b.hi)});
    return true;
  }

  bool inplace(int v) {
    const std::int64_t r = rank(v);
    if (r == 0) return false;
    step st{op::inplace_view, {v}, {c_.pick(8)}};
    xf::shape_t vs = shape(v);
    if (r >= 2 && c_.chance(30)) {
      st.i.insert(st.i.end(), {-1, 0, 0});
      std::swap(vs[0], vs[1]);
    } else {
      const std::int64_t d = c_.pick(static_cast<int>(r)), n = shape(v)[static_cast<std::size_t>(d)];
      const std::int64_t start = c_.pick(static_cast<int>(n) + 1), len = c_.pick(static_cast<int>(n - start) + 1);
      st.i.insert(st.i.end(), {d, start, len});
      vs[static_cast<std::size_t>(d)] = len;
    }
    const bounds a = b_[static_cast<std::size_t>(v)];
    bounds out = a;
    const std::int64_t o = st.i[0];
    if (o == 0 || o == 1 || o == 3) {  // an operand that broadcasts to the view
      xf::shape_t ps = vs;
      for (auto& e : ps)
        if (c_.chance(25)) e = 1;
      const int w = value_of_shape(ps);
      if (w < 0) return false;
      st.a.push_back(w);
      const double m = b_[static_cast<std::size_t>(w)].mag();
      out = o == 0 ? bounds{a.lo - m, a.hi + m} : o == 1 ? bounds{-a.mag() * m, a.mag() * m} : bounds{std::min(a.lo, -m), std::max(a.hi, m)};
    } else if (o == 2 || o == 7) {
      st.s = o == 2 ? 1.5 : -0.5;
      out = o == 2 ? bounds{a.lo - 1.5, a.hi} : bounds{-a.mag(), a.mag()};
    } else {
      out = {std::min(a.lo, -1.0), std::max(a.hi, 1.0)};  // zero_, sin_, neg_
      if (o == 6) out = {-a.mag(), a.mag()};
      out.lo = std::min(out.lo, 0.0);
    }
    push(st, shape(v), out);
    return true;
  }

  chooser& c_;
  gen_options o_;
  program p_;
  std::vector<bounds> b_;
};

/// The inputs of p: float64 values inside each input's bounds, laid out as its spec says.
inline std::vector<tensor> make_inputs(const program& p, std::uint64_t seed) {
  xf::manual_seed(seed);
  std::vector<tensor> xs;
  for (const auto& in : p.inputs) {
    auto fill = [&](const xf::shape_t& s) {
      const tensor u = xf::rand(s, xf::f64);
      return in.positive ? 0.5 + 1.5 * u : 4.0 * u - 2.0;
    };
    tensor x;
    switch (in.lay) {
      case layout::transposed: {
        xf::shape_t t;
        for (std::size_t k = in.shape.size(); k-- > 0;) t.push_back(in.shape[k]);
        std::vector<std::int64_t> rev(in.shape.size());
        for (std::size_t k = 0; k < rev.size(); ++k) rev[k] = static_cast<std::int64_t>(rev.size() - 1 - k);
        x = fill(t).permute(rev);
        break;
      }
      case layout::offset: {
        xf::shape_t big = in.shape;
        big.insert(0, 2);
        x = fill(big).select(0, 1);
        break;
      }
      case layout::expanded: {
        xf::shape_t small = in.shape;
        for (auto& e : small)
          if (e > 1) {
            e = 1;
            break;
          }
        x = fill(small).expand(in.shape);
        break;
      }
      default: x = fill(in.shape);
    }
    xs.push_back(x);
  }
  return xs;
}

}  // namespace fuzz
