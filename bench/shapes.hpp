// Which shapes a bench runs: the ones its rows are quoted at, or small ones that only check that
// every bench still runs (Debug builds, and the test suite's smoke runs, which set POSENC_BENCH_SMOKE).
#pragma once

#include <cstdlib>

inline bool bench_smoke_shapes() {
#if defined(NDEBUG)
  return std::getenv("POSENC_BENCH_SMOKE") != nullptr;
#else
  return true;
#endif
}
