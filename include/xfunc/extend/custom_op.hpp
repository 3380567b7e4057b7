#pragma once
/// \file
/// xf::custom_op: an opaque operator declared by its C++ signature, with per-device kernels, a
/// fake kernel, an autograd formula and a vmap rule registered at run time (API.md §4.1).
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <mutex>
#include <atomic>
#include <typeinfo>

#include <xfunc/core/pytree.hpp>
#include <xfunc/extend/dynamic_op.hpp>
#include <xfunc/schema/arg_names.hpp>
#include <xfunc/schema/match.hpp>
#include <xfunc/schema/signature.hpp>

namespace xfunc {
namespace detail {

/// Everything registered for one custom op; replaced as a whole (copy on write) by every
/// registration, so a call works on one consistent definition.
template <class R, class... P>
struct custom_op_def {
  using fn_t = std::function<R(P...)>;
  using values_t = std::tuple<std::remove_cvref_t<P>...>;
  std::string name, schema;
  fn_t fn;                              // the kernel for every device without its own
  std::map<device_kind, fn_t> kernels;  // register_kernel
  fn_t fake;                            // register_fake
  // register_autograd, erased to flat tensor lists
  std::function<void(autograd::context&, const values_t&, const tensor_list& outs)> setup;
  std::function<tensor_list(autograd::context&, const tensor_list& grads)> backward;
  // register_vmap, erased: outputs and their batch dims from the values and their in_dims
  std::function<std::pair<tensor_list, std::vector<std::int64_t>>(
      const vmap_info&, const std::array<std::optional<std::int64_t>, sizeof...(P)>&, values_t&)>
      vmap;
};

/// One registered definition and its type (the handle's signature).
struct custom_op_entry {
  std::shared_ptr<const void> def;
  const std::type_info* type;
};

/// A name's entry in the registry; handles keep it, so re-registration reaches them. Calls read
/// the current definition with one atomic load (no lock); registrations, under the lock, add a
/// new one. Old definitions are kept: a call in flight, or a recorded node, may still use one.
struct custom_op_slot {
  std::mutex m;
  std::atomic<const custom_op_entry*> current{nullptr};
  std::vector<std::unique_ptr<custom_op_entry>> history;

  void publish(std::shared_ptr<const void> def, const std::type_info& type) {  // under m
    history.push_back(std::make_unique<custom_op_entry>(custom_op_entry{std::move(def), &type}));
    current.store(history.back().get(), std::memory_order_release);
  }
};

inline std::shared_ptr<custom_op_slot> custom_op_slot_for(const std::string& name) {
  static std::mutex m;
  static std::map<std::string, std::shared_ptr<custom_op_slot>> registry;
  std::lock_guard<std::mutex> lock(m);
  auto& s = registry[name];
  if (!s) s = std::make_shared<custom_op_slot>();
  return s;
}

/// Output of a custom op as a flat list, and back.
template <class R>
tensor_list flatten_op_output(R&& r) {
  using V = std::remove_cvref_t<R>;
  if constexpr (std::is_same_v<V, tensor>) return {r};
  else if constexpr (std::is_same_v<V, std::vector<tensor>>) return r;
  else return std::apply([](const auto&... t) { return tensor_list{t...}; }, r);
}
template <class R>
R unflatten_op_output(const tensor_list& ts) {
  if constexpr (std::is_void_v<R>) return;
  else if constexpr (std::is_same_v<R, tensor>) return ts.at(0);
  else if constexpr (std::is_same_v<R, std::vector<tensor>>) return ts;
  else
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return R{ts.at(I)...}; }(
        std::make_index_sequence<std::tuple_size_v<R>>{});
}
template <class R, class F>
tensor_list run_op_kernel(F&& f) {
  if constexpr (std::is_void_v<R>) {
    f();
    return {};
  } else {
    return flatten_op_output(f());
  }
}

/// The flat tensor list of a custom op's arguments: where each slot comes from.
struct op_layout {
  small_list<std::size_t, 4> position;  // per slot: parameter index
  small_list<unsigned char, 4> mutated;  // per slot: Tensor(a!) (a byte: no std::vector<bool>)
};

template <class... P>
struct op_args {
  using values_t = std::tuple<std::remove_cvref_t<P>...>;
  template <std::size_t I>
  static constexpr schema::arg_kind kind = schema::kind_of<std::tuple_element_t<I, std::tuple<P...>>>();

