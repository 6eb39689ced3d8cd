// tests/kernels/fused_test.cpp — the fused arithmetic mode (kernels::arithmetic::fused): within its
// documented bound of the exact scalar oracle on every SIMD ISA, different from it somewhere (the
// mode takes effect), and the default mode bit-exact again once it is switched back.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/rotate.hpp>

namespace {
namespace k = posenc::kernels;
using posenc::bfloat16;
using posenc::compute_t;
using posenc::float16;

struct arithmetic_guard {
  k::arithmetic previous = k::active_arithmetic();
  explicit arithmetic_guard(k::arithmetic a) { k::set_arithmetic(a); }
  ~arithmetic_guard() { k::set_arithmetic(previous); }
  arithmetic_guard(const arithmetic_guard&) = delete;
  arithmetic_guard& operator=(const arithmetic_guard&) = delete;
};
}  // namespace

TEMPLATE_TEST_CASE("fused arithmetic stays within 3u(|a|+|b|)(|c|+|s|) (+ one 16-bit rounding) of the oracle",
                   "[kernels][simd][fused]", float, double, bfloat16, float16) {
  using T = TestType;
  using C = compute_t<T>;
  const double u = std::is_same_v<C, double> ? 0x1p-53 : 0x1p-24;
  const double storage = std::is_same_v<T, bfloat16> ? 0x1p-7 : std::is_same_v<T, float16> ? 0x1p-10 : 0.0;
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> ux(-2.0, 2.0), ua(0.0, 6.283185307179586);
  REQUIRE(k::active_arithmetic() == k::arithmetic::exact);
  for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) continue;
    k::scoped_isa use(i);
    std::size_t differ = 0, total = 0;
    for (int D : {8, 30, 64, 128, 130}) {
      for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
        const k::rope_geometry g{D, D, 0, layout};
        const int P = g.pairs();
        const std::ptrdiff_t tokens = 4, heads = 3, n = tokens * heads * D;
        std::vector<C> cs(static_cast<std::size_t>(tokens * P)), sn(cs.size());
        for (std::size_t j = 0; j < cs.size(); ++j) {
          const double a = ua(rng);
          cs[j] = static_cast<C>(std::cos(a)), sn[j] = static_cast<C>(std::sin(a));
        }
        std::vector<T> x(static_cast<std::size_t>(n));
        for (auto& v : x) v = T(static_cast<C>(ux(rng)));
        const k::head_rows<const T> src{x.data(), tokens, heads, heads * D, D};
        const k::angle_rows<C> angles{cs.data(), sn.data(), P};
        for (auto dir : {k::rotation::forward, k::rotation::inverse}) {
          INFO("isa " << k::isa_name(i) << " D " << D << " layout " << int(layout) << " dir " << int(dir));
          std::vector<T> ref(x.size()), out(x.size()), again(x.size());
          k::scalar::rotate(g, src, k::head_rows<T>{ref.data(), tokens, heads, heads * D, D}, angles, dir);
          {
            arithmetic_guard fused(k::arithmetic::fused);
            k::rotate(g, src, k::head_rows<T>{out.data(), tokens, heads, heads * D, D}, angles, dir);
          }
          k::rotate(g, src, k::head_rows<T>{again.data(), tokens, heads, heads * D, D}, angles, dir);
          REQUIRE(std::memcmp(again.data(), ref.data(), ref.size() * sizeof(T)) == 0);  // exact again
          for (std::ptrdiff_t r = 0; r < tokens * heads; ++r) {
            for (int j = 0; j < D; ++j) {
              // The pair element j belongs to, and its partner.
              const int kp = layout == k::pairing::half_split ? j % P : j / 2;
              const int other = layout == k::pairing::half_split ? (j < P ? j + P : j - P) : (j ^ 1);
              const auto at = [&](int e) { return static_cast<double>(static_cast<C>(x[r * D + e])); };
              const double c = static_cast<double>(cs[(r / heads) * P + kp]);
              const double s = static_cast<double>(sn[(r / heads) * P + kp]);
              const double o = static_cast<double>(static_cast<C>(out[r * D + j]));
              const double e = static_cast<double>(static_cast<C>(ref[r * D + j]));
              const double tol = 3 * u * (std::fabs(at(j)) + std::fabs(at(other))) * (std::fabs(c) + std::fabs(s)) +
                                 storage * std::fabs(e);
              REQUIRE(std::fabs(o - e) <= tol);
              differ += o != e;
              ++total;
            }
          }
        }
      }
    }
    INFO("isa " << k::isa_name(i) << ": " << differ << " of " << total << " elements differ from exact");
    // The mode takes effect (checked where the storage keeps the last float bit; in 16-bit storage
    // the final rounding hides it).
    if constexpr (std::is_same_v<T, C>) CHECK(differ > 0);
  }
}
