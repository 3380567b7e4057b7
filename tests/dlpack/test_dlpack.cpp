// DLPack: xf::to_dlpack / xf::from_dlpack against hand-built DLManagedTensors (test_dlpack_torch
// checks the same against libtorch where it is installed).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include <xfunc/dlpack.hpp>
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Contains;

namespace {

/// A producer's buffer, described by a hand-built DLManagedTensor whose deleter records the call.
template <class T>
struct producer {
  std::vector<T> data;
  std::vector<std::int64_t> shape, strides;
  DLManagedTensor managed{};
  int deleted = 0;

  producer(std::vector<T> values, std::vector<std::int64_t> shape_, std::vector<std::int64_t> strides_, DLDataType dt)
      : data(std::move(values)), shape(std::move(shape_)), strides(std::move(strides_)) {
    managed.dl_tensor.data = data.data();
    managed.dl_tensor.device = {kDLCPU, 0};
    managed.dl_tensor.ndim = static_cast<int>(shape.size());
    managed.dl_tensor.dtype = dt;
    managed.dl_tensor.shape = shape.data();
    managed.dl_tensor.strides = strides.empty() ? nullptr : strides.data();
    managed.dl_tensor.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) { ++static_cast<producer*>(self->manager_ctx)->deleted; };
  }
};

constexpr DLDataType f64_type{kDLFloat, 64, 1};
constexpr DLDataType f32_type{kDLFloat, 32, 1};
constexpr DLDataType i64_type{kDLInt, 64, 1};
constexpr DLDataType bool_type{6, 8, 1};  // DLPack 0.8's kDLBool

std::vector<double> iota(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return v;
}

const void* first_element(const xf::tensor& t) {
  return xf::detail::visit_dtype(t.dtype(), [&](auto tag) -> const void* {
    return t.impl()->template data<typename decltype(tag)::type>();
  });
}

}  // namespace

TEST_CASE("to_dlpack shares the buffer, with shape, strides and dtype", "[dlpack]") {
  const xf::tensor t = xf::arange(0, 12, 1, xf::f64).reshape({3, 4});
  DLManagedTensor* m = xf::to_dlpack(t);
  const DLTensor& dl = m->dl_tensor;
  CHECK(dl.device.device_type == kDLCPU);
  CHECK(dl.ndim == 2);
  CHECK(dl.shape[0] == 3);
  CHECK(dl.shape[1] == 4);
  CHECK(dl.strides[0] == 4);
  CHECK(dl.strides[1] == 1);
  CHECK(dl.dtype.code == kDLFloat);
  CHECK(dl.dtype.bits == 64);
  CHECK(dl.dtype.lanes == 1);
  CHECK(dl.byte_offset == 0);
  CHECK(dl.data == first_element(t));
  static_cast<double*>(dl.data)[5] = -1.0;  // the consumer writes: the tensor sees it
  CHECK(t.select(0, 1).select(0, 1).item<double>() == -1.0);
  m->deleter(m);
}

TEST_CASE("to_dlpack of views: data points at the first element, strides kept", "[dlpack]") {
  const xf::tensor base = xf::arange(0, 24, 1, xf::f32).reshape({4, 6});
  const xf::tensor v = base.narrow(0, 1, 2).narrow(1, 2, 3).t();  // [3, 2], strides (1, 6), offset 8
  DLManagedTensor* m = xf::to_dlpack(v);
  const DLTensor& dl = m->dl_tensor;
  CHECK(dl.dtype.code == kDLFloat);
  CHECK(dl.dtype.bits == 32);
  CHECK(dl.shape[0] == 3);
  CHECK(dl.shape[1] == 2);
  CHECK(dl.strides[0] == 1);
  CHECK(dl.strides[1] == 6);
  const auto* p = static_cast<const float*>(dl.data);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      CHECK(p[i * dl.strides[0] + j * dl.strides[1]] == v.select(0, i).select(0, j).item<float>());
  m->deleter(m);
}

TEST_CASE("to_dlpack keeps the storage alive until the consumer's deleter", "[dlpack]") {
  DLManagedTensor* m = nullptr;
  {
    const xf::tensor t = xf::arange(0, 100, 1, xf::f64) * 2.0;  // the only handle dies at the brace
    m = xf::to_dlpack(t);
  }
  const auto* p = static_cast<const double*>(m->dl_tensor.data);
  CHECK(p[0] == 0.0);
  CHECK(p[99] == 198.0);  // under ASan a freed buffer would be reported here
  m->deleter(m);
}