  /// Calls f(tensor, parameter index, mutated) for every tensor slot of v, in slot order
  /// (an undefined tensor for an empty optional).
  template <class F>
  static void for_each_tensor(const values_t& v, F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            constexpr auto k = kind<I>;
            const auto& a = std::get<I>(v);
            if constexpr (k == schema::arg_kind::tensor || k == schema::arg_kind::mutable_tensor)
              f(a, I, k == schema::arg_kind::mutable_tensor);
            else if constexpr (k == schema::arg_kind::optional_tensor) f(a ? *a : tensor(), I, false);
            else if constexpr (k == schema::arg_kind::tensor_list)
              for (const auto& t : a) f(t, I, false);
          }(),
          ...);
    }(std::index_sequence_for<P...>{});
  }
  template <class List>
  static void flatten(const values_t& v, List& flat, op_layout& lay) {
    for_each_tensor(v, [&](const tensor& t, std::size_t pos, bool mutated) {
      flat.push_back(t);
      lay.position.push_back(pos);
      lay.mutated.push_back(mutated);
    });
  }
  /// v with every tensor slot emptied (list sizes kept), for storing next to a flat list.
  static values_t without_tensors(values_t v) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            constexpr auto k = kind<I>;
            auto& a = std::get<I>(v);
            if constexpr (k == schema::arg_kind::tensor || k == schema::arg_kind::mutable_tensor) a = tensor();
            else if constexpr (k == schema::arg_kind::optional_tensor) {
              if (a) a = tensor();
            } else if constexpr (k == schema::arg_kind::tensor_list)
              for (auto& t : a) t = tensor();
          }(),
          ...);
    }(std::index_sequence_for<P...>{});
    return v;
  }
  /// v with its tensors replaced by `flat` (in slot order).
  static values_t with(values_t v, std::span<const tensor> flat) {
    std::size_t s = 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            constexpr auto k = kind<I>;
            auto& a = std::get<I>(v);
            if constexpr (k == schema::arg_kind::tensor || k == schema::arg_kind::mutable_tensor) a = flat[s++];
            else if constexpr (k == schema::arg_kind::optional_tensor) {
              if (flat[s].defined()) a = flat[s];
              else a = std::nullopt;
              ++s;
            } else if constexpr (k == schema::arg_kind::tensor_list)
              for (auto& t : a) t = flat[s++];
          }(),
          ...);
    }(std::index_sequence_for<P...>{});
    return v;
  }
};

/// One call of a custom op (NOTE: [Runtime-rule calls]).
template <class R, class... P>
struct custom_op_call final : dyn_call {
  using def_t = custom_op_def<R, P...>;
  using args_t = op_args<P...>;
  const def_t* def;  // kept alive by the registry (custom_op_slot::history)
  typename def_t::values_t values;
  op_layout layout;

  const std::string& name() const override { return def->name; }
  bool opaque() const override { return true; }
  bool mutates(std::size_t i) const override { return layout.mutated[i]; }
  std::size_t position(std::size_t i) const override { return layout.position[i]; }
  bool has_backward() const override { return static_cast<bool>(def->backward); }
  bool has_jvp() const override { return false; }
  batching batch_kind() const override { return def->vmap ? batching::rule : batching::loop; }

