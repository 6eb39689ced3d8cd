// tests/kernels/extreme_positions_test.cpp — positions at the ends of int64 through every angle
// path: exact::reduced_angle, compute_angles and row_angles on every ISA, and
// rotate_positions. No undefined behaviour (the 2^63 -> int64 cast is gone; run under UBSan with
// float-cast-overflow), finite angles in [-pi, pi], unit (cos, sin), and exact values where p * w
// is a representable number (power-of-two frequencies). Also: reduced_angle gives the same bits in
// a TU built with FMA contraction (contraction_tu.cpp).
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/rotate.hpp>

#include "support/skip.hpp"

namespace {
namespace k = posenc::kernels;
constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
const std::vector<std::int64_t> extremes{lo, lo + 1,    lo + 511, lo + 512, lo + 1024, -1,     0,
                                         1,  hi - 1024, hi - 513, hi - 512, hi - 511,  hi - 1, hi};
}  // namespace

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
double posenc_test_reduced_angle_fma_tu(std::int64_t p, double w);
const char* posenc_test_fma_tu_abi();
#endif

TEST_CASE("reduced_angle at INT64_MIN, INT64_MAX and neighbours: finite, in [-pi, pi], exact when p*w is",
          "[kernels][angles][extreme]") {
  const double pi = std::numbers::pi;
  for (std::int64_t p : extremes) {
    for (double w : {1.0, 0.5, 1e-3, 1e-6, 0x1p-40, 0x1p-60, 0x1p-62, 1e-12}) {
      INFO("p " << p << " w " << w);
      const double r = k::exact::reduced_angle(p, w);
      CHECK(std::isfinite(r));
      CHECK(std::fabs(r) <= pi + 1e-12);
    }
  }
  // p * 2^-60 is exact: INT64_MIN -> -8, INT64_MAX -> 8 - 2^-60, INT64_MAX - 512 -> 8 - 513 * 2^-60.
  CHECK(k::exact::reduced_angle(lo, 0x1p-60) == Approx(-8.0 + 2 * pi).margin(1e-15));
  CHECK(k::exact::reduced_angle(hi, 0x1p-60) == Approx(8.0 - 2 * pi).margin(1e-15));
  CHECK(k::exact::reduced_angle(hi - 512, 0x1p-60) == Approx(8.0 - 2 * pi - 513 * 0x1p-60).margin(1e-15));
  CHECK(k::exact::reduced_angle(lo, 0x1p-62) == -2.0);
  CHECK(k::exact::reduced_angle(lo + 1, 0x1p-62) == Approx(-2.0).margin(1e-18));
  // The split p = a + b is exact everywhere, also where double(p) rounds up to 2^63 (p >= 2^63 - 512).
  for (std::int64_t p : extremes) {
    INFO("p " << p);
    double a, b;
    k::exact::split_position(p, a, b);
    if (p >= hi - 511) {
      CHECK(a == 0x1p63);
      CHECK(b == -static_cast<double>(hi - p) - 1.0);
    } else {
      CHECK(static_cast<std::int64_t>(a) + static_cast<std::int64_t>(b) == p);
    }
  }
}

