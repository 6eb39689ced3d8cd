// Every RoPE row of docs/spec.md §12: config_error whose message names the parameter (and the value).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/rope/rope.hpp>

using namespace posenc;

namespace {

void expect_error(const rope_config& c, const std::string& param, const std::string& value = "") {
  INFO("expecting " << param);
  CHECK_THROWS_AS(rope_schedule(c), config_error);
  try {
    rope r(c);
    FAIL("no exception for " << param);
  } catch (const config_error& e) {
    INFO(e.what());
    CHECK(e.parameter() == param);
    CHECK(std::string(e.what()).find(param) != std::string::npos);
    if (!value.empty()) CHECK(std::string(e.what()).find(value) != std::string::npos);
  }
}

rope_config with(rope_scaling s, int D = 64) {
  return rope_config{.head_dim = D, .scaling = std::move(s)};
}

const double inf = std::numeric_limits<double>::infinity();
const double qnan = std::numeric_limits<double>::quiet_NaN();

}  // namespace

TEST_CASE("geometry errors (odd D/R, R > D, R == 0, offset, partial factor)", "[rope][validation]") {
  expect_error({.head_dim = 63}, "rope.head_dim", "63");
  expect_error({.head_dim = 0}, "rope.head_dim", "0");
  expect_error({.head_dim = 64, .rotary_dim = 7}, "rope.rotary_dim", "7");
  expect_error({.head_dim = 64, .rotary_dim = 66}, "rope.rotary_dim", "66");
  expect_error({.head_dim = 64, .rotary_dim = 0}, "rope.rotary_dim", "0");
  expect_error({.head_dim = 64, .rotary_dim = -2}, "rope.rotary_dim", "-2");
  expect_error({.head_dim = 64, .rotary_dim = 32, .rotary_offset = 40}, "rope.rotary_dim", "32");  // offset + R > D
  expect_error({.head_dim = 64, .rotary_offset = -1}, "rope.rotary_offset", "-1");
  expect_error({.head_dim = 64, .rotary_offset = 64}, "rope.rotary_offset", "64");
  expect_error({.head_dim = 64, .partial_rotary_factor = 0.0}, "rope.partial_rotary_factor", "0");
  expect_error({.head_dim = 64, .partial_rotary_factor = 1.5}, "rope.partial_rotary_factor", "1.5");
  expect_error({.head_dim = 64, .partial_rotary_factor = -0.5}, "rope.partial_rotary_factor");
  expect_error({.head_dim = 64, .partial_rotary_factor = qnan}, "rope.partial_rotary_factor");
  expect_error({.head_dim = 64, .partial_rotary_factor = 0.01}, "rope.partial_rotary_factor");   // floor(0.64) = 0
  expect_error({.head_dim = 100, .partial_rotary_factor = 0.05}, "rope.partial_rotary_factor");  // R = 5, odd
  expect_error({.head_dim = 64, .rotary_dim = 32, .partial_rotary_factor = 0.25}, "rope.rotary_dim", "32");
  // consistent rotary_dim and partial_rotary_factor are fine
  CHECK_NOTHROW(rope_schedule({.head_dim = 64, .rotary_dim = 16, .partial_rotary_factor = 0.25}));
  // proportional: the span D - offset must be even
  expect_error({.head_dim = 64,
                .partial_rotary_factor = 0.25,
                .partial_mode = partial_rotary_mode::proportional,
                .rotary_offset = 3},
               "rope.rotary_offset", "3");
}

TEST_CASE("theta and non-finite values", "[rope][validation]") {
  expect_error({.head_dim = 64, .theta = 1}, "rope.theta", "1");
  expect_error({.head_dim = 64, .theta = 0}, "rope.theta", "0");
  expect_error({.head_dim = 64, .theta = -10000}, "rope.theta");
  expect_error({.head_dim = 64, .theta = inf}, "rope.theta", "inf");
  expect_error({.head_dim = 64, .theta = qnan}, "rope.theta");
  expect_error(with(linear_scaling{.factor = inf}), "linear.factor", "inf");
  expect_error(with(linear_scaling{.factor = qnan}), "linear.factor");
  expect_error(with(yarn_scaling{.factor = 4, .original_max_position = 4096, .beta_fast = inf}), "yarn.beta_fast");
  expect_error(with(yarn_scaling{.factor = 4, .original_max_position = 4096, .attention_factor = qnan}),
               "yarn.attention_factor");
  expect_error(with(frequency_factors{.factors = std::vector<double>(32, 1.0), .attention_factor = inf}),
               "frequency_factors.attention_factor");
}

