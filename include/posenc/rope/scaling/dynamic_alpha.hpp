// posenc/rope/scaling/dynamic_alpha.hpp — HunYuan's NTK alpha under a dynamic rope_type (transformers
// modeling_hunyuan_v1_dense.py / _moe.py HunYuan*RotaryEmbedding, transformers@decba1d2).
//
// A config with "type": "dynamic" and an `alpha` is, for HunYuan, two rules at once: up to L0 =
// max_position_embeddings the base is theta * alpha^(dims/(dims-2)) (the rotary embedding's own
// inv_freq); beyond L0 transformers' dynamic-NTK growth (dynamic_rope_update, then
// _compute_dynamic_ntk_parameters) recomputes the frequencies from the unscaled theta,
// theta * (s L / L0 - (s - 1))^(dims/(dims-2)), and a call back within L0 restores the alpha ones.
// M = 1. The family's row maps the written type onto this scaling ("dynamic+alpha=dynamic_alpha");
// llama.cpp folds alpha into rope.freq_base and has no growth.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <posenc/rope/scaling/descriptor.hpp>
#include <posenc/rope/scaling/dynamic_ntk.hpp>
#include <posenc/rope/scaling/linear.hpp>
#include <posenc/rope/scaling/ntk.hpp>

namespace posenc::inline v0 {

/// HunYuan's alpha base up to L0, transformers' dynamic NTK (from the unscaled base) beyond it.
struct dynamic_alpha_scaling {
  double alpha = 1;                        ///< the NTK alpha of the base within L0
  double factor = 1;                       ///< s of the dynamic growth beyond L0
  std::int64_t original_max_position = 0;  ///< L0 = max_position_embeddings (required, > 0)
  friend bool operator==(const dynamic_alpha_scaling&, const dynamic_alpha_scaling&) = default;
};

template <>
struct scaling_descriptor<dynamic_alpha_scaling> {
  static constexpr std::string_view name = "dynamic_alpha";
  static constexpr std::array<std::string_view, 0> hf_names{};  // reached through a family's rename
  static constexpr std::array<std::string_view, 2> keys{"alpha", "factor"};
  static constexpr std::string_view gguf_name = "";  // llama.cpp folds alpha into rope.freq_base
  static constexpr std::array<gguf_spelling, 0> gguf_keys{};

  template <class Keys>
  static dynamic_alpha_scaling parse(const Keys& k) {
    dynamic_alpha_scaling d;
    d.alpha = detail::required_number(k, "alpha", "the NTK alpha");
    d.factor = detail::required_number(k, "factor", "the dynamic-NTK factor beyond max_position_embeddings");
    const auto L0 = k.max_position();
    if (!L0) throw config_error(k.name("max_position_embeddings"), "absent", "the length L0 the alpha base holds to");
    d.original_max_position = *L0;
    return d;
  }
  static void validate(const dynamic_alpha_scaling& s, const scaling_context& c) {
    detail::require_factor(s.alpha, "dynamic_alpha.alpha", c.allow_compression);
    detail::require_factor(s.factor, "dynamic_alpha.factor", c.allow_compression);
    detail::require_original_max_position(s.original_max_position, "dynamic_alpha.original_max_position");
    detail::require(c.denominator > 2, "rope.rotary_dim", c.denominator, "> 2 for NTK scaling (exponent R / (R - 2))");
  }
  static scaling_magnitudes frequencies(const dynamic_alpha_scaling& s, const scaling_context& c, std::int64_t seq_len,
                                        std::span<double> w) {
    const double theta = seq_len <= s.original_max_position
                             ? ntk_static_theta(c.theta, s.alpha, c.denominator)
                             : dynamic_ntk_theta(c.theta, s.factor, s.original_max_position, seq_len, c.denominator);
    detail::fill_default(theta, c.denominator, w);
    return {};
  }
  static constexpr bool length_dependent(const dynamic_alpha_scaling&) noexcept { return true; }
  static std::int64_t base_length(const dynamic_alpha_scaling& s) noexcept { return s.original_max_position; }
  static std::optional<std::int64_t> switch_length(const dynamic_alpha_scaling&) noexcept { return std::nullopt; }
  static std::optional<double> factor(const dynamic_alpha_scaling& s) noexcept { return s.factor; }
  static std::optional<std::int64_t> original_length(const dynamic_alpha_scaling& s) noexcept {
    return s.original_max_position;
  }
  static std::string describe(const dynamic_alpha_scaling& s) {
    return "alpha " + detail::to_text(s.alpha) + ", factor " + detail::to_text(s.factor) +
           " beyond original_max_position " + std::to_string(s.original_max_position);
  }
};

}  // namespace posenc::inline v0
