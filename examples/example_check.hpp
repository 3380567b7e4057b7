#pragma once
// The examples check their own results: check() prints each result and counts the failures;
// main returns nonzero when there were any, so that the example's test fails.
#include <iostream>
#include <string>

namespace example {
inline int failures = 0;

inline void check(bool ok, const std::string& what) {
  std::cout << (ok ? "  ok    " : "  FAIL  ") << what << '\n';
  if (!ok) ++failures;
}
}  // namespace example
