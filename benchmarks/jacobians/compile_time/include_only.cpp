// Compile-time benchmark (a): a translation unit that only includes the whole library.
#include <xfunc/xfunc.hpp>