TEST_CASE("to_dlpack: every dtype, 0-d and empty tensors", "[dlpack]") {
  SECTION("int64") {
    const xf::tensor t{3, 4};
    DLManagedTensor* m = xf::to_dlpack(t);
    CHECK(m->dl_tensor.dtype.code == kDLInt);
    CHECK(m->dl_tensor.dtype.bits == 64);
    CHECK(static_cast<const std::int64_t*>(m->dl_tensor.data)[1] == 4);
    m->deleter(m);
  }
  SECTION("bool as DLPack 0.8's kDLBool, one byte per element") {
    const xf::tensor t{true, false, true};
    DLManagedTensor* m = xf::to_dlpack(t);
    CHECK(m->dl_tensor.dtype.code == 6);
    CHECK(m->dl_tensor.dtype.bits == 8);
    CHECK(static_cast<const bool*>(m->dl_tensor.data)[2]);
    m->deleter(m);
  }
  SECTION("0-d") {
    const xf::tensor t = xf::scalar(2.5);
    DLManagedTensor* m = xf::to_dlpack(t);
    CHECK(m->dl_tensor.ndim == 0);
    CHECK(*static_cast<const double*>(m->dl_tensor.data) == 2.5);
    m->deleter(m);
  }
  SECTION("empty") {
    const xf::tensor t = xf::zeros({0, 3});
    DLManagedTensor* m = xf::to_dlpack(t);
    CHECK(m->dl_tensor.shape[0] == 0);
    CHECK(m->dl_tensor.shape[1] == 3);
    const xf::tensor back = xf::from_dlpack(m);
    CHECK(back.shape() == xf::shape_t{0, 3});
  }
}

TEST_CASE("from_dlpack views the producer's memory and calls its deleter when the last view dies", "[dlpack]") {
  producer<double> prod(iota(6), {2, 3}, {3, 1}, f64_type);
  {
    xf::tensor x = xf::from_dlpack(&prod.managed);
    CHECK(x.shape() == xf::shape_t{2, 3});
    CHECK(x.dtype() == xf::f64);
    CHECK(first_element(x) == prod.data.data());
    CHECK(xf::equal(x, xf::arange(0, 6, 1, xf::f64).reshape({2, 3})));
    prod.data[4] = 40.0;  // the producer writes: the tensor sees it
    CHECK(x.select(0, 1).select(0, 1).item<double>() == 40.0);
    x.select(0, 0).add_(xf::scalar(100.0));  // we write: the producer sees it
    CHECK(prod.data[0] == 100.0);
    CHECK(prod.data[2] == 102.0);
    xf::tensor view = x.t();
    x = xf::tensor();
    CHECK(prod.deleted == 0);  // the view still holds the memory
    CHECK(view.select(0, 1).select(0, 1).item<double>() == 40.0);
    CHECK(xf::same_storage(view, view.narrow(0, 0, 1)));
  }
  CHECK(prod.deleted == 1);
}

TEST_CASE("from_dlpack keeps strides and honours byte_offset and compact (null) strides", "[dlpack]") {
  SECTION("column-major") {
    producer<double> prod(iota(6), {2, 3}, {1, 2}, f64_type);  // Fortran order
    const xf::tensor x = xf::from_dlpack(&prod.managed);
    CHECK(x.strides() == xf::shape_t{1, 2});
    CHECK_FALSE(x.is_contiguous());
    CHECK(xf::equal(x, xf::arange(0, 6, 1, xf::f64).reshape({3, 2}).t()));
    CHECK(xf::equal(xf::matmul(x, x.t()), xf::matmul(x.contiguous(), x.contiguous().t())));
  }
  SECTION("byte_offset") {
    producer<double> prod(iota(10), {4}, {2}, f64_type);
    prod.managed.dl_tensor.byte_offset = 2 * sizeof(double);
    const xf::tensor x = xf::from_dlpack(&prod.managed);
    CHECK(xf::equal(x, xf::tensor{2.0, 4.0, 6.0, 8.0}));
  }
  SECTION("null strides are row-major") {
    producer<double> prod(iota(6), {3, 2}, {}, f64_type);
    const xf::tensor x = xf::from_dlpack(&prod.managed);
    CHECK(x.is_contiguous());
    CHECK(xf::equal(x, xf::arange(0, 6, 1, xf::f64).reshape({3, 2})));
  }
  SECTION("zero strides (a broadcast)") {
    producer<double> prod(iota(3), {4, 3}, {0, 1}, f64_type);
    const xf::tensor x = xf::from_dlpack(&prod.managed);
    CHECK(xf::equal(xf::sum(x, {0}), xf::tensor{0.0, 4.0, 8.0}));
  }
  SECTION("pinned host memory (kDLCUDAHost) is cpu memory") {
    producer<double> prod(iota(3), {3}, {1}, f64_type);
    prod.managed.dl_tensor.device = {kDLCUDAHost, 0};
    CHECK(xf::from_dlpack(&prod.managed).device() == xf::cpu);
  }
}

