// The CUDA runtime layer without a GPU: availability is a question (never a crash), the driver
// and NVRTC load lazily, kernels compile for sm_90 and are cached in memory and on disk.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <xfunc/cuda.hpp>
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
namespace xc = xfunc::detail::cuda;
using Catch::Contains;

namespace {

const std::string axpy_source = R"(
extern "C" __global__ void axpy(float* y, const float* x, float a, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

/// A fresh directory under the system's temporary directory, removed at the end of the scope.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    static std::atomic<int> n{0};
    path = std::filesystem::temp_directory_path() /
           ("xfunc_cuda_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

bool is_elf(const std::string& binary) { return binary.size() > 4 && binary.compare(0, 4, "\x7f" "ELF") == 0; }

}  // namespace

TEST_CASE("cuda availability is a question, never a crash", "[cuda]") {
  const bool available = xf::cuda_is_available();
  if (available) {
    CHECK(xf::cuda_device_count() > 0);
    CHECK(xf::cuda_unavailable_reason().empty());
    CHECK_NOTHROW(xf::cuda_synchronize());
    CHECK_THROWS_WITH(xf::cuda_synchronize(xf::device{xf::device_kind::cuda, xf::cuda_device_count()}),
                      Contains("does not exist"));
    // cuda tensors are made and copied back
    CHECK(xf::zeros({2}, xf::f32, xf::cuda).device() == xf::cuda);
    CHECK(xf::sum(xf::ones({2}).to(xf::cuda).to(xf::cpu)).item<float>() == 2.0f);
  } else {
    CHECK(xf::cuda_device_count() == 0);
    CHECK_FALSE(xf::cuda_unavailable_reason().empty());
    CHECK_THROWS_WITH(xf::cuda_synchronize(), Contains("xf::cuda_synchronize") && Contains("CUDA is not available"));
    // without a device, cuda tensors are refused with the reason
    CHECK_THROWS_WITH(xf::zeros({2}, xf::f32, xf::cuda), Contains("not available"));
    CHECK_THROWS_WITH(xf::ones({2}).to(xf::cuda), Contains("not available"));
  }
  CHECK_THROWS_WITH(xf::cuda_synchronize(xf::cpu), Contains("is not a cuda device"));
}

TEST_CASE("the driver loads lazily and says why it cannot be used", "[cuda]") {
  SECTION("no such library") {
    const xc::driver_api d = xc::load_driver({"/nonexistent/libcuda.so.1"});
    CHECK_FALSE(d.usable);
    CHECK(d.device_count == 0);
    CHECK_THAT(d.why_not, Contains("cannot be loaded") && Contains("/nonexistent/libcuda.so.1"));
  }
  SECTION("the toolkit's stub driver loads but cannot start") {
    if (!std::filesystem::exists(XFUNC_TEST_CUDA_STUB_DRIVER)) {
      WARN("no stub driver at " XFUNC_TEST_CUDA_STUB_DRIVER "; this section checks nothing here");
      return;
    }
    const xc::driver_api d = xc::load_driver({XFUNC_TEST_CUDA_STUB_DRIVER});
    CHECK(d.library);
    CHECK_FALSE(d.usable);
    CHECK_THAT(d.why_not, Contains("cuInit") && Contains("stub"));
    // (the stub cannot name results either: the message gives the number)
    CHECK_THROWS_WITH(xc::check(d, CUDA_ERROR_OUT_OF_MEMORY, "xf::test"),
                      Contains("xf::test: the CUDA driver returned") && Contains(" 2"));
  }
  SECTION("a library that is not a driver") {
    const xc::driver_api d = xc::load_driver({"libm.so.6"});
    CHECK_FALSE(d.usable);
    CHECK_THAT(d.why_not, Contains("lacks functions") && Contains("cuInit") && Contains("cuLaunchKernel"));
  }
}

TEST_CASE("NVRTC compiles kernels for sm_90 without a GPU", "[cuda]") {
  const xc::nvrtc_api& n = xc::nvrtc();
  REQUIRE(n.why_not.empty());
  CHECK(n.major >= 12);
  const std::string cubin = xc::compile_to_cubin(n, axpy_source, "sm_90", {}, "xf::test");
  CHECK(is_elf(cubin));
  CHECK(cubin.find("axpy") != std::string::npos);  // the kernel's symbol
  SECTION("a kernel that does not compile: the error carries NVRTC's log") {
    CHECK_THROWS_WITH(xc::compile_to_cubin(n, "extern \"C\" __global__ void k() { undeclared_name = 1; }", "sm_90", {},
                                           "xf::test"),
                      Contains("xf::test") && Contains("could not compile") && Contains("undeclared_name"));
  }
  SECTION("a virtual architecture gives no cubin") {
    CHECK_THROWS_WITH(xc::compile_to_cubin(n, axpy_source, "compute_90", {}, "xf::test"), Contains("sm_90"));
  }
  SECTION("a library that is not NVRTC") {
    const xc::nvrtc_api bad = xc::load_nvrtc({"/nonexistent/libnvrtc.so"});
    CHECK_THAT(bad.why_not, Contains("cannot be loaded"));
    CHECK_THROWS_WITH(xc::compile_to_cubin(bad, axpy_source, "sm_90", {}, "xf::test"), Contains("cannot compile"));
  }
}

TEST_CASE("the kernel cache: memory, then disk, keyed by everything that changes the binary", "[cuda]") {
  const xc::nvrtc_api& n = xc::nvrtc();
  REQUIRE(n.why_not.empty());
  scratch_dir dir;
  xc::kernel_cache first(dir.path);
  const std::string a = first.get(n, axpy_source, "sm_90", {}, "xf::test");
  const std::string b = first.get(n, axpy_source, "sm_90", {}, "xf::test");
  CHECK(a == b);
  CHECK(first.stats().compiles == 1);
  CHECK(first.stats().memory_hits == 1);
  // another process (a new cache on the same directory) reads the file
  xc::kernel_cache second(dir.path);
  CHECK(second.get(n, axpy_source, "sm_90", {}, "xf::test") == a);
  CHECK(second.stats().disk_hits == 1);
  CHECK(second.stats().compiles == 0);
  // another architecture or other options are other kernels
  CHECK(second.get(n, axpy_source, "sm_80", {}, "xf::test") != a);
  (void)second.get(n, axpy_source, "sm_90", {"-DXFUNC_UNUSED=1"}, "xf::test");
  CHECK(second.stats().compiles == 2);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files += e.path().extension() == ".cubin";
  CHECK(files == 3);
  SECTION("a damaged file is a miss, never a wrong kernel") {
    for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
      std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "garbage";
    }
    xc::kernel_cache third(dir.path);
    CHECK(third.get(n, axpy_source, "sm_90", {}, "xf::test") == a);
    CHECK(third.stats().compiles == 1);
    CHECK(third.stats().disk_hits == 0);
  }
  SECTION("without a directory the cache is memory only") {
    scratch_dir empty;
    xc::kernel_cache memory_only{std::filesystem::path()};
    CHECK(memory_only.get(n, axpy_source, "sm_90", {}, "xf::test") == a);
    CHECK(std::filesystem::is_empty(empty.path));
    CHECK(memory_only.directory().empty());
  }
}
