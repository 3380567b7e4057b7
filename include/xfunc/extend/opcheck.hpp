#pragma once
/// \file
/// xf::opcheck: checks a custom op's registration against its kernel (API.md §4.1).
#include <sstream>

#include <xfunc/extend/custom_op.hpp>
#include <xfunc/testing/finite_differences.hpp>

namespace xfunc {
namespace detail {

template <int D = 0>
tensor deep_copy(const tensor& t) { return t.defined() ? t.contiguous().clone() : t; }

template <class... P>
auto copy_values(const typename op_args<P...>::values_t& v) {
  tensor_list flat;
  op_layout lay;
  op_args<P...>::flatten(v, flat, lay);
  for (auto& t : flat) t = deep_copy(t);
  return op_args<P...>::with(v, flat);
}

[[noreturn]] inline void opcheck_fail(const std::string& op, const char* check, const std::string& why) {
  fail("xf::opcheck(", op, "): check \"", check, "\" failed: ", why);
}

}  // namespace detail

/// Runs `op` on `args` and checks, in order:
///   "schema"    the kernel writes only the arguments declared Tensor(a!) and returns new tensors
///               (no output aliases an input or another output);
///   "fake"      a fake kernel is registered and gives the real outputs' shapes and dtypes;
///   "autograd"  an op with floating tensor inputs and outputs has a register_autograd formula;
///   "gradcheck" its vjp and jvp (forward mode transposes the formula) match central finite
///               differences at `args` (float64 tolerances; looser for float32 inputs).
/// Returns normally when all pass; otherwise throws an xf::error naming the failed check.
template <class R, class... P, class... A>
void opcheck(const custom_op_handle<R(P...)>& op, const A&... args) {
  static_assert(sizeof...(A) == sizeof...(P), "xf::opcheck(op, args...): pass one argument per parameter of the op");
  using values_t = typename detail::op_args<P...>::values_t;
  using args_t = detail::op_args<P...>;
  const std::string& name = op.name();
  const auto def = op.def();
  const values_t given{args...};
  detail::tensor_list flat;
  detail::op_layout layout;
  args_t::flatten(given, flat, layout);
  auto run = [&](values_t& v) {
    return detail::run_op_kernel<R>([&] { return std::apply([&](auto&... a) { return op(a...); }, v); });
  };

  // schema: run on copies, then compare every argument with its value before the call
  values_t work = detail::copy_values<P...>(given);
  detail::tensor_list outs;
  try {
    outs = run(work);
  } catch (const error& e) {
    if (std::string(e.what()).find("alias") != std::string::npos) detail::opcheck_fail(name, "schema", e.what());
    throw;
  }
  {
    detail::tensor_list after;
    detail::op_layout lay;
    args_t::flatten(work, after, lay);
    for (std::size_t i = 0; i < flat.size(); ++i)
      if (flat[i].defined() && !layout.mutated[i] && !equal(after[i], flat[i]))
        detail::opcheck_fail(name, "schema",
                             "the kernel wrote tensor argument " + std::to_string(i) + " (parameter " +
                                 std::to_string(layout.position[i]) +
                                 "), which the schema does not declare mutable; take it as xf::tensor& (Tensor(a!)) "
                                 "or write into a copy");
  }

  // fake: the same shapes and dtypes on meta tensors
  if (!def->fake)
    detail::opcheck_fail(name, "fake", "no fake kernel is registered; add op.register_fake(fn) computing the outputs' "
                                       "shapes and dtypes (used on meta tensors and by make_fx)");
  {
    detail::tensor_list metas = flat;
    for (auto& t : metas)
      if (t.defined()) t = t.to(meta);
    values_t mv = args_t::with(given, metas);
    detail::tensor_list fouts;
    try {
      fouts = run(mv);
    } catch (const error& e) {
      detail::opcheck_fail(name, "fake", std::string("the fake kernel threw: ") + e.what());
    }
    if (fouts.size() != outs.size())
      detail::opcheck_fail(name, "fake", "the fake kernel returns " + std::to_string(fouts.size()) +
                                             " outputs but the kernel returns " + std::to_string(outs.size()));
    for (std::size_t k = 0; k < outs.size(); ++k)
      if (!(fouts[k].shape() == outs[k].shape()) || fouts[k].dtype() != outs[k].dtype()) {
        std::ostringstream os;
        os << "output " << k << ": the fake kernel gives shape " << fouts[k].shape() << " and dtype " << fouts[k].dtype()
           << " but the kernel gives " << outs[k].shape() << " and " << outs[k].dtype();
        detail::opcheck_fail(name, "fake", os.str());
      }
  }

  // autograd: differentiable inputs and outputs need a formula
  std::vector<std::size_t> diff;  // flat slots to differentiate
  for (std::size_t i = 0; i < flat.size(); ++i)
    if (flat[i].defined() && is_floating(flat[i].dtype()) && !layout.mutated[i]) diff.push_back(i);
  bool float_out = false;
  for (const auto& o : outs) float_out = float_out || (o.defined() && is_floating(o.dtype()));
  if (diff.empty() || !float_out) return;
  if (!def->backward)
    detail::opcheck_fail(name, "autograd", "the op has floating tensor inputs and outputs but no derivative formula; "
                                           "register one with op.register_autograd(backward, setup_context)");

  // gradcheck: vjp and jvp against central differences
  std::vector<tensor> xs;
  bool single = false;
  for (std::size_t i : diff) {
    xs.push_back(detail::deep_copy(flat[i]));
    single = single || flat[i].dtype() == f32;
  }
  auto f = [&](const std::vector<tensor>& v) {
    detail::tensor_list slots = flat;
    for (std::size_t k = 0; k < diff.size(); ++k) slots[diff[k]] = v[k];
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (layout.mutated[i]) slots[i] = detail::deep_copy(slots[i]);
    values_t call_args = args_t::with(given, slots);
    std::vector<tensor> parts;
    for (const auto& o : run(call_args))
      if (o.defined() && is_floating(o.dtype())) parts.push_back(o.reshape({-1}));
    return parts.size() == 1 ? parts[0] : cat(parts, 0);
  };
  const detail::fd_tolerances tol = single ? detail::fd_tolerances{1e-3, 1e-2, 1e-2} : detail::fd_tolerances{};
  std::string why;
  bool ok = false;
  try {
    ok = detail::fd_check(f, xs, tol, why);
  } catch (const error& e) {
    detail::opcheck_fail(name, "gradcheck", std::string("differentiating the op threw: ") + e.what());
  }
  if (!ok) detail::opcheck_fail(name, "gradcheck", why);
}

}  // namespace xfunc
