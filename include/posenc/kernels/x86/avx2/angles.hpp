// posenc/kernels/x86/avx2/angles.hpp — AVX2+FMA cos/sin rows: 4 doubles per vector.
//
// Same functions, order and contract as kernels/scalar/angles.hpp. The angle p * w is reduced
// modulo 2*pi as rope/angles.hpp does it (exact two-product, three-part 2*pi), then modulo pi/2;
// compute_angles evaluates sin/cos in double (rounded once to C), row_angles<float> in float
// after the double reduction (within 2e-7 of exact). Lanes with more than 2^29 turns take the
// scalar reduction.
#pragma once

#include <posenc/kernels/scalar/angles.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cstring>
#include <immintrin.h>
#include <type_traits>

#define POSENC_AVX2_INLINE POSENC_TARGET_AVX2 POSENC_FORCE_INLINE

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx2 {
namespace ang {
namespace d = ::posenc::kernels::detail;

POSENC_AVX2_INLINE __m256d set(double x) {
  return _mm256_set1_pd(x);
}
POSENC_AVX2_INLINE __m256 set(float x) {
  return _mm256_set1_ps(x);
}
POSENC_AVX2_INLINE __m256d nearest(__m256d x) {
  return _mm256_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/// p * w reduced into [-pi, pi] (p = a + b exactly).
POSENC_AVX2_INLINE __m256d reduce(std::int64_t p, double a, double b, __m256d w) {
  const __m256d A = set(a), hi = _mm256_mul_pd(A, w);
  const __m256d lo = _mm256_add_pd(_mm256_fmsub_pd(A, w, hi), _mm256_mul_pd(set(b), w));
  const __m256d k = nearest(_mm256_mul_pd(hi, set(posenc::detail::inv_two_pi)));
  __m256d r = _mm256_fnmadd_pd(k, set(posenc::detail::two_pi_c1), hi);
  r = _mm256_fnmadd_pd(k, set(posenc::detail::two_pi_c2), r);
  r = _mm256_add_pd(_mm256_fnmadd_pd(k, set(posenc::detail::two_pi_c3), r), lo);
  const __m256d absk = _mm256_andnot_pd(set(-0.0), k);
  if (const int far = _mm256_movemask_pd(_mm256_cmp_pd(absk, set(d::reduce_limit), _CMP_NLT_UQ)); far != 0) {
    alignas(32) double rr[4], ww[4];
    _mm256_store_pd(rr, r);
    _mm256_store_pd(ww, w);
    for (int i = 0; i < 4; ++i) {
      if (far & (1 << i)) rr[i] = posenc::detail::reduced_angle(p, ww[i]);
    }
    r = _mm256_load_pd(rr);
  }
  return r;
}

/// r = q * pi/2 + y with |y| <= pi/4 (+tiny), q integral.
POSENC_AVX2_INLINE __m256d quadrant(__m256d r, __m256d& q) {
  q = nearest(_mm256_mul_pd(r, set(d::two_over_pi)));
  return _mm256_fnmadd_pd(q, set(d::pio2_lo), _mm256_fnmadd_pd(q, set(d::pio2_hi), r));
}

/// sin and cos of r in double (a few 1e-17 from exact for |r| <= pi).
POSENC_AVX2_INLINE void sincos(__m256d r, __m256d& s, __m256d& c) {
  __m256d q;
  const __m256d y = quadrant(r, q), z = _mm256_mul_pd(y, y);
  __m256d ps = set(d::sin_d[5]), pc = set(d::cos_d[5]);
  for (int i = 4; i >= 0; --i) {
    ps = _mm256_fmadd_pd(ps, z, set(d::sin_d[i]));
    pc = _mm256_fmadd_pd(pc, z, set(d::cos_d[i]));
  }
  const __m256d sp = _mm256_fmadd_pd(_mm256_mul_pd(y, z), ps, y);
  const __m256d hz = _mm256_mul_pd(set(0.5), z), w = _mm256_sub_pd(set(1.0), hz);
  const __m256d cp =
      _mm256_add_pd(w, _mm256_fmadd_pd(_mm256_mul_pd(z, z), pc, _mm256_sub_pd(_mm256_sub_pd(set(1.0), w), hz)));
  const __m256i qi = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(q)), one = _mm256_set1_epi64x(1),
                two = _mm256_set1_epi64x(2);
  const __m256d swap = _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(qi, one), one));
  const __m256d sneg = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_and_si256(qi, two), 62));
  const __m256d cneg = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_and_si256(_mm256_add_epi64(qi, one), two), 62));
  s = _mm256_xor_pd(_mm256_blendv_pd(sp, cp, swap), sneg);
  c = _mm256_xor_pd(_mm256_blendv_pd(cp, sp, swap), cneg);
}