TEST_CASE("factor 0 / negative / below 1 without allow_compression", "[rope][validation]") {
  expect_error(with(linear_scaling{.factor = 0}), "linear.factor", "0");
  expect_error(with(linear_scaling{.factor = -2}), "linear.factor", "-2");
  expect_error(with(linear_scaling{.factor = 0.5}), "linear.factor", "0.5");
  auto c = with(linear_scaling{.factor = 0.5});
  c.allow_compression = true;
  CHECK_NOTHROW(rope_schedule(c));
  c.scaling = linear_scaling{.factor = 0};
  expect_error(c, "linear.factor", "0");  // 0 stays invalid even with compression allowed
  expect_error(with(ntk_scaling{.alpha = 0}), "ntk.alpha", "0");
  expect_error(with(ntk_scaling{.alpha = 0.5}), "ntk.alpha");
  expect_error(with(dynamic_ntk_scaling{.factor = 0, .original_max_position = 4096}), "dynamic_ntk.factor");
  expect_error(with(yarn_scaling{.factor = 0, .original_max_position = 4096}), "yarn.factor", "0");
  expect_error(with(yarn_scaling{.factor = 0.25, .original_max_position = 4096}), "yarn.factor");
  expect_error(with(llama3_scaling{.factor = 0}), "llama3.factor", "0");
  expect_error(with(llama3_scaling{.factor = -8}), "llama3.factor");
}

TEST_CASE("missing original_max_position (explicit 0 is a value, and invalid)", "[rope][validation]") {
  expect_error(with(dynamic_ntk_scaling{.factor = 2}), "dynamic_ntk.original_max_position", "0");
  expect_error(with(yarn_scaling{.factor = 4}), "yarn.original_max_position", "0");
  expect_error(with(llama3_scaling{.original_max_position = 0}), "llama3.original_max_position", "0");
  expect_error(
      with(longrope_scaling{.short_factor = std::vector<double>(32, 1.0), .long_factor = std::vector<double>(32, 1.0)}),
      "longrope.original_max_position", "0");
  expect_error(with(longrope_scaling{.short_factor = std::vector<double>(32, 1.0),
                                     .long_factor = std::vector<double>(32, 1.0),
                                     .original_max_position = 4096}),
               "longrope.max_position", "0");  // factor absent and nothing to derive it from
}

TEST_CASE("YaRN betas: beta_fast <= beta_slow, explicit 0, negative", "[rope][validation]") {
  const auto y = [](double bf, double bs) {
    return with(yarn_scaling{.factor = 4, .original_max_position = 4096, .beta_fast = bf, .beta_slow = bs});
  };
  expect_error(y(1, 32), "yarn.beta_fast", "1");
  expect_error(y(8, 8), "yarn.beta_fast", "8");
  expect_error(y(0, 1), "yarn.beta_fast", "0");   // HF would silently use 32
  expect_error(y(32, 0), "yarn.beta_slow", "0");  // HF would silently use 1
  expect_error(y(32, -1), "yarn.beta_slow", "-1");
  expect_error(with(yarn_scaling{.factor = 4, .original_max_position = 4096, .attention_factor = 0.0}),
               "yarn.attention_factor", "0");
  expect_error(with(yarn_scaling{.factor = 4, .original_max_position = 4096, .mscale = -1.0}), "yarn.mscale", "-1");
  expect_error(with(yarn_scaling{.factor = 4, .original_max_position = 4096, .mscale_all_dim = qnan}),
               "yarn.mscale_all_dim");
  expect_error(with(yarn_scaling{.factor = 4, .original_max_position = 4096, .extrapolation_factor = 2}),
               "yarn.extrapolation_factor", "2");
  // mscale_all_dim = 0 explicitly present is valid (a value with an explicit rule, docs/spec.md §12)
  CHECK_NOTHROW(rope_schedule(
      with(yarn_scaling{.factor = 4, .original_max_position = 4096, .mscale = 1.0, .mscale_all_dim = 0.0})));
}

