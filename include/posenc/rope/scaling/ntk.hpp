// posenc/rope/scaling/ntk.hpp — NTK-aware base change with a static alpha (bloc97; llama.cpp
// rope.scaling.alpha): theta' = theta * alpha^(dims/(dims-2)), frequencies theta'^(-2k/dims), M = 1.
//
// vLLM's different `ntk` ("fixed and mixed NTK") is not this formula and is not implemented here.
// Hugging Face has no rope_type for it (its one alpha, HunYuan's, is rope/scaling/dynamic_alpha.hpp).
#pragma once

#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <posenc/rope/scaling/descriptor.hpp>
#include <posenc/rope/scaling/linear.hpp>

namespace posenc::inline v0 {

/// Static NTK-aware base change (bloc97; vLLM/Hunyuan `alpha`): theta' = theta * alpha^(R/(R-2)).
struct ntk_scaling {
  double alpha = 1;
  friend bool operator==(const ntk_scaling&, const ntk_scaling&) = default;
};

/// Static NTK-aware base: theta * alpha^(dims / (dims - 2)). Requires dims > 2.
[[nodiscard]] inline double ntk_static_theta(double theta, double alpha, int dims) noexcept {
  const auto d = static_cast<double>(dims);
  return theta * std::pow(alpha, d / (d - 2));
}

template <>
struct scaling_descriptor<ntk_scaling> {
  static constexpr std::string_view name = "ntk";
  static constexpr std::array<std::string_view, 0> hf_names{};
  static constexpr std::array<std::string_view, 1> keys{"alpha"};
  static constexpr std::string_view gguf_name = "";
  /// llama.cpp has no type name for it: the alpha key selects it (with type none, or linear at factor 1).
  static constexpr std::string_view gguf_selected_by = "rope.scaling.alpha";
  static constexpr std::array<gguf_spelling, 1> gguf_keys{{{"rope.scaling.alpha", "alpha"}}};

  template <class Keys>
  static ntk_scaling parse(const Keys& k) {
    return {detail::required_number(k, "alpha", "an NTK alpha")};
  }
  static void validate(const ntk_scaling& s, const scaling_context& c) {
    detail::require_factor(s.alpha, "ntk.alpha", c.allow_compression);
    detail::require(c.denominator > 2, "rope.rotary_dim", c.denominator, "> 2 for NTK scaling (exponent R / (R - 2))");
  }
  static scaling_magnitudes frequencies(const ntk_scaling& s, const scaling_context& c, std::int64_t,
                                        std::span<double> w) {
    detail::fill_default(ntk_static_theta(c.theta, s.alpha, c.denominator), c.denominator, w);
    return {};
  }
  static constexpr bool length_dependent(const ntk_scaling&) noexcept { return false; }
  static constexpr std::int64_t base_length(const ntk_scaling&) noexcept { return 0; }
  static std::optional<std::int64_t> switch_length(const ntk_scaling&) noexcept { return std::nullopt; }
  static std::optional<double> factor(const ntk_scaling&) noexcept { return std::nullopt; }
  static std::optional<std::int64_t> original_length(const ntk_scaling&) noexcept { return std::nullopt; }
  static std::string describe(const ntk_scaling& s) { return "alpha " + detail::to_text(s.alpha); }
};

}  // namespace posenc::inline v0
