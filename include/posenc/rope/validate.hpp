// posenc/rope/validate.hpp — strict validation of a rope_config (every RoPE row of docs/spec.md §12).
//
// Throws config_error naming the parameter, the value and the valid range. Explicit values are
// always checked as values: a 0 is never read as "absent" (std::optional marks absence). Also
// resolves the rotary width R from rotary_dim / partial_rotary_factor. Setup time only.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <variant>

#include <posenc/core/errors.hpp>
#include <posenc/rope/config.hpp>

namespace posenc::inline v0 {

namespace detail {

[[nodiscard]] inline bool finite(double v) noexcept {
  return std::isfinite(v);
}

/// Largest head width a RoPE config may have: the kernels index a head with int.
inline constexpr std::ptrdiff_t max_rope_head_dim = std::ptrdiff_t{1} << 20;

/// R before validation: rotary_dim if given, else floor(D * partial_rotary_factor), else D - offset.
/// Meaningful once head_dim, rotary_offset and rotary_dim are within [0, max_rope_head_dim].
[[nodiscard]] inline int unchecked_rotary_dim(const rope_config& c) noexcept {
  if (c.rotary_dim) return static_cast<int>(*c.rotary_dim);
  if (c.partial_rotary_factor && std::isfinite(*c.partial_rotary_factor) && *c.partial_rotary_factor > 0 &&
      *c.partial_rotary_factor <= 1)
    return static_cast<int>(std::floor(static_cast<double>(c.head_dim) * *c.partial_rotary_factor));
  return static_cast<int>(c.head_dim - c.rotary_offset);
}

/// The widths a validated config implies.
struct rope_dims {
  int rotary_dim = 0;   ///< R: rotated elements (prefix) or 2 * rotated pairs (proportional)
  int span = 0;         ///< elements the kernel touches: R (prefix) or D - offset (proportional)
  int denominator = 0;  ///< the "dims" of every frequency formula: R (prefix) or D - offset (proportional)
  [[nodiscard]] int kernel_pairs() const noexcept { return span / 2; }         ///< entries of inv_freq
  [[nodiscard]] int rotated_pairs() const noexcept { return rotary_dim / 2; }  ///< non-zero frequencies
};

[[nodiscard]] inline rope_dims dims_of(const rope_config& c) noexcept {
  const int R = unchecked_rotary_dim(c);
  const auto room = static_cast<int>(c.head_dim - c.rotary_offset);
  if (c.partial_mode == partial_rotary_mode::proportional) return {R, room, room};
  return {R, R, R};
}

inline void require_finite(double v, std::string_view name) {
  require(finite(v), name, v, "a finite number");
}

/// A scale factor s: finite, > 0, and >= 1 unless the config allows compression.
inline void require_factor(double v, std::string_view name, bool allow_compression) {
  require_finite(v, name);
  require(v > 0, name, v, "> 0");
  require(v >= 1 || allow_compression, name, v, ">= 1 (set rope.allow_compression to allow factors below 1)");
}

inline void require_original_max_position(std::int64_t v, std::string_view name) {
  require(v > 0, name, v, "> 0 (the original context length L0 is required)");
}

inline void require_per_pair(const std::vector<double>& v, int pairs, std::string_view name, bool allow_zero) {
  require(static_cast<int>(v.size()) == pairs, std::string(name) + ".size", v.size(),
          "rotary_dim / 2 = " + std::to_string(pairs) + " entries");
  for (std::size_t k = 0; k < v.size(); ++k) {
    const std::string n = std::string(name) + "[" + std::to_string(k) + "]";
    require_finite(v[k], n);
    require(allow_zero ? v[k] >= 0 : v[k] > 0, n, v[k], allow_zero ? ">= 0" : "> 0");
  }
}

inline void require_attention_factor(double v, std::string_view name) {
  require_finite(v, name);
  require(v > 0, name, v, "> 0");
}

struct scaling_validator {
  const rope_config& c;
  rope_dims d;

