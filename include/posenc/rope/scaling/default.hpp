// posenc/rope/scaling/default.hpp — unscaled RoPE (HF rope_type "default"): w_k = theta^(-2k/R), M = 1.
//
// Also the frequencies of HF's "mrope" (text positions are plain RoPE; the sections are the mRoPE
// rule's, config/rules) and "proportional" (a partial-rotary convention, not a scaling: the loader
// sets rope_config::partial_mode). With angle_mode::reference_fp32 the frequencies are HF's float32
// ones, bit for bit.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <posenc/rope/scaling/descriptor.hpp>

namespace posenc::inline v0 {

/// No scaling: w_k = theta^(-2k/R), M = 1 (HF rope_type "default").
struct default_scaling {
  friend bool operator==(const default_scaling&, const default_scaling&) = default;
};

namespace detail {

/// HF's float32 inv_freq: 1.0f / powf(float(theta), float(2k) / float(denominator)), widened to double
/// exactly (bit-identical to `1.0 / (base ** (arange(0, dim, 2).float() / dim))` for the golden configs).
inline void fill_hf_fp32(double theta, int denominator, std::span<double> out) noexcept {
  const auto base = static_cast<float>(theta);
  for (std::size_t k = 0; k < out.size(); ++k) {
    const float e = static_cast<float>(2 * static_cast<int>(k)) / static_cast<float>(denominator);
    out[k] = static_cast<double>(1.0f / std::pow(base, e));
  }
}

}  // namespace detail

template <>
struct scaling_descriptor<default_scaling> {
  static constexpr std::string_view name = "default";
  static constexpr std::array<std::string_view, 4> hf_names{"default", "none", "mrope", "proportional"};
  static constexpr std::array<std::string_view, 0> keys{};
  static constexpr std::string_view gguf_name = "none";
  static constexpr std::array<gguf_spelling, 0> gguf_keys{};

  template <class Keys>
  static default_scaling parse(const Keys&) {
    return {};
  }
  static void validate(const default_scaling&, const scaling_context&) {}
  static scaling_magnitudes frequencies(const default_scaling&, const scaling_context& c, std::int64_t,
                                        std::span<double> w) {
    if (c.angles == angle_mode::reference_fp32)
      detail::fill_hf_fp32(c.theta, c.denominator, w);
    else
      detail::fill_default(c.theta, c.denominator, w);
    return {};
  }
  static constexpr bool length_dependent(const default_scaling&) noexcept { return false; }
  static constexpr std::int64_t base_length(const default_scaling&) noexcept { return 0; }
  static std::optional<std::int64_t> switch_length(const default_scaling&) noexcept { return std::nullopt; }
  static std::optional<double> factor(const default_scaling&) noexcept { return std::nullopt; }
  static std::optional<std::int64_t> original_length(const default_scaling&) noexcept { return std::nullopt; }
  static std::string describe(const default_scaling&) { return {}; }
};

}  // namespace posenc::inline v0
