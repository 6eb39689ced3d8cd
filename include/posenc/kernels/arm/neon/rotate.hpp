// posenc/kernels/arm/neon/rotate.hpp — NEON rotation kernel: 4 floats or 2 doubles per vector.
//
// Same functions, order and contract as kernels/scalar/rotate.hpp (the oracle), bit-exact with it:
// products are kept out of FMA contraction by an empty asm barrier. NEON is baseline on AArch64,
// so no target attribute is needed. NEON has no non-temporal vector store: `stream` is ignored.
#pragma once

#include <posenc/kernels/scalar/rotate.hpp>

#if POSENC_HAS_NEON_KERNELS
#include <algorithm>
#include <arm_neon.h>
#include <cstdint>
#include <cstring>
#include <type_traits>

#define POSENC_NEON_INLINE POSENC_FORCE_INLINE

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace neon {

template <class T>
struct vec_of {
  using type = float32x4_t;
};
template <>
struct vec_of<double> {
  using type = float64x2_t;
};
template <class T>
using vec = typename vec_of<T>::type;
template <class T>
inline constexpr int lanes = std::is_same_v<T, double> ? 2 : 4;

// clang-format off
POSENC_NEON_INLINE float32x4_t add(float32x4_t a, float32x4_t b) { return vaddq_f32(a, b); }
POSENC_NEON_INLINE float64x2_t add(float64x2_t a, float64x2_t b) { return vaddq_f64(a, b); }
POSENC_NEON_INLINE float32x4_t sub(float32x4_t a, float32x4_t b) { return vsubq_f32(a, b); }
POSENC_NEON_INLINE float64x2_t sub(float64x2_t a, float64x2_t b) { return vsubq_f64(a, b); }
POSENC_NEON_INLINE float32x4_t flip(float32x4_t a, float32x4_t m) { return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(m))); }
POSENC_NEON_INLINE float64x2_t flip(float64x2_t a, float64x2_t m) { return vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(a), vreinterpretq_u64_f64(m))); }
// A product the compiler may not fuse into an FMA (keeps the scalar kernel's two roundings).
POSENC_NEON_INLINE float32x4_t mul(float32x4_t a, float32x4_t b) { float32x4_t r = vmulq_f32(a, b); asm("" : "+w"(r)); return r; }
POSENC_NEON_INLINE float64x2_t mul(float64x2_t a, float64x2_t b) { float64x2_t r = vmulq_f64(a, b); asm("" : "+w"(r)); return r; }
POSENC_NEON_INLINE float32x4_t sign_mask(float32x4_t, bool on) { return vdupq_n_f32(on ? -0.f : 0.f); }
POSENC_NEON_INLINE float64x2_t sign_mask(float64x2_t, bool on) { return vdupq_n_f64(on ? -0.0 : 0.0); }
POSENC_NEON_INLINE float32x4_t even_sign(float32x4_t) { return vreinterpretq_f32_u64(vdupq_n_u64(0x80000000u)); }
POSENC_NEON_INLINE float64x2_t even_sign(float64x2_t) { return vcombine_f64(vdup_n_f64(-0.0), vdup_n_f64(0.0)); }
// Interleaved pairs: (x0 x1 x2 x3 ...) -> (x1 x0 x3 x2 ...); c (c0 c1 ...) -> (c0 c0 c1 c1 ...) for each half.
POSENC_NEON_INLINE float32x4_t swap_pairs(float32x4_t x) { return vrev64q_f32(x); }
POSENC_NEON_INLINE float64x2_t swap_pairs(float64x2_t x) { return vextq_f64(x, x, 1); }
POSENC_NEON_INLINE float32x4_t dup_lo(float32x4_t c) { return vzip1q_f32(c, c); }
POSENC_NEON_INLINE float32x4_t dup_hi(float32x4_t c) { return vzip2q_f32(c, c); }
POSENC_NEON_INLINE float64x2_t dup_lo(float64x2_t c) { return vzip1q_f64(c, c); }
POSENC_NEON_INLINE float64x2_t dup_hi(float64x2_t c) { return vzip2q_f64(c, c); }

POSENC_NEON_INLINE float32x4_t load(const float* p)  { return vld1q_f32(p); }
POSENC_NEON_INLINE float64x2_t load(const double* p) { return vld1q_f64(p); }
POSENC_NEON_INLINE float32x4_t load(const float16* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)))); }
POSENC_NEON_INLINE float32x4_t load(const bfloat16* p) { return vreinterpretq_f32_u32(vshlq_n_u32(vmovl_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p))), 16)); }
// 16-bit encodings, rounded to nearest even exactly as bfloat16/float16::from_float.
POSENC_NEON_INLINE uint16x4_t to_bits(float16*, float32x4_t v) { return vreinterpret_u16_f16(vcvt_f16_f32(v)); }
// RNE as x + 0x7fff + odd (odd as a lane mask from a bit test); NaN made quiet by setting bit 22;
// the shift by 16 and the narrowing are one instruction.
POSENC_NEON_INLINE uint16x4_t to_bits(bfloat16*, float32x4_t v) {
  const uint32x4_t x = vreinterpretq_u32_f32(v);
  const uint32x4_t rne = vsubq_u32(vaddq_u32(x, vdupq_n_u32(0x7fff)), vtstq_u32(x, vdupq_n_u32(0x10000)));
  return vshrn_n_u32(vbslq_u32(vceqq_f32(v, v), rne, vorrq_u32(x, vdupq_n_u32(0x400000))), 16);
}
POSENC_NEON_INLINE void store(float* p, float32x4_t v)  { vst1q_f32(p, v); }
POSENC_NEON_INLINE void store(double* p, float64x2_t v) { vst1q_f64(p, v); }
template <class H> POSENC_NEON_INLINE void store(H* p, float32x4_t v) { vst1_u16(reinterpret_cast<std::uint16_t*>(p), to_bits(p, v)); }
template <class T, class V> POSENC_NEON_INLINE void stream(T* p, V v) { store(p, v); }
// clang-format on

