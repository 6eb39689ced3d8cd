// posenc/kernels/x86/avx512/rotate.hpp — AVX-512 rotation kernel: 16 floats or 8 doubles per vector.
//
// Same functions, order and contract as kernels/scalar/rotate.hpp (the oracle), bit-exact with it.
// Tails use masked loads and stores. bfloat16 rounding is done with integer operations rather than
// VCVTNEPS2BF16, which flushes subnormals and so would not be bit-exact with the reference.
#pragma once

#include <posenc/kernels/scalar/rotate.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cstdint>
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

template <class T>
struct vec_of {
  using type = __m512;
};
template <>
struct vec_of<double> {
  using type = __m512d;
};
template <class T>
using vec = typename vec_of<T>::type;
template <class T>
inline constexpr int lanes = std::is_same_v<T, double> ? 8 : 16;

// clang-format off
POSENC_AVX512_INLINE __m512  add(__m512 a, __m512 b)   { return _mm512_add_ps(a, b); }
POSENC_AVX512_INLINE __m512d add(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
POSENC_AVX512_INLINE __m512  sub(__m512 a, __m512 b)   { return _mm512_sub_ps(a, b); }
POSENC_AVX512_INLINE __m512d sub(__m512d a, __m512d b) { return _mm512_sub_pd(a, b); }
POSENC_AVX512_INLINE __m512  flip(__m512 a, __m512 m)    { return _mm512_xor_ps(a, m); }
POSENC_AVX512_INLINE __m512d flip(__m512d a, __m512d m)  { return _mm512_xor_pd(a, m); }
// A product the compiler may not fuse into an FMA (keeps the scalar kernel's two roundings).
POSENC_AVX512_INLINE __m512  mul(__m512 a, __m512 b)   { __m512 r = _mm512_mul_ps(a, b); asm("" : "+v"(r)); return r; }
POSENC_AVX512_INLINE __m512d mul(__m512d a, __m512d b) { __m512d r = _mm512_mul_pd(a, b); asm("" : "+v"(r)); return r; }
POSENC_AVX512_INLINE __m512  sign_mask(__m512, bool on)  { return on ? _mm512_set1_ps(-0.f) : _mm512_setzero_ps(); }
POSENC_AVX512_INLINE __m512d sign_mask(__m512d, bool on) { return on ? _mm512_set1_pd(-0.0) : _mm512_setzero_pd(); }
POSENC_AVX512_INLINE __m512  even_sign(__m512)  { return _mm512_castsi512_ps(_mm512_set1_epi64(0x80000000)); }
POSENC_AVX512_INLINE __m512d even_sign(__m512d) { return _mm512_castsi512_pd(_mm512_set_epi64(0, INT64_MIN, 0, INT64_MIN, 0, INT64_MIN, 0, INT64_MIN)); }
// Interleaved pairs: (x0 x1 x2 x3 ...) -> (x1 x0 x3 x2 ...); c (c0 c1 ...) -> (c0 c0 c1 c1 ...) for each half.
POSENC_AVX512_INLINE __m512  swap_pairs(__m512 x)  { return _mm512_permute_ps(x, 0xB1); }
POSENC_AVX512_INLINE __m512d swap_pairs(__m512d x) { return _mm512_permute_pd(x, 0x55); }
POSENC_AVX512_INLINE __m512  dup_lo(__m512 c)  { return _mm512_maskz_permutexvar_ps(0xFFFF, _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), c); }
POSENC_AVX512_INLINE __m512  dup_hi(__m512 c)  { return _mm512_maskz_permutexvar_ps(0xFFFF, _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), c); }
POSENC_AVX512_INLINE __m512d dup_lo(__m512d c) { return _mm512_maskz_permutexvar_pd(0xFF, _mm512_setr_epi64(0, 0, 1, 1, 2, 2, 3, 3), c); }
POSENC_AVX512_INLINE __m512d dup_hi(__m512d c) { return _mm512_maskz_permutexvar_pd(0xFF, _mm512_setr_epi64(4, 4, 5, 5, 6, 6, 7, 7), c); }

