// posenc/kernels/scalar/angles.hpp — the reference cos/sin row builder (one sincos per value).
//
// Row t holds M * cos(p_t * w_k) and M * sin(p_t * w_k), computed in double with the exact range
// reduction of kernels/angle_math.hpp and rounded once to C (docs/design.md §5). The oracle for the vectorised
// builders, which must agree with it to within one rounding of C.
#pragma once

#include <cstddef>
#include <cstdint>

#include <posenc/kernels/angle_math.hpp>
#include <posenc/kernels/isa.hpp>

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace scalar {

/// cos/sin rows for `count` positions: row t at cos + t * stride (and sin + t * stride), `pairs`
/// values each, magnitude M applied. C is float or double.
template <class C>
inline void compute_angles(const double* inv_freq, int pairs, const std::int64_t* positions, std::ptrdiff_t count,
                           double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  for (std::ptrdiff_t t = 0; t < count; ++t) {
    for (int k = 0; k < pairs; ++k) {
      double s, c;
      exact::sincos_exact(positions[t], inv_freq[k], s, c);
      cos[t * stride + k] = static_cast<C>(magnitude * c);
      sin[t * stride + k] = static_cast<C>(magnitude * s);
    }
  }
}

/// One row for one position, as the on-the-fly rotation needs it. The scalar kernel computes it
/// exactly (compute_angles); SIMD kernels may trade the last half ulp for speed (2e-7 rule).
template <class C>
inline void row_angles(const double* inv_freq, int pairs, std::int64_t position, double magnitude, C* cos,
                       C* sin) noexcept {
  compute_angles(inv_freq, pairs, &position, 1, magnitude, cos, sin, 0);
}

}  // namespace scalar
}  // namespace POSENC_KERNELS_ABI

}  // namespace posenc::inline v0::kernels
