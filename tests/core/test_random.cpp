// Random numbers (NOTE: [Random numbers], NOTE: [Philox streams]): the Philox 4x32-10 words
// against the published known answers, the maps to uniform and normal values, the stream order
// across calls and seeds, and independence from the thread count.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>

#include <xfunc/xfunc.hpp>

#include "../support/bitwise.hpp"

namespace xf = xfunc;
using xfunc_test::bitwise_equal;
using xf::detail::backend::philox4x32_10;
using xf::detail::backend::philox_words;

namespace {

struct thread_count_guard {
  int saved = xf::get_num_threads();
  ~thread_count_guard() { xf::set_num_threads(saved); }
};

}  // namespace

TEST_CASE("Philox 4x32-10 gives Random123's known answers", "[random]") {
  CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) == philox_words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        philox_words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        philox_words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("rand and randn draw the Philox stream of the seed", "[random]") {
  // seed 0, counter 0: the first known answer above
  xf::manual_seed(0);
  const xf::tensor u = xf::rand({4});
  const philox_words w{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
  for (std::int64_t i = 0; i < 4; ++i)
    CHECK(u.select(0, i).item<float>() == static_cast<float>((w[static_cast<std::size_t>(i)] >> 8) * 0x1p-24));
  xf::manual_seed(0);
  const double u64 = static_cast<double>(((std::uint64_t(w[0]) << 32 | w[1]) >> 11)) * 0x1p-53;
  CHECK(xf::rand({1}, xf::f64).item<double>() == u64);
  xf::manual_seed(0);
  const double u2 = static_cast<double>(((std::uint64_t(w[2]) << 32 | w[3]) >> 11)) * 0x1p-53;
  // (SIMD log and cos: equal to the standard library's to the last bits)
  CHECK(xf::randn({1}, xf::f64).item<double>() ==
        Approx(std::sqrt(-2.0 * std::log(1.0 - u64)) * std::cos(2.0 * std::numbers::pi * u2)).epsilon(1e-14));

  // consecutive calls continue the stream block by block; a new seed restarts it
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    INFO(dt);
    xf::manual_seed(123);
    const xf::tensor a = xf::randn({8}, dt), b = xf::randn({12}, dt);
    xf::manual_seed(123);
    const xf::tensor both = xf::randn({20}, dt);
    CHECK(bitwise_equal(xf::cat({a, b}), both));
    xf::manual_seed(124);
    CHECK_FALSE(xf::equal(xf::randn({20}, dt), both));
    // a partly used block is not reused: 5 values take two float32 blocks, three float64 ones
    xf::manual_seed(123);
    (void)xf::randn({5}, dt);
    const xf::tensor next = xf::randn({4}, dt);
    CHECK(bitwise_equal(next, both.narrow(0, 8, 4)) == (dt == xf::f32));
    CHECK(bitwise_equal(next, both.narrow(0, 6, 4)) == (dt == xf::f64));
  }
}

TEST_CASE("rand is uniform in [0, 1), randn standard normal", "[random]") {
  xf::manual_seed(7);
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    INFO(dt);
    const std::int64_t n = 1 << 20;
    const xf::tensor u = xf::rand({n}, dt);
    CHECK(xf::amin(u, {0}).item<double>() >= 0.0);
    CHECK(xf::amax(u, {0}).item<double>() < 1.0);
    CHECK(std::abs(xf::mean(u).item<double>() - 0.5) < 2e-3);                      // sd of the mean 3e-4
    CHECK(std::abs(xf::mean(xf::square(u - 0.5)).item<double>() - 1.0 / 12) < 1e-3);
    const xf::tensor z = xf::randn({n}, dt);
    CHECK(std::abs(xf::mean(z).item<double>()) < 5e-3);                            // sd of the mean 1e-3
    CHECK(std::abs(xf::mean(xf::square(z)).item<double>() - 1.0) < 1e-2);
    CHECK(std::abs(xf::mean(z * z * z * z).item<double>() - 3.0) < 5e-2);          // kurtosis of a normal
    const double tail = xf::mean((xf::abs(z) > 3.0).to(xf::f64)).item<double>();  // 0.0027 expected
    CHECK(tail > 0.002);
    CHECK(tail < 0.0034);
    CHECK(std::isfinite(xf::amax(xf::abs(z), {0}).item<double>()));
  }
}

TEST_CASE("random draws do not depend on the thread count", "[random][threads]") {
  thread_count_guard guard;
  for (xf::dtype dt : {xf::f32, xf::f64}) {
    INFO(dt);
    xf::set_num_threads(1);
    xf::manual_seed(99);
    const xf::tensor r1 = xf::randn({1000003}, dt), u1 = xf::rand({70001}, dt);
    for (int threads : {2, 3}) {
      xf::set_num_threads(threads);
      xf::manual_seed(99);
      CHECK(bitwise_equal(xf::randn({1000003}, dt), r1));
      CHECK(bitwise_equal(xf::rand({70001}, dt), u1));
    }
  }
}
