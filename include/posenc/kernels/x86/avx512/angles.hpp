// posenc/kernels/x86/avx512/angles.hpp — AVX-512 cos/sin rows: 8 doubles per vector.
//
// Same functions, order and contract as kernels/scalar/angles.hpp; the same algorithm as the AVX2
// file (exact reduction modulo 2*pi, then pi/2; double or float sin/cos), twice as wide, with
// masks for the quadrant selection and the tails.
#pragma once

#include <posenc/kernels/scalar/angles.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cstring>
#include <immintrin.h>
#include <type_traits>

#define POSENC_AVX512_INLINE POSENC_TARGET_AVX512 POSENC_FORCE_INLINE

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and trip -Wmaybe-uninitialized
// once inlined (GCC bug 105593); the values are fully defined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx512 {
namespace ang {
namespace d = ::posenc::kernels::detail;

POSENC_AVX512_INLINE __m512d set(double x) {
  return _mm512_set1_pd(x);
}
POSENC_AVX512_INLINE __m512 set(float x) {
  return _mm512_set1_ps(x);
}
POSENC_AVX512_INLINE __m512d nearest(__m512d x) {
  return _mm512_roundscale_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/// p * w reduced into [-pi, pi] (p = a + b exactly).
POSENC_AVX512_INLINE __m512d reduce(std::int64_t p, double a, double b, __m512d w) {
  const __m512d A = set(a), hi = _mm512_mul_pd(A, w);
  const __m512d lo = _mm512_add_pd(_mm512_fmsub_pd(A, w, hi), _mm512_mul_pd(set(b), w));
  const __m512d k = nearest(_mm512_mul_pd(hi, set(posenc::detail::inv_two_pi)));
  __m512d r = _mm512_fnmadd_pd(k, set(posenc::detail::two_pi_c1), hi);
  r = _mm512_fnmadd_pd(k, set(posenc::detail::two_pi_c2), r);
  r = _mm512_add_pd(_mm512_fnmadd_pd(k, set(posenc::detail::two_pi_c3), r), lo);
  if (const __mmask8 far = _mm512_cmp_pd_mask(_mm512_abs_pd(k), set(d::reduce_limit), _CMP_NLT_UQ); far != 0) {
    alignas(64) double rr[8], ww[8];
    _mm512_store_pd(rr, r);
    _mm512_store_pd(ww, w);
    for (int i = 0; i < 8; ++i) {
      if (far & (1 << i)) rr[i] = posenc::detail::reduced_angle(p, ww[i]);
    }
    r = _mm512_load_pd(rr);
  }
  return r;
}

/// r = q * pi/2 + y with |y| <= pi/4 (+tiny), q integral.
POSENC_AVX512_INLINE __m512d quadrant(__m512d r, __m512d& q) {
  q = nearest(_mm512_mul_pd(r, set(d::two_over_pi)));
  return _mm512_fnmadd_pd(q, set(d::pio2_lo), _mm512_fnmadd_pd(q, set(d::pio2_hi), r));
}

/// sin and cos of r in double (a few 1e-17 from exact for |r| <= pi).
POSENC_AVX512_INLINE void sincos(__m512d r, __m512d& s, __m512d& c) {
  __m512d q;
  const __m512d y = quadrant(r, q), z = _mm512_mul_pd(y, y);
  __m512d ps = set(d::sin_d[5]), pc = set(d::cos_d[5]);
  for (int i = 4; i >= 0; --i) {
    ps = _mm512_fmadd_pd(ps, z, set(d::sin_d[i]));
    pc = _mm512_fmadd_pd(pc, z, set(d::cos_d[i]));
  }
  const __m512d sp = _mm512_fmadd_pd(_mm512_mul_pd(y, z), ps, y);
  const __m512d hz = _mm512_mul_pd(set(0.5), z), w = _mm512_sub_pd(set(1.0), hz);
  const __m512d cp =
      _mm512_add_pd(w, _mm512_fmadd_pd(_mm512_mul_pd(z, z), pc, _mm512_sub_pd(_mm512_sub_pd(set(1.0), w), hz)));
  const __m512i qi = _mm512_cvtpd_epi64(q), one = _mm512_set1_epi64(1), two = _mm512_set1_epi64(2);
  const __mmask8 swap = _mm512_test_epi64_mask(qi, one);
  const __m512d sneg = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_and_si512(qi, two), 62));
  const __m512d cneg = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_and_si512(_mm512_add_epi64(qi, one), two), 62));
  s = _mm512_xor_pd(_mm512_mask_blend_pd(swap, sp, cp), sneg);
  c = _mm512_xor_pd(_mm512_mask_blend_pd(swap, cp, sp), cneg);
}

