// posenc/kernels/angles.hpp — cos/sin rows for a list of positions from double frequencies.
//
// Row t holds M * cos(p_t * w_k) and M * sin(p_t * w_k) for k < pairs, rounded once to C from a
// double computation with exact range reduction (kernels/angle_math.hpp), so float rows are within
// half an ulp (+1e-16) of the exact value at any position. This is what tables are built from.
// The entry dispatches to the best kernel (kernels/isa.hpp); kernels/scalar/angles.hpp is the oracle.
#pragma once

#include <cstddef>
#include <cstdint>

#include <posenc/kernels/arm/neon.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/kernels/scalar/angles.hpp>
#include <posenc/kernels/x86/avx2.hpp>
#include <posenc/kernels/x86/avx512.hpp>

namespace posenc::inline v0::kernels {

/// Largest pair count the on-the-fly entries (rotate_positions, rotate_qk with positions) accept:
/// their per-token cos/sin row lives on the stack.
inline constexpr int max_on_the_fly_pairs = 1024;

inline namespace POSENC_KERNELS_ABI {

namespace impl {
template <class C>
inline void compute_angles_on(isa which, const double* inv_freq, int pairs, const std::int64_t* positions,
                              std::ptrdiff_t count, double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  POSENC_KERNELS_DISPATCH(which, compute_angles(inv_freq, pairs, positions, count, magnitude, cos, sin, stride));
}
template <class C>
inline void row_angles_on(isa which, const double* inv_freq, int pairs, std::int64_t position, double magnitude, C* cos,
                          C* sin) noexcept {
  POSENC_KERNELS_DISPATCH(which, row_angles(inv_freq, pairs, position, magnitude, cos, sin));
}
}  // namespace impl

/// cos/sin rows for `count` positions: row t at cos + t * stride (and sin + t * stride), `pairs`
/// values each, magnitude M applied. C is float or double. Vectorised; agrees with
/// kernels::scalar::compute_angles to within one rounding of C (and is usually identical).
template <class C>
inline void compute_angles(const double* inv_freq, int pairs, const std::int64_t* positions, std::ptrdiff_t count,
                           double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  impl::compute_angles_on(active_isa(), inv_freq, pairs, positions, count, magnitude, cos, sin, stride);
}

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