POSENC_AVX512_INLINE __m512  load(const float* p)  { return _mm512_loadu_ps(p); }
POSENC_AVX512_INLINE __m512d load(const double* p) { return _mm512_loadu_pd(p); }
POSENC_AVX512_INLINE __m512  from_bits(const float16*, __m256i h) { return _mm512_cvtph_ps(h); }
POSENC_AVX512_INLINE __m512  from_bits(const bfloat16*, __m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
template <class H> POSENC_AVX512_INLINE __m512 load(const H* p) { return from_bits(p, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
// 16-bit encodings, rounded to nearest even exactly as bfloat16/float16::from_float.
POSENC_AVX512_INLINE __m256i to_bits(float16*, __m512 v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
POSENC_AVX512_INLINE __m256i to_bits(bfloat16*, __m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rne = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd)), 16);
  const __m512i qnan = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rne, qnan));
}
POSENC_AVX512_INLINE void store(float* p, __m512 v)   { _mm512_storeu_ps(p, v); }
POSENC_AVX512_INLINE void store(double* p, __m512d v) { _mm512_storeu_pd(p, v); }
template <class H> POSENC_AVX512_INLINE void store(H* p, __m512 v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), to_bits(p, v)); }
POSENC_AVX512_INLINE void stream(float* p, __m512 v)   { _mm512_stream_ps(p, v); }
POSENC_AVX512_INLINE void stream(double* p, __m512d v) { _mm512_stream_pd(p, v); }
template <class H> POSENC_AVX512_INLINE void stream(H* p, __m512 v) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), to_bits(p, v)); }

