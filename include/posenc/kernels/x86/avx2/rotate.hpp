// posenc/kernels/x86/avx2/rotate.hpp — AVX2 rotation kernel: 8 floats or 4 doubles per vector.
//
// Same functions, order and contract as kernels/scalar/rotate.hpp (the oracle), bit-exact with it:
// products are kept out of FMA contraction by an empty asm barrier. Compiled through
// POSENC_TARGET_AVX2, so the TU needs no -m flag; the dispatcher calls it only on AVX2+FMA+F16C.
#pragma once

#include <posenc/kernels/scalar/rotate.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cstdint>
#include <cstring>
#include <immintrin.h>
#include <type_traits>

#define POSENC_AVX2_INLINE POSENC_TARGET_AVX2 POSENC_FORCE_INLINE

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx2 {

template <class T>
struct vec_of {
  using type = __m256;
};
template <>
struct vec_of<double> {
  using type = __m256d;
};
template <class T>
using vec = typename vec_of<T>::type;
template <class T>
inline constexpr int lanes = std::is_same_v<T, double> ? 4 : 8;

// clang-format off
POSENC_AVX2_INLINE __m256  add(__m256 a, __m256 b)   { return _mm256_add_ps(a, b); }
POSENC_AVX2_INLINE __m256d add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
POSENC_AVX2_INLINE __m256  sub(__m256 a, __m256 b)   { return _mm256_sub_ps(a, b); }
POSENC_AVX2_INLINE __m256d sub(__m256d a, __m256d b) { return _mm256_sub_pd(a, b); }
POSENC_AVX2_INLINE __m256  flip(__m256 a, __m256 m)    { return _mm256_xor_ps(a, m); }
POSENC_AVX2_INLINE __m256d flip(__m256d a, __m256d m)  { return _mm256_xor_pd(a, m); }
// A product the compiler may not fuse into an FMA (keeps the scalar kernel's two roundings).
POSENC_AVX2_INLINE __m256  mul(__m256 a, __m256 b)   { __m256 r = _mm256_mul_ps(a, b); asm("" : "+v"(r)); return r; }
POSENC_AVX2_INLINE __m256d mul(__m256d a, __m256d b) { __m256d r = _mm256_mul_pd(a, b); asm("" : "+v"(r)); return r; }
POSENC_AVX2_INLINE __m256  sign_mask(__m256, bool on)  { return on ? _mm256_set1_ps(-0.f) : _mm256_setzero_ps(); }
POSENC_AVX2_INLINE __m256d sign_mask(__m256d, bool on) { return on ? _mm256_set1_pd(-0.0) : _mm256_setzero_pd(); }
POSENC_AVX2_INLINE __m256  even_sign(__m256)  { return _mm256_setr_ps(-0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f); }
POSENC_AVX2_INLINE __m256d even_sign(__m256d) { return _mm256_setr_pd(-0.0, 0.0, -0.0, 0.0); }
// Interleaved pairs: (x0 x1 x2 x3 ...) -> (x1 x0 x3 x2 ...); c (c0 c1 ...) -> (c0 c0 c1 c1 ...) for each half.
POSENC_AVX2_INLINE __m256  swap_pairs(__m256 x)  { return _mm256_permute_ps(x, 0xB1); }
POSENC_AVX2_INLINE __m256d swap_pairs(__m256d x) { return _mm256_permute_pd(x, 0x5); }
POSENC_AVX2_INLINE __m256  dup_lo(__m256 c)  { return _mm256_permutevar8x32_ps(c, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3)); }
POSENC_AVX2_INLINE __m256  dup_hi(__m256 c)  { return _mm256_permutevar8x32_ps(c, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7)); }
POSENC_AVX2_INLINE __m256d dup_lo(__m256d c) { return _mm256_permute4x64_pd(c, 0x50); }
POSENC_AVX2_INLINE __m256d dup_hi(__m256d c) { return _mm256_permute4x64_pd(c, 0xFA); }