  void operator()(const default_scaling&) const {}
  void operator()(const linear_scaling& s) const { require_factor(s.factor, "linear.factor", c.allow_compression); }
  void operator()(const ntk_scaling& s) const {
    require_factor(s.alpha, "ntk.alpha", c.allow_compression);
    require(d.denominator > 2, "rope.rotary_dim", d.denominator, "> 2 for NTK scaling (exponent R / (R - 2))");
  }
  void operator()(const dynamic_ntk_scaling& s) const {
    require_factor(s.factor, "dynamic_ntk.factor", c.allow_compression);
    require_original_max_position(s.original_max_position, "dynamic_ntk.original_max_position");
    require(d.denominator > 2, "rope.rotary_dim", d.denominator, "> 2 for dynamic NTK (exponent R / (R - 2))");
  }
  void operator()(const yarn_scaling& s) const {
    require_factor(s.factor, "yarn.factor", c.allow_compression);
    require_original_max_position(s.original_max_position, "yarn.original_max_position");
    require_finite(s.beta_fast, "yarn.beta_fast");
    require_finite(s.beta_slow, "yarn.beta_slow");
    require(s.beta_fast > 0, "yarn.beta_fast", s.beta_fast, "> 0");
    require(s.beta_slow > 0, "yarn.beta_slow", s.beta_slow, "> 0");
    require(s.beta_fast > s.beta_slow, "yarn.beta_fast", s.beta_fast, "> yarn.beta_slow = " + to_text(s.beta_slow));
    if (s.attention_factor) require_attention_factor(*s.attention_factor, "yarn.attention_factor");
    if (s.mscale) {
      require_finite(*s.mscale, "yarn.mscale");
      require(*s.mscale >= 0, "yarn.mscale", *s.mscale, ">= 0");
    }
    if (s.mscale_all_dim) {
      require_finite(*s.mscale_all_dim, "yarn.mscale_all_dim");
      require(*s.mscale_all_dim >= 0, "yarn.mscale_all_dim", *s.mscale_all_dim, ">= 0");
    }
    require_finite(s.extrapolation_factor, "yarn.extrapolation_factor");
    require(s.extrapolation_factor >= 0 && s.extrapolation_factor <= 1, "yarn.extrapolation_factor",
            s.extrapolation_factor, "in [0, 1]");
  }
  void operator()(const llama3_scaling& s) const {
    require_factor(s.factor, "llama3.factor", c.allow_compression);
    require_original_max_position(s.original_max_position, "llama3.original_max_position");
    require_finite(s.low_freq_factor, "llama3.low_freq_factor");
    require_finite(s.high_freq_factor, "llama3.high_freq_factor");
    require(s.low_freq_factor > 0, "llama3.low_freq_factor", s.low_freq_factor, "> 0");
    // Equal factors are allowed (Llama 4 Scout ships 1 and 1, docs/spec.md §12): no pair is blended then.
    require(s.high_freq_factor >= s.low_freq_factor, "llama3.high_freq_factor", s.high_freq_factor,
            ">= llama3.low_freq_factor = " + to_text(s.low_freq_factor));
  }
  void operator()(const longrope_scaling& s) const {
    require_original_max_position(s.original_max_position, "longrope.original_max_position");
    require_per_pair(s.short_factor, d.rotated_pairs(), "longrope.short_factor", false);
    require_per_pair(s.long_factor, d.rotated_pairs(), "longrope.long_factor", false);
    if (s.factor) {
      require_factor(*s.factor, "longrope.factor", c.allow_compression);
    } else {
      require(s.max_position > 0, "longrope.max_position", s.max_position,
              "> 0 (needed to derive the factor when longrope.factor is absent)");
    }
    if (s.attention_factor) require_attention_factor(*s.attention_factor, "longrope.attention_factor");
    if (s.switch_policy == longrope_switch::fixed_by_capacity)
      require(s.capacity > 0, "longrope.capacity", s.capacity, "> 0 for switch_policy fixed_by_capacity");
  }
  void operator()(const frequency_factors& s) const {
    require_per_pair(s.factors, d.rotated_pairs(), "frequency_factors.factors", false);
    require_attention_factor(s.attention_factor, "frequency_factors.attention_factor");
  }
  void operator()(const explicit_frequencies& s) const {
    require_per_pair(s.inv_freq, d.rotated_pairs(), "explicit_frequencies.inv_freq", true);
    require_attention_factor(s.attention_factor, "explicit_frequencies.attention_factor");
  }
};

}  // namespace detail

/// Throws config_error unless `c` is a valid RoPE configuration (docs/spec.md §7.4, §8, §12).
inline void validate(const rope_config& c) {
  using detail::require;
  require(c.head_dim > 0 && c.head_dim % 2 == 0 && c.head_dim <= detail::max_rope_head_dim, "rope.head_dim", c.head_dim,
          "an even number in [2, 2^20]");
  const auto D = static_cast<int>(c.head_dim);
  require(c.rotary_offset >= 0 && c.rotary_offset < D, "rope.rotary_offset", c.rotary_offset,
          "in [0, head_dim = " + std::to_string(D) + ")");
  if (c.rotary_dim)  // in range before it is narrowed; the parity and the room are checked below
    require(*c.rotary_dim >= 0 && *c.rotary_dim <= D, "rope.rotary_dim", *c.rotary_dim,
            "an even rotary_dim in [2, head_dim - rotary_offset = " + std::to_string(D - c.rotary_offset) + "]");
  if (c.partial_rotary_factor) {
    const double f = *c.partial_rotary_factor;
    require(std::isfinite(f) && f > 0 && f <= 1, "rope.partial_rotary_factor", f, "in (0, 1]");
  }
  const int R = detail::unchecked_rotary_dim(c);
  const auto room = static_cast<int>(D - c.rotary_offset);
  require(R >= 2 && R % 2 == 0 && R <= room, c.rotary_dim ? "rope.rotary_dim" : "rope.partial_rotary_factor",
          c.rotary_dim ? detail::to_text(R)
                       : detail::to_text(*c.partial_rotary_factor) + " (rotary_dim " + std::to_string(R) + ")",
          "an even rotary_dim in [2, head_dim - rotary_offset = " + std::to_string(room) + "]");
  if (c.rotary_dim && c.partial_rotary_factor) {
    const int implied = static_cast<int>(std::floor(static_cast<double>(D) * *c.partial_rotary_factor));
    if (implied != R)
      throw config_error("rope.rotary_dim",
                         "rotary_dim = " + std::to_string(R) +
                             " contradicts partial_rotary_factor = " + detail::to_text(*c.partial_rotary_factor) +
                             " (floor(head_dim * factor) = " + std::to_string(implied) + ")");
  }
  if (c.partial_mode == partial_rotary_mode::proportional)
    require(room % 2 == 0, "rope.rotary_offset", c.rotary_offset,
            "head_dim - rotary_offset even for proportional partial rotary");
  require(std::isfinite(c.theta) && c.theta > 1, "rope.theta", c.theta, "a finite number > 1");
  std::visit(detail::scaling_validator{c, detail::dims_of(c)}, c.scaling);
}

/// R: the number of rotated elements after partial_rotary_factor (validates `c`).
[[nodiscard]] inline int resolved_rotary_dim(const rope_config& c) {
  validate(c);
  return detail::unchecked_rotary_dim(c);
}

}  // namespace posenc::inline v0
