#pragma once
/// \file
/// xf::autograd::function<Derived>: a function with its own derivative rules (backward, jvp,
/// vmap), honoured under every composition of transforms; and single_level_function, the form a
/// higher-order op's grad rule uses to state its derivative at one layer.
#include <array>
#include <atomic>
#include <cxxabi.h>
#include <cstdlib>
#include <optional>
#include <tuple>
#include <type_traits>

#include <xfunc/core/diagnostics.hpp>
#include <xfunc/core/pytree.hpp>
#include <xfunc/extend/dynamic_op.hpp>

namespace xfunc {
namespace detail {

inline std::string demangled(const char* mangled) {
  int status = 0;
  char* s = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string r = status == 0 && s ? s : mangled;
  std::free(s);
  return r;
}

template <class T>
constexpr bool is_tensor_arg_v = std::is_same_v<std::remove_cvref_t<T>, tensor>;

/// Outputs of custom functions: a tensor or a std::tuple of tensors.
template <class Out>
constexpr bool valid_function_output() {
  if constexpr (std::is_same_v<Out, tensor>) return true;
  else if constexpr (is_std_tuple<Out>::value)
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::is_same_v<std::remove_cvref_t<std::tuple_element_t<I, Out>>, tensor> && ...);
    }(std::make_index_sequence<std::tuple_size_v<Out>>{});
  else return false;
}
template <class Out>
constexpr std::size_t output_count() {
  if constexpr (std::is_same_v<Out, tensor>) return 1;
  else return std::tuple_size_v<Out>;
}
template <class Out>
tensor_list flatten_output(const Out& o) {
  if constexpr (std::is_same_v<Out, tensor>) return {o};
  else return std::apply([](const auto&... t) { return tensor_list{t...}; }, o);
}
template <class Out>
Out unflatten_output(const tensor_list& ts) {
  if constexpr (std::is_same_v<Out, tensor>) return ts[0];
  else
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return Out{ts[I]...}; }(
        std::make_index_sequence<std::tuple_size_v<Out>>{});
}

/// OutDims of a vmap rule (std::optional<int64_t>, or a std::tuple of them) as a flat list.
template <class D>
std::vector<std::int64_t> flatten_out_dims(const D& d) {
  if constexpr (is_std_tuple<D>::value)
    return std::apply([](const auto&... e) { return std::vector<std::int64_t>{e ? std::int64_t{*e} : no_bdim...}; }, d);
  else return {d ? std::int64_t{*d} : no_bdim};
}

/// Whether D asks for a generated vmap rule (`static constexpr bool generate_vmap_rule = true`).
template <class D>
constexpr bool generates_vmap_rule() {
  if constexpr (requires { D::generate_vmap_rule; }) return static_cast<bool>(D::generate_vmap_rule);
  else return false;
}

/// Positions of the tensor parameters among Args.
template <class... Args>
constexpr auto tensor_positions() {
  std::array<std::size_t, (std::size_t{is_tensor_arg_v<Args>} + ... + 0)> pos{};
  std::size_t k = 0, i = 0;
  ((is_tensor_arg_v<Args> ? (void)(pos[k++] = i) : (void)0, ++i), ...);
  return pos;
}

/// One call of a custom function: its arguments, and Derived's rules applied to flat tensor lists.
template <class Derived, class... Args>
struct function_call final : dyn_call {
  using Out = std::remove_cvref_t<decltype(Derived::forward(std::declval<const Args&>()...))>;
  static constexpr auto tpos = tensor_positions<Args...>();
  static constexpr std::size_t n_out = output_count<Out>();

  // The non-tensor arguments; the tensor slots are left empty (`with` fills them): holding the
  // caller's wrappers here would make a cycle once mark_dirty rebinds an input to this call's node.
  std::tuple<Args...> args;
  explicit function_call(std::tuple<Args...> a) : args(std::move(a)) {
    [&]<std::size_t... K>(std::index_sequence<K...>) { ((std::get<tpos[K]>(args) = tensor()), ...); }(
        std::make_index_sequence<tpos.size()>{});
  }