TEST_CASE("Llama 3: high_freq_factor == / < low_freq_factor, low 0", "[rope][validation]") {
  // equal factors: allowed (Llama 4 Scout ships low = high = 1), every pair kept or divided
  const rope_schedule eq(with(llama3_scaling{.factor = 16, .low_freq_factor = 1, .high_freq_factor = 1}));
  const rope_schedule plain(with(default_scaling{}));
  for (std::size_t k = 0; k < eq.base().inv_freq.size(); ++k) {
    const double w = eq.base().inv_freq[k], w0 = plain.base().inv_freq[k];
    CHECK((w == w0 || w == w0 / 16));
  }
  expect_error(with(llama3_scaling{.low_freq_factor = 4, .high_freq_factor = 1}), "llama3.high_freq_factor", "1");
  expect_error(with(llama3_scaling{.low_freq_factor = 0}), "llama3.low_freq_factor", "0");
}

TEST_CASE("LongRoPE / factors / explicit frequencies: list lengths and entries", "[rope][validation]") {
  const std::vector<double> ok(32, 1.0), short31(31, 1.0);
  auto lr = [&](std::vector<double> s, std::vector<double> l) {
    return with(longrope_scaling{
        .short_factor = std::move(s), .long_factor = std::move(l), .original_max_position = 4096, .factor = 32.0});
  };
  expect_error(lr(short31, ok), "longrope.short_factor.size", "31");
  expect_error(lr(ok, std::vector<double>(33, 1.0)), "longrope.long_factor.size", "33");
  auto bad = ok;
  bad[5] = 0;
  expect_error(lr(ok, bad), "longrope.long_factor[5]", "0");
  bad[5] = qnan;
  expect_error(lr(bad, ok), "longrope.short_factor[5]");
  auto cap = lr(ok, ok);
  std::get<longrope_scaling>(cap.scaling).switch_policy = longrope_switch::fixed_by_capacity;
  expect_error(cap, "longrope.capacity", "0");
  auto af = lr(ok, ok);
  std::get<longrope_scaling>(af.scaling).attention_factor = -1.0;
  expect_error(af, "longrope.attention_factor", "-1");
  expect_error(with(frequency_factors{.factors = short31}), "frequency_factors.factors.size", "31");
  auto z = ok;
  z[0] = 0;
  expect_error(with(frequency_factors{.factors = z}), "frequency_factors.factors[0]", "0");
  expect_error(with(explicit_frequencies{.inv_freq = short31}), "explicit_frequencies.inv_freq.size", "31");
  z[0] = -1;
  expect_error(with(explicit_frequencies{.inv_freq = z}), "explicit_frequencies.inv_freq[0]", "-1");
  z[0] = 0;  // a zero frequency is allowed (an unrotated pair)
  CHECK_NOTHROW(rope_schedule(with(explicit_frequencies{.inv_freq = z})));
  // partial rotary: lists have R/2 entries
  auto partial = with(frequency_factors{.factors = ok});
  partial.rotary_dim = 32;
  expect_error(partial, "frequency_factors.factors.size", "32");
}

TEST_CASE("NTK and dynamic NTK with R == 2", "[rope][validation]") {
  auto c = with(dynamic_ntk_scaling{.factor = 2, .original_max_position = 4096});
  c.rotary_dim = 2;
  expect_error(c, "rope.rotary_dim", "2");
  c.scaling = ntk_scaling{.alpha = 2};
  expect_error(c, "rope.rotary_dim", "2");
  c.scaling = default_scaling{};
  CHECK_NOTHROW(rope_schedule(c));  // plain RoPE with R = 2 is fine
}
