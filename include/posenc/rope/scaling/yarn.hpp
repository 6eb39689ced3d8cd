// posenc/rope/scaling/yarn.hpp — YaRN frequencies and magnitude (Peng et al. 2023, §3.2-3.4; HF "yarn").
//
// Blends interpolated (w/s) and original frequencies with a linear ramp between the correction
// dimensions of beta_fast and beta_slow, and picks the magnitude by the precedence of docs/spec.md §8.5
// (attention_factor > DeepSeek mscale ratio > get_mscale(s, 1)). Pure math in double; validation
// lives in rope/validate.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>
#include <vector>

#include <posenc/rope/config.hpp>

namespace posenc::inline v0 {

/// get_mscale(s, m) = 1 for s <= 1, else 0.1 * m * ln(s) + 1 (YaRN eq. 22 with DeepSeek's m).
[[nodiscard]] inline double yarn_get_mscale(double s, double m = 1) noexcept {
  return s <= 1 ? 1.0 : 0.1 * m * std::log(s) + 1.0;
}

/// The fractional pair index whose wavelength is L0 / beta:
/// corr(beta) = dims * ln(L0 / (2 pi beta)) / (2 ln theta).
[[nodiscard]] inline double yarn_correction_dim(double beta, double dims, double theta,
                                                double original_max_position) noexcept {
  return dims * std::log(original_max_position / (beta * 2 * std::numbers::pi)) / (2 * std::log(theta));
}

/// [low, high] = [corr(beta_fast), corr(beta_slow)], floored/ceiled when `truncate`, then clamped to
/// low >= 0 and high <= dims - 1 (dims, not dims/2, as HF and vLLM do). `dims` is the frequency
/// denominator (R for prefix rotary).
[[nodiscard]] inline std::pair<double, double> yarn_correction_range(double beta_fast, double beta_slow, int dims,
                                                                     double theta, double original_max_position,
                                                                     bool truncate = true) noexcept {
  const auto d = static_cast<double>(dims);
  double low = yarn_correction_dim(beta_fast, d, theta, original_max_position);
  double high = yarn_correction_dim(beta_slow, d, theta, original_max_position);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  return {std::max(low, 0.0), std::min(high, d - 1)};
}

/// The rotary magnitude M of a YaRN config (docs/spec.md §8.5): attention_factor when given; else the
/// DeepSeek ratio get_mscale(s, mscale) / get_mscale(s, mscale_all_dim) when both are given and
/// both non-zero; else get_mscale(s, 1). The zero rule is explicit: HF tests the two values for
/// truthiness, so a zero in either one selects get_mscale(s, 1); we reproduce that result by rule.
[[nodiscard]] inline double yarn_attention_factor(const yarn_scaling& y) noexcept {
  if (y.attention_factor) return *y.attention_factor;
  if (y.mscale && y.mscale_all_dim && *y.mscale != 0 && *y.mscale_all_dim != 0)
    return yarn_get_mscale(y.factor, *y.mscale) / yarn_get_mscale(y.factor, *y.mscale_all_dim);
  return yarn_get_mscale(y.factor, 1);
}

/// DeepSeek's softmax-scale multiplier get_mscale(s, mscale_all_dim)^2 when mscale_all_dim is given
/// and non-zero, else 1 (HF DeepSeek-V2/V3 attention, PR #47435).
[[nodiscard]] inline double yarn_softmax_scale_multiplier(const yarn_scaling& y) noexcept {
  if (!y.mscale_all_dim || *y.mscale_all_dim == 0) return 1.0;
  const double m = yarn_get_mscale(y.factor, *y.mscale_all_dim);
  return m * m;
}

namespace detail {

/// Rewrites `w` (base frequencies w_k = theta^(-2k/dims), k < w.size()) into YaRN frequencies:
/// ramp_k = clamp((k - low) / (high - low), 0, 1) (high += 0.001 when low == high),
/// e_k = (1 - ramp_k) * extrapolation_factor, w'_k = (w_k / s) * (1 - e_k) + w_k * e_k.
inline void apply_yarn(std::vector<double>& w, const yarn_scaling& y, int dims, double theta) {
  auto [low, high] = yarn_correction_range(y.beta_fast, y.beta_slow, dims, theta,
                                           static_cast<double>(y.original_max_position), y.truncate);
  if (low == high) high += 0.001;
  for (std::size_t k = 0; k < w.size(); ++k) {
    const double ramp = std::clamp((static_cast<double>(k) - low) / (high - low), 0.0, 1.0);
    const double e = (1.0 - ramp) * y.extrapolation_factor;
    // HF: interpolation = 1 / (s * theta^(2k/dims)); the same value as w_k / s up to one rounding.
    const double interp = w[k] / y.factor;
    w[k] = interp * (1.0 - e) + w[k] * e;
  }
}

}  // namespace detail
}  // namespace posenc::inline v0
