// posenc/kernels/arm/neon/rotate.hpp — NEON rotation kernel: 4 floats or 2 doubles per vector.
//
// Same functions, order and contract as kernels/scalar/rotate.hpp (the oracle), bit-exact with it:
// products are kept out of FMA contraction by an empty asm barrier. NEON is baseline on AArch64,
// so no target attribute is needed. NEON has no non-temporal vector store: `stream` is ignored.
#pragma once

#include <posenc/kernels/scalar/rotate.hpp>

#if POSENC_HAS_NEON_KERNELS
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
POSENC_NEON_INLINE uint16x4_t to_bits(bfloat16*, float32x4_t v) {
  const uint32x4_t x = vreinterpretq_u32_f32(v);
  const uint32x4_t odd = vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(1));
  const uint32x4_t rne = vshrq_n_u32(vaddq_u32(x, vaddq_u32(vdupq_n_u32(0x7fff), odd)), 16);
  const uint32x4_t qnan = vorrq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(0x40));
  const uint32x4_t nan = vcgtq_u32(vandq_u32(x, vdupq_n_u32(0x7fffffff)), vdupq_n_u32(0x7f800000));
  return vmovn_u32(vbslq_u32(nan, qnan, rne));
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

template <bool Stream, storage_type T, class C>
inline void rotate_pairs(const rope_geometry& g, const T* s, T* d, const C* cos, const C* sin, rotation dir) noexcept {
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

/// See scalar::rotate_row (`stream` is accepted and ignored).
template <storage_type T, class C>
inline void rotate_row(const rope_geometry& g, const T* src, T* dst, const C* cos, const C* sin, rotation dir,
                       bool stream = false) noexcept {
  static_cast<void>(stream);
  rotate_pairs<false>(g, src + g.offset, dst + g.offset, cos, sin, dir);
  if (src != dst) {
    std::memcpy(dst, src, static_cast<std::size_t>(g.offset) * sizeof(T));
    const int end = g.offset + g.rotary_dim;
    std::memcpy(dst + end, src + end, static_cast<std::size_t>(g.head_dim - end) * sizeof(T));
  }
}

/// See scalar::rotate_rows.
template <storage_type T, class C>
inline void rotate_rows(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                        rotation dir, std::ptrdiff_t row_begin, std::ptrdiff_t row_end, bool stream = false) noexcept {
  if (src.heads <= 0 || row_begin >= row_end) return;
  std::ptrdiff_t t = row_begin / src.heads, h = row_begin % src.heads;
  for (std::ptrdiff_t r = row_begin; r < row_end; ++r) {
    const std::ptrdiff_t a = angles.index(t);
    neon::rotate_row(g, src.row(t, h), dst.row(t, h), angles.cos + a, angles.sin + a, dir, stream);
    if (++h == src.heads) h = 0, ++t;
  }
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
