#pragma once
/// Runs Catch2's session over the test cases linked into the program and returns its exit code
/// (defined in tests/catch_impl.cpp, which holds Catch2's implementation: Catch::Session is
/// declared only there).
int xfunc_catch_run(int argc, char** argv);
