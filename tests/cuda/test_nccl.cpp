// The NCCL transport at the buffer level (include/xfunc/dist/nccl.hpp).
//   test_nccl host     without a CUDA driver: availability is reported without a crash, and a
//                      communicator refuses to start ("not available") on every rank
//   test_nccl device   every buffer-level collective on device buffers, against the MPI ones on
//                      the same values (on the fake driver and NCCL in CI, or a GPU); exits 77
//                      (ctest: skipped) where NCCL cannot run
//   test_nccl timeout  on the fake driver with streams that never finish: a collective op on cuda
//                      tensors throws "timeout" on every rank, the NCCL communicator is aborted
//                      (later cuda collectives say so) and cpu tensors still go through MPI
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <xfunc/cuda.hpp>
#include <xfunc/distributed.hpp>

namespace d = xfunc::dist;
namespace xf = xfunc;

namespace {
int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}

int host_checks() {
  // (ctest runs this with XFUNC_CUDA_DRIVER naming a missing file)
  check(!d::nccl_available(), "NCCL available without a driver");  // and no crash
  check(d::nccl_why_not().find("CUDA is not available") != std::string::npos, "the reason: " + d::nccl_why_not());
  try {
    d::nccl_communicator nc(d::world());
    check(false, "a communicator started without a GPU");
  } catch (const xfunc::error& e) {
    check(std::strstr(e.what(), "not available") != nullptr, std::string("the message: ") + e.what());
  }
  return 0;
}

// Device buffers of doubles: cuda tensors.
xf::tensor to_device(const std::vector<double>& host) {
  xf::tensor h = xf::empty({static_cast<std::int64_t>(host.size())}, xf::f64, xf::cpu);
  std::copy(host.begin(), host.end(), h.impl()->data<double>());
  return h.to(xf::cuda);
}
struct device_buffer {
  xf::tensor t;
  double* p = nullptr;
  explicit device_buffer(const std::vector<double>& host) : t(to_device(host)), p(t.impl()->device_data<double>()) {}
  explicit device_buffer(std::size_t size) : device_buffer(std::vector<double>(size, -1.0)) {}
  std::vector<double> host() const {
    const xf::tensor h = t.cpu();
    return std::vector<double>(h.impl()->data<double>(), h.impl()->data<double>() + h.numel());
  }
};

