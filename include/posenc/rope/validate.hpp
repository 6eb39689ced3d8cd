// posenc/rope/validate.hpp — strict validation of a rope_config (every RoPE row of docs/spec.md §12).
//
// Throws config_error naming the parameter, the value and the valid range. Explicit values are
// always checked as values: a 0 is never read as "absent" (std::optional marks absence). Checks the
// geometry and the base here and the scaling through its descriptor (rope/scaling/<name>.hpp). Also
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

/// What the scaling descriptors see of a config (rope/scaling/descriptor.hpp).
[[nodiscard]] inline scaling_context scaling_context_of(const rope_config& c) noexcept {
  const rope_dims d = dims_of(c);
  return {c.theta, d.denominator, d.rotated_pairs(), c.allow_compression, c.angles};
}

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
  const scaling_context ctx = detail::scaling_context_of(c);
  visit_scaling(c.scaling, [&](auto d, const auto& s) { decltype(d)::validate(s, ctx); });
}

/// R: the number of rotated elements after partial_rotary_factor (validates `c`).
[[nodiscard]] inline int resolved_rotary_dim(const rope_config& c) {
  validate(c);
  return detail::unchecked_rotary_dim(c);
}

}  // namespace posenc::inline v0
