// Catch2's main for the xf::dist tests: MPI is initialised around the whole session, and the
// job fails when a test fails on any rank.
#include <chrono>
#include <xfunc/dist/communicator.hpp>

#include "catch_run.hpp"

int main(int argc, char** argv) {
  xfunc::dist::environment env(argc, argv);
  // a test that leaves one rank behind aborts the job instead of hanging it
  xfunc::dist::set_timeout(std::chrono::seconds(120));
  const int failed = xfunc_catch_run(argc, argv) != 0 ? 1 : 0;
  int any = failed;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}
