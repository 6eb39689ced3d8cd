// posenc/rope/frequencies.hpp — the output of every RoPE frequency schedule, and the base frequencies.
//
// A schedule (rope/schedule.hpp) reduces a rope_config to per-pair angular frequencies w'_k
// (radians per position), a magnitude M applied to cos and sin, and an optional softmax-scale
// multiplier for the attention (DeepSeek YaRN). docs/spec.md §7.1, §8. No memory layout lives here.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace posenc::inline v0 {

/// Per-pair frequencies and magnitudes produced by a schedule.
struct rope_frequencies {
  std::vector<double> inv_freq;         ///< w'_k for each rotated pair (rad / position), P entries
  double attention_scaling = 1;         ///< M: multiplies cos and sin (logits scale by M^2)
  double softmax_scale_multiplier = 1;  ///< multiplies the attention's softmax scale (DeepSeek mscale^2)
  friend bool operator==(const rope_frequencies&, const rope_frequencies&) = default;
};

namespace detail {

/// w_k = theta^(-2k/denominator) for k < pairs, evaluated as HF does (1 / theta^(2k/denominator)).
[[nodiscard]] inline std::vector<double> default_inv_freq(double theta, int denominator, int pairs) {
  std::vector<double> w(static_cast<std::size_t>(pairs));
  for (int k = 0; k < pairs; ++k)
    w[static_cast<std::size_t>(k)] =
        1.0 / std::pow(theta, static_cast<double>(2 * k) / static_cast<double>(denominator));
  return w;
}

/// HF's float32 inv_freq: 1.0f / powf(float(theta), float(2k) / float(denominator)), widened to double
/// exactly (bit-identical to `1.0 / (base ** (arange(0, dim, 2).float() / dim))` for the golden
/// configs). Used by angle_mode::reference_fp32 for the default and linear schedules.
[[nodiscard]] inline std::vector<double> hf_fp32_inv_freq(double theta, int denominator, int pairs) {
  std::vector<double> w(static_cast<std::size_t>(pairs));
  const auto base = static_cast<float>(theta);
  for (int k = 0; k < pairs; ++k) {
    const float e = static_cast<float>(2 * k) / static_cast<float>(denominator);
    w[static_cast<std::size_t>(k)] = static_cast<double>(1.0f / std::pow(base, e));
  }
  return w;
}

/// A borrowed view of frequencies: what the hot path reads (no allocation, no copy).
struct frequencies_view {
  const double* inv_freq = nullptr;
  int pairs = 0;
  double magnitude = 1;
};

[[nodiscard]] inline frequencies_view view_of(const rope_frequencies& f) noexcept {
  return {f.inv_freq.data(), static_cast<int>(f.inv_freq.size()), f.attention_scaling};
}

}  // namespace detail
}  // namespace posenc::inline v0
