#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

TEST_CASE("tensors from nested braces", "[tensor]") {
  xf::tensor a{1.0, 2.0};
  CHECK(a.shape() == xf::shape_t{2});
  CHECK(a.dtype() == xf::f64);
  xf::tensor b{{1.0f, 2.0f}, {3.0f, 4.0f}};
  CHECK(b.shape() == xf::shape_t{2, 2});
  CHECK(b.dtype() == xf::f32);
  CHECK(xf::tensor{0, 2}.dtype() == xf::i64);
  CHECK_THROWS_AS((xf::tensor{{1.0, 2.0}, {3.0}}), xf::error);
}

TEST_CASE("factories default to float32 and cpu; arange(end) alone is int64", "[tensor][factories]") {
  // API.md section 1: a fractional range must not be truncated to integers by a default dtype
  const xf::tensor r = xf::arange(0.0, 1.0, 0.25);
  CHECK(r.dtype() == xf::f32);
  CHECK(xf::equal(r, xf::tensor{0.0f, 0.25f, 0.5f, 0.75f}));
  CHECK(xf::arange(0, 4, 2).dtype() == xf::f32);
  CHECK(xf::arange(0.0, 2.0, 0.5, xf::f64).dtype() == xf::f64);
  CHECK(xf::arange(5).dtype() == xf::i64);
  const xf::tensor m = xf::arange(5, xf::meta);  // the trailing device
  CHECK((m.device() == xf::meta && m.dtype() == xf::i64 && m.shape() == xf::shape_t{5}));
  CHECK(xf::arange(3, xf::cpu).device() == xf::cpu);
  for (const xf::tensor& t : {xf::zeros({2}), xf::ones({2}), xf::empty({2}), xf::full({2}, 1.5), xf::eye(2),
                              xf::linspace(0.0, 1.0, 3), xf::rand({2}), xf::randn({2})})
    CHECK((t.dtype() == xf::f32 && t.device() == xf::cpu));
}

TEST_CASE("*_like factories take t's shape and dtype, and its device unless given one", "[tensor][factories]") {
  const xf::tensor t = xf::ones({2, 3}, xf::f64);
  for (const xf::tensor& s : {xf::zeros_like(t, xf::meta), xf::ones_like(t, xf::meta), xf::empty_like(t, xf::meta),
                              xf::full_like(t, 2.0, xf::meta), xf::rand_like(t, xf::meta), xf::randn_like(t, xf::meta)})
    CHECK((s.device() == xf::meta && s.dtype() == xf::f64 && s.shape() == xf::shape_t{2, 3}));
  const xf::tensor m = xf::zeros({4}, xf::i64, xf::meta);
  const xf::tensor back = xf::full_like(m, 7.0, xf::cpu);
  CHECK((back.device() == xf::cpu && back.dtype() == xf::i64 && xf::equal(back, xf::full({4}, 7.0, xf::i64))));
  CHECK(xf::zeros_like(m).device() == xf::meta);  // t's device by default
}

TEST_CASE("a tensor with no elements is contiguous, whatever its strides", "[tensor]") {
  // as torch's is_contiguous: zeros({2, 0, 3}) has strides [3, 3, 1] here, [0, 3, 1] in torch
  const xf::tensor e = xf::zeros({2, 0, 3});
  CHECK(e.is_contiguous());
  CHECK(e.permute({2, 0, 1}).is_contiguous());
  CHECK(xf::same_storage(e.contiguous(), e));
  CHECK(xf::sum(e.contiguous(), {1}).shape() == xf::shape_t{2, 3});
  CHECK_FALSE(xf::zeros({2, 3}).t().is_contiguous());
}

TEST_CASE("buffers of 64 KiB and more are recycled, within the cache's bounds", "[tensor][allocation]") {
  // NOTE: [Buffer allocation]: the cache is off under AddressSanitizer (use-after-free stays visible)
  auto& cache = xf::detail::large_buffer_cache::instance();
#if XFUNC_DETAIL_BUFFER_CACHE
  const void* first = nullptr;
  {
    const xf::tensor a = xf::empty({16384 + 16});  // 64 KiB and a line
    first = a.impl()->data<float>();
  }
  const xf::tensor b = xf::empty({16384 + 16});
  CHECK(b.impl()->data<float>() == first);  // the block just freed, not a fresh mapping
  // below the threshold the C allocator keeps the block
  const std::size_t held = cache.cached_blocks();
  { const xf::tensor small = xf::empty({1000}); }
  CHECK(cache.cached_blocks() == held);
  // many distinct sizes: the cache keeps at most max_blocks of them (so a lookup stays short)
  {
    std::vector<xf::tensor> many;
    for (std::int64_t i = 0; i < 1100; ++i) many.push_back(xf::empty({16384 + 16 * i}));
  }
  CHECK(cache.cached_blocks() <= xf::detail::large_buffer_cache::max_blocks);
  CHECK(cache.cached_bytes() <= xf::detail::large_buffer_cache::max_cached);
  // a kernel's working memory comes from the same cache: a column sum needs blocks of partial
  // sums, and a second call finds the first one's blocks
  const xf::tensor x = xf::ones({1000, 20000});
  CHECK(xf::sum(x, {0}).select(0, 7).item<float>() == 1000.0f);
  const std::size_t after_first = cache.cached_blocks();
  CHECK(xf::sum(x, {0}).select(0, 7).item<float>() == 1000.0f);
  CHECK(cache.cached_blocks() == after_first);
#else
  // off under AddressSanitizer: every freed block goes back to the C allocator, so ASan still
  // sees a use after free
  { const xf::tensor a = xf::empty({16384 + 16}); }
  { const xf::tensor s = xf::sum(xf::ones({1000, 20000}), {0}); }
  CHECK(cache.cached_blocks() == 0);
  CHECK(cache.cached_bytes() == 0);
#endif
}
