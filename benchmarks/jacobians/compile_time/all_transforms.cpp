// Compile-time benchmark (b): every transform instantiated on a 3-op function (sin, mul, sum
// for the scalar one; sin, mul, add for the vector one), for float and for double. Each element
// type gets its own function types, so each transform is instantiated twice.
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

namespace {

template <class T>
struct scalar_fn {  // R^n -> R: sum(sin(x) * x)
  xf::tensor operator()(const xf::tensor& x) const { return xf::sum(xf::sin(x) * x); }
};
template <class T>
struct vector_fn {  // R^n -> R^n: sin(x) * x + x
  xf::tensor operator()(const xf::tensor& x) const { return xf::sin(x) * x + x; }
};

template <class T>
double all_transforms() {
  const xf::dtype dt = std::is_same_v<T, float> ? xf::f32 : xf::f64;
  const xf::tensor x = xf::randn({5}, dt), v = xf::randn({5}, dt), xs = xf::randn({3, 5}, dt);
  const scalar_fn<T> f;
  const vector_fn<T> g;
  double acc = 0;
  auto use = [&](const xf::tensor& t) { acc += xf::sum(t).template item<double>(); };

  use(xf::grad(f)(x));
  use(xf::grad_and_value(f)(x).second);
  {
    auto [y, vjp_fn] = xf::vjp(g, x);
    use(y);
    use(std::get<0>(vjp_fn(v)));
  }
  {
    auto [y, t] = xf::jvp(g, std::tuple{x}, std::tuple{v});
    use(y);
    use(t);
  }
  {
    auto [y, jvp_fn] = xf::linearize(g, x);
    use(y);
    use(jvp_fn(v));
  }
  use(xf::jacrev(g)(x));
  use(xf::jacfwd(g)(x));
  use(xf::hessian(f)(x));
  use(xf::vmap(g)(xs));
  return acc;
}

}  // namespace

int main() { return all_transforms<float>() + all_transforms<double>() > 1e300 ? 1 : 0; }