  const std::string& name() const override {
    static const std::string n = [] {
      if constexpr (requires { Derived::name; }) return std::string(Derived::name);
      else return demangled(typeid(Derived).name());
    }();
    return n;
  }
  bool opaque() const override { return false; }
  std::size_t position(std::size_t i) const override { return tpos[i]; }
  bool has_backward() const override { return requires { &Derived::backward; }; }
  bool has_jvp() const override { return requires { &Derived::jvp; }; }
  batching batch_kind() const override {
    if constexpr (requires { &Derived::vmap; }) return batching::rule;
    else return generates_vmap_rule<Derived>() ? batching::generated : batching::none;
  }

  /// The arguments with the tensors replaced by `in` (in flat order).
  std::tuple<Args...> with(std::span<const tensor> in) const {
    std::tuple<Args...> r = args;
    [&]<std::size_t... K>(std::index_sequence<K...>) { ((std::get<tpos[K]>(r) = in[K]), ...); }(
        std::make_index_sequence<tpos.size()>{});
    return r;
  }
  /// A call of Derived with `args`, and its tensor arguments as a flat list.
  static std::pair<dyn_call_ptr, tensor_list> make(const Args&... args) {
    std::tuple<Args...> a{args...};
    tensor_list flat = [&]<std::size_t... K>(std::index_sequence<K...>) { return tensor_list{std::get<tpos[K]>(a)...}; }(
        std::make_index_sequence<tpos.size()>{});
    return {detail::make_pooled<function_call>(std::move(a)), std::move(flat)};
  }

  tensor_list forward(std::span<const tensor> in) const override {
    return flatten_output(std::apply([](const auto&... a) { return Derived::forward(a...); }, with(in)));
  }
  void setup(autograd::context& ctx, std::span<const tensor> in, const tensor_list& outs) const override {
    Derived::setup_context(ctx, with(in), unflatten_output<Out>(outs));
  }
  tensor_list backward(autograd::context& ctx, const tensor_list& grads) const override {
    if constexpr (requires { &Derived::backward; }) {
      auto r = [&]<std::size_t... I>(std::index_sequence<I...>) { return Derived::backward(ctx, grads[I]...); }(
          std::make_index_sequence<n_out>{});
      tensor_list g = flatten_output(r);
      if (g.size() == tpos.size()) return g;
      tensor_list picked(tpos.size());  // one gradient per argument: keep the tensor ones
      for (std::size_t k = 0; k < tpos.size(); ++k) picked[k] = g[tpos[k]];
      return picked;
    } else {
      fail_no_formula(*this, "xf::grad");
    }
  }
  tensor_list jvp(autograd::context& ctx, const tensor_list& tangents) const override {
    if constexpr (requires { &Derived::jvp; }) {
      return flatten_output([&]<std::size_t... K>(std::index_sequence<K...>) {
        return Derived::jvp(ctx, tangents[K]...);
      }(std::make_index_sequence<tpos.size()>{}));
    } else {
      fail_no_formula(*this, "xf::jvp");
    }
  }
  std::pair<tensor_list, std::vector<std::int64_t>> batch(std::span<const tensor> values,
                                                          std::span<const std::int64_t> bdims,
                                                          const vmap_info& info) const override {
    if constexpr (requires { &Derived::vmap; }) {
      std::array<std::optional<std::int64_t>, sizeof...(Args)> in_dims{};
      for (std::size_t k = 0; k < tpos.size(); ++k)
        if (bdims[k] != no_bdim) in_dims[tpos[k]] = bdims[k];
      auto [out, out_dims] = std::apply(
          [&](const auto&... a) { return Derived::vmap(info, std::as_const(in_dims), a...); }, with(values));
      return {flatten_output(out), flatten_out_dims(out_dims)};
    } else {
      return dyn_call::batch(values, bdims, info);
    }
  }
};

/// const tensor& for every I (a struct, not an alias: nvcc's host-side rewrite drops the pack
/// from an alias that ignores its parameter).
template <std::size_t>
struct tensor_ref {
  using type = const tensor&;
};
template <class Derived, class Seq>
struct backward_result;
template <class Derived, std::size_t... I>
struct backward_result<Derived, std::index_sequence<I...>> {
  using type = std::remove_cvref_t<decltype(Derived::backward(std::declval<autograd::context&>(),
                                                              std::declval<typename tensor_ref<I>::type>()...))>;
};

