// Failure scenarios for check_failure.sh: each must end the whole MPI job (non-zero), never hang.
//   throw    rank 1 throws an xf::error that nothing catches while rank 0 waits in all_reduce
//   unwind   the same, caught in main outside the environment's scope (the environment aborts)
//   absent   rank 1 never calls the all_reduce rank 0 waits in (it sleeps); the timeout aborts
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include <xfunc/distributed.hpp>

namespace xf = xfunc;

static int run(int argc, char** argv) {
  xf::dist::environment env(argc, argv);
  const std::string scenario = argc > 1 ? argv[1] : "";
  const int rank = xf::dist::world().rank();
  xf::dist::set_timeout(std::chrono::seconds(2));
  if (rank == 1) {
    if (scenario != "absent") throw xf::error("rank 1 fails before the collective");
    std::this_thread::sleep_for(std::chrono::seconds(100));
    return 0;
  }
  xf::tensor y = xf::dist::all_reduce(xf::ones({4}));
  std::cout << "rank " << rank << " should not get here: " << y << std::endl;
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "unwind") == 0) {
    try {
      return run(argc, argv);
    } catch (const std::exception& e) {
      std::cerr << "caught: " << e.what() << std::endl;
      return 1;
    }
  }
  return run(argc, argv);
}
