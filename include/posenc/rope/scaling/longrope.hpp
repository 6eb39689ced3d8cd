// posenc/rope/scaling/longrope.hpp — LongRoPE / Phi-3 "su" (HF "longrope", llama.cpp rope.scaling.type
// longrope, docs/spec.md §8.7).
//
// Per-pair divisors w'_k = w_k / f_k with f = short_factor or long_factor, and the magnitude
// M = sqrt(1 + ln s / ln L0). Which list applies is a policy (longrope_switch) decided from a length.
// GGUF files carry the lists as the rope_factors_short / rope_factors_long tensors.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/rope/scaling/descriptor.hpp>
#include <posenc/rope/scaling/dynamic_ntk.hpp>
#include <posenc/rope/scaling/linear.hpp>

namespace posenc::inline v0 {

/// When LongRoPE uses its long factors (docs/spec.md §8.7).
enum class longrope_switch : unsigned char {
  per_call_max_position,  ///< HF: long iff max(positions in this call) + 1 > L0
  fixed_by_capacity,      ///< vLLM / llama.cpp: long iff `capacity` > L0, fixed for the encoder's life
  always_long,            ///< MLX-LM
};

/// LongRoPE / Phi-3 "su" (HF "longrope"): w'_k = w_k / f_k with f = short_factor or long_factor.
struct longrope_scaling {
  std::vector<double> short_factor;          ///< R/2 entries
  std::vector<double> long_factor;           ///< R/2 entries
  std::int64_t original_max_position = 0;    ///< L0 (required, > 0)
  std::optional<double> factor{};            ///< s; absent: max_position / L0
  std::int64_t max_position = 0;             ///< max_position_embeddings, used only when factor is absent
  std::optional<double> attention_factor{};  ///< M; absent: sqrt(1 + ln(s) / ln(L0)) for s > 1, else 1
  longrope_switch switch_policy = longrope_switch::per_call_max_position;
  std::int64_t capacity = 0;  ///< context capacity for fixed_by_capacity
  friend bool operator==(const longrope_scaling&, const longrope_scaling&) = default;
};

/// s: `factor` when given, else max_position / L0 (HF, when original_max_position_embeddings is set).
[[nodiscard]] inline double longrope_factor(const longrope_scaling& l) noexcept {
  return l.factor ? *l.factor : static_cast<double>(l.max_position) / static_cast<double>(l.original_max_position);
}

/// M: attention_factor when given, else 1 for s <= 1, else sqrt(1 + ln(s) / ln(L0)).
[[nodiscard]] inline double longrope_attention_factor(const longrope_scaling& l) noexcept {
  if (l.attention_factor) return *l.attention_factor;
  const double s = longrope_factor(l);
  if (s <= 1) return 1.0;
  return std::sqrt(1 + std::log(s) / std::log(static_cast<double>(l.original_max_position)));
}

/// True when the long factors apply to a call whose effective length is `seq_len`
/// (per_call_max_position: seq_len > L0 as HF; fixed_by_capacity: capacity > L0; always_long).
[[nodiscard]] inline bool longrope_uses_long(const longrope_scaling& l, std::int64_t seq_len) noexcept {
  switch (l.switch_policy) {
    case longrope_switch::per_call_max_position:
      return seq_len > l.original_max_position;
    case longrope_switch::fixed_by_capacity:
      return l.capacity > l.original_max_position;
    case longrope_switch::always_long:
      return true;
  }
  return false;
}

namespace detail {

inline void require_per_pair(const std::vector<double>& v, int pairs, std::string_view name, bool allow_zero) {
  require(static_cast<int>(v.size()) == pairs, std::string(name) + ".size", v.size(),
          "rotary_dim / 2 = " + std::to_string(pairs) + " entries");
  for (std::size_t k = 0; k < v.size(); ++k) {
    const std::string n = std::string(name) + "[" + std::to_string(k) + "]";
    require(std::isfinite(v[k]), n, v[k], "a finite number");
    require(allow_zero ? v[k] >= 0 : v[k] > 0, n, v[k], allow_zero ? ">= 0" : "> 0");
  }
}

inline void require_attention_factor(double v, std::string_view name) {
  require(std::isfinite(v), name, v, "a finite number");
  require(v > 0, name, v, "> 0");
}

}  // namespace detail

template <>
struct scaling_descriptor<longrope_scaling> {
  static constexpr std::string_view name = "longrope";
  static constexpr std::array<std::string_view, 2> hf_names{"longrope", "su"};
  static constexpr std::array<std::string_view, 5> keys{"short_factor", "long_factor", "factor",
                                                        "original_max_position_embeddings", "attention_factor"};
  static constexpr std::string_view gguf_name = "longrope";
  static constexpr std::array<gguf_spelling, 6> gguf_keys{
      {{"tensor:rope_factors_short.weight", "short_factor"},
       {"tensor:rope_factors_long.weight", "long_factor"},
       {"rope.scaling.factor", "factor"},
       {"rope.scale_linear", "factor"},
       {"rope.scaling.original_context_length", "original_max_position_embeddings"},
       {"rope.scaling.attn_factor", "attention_factor"}}};

