// posenc/rope/scaling/frequency_factors.hpp — generic per-pair divisors (ggml `freq_factors`, llama.cpp's
// rope_freqs tensor, which converters write for Llama 3.1 and similar band scalings):
// w'_k = w_k / factors[k], with a fixed magnitude.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/rope/scaling/descriptor.hpp>
#include <posenc/rope/scaling/longrope.hpp>

namespace posenc::inline v0 {

/// Generic per-pair divisors (ggml `freq_factors`, llama.cpp `rope_freqs`): w'_k = w_k / factors[k].
struct frequency_factors {
  std::vector<double> factors;  ///< R/2 entries, each > 0
  double attention_factor = 1;
  friend bool operator==(const frequency_factors&, const frequency_factors&) = default;
};

template <>
struct scaling_descriptor<frequency_factors> {
  static constexpr std::string_view name = "frequency_factors";
  static constexpr std::array<std::string_view, 0> hf_names{};
  static constexpr std::array<std::string_view, 1> keys{"factors"};
  static constexpr std::string_view gguf_name = "";
  /// llama.cpp has no type name for it: the rope_freqs tensor selects it (with type none, or linear at factor 1).
  static constexpr std::string_view gguf_selected_by = "tensor:rope_freqs.weight";
  static constexpr std::array<gguf_spelling, 1> gguf_keys{{{"tensor:rope_freqs.weight", "factors"}}};

  template <class Keys>
  static frequency_factors parse(const Keys& k) {
    auto f = k.numbers("factors");
    if (!f) throw config_error(k.name("factors"), "absent", "a list of rotary_dim/2 divisors");
    return {std::move(*f), 1.0};
  }
  static void validate(const frequency_factors& s, const scaling_context& c) {
    detail::require_per_pair(s.factors, c.rotated_pairs, "frequency_factors.factors", false);
    detail::require_attention_factor(s.attention_factor, "frequency_factors.attention_factor");
  }
  static scaling_magnitudes frequencies(const frequency_factors& s, const scaling_context& c, std::int64_t,
                                        std::span<double> w) {
    detail::fill_default(c.theta, c.denominator, w);
    for (std::size_t k = 0; k < w.size(); ++k) w[k] /= s.factors[k];
    return {s.attention_factor, 1.0};
  }
  static constexpr bool length_dependent(const frequency_factors&) noexcept { return false; }
  static constexpr std::int64_t base_length(const frequency_factors&) noexcept { return 0; }
  static std::optional<std::int64_t> switch_length(const frequency_factors&) noexcept { return std::nullopt; }
  static std::optional<double> factor(const frequency_factors&) noexcept { return std::nullopt; }
  static std::optional<std::int64_t> original_length(const frequency_factors&) noexcept { return std::nullopt; }
  static std::string describe(const frequency_factors& s) {
    return std::to_string(s.factors.size()) + " per-pair factors";
  }
};

}  // namespace posenc::inline v0