/// sin and cos of q * pi/2 + y in float (|y| <= pi/4; about one float ulp).
POSENC_AVX512_INLINE void sincos(__m512 y, __m512i q, __m512& s, __m512& c) {
  const __m512 z = _mm512_mul_ps(y, y);
  __m512 ps = set(d::sin_f[2]), pc = set(d::cos_f[2]);
  for (int i = 1; i >= 0; --i) {
    ps = _mm512_fmadd_ps(ps, z, set(d::sin_f[i]));
    pc = _mm512_fmadd_ps(pc, z, set(d::cos_f[i]));
  }
  const __m512 sp = _mm512_fmadd_ps(_mm512_mul_ps(y, z), ps, y);
  const __m512 cp = _mm512_fmadd_ps(_mm512_mul_ps(z, z), pc, _mm512_fnmadd_ps(set(0.5f), z, set(1.0f)));
  const __m512i one = _mm512_set1_epi32(1), two = _mm512_set1_epi32(2);
  const __mmask16 swap = _mm512_test_epi32_mask(q, one);
  const __m512 sneg = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_and_si512(q, two), 30));
  const __m512 cneg = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_and_si512(_mm512_add_epi32(q, one), two), 30));
  s = _mm512_xor_ps(_mm512_mask_blend_ps(swap, sp, cp), sneg);
  c = _mm512_xor_ps(_mm512_mask_blend_ps(swap, cp, sp), cneg);
}

/// 16 values of M * (cos, sin)(p * w) in float after a double reduction.
POSENC_AVX512_INLINE void row16(std::int64_t p, double a, double b, const double* w, __m512 M, float* co, float* si) {
  __m512d q0, q1;
  const __m512d y0 = quadrant(reduce(p, a, b, _mm512_loadu_pd(w)), q0);
  const __m512d y1 = quadrant(reduce(p, a, b, _mm512_loadu_pd(w + 8)), q1);
  __m512 s, c;
  sincos(_mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(y0)), _mm512_cvtpd_ps(y1), 1),
         _mm512_inserti32x8(_mm512_castsi256_si512(_mm512_cvtpd_epi32(q0)), _mm512_cvtpd_epi32(q1), 1), s, c);
  _mm512_storeu_ps(co, _mm512_mul_ps(M, c));
  _mm512_storeu_ps(si, _mm512_mul_ps(M, s));
}

POSENC_AVX512_INLINE void put(double* p, __m512d v) {
  _mm512_storeu_pd(p, v);
}
POSENC_AVX512_INLINE void put(float* p, __m512d v) {
  _mm256_storeu_ps(p, _mm512_cvtpd_ps(v));
}
}  // namespace ang

/// See scalar::compute_angles.
template <class C>
POSENC_TARGET_AVX512 inline void compute_angles(const double* inv_freq, int pairs, const std::int64_t* positions,
                                                std::ptrdiff_t count, double magnitude, C* cos, C* sin,
                                                std::ptrdiff_t stride) noexcept {
  const __m512d M = ang::set(magnitude);
  for (std::ptrdiff_t t = 0; t < count; ++t) {
    double a, b;
    detail::split_position(positions[t], a, b);
    C* co = cos + t * stride;
    C* si = sin + t * stride;
    __m512d s, c;
    int k = 0;
    for (; k + 8 <= pairs; k += 8) {
      ang::sincos(ang::reduce(positions[t], a, b, _mm512_loadu_pd(inv_freq + k)), s, c);
      ang::put(co + k, _mm512_mul_pd(M, c));
      ang::put(si + k, _mm512_mul_pd(M, s));
    }
    if (const int n = pairs - k; n > 0) {
      alignas(64) double w[8] = {}, cc[8], ss[8];
      std::memcpy(w, inv_freq + k, static_cast<std::size_t>(n) * sizeof(double));
      ang::sincos(ang::reduce(positions[t], a, b, _mm512_load_pd(w)), s, c);
      _mm512_store_pd(cc, _mm512_mul_pd(M, c));
      _mm512_store_pd(ss, _mm512_mul_pd(M, s));
      for (int i = 0; i < n; ++i) co[k + i] = static_cast<C>(cc[i]), si[k + i] = static_cast<C>(ss[i]);
    }
  }
}

/// See scalar::row_angles. float: double reduction, float sin/cos (within 2e-7 * M of exact).
template <class C>
POSENC_TARGET_AVX512 inline void row_angles(const double* inv_freq, int pairs, std::int64_t position, double magnitude,
                                            C* cos, C* sin) noexcept {
  if constexpr (std::is_same_v<C, double>) {
    compute_angles(inv_freq, pairs, &position, 1, magnitude, cos, sin, 0);
  } else {
    double a, b;
    detail::split_position(position, a, b);
    const __m512 M = ang::set(static_cast<float>(magnitude));
    int k = 0;
    for (; k + 16 <= pairs; k += 16) ang::row16(position, a, b, inv_freq + k, M, cos + k, sin + k);
    if (const int n = pairs - k; n > 0) {
      alignas(64) double w[16] = {};
      alignas(64) float cc[16], ss[16];
      std::memcpy(w, inv_freq + k, static_cast<std::size_t>(n) * sizeof(double));
      ang::row16(position, a, b, w, M, cc, ss);
      std::memcpy(cos + k, cc, static_cast<std::size_t>(n) * sizeof(float));
      std::memcpy(sin + k, ss, static_cast<std::size_t>(n) * sizeof(float));
    }
  }
}

}  // namespace avx512
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#undef POSENC_AVX512_INLINE
#endif  // POSENC_HAS_X86_KERNELS