template <class Derived, class... Args>
constexpr bool function_checks() {
  static_assert(requires { &Derived::setup_context; }, XFUNC_MSG_FUNCTION_SETUP_CONTEXT);
  constexpr bool manual = requires { &Derived::vmap; };
  constexpr bool generated = generates_vmap_rule<Derived>();  // (= false beside a vmap rule is allowed, as in torch)
  static_assert(!(manual && generated), XFUNC_MSG_FUNCTION_VMAP_BOTH);
  using Out = std::remove_cvref_t<decltype(Derived::forward(std::declval<const Args&>()...))>;
  static_assert(valid_function_output<Out>(), XFUNC_MSG_FUNCTION_OUTPUT);
  if constexpr (requires { &Derived::backward; } && valid_function_output<Out>()) {
    using R = typename backward_result<Derived, std::make_index_sequence<output_count<Out>()>>::type;
    constexpr std::size_t n_tensors = (std::size_t{is_tensor_arg_v<Args>} + ... + 0);
    constexpr bool ok = valid_function_output<R>() &&
                        (output_count<R>() == n_tensors || output_count<R>() == sizeof...(Args));
    static_assert(ok, XFUNC_MSG_FUNCTION_BACKWARD_ARITY);
    return requires { &Derived::setup_context; } && !(manual && generated) && ok;
  } else {
    return requires { &Derived::setup_context; } && !(manual && generated) && valid_function_output<Out>();
  }
}

template <class T>
bool plain_arg(const T& a) {
  if constexpr (is_tensor_arg_v<T>) return !a.impl() || a.impl()->is_dense();
  else return true;
}

inline std::atomic<bool> single_level_allowed{false};
}  // namespace detail

namespace autograd {

/// Base of a custom function: Derived gives static forward and setup_context, and optionally
/// backward, jvp, and vmap or generate_vmap_rule (API.md §4.2). Call it with Derived::apply.
template <class Derived>
struct function {
  /// Calls Derived::forward(args...) with Derived's rules applied under every active transform.
  template <class... Args>
  static auto apply(const Args&... args) {
    if constexpr (detail::function_checks<Derived, Args...>()) {
      using call_t = detail::function_call<Derived, Args...>;
      using Out = typename call_t::Out;
      // no transform anywhere: just the forward (its ops are traced one by one by make_fx)
      if (detail::current_stack().layers.empty() && (detail::plain_arg(args) && ...)) return Derived::forward(args...);
      auto [call, flat] = call_t::make(args...);
      return detail::unflatten_output<Out>(detail::dispatch_dyn(call, flat));
    }
  }
};

/// Allows single_level_function outside higher-order op grad rules (a debugging switch; off by
/// default).
inline void set_single_level_function_allowed(bool on) { detail::single_level_allowed.store(on); }

/// Like function, but applies to the active grad layer only: forward runs with that layer
/// hidden and backward is recorded on it. Meant for a higher-order op's grad rule.
template <class Derived>
struct single_level_function {
  /// Calls Derived::forward(args...) at the active grad layer only, recording Derived::backward on
  /// it (throws "single-level" outside a higher-order op's grad rule).
  template <class... Args>
  static auto apply(const Args&... args) {
    if constexpr (detail::function_checks<Derived, Args...>()) {
      using call_t = detail::function_call<Derived, Args...>;
      using Out = typename call_t::Out;
      if (detail::tls_in_hop_grad_rule == 0 && !detail::single_level_allowed.load())
        detail::fail("xf::autograd::single_level_function: applied outside a higher-order op's grad rule (single-level); ",
                     "use xf::autograd::function, or call xf::autograd::set_single_level_function_allowed(true) to debug");
      const auto& ls = detail::current_stack().layers;
      if (ls.empty() || ls.back()->kind != transform_kind::grad)
        detail::fail("xf::autograd::single_level_function: needs an active grad layer on top of the stack (single-level)");
      auto [call, flat] = call_t::make(args...);
      detail::layer_ptr L = ls.back();
      return detail::unflatten_output<Out>(detail::dyn_grad_rule(L, call, flat, /*single_level=*/true));
    }
  }
};

}  // namespace autograd
}  // namespace xfunc
