// posenc/kernels/arm/neon/angles.hpp — NEON cos/sin rows: 2 doubles per vector.
//
// Same functions, order and contract as kernels/scalar/angles.hpp; the same algorithm as the x86
// files (exact reduction modulo 2*pi, then pi/2; double or float sin/cos).
#pragma once

#include <posenc/kernels/scalar/angles.hpp>

#if POSENC_HAS_NEON_KERNELS
#include <arm_neon.h>
#include <cstring>
#include <type_traits>

#define POSENC_NEON_INLINE POSENC_FORCE_INLINE

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace neon {
namespace ang {
namespace d = ::posenc::kernels::detail;

POSENC_NEON_INLINE float64x2_t set(double x) {
  return vdupq_n_f64(x);
}
POSENC_NEON_INLINE float32x4_t set(float x) {
  return vdupq_n_f32(x);
}

/// p * w reduced into [-pi, pi] (p = a + b exactly).
POSENC_NEON_INLINE float64x2_t reduce(std::int64_t p, double a, double b, float64x2_t w) {
  const float64x2_t A = set(a), hi = vmulq_f64(A, w);
  const float64x2_t lo = vaddq_f64(vfmaq_f64(vnegq_f64(hi), A, w), vmulq_f64(set(b), w));
  const float64x2_t k = vrndnq_f64(vmulq_f64(hi, set(posenc::detail::inv_two_pi)));
  float64x2_t r = vfmsq_f64(hi, k, set(posenc::detail::two_pi_c1));
  r = vfmsq_f64(r, k, set(posenc::detail::two_pi_c2));
  r = vaddq_f64(vfmsq_f64(r, k, set(posenc::detail::two_pi_c3)), lo);
  const uint64x2_t near = vcaltq_f64(k, set(d::reduce_limit));  // false for far lanes and NaN
  if ((vgetq_lane_u64(near, 0) & vgetq_lane_u64(near, 1)) == 0) {
    alignas(16) double rr[2], ww[2];
    vst1q_f64(rr, r);
    vst1q_f64(ww, w);
    if (vgetq_lane_u64(near, 0) == 0) rr[0] = posenc::detail::reduced_angle(p, ww[0]);
    if (vgetq_lane_u64(near, 1) == 0) rr[1] = posenc::detail::reduced_angle(p, ww[1]);
    r = vld1q_f64(rr);
  }
  return r;
}

/// r = q * pi/2 + y with |y| <= pi/4 (+tiny), q integral.
POSENC_NEON_INLINE float64x2_t quadrant(float64x2_t r, float64x2_t& q) {
  q = vrndnq_f64(vmulq_f64(r, set(d::two_over_pi)));
  return vfmsq_f64(vfmsq_f64(r, q, set(d::pio2_hi)), q, set(d::pio2_lo));
}

/// sin and cos of r in double (a few 1e-17 from exact for |r| <= pi).
POSENC_NEON_INLINE void sincos(float64x2_t r, float64x2_t& s, float64x2_t& c) {
  float64x2_t q;
  const float64x2_t y = quadrant(r, q), z = vmulq_f64(y, y);
  float64x2_t ps = set(d::sin_d[5]), pc = set(d::cos_d[5]);
  for (int i = 4; i >= 0; --i) {
    ps = vfmaq_f64(set(d::sin_d[i]), ps, z);
    pc = vfmaq_f64(set(d::cos_d[i]), pc, z);
  }
  const float64x2_t sp = vfmaq_f64(y, vmulq_f64(y, z), ps);
  const float64x2_t hz = vmulq_f64(set(0.5), z), w = vsubq_f64(set(1.0), hz);
  const float64x2_t cp = vaddq_f64(w, vfmaq_f64(vsubq_f64(vsubq_f64(set(1.0), w), hz), vmulq_f64(z, z), pc));
  const int64x2_t qi = vcvtq_s64_f64(q), one = vdupq_n_s64(1), two = vdupq_n_s64(2);
  const uint64x2_t swap = vtstq_s64(qi, one);
  const uint64x2_t sneg = vshlq_n_u64(vreinterpretq_u64_s64(vandq_s64(qi, two)), 62);
  const uint64x2_t cneg = vshlq_n_u64(vreinterpretq_u64_s64(vandq_s64(vaddq_s64(qi, one), two)), 62);
  s = vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(vbslq_f64(swap, cp, sp)), sneg));
  c = vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(vbslq_f64(swap, sp, cp)), cneg));
}

