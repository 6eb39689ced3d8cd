// tests/kernels/rotate_order_test.cpp — the SIMD kernels' row-order path against the scalar kernel.
//
// Small ranges (what the sweep in rotate_simd_test.cpp uses) go pair block by pair block; ranges
// above 256 KiB of 32-bit storage go row by row. Both orders must give the oracle's bits.
#include <cmath>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/rotate.hpp>

namespace {
namespace k = posenc::kernels;
}  // namespace

TEST_CASE("SIMD rotation of a range larger than the cache-resident threshold (row order) is bit-exact",
          "[kernels][simd]") {
  // Above 256 KiB the kernels go row by row instead of pair block by pair block; same arithmetic.
  constexpr std::ptrdiff_t D = 128, heads = 4, tokens = 700, P = D / 2;
  std::vector<float> x(static_cast<std::size_t>(tokens * heads * D)), cs(static_cast<std::size_t>(tokens * P)),
      sn(cs.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2001) / 1000.f - 1.f;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    cs[i] = std::cos(0.001f * static_cast<float>(i));
    sn[i] = std::sin(0.001f * static_cast<float>(i));
  }
  const k::angle_rows<float> angles{cs.data(), sn.data(), P};
  for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) continue;
    k::scoped_isa use(i);
    for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
      INFO("isa " << k::isa_name(i) << " layout " << int(layout));
      const k::rope_geometry g{D, D, 0, layout};
      auto ref = x, out = x;
      k::scalar::rotate(g, k::head_rows<const float>{ref.data(), tokens, heads, heads * D, D},
                        k::head_rows<float>{ref.data(), tokens, heads, heads * D, D}, angles, k::rotation::inverse);
      k::rotate(g, k::head_rows<float>{out.data(), tokens, heads, heads * D, D}, angles, k::rotation::inverse);
      REQUIRE(std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)) == 0);
    }
  }
}