  tensor_list run(const typename def_t::fn_t& k, std::span<const tensor> in) const {
    auto v = args_t::with(values, in);
    return run_op_kernel<R>([&] { return std::apply(k, v); });
  }
  /// The kernel for the device of the first tensor argument (null on meta: the fake kernel).
  const typename def_t::fn_t* kernel_for(std::span<const tensor> in) const {
    device_kind dev = device_kind::cpu;
    for (const auto& t : in)
      if (t.defined()) {
        dev = t.device().kind;
        break;
      }
    if (dev == device_kind::meta) return nullptr;
    auto it = def->kernels.find(dev);
    return it != def->kernels.end() ? &it->second : &def->fn;
  }
  tensor_list forward(std::span<const tensor> in) const override {
    const auto* k = kernel_for(in);
    return k ? run(*k, in) : fake(in);
  }
  tensor forward_single(std::span<const tensor> in) const override {
    if constexpr (std::is_same_v<R, tensor>) {
      const auto* k = kernel_for(in);
      if (!k && !def->fake) return tensor();
      auto v = args_t::with(values, in);  // an lvalue: a tensor& parameter binds to it
      return std::apply(k ? *k : def->fake, v);
    } else {
      return {};
    }
  }
  tensor_list fake(std::span<const tensor> in) const override {
    if (!def->fake)
      fail(def->name, ": called on meta tensors (or traced by make_fx) but has no fake kernel; register one with ",
           "op.register_fake(fn) computing the outputs' shapes and dtypes");
    return run(def->fake, in);
  }
  void setup(autograd::context& ctx, std::span<const tensor> in, const tensor_list& outs) const override {
    if (def->setup) def->setup(ctx, args_t::with(values, in), outs);
  }
  tensor_list backward(autograd::context& ctx, const tensor_list& grads) const override {
    tensor_list g = def->backward(ctx, grads);
    if (g.size() != layout.position.size())
      fail(def->name, ": the backward formula returned ", g.size(), " gradients but the op has ", layout.position.size(),
           " tensor inputs; return one per tensor input (an undefined tensor means zero)");
    return g;
  }
  tensor_list jvp(autograd::context&, const tensor_list&) const override { fail_no_formula(*this, "xf::jvp"); }
  std::pair<tensor_list, std::vector<std::int64_t>> batch(std::span<const tensor> in, std::span<const std::int64_t> bdims,
                                                          const vmap_info& info) const override {
    // one in_dim per parameter: a list whose elements are batched differently is moved to dim 0
    std::array<std::optional<std::int64_t>, sizeof...(P)> in_dims{};
    std::array<std::int64_t, sizeof...(P)> per_param;
    per_param.fill(no_bdim);
    std::array<bool, sizeof...(P)> mixed{};
    for (std::size_t s = 0; s < in.size(); ++s) {
      auto& d = per_param[layout.position[s]];
      if (bdims[s] == no_bdim) continue;
      if (d != no_bdim && d != bdims[s]) mixed[layout.position[s]] = true;
      d = bdims[s];
    }
    small_list<tensor, 4> phys(in.size());
    for (std::size_t s = 0; s < in.size(); ++s) phys[s] = in[s];
    for (std::size_t s = 0; s < in.size(); ++s) {
      const std::size_t p = layout.position[s];
      if (per_param[p] == no_bdim) continue;
      const bool is_list = std::count(layout.position.begin(), layout.position.end(), p) > 1;
      if (!is_list && !mixed[p]) continue;
      // lists: every element batched at dim 0 (an unbatched one is expanded)
      if (bdims[s] == no_bdim) {
        shape_t sh = in[s].shape();
        sh.insert(std::size_t{0}, info.batch_size());
        phys[s] = in[s].unsqueeze(0).expand(sh);
      } else {
        phys[s] = in[s].movedim(bdims[s], 0);
      }
      per_param[p] = 0;
    }
    for (std::size_t p = 0; p < sizeof...(P); ++p)
      if (per_param[p] != no_bdim) in_dims[p] = per_param[p];
    auto v = args_t::with(values, phys);
    return def->vmap(info, in_dims, v);
  }
};

}  // namespace detail

/// A handle to a registered custom op (see xf::custom_op). Copies share the registration; a
/// later registration of the same name replaces the definition every handle sees.
template <class Sig>
class custom_op_handle;

/// The handle of a custom op whose kernel has signature R(P...): call it like the kernel, and
/// register kernels, a fake kernel and rules on it.
template <class R, class... P>
class custom_op_handle<R(P...)> {
  using def_t = detail::custom_op_def<R, P...>;
  using values_t = typename def_t::values_t;

 public:
  /// A handle to a registration slot (library use: xf::custom_op makes handles).
  custom_op_handle(std::shared_ptr<detail::custom_op_slot> slot) : slot_(std::move(slot)) {}

  /// The op's name, "ns::name".
  const std::string& name() const { return def()->name; }
  /// The schema inferred from the signature, e.g. "mylib::foo(Tensor a0, float a1) -> Tensor".
  const std::string& schema() const { return def()->schema; }

