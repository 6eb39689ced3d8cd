// posenc/rope/scaling/dynamic_ntk.hpp — dynamic NTK (HF rope_type "dynamic", docs/spec.md §8.4).
//
// theta' = theta * (s * L / L0 - (s - 1))^(dims/(dims-2)) with L = max(seq_len, L0), frequencies
// theta'^(-2k/dims), M = 1. Hugging Face's L0 is max_position_embeddings (its
// _compute_dynamic_ntk_parameters never reads original_max_position_embeddings); where L comes from
// is a policy (dynamic_length_source).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <posenc/rope/scaling/descriptor.hpp>
#include <posenc/rope/scaling/linear.hpp>

namespace posenc::inline v0 {

/// Where dynamic NTK takes the sequence length L from (docs/spec.md §8.4).
enum class dynamic_length_source : unsigned char {
  max_position_in_call,  ///< HF: L = max(positions in this call) + 1
  fixed_max,             ///< vLLM: L = original_max_position * factor, once (a static NTK base)
};

/// Dynamic NTK (HF "dynamic"): theta' = theta * ((factor * L / L0) - (factor - 1))^(R/(R-2)) with
/// L = max(seq_len, L0) and L0 = original_max_position (HF uses max_position_embeddings here).
struct dynamic_ntk_scaling {
  double factor = 1;
  std::int64_t original_max_position = 0;  ///< L0 (required, > 0)
  dynamic_length_source length_source = dynamic_length_source::max_position_in_call;
  friend bool operator==(const dynamic_ntk_scaling&, const dynamic_ntk_scaling&) = default;
};

/// Dynamic NTK base for a sequence of length `seq_len` (HF `_compute_dynamic_ntk_parameters`):
/// L = max(seq_len, L0); theta * ((s * L / L0) - (s - 1))^(dims / (dims - 2)). Equals theta for L <= L0.
[[nodiscard]] inline double dynamic_ntk_theta(double theta, double factor, std::int64_t original_max_position,
                                              std::int64_t seq_len, int dims) noexcept {
  const auto L = static_cast<double>(std::max(seq_len, original_max_position));
  const auto L0 = static_cast<double>(original_max_position);
  const auto d = static_cast<double>(dims);
  return theta * std::pow((factor * L / L0) - (factor - 1), d / (d - 2));
}

namespace detail {

inline void require_original_max_position(std::int64_t v, std::string_view name) {
  require(v > 0, name, v, "> 0 (the original context length L0 is required)");
}

/// The length a dynamic schedule's static frequencies stand for (vLLM's fixed_max: L0 * s, once).
inline std::int64_t dynamic_base_length(std::int64_t L0, double factor, dynamic_length_source src) noexcept {
  if (src != dynamic_length_source::fixed_max) return L0;
  const double L = static_cast<double>(L0) * factor;
  return L >= 9.2e18 ? INT64_MAX : static_cast<std::int64_t>(L);
}

}  // namespace detail

template <>
struct scaling_descriptor<dynamic_ntk_scaling> {
  static constexpr std::string_view name = "dynamic";
  static constexpr std::array<std::string_view, 1> hf_names{"dynamic"};
  static constexpr std::array<std::string_view, 2> keys{"factor", "original_max_position_embeddings"};
  static constexpr std::string_view gguf_name = "";  // llama.cpp has no dynamic NTK
  static constexpr std::array<gguf_spelling, 0> gguf_keys{};

  template <class Keys>
  static dynamic_ntk_scaling parse(const Keys& k) {
    dynamic_ntk_scaling d;
    d.factor = detail::required_number(k, "factor", "a scaling factor for rope_type dynamic");
    const auto max_pos = k.max_position();
    if (!max_pos) throw config_error("max_position_embeddings", "absent", "a length for dynamic NTK's L0");
    d.original_max_position = *max_pos;
    if (auto orig = k.length("original_max_position_embeddings"); orig && *orig != *max_pos)
      k.warn("dynamic: L0 = max_position_embeddings = " + std::to_string(*max_pos) + "; " +
             k.name("original_max_position_embeddings") + " = " + std::to_string(*orig) +
             " is not read by Hugging Face's dynamic NTK");
    return d;
  }
  static void validate(const dynamic_ntk_scaling& s, const scaling_context& c) {
    detail::require_factor(s.factor, "dynamic_ntk.factor", c.allow_compression);
    detail::require_original_max_position(s.original_max_position, "dynamic_ntk.original_max_position");
    detail::require(c.denominator > 2, "rope.rotary_dim", c.denominator, "> 2 for dynamic NTK (exponent R / (R - 2))");
  }
  static scaling_magnitudes frequencies(const dynamic_ntk_scaling& s, const scaling_context& c, std::int64_t seq_len,
                                        std::span<double> w) {
    detail::fill_default(dynamic_ntk_theta(c.theta, s.factor, s.original_max_position, seq_len, c.denominator),
                         c.denominator, w);
    return {};
  }
  static constexpr bool length_dependent(const dynamic_ntk_scaling& s) noexcept {
    return s.length_source == dynamic_length_source::max_position_in_call;
  }
  /// The length the static frequencies stand for; shorter calls share them.
  static std::int64_t base_length(const dynamic_ntk_scaling& s) noexcept {
    return detail::dynamic_base_length(s.original_max_position, s.factor, s.length_source);
  }
  static std::optional<std::int64_t> switch_length(const dynamic_ntk_scaling&) noexcept { return std::nullopt; }
  static std::optional<double> factor(const dynamic_ntk_scaling& s) noexcept { return s.factor; }
  static std::optional<std::int64_t> original_length(const dynamic_ntk_scaling& s) noexcept {
    return s.original_max_position;
  }
  static std::string describe(const dynamic_ntk_scaling& s) {
    return "factor " + detail::to_text(s.factor) + ", original_max_position " + std::to_string(s.original_max_position);
  }
};

}  // namespace posenc::inline v0