  template <class Keys>
  static longrope_scaling parse(const Keys& k) {
    longrope_scaling l;
    auto s = k.numbers("short_factor");
    auto g = k.numbers("long_factor");
    const char* what = k.gguf() ? "the rope_factors_long/short tensors (read the .gguf file itself, not only its "
                                  "key/values)"
                                : "a list of rotary_dim/2 factors";
    if (!g) throw config_error(k.name("long_factor"), "absent", what);
    if (!s) throw config_error(k.name("short_factor"), "absent", what);
    l.short_factor = std::move(*s);
    l.long_factor = std::move(*g);
    l.original_max_position = detail::original_length(k, "longrope");
    l.factor = k.number("factor");
    l.max_position = k.max_position().value_or(0);
    l.attention_factor = k.number("attention_factor");
    return l;
  }
  static void validate(const longrope_scaling& s, const scaling_context& c) {
    detail::require_original_max_position(s.original_max_position, "longrope.original_max_position");
    detail::require_per_pair(s.short_factor, c.rotated_pairs, "longrope.short_factor", false);
    detail::require_per_pair(s.long_factor, c.rotated_pairs, "longrope.long_factor", false);
    if (s.factor) {
      detail::require_factor(*s.factor, "longrope.factor", c.allow_compression);
    } else {
      detail::require(s.max_position > 0, "longrope.max_position", s.max_position,
                      "> 0 (needed to derive the factor when longrope.factor is absent)");
    }
    if (s.attention_factor) detail::require_attention_factor(*s.attention_factor, "longrope.attention_factor");
    if (s.switch_policy == longrope_switch::fixed_by_capacity)
      detail::require(s.capacity > 0, "longrope.capacity", s.capacity, "> 0 for switch_policy fixed_by_capacity");
  }
  static scaling_magnitudes frequencies(const longrope_scaling& s, const scaling_context& c, std::int64_t seq_len,
                                        std::span<double> w) {
    const auto& ff = longrope_uses_long(s, seq_len) ? s.long_factor : s.short_factor;
    // HF: 1 / (f_k * theta^(2k/R)).
    for (std::size_t k = 0; k < w.size(); ++k)
      w[k] = 1.0 / (ff[k] * std::pow(c.theta, static_cast<double>(2 * k) / static_cast<double>(c.denominator)));
    return {longrope_attention_factor(s), 1.0};
  }
  static constexpr bool length_dependent(const longrope_scaling& s) noexcept {
    return s.switch_policy == longrope_switch::per_call_max_position;
  }
  static std::int64_t base_length(const longrope_scaling& s) noexcept { return s.original_max_position; }
  /// Two sets: the short one up to L0, the long one from L0 + 1 (saturating: L0 may be INT64_MAX).
  static std::optional<std::int64_t> switch_length(const longrope_scaling& s) noexcept {
    if (!length_dependent(s)) return std::nullopt;
    return s.original_max_position + (s.original_max_position < INT64_MAX ? 1 : 0);
  }
  static std::optional<double> factor(const longrope_scaling& s) noexcept { return s.factor; }
  static std::optional<std::int64_t> original_length(const longrope_scaling& s) noexcept {
    return s.original_max_position;
  }
  static std::string describe(const longrope_scaling& s) {
    using detail::to_text;
    std::string o = std::to_string(s.short_factor.size()) + " short / " + std::to_string(s.long_factor.size()) +
                    " long factors, original_max_position " + std::to_string(s.original_max_position);
    if (s.factor) o += ", factor " + to_text(*s.factor);
    if (s.max_position) o += ", max_position " + std::to_string(s.max_position);
    if (s.attention_factor) o += ", attention_factor " + to_text(*s.attention_factor);
    return o;
  }
};

}  // namespace posenc::inline v0
