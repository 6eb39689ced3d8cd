// posenc/rope/angles.hpp — the angle p * w and its sine and cosine, computed exactly enough that a
// float result is correctly rounded at any position (DESIGN §5, PE_SPEC §1.3).
//
// The product p * w is formed without rounding error (two-product with FMA) and reduced modulo
// 2*pi with a three-part Cody-Waite constant, so the reduced angle is accurate to ~1e-16 rad for
// |p * w| < 2^29 * 2*pi (~3.4e9: every position below 2^31 at w <= 1). Larger angles fall back to a
// long-double reduction whose error grows as |p * w| * 2^-64 (x87) — ~1e-8 rad at 2^40. sin/cos
// are then taken in double. The HF-compatible float32 arithmetic (reference_fp32) lives here too. Scalar only: the
// vectorised table builder in kernels/ must agree with these functions.
#pragma once

#include <cmath>
#include <cstdint>

namespace posenc::inline v0 {

/// How angles are formed. `exact` (default): double, range-reduced (error ~1e-16 rad at any
/// position). `reference_fp32`: float(position) * float(inv_freq) in float32 and float32 cos/sin,
/// as Hugging Face computes them, for matching a trained model's exact numbers.
enum class angle_mode : unsigned char { exact, reference_fp32 };

namespace detail {

inline constexpr double two_pi = 6.283185307179586476925286766559;
inline constexpr double inv_two_pi = 0.15915494309189533576888376337251;
// 2*pi = c1 + c2 + c3 with c1 and c2 holding 24 significant bits each, so k * c1 and k * c2 are
// exact for |k| < 2^29.
inline constexpr double two_pi_c1 = 6.283185005187988;
inline constexpr double two_pi_c2 = 3.0199157663446385e-07;
inline constexpr double two_pi_c3 = 2.1561211432632476e-14;

/// The angle p * w reduced into [-pi, pi] (approximately; |r| <= pi + 1e-15).
[[nodiscard]] inline double reduced_angle(std::int64_t p, double w) noexcept {
  // Split p so that both parts are exact doubles (p may exceed 2^53).
  const double a = static_cast<double>(p);
  const auto ai = static_cast<std::int64_t>(a);  // a is an integer value; may be 2^63 for INT64_MAX
  const double b =
      (a >= 9.2233720368547758e18) ? static_cast<double>(p - INT64_MAX) - 1.0 : static_cast<double>(p - ai);
  const double hi = a * w;
  const double lo = std::fma(a, w, -hi) + b * w;
  const double k = std::nearbyint(hi * inv_two_pi);
  if (std::fabs(k) < 536870912.0) {  // 2^29
    return (((hi - k * two_pi_c1) - k * two_pi_c2) - k * two_pi_c3) + lo;
  }
  const long double x = static_cast<long double>(a) * static_cast<long double>(w) + static_cast<long double>(b * w);
  const long double tp = 6.283185307179586476925286766559005768L;
  long double r = std::fmod(x, tp);
  if (r > tp / 2) r -= tp;
  if (r < -tp / 2) r += tp;
  return static_cast<double>(r);
}

/// sin and cos of p * w in double, accurate to a few ulp of double at any position.
inline void sincos_exact(std::int64_t p, double w, double& s, double& c) noexcept {
  const double r = reduced_angle(p, w);
  s = std::sin(r);
  c = std::cos(r);
}

/// Hugging Face fp32 arithmetic: angle = float(p) * float(w) rounded to float, then float cos/sin.
inline void sincos_reference_fp32(std::int64_t p, float w, float& s, float& c) noexcept {
  const float angle = static_cast<float>(p) * w;
  s = std::sin(angle);
  c = std::cos(angle);
}

}  // namespace detail
}  // namespace posenc::inline v0