  /// Runs the op under whatever transforms are active.
  R operator()(P... args) const {
    const def_t* d = def();
    values_t values{std::forward<P>(args)...};  // moves by-value arguments, copies references
    // a Tensor (or Tensor[]) argument must be defined; an empty Tensor? is an undefined tensor
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            constexpr auto k = detail::op_args<P...>::template kind<I>;
            const auto& a = std::get<I>(values);
            if constexpr (k == detail::schema::arg_kind::tensor || k == detail::schema::arg_kind::mutable_tensor) {
              if (!a.defined())
                detail::fail(d->name, ": argument ", I, " is an undefined tensor (a default-constructed xf::tensor); "
                             "pass a tensor, or declare the parameter std::optional<xf::tensor> (Tensor?)");
            } else if constexpr (k == detail::schema::arg_kind::tensor_list) {
              for (const auto& t : a)
                if (!t.defined())
                  detail::fail(d->name, ": argument ", I, " holds an undefined tensor (a default-constructed xf::tensor); "
                               "every tensor of a Tensor[] must be defined");
            }
          }(),
          ...);
    }(std::index_sequence_for<P...>{});
    // an argument written in place must not be captured from outside a grad or jvp transform,
    // whatever the other arguments are (NOTE: [Tensors created inside transforms])
    bool plain = true, on_meta = false;
    detail::op_args<P...>::for_each_tensor(values, [&](const tensor& t, std::size_t, bool mutated) {
      if (mutated) detail::check_not_captured(t, d->name.c_str());
      plain = plain && (!t.impl() || t.impl()->is_dense());
      on_meta = on_meta || (t.impl() && t.device() == meta);
    });
    // no wrapper among the arguments and no trace: the kernel straight away, below every layer
    if (!detail::tls_trace && plain && !on_meta && d->kernels.empty()) {
      if (detail::current_stack().layers.empty()) return run_checked(*d, values);
      detail::hide_all_layers hide;  // e.g. the op called by its own vmap rule
      return run_checked(*d, values);
    }
    detail::small_list<tensor, 4> flat;
    detail::op_layout layout;
    detail::op_args<P...>::flatten(values, flat, layout);
    auto call = detail::make_pooled<detail::custom_op_call<R, P...>>();
    call->def = d;
    // the tensors travel in `flat`; the call keeps only the other arguments (no wrapper cycles)
    call->values = detail::op_args<P...>::without_tensors(std::move(values));
    call->layout = std::move(layout);
    detail::tensor_list outs = detail::dispatch_dyn(call, flat);
    return detail::unflatten_op_output<R>(outs);
  }

  /// Replaces the kernel for one device (xf::cpu or xf::cuda).
  template <class F>
  custom_op_handle& register_kernel(xfunc::device dev, F f) {
    update([&](def_t& d) { d.kernels[dev.kind] = std::move(f); });
    return *this;
  }
  /// The kernel used on meta tensors (shapes and dtypes only) and by make_fx.
  template <class F>
  custom_op_handle& register_fake(F f) {
    update([&](def_t& d) { d.fake = std::move(f); });
    return *this;
  }
  /// The derivative: setup_context(ctx, const std::tuple<Args...>& inputs, const Out& output) saves
  /// what backward(ctx, grad_outputs...) needs; backward returns one gradient per tensor input
  /// (a tensor, a std::vector<tensor> for a list input, or a std::tuple of these).
  template <class B, class S>
  custom_op_handle& register_autograd(B backward, S setup_context) {
    static_assert(!std::is_void_v<R>, "xf::custom_op: register_autograd needs an op that returns tensors");
    update([&](def_t& d) {
      d.setup = [s = std::move(setup_context)](autograd::context& ctx, const values_t& in, const detail::tensor_list& outs) {
        s(ctx, in, detail::unflatten_op_output<R>(outs));
      };
      d.backward = [b = std::move(backward)](autograd::context& ctx, const detail::tensor_list& grads) {
        auto r = [&] {
          if constexpr (std::is_same_v<R, std::vector<tensor>>) return b(ctx, grads);
          else if constexpr (std::is_same_v<R, tensor>) return b(ctx, grads[0]);
          else
            return [&]<std::size_t... I>(std::index_sequence<I...>) { return b(ctx, grads[I]...); }(
                std::make_index_sequence<std::tuple_size_v<R>>{});
        }();
        return flatten_gradients(r);
      };
    });
    return *this;
  }
  /// The batching rule: rule(const xf::vmap_info&, const std::array<std::optional<int64_t>, N>&
  /// in_dims, args...) -> std::pair<Out, OutDims>.
  template <class F>
  custom_op_handle& register_vmap(F rule) {
    static_assert(!std::is_void_v<R>, "xf::custom_op: register_vmap needs an op that returns tensors");
    update([&](def_t& d) {
      d.vmap = [rule = std::move(rule)](const vmap_info& info,
                                        const std::array<std::optional<std::int64_t>, sizeof...(P)>& in_dims,
                                        values_t& v) {
        auto [out, dims] = std::apply([&](auto&... a) { return rule(info, in_dims, a...); }, v);
        return std::pair{detail::flatten_op_output(out), flatten_dims(dims)};
      };
    });
    return *this;
  }

  /// The current definition (internal; used by xf::opcheck).
  const def_t* def() const {
    const detail::custom_op_entry* e = slot_->current.load(std::memory_order_acquire);
    if (*e->type != typeid(def_t))
      detail::fail("xf::custom_op: this handle's op was registered again with a different signature; use the new handle");
    return static_cast<const def_t*>(e->def.get());
  }

 private:
  /// The kernel on plain tensors, with the alias check of dyn_bottom.
  static R run_checked(const def_t& d, values_t& values) {
    if constexpr (std::is_void_v<R>) {
      std::apply(d.fn, values);
    } else {
      R r = std::apply(d.fn, values);
      if constexpr (std::is_same_v<R, tensor>) {  // checked in place: no list of the inputs
        if (!r.defined()) detail::fail_undefined_output(d.name, 0);
        std::size_t i = 0;
        detail::op_args<P...>::for_each_tensor(
            values, [&](const tensor& t, std::size_t, bool) { detail::check_output_not_input(d.name, t, i++, r, 0); });
      } else {
        detail::small_list<tensor, 4> in;
        detail::op_args<P...>::for_each_tensor(values, [&](const tensor& t, std::size_t, bool) { in.push_back(t); });
        detail::check_no_alias(d.name, in, detail::flatten_op_output(r));
      }
      return r;
    }
  }
  template <class U>
  void update(U&& change) {
    std::lock_guard<std::mutex> lock(slot_->m);
    auto d = std::make_shared<def_t>(*def());
    change(*d);
    slot_->publish(std::move(d), typeid(def_t));
  }
  template <class G>
  static void push_gradient(detail::tensor_list& out, const G& g) {
    if constexpr (std::is_same_v<G, tensor>) out.push_back(g);
    else if constexpr (std::is_same_v<G, std::optional<tensor>>) out.push_back(g ? *g : tensor());
    else out.insert(out.end(), g.begin(), g.end());  // std::vector<tensor>
  }
  template <class G>
  static detail::tensor_list flatten_gradients(const G& g) {
    detail::tensor_list out;
    if constexpr (detail::is_std_tuple<G>::value) std::apply([&](const auto&... e) { (push_gradient(out, e), ...); }, g);
    else push_gradient(out, g);
    return out;
  }
  template <class D>
  static std::vector<std::int64_t> flatten_dims(const D& d) {
    auto one = [](const std::optional<std::int64_t>& e) { return e ? *e : detail::no_bdim; };
    if constexpr (detail::is_std_tuple<D>::value)
      return std::apply([&](const auto&... e) { return std::vector<std::int64_t>{one(e)...}; }, d);
    else if constexpr (requires { d.begin(); }) {
      std::vector<std::int64_t> r;
      for (const auto& e : d) r.push_back(one(e));
      return r;
    } else
      return {one(d)};
  }

  std::shared_ptr<detail::custom_op_slot> slot_;
};