TEST_CASE("compute_angles, row_angles and rotate_positions at extreme positions on every ISA",
          "[kernels][angles][extreme]") {
  const std::vector<double> w{1.0, 0.37, 1e-3, 0x1p-60, 1e-9, 0.5, 2e-5, 1e-7, 0.9};
  const int P = static_cast<int>(w.size());
  const auto n = extremes.size() * w.size();
  std::vector<double> rc(n), rs(n);
  k::scalar::compute_angles(w.data(), P, extremes.data(), static_cast<std::ptrdiff_t>(extremes.size()), 1.0, rc.data(),
                            rs.data(), P);
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(std::isfinite(rc[i]));
    REQUIRE(rc[i] * rc[i] + rs[i] * rs[i] == Approx(1.0).epsilon(1e-14));
  }
  // cos(INT64_MIN * 2^-60) = cos(-8).
  CHECK(rc[3] == Approx(std::cos(8.0)).margin(1e-15));
  for (k::isa i : {k::isa::scalar, k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) continue;
    k::scoped_isa use(i);
    INFO("isa " << k::isa_name(i));
    std::vector<double> c(n), s(n);
    std::vector<float> cf(n), sf(n);
    k::compute_angles(w.data(), P, extremes.data(), static_cast<std::ptrdiff_t>(extremes.size()), 1.0, c.data(),
                      s.data(), P);
    k::compute_angles(w.data(), P, extremes.data(), static_cast<std::ptrdiff_t>(extremes.size()), 1.0, cf.data(),
                      sf.data(), P);
    for (std::size_t j = 0; j < n; ++j) {
      CHECK(c[j] == Approx(rc[j]).margin(1e-15));
      CHECK(s[j] == Approx(rs[j]).margin(1e-15));
      CHECK(std::fabs(cf[j] - rc[j]) <= 0x1p-24);
    }
    for (std::size_t t = 0; t < extremes.size(); ++t) {  // on the fly: within 2e-7 of exact
      std::vector<float> oc(w.size()), os(w.size());
      k::detail::row_angles_on(i, w.data(), P, extremes[t], 1.0, oc.data(), os.data());
      for (std::size_t j = 0; j < w.size(); ++j) {
        CHECK(std::fabs(oc[j] - rc[t * w.size() + j]) <= 2e-7);
        CHECK(std::fabs(os[j] - rs[t * w.size() + j]) <= 2e-7);
      }
    }
    // rotate_positions: finite, and each pair keeps its length.
    const std::ptrdiff_t tokens = static_cast<std::ptrdiff_t>(extremes.size()), D = 2 * P;
    std::vector<float> x(static_cast<std::size_t>(tokens * D));
    for (std::size_t j = 0; j < x.size(); ++j) x[j] = 0.25f * static_cast<float>(j % 7) - 0.5f;
    auto y = x;
    k::rotate_positions(k::rope_geometry{static_cast<int>(D), static_cast<int>(D), 0, k::pairing::half_split},
                        k::head_rows<float>{y.data(), tokens, 1, D, D}, w.data(), extremes.data(), 1.0);
    for (std::ptrdiff_t t = 0; t < tokens; ++t) {
      for (int j = 0; j < P; ++j) {
        const auto a = static_cast<std::size_t>(t * D + j), b = a + static_cast<std::size_t>(P);
        REQUIRE(std::isfinite(y[a]));
        CHECK(std::hypot(y[a], y[b]) == Approx(std::hypot(x[a], x[b])).margin(1e-6));
      }
    }
  }
}

TEST_CASE("reduced_angle gives the same bits in a TU built with FMA contraction", "[kernels][angles][contraction]") {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  if (!k::isa_supported(k::isa::avx2)) POSENC_SKIP("no AVX2+FMA on this machine");
  CHECK(std::string_view(posenc_test_fma_tu_abi()).find("force_avx2") != std::string_view::npos);
  std::uint64_t state = 0x9E3779B97F4A7C15u;
  int differ = 0;
  for (int i = 0; i < 200000; ++i) {
    // Positions above 2^53 (p = a + b with b != 0) and full-mantissa frequencies below 2^29 turns:
    // the products a fused multiply-add would absorb are inexact there.
    state = state * 6364136223846793005u + 1442695040888963407u;
    const auto p = static_cast<std::int64_t>((state >> 1) | (std::uint64_t{1} << 53)) * (i % 2 ? 1 : -1);
    state = state * 6364136223846793005u + 1442695040888963407u;
    const double m = 1.0 + static_cast<double>(state >> 12) * 0x1p-52;
    const double w = std::ldexp(m, -34 - (i % 24));
    differ += k::exact::reduced_angle(p, w) != posenc_test_reduced_angle_fma_tu(p, w);
  }
  CHECK(differ == 0);
#else
  POSENC_SKIP("GCC on x86-64 only");
#endif
}
