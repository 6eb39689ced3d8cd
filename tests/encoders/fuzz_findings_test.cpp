// tests/encoders/fuzz_findings_test.cpp — what fuzz/fuzz_encoders.cpp found in the additive and
// score-bias encoders: parameters each valid on their own whose combination overflowed to inf/NaN
// values. Each is now a config_error naming the parameter; the nearest valid values stay finite.
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/sinusoidal.hpp>

#include "support/check.hpp"

using namespace posenc;
using posenc_test::error_of;

namespace {
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
}

TEST_CASE("fuzz finding: sinusoidal scale beyond float range made float rows inf") {
  sinusoidal_config c{.d_model = 16, .scale = 1e300};
  error_of([&] { (void)sinusoidal(c); }, "sinusoidal.scale");
  c.scale = std::numeric_limits<float>::max();  // the largest accepted: float rows stay finite
  const sinusoidal s(c);
  std::vector<float> row(16, 0.0f);
  s.encode(1, std::span<float>(row));
  for (float x : row) CHECK(std::isfinite(x));
}

TEST_CASE("fuzz finding: sinusoidal timescales whose frequencies or angles overflow") {
  // min 1.2e308, max 1e-300: the endpoint spacing's ratio is 0 and ln(0) = -inf -> inf frequencies.
  sinusoidal_config c{.d_model = 57,
                      .layout = sinusoidal_layout::concatenated,
                      .spacing = sinusoidal_spacing::endpoint,
                      .min_timescale = 1.2291905892469744e+308,
                      .max_timescale = 1e-300};
  error_of([&] { (void)sinusoidal(c); }, "sinusoidal.max_timescale");
  // w_0 = min_timescale = 5e307 is finite, but p * w_0 at p ~ -4e18 is not: sin(inf) = NaN.
  c = {.d_model = 2,
       .spacing = sinusoidal_spacing::endpoint,
       .min_timescale = 5.1463372096058442e+307,
       .max_timescale = 32,
       .allow_negative = true};
  error_of([&] { (void)sinusoidal(c); }, "sinusoidal.min_timescale");
  // Frequencies up to 2^-63 * DBL_MAX are accepted, and every valid position gives finite values.
  c.min_timescale = 1e280;
  c.max_timescale = 1e280;
  const sinusoidal s(c);
  std::vector<double> row(2);
  s.encode(-(std::int64_t{1} << 62), std::span<double>(row));
  for (double x : row) CHECK(std::isfinite(x));
}

TEST_CASE("fuzz finding: ALiBi slope overrides so large that slope * distance is inf") {
  alibi_config c{.num_heads = 1, .mode = alibi_mode::causal_row_shift, .slopes = {-1e300}};
  error_of([&] { (void)alibi(c); }, "alibi.slopes");
  c.slopes = {-0x1p960};  // the largest accepted magnitude: finite at any pair of positions
  const alibi a(c);
  CHECK(std::isfinite(a.bias(0, 0, int64_min)));
  CHECK(std::isfinite(a.bias(0, 0, std::numeric_limits<std::int64_t>::max())));
}

TEST_CASE("fuzz finding: sinusoidal position 2^62 with position_origin 2^62 overflowed the row index") {
  constexpr std::int64_t lim = std::int64_t{1} << 62;
  const sinusoidal s({.d_model = 8, .position_origin = lim});
  std::vector<double> row(8, 0.0);
  error_of([&] { s.encode(lim, std::span<double>(row)); }, "position");
  error_of([&] { s.add(lim, std::span<double>(row)); }, "position");
  s.encode(lim - 1, std::span<double>(row));  // row 2^63 - 1: the largest that exists
  for (double x : row) CHECK(std::isfinite(x));
}
