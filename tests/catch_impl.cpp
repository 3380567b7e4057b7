// Catch2's implementation, compiled once for every test program; the main is catch_main.cpp's, or
// a test's own (tests/dist/dist_main.cpp runs the session inside MPI).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_run.hpp"

int xfunc_catch_run(int argc, char** argv) { return Catch::Session().run(argc, argv); }