POSENC_AVX2_INLINE __m256  load(const float* p)  { return _mm256_loadu_ps(p); }
POSENC_AVX2_INLINE __m256d load(const double* p) { return _mm256_loadu_pd(p); }
POSENC_AVX2_INLINE __m256  load(const float16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
POSENC_AVX2_INLINE __m256  load(const bfloat16* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
// 16-bit encodings, rounded to nearest even exactly as bfloat16/float16::from_float.
POSENC_AVX2_INLINE __m128i to_bits(float16*, __m256 v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
POSENC_AVX2_INLINE __m128i to_bits(bfloat16*, __m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rne = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd)), 16);
  const __m256i qnan = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i r = _mm256_blendv_epi8(rne, qnan, nan);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}
POSENC_AVX2_INLINE void store(float* p, __m256 v)   { _mm256_storeu_ps(p, v); }
POSENC_AVX2_INLINE void store(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
template <class H> POSENC_AVX2_INLINE void store(H* p, __m256 v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), to_bits(p, v)); }
POSENC_AVX2_INLINE void stream(float* p, __m256 v)   { _mm256_stream_ps(p, v); }
POSENC_AVX2_INLINE void stream(double* p, __m256d v) { _mm256_stream_pd(p, v); }
template <class H> POSENC_AVX2_INLINE void stream(H* p, __m256 v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), to_bits(p, v)); }
// clang-format on

/// First n (0 <= n <= lanes) elements; the rest of the vector is zero.
template <class T>
POSENC_AVX2_INLINE vec<std::remove_const_t<T>> load_n(const T* p, int n) {
  alignas(32) std::remove_const_t<T> buf[lanes<std::remove_const_t<T>>]{};
  std::memcpy(buf, p, static_cast<std::size_t>(n) * sizeof(T));
  return load(buf);
}
template <class T>
POSENC_AVX2_INLINE void store_n(T* p, vec<T> v, int n) {
  alignas(32) T buf[lanes<T>];
  store(buf, v);
  std::memcpy(p, buf, static_cast<std::size_t>(n) * sizeof(T));
}
template <bool Stream, class T, class V>
POSENC_AVX2_INLINE void put(T* p, V v) {
  if constexpr (Stream)
    stream(p, v);
  else
    store(p, v);
}

template <bool Stream, storage_type T, class C>
POSENC_TARGET_AVX2 inline void rotate_pairs(const rope_geometry& g, const T* s, T* d, const C* cos, const C* sin,
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
POSENC_TARGET_AVX2 inline void rotate_row(const rope_geometry& g, const T* src, T* dst, const C* cos, const C* sin,
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
POSENC_TARGET_AVX2 inline void rotate_rows(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                                           angle_rows<C> angles, rotation dir, std::ptrdiff_t row_begin,
                                           std::ptrdiff_t row_end, bool stream = false) noexcept {
  if (src.heads <= 0 || row_begin >= row_end) return;
  std::ptrdiff_t t = row_begin / src.heads, h = row_begin % src.heads;
  for (std::ptrdiff_t r = row_begin; r < row_end; ++r) {
    const std::ptrdiff_t a = angles.index(t);
    avx2::rotate_row(g, src.row(t, h), dst.row(t, h), angles.cos + a, angles.sin + a, dir, stream);
    if (++h == src.heads) h = 0, ++t;
  }
  if (stream) _mm_sfence();
}

/// See scalar::rotate.
template <storage_type T, class C>
POSENC_TARGET_AVX2 inline void rotate(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                                      angle_rows<C> angles, rotation dir) noexcept {
  avx2::rotate_rows(g, src, dst, angles, dir, 0, src.tokens * src.heads);
}

}  // namespace avx2
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels

#undef POSENC_AVX2_INLINE
#endif  // POSENC_HAS_X86_KERNELS
