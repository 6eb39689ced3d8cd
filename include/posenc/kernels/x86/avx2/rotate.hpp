// posenc/kernels/x86/avx2/rotate.hpp — AVX2 rotation kernel: 8 floats or 4 doubles per vector.
//
// Same functions, order and contract as kernels/scalar/rotate.hpp (the oracle), bit-exact with it:
// products are kept out of FMA contraction by an empty asm barrier. Compiled through
// POSENC_TARGET_AVX2, so the TU needs no -m flag; the dispatcher calls it only on AVX2+FMA+F16C.
#pragma once

#include <posenc/kernels/scalar/rotate.hpp>

#if POSENC_HAS_X86_KERNELS
#include <algorithm>
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
// bfloat16::from_float per lane, left in the low 16 bits: RNE as x + 0x7fff + odd (odd from a compare,
// not a shift: shifts and shuffles share two ports), NaN made quiet by setting bit 22 first.
POSENC_AVX2_INLINE __m256i bf16_bits(__m256 v) {
  const __m256i x = _mm256_castps_si256(v), bit = _mm256_set1_epi32(0x10000);
  const __m256i rne = _mm256_sub_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)),
                                       _mm256_cmpeq_epi32(_mm256_and_si256(x, bit), bit));
  const __m256 qnan = _mm256_castsi256_ps(_mm256_or_si256(x, _mm256_set1_epi32(0x400000)));
  const __m256 r = _mm256_blendv_ps(_mm256_castsi256_ps(rne), qnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_srli_epi32(_mm256_castps_si256(r), 16);
}
POSENC_AVX2_INLINE __m128i to_bits(bfloat16*, __m256 v) {
  const __m256i r = bf16_bits(v);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
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

// Two vectors from 2L contiguous elements, in the lane order pair_angles / dup_angles match:
// natural, except bfloat16: v0 = elements 0-3, 8-11 and v1 = 4-7, 12-15 (one zero-unpack each),
// the order in which store2's 16-bit pack puts them back without a cross-lane shuffle.
template <class T>
POSENC_AVX2_INLINE void load2(const T* p, vec<std::remove_const_t<T>>& v0, vec<std::remove_const_t<T>>& v1) {
  v0 = load(p), v1 = load(p + lanes<std::remove_const_t<T>>);
}
POSENC_AVX2_INLINE void load2(const bfloat16* p, __m256& v0, __m256& v1) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), z = _mm256_setzero_si256();
  v0 = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, x)), v1 = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, x));
}
template <bool Stream, class T, class V>
POSENC_AVX2_INLINE void store2(T* p, V v0, V v1) {
  put<Stream>(p, v0), put<Stream>(p + lanes<T>, v1);
}
template <bool Stream>
POSENC_AVX2_INLINE void store2(bfloat16* p, __m256 v0, __m256 v1) {
  const __m256i x = _mm256_packus_epi32(bf16_bits(v0), bf16_bits(v1));
  if constexpr (Stream)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), x);
  else
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), x);
}
// Angles of the 2L pairs at c for half_split vectors from load2; of the L pairs at c, each twice
// (interleaved), for interleaved vectors from load2.
template <class T, class C>
POSENC_AVX2_INLINE void pair_angles(const T*, const C* c, vec<C>& c0, vec<C>& c1) {
  c0 = load(c), c1 = load(c + lanes<C>);
}
POSENC_AVX2_INLINE void pair_angles(const bfloat16*, const float* c, __m256& c0, __m256& c1) {
  c0 = _mm256_blend_ps(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(c)),
                       _mm256_broadcast_ps(reinterpret_cast<const __m128*>(c + 8)), 0xF0);
  c1 = _mm256_blend_ps(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(c + 4)),
                       _mm256_broadcast_ps(reinterpret_cast<const __m128*>(c + 12)), 0xF0);
}
template <class T, class C>
POSENC_AVX2_INLINE void dup_angles(const T*, const C* c, vec<C>& c0, vec<C>& c1) {
  const vec<C> x = load(c);
  c0 = dup_lo(x), c1 = dup_hi(x);
}
POSENC_AVX2_INLINE void dup_angles(const bfloat16*, const float* c, __m256& c0, __m256& c1) {
  const __m256 x = load(c);
  c0 = _mm256_unpacklo_ps(x, x), c1 = _mm256_unpackhi_ps(x, x);
}

