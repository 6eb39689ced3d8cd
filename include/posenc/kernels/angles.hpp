// posenc/kernels/angles.hpp — cos/sin rows for a list of positions from double frequencies.
//
// Row t holds M * cos(p_t * w_k) and M * sin(p_t * w_k) for k < pairs, rounded once to C from a
// double computation with exact range reduction (rope/angles.hpp), so float rows are within
// ~6e-8 (half an ulp) of the exact value at any position. This is what tables are built from and
// what the on-the-fly rotation path computes per token.
#pragma once

#include <cstddef>
#include <cstdint>

#include <posenc/rope/angles.hpp>

namespace posenc::inline v0::kernels {

namespace scalar {

/// Reference: one sincos per (token, pair), in double.
template <class C>
inline void compute_angles(const double* inv_freq, int pairs, const std::int64_t* positions, std::ptrdiff_t count,
                           double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  for (std::ptrdiff_t t = 0; t < count; ++t) {
    for (int k = 0; k < pairs; ++k) {
      double s, c;
      detail::sincos_exact(positions[t], inv_freq[k], s, c);
      cos[t * stride + k] = static_cast<C>(magnitude * c);
      sin[t * stride + k] = static_cast<C>(magnitude * s);
    }
  }
}

}  // namespace scalar

/// cos/sin rows for `count` positions: row t at cos + t * stride (and sin + t * stride), `pairs`
/// values each, magnitude M applied. C is float or double.
template <class C>
inline void compute_angles(const double* inv_freq, int pairs, const std::int64_t* positions, std::ptrdiff_t count,
                           double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  scalar::compute_angles(inv_freq, pairs, positions, count, magnitude, cos, sin, stride);
}

}  // namespace posenc::inline v0::kernels