TEST_CASE("from_dlpack: float32, int64, bool, 0-d and empty", "[dlpack]") {
  SECTION("float32") {
    producer<float> prod({1.5f, 2.5f}, {2}, {1}, f32_type);
    CHECK(xf::equal(xf::from_dlpack(&prod.managed), xf::tensor{1.5f, 2.5f}));
  }
  SECTION("int64") {
    producer<std::int64_t> prod({7, 8, 9}, {3}, {1}, i64_type);
    CHECK(xf::equal(xf::from_dlpack(&prod.managed), xf::tensor{7, 8, 9}));
  }
  SECTION("bool") {
    std::vector<std::uint8_t> bytes{1, 0, 1};
    producer<std::uint8_t> prod(bytes, {3}, {1}, bool_type);
    CHECK(xf::equal(xf::from_dlpack(&prod.managed), xf::tensor{true, false, true}));
  }
  SECTION("0-d") {
    producer<double> prod({4.0}, {}, {}, f64_type);
    const xf::tensor x = xf::from_dlpack(&prod.managed);
    CHECK(x.dim() == 0);
    CHECK(x.item<double>() == 4.0);
  }
  SECTION("empty, with a null data pointer") {
    producer<double> prod({}, {0, 5}, {5, 1}, f64_type);
    prod.managed.dl_tensor.data = nullptr;
    const xf::tensor x = xf::from_dlpack(&prod.managed);
    CHECK(x.shape() == xf::shape_t{0, 5});
    CHECK(xf::sum(x).item<double>() == 0.0);
  }
}

TEST_CASE("a round trip through DLPack is the same tensor", "[dlpack]") {
  const xf::tensor t = xf::randn({5, 4}, xf::f64).t();
  const xf::tensor back = xf::from_dlpack(xf::to_dlpack(t));
  CHECK(xf::same_storage(t, back));
  CHECK(back.strides() == t.strides());
  CHECK(xf::equal(t, back));
}

TEST_CASE("shared buffers are never read late by a deferred program", "[dlpack]") {
  // Deferred pointwise results read their inputs when first read (NOTE: [Deferred elementwise]);
  // another library's write in between must not change them.
  const std::int64_t saved = xf::detail::set_deferred_min_numel(1);
  SECTION("an imported buffer is read at once") {
    producer<double> prod(iota(64), {64}, {1}, f64_type);
    const xf::tensor x = xf::from_dlpack(&prod.managed);
    const xf::tensor y = xf::exp(x) * 2.0;
    prod.data[3] = 100.0;  // the producer writes after the op
    CHECK(y.select(0, 3).item<double>() == Approx(2.0 * std::exp(3.0)));
  }
  SECTION("an export settles the programs already reading the buffer, and later ones read at once") {
    const xf::tensor x = xf::arange(0, 64, 1, xf::f64) + 0.0;
    const xf::tensor before = x * 2.0;  // may be deferred, reading x's buffer
    DLManagedTensor* m = xf::to_dlpack(x);
    const xf::tensor after = x * 3.0;
    static_cast<double*>(m->dl_tensor.data)[5] = -1.0;  // the consumer writes
    CHECK(before.select(0, 5).item<double>() == 10.0);
    CHECK(after.select(0, 5).item<double>() == 15.0);
    CHECK(x.select(0, 5).item<double>() == -1.0);
    m->deleter(m);
  }
  xf::detail::set_deferred_min_numel(saved);
}

