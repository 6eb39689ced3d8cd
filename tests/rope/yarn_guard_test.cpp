// tests/rope/yarn_guard_test.cpp — YaRN's `if (low == high) high += 0.001` guard, reached with the
// default betas (a case where low equals high, which the schedule test does not reach).
#include <cmath>
#include <cstddef>

#include <catch2/catch.hpp>

#include <posenc/rope/frequencies.hpp>
#include <posenc/rope/scaling/yarn.hpp>
#include <posenc/rope/schedule.hpp>

TEST_CASE("YaRN with L0 = 6 and default betas: low == high == 0, pair 0 kept, the rest interpolated",
          "[rope][schedule][yarn]") {
  // corr(beta) = dims * ln(L0 / (2 pi beta)) / (2 ln theta) < 0 for beta_fast 32 and beta_slow 1 when
  // L0 = 6, so floor/ceil and the clamp at 0 give low = high = 0: without the guard the ramp of
  // pair 0 is 0 / 0 (NaN) and every other pair divides by zero.
  const posenc::yarn_scaling y{.factor = 4, .original_max_position = 6};
  const auto [lo, hi] = posenc::yarn_correction_range(y.beta_fast, y.beta_slow, 64, 1e4, 6, y.truncate);
  REQUIRE(lo == 0);
  REQUIRE(hi == 0);
  const posenc::rope_schedule s(posenc::rope_config{.head_dim = 64, .theta = 1e4, .scaling = y});
  const auto plain = posenc::detail::default_inv_freq(1e4, 64, 32);
  const auto& w = s.base().inv_freq;
  REQUIRE(w.size() == plain.size());
  CHECK(w[0] == plain[0]);  // ramp 0: pure extrapolation
  for (std::size_t k = 1; k < w.size(); ++k) {
    INFO("pair " << k);
    REQUIRE(std::isfinite(w[k]));
    CHECK(w[k] == Approx(plain[k] / 4).epsilon(1e-15));  // ramp 1: pure interpolation
  }
  CHECK(std::isfinite(s.base().attention_scaling));
}
