// xf::dist before an environment exists: world() and a collective throw "MPI is not
// initialised" (never crash in MPI). A plain program, run without mpirun.
#include <cstdio>
#include <cstring>

#include <xfunc/distributed.hpp>

namespace xf = xfunc;

int main() {
  int failures = 0;
  auto expect_error = [&](const char* what, auto&& call) {
    try {
      call();
      std::printf("FAIL: %s did not throw\n", what);
      ++failures;
    } catch (const xf::error& e) {
      if (!std::strstr(e.what(), "MPI is not initialised; create an xf::dist::environment")) {
        std::printf("FAIL: %s: %s\n", what, e.what());
        ++failures;
      }
    }
  };
  expect_error("world()", [] { (void)xf::dist::world(); });
  expect_error("all_reduce", [] { (void)xf::dist::all_reduce(xf::ones({2})); });
  std::printf("%s\n", failures ? "failed" : "ok");
  return failures ? 1 : 0;
}