/// sin and cos of q * pi/2 + y in float (|y| <= pi/4; about one float ulp).
POSENC_NEON_INLINE void sincos(float32x4_t y, int32x4_t q, float32x4_t& s, float32x4_t& c) {
  const float32x4_t z = vmulq_f32(y, y);
  float32x4_t ps = set(d::sin_f[2]), pc = set(d::cos_f[2]);
  for (int i = 1; i >= 0; --i) {
    ps = vfmaq_f32(set(d::sin_f[i]), ps, z);
    pc = vfmaq_f32(set(d::cos_f[i]), pc, z);
  }
  const float32x4_t sp = vfmaq_f32(y, vmulq_f32(y, z), ps);
  const float32x4_t cp = vfmaq_f32(vfmsq_f32(set(1.0f), set(0.5f), z), vmulq_f32(z, z), pc);
  const int32x4_t one = vdupq_n_s32(1), two = vdupq_n_s32(2);
  const uint32x4_t swap = vtstq_s32(q, one);
  const uint32x4_t sneg = vshlq_n_u32(vreinterpretq_u32_s32(vandq_s32(q, two)), 30);
  const uint32x4_t cneg = vshlq_n_u32(vreinterpretq_u32_s32(vandq_s32(vaddq_s32(q, one), two)), 30);
  s = vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(vbslq_f32(swap, cp, sp)), sneg));
  c = vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(vbslq_f32(swap, sp, cp)), cneg));
}

/// 4 values of M * (cos, sin)(p * w) in float after a double reduction.
POSENC_NEON_INLINE void row4(std::int64_t p, double a, double b, const double* w, float32x4_t M, float* co, float* si) {
  float64x2_t q0, q1;
  const float64x2_t y0 = quadrant(reduce(p, a, b, vld1q_f64(w)), q0);
  const float64x2_t y1 = quadrant(reduce(p, a, b, vld1q_f64(w + 2)), q1);
  float32x4_t s, c;
  sincos(vcombine_f32(vcvt_f32_f64(y0), vcvt_f32_f64(y1)),
         vcombine_s32(vmovn_s64(vcvtq_s64_f64(q0)), vmovn_s64(vcvtq_s64_f64(q1))), s, c);
  vst1q_f32(co, vmulq_f32(M, c));
  vst1q_f32(si, vmulq_f32(M, s));
}

POSENC_NEON_INLINE void put(double* p, float64x2_t v) {
  vst1q_f64(p, v);
}
POSENC_NEON_INLINE void put(float* p, float64x2_t v) {
  vst1_f32(p, vcvt_f32_f64(v));
}
}  // namespace ang

/// See scalar::compute_angles.
template <class C>
inline void compute_angles(const double* inv_freq, int pairs, const std::int64_t* positions, std::ptrdiff_t count,
                           double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  const float64x2_t M = ang::set(magnitude);
  for (std::ptrdiff_t t = 0; t < count; ++t) {
    double a, b;
    detail::split_position(positions[t], a, b);
    C* co = cos + t * stride;
    C* si = sin + t * stride;
    float64x2_t s, c;
    int k = 0;
    for (; k + 2 <= pairs; k += 2) {
      ang::sincos(ang::reduce(positions[t], a, b, vld1q_f64(inv_freq + k)), s, c);
      ang::put(co + k, vmulq_f64(M, c));
      ang::put(si + k, vmulq_f64(M, s));
    }
    if (const int n = pairs - k; n > 0) {
      alignas(16) double w[2] = {}, cc[2], ss[2];
      std::memcpy(w, inv_freq + k, static_cast<std::size_t>(n) * sizeof(double));
      ang::sincos(ang::reduce(positions[t], a, b, vld1q_f64(w)), s, c);
      vst1q_f64(cc, vmulq_f64(M, c));
      vst1q_f64(ss, vmulq_f64(M, s));
      for (int i = 0; i < n; ++i) co[k + i] = static_cast<C>(cc[i]), si[k + i] = static_cast<C>(ss[i]);
    }
  }
}

/// See scalar::row_angles. float: double reduction, float sin/cos (within 2e-7 * M of exact).
template <class C>
inline void row_angles(const double* inv_freq, int pairs, std::int64_t position, double magnitude, C* cos,
                       C* sin) noexcept {
  if constexpr (std::is_same_v<C, double>) {
    compute_angles(inv_freq, pairs, &position, 1, magnitude, cos, sin, 0);
  } else {
    double a, b;
    detail::split_position(position, a, b);
    const float32x4_t M = ang::set(static_cast<float>(magnitude));
    int k = 0;
    for (; k + 4 <= pairs; k += 4) ang::row4(position, a, b, inv_freq + k, M, cos + k, sin + k);
    if (const int n = pairs - k; n > 0) {
      alignas(16) double w[4] = {};
      alignas(16) float cc[4], ss[4];
      std::memcpy(w, inv_freq + k, static_cast<std::size_t>(n) * sizeof(double));
      ang::row4(position, a, b, w, M, cc, ss);
      std::memcpy(cos + k, cc, static_cast<std::size_t>(n) * sizeof(float));
      std::memcpy(sin + k, ss, static_cast<std::size_t>(n) * sizeof(float));
    }
  }
}

}  // namespace neon
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels

#undef POSENC_NEON_INLINE
#endif  // POSENC_HAS_NEON_KERNELS
