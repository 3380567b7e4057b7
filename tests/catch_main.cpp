// The main of every test program but the MPI ones.
#include "catch_run.hpp"

int main(int argc, char** argv) { return xfunc_catch_run(argc, argv); }
