// Links against xfunc::distributed: an all_reduce of one tensor over MPI_COMM_WORLD.
#include <xfunc/distributed.hpp>
#include <xfunc/xfunc.hpp>

#include <iostream>

namespace xf = xfunc;

int main(int argc, char** argv) {
  xf::dist::environment env(argc, argv);
  const xf::tensor total = xf::dist::all_reduce(xf::ones({3}));
  std::cout << total << "\n";
  return xf::allclose(total, xf::full({3}, double(xf::dist::world().size()))) ? 0 : 1;
}
