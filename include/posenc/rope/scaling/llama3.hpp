// posenc/rope/scaling/llama3.hpp — Llama 3.1 wavelength-band scaling (HF "llama3", docs/spec.md §8.6).
//
// Pairs whose wavelength is shorter than L0/high_freq_factor keep w_k, longer than
// L0/low_freq_factor are divided by the factor, and the band between is blended smoothly. Both
// boundaries belong to the blended band (inclusive, as HF; MLX-LM is exclusive). M = 1. llama.cpp
// has no type for it: converters write the per-pair divisors as the rope_freqs tensor
// (rope/scaling/frequency_factors.hpp).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <posenc/rope/scaling/descriptor.hpp>
#include <posenc/rope/scaling/dynamic_ntk.hpp>
#include <posenc/rope/scaling/linear.hpp>

namespace posenc::inline v0 {

/// Llama 3.1 wavelength bands (HF "llama3").
struct llama3_scaling {
  double factor = 8;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  std::int64_t original_max_position = 8192;
  friend bool operator==(const llama3_scaling&, const llama3_scaling&) = default;
};

namespace detail {

/// Rewrites base frequencies `w` into Llama-3 frequencies (in place).
inline void apply_llama3(std::span<double> w, const llama3_scaling& l) {
  const auto L0 = static_cast<double>(l.original_max_position);
  const double lambda_lo = L0 / l.low_freq_factor;   // longer wavelengths: divided by the factor
  const double lambda_hi = L0 / l.high_freq_factor;  // shorter wavelengths: kept
  for (double& wk : w) {
    const double lambda = 2 * std::numbers::pi / wk;
    if (lambda < lambda_hi) continue;
    if (lambda > lambda_lo) {
      wk /= l.factor;
      continue;
    }
    // low == high (Llama 4 Scout): only a wavelength exactly on the one boundary gets here; g = 0
    // (divided, as vLLM), where HF would divide 0 by 0.
    const double band = l.high_freq_factor - l.low_freq_factor;
    const double g = band > 0 ? (L0 / lambda - l.low_freq_factor) / band : 0.0;
    wk = (1 - g) * wk / l.factor + g * wk;
  }
}

}  // namespace detail

template <>
struct scaling_descriptor<llama3_scaling> {
  static constexpr std::string_view name = "llama3";
  static constexpr std::array<std::string_view, 1> hf_names{"llama3"};
  static constexpr std::array<std::string_view, 4> keys{"factor", "low_freq_factor", "high_freq_factor",
                                                        "original_max_position_embeddings"};
  static constexpr std::string_view gguf_name = "";
  static constexpr std::array<gguf_spelling, 0> gguf_keys{};

  template <class Keys>
  static llama3_scaling parse(const Keys& k) {
    llama3_scaling l;
    l.factor = detail::required_number(k, "factor", "a scaling factor for rope_type llama3");
    l.low_freq_factor = detail::required_number(k, "low_freq_factor", "a value (required for rope_type llama3)");
    l.high_freq_factor = detail::required_number(k, "high_freq_factor", "a value (required for rope_type llama3)");
    l.original_max_position = detail::original_length(k, "llama3");
    return l;
  }
  static void validate(const llama3_scaling& s, const scaling_context& c) {
    using detail::require;
    detail::require_factor(s.factor, "llama3.factor", c.allow_compression);
    detail::require_original_max_position(s.original_max_position, "llama3.original_max_position");
    require(std::isfinite(s.low_freq_factor), "llama3.low_freq_factor", s.low_freq_factor, "a finite number");
    require(std::isfinite(s.high_freq_factor), "llama3.high_freq_factor", s.high_freq_factor, "a finite number");
    require(s.low_freq_factor > 0, "llama3.low_freq_factor", s.low_freq_factor, "> 0");
    // Equal factors are allowed (Llama 4 Scout ships 1 and 1, docs/spec.md §12): no pair is blended then.
    require(s.high_freq_factor >= s.low_freq_factor, "llama3.high_freq_factor", s.high_freq_factor,
            ">= llama3.low_freq_factor = " + detail::to_text(s.low_freq_factor));
  }
  static scaling_magnitudes frequencies(const llama3_scaling& s, const scaling_context& c, std::int64_t,
                                        std::span<double> w) {
    detail::fill_default(c.theta, c.denominator, w);
    detail::apply_llama3(w, s);
    return {};
  }
  static constexpr bool length_dependent(const llama3_scaling&) noexcept { return false; }
  static constexpr std::int64_t base_length(const llama3_scaling&) noexcept { return 0; }
  static std::optional<std::int64_t> switch_length(const llama3_scaling&) noexcept { return std::nullopt; }
  static std::optional<double> factor(const llama3_scaling& s) noexcept { return s.factor; }
  static std::optional<std::int64_t> original_length(const llama3_scaling& s) noexcept {
    return s.original_max_position;
  }
  static std::string describe(const llama3_scaling& s) {
    using detail::to_text;
    return "factor " + to_text(s.factor) + ", low_freq_factor " + to_text(s.low_freq_factor) + ", high_freq_factor " +
           to_text(s.high_freq_factor) + ", original_max_position " + std::to_string(s.original_max_position);
  }
};

}  // namespace posenc::inline v0
