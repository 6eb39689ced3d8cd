// tests/rope/fuzz_findings_test.cpp — what fuzz/fuzz_encoders.cpp found in RoPE and xPos: valid
// parameters combining into inf/NaN frequencies, magnitudes or scale factors, and an int64
// overflow at L0 = INT64_MAX. Each is now a config_error naming the parameter, or exact.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/rope/rope.hpp>
#include <posenc/rope/schedule.hpp>
#include <posenc/rope/xpos.hpp>

#include "support/check.hpp"

using namespace posenc;
using posenc_test::error_of;

TEST_CASE("fuzz finding: NTK alpha 5e-324 with compression gave inf frequencies") {
  rope_config c{.head_dim = 32, .scaling = ntk_scaling{4.9406564584124654e-324}, .allow_compression = true};
  const auto msg = error_of([&] { (void)rope_schedule(c); }, "rope.scaling");
  CHECK(msg.find("ntk scaling") != std::string::npos);
  c.scaling = ntk_scaling{0.5};  // compression within range is still fine
  CHECK_NOTHROW(rope_schedule(c));
}

TEST_CASE("fuzz finding: an attention factor of 2e291 made every rotated float inf") {
  yarn_scaling y{.factor = 24, .original_max_position = 7775, .attention_factor = 2.4e291};
  rope_config c{.head_dim = 10, .scaling = y};
  error_of([&] { (void)rope_schedule(c); }, "rope.scaling");
  y.attention_factor = 1024;  // the largest accepted M
  c.scaling = y;
  CHECK(rope_schedule(c).base().attention_scaling == 1024);
  frequency_factors f{std::vector<double>(5, 1.0), 1025};
  c.scaling = f;
  error_of([&] { (void)rope_schedule(c); }, "rope.scaling");
}

TEST_CASE("fuzz finding: a LongRoPE factor of 1e-300 gave w = 1e299, and p * w overflowed") {
  longrope_scaling l{.short_factor = {26.9, 1e-300, 4.7e307, 56.2},
                     .long_factor = {26.9, 1e-300, 4.7e307, 56.2},
                     .original_max_position = 8192,
                     .max_position = 196604};
  rope_config c{.head_dim = 8, .scaling = l};
  const auto msg = error_of([&] { (void)rope_schedule(c); }, "rope.scaling");
  CHECK(msg.find("at most 2^64") != std::string::npos);
  // explicit frequencies: 2^64 is accepted and rotates finitely at INT64_MIN, also in fp32 mode.
  for (const auto mode : {angle_mode::exact, angle_mode::reference_fp32}) {
    const rope r(rope_config{.head_dim = 2, .scaling = explicit_frequencies{{0x1p64}}, .angles = mode});
    std::vector<float> x{1.0f, 0.5f};
    const std::vector<std::int64_t> pos{std::numeric_limits<std::int64_t>::min()};
    r.transform_q(tensor_view<float>::thd(x.data(), 1, 1, 2), pos);
    CHECK(std::isfinite(x[0]));
    CHECK(std::isfinite(x[1]));
  }
  error_of([] { (void)rope_schedule(rope_config{.head_dim = 2, .scaling = explicit_frequencies{{0x1p65}}}); },
           "rope.scaling");
}

TEST_CASE("fuzz finding: LongRoPE with L0 = INT64_MAX overflowed L0 + 1") {
  longrope_scaling l{.short_factor = {1.0},
                     .long_factor = {2.0},
                     .original_max_position = std::numeric_limits<std::int64_t>::max(),
                     .factor = 4.0};
  const rope_schedule s(rope_config{.head_dim = 2, .scaling = l});
  // Never long: no call is longer than INT64_MAX.
  CHECK(s.at(std::numeric_limits<std::int64_t>::max()).inv_freq == s.base().inv_freq);
}

TEST_CASE("fuzz finding: xPos with gamma 1.8e308 gave NaN zeta; zeta 1 at infinite u gave NaN") {
  xpos_config c{.head_dim = 4096, .gamma = 1.7917569770077978e+308};
  error_of([&] { (void)xpos(c); }, "xpos.gamma");
  // gamma 1e300 is finite with (1 + gamma) D finite, so accepted: zeta_k rounds to 1 and, with a
  // scale_base of 1e-300, u = (n - c) / scale_base is -inf. The factor zeta^u = 1^(-inf) must be 1.
  c = {.head_dim = 4, .gamma = 1e300, .scale_base = 1e-300};
  const xpos e(c);
  REQUIRE(e.zeta(0) == 1.0);
  std::vector<double> x{0.5, -0.25, 1.0, 0.75};
  const std::vector<std::int64_t> pos{std::numeric_limits<std::int64_t>::min()};
  e.transform_k(tensor_view<double>::thd(x.data(), 1, 1, 4), pos);
  for (double v : x) CHECK(std::isfinite(v));
}
