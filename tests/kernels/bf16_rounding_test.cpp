// tests/kernels/bf16_rounding_test.cpp — the SIMD bfloat16 store path against bfloat16::from_float.
//
// The SIMD kernels round float results to bfloat16 with their own integer sequence (RNE, NaN made
// quiet). Random data rarely hits ties, NaN payloads, infinities or the carry into the exponent, so
// this rotates every one of the 65536 bfloat16 bit patterns by angles whose products land on and
// next to ties, and demands bit equality with the scalar kernel (which uses from_float).
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/rotate.hpp>

namespace {

namespace k = posenc::kernels;
using posenc::bfloat16;

bool same_bits(const std::vector<bfloat16>& a, const std::vector<bfloat16>& b) {
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(bfloat16)) == 0;
}

}  // namespace

TEST_CASE("SIMD bfloat16 stores round every bit pattern like bfloat16::from_float", "[kernels][simd][bf16]") {
  // This TU runs the hand-tuned conversions (generic_ops_test.cpp runs the generic ones).
#if POSENC_HAS_X86_KERNELS
  STATIC_REQUIRE(k::avx2::native_bf16);
  STATIC_REQUIRE(k::avx512::native_bf16);
#endif
#if POSENC_HAS_NEON_KERNELS
  STATIC_REQUIRE(k::neon::native_bf16);
#endif
  constexpr std::ptrdiff_t D = 64, heads = 4, P = D / 2;
  constexpr std::ptrdiff_t tokens = 65536 / (D * heads);
  // Every bfloat16 bit pattern except NaN (whose payload the hardware may take from either NaN
  // operand of a product or sum; that choice is the compiler's operand order, not the rounding).
  std::vector<bfloat16> all(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) {
    all[i] = bfloat16::from_bits(static_cast<std::uint16_t>(i * 40503u));
    if (std::isnan(static_cast<float>(all[i]))) all[i] = bfloat16(0.f);
  }
  // (cos, sin): (1, 0) keeps x exact and makes inf * 0 NaNs; 1.5 puts the products of odd bfloat16
  // mantissas exactly on ties, 1 + 2^-8 those of powers of two; the NaN cosine carries a payload
  // whose low 16 bits would carry into the sign if rounded like a number (its sine is non-zero, so
  // the NaN of a result always comes from one operand).
  const float payload_nan = std::bit_cast<float>(0x7fbfffffu);
  const float angle_values[][2] = {{1.f, 0.f},    {1.5f, 0.f},  {1.f + 0x1p-8f, 0x1p-8f}, {-1.5f, 0.f},
                                   {0.75f, 0.5f}, {1.5f, 1.5f}, {payload_nan, 0.5f},      {1.f, 1.f + 0x1p-8f}};
  std::vector<float> cs(static_cast<std::size_t>(tokens * P)), sn(cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i) {
    cs[i] = angle_values[(i + i / 3) % 8][0];
    sn[i] = angle_values[(i + i / 3) % 8][1];
  }
  const k::angle_rows<float> angles{cs.data(), sn.data(), P};
  for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) continue;
    k::scoped_isa use(i);
    REQUIRE(use.active());
    for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
      for (auto dir : {k::rotation::forward, k::rotation::inverse}) {
        for (bool stream : {false, true}) {
          INFO("isa " << k::isa_name(i) << " layout " << int(layout) << " dir " << int(dir) << " stream " << stream);
          const k::rope_geometry g{D, D, 0, layout};
          const k::head_rows<const bfloat16> src{all.data(), tokens, heads, heads * D, D};
          std::vector<bfloat16> ref(all.size()), out(all.size());
          k::scalar::rotate(g, src, k::head_rows<bfloat16>{ref.data(), tokens, heads, heads * D, D}, angles, dir);
          k::rotate_rows(g, src, k::head_rows<bfloat16>{out.data(), tokens, heads, heads * D, D}, angles, dir, 0,
                         tokens * heads, stream);
          REQUIRE(same_bits(out, ref));
        }
      }
    }
  }
  // The sweep must reach NaN and infinite results (else it tests less than it claims).
  std::vector<bfloat16> ref(all.size());
  k::scalar::rotate(k::rope_geometry{D, D, 0, k::pairing::half_split},
                    k::head_rows<const bfloat16>{all.data(), tokens, heads, heads * D, D},
                    k::head_rows<bfloat16>{ref.data(), tokens, heads, heads * D, D}, angles, k::rotation::forward);
  // ... and be the oracle it claims to be: the products and difference rounded by from_float.
  for (std::ptrdiff_t r = 0; r < tokens * heads; ++r) {
    for (std::ptrdiff_t j = 0; j < P; ++j) {
      const float a = static_cast<float>(all[r * D + j]), b = static_cast<float>(all[r * D + j + P]);
      const volatile float ac = a * cs[r / heads * P + j], bs = b * sn[r / heads * P + j];
      REQUIRE(ref[r * D + j].bits == bfloat16(ac - bs).bits);
    }
  }
  int nan = 0, inf = 0;
  for (bfloat16 v : ref) {
    nan += std::isnan(static_cast<float>(v));
    inf += std::isinf(static_cast<float>(v));
  }
  CHECK(nan > 100);
  CHECK(inf >= 3);
}