/// Pairs [k, P) one vector at a time, then a partial vector (the part of a row the 2-vector loop of
/// rotate_pairs leaves). Out of line: most rows never get here.
template <pairing Layout, bool Inverse, bool Stream, storage_type T, class C>
POSENC_TARGET_AVX2 __attribute__((noinline)) void rotate_rest(int P, int k, const T* s, T* d, const C* cos,
                                                              const C* sin) noexcept {
  using V = vec<T>;
  constexpr int L = lanes<T>;
  const V neg = sign_mask(V{}, Inverse);
  if constexpr (Layout == pairing::half_split) {
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
  } else if (const int n = P - k; n > 0) {
    const V odd = even_sign(V{});
    const int n0 = 2 * n < L ? 2 * n : L, n1 = 2 * n - n0;
    const V x0 = load_n(s + 2 * k, n0), x1 = n1 > 0 ? load_n(s + 2 * k + L, n1) : V{}, c = load_n(cos + k, n),
            sn = flip(load_n(sin + k, n), neg);
    store_n(d + 2 * k, add(mul(x0, dup_lo(c)), mul(swap_pairs(x0), flip(dup_lo(sn), odd))), n0);
    if (n1 > 0) store_n(d + 2 * k + L, add(mul(x1, dup_hi(c)), mul(swap_pairs(x1), flip(dup_hi(sn), odd))), n1);
  }
}

/// The rotary slices of n rows of one token (row i at s + i * ss, written to d + i * ds): 2L
/// half_split or L interleaved pairs per step, two vectors each, then rotate_rest. by_block: pair
/// block by pair block, the angles of a block loaded (and shuffled) once for all n rows; else row
/// by row (sequential lines: what streaming stores and the DRAM prefetchers want).
template <pairing Layout, bool Inverse, bool Stream, storage_type T, class C>
POSENC_AVX2_INLINE void rotate_heads(int P, const T* s, T* d, std::ptrdiff_t ss, std::ptrdiff_t ds, std::ptrdiff_t n,
                                     const C* cos, const C* sin, bool by_block) noexcept {
  using V = vec<T>;
  constexpr int L = lanes<T>, step = Layout == pairing::half_split ? 2 * L : L;
  const std::ptrdiff_t rows = by_block ? n : 1;  // rows per pair block
  int k = 0;
  for (std::ptrdiff_t r = 0; r < n; r += rows) {
    for (k = 0; k + step <= P; k += step) {
      V c0, c1, s0, s1;
      if constexpr (Layout == pairing::half_split) {
        pair_angles(s, cos + k, c0, c1), pair_angles(s, sin + k, s0, s1);
        if constexpr (Inverse) s0 = flip(s0, sign_mask(V{}, true)), s1 = flip(s1, sign_mask(V{}, true));
      } else {
        // Even lanes take -sin (forward) or +sin (inverse): one sign flip covers direction and pairing.
        const V odd = Inverse ? flip(even_sign(V{}), sign_mask(V{}, true)) : even_sign(V{});
        dup_angles(s, cos + k, c0, c1), dup_angles(s, sin + k, s0, s1);
        s0 = flip(s0, odd), s1 = flip(s1, odd);
      }
      for (std::ptrdiff_t i = r; i < r + rows; ++i) {
        const T* x = s + i * ss;
        T* y = d + i * ds;
        V x0, x1;
        if constexpr (Layout == pairing::half_split) {
          V b0, b1;
          load2(x + k, x0, x1), load2(x + k + P, b0, b1);
          store2<Stream>(y + k, sub(mul(x0, c0), mul(b0, s0)), sub(mul(x1, c1), mul(b1, s1)));
          store2<Stream>(y + k + P, add(mul(x0, s0), mul(b0, c0)), add(mul(x1, s1), mul(b1, c1)));
        } else {
          load2(x + 2 * k, x0, x1);
          store2<Stream>(y + 2 * k, add(mul(x0, c0), mul(swap_pairs(x0), s0)),
                         add(mul(x1, c1), mul(swap_pairs(x1), s1)));
        }
      }
    }
  }
  if (k < P) {
    for (std::ptrdiff_t i = 0; i < n; ++i) rotate_rest<Layout, Inverse, Stream>(P, k, s + i * ss, d + i * ds, cos, sin);
  }
}

