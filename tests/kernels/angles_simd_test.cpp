// tests/kernels/angles_simd_test.cpp — accuracy of the cos/sin row builders against an independent
// long-double reference, for every ISA the machine runs.
//
// compute_angles (tables, docs/design.md §5): float rows within half an ulp of exact (+1e-15), double rows
// within 1e-15; row_angles<float> (the on-the-fly path): within 2e-7 of exact at any position
// below 2^31. Positions near 2^16, 2^20, 2^24, 2^31 for bases 1e4, 5e5 and 1e6.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/angles.hpp>
#include <posenc/kernels/rotate.hpp>

namespace {

namespace k = posenc::kernels;

// Exact-enough reference: p * w = hi + lo exactly (two-product), reduced by 2*pi split in three
// parts whose sum is within 4e-31 of 2*pi (k * c1 and k * c2 are exact in long double), then
// sinl/cosl. Error ~1e-18 for |p * w| < 2^29 * 2*pi.
void reference(std::int64_t p, double w, long double& s, long double& c) {
  const double a = static_cast<double>(p);
  const double hi = a * w, lo = std::fma(a, w, -hi);
  const long double q = std::nearbyint(static_cast<long double>(hi) / 6.283185307179586476925286766559L);
  // The three parts are doubles (c1, c2 with 24 significant bits); as long double literals the
  // same digits would denote different numbers.
  const long double c1 = 6.283185005187988, c2 = 3.0199157663446385e-07, c3 = 2.1561211432632476e-14;
  const long double r = (((static_cast<long double>(hi) - q * c1) - q * c2) - q * c3) + lo;
  s = std::sin(r);
  c = std::cos(r);
}

std::vector<double> inv_freq(int pairs, double base) {
  std::vector<double> w(static_cast<std::size_t>(pairs));
  for (int i = 0; i < pairs; ++i) w[static_cast<std::size_t>(i)] = std::pow(base, -2.0 * i / (2.0 * pairs));
  return w;
}

std::vector<std::int64_t> positions_near_powers() {
  std::vector<std::int64_t> out;
  for (int e : {16, 20, 24, 31}) {
    for (std::int64_t d = -3; d <= 3; ++d) out.push_back((std::int64_t{1} << e) + d - (e == 31 ? 4 : 0));
  }
  out.push_back(0);
  out.push_back(-(std::int64_t{1} << 20) - 1);
  return out;
}

template <class Fn>
void for_each_isa(Fn fn) {
  for (k::isa i : {k::isa::scalar, k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) {
      UNSCOPED_INFO("ISA " << k::isa_name(i) << " not supported on this machine: skipped (see kernels.isa coverage)");
      continue;
    }
    k::scoped_isa use(i);
    INFO("isa " << k::isa_name(i));
    fn();
  }
}

}  // namespace

TEST_CASE("compute_angles: float and double tables are exact to one rounding at large positions", "[kernels][angles]") {
  const auto pos = positions_near_powers();
  const auto n = static_cast<std::ptrdiff_t>(pos.size());
  for_each_isa([&] {
    for (double base : {1e4, 5e5, 1e6}) {
      for (int pairs : {64, 67, 3}) {
        for (double M : {1.0, 1.2}) {
          const auto w = inv_freq(pairs, base);
          std::vector<float> cf(pos.size() * static_cast<std::size_t>(pairs)), sf(cf.size());
          std::vector<double> cd(cf.size()), sd(cf.size());
          k::compute_angles(w.data(), pairs, pos.data(), n, M, cf.data(), sf.data(), pairs);
          k::compute_angles(w.data(), pairs, pos.data(), n, M, cd.data(), sd.data(), pairs);
          double worst_f = 0, worst_d = 0;
          for (std::size_t t = 0; t < pos.size(); ++t) {
            for (std::size_t j = 0; j < static_cast<std::size_t>(pairs); ++j) {
              long double s, c;
              reference(pos[t], w[j], s, c);
              const std::size_t i = t * static_cast<std::size_t>(pairs) + j;
              for (auto [vf, vd, ex] : {std::tuple{cf[i], cd[i], M * c}, std::tuple{sf[i], sd[i], M * s}}) {
                const float exf = static_cast<float>(ex);
                const float mag = std::fabs(exf);  // the larger ulp, for values just below a power of 2
                const double half_ulp = 0.5 * static_cast<double>(std::nextafter(mag, INFINITY) - mag);
                worst_f = std::max(worst_f, static_cast<double>(std::fabs(vf - ex)) - (half_ulp + 1e-15));
                worst_d = std::max(worst_d, static_cast<double>(std::fabs(vd - ex)));
              }
            }
          }
          INFO("base " << base << " pairs " << pairs << " M " << M);
          CHECK(worst_f <= 0);
          CHECK(worst_d <= 1e-15);
        }
      }
    }
  });
}

TEST_CASE("compute_angles agrees with the scalar oracle, including angles beyond 2^29 turns", "[kernels][angles]") {
  std::vector<std::int64_t> pos{1, 1000, std::int64_t{1} << 40, (std::int64_t{1} << 53) + 1, INT64_MAX, INT64_MIN + 1};
  const auto n = static_cast<std::ptrdiff_t>(pos.size());
  const auto w = inv_freq(37, 1e4);
  std::vector<float> cr(pos.size() * 37), sr(cr.size()), c(cr.size()), s(cr.size());
  k::scalar::compute_angles(w.data(), 37, pos.data(), n, 1.0, cr.data(), sr.data(), 37);
  for_each_isa([&] {
    k::compute_angles(w.data(), 37, pos.data(), n, 1.0, c.data(), s.data(), 37);
    for (std::size_t i = 0; i < c.size(); ++i) {
      INFO("element " << i);
      CHECK(std::fabs(c[i] - cr[i]) <= 6e-8f);
      CHECK(std::fabs(s[i] - sr[i]) <= 6e-8f);
    }
  });
}

TEST_CASE("row_angles<float> (on the fly) stays within 2e-7 of exact up to 2^31", "[kernels][angles]") {
  std::vector<std::int64_t> pos = positions_near_powers();
  for (std::int64_t p = 12345; p < (std::int64_t{1} << 31); p = p * 3 + 7) pos.push_back(p);
  for_each_isa([&] {
    for (double base : {1e4, 5e5, 1e6}) {
      for (int pairs : {64, 67, 5}) {
        const auto w = inv_freq(pairs, base);
        std::vector<float> c(static_cast<std::size_t>(pairs)), s(c.size());
        double worst = 0;
        for (std::int64_t p : pos) {
          k::detail::row_angles_on(k::active_isa(), w.data(), pairs, p, 1.0, c.data(), s.data());
          for (std::size_t j = 0; j < c.size(); ++j) {
            long double rs, rc;
            reference(p, w[j], rs, rc);
            worst =
                std::max({worst, static_cast<double>(std::fabs(c[j] - rc)), static_cast<double>(std::fabs(s[j] - rs))});
          }
        }
        INFO("base " << base << " pairs " << pairs << " worst " << worst);
        CHECK(worst <= 2e-7);
      }
    }
  });
}
