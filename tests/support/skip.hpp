// tests/support/skip.hpp — visible skips for Catch2 2.13, which has no SKIP.
//
// A test case that cannot run on this machine (a missing ISA, a compiler-specific check) calls
// POSENC_SKIP(reason). Under ctest every test case runs in its own process with POSENC_SKIP_EXIT
// set (tests/CMakeLists.txt), so the process ends with status 77, which ctest reports as "Skipped"
// and lists in its summary: CI output shows what did not run on this CPU. Run by hand, the case
// prints the reason and returns. Only for a whole test case: a loop that skips one ISA of several
// prints the ISA and goes on, and the per-ISA coverage cases (tests/kernels/isa_coverage_test.cpp)
// make the missing ISA visible in the summary.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

namespace posenc_test {

inline void skip_now(const std::string& reason) {
  std::printf("SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
  if (std::getenv("POSENC_SKIP_EXIT") != nullptr) std::_Exit(77);
  WARN("SKIPPED: " << reason);
}

}  // namespace posenc_test

/// Ends the current test case as skipped (status 77 under ctest), with a reason.
#define POSENC_SKIP(reason)                      \
  do {                                           \
    std::ostringstream posenc_skip_;             \
    posenc_skip_ << reason;                      \
    ::posenc_test::skip_now(posenc_skip_.str()); \
    return;                                      \
  } while (0)
