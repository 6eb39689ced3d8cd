// posenc/rope/scaling/longrope.hpp — LongRoPE / Phi-3 "su" (HF "longrope", docs/spec.md §8.7).
//
// Per-pair divisors w'_k = w_k / f_k with f = short_factor or long_factor, and the magnitude
// M = sqrt(1 + ln s / ln L0). Which list applies is a policy (longrope_switch) decided by the
// schedule from a length; this header only holds the formulas.
#pragma once

#include <cmath>
#include <cstdint>

#include <posenc/rope/config.hpp>

namespace posenc::inline v0 {

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

}  // namespace posenc::inline v0