/// Rows [row_begin, row_end) with every per-call decision (layout, direction, streaming, pass-through
/// copy) taken once: per token only pointer arithmetic and rotate_heads remain.
template <pairing Layout, bool Inverse, bool Stream, storage_type T, class C>
POSENC_TARGET_AVX2 inline void rotate_range(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                                            angle_rows<C> angles, std::ptrdiff_t row_begin,
                                            std::ptrdiff_t row_end) noexcept {
  const int P = g.pairs(), o = g.offset, end = o + g.rotary_dim;
  const bool copy = src.data != dst.data && (o > 0 || end < g.head_dim);
  // Block order where it pays: cache-resident ranges, and 16-bit storage (bound by arithmetic).
  const auto bytes = static_cast<std::size_t>(row_end - row_begin) * static_cast<std::size_t>(g.head_dim) * sizeof(T);
  const bool by_block = !Stream && (sizeof(T) == 2 || bytes <= (std::size_t{256} << 10));
  std::ptrdiff_t t = row_begin / src.heads, h = row_begin % src.heads;
  for (std::ptrdiff_t r = row_begin; r < row_end; ++t, h = 0) {
    const std::ptrdiff_t a = angles.index(t), n = std::min(src.heads - h, row_end - r);
    rotate_heads<Layout, Inverse, Stream>(P, src.row(t, h) + o, dst.row(t, h) + o, src.head_stride, dst.head_stride, n,
                                          angles.cos + a, angles.sin + a, by_block);
    for (std::ptrdiff_t i = h; copy && i < h + n; ++i) {
      std::memcpy(dst.row(t, i), src.row(t, i), static_cast<std::size_t>(o) * sizeof(T));
      std::memcpy(dst.row(t, i) + end, src.row(t, i) + end, static_cast<std::size_t>(g.head_dim - end) * sizeof(T));
    }
    r += n;
  }
}

/// Streaming stores need every rotary slice 32-byte aligned (and, half_split, its second half).
template <class T>
[[nodiscard]] inline bool stream_aligned(const rope_geometry& g, head_rows<T> dst) noexcept {
  constexpr std::ptrdiff_t B = 32;
  const auto bytes = [](std::ptrdiff_t n) { return n * static_cast<std::ptrdiff_t>(sizeof(T)); };
  return reinterpret_cast<std::uintptr_t>(dst.data + g.offset) % B == 0 && bytes(dst.token_stride) % B == 0 &&
         bytes(dst.head_stride) % B == 0 && (g.layout == pairing::interleaved || bytes(g.pairs()) % B == 0);
}

template <pairing Layout, bool Stream, storage_type T, class C>
POSENC_TARGET_AVX2 inline void rotate_range(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                                            angle_rows<C> angles, rotation dir, std::ptrdiff_t row_begin,
                                            std::ptrdiff_t row_end) noexcept {
  if (dir == rotation::inverse)
    rotate_range<Layout, true, Stream>(g, src, dst, angles, row_begin, row_end);
  else
    rotate_range<Layout, false, Stream>(g, src, dst, angles, row_begin, row_end);
}

/// See scalar::rotate_rows. `stream`: non-temporal stores when every output row is 32-byte aligned.
template <storage_type T, class C>
POSENC_TARGET_AVX2 inline void rotate_rows(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                                           angle_rows<C> angles, rotation dir, std::ptrdiff_t row_begin,
                                           std::ptrdiff_t row_end, bool stream = false) noexcept {
  if (src.heads <= 0 || row_begin >= row_end) return;
  stream = stream && stream_aligned(g, dst);
  if (g.layout == pairing::half_split) {
    if (stream)
      rotate_range<pairing::half_split, true>(g, src, dst, angles, dir, row_begin, row_end);
    else
      rotate_range<pairing::half_split, false>(g, src, dst, angles, dir, row_begin, row_end);
  } else {
    if (stream)
      rotate_range<pairing::interleaved, true>(g, src, dst, angles, dir, row_begin, row_end);
    else
      rotate_range<pairing::interleaved, false>(g, src, dst, angles, dir, row_begin, row_end);
  }
  if (stream) _mm_sfence();
}

/// See scalar::rotate_row. `stream`: non-temporal stores where the output is 32-byte aligned.
template <storage_type T, class C>
POSENC_TARGET_AVX2 inline void rotate_row(const rope_geometry& g, const T* src, T* dst, const C* cos, const C* sin,
                                          rotation dir, bool stream = false) noexcept {
  avx2::rotate_rows(g, head_rows<const T>{src, 1, 1, 0, 0}, head_rows<T>{dst, 1, 1, 0, 0}, angle_rows<C>{cos, sin, 0},
                    dir, 0, 1, stream);
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