TEST_CASE("to_dlpack under transforms", "[dlpack]") {
  const xf::tensor x = xf::randn({3}, xf::f64);
  SECTION("a grad or vmap wrapper has no buffer to share") {
    auto under_grad = [](const xf::tensor& a) {
      DLManagedTensor* m = xf::to_dlpack(a);
      m->deleter(m);
      return xf::sum(a);
    };
    CHECK_THROWS_WITH(xf::grad(under_grad)(x), Contains("to_dlpack") && Contains("transform"));
    auto under_vmap = [](const xf::tensor& a) {
      DLManagedTensor* m = xf::to_dlpack(a);
      m->deleter(m);
      return a;
    };
    CHECK_THROWS_WITH(xf::vmap(under_vmap)(xf::randn({2, 3})), Contains("to_dlpack") && Contains("vmap"));
  }
  SECTION("a value that escaped grad is its value") {
    xf::tensor escaped;
    (void)xf::grad([&](const xf::tensor& a) {
      escaped = a * 2.0;
      return xf::sum(escaped);
    })(x);
    DLManagedTensor* m = xf::to_dlpack(escaped);
    CHECK(static_cast<const double*>(m->dl_tensor.data)[1] == 2.0 * x.select(0, 1).item<double>());
    m->deleter(m);
  }
  SECTION("a value that escaped vmap has no value: the error names to_dlpack") {
    xf::tensor escaped;
    (void)xf::vmap([&](const xf::tensor& a) {
      escaped = a * 2.0;
      return a;
    })(xf::randn({2, 3}));
    CHECK_THROWS_WITH(xf::to_dlpack(escaped), Contains("to_dlpack") && Contains("escaped a vmap"));
  }
  SECTION("an imported tensor differentiates and vmaps like any other") {
    producer<double> prod(iota(6), {2, 3}, {1, 2}, f64_type);
    const xf::tensor a = xf::from_dlpack(&prod.managed);
    CHECK(xf::allclose(xf::grad([](const xf::tensor& v) { return xf::sum(v * v); })(a), 2.0 * a));
    CHECK(xf::allclose(xf::vmap([](const xf::tensor& v) { return xf::sum(v); })(a), xf::sum(a, {1})));
  }
}

TEST_CASE("bad DLPack input throws and leaves the tensor with its owner", "[dlpack]") {
  producer<double> prod(iota(6), {2, 3}, {3, 1}, f64_type);
  auto fails_with = [&](const char* phrase) {
    CHECK_THROWS_WITH(xf::from_dlpack(&prod.managed), Contains("from_dlpack") && Contains(phrase));
    CHECK(prod.deleted == 0);  // on error the caller still owns it
  };
  CHECK_THROWS_WITH(xf::from_dlpack(nullptr), Contains("null"));
  SECTION("cuda") {
    prod.managed.dl_tensor.device = {kDLCUDA, 0};
    fails_with("cuda");
  }
  SECTION("another device") {
    prod.managed.dl_tensor.device = {kDLOpenCL, 0};
    fails_with("device type");
  }
  SECTION("uint8") {
    prod.managed.dl_tensor.dtype = {kDLUInt, 8, 1};
    fails_with("unsupported dlpack dtype");
  }
  SECTION("int32") {
    prod.managed.dl_tensor.dtype = {kDLInt, 32, 1};
    fails_with("unsupported dlpack dtype");
  }
  SECTION("vector lanes") {
    prod.managed.dl_tensor.dtype = {kDLFloat, 64, 2};
    fails_with("lanes");
  }
  SECTION("negative stride") {
    prod.strides = {-3, 1};
    prod.managed.dl_tensor.strides = prod.strides.data();
    fails_with("non-negative strides");
  }
  SECTION("misaligned data") {
    prod.managed.dl_tensor.byte_offset = 3;
    fails_with("aligned");
  }
  SECTION("too many dimensions") {
    prod.managed.dl_tensor.ndim = 17;
    fails_with("dimensions");
  }
  SECTION("negative extent") {
    prod.shape = {2, -3};
    prod.managed.dl_tensor.shape = prod.shape.data();
    fails_with("shape");
  }
  SECTION("a null data pointer with elements") {
    prod.managed.dl_tensor.data = nullptr;
    fails_with("null data");
  }
  SECTION("strides past int64") {
    prod.strides = {std::int64_t{1} << 62, 1};
    prod.managed.dl_tensor.strides = prod.strides.data();
    fails_with("int64");
  }
}

TEST_CASE("to_dlpack: bad tensors throw", "[dlpack]") {
  CHECK_THROWS_WITH(xf::to_dlpack(xf::tensor()), Contains("to_dlpack") && Contains("undefined"));
  CHECK_THROWS_WITH(xf::to_dlpack(xf::zeros({2}, xf::f32, xf::meta)), Contains("to_dlpack") && Contains("meta"));
}