/// First n (0 <= n <= lanes) elements; the rest of the vector is zero.
template <class T>
POSENC_NEON_INLINE vec<T> load_n(const T* p, int n) {
  alignas(16) T buf[lanes<T>]{};
  std::memcpy(buf, p, static_cast<std::size_t>(n) * sizeof(T));
  return load(buf);
}
template <class T>
POSENC_NEON_INLINE void store_n(T* p, vec<T> v, int n) {
  alignas(16) T buf[lanes<T>];
  store(buf, v);
  std::memcpy(p, buf, static_cast<std::size_t>(n) * sizeof(T));
}
template <bool Stream, class T, class V>
POSENC_NEON_INLINE void put(T* p, V v) {
  if constexpr (Stream)
    stream(p, v);
  else
    store(p, v);
}

// Two vectors from 2L contiguous elements, in the lane order pair_angles / dup_angles match
// (natural here; the AVX2 kernel reorders bfloat16 lanes to save shuffles).
template <class T>
POSENC_NEON_INLINE void load2(const T* p, vec<std::remove_const_t<T>>& v0, vec<std::remove_const_t<T>>& v1) {
  v0 = load(p), v1 = load(p + lanes<std::remove_const_t<T>>);
}
template <bool Stream, class T, class V>
POSENC_NEON_INLINE void store2(T* p, V v0, V v1) {
  put<Stream>(p, v0), put<Stream>(p + lanes<T>, v1);
}
// Angles of the 2L pairs at c for half_split vectors from load2; of the L pairs at c, each twice
// (interleaved), for interleaved vectors from load2.
template <class T, class C>
POSENC_NEON_INLINE void pair_angles(const T*, const C* c, vec<C>& c0, vec<C>& c1) {
  c0 = load(c), c1 = load(c + lanes<C>);
}
template <class T, class C>
POSENC_NEON_INLINE void dup_angles(const T*, const C* c, vec<C>& c0, vec<C>& c1) {
  const vec<C> x = load(c);
  c0 = dup_lo(x), c1 = dup_hi(x);
}

/// Pairs [k, P) one vector at a time, then a partial vector (the part of a row the 2-vector loop of
/// rotate_pairs leaves). Out of line: most rows never get here.
template <pairing Layout, bool Inverse, bool Stream, storage_type T, class C>
__attribute__((noinline)) void rotate_rest(int P, int k, const T* s, T* d, const C* cos, const C* sin) noexcept {
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
POSENC_NEON_INLINE void rotate_heads(int P, const T* s, T* d, std::ptrdiff_t ss, std::ptrdiff_t ds, std::ptrdiff_t n,
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
inline void rotate_range(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                         std::ptrdiff_t row_begin, std::ptrdiff_t row_end) noexcept {
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

/// NEON has no non-temporal vector store: the streaming variant is never taken.
template <class T>
[[nodiscard]] inline bool stream_aligned(const rope_geometry&, head_rows<T>) noexcept {
  return false;
}

template <pairing Layout, bool Stream, storage_type T, class C>
inline void rotate_range(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                         rotation dir, std::ptrdiff_t row_begin, std::ptrdiff_t row_end) noexcept {
  if (dir == rotation::inverse)
    rotate_range<Layout, true, Stream>(g, src, dst, angles, row_begin, row_end);
  else
    rotate_range<Layout, false, Stream>(g, src, dst, angles, row_begin, row_end);
}

/// See scalar::rotate_rows (`stream` is accepted and ignored).
template <storage_type T, class C>
inline void rotate_rows(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                        rotation dir, std::ptrdiff_t row_begin, std::ptrdiff_t row_end, bool stream = false) noexcept {
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
}

/// See scalar::rotate_row (`stream` is accepted and ignored).
template <storage_type T, class C>
inline void rotate_row(const rope_geometry& g, const T* src, T* dst, const C* cos, const C* sin, rotation dir,
                       bool stream = false) noexcept {
  neon::rotate_rows(g, head_rows<const T>{src, 1, 1, 0, 0}, head_rows<T>{dst, 1, 1, 0, 0}, angle_rows<C>{cos, sin, 0},
                    dir, 0, 1, stream);
}

/// See scalar::rotate.
template <storage_type T, class C>
inline void rotate(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                   rotation dir) noexcept {
  neon::rotate_rows(g, src, dst, angles, dir, 0, src.tokens * src.heads);
}

}  // namespace neon
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels

#undef POSENC_NEON_INLINE
#endif  // POSENC_HAS_NEON_KERNELS
