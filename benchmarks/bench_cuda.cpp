// The CUDA backend against its targets (issue 13; docs/performance.md), timed by hand: each
// measurement synchronises the device, repeats, and reports the median. Prints a table of
// figures and of ratios against baselines measured in the same process:
//   x * a + b on 2^28 f32        effective bandwidth (8 bytes per element), target >= 3.9 TB/s;
//                                one fused launch, and op by op (deferral off) for comparison
//   row sums, 16384 x 16384 f32  bandwidth (4 bytes per element), target >= 3.5 TB/s
//   matmul 8192^3 f32            against cuBLAS called directly on the same buffers, >= 0.95x
//   per-example gradients        MLP 784-128-10, B = 4096: cuda against xfunc on the cpu (> 1x);
//                                torch.func's vmap(grad) on the same GPU is timed by
//                                scripts/bench_torch_cuda.py (target: xfunc 1.5x faster)
//   add of 1 element             launch and completion, target <= 6 us
// The bandwidth rows and the 1-element add have hand-written CUDA kernels as baselines, compiled
// by NVRTC at run time and launched through the driver on the same stream: x * a + b with one
// float4 per thread, row sums with one block per row (float4 loads, warp shuffles), and a
// one-element add (the floor of a launch and a synchronisation), with xfunc's host time per
// queued add beside it. Without a GPU it says so and exits 0 (nothing is timed on the fake driver).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xbuilder.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using xf::tensor;

namespace {

/// The median time of `reps` runs of f, each followed by `wait` (by default a synchronisation
/// of the whole device), in seconds.
double median_s(int reps, const std::function<void()>& f, const std::function<void()>& wait = [] { xf::cuda_synchronize(); }) {
  f();  // warm up: kernels loaded, blocks cached
  wait();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    wait();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Computes a deferred result on its device now (NOTE: [Fused device programs]).
void settle(const tensor& t) { t.impl()->prepare_access(); }

void row(const char* what, double value, const char* unit, const char* target, bool met) {
  std::printf("%-44s %12.3f %-6s  target %-14s %s\n", what, value, unit, target, met ? "met" : "NOT met");
}

namespace xc = xf::detail::cuda;

/// The hand-written baselines (CUDA C++, compiled by NVRTC for this GPU).
constexpr const char* baseline_source = R"(
extern "C" __global__ void axpb(const float4* __restrict__ x, float4* __restrict__ y, float a, float b, long long n4) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n4) {
    const float4 v = x[i];
    y[i] = make_float4(v.x * a + b, v.y * a + b, v.z * a + b, v.w * a + b);
  }
}
extern "C" __global__ void row_sums(const float4* __restrict__ m, float* __restrict__ out, int cols4) {
  const float4* r = m + (long long)blockIdx.x * cols4;
  float acc = 0;
  for (int j = threadIdx.x; j < cols4; j += blockDim.x) {
    const float4 v = r[j];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  __shared__ float warps[32];
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
  }
}
extern "C" __global__ void add1(const float* a, const float* b, float* c) { c[0] = a[0] + b[0]; }
)";

/// The baselines' module on device 0, and a launcher on this thread's stream (xfunc's own).
struct baselines {
  xc::device_context ctx = xc::context_for(0, "bench_cuda");
  CUmodule module = nullptr;
  baselines() {
    const xc::driver_api& d = *ctx.driver;
    CUdevice dev = 0;
    int major = 0, minor = 0;
    xc::check(d, d.device_get(&dev, 0), "bench_cuda");
    xc::check(d, d.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "bench_cuda");
    xc::check(d, d.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "bench_cuda");
    const std::string cubin =
        xc::kernels().get(xc::nvrtc(), baseline_source, "sm_" + std::to_string(major * 10 + minor), {}, "bench_cuda");
    xc::check(d, d.module_load_data(&module, cubin.data()), "bench_cuda: cuModuleLoadData");
  }
  /// Launches kernel `name` with `grid` blocks of `block` threads and the given arguments.
  template <class... A>
  void launch(const char* name, long long grid, unsigned block, A... args) const {
    const xc::driver_api& d = *ctx.driver;
    CUfunction f = nullptr;
    xc::check(d, d.module_get_function(&f, module, name), "bench_cuda: cuModuleGetFunction");
    void* params[] = {&args...};
    xc::check(d, d.launch_kernel(f, static_cast<unsigned>(grid), 1, 1, block, 1, 1, 0, ctx.stream, params, nullptr),
              name);
  }
};
/// A cuda tensor's first element, as the kernels take it.
template <class T>
T* device_ptr(const tensor& t) { return t.impl()->template device_data<T>(); }

