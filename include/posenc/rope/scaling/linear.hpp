// posenc/rope/scaling/linear.hpp — position interpolation (Chen et al. 2023; HF rope_type "linear",
// llama.cpp rope.scaling.type linear): w'_k = w_k / factor, M = 1.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <posenc/rope/scaling/default.hpp>
#include <posenc/rope/scaling/descriptor.hpp>

namespace posenc::inline v0 {

/// Position interpolation (HF "linear"): w'_k = w_k / factor.
struct linear_scaling {
  double factor = 1;
  friend bool operator==(const linear_scaling&, const linear_scaling&) = default;
};

namespace detail {

/// A scale factor s: finite, > 0, and >= 1 unless the config allows compression.
inline void require_factor(double v, std::string_view name, bool allow_compression) {
  require(std::isfinite(v), name, v, "a finite number");
  require(v > 0, name, v, "> 0");
  require(v >= 1 || allow_compression, name, v, ">= 1 (set rope.allow_compression to allow factors below 1)");
}

}  // namespace detail

template <>
struct scaling_descriptor<linear_scaling> {
  static constexpr std::string_view name = "linear";
  static constexpr std::array<std::string_view, 1> hf_names{"linear"};
  static constexpr std::array<std::string_view, 1> keys{"factor"};
  static constexpr std::string_view gguf_name = "linear";
  static constexpr std::array<gguf_spelling, 2> gguf_keys{
      {{"rope.scaling.factor", "factor"}, {"rope.scale_linear", "factor"}}};

  template <class Keys>
  static linear_scaling parse(const Keys& k) {
    return {detail::required_number(k, "factor", "a scaling factor for rope_type linear")};
  }
  static void validate(const linear_scaling& s, const scaling_context& c) {
    detail::require_factor(s.factor, "linear.factor", c.allow_compression);
  }
  static scaling_magnitudes frequencies(const linear_scaling& s, const scaling_context& c, std::int64_t,
                                        std::span<double> w) {
    if (c.angles == angle_mode::reference_fp32) {  // HF: inv_freq /= factor, in float32
      detail::fill_hf_fp32(c.theta, c.denominator, w);
      for (double& x : w) x = static_cast<double>(static_cast<float>(x) / static_cast<float>(s.factor));
    } else {
      detail::fill_default(c.theta, c.denominator, w);
      for (double& x : w) x /= s.factor;
    }
    return {};
  }
  static constexpr bool length_dependent(const linear_scaling&) noexcept { return false; }
  static constexpr std::int64_t base_length(const linear_scaling&) noexcept { return 0; }
  static std::optional<std::int64_t> switch_length(const linear_scaling&) noexcept { return std::nullopt; }
  static std::optional<double> factor(const linear_scaling& s) noexcept { return s.factor; }
  static std::optional<std::int64_t> original_length(const linear_scaling&) noexcept { return std::nullopt; }
  static std::string describe(const linear_scaling& s) { return "factor " + detail::to_text(s.factor); }
};

}  // namespace posenc::inline v0
