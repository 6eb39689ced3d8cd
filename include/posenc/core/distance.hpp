// posenc/core/distance.hpp — relative distances d = pos_k - pos_q as the encoders and the fused
// attention share them: the range over which a distance-indexed hook changes, and its clipping.
//
// Positions may be anywhere in int64, so a distance is taken saturated (core/checked.hpp,
// saturating_difference); a hook that stops changing beyond [lo, hi] maps every distance to
// clamp(d, lo, hi) exactly. Not here: what the hooks compute (concepts.hpp, encoders/).
#pragma once

#include <algorithm>
#include <cstdint>

namespace posenc::inline v0 {

/// Distances d = pos_k - pos_q at or beyond which a distance-indexed hook stops changing: the value
/// at every d <= lo equals the value at lo, and at every d >= hi the value at hi (T5 buckets
/// saturate, Shaw tables clip; ALiBi never does: lo = INT64_MIN, hi = INT64_MAX).
struct distance_range {
  std::int64_t lo = 0, hi = 0;
  friend constexpr bool operator==(distance_range, distance_range) noexcept = default;
};

/// The distances of a call, `call`, clipped to where a hook changes, `r`: every distance d of the
/// call maps to clamp(d, lo, hi) - lo of the result, exactly (outside r the hook is constant).
[[nodiscard]] constexpr distance_range clip_range(distance_range call, distance_range r) noexcept {
  return {std::clamp(call.lo, r.lo, r.hi), std::clamp(call.hi, r.lo, r.hi)};
}

}  // namespace posenc::inline v0
