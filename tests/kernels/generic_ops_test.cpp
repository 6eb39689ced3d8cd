// tests/kernels/generic_ops_test.cpp — a TU in which no ISA has its hand-tuned bfloat16 conversion
// (POSENC_KERNELS_GENERIC_BF16): the operations come from ops/generic.inl, the drivers are the same,
// and the result must stay bit-exact with the scalar oracle. This is what adding an ISA without
// that operation looks like; the TU's kernels live in their own ABI namespace (…_gbf16).
#define POSENC_KERNELS_GENERIC_BF16 1

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/rotate.hpp>

#include "support/skip.hpp"

#define POSENC_TEST_STR2(x) #x
#define POSENC_TEST_STR(x) POSENC_TEST_STR2(x)

namespace {
namespace k = posenc::kernels;
using posenc::bfloat16;

}  // namespace

TEST_CASE("generic bfloat16 operations (no hand-tuned conversion) stay bit-exact with the scalar oracle",
          "[kernels][simd][bf16][generic]") {
  STATIC_REQUIRE(std::string_view(POSENC_TEST_STR(POSENC_KERNELS_ABI)).find("gbf16") != std::string_view::npos);
#if POSENC_HAS_X86_KERNELS
  STATIC_REQUIRE_FALSE(k::avx512::native_bf16);  // the generic operation is what runs
  STATIC_REQUIRE_FALSE(k::avx2::native_bf16);
#endif
#if POSENC_HAS_NEON_KERNELS
  STATIC_REQUIRE_FALSE(k::neon::native_bf16);
#endif
  std::mt19937 rng(7);
  // Random values plus every bit pattern of one exponent band (ties and odd mantissas), NaN excluded.
  std::vector<bfloat16> pool;
  for (std::uint32_t b = 0x3f00; b < 0x4100; ++b) pool.push_back(bfloat16::from_bits(static_cast<std::uint16_t>(b)));
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (int i = 0; i < 4096; ++i) pool.push_back(bfloat16(u(rng)));
  int isas = 0;
  for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) continue;
    k::scoped_isa use(i);
    REQUIRE(use.active());
    ++isas;
    for (int D : {2, 6, 16, 30, 64, 66, 128, 130}) {
      for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
        const k::rope_geometry g{D, D >= 6 ? D - 2 : D, D >= 6 ? 1 : 0, layout};
        const int P = g.pairs();
        const std::ptrdiff_t tokens = 5, heads = 3, n = tokens * heads * D;
        std::vector<float> cs(static_cast<std::size_t>(tokens * P)), sn(cs.size());
        for (std::size_t j = 0; j < cs.size(); ++j) {
          const double a = 0.37 * static_cast<double>(j) + 0.1;
          cs[j] = j % 5 == 0 ? 1.5f : static_cast<float>(std::cos(a));
          sn[j] = j % 5 == 0 ? 0.f : static_cast<float>(std::sin(a));
        }
        std::vector<bfloat16> src(static_cast<std::size_t>(n));
        for (std::size_t j = 0; j < src.size(); ++j) src[j] = pool[(j * 7919u) % pool.size()];
        for (auto dir : {k::rotation::forward, k::rotation::inverse}) {
          for (bool stream : {false, true}) {
            INFO("isa " << k::isa_name(i) << " D " << D << " layout " << int(layout) << " stream " << stream);
            const k::head_rows<const bfloat16> x{src.data(), tokens, heads, heads * D, D};
            std::vector<bfloat16> ref(src.size()), out(src.size());
            const k::angle_rows<float> angles{cs.data(), sn.data(), P};
            k::scalar::rotate(g, x, k::head_rows<bfloat16>{ref.data(), tokens, heads, heads * D, D}, angles, dir);
            k::rotate_rows(g, x, k::head_rows<bfloat16>{out.data(), tokens, heads, heads * D, D}, angles, dir, 0,
                           tokens * heads, stream);
            REQUIRE(std::memcmp(out.data(), ref.data(), out.size() * sizeof(bfloat16)) == 0);
          }
        }
      }
    }
  }
  if (isas == 0) POSENC_SKIP("no SIMD ISA on this machine: only the ABI tag was checked");
}
