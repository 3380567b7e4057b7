// Compile-fail check: built with -DXFUNC_CF_FAIL it must fail with the message below;
// built without it (the corrected twin) it must compile.
// expect: xf::autograd::function<Derived>::apply: Derived defines both vmap and generate_vmap_rule
#include <array>
#include <optional>
#include <utility>
#include <xfunc/xfunc.hpp>
namespace xf = xfunc;
namespace cf_function_vmap_and_generate {
struct twice : xf::autograd::function<twice> {
  static xf::tensor forward(const xf::tensor& x) { return x * 2.0; }
  static void setup_context(xf::autograd::context&, const std::tuple<xf::tensor>&, const xf::tensor&) {}
  static xf::tensor backward(xf::autograd::context&, const xf::tensor& g) { return g * 2.0; }
  static std::pair<xf::tensor, std::optional<std::int64_t>> vmap(const xf::vmap_info&,
                                                                 const std::array<std::optional<std::int64_t>, 1>& in_dims,
                                                                 const xf::tensor& x) {
    return {x * 2.0, in_dims[0]};
  }
#ifdef XFUNC_CF_FAIL
  static constexpr bool generate_vmap_rule = true;
#endif
};
}  // namespace cf_function_vmap_and_generate
int main() {
  xf::tensor x{1.0, 2.0};
  // a plain statement: the static_assert is the only error (no follow-up on the result)
  (void)cf_function_vmap_and_generate::twice::apply(x);
  return 0;
}
