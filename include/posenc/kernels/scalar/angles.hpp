// posenc/kernels/scalar/angles.hpp — the reference cos/sin row builder (one sincos per value).
//
// Row t holds M * cos(p_t * w_k) and M * sin(p_t * w_k), computed in double with the exact range
// reduction of rope/angles.hpp and rounded once to C (DESIGN §5). The oracle for the vectorised
// builders, which must agree with it to within one rounding of C.
#pragma once

#include <cstddef>
#include <cstdint>

#include <posenc/kernels/isa.hpp>
#include <posenc/rope/angles.hpp>

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
      posenc::detail::sincos_exact(positions[t], inv_freq[k], s, c);
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

namespace detail {
/// p = a + b with a = double(p) and b exact (p may exceed 2^53), as rope/angles.hpp splits it.
inline void split_position(std::int64_t p, double& a, double& b) noexcept {
  a = static_cast<double>(p);
  if (a >= 9.2233720368547758e18) {
    b = static_cast<double>(p - INT64_MAX) - 1.0;
  } else {
    b = static_cast<double>(p - static_cast<std::int64_t>(a));
  }
}
// Constants of the vectorised sincos. pi/2 split in two doubles; fdlibm's __kernel_sin/__kernel_cos
// minimax coefficients on [-pi/4, pi/4] (double) and Cephes' sinf/cosf ones (float).
inline constexpr double pio2_hi = 1.5707963267948966;
inline constexpr double pio2_lo = 6.123233995736766e-17;
inline constexpr double two_over_pi = 0.63661977236758134308;
inline constexpr double sin_d[6] = {-1.66666666666666324348e-01, 8.33333333332248946124e-03,
                                    -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                                    -2.50507602534068634195e-08, 1.58969099521155010221e-10};
inline constexpr double cos_d[6] = {4.16666666666666019037e-02, -1.38888888888741095749e-03,
                                    2.48015872894767294178e-05, -2.75573143513906633035e-07,
                                    2.08757232129817482790e-09, -1.13596475577881948265e-11};
inline constexpr float sin_f[3] = {-1.6666654611e-1f, 8.3321608736e-3f, -1.9515295891e-4f};
inline constexpr float cos_f[3] = {4.166664568298827e-2f, -1.388731625493765e-3f, 2.443315711809948e-5f};
inline constexpr double reduce_limit = 536870912.0;  // 2^29 turns of 2*pi: beyond, the scalar path
}  // namespace detail
}  // namespace posenc::inline v0::kernels