/// sin and cos of q * pi/2 + y in float (|y| <= pi/4; about one float ulp).
POSENC_AVX2_INLINE void sincos(__m256 y, __m256i q, __m256& s, __m256& c) {
  const __m256 z = _mm256_mul_ps(y, y);
  __m256 ps = set(d::sin_f[2]), pc = set(d::cos_f[2]);
  for (int i = 1; i >= 0; --i) {
    ps = _mm256_fmadd_ps(ps, z, set(d::sin_f[i]));
    pc = _mm256_fmadd_ps(pc, z, set(d::cos_f[i]));
  }
  const __m256 sp = _mm256_fmadd_ps(_mm256_mul_ps(y, z), ps, y);
  const __m256 cp = _mm256_fmadd_ps(_mm256_mul_ps(z, z), pc, _mm256_fnmadd_ps(set(0.5f), z, set(1.0f)));
  const __m256i one = _mm256_set1_epi32(1), two = _mm256_set1_epi32(2);
  const __m256 swap = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(q, one), one));
  const __m256 sneg = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(q, two), 30));
  const __m256 cneg = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(_mm256_add_epi32(q, one), two), 30));
  s = _mm256_xor_ps(_mm256_blendv_ps(sp, cp, swap), sneg);
  c = _mm256_xor_ps(_mm256_blendv_ps(cp, sp, swap), cneg);
}

/// 8 values of M * (cos, sin)(p * w) in float after a double reduction.
POSENC_AVX2_INLINE void row8(std::int64_t p, double a, double b, const double* w, __m256 M, float* co, float* si) {
  __m256d q0, q1;
  const __m256d y0 = quadrant(reduce(p, a, b, _mm256_loadu_pd(w)), q0);
  const __m256d y1 = quadrant(reduce(p, a, b, _mm256_loadu_pd(w + 4)), q1);
  __m256 s, c;
  sincos(_mm256_set_m128(_mm256_cvtpd_ps(y1), _mm256_cvtpd_ps(y0)),
         _mm256_set_m128i(_mm256_cvtpd_epi32(q1), _mm256_cvtpd_epi32(q0)), s, c);
  _mm256_storeu_ps(co, _mm256_mul_ps(M, c));
  _mm256_storeu_ps(si, _mm256_mul_ps(M, s));
}

POSENC_AVX2_INLINE void put(double* p, __m256d v) {
  _mm256_storeu_pd(p, v);
}
POSENC_AVX2_INLINE void put(float* p, __m256d v) {
  _mm_storeu_ps(p, _mm256_cvtpd_ps(v));
}
}  // namespace ang

/// See scalar::compute_angles.
template <class C>
POSENC_TARGET_AVX2 inline void compute_angles(const double* inv_freq, int pairs, const std::int64_t* positions,
                                              std::ptrdiff_t count, double magnitude, C* cos, C* sin,
                                              std::ptrdiff_t stride) noexcept {
  const __m256d M = ang::set(magnitude);
  for (std::ptrdiff_t t = 0; t < count; ++t) {
    double a, b;
    detail::split_position(positions[t], a, b);
    C* co = cos + t * stride;
    C* si = sin + t * stride;
    __m256d s, c;
    int k = 0;
    for (; k + 4 <= pairs; k += 4) {
      ang::sincos(ang::reduce(positions[t], a, b, _mm256_loadu_pd(inv_freq + k)), s, c);
      ang::put(co + k, _mm256_mul_pd(M, c));
      ang::put(si + k, _mm256_mul_pd(M, s));
    }
    if (const int n = pairs - k; n > 0) {
      alignas(32) double w[4] = {}, cc[4], ss[4];
      std::memcpy(w, inv_freq + k, static_cast<std::size_t>(n) * sizeof(double));
      ang::sincos(ang::reduce(positions[t], a, b, _mm256_load_pd(w)), s, c);
      _mm256_store_pd(cc, _mm256_mul_pd(M, c));
      _mm256_store_pd(ss, _mm256_mul_pd(M, s));
      for (int i = 0; i < n; ++i) co[k + i] = static_cast<C>(cc[i]), si[k + i] = static_cast<C>(ss[i]);
    }
  }
}

/// See scalar::row_angles. float: double reduction, float sin/cos (within 2e-7 * M of exact).
template <class C>
POSENC_TARGET_AVX2 inline void row_angles(const double* inv_freq, int pairs, std::int64_t position, double magnitude,
                                          C* cos, C* sin) noexcept {
  if constexpr (std::is_same_v<C, double>) {
    compute_angles(inv_freq, pairs, &position, 1, magnitude, cos, sin, 0);
  } else {
    double a, b;
    detail::split_position(position, a, b);
    const __m256 M = ang::set(static_cast<float>(magnitude));
    int k = 0;
    for (; k + 8 <= pairs; k += 8) ang::row8(position, a, b, inv_freq + k, M, cos + k, sin + k);
    if (const int n = pairs - k; n > 0) {
      alignas(32) double w[8] = {};
      alignas(32) float cc[8], ss[8];
      std::memcpy(w, inv_freq + k, static_cast<std::size_t>(n) * sizeof(double));
      ang::row8(position, a, b, w, M, cc, ss);
      std::memcpy(cos + k, cc, static_cast<std::size_t>(n) * sizeof(float));
      std::memcpy(sin + k, ss, static_cast<std::size_t>(n) * sizeof(float));
    }
  }
}

}  // namespace avx2
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels

#undef POSENC_AVX2_INLINE
#endif  // POSENC_HAS_X86_KERNELS
