// DLPack against a real producer and consumer: libtorch's at::toDLPack / at::fromDLPack (built
// only where CMake finds Torch; torch 1.13 speaks DLPack 0.6 and has no bool over DLPack).
#include <ATen/DLConvertor.h>
#include <torch/torch.h>
// libtorch brings glog, whose CHECK(cond) aborts the process; the tests want Catch2's.
#undef CHECK
#include <catch2/catch.hpp>

#include <xfunc/dlpack.hpp>
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Contains;

namespace {

const void* first_element(const xf::tensor& t) {
  DLManagedTensor* m = xf::to_dlpack(t);
  const void* p = m->dl_tensor.data;
  m->deleter(m);
  return p;
}

/// Element-by-element comparison through each library's own indexing.
template <class T>
bool same_values(const xf::tensor& x, const torch::Tensor& t) {
  if (x.dim() != t.dim()) return false;
  for (std::int64_t d = 0; d < x.dim(); ++d)
    if (x.size(d) != t.size(d)) return false;
  const xf::tensor xc = x.contiguous();
  const torch::Tensor tc = t.contiguous();
  const auto xs = xf::to_xtensor<T>(xc);
  const T* tp = tc.data_ptr<T>();
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (xs.data()[i] != tp[i]) return false;
  return true;
}

}  // namespace

TEST_CASE("xfunc → torch: at::fromDLPack views our buffer", "[dlpack][torch]") {
  SECTION("float64, contiguous") {
    xf::tensor x = xf::randn({3, 4}, xf::f64);
    torch::Tensor t = at::fromDLPack(xf::to_dlpack(x));
    CHECK(t.scalar_type() == torch::kFloat64);
    CHECK(t.data_ptr() == first_element(x));
    CHECK(same_values<double>(x, t));
    const xf::tensor before = x.clone();
    t.mul_(2.0);  // torch writes, we see it
    CHECK(xf::equal(x, before * 2.0));
  }
  SECTION("float32, a transposed slice keeps its strides") {
    const xf::tensor base = xf::randn({5, 6});
    const xf::tensor v = base.narrow(1, 1, 4).t();  // [4, 5], strides (1, 6)
    torch::Tensor t = at::fromDLPack(xf::to_dlpack(v));
    CHECK(t.scalar_type() == torch::kFloat32);
    CHECK(t.stride(0) == 1);
    CHECK(t.stride(1) == 6);
    CHECK(t.data_ptr() == first_element(v));
    CHECK(same_values<float>(v, t));
  }
  SECTION("int64, and torch keeps our storage alive after our handle dies") {
    torch::Tensor t;
    {
      const xf::tensor x = xf::arange(0, 30, 3, xf::i64);
      t = at::fromDLPack(xf::to_dlpack(x));
    }
    CHECK(t.scalar_type() == torch::kInt64);
    CHECK(t.sum().item<std::int64_t>() == 135);
  }
}

TEST_CASE("torch → xfunc: from_dlpack views torch's buffer", "[dlpack][torch]") {
  SECTION("float64, a strided view") {
    torch::Tensor t = torch::randn({6, 8}, torch::kFloat64).slice(1, 2, 7).t();  // [5, 6], strides (1, 8)
    xf::tensor x = xf::from_dlpack(at::toDLPack(t));
    CHECK(x.dtype() == xf::f64);
    CHECK((x.strides() == xf::shape_t{1, 8}));
    CHECK(first_element(x) == t.data_ptr());
    CHECK(same_values<double>(x, t));
    x.mul_(xf::scalar(-1.0));  // we write, torch sees it
    CHECK(same_values<double>(x, t));
    CHECK(t.sum().item<double>() == Approx(xf::sum(x).item<double>()));
  }
  SECTION("float32 and int64") {
    const torch::Tensor f = torch::rand({7}, torch::kFloat32);
    CHECK(same_values<float>(xf::from_dlpack(at::toDLPack(f)), f));
    const torch::Tensor i = torch::arange(12, torch::kInt64).reshape({3, 4});
    CHECK(same_values<std::int64_t>(xf::from_dlpack(at::toDLPack(i)), i));
  }
  SECTION("an offset view: torch exports data at the first element") {
    const torch::Tensor t = torch::arange(20, torch::kFloat64).slice(0, 5, 15, 2);
    const xf::tensor x = xf::from_dlpack(at::toDLPack(t));
    CHECK(xf::equal(x, xf::tensor{5.0, 7.0, 9.0, 11.0, 13.0}));
  }
  SECTION("we keep torch's storage alive after its handle dies") {
    xf::tensor x;
    {
      const torch::Tensor t = torch::full({1000}, 1.5, torch::kFloat64);
      x = xf::from_dlpack(at::toDLPack(t));
    }
    CHECK(xf::sum(x).item<double>() == 1500.0);
  }
  SECTION("differentiating and vmapping a torch-owned tensor") {
    const torch::Tensor t = torch::randn({4, 3}, torch::kFloat64);
    const xf::tensor x = xf::from_dlpack(at::toDLPack(t));
    const xf::tensor g = xf::grad([](const xf::tensor& a) { return xf::sum(xf::sin(a)); })(x);
    CHECK(xf::allclose(g, xf::from_dlpack(at::toDLPack(t.cos()))));
    CHECK(xf::allclose(xf::vmap([](const xf::tensor& a) { return xf::dot(a, a); })(x), xf::sum(x * x, {1})));
  }
}

TEST_CASE("round trips keep one buffer", "[dlpack][torch]") {
  const torch::Tensor t = torch::randn({3, 5}, torch::kFloat64);
  const torch::Tensor back = at::fromDLPack(xf::to_dlpack(xf::from_dlpack(at::toDLPack(t))));
  CHECK(back.data_ptr() == t.data_ptr());
  const xf::tensor x = xf::randn({4, 2}, xf::f64);
  const xf::tensor xback = xf::from_dlpack(at::toDLPack(at::fromDLPack(xf::to_dlpack(x))));
  CHECK(first_element(xback) == first_element(x));
  CHECK(xf::equal(xback, x));
}

TEST_CASE("what torch 1.13 cannot exchange", "[dlpack][torch]") {
  // torch 1.13 refuses bool over DLPack; an int32 export is refused on our side with "dlpack".
  CHECK_THROWS(at::toDLPack(torch::ones({2}, torch::kBool)));
  DLManagedTensor* m = at::toDLPack(torch::ones({2}, torch::kInt32));
  CHECK_THROWS_WITH(xf::from_dlpack(m), Contains("unsupported dlpack dtype"));
  m->deleter(m);  // still ours after the failed import
}