/// The MLP of bench_per_example_grads: relu, softmax cross-entropy.
tensor mlp_loss(const tensor& w1, const tensor& b1, const tensor& w2, const tensor& b2, const tensor& x,
                const tensor& y) {
  const tensor h = xf::relu(xf::linear(x, w1, b1));
  return xf::cross_entropy(xf::linear(h, w2, b2), y);
}

}  // namespace

int main() {
  if (!xf::cuda_is_available()) {
    std::printf("bench_cuda: no GPU (%s); nothing timed\n", xf::cuda_unavailable_reason().c_str());
    return 0;
  }
  std::printf("%-44s %12s %-6s\n", "benchmark", "value", "unit");
  std::optional<baselines> hand;
  try {
    hand.emplace();
  } catch (const xf::error& e) {
    std::printf("no hand-written baselines: %s\n", e.what());
  }
  {  // x * a + b
    const std::int64_t n = std::int64_t(1) << 28;
    const tensor x = xf::ones({n}, xf::f32, xf::cuda);
    tensor out;
    const double s = median_s(10, [&] { settle(out = x * 2.0 + 1.0); });
    const double tbs = 8.0 * double(n) / s / 1e12;
    row("x * a + b, 2^28 f32 (effective)", tbs, "TB/s", ">= 3.9 TB/s", tbs >= 3.9);
    const std::int64_t threshold = xf::detail::set_deferred_min_numel(0);  // op by op: two launches
    const double eager = median_s(10, [&] { out = x * 2.0 + 1.0; });
    xf::detail::set_deferred_min_numel(threshold);
    std::printf("%-44s %12.3f x\n", "  op by op, time against the fused launch", eager / s);
    if (hand) {
      const tensor y = xf::empty({n}, xf::f32, xf::cuda);
      const double base = median_s(10, [&] {
        hand->launch("axpb", n / 4 / 256, 256, device_ptr<const float>(x), device_ptr<float>(y), 2.0f, 1.0f, n / 4);
      });
      std::printf("%-44s %12.3f TB/s\n", "  hand-written kernel (float4 per thread)", 8.0 * double(n) / base / 1e12);
      std::printf("%-44s %12.3f x\n", "  hand-written time / xfunc time", base / s);
    }
  }
  {  // row sums
    const std::int64_t n = 16384;
    const tensor m = xf::ones({n, n}, xf::f32, xf::cuda);
    tensor out;
    const double s = median_s(10, [&] { out = xf::sum(m, {1}); });
    const double tbs = 4.0 * double(n) * double(n) / s / 1e12;
    row("row sums, 16384 x 16384 f32", tbs, "TB/s", ">= 3.5 TB/s", tbs >= 3.5);
    if (hand) {
      const tensor sums = xf::empty({n}, xf::f32, xf::cuda);
      const double base = median_s(10, [&] {
        hand->launch("row_sums", n, 512, device_ptr<const float>(m), device_ptr<float>(sums), static_cast<int>(n / 4));
      });
      std::printf("%-44s %12.3f TB/s\n", "  hand-written kernel (a block per row)", 4.0 * double(n) * double(n) / base / 1e12);
      std::printf("%-44s %12.3f x\n", "  hand-written time / xfunc time", base / s);
    }
  }
  {  // matmul against cuBLAS directly
    const std::int64_t n = 8192;
    const tensor a = xf::randn({n, n}, xf::f32, xf::cuda), b = xf::randn({n, n}, xf::f32, xf::cuda);
    tensor c = xf::empty({n, n}, xf::f32, xf::cuda);
    tensor out;
    const double s_xf = median_s(5, [&] { out = xf::matmul(a, b); });
    const xc::device_context ctx = xc::context_for(0, "bench_cuda");
    cublasHandle_t h = xc::cublas_handle(ctx, "bench_cuda");
    const float one = 1, zero = 0;
    const int ni = static_cast<int>(n);
    const double s_blas = median_s(5, [&] {
      xc::check_cublas(xc::cublas().sgemm_strided_batched(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one,
                                                          b.impl()->device_data<float>(), ni, 0,
                                                          a.impl()->device_data<float>(), ni, 0, &zero,
                                                          c.impl()->device_data<float>(), ni, 0, 1),
                       "bench_cuda");
    });
    const double tflops = 2.0 * double(n) * double(n) * double(n) / s_xf / 1e12;
    row("matmul 8192^3 f32 (xfunc)", tflops, "TFLOP/s", "", true);
    row("matmul 8192^3 f32: cuBLAS time / xfunc time", s_blas / s_xf, "x", ">= 0.95x", s_blas / s_xf >= 0.95);
  }
  {  // per-example gradients
    const std::int64_t B = 4096, D = 784, H = 128, C = 10;
    xf::manual_seed(1);
    const tensor w1 = xf::randn({H, D}) * 0.05, b1 = xf::zeros({H}), w2 = xf::randn({C, H}) * 0.1, b2 = xf::zeros({C});
    xt::xarray<std::int64_t> labels = xt::zeros<std::int64_t>({std::size_t(B)});
    for (std::int64_t i = 0; i < B; ++i) labels(std::size_t(i)) = (i * 7 + 3) % C;
    const tensor x = xf::randn({B, D}), y = xf::from_xtensor(labels);
    auto per_example = xf::vmap(xf::grad(mlp_loss, xf::argnums<0, 1, 2, 3>),
                                xf::in_dims(xf::none, xf::none, xf::none, xf::none, 0, 0));
    const tensor gw1 = w1.cuda(), gb1 = b1.cuda(), gw2 = w2.cuda(), gb2 = b2.cuda(), gx = x.cuda(), gy = y.cuda();
    const double s_gpu = median_s(5, [&] { (void)per_example(gw1, gb1, gw2, gb2, gx, gy); });
    auto t0 = std::chrono::steady_clock::now();
    (void)per_example(w1, b1, w2, b2, x, y);
    const double s_cpu = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    row("per-example grads, MLP 784-128-10, B=4096", s_gpu * 1e3, "ms", "", true);
    row("per-example grads: cpu time / cuda time", s_cpu / s_gpu, "x", "> 1x", s_cpu > s_gpu);
  }
  {  // one-element add
    const tensor a = xf::ones({1}, xf::f32, xf::cuda), b = xf::ones({1}, xf::f32, xf::cuda);
    tensor out;
    const double s = median_s(200, [&] { out = a + b; });
    row("add of 1 element, launch to completion", s * 1e6, "us", "<= 6 us", s * 1e6 <= 6.0);
    constexpr int queued = 1000;
    const double per_add = median_s(5, [&] {
      for (int i = 0; i < queued; ++i) out = a + b;
    }) / queued;
    std::printf("%-44s %12.3f us\n", "  xfunc host time per queued add", per_add * 1e6);
    if (hand) {
      const double base = median_s(200, [&] {
        hand->launch("add1", 1, 1, device_ptr<const float>(a), device_ptr<const float>(b), device_ptr<float>(out));
      });
      std::printf("%-44s %12.3f us\n", "  hand-written kernel: launch + synchronize", base * 1e6);
      const xc::device_context& c = hand->ctx;
      const double stream_only = median_s(
          200,
          [&] {
            hand->launch("add1", 1, 1, device_ptr<const float>(a), device_ptr<const float>(b), device_ptr<float>(out));
          },
          [&] { xc::check(*c.driver, c.driver->stream_synchronize(c.stream), "bench_cuda"); });
      std::printf("%-44s %12.3f us\n", "  the same, synchronizing its stream only", stream_only * 1e6);
    }
  }
  return 0;
}