int device_checks() {
  if (!d::nccl_available()) {
    std::printf("NCCL cannot run here (%s): skipped\n", d::nccl_why_not().c_str());
    return 77;
  }
  const auto& c = d::world().state("test_nccl");
  d::nccl_communicator nc(d::world(), 0);
  const CUstream s = xf::detail::cuda::context_for(0, "test_nccl").stream;
  const int N = c.size, r = c.rank;
  const std::int64_t n = 6;
  std::vector<double> mine(static_cast<std::size_t>(n * N));
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = r * 100.0 + static_cast<double>(i);
  const auto f64 = xfunc::dtype::float64;
  auto same = [](const std::vector<double>& a, const std::vector<double>& b, std::size_t len) {
    for (std::size_t i = 0; i < len; ++i)
      if (a[i] != b[i]) return false;
    return true;
  };
  {  // all_reduce (sum and mean)
    device_buffer b(mine);
    nc.all_reduce(b.p, n, f64, d::reduce_op::sum, s);
    nc.wait(s);
    std::vector<double> ref = mine;
    c.all_reduce(ref.data(), n, f64, d::reduce_op::sum, "ref");
    check(same(b.host(), ref, static_cast<std::size_t>(n)), "all_reduce(sum)");
  }
  {  // all_gather
    device_buffer in(mine), out(static_cast<std::size_t>(n * N));
    nc.all_gather(in.p, out.p, n, f64, s);
    nc.wait(s);
    std::vector<double> ref(static_cast<std::size_t>(n * N));
    c.all_gather(mine.data(), ref.data(), n, f64, "ref");
    check(same(out.host(), ref, ref.size()), "all_gather");
  }
  {  // reduce_scatter
    device_buffer in(mine), out(static_cast<std::size_t>(n));
    nc.reduce_scatter(in.p, out.p, n, f64, d::reduce_op::sum, s);
    nc.wait(s);
    std::vector<double> ref(static_cast<std::size_t>(n));
    c.reduce_scatter(mine.data(), ref.data(), n, f64, d::reduce_op::sum, "ref");
    check(same(out.host(), ref, ref.size()), "reduce_scatter");
  }
  {  // broadcast and reduce from the last rank
    device_buffer b(mine);
    nc.broadcast(b.p, n, f64, N - 1, s);
    device_buffer in(mine), out(static_cast<std::size_t>(n));
    nc.reduce_sum(in.p, out.p, n, f64, N - 1, s);
    nc.wait(s);
    std::vector<double> ref = mine, red(static_cast<std::size_t>(n), -1.0);
    c.broadcast(ref.data(), n, f64, N - 1, "ref");
    c.reduce_sum(mine.data(), red.data(), n, f64, N - 1, "ref");
    check(same(b.host(), ref, static_cast<std::size_t>(n)), "broadcast");
    if (r == N - 1) check(same(out.host(), red, red.size()), "reduce");
  }
  {  // all_to_all and a ring of send_recv
    device_buffer in(mine), out(mine.size());
    nc.all_to_all(in.p, out.p, n, f64, s);
    device_buffer ring_out(static_cast<std::size_t>(n));
    nc.send_recv(in.p, ring_out.p, n, f64, (r + 1) % N, (r + N - 1) % N, s);
    nc.wait(s);
    std::vector<double> ref(mine.size()), ring_ref(static_cast<std::size_t>(n));
    c.all_to_all(mine.data(), ref.data(), n, f64, "ref");
    c.send_recv(mine.data(), ring_ref.data(), n, f64, (r + 1) % N, (r + N - 1) % N, "ref");
    check(same(out.host(), ref, ref.size()), "all_to_all");
    check(same(ring_out.host(), ring_ref, ring_ref.size()), "send_recv");
  }
  if (const char* fake = std::getenv("XFUNC_TEST_EXPECT_NCCL"); fake && std::string(fake) == "1") {
    // the fake NCCL refuses host memory, so the checks above did pass device buffers
    std::vector<double> host(static_cast<std::size_t>(n));
    try {
      nc.all_reduce(host.data(), n, f64, d::reduce_op::sum, s);
      check(false, "the fake NCCL took host memory");
    } catch (const xf::error& e) {
      check(std::strstr(e.what(), "NCCL failed") != nullptr, std::string("host memory: ") + e.what());
    }
  }
  return 0;
}

int timeout_checks() {
  if (!d::nccl_available()) {
    std::printf("NCCL cannot run here (%s): skipped\n", d::nccl_why_not().c_str());
    return 77;
  }
  // (long enough that the ranks' MPI exchanges around it never wait that long)
  d::set_timeout(std::chrono::milliseconds(1500));
  const xf::tensor x = xf::ones({4}, xf::f64, xf::cuda);
  auto throws_with = [&](const char* part, const char* context) {
    try {
      (void)d::all_reduce(x);
      check(false, std::string(context) + ": no error");
    } catch (const xf::error& e) {
      check(std::strstr(e.what(), part) != nullptr, std::string(context) + ": the message: " + e.what());
    }
  };
  throws_with("timeout", "a collective that never ends");
  throws_with("aborted after a timeout", "the next collective on cuda tensors");
  const xf::tensor s = d::all_reduce(x.cpu());
  check(xf::allclose(s, xf::full({4}, static_cast<double>(d::world().size()), xf::f64, xf::cpu)), "MPI afterwards");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  d::environment env(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "host";
  const int status = mode == "device" ? device_checks() : mode == "timeout" ? timeout_checks() : host_checks();
  int any = failures > 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&any, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (all) return 1;
  return status;
}