/// First n (0 <= n <= lanes) elements; the rest of the vector is zero. Masked: never touches memory past n.
POSENC_AVX512_INLINE __mmask16 first(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
POSENC_AVX512_INLINE __m512  load_n(const float* p, int n)  { return _mm512_maskz_loadu_ps(first(n), p); }
POSENC_AVX512_INLINE __m512d load_n(const double* p, int n) { return _mm512_maskz_loadu_pd(static_cast<__mmask8>(first(n)), p); }
template <class H> POSENC_AVX512_INLINE __m512 load_n(const H* p, int n) { return from_bits(p, _mm256_maskz_loadu_epi16(first(n), p)); }
POSENC_AVX512_INLINE void store_n(float* p, __m512 v, int n)   { _mm512_mask_storeu_ps(p, first(n), v); }
POSENC_AVX512_INLINE void store_n(double* p, __m512d v, int n) { _mm512_mask_storeu_pd(p, static_cast<__mmask8>(first(n)), v); }
template <class H> POSENC_AVX512_INLINE void store_n(H* p, __m512 v, int n) { _mm256_mask_storeu_epi16(p, first(n), to_bits(p, v)); }
// clang-format on
template <bool Stream, class T, class V>
POSENC_AVX512_INLINE void put(T* p, V v) {
  if constexpr (Stream)
    stream(p, v);
  else
    store(p, v);
}

template <bool Stream, storage_type T, class C>
POSENC_TARGET_AVX512 inline void rotate_pairs(const rope_geometry& g, const T* s, T* d, const C* cos, const C* sin,
                                              rotation dir) noexcept {
  using V = vec<T>;
  constexpr int L = lanes<T>;
  const int P = g.pairs();
  const V neg = sign_mask(V{}, dir == rotation::inverse);
  int k = 0;
  if (g.layout == pairing::half_split) {
    for (; k + L <= P; k += L) {
      const V a = load(s + k), b = load(s + k + P), c = load(cos + k), sn = flip(load(sin + k), neg);
      put<Stream>(d + k, sub(mul(a, c), mul(b, sn)));
      put<Stream>(d + k + P, add(mul(a, sn), mul(b, c)));
    }
    if (const int n = P - k; n > 0) {
      const V a = load_n(s + k, n), b = load_n(s + k + P, n), c = load_n(cos + k, n),
              sn = flip(load_n(sin + k, n), neg);
      store_n(d + k, sub(mul(a, c), mul(b, sn)), n);
      store_n(d + k + P, add(mul(a, sn), mul(b, c)), n);
    }
  } else {
    const V odd = even_sign(V{});
    for (; k + L <= P; k += L) {
      const V x0 = load(s + 2 * k), x1 = load(s + 2 * k + L), c = load(cos + k), sn = flip(load(sin + k), neg);
      put<Stream>(d + 2 * k, add(mul(x0, dup_lo(c)), mul(swap_pairs(x0), flip(dup_lo(sn), odd))));
      put<Stream>(d + 2 * k + L, add(mul(x1, dup_hi(c)), mul(swap_pairs(x1), flip(dup_hi(sn), odd))));
    }
    if (const int n = P - k; n > 0) {
      const int n0 = 2 * n < L ? 2 * n : L, n1 = 2 * n - n0;
      const V x0 = load_n(s + 2 * k, n0), x1 = n1 > 0 ? load_n(s + 2 * k + L, n1) : V{}, c = load_n(cos + k, n),
              sn = flip(load_n(sin + k, n), neg);
      store_n(d + 2 * k, add(mul(x0, dup_lo(c)), mul(swap_pairs(x0), flip(dup_lo(sn), odd))), n0);
      if (n1 > 0) store_n(d + 2 * k + L, add(mul(x1, dup_hi(c)), mul(swap_pairs(x1), flip(dup_hi(sn), odd))), n1);
    }
  }
}

/// See scalar::rotate_row. `stream`: use non-temporal stores where the output is vector-aligned.
template <storage_type T, class C>
POSENC_TARGET_AVX512 inline void rotate_row(const rope_geometry& g, const T* src, T* dst, const C* cos, const C* sin,
                                            rotation dir, bool stream = false) noexcept {
  constexpr auto bytes = static_cast<std::uintptr_t>(lanes<T>) * sizeof(T);
  T* d = dst + g.offset;
  const bool aligned = reinterpret_cast<std::uintptr_t>(d) % bytes == 0 &&
                       (g.layout == pairing::interleaved || (g.pairs() * sizeof(T)) % bytes == 0);
  if (stream && aligned) {
    rotate_pairs<true>(g, src + g.offset, d, cos, sin, dir);
  } else {
    rotate_pairs<false>(g, src + g.offset, d, cos, sin, dir);
  }
  if (src != dst) {
    std::memcpy(dst, src, static_cast<std::size_t>(g.offset) * sizeof(T));
    const int end = g.offset + g.rotary_dim;
    std::memcpy(dst + end, src + end, static_cast<std::size_t>(g.head_dim - end) * sizeof(T));
  }
}

/// See scalar::rotate_rows.
template <storage_type T, class C>
POSENC_TARGET_AVX512 inline void rotate_rows(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                                             angle_rows<C> angles, rotation dir, std::ptrdiff_t row_begin,
                                             std::ptrdiff_t row_end, bool stream = false) noexcept {
  if (src.heads <= 0 || row_begin >= row_end) return;
  std::ptrdiff_t t = row_begin / src.heads, h = row_begin % src.heads;
  for (std::ptrdiff_t r = row_begin; r < row_end; ++r) {
    const std::ptrdiff_t a = angles.index(t);
    avx512::rotate_row(g, src.row(t, h), dst.row(t, h), angles.cos + a, angles.sin + a, dir, stream);
    if (++h == src.heads) h = 0, ++t;
  }
  if (stream) _mm_sfence();
}

/// See scalar::rotate.
template <storage_type T, class C>
POSENC_TARGET_AVX512 inline void rotate(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                                        angle_rows<C> angles, rotation dir) noexcept {
  avx512::rotate_rows(g, src, dst, angles, dir, 0, src.tokens * src.heads);
}

}  // namespace avx512
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#undef POSENC_AVX512_INLINE
#endif  // POSENC_HAS_X86_KERNELS