namespace detail {
template <class R, class Args>
struct custom_op_types;
template <class R, class... P>
struct custom_op_types<R, std::tuple<P...>> {
  using handle = custom_op_handle<R(P...)>;
  using def = custom_op_def<R, P...>;
};

template <class F>
auto make_custom_op(const std::string& name, F fn, const std::vector<std::string>& names) {
  using traits = schema::fn_traits<F>;
  using types = custom_op_types<typename traits::ret, typename traits::args>;
  auto def = std::make_shared<typename types::def>();
  def->name = name;
  def->schema = schema::infer_schema<F>(name, names);
  def->fn = std::move(fn);
  auto slot = custom_op_slot_for(name);
  {
    std::lock_guard<std::mutex> lock(slot->m);
    slot->publish(std::move(def), typeid(typename types::def));
  }
  return typename types::handle(slot);
}
}  // namespace detail

/// custom_op("ns::name", fn[, xf::arg_names(...)]): registers (or replaces) an opaque op whose
/// schema is inferred from fn's signature and whose kernel is fn; returns its handle.
template <class F>
auto custom_op(const std::string& name, F fn, const arg_names_t& names = {}) {
  if constexpr (detail::schema::check_signature<F>()) {
    return detail::make_custom_op(name, std::move(fn), names.names);
  }
}

/// custom_op<"ns::name(Type name, ...) -> Ret">(fn): the same with the schema written out. It is
/// parsed and checked against fn's signature at compile time (types, count, Tensor(a!) exactly
/// where fn takes xf::tensor&, return); the op's name and argument names come from it.
template <schema_literal Schema, class F>
auto custom_op(F fn) {
  if constexpr (detail::schema::check_schema_literal<Schema, F>()) {
    return detail::make_custom_op(detail::schema::schema_op_name<Schema>(), std::move(fn),
                                  detail::schema::schema_arg_names<Schema>());
  }
}

}  // namespace xfunc
