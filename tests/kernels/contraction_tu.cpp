// tests/kernels/contraction_tu.cpp — a TU whose code is built for AVX2+FMA (GCC's default
// -ffp-contract=fast then fuses a * b + c wherever it may). POSENC_FORCE_ISA_AVX2 gives its kernels
// their own ABI namespace (the target pragma does not update the baseline macros the tag is made
// from), and exact::reduced_angle must still give the bits the other TUs give
// (extreme_positions_test.cpp compares). Kept to one function so that no other inline body of this
// TU, compiled for AVX2, can be chosen by the linker for the rest of the program. GCC only.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#pragma GCC target("avx2,fma")
#pragma GCC optimize("O2")  // contraction happens in an optimisation pass: also in Debug builds
#define POSENC_FORCE_ISA_AVX2 1
#include <cstdint>

#include <posenc/kernels/angle_math.hpp>

double posenc_test_reduced_angle_fma_tu(std::int64_t p, double w) {
  return posenc::kernels::exact::reduced_angle(p, w);
}
#define POSENC_TEST_STR2(x) #x
#define POSENC_TEST_STR(x) POSENC_TEST_STR2(x)
const char* posenc_test_fma_tu_abi() {
  return POSENC_TEST_STR(POSENC_KERNELS_ABI);
}
#endif
