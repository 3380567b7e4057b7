// The one translation unit that defines the functions of xfunc's compiled runtime (NOTE:
// [Compiled runtime] in include/xfunc/core/linkage.hpp); the other src/*.cpp and the programs
// that link xfunc::kernels only declare them.
#define XFUNC_DEFINE_RUNTIME
#include "kernels.hpp"
