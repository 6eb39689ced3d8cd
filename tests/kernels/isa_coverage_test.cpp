// The instruction sets this CPU runs, one test case each: a case passes when its ISA's kernels are
// exercised by the suite on this machine and is reported "Skipped" by ctest when the CPU (or the
// build target) lacks it, so the test summary says which SIMD paths did not run here.
#include <posenc/kernels/isa.hpp>

#include "support/skip.hpp"

namespace k = posenc::kernels;

namespace {
void require_isa(k::isa i) {
  if (!k::isa_supported(i)) POSENC_SKIP("ISA " << k::isa_name(i) << " not supported on this machine");
  SUCCEED("ISA " << k::isa_name(i) << " runs here");
}
}  // namespace

TEST_CASE("isa coverage: avx2", "[kernels][isa]") {
  require_isa(k::isa::avx2);
}
TEST_CASE("isa coverage: avx512", "[kernels][isa]") {
  require_isa(k::isa::avx512);
}
TEST_CASE("isa coverage: neon", "[kernels][isa]") {
  require_isa(k::isa::neon);
}
