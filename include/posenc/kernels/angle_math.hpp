// posenc/kernels/angle_math.hpp — the angle p * w reduced modulo 2*pi exactly enough that a float
// result is correctly rounded at any position (docs/design.md §5, docs/spec.md §1.3), and the constants of the
// vectorised sincos (kernels/drivers/angles.inl). The kernel layer's own math: rope/ re-exports it.
//
// p * w is formed without rounding error (two-product with FMA; p split into two exact doubles, as
// p may exceed 2^53) and reduced with a three-part Cody-Waite 2*pi, accurate to ~1e-16 rad while
// |p * w| < 2^29 * 2*pi (~3.4e9: every position below 2^31 at w <= 1). Larger angles take a
// long-double reduction whose error grows as |p * w| * 2^-64 (x87; 2^-113 where long double is
// binary128): ~1e-8 rad at 2^40, up to ~0.5 rad at |p| = 2^63 with w = 1 — every int64 position,
// INT64_MIN and INT64_MAX included, gives a finite angle in [-pi, pi] and no undefined behaviour.
//
// Reproducibility: these functions live in the ABI-tagged namespace (kernels/isa.hpp), and every
// product that a compiler could fuse with a following sum passes through `rounded` (an empty asm
// barrier), so -mfma or -ffp-contract=fast in one TU cannot change the last bit in another.
#pragma once

#include <cmath>
#include <cstdint>

#include <posenc/core/platform.hpp>
#include <posenc/kernels/isa.hpp>

namespace posenc::inline v0::kernels {

namespace angle_constants {
inline constexpr double two_pi = 6.283185307179586476925286766559;
inline constexpr double inv_two_pi = 0.15915494309189533576888376337251;
// 2*pi = c1 + c2 + c3 with c1 and c2 holding 24 significant bits each, so k * c1 and k * c2 are
// exact for |k| < 2^29.
inline constexpr double two_pi_c1 = 6.283185005187988;
inline constexpr double two_pi_c2 = 3.0199157663446385e-07;
inline constexpr double two_pi_c3 = 2.1561211432632476e-14;
inline constexpr double reduce_limit = 536870912.0;  // 2^29 turns of 2*pi: beyond, the long-double path
// pi/2 split in two doubles; fdlibm's __kernel_sin/__kernel_cos minimax coefficients on
// [-pi/4, pi/4] (double) and Cephes' sinf/cosf ones (float).
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
}  // namespace angle_constants

inline namespace POSENC_KERNELS_ABI {

/// x, rounded and materialised: the compiler may not fuse the product that produced it.
template <class F>
POSENC_FORCE_INLINE F rounded(F x) noexcept {
#if (defined(__GNUC__) || defined(__clang__)) && POSENC_ARCH_X86_64
  asm("" : "+x"(x));
#elif (defined(__GNUC__) || defined(__clang__)) && POSENC_ARCH_AARCH64
  asm("" : "+w"(x));
#endif
  return x;
}

namespace exact {

/// p = a + b with a = double(p) and b exact. a is 2^63 for p >= 2^63 - 512; b is then computed
/// without ever converting 2^63 back to int64 (undefined behaviour).
POSENC_FORCE_INLINE void split_position(std::int64_t p, double& a, double& b) noexcept {
  a = static_cast<double>(p);
  if (a >= 9.2233720368547758e18) {
    b = static_cast<double>(p - INT64_MAX) - 1.0;
  } else {
    b = static_cast<double>(p - static_cast<std::int64_t>(a));
  }
}

/// The angle p * w reduced into [-pi, pi] (approximately; |r| <= pi + 1e-15). See the banner for
/// the accuracy at every position.
[[nodiscard]] POSENC_FORCE_INLINE double reduced_angle(std::int64_t p, double w) noexcept {
  namespace c = angle_constants;
  double a, b;
  split_position(p, a, b);
  const double hi = a * w;
  const double lo = std::fma(a, w, -hi) + rounded(b * w);
  const double k = std::nearbyint(hi * c::inv_two_pi);
  if (std::fabs(k) < c::reduce_limit) {
    return (((hi - rounded(k * c::two_pi_c1)) - rounded(k * c::two_pi_c2)) - rounded(k * c::two_pi_c3)) + lo;
  }
  const long double x = static_cast<long double>(a) * static_cast<long double>(w) + static_cast<long double>(b * w);
  const long double tp = 6.283185307179586476925286766559005768L;
  long double r = __builtin_fmodl(x, tp);  // not std::fmod: the kernels inline only always_inline code
                                           // (kernels/ops/begin_avx2.inl)
  if (r > tp / 2) r -= tp;
  if (r < -tp / 2) r += tp;
  return static_cast<double>(r);
}

/// sin and cos of p * w in double, accurate to a few ulp of double wherever reduced_angle is exact.
inline void sincos_exact(std::int64_t p, double w, double& s, double& c) noexcept {
  const double r = reduced_angle(p, w);
  s = std::sin(r);
  c = std::cos(r);
}

}  // namespace exact
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
