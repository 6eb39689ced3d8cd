// posenc/kernels/ops/neon.hpp — AArch64 NEON operations: 4 floats or 2 doubles per vector.
//
// The vocabulary is listed in ops/generic.hpp. NEON is baseline on AArch64 (no target region is
// needed) and has no non-temporal vector store: stream is store (has_stream = false), tails go
// through the generic buffer.
#pragma once

#include <posenc/kernels/ops/generic.hpp>

#if POSENC_HAS_NEON_KERNELS
#include <algorithm>
#include <arm_neon.h>
#include <type_traits>

#include <posenc/kernels/ops/begin_neon.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace neon {
namespace self = neon;  // this ISA, for qualified calls from the drivers

template <class T>
struct vec_of {
  using type = float32x4_t;
};
template <>
struct vec_of<double> {
  using type = float64x2_t;
};
template <class T>
using vec = typename vec_of<std::remove_const_t<T>>::type;
template <class T>
inline constexpr int lanes = std::is_same_v<std::remove_const_t<T>, double> ? 2 : 4;
using ivec = int32x4_t;
inline constexpr std::size_t vector_bytes = 16;
inline constexpr int vector_registers = 32;  // architectural vector registers
inline constexpr bool has_stream = false;

// clang-format off
POSENC_OPS_INLINE float32x4_t set(float x)  { return vdupq_n_f32(x); }
POSENC_OPS_INLINE float64x2_t set(double x) { return vdupq_n_f64(x); }
POSENC_OPS_INLINE float32x4_t add(float32x4_t a, float32x4_t b) { return vaddq_f32(a, b); }
POSENC_OPS_INLINE float64x2_t add(float64x2_t a, float64x2_t b) { return vaddq_f64(a, b); }
POSENC_OPS_INLINE float32x4_t sub(float32x4_t a, float32x4_t b) { return vsubq_f32(a, b); }
POSENC_OPS_INLINE float64x2_t sub(float64x2_t a, float64x2_t b) { return vsubq_f64(a, b); }
POSENC_OPS_INLINE float32x4_t mul(float32x4_t a, float32x4_t b) { return vmulq_f32(a, b); }
POSENC_OPS_INLINE float64x2_t mul(float64x2_t a, float64x2_t b) { return vmulq_f64(a, b); }
POSENC_OPS_INLINE float32x4_t max(float32x4_t a, float32x4_t b) { return vmaxq_f32(a, b); }
POSENC_OPS_INLINE float64x2_t max(float64x2_t a, float64x2_t b) { return vmaxq_f64(a, b); }
POSENC_OPS_INLINE float32x4_t fma(float32x4_t a, float32x4_t b, float32x4_t c) { return vfmaq_f32(c, a, b); }
POSENC_OPS_INLINE float64x2_t fma(float64x2_t a, float64x2_t b, float64x2_t c) { return vfmaq_f64(c, a, b); }
POSENC_OPS_INLINE float32x4_t fms(float32x4_t a, float32x4_t b, float32x4_t c) { return vfmaq_f32(vnegq_f32(c), a, b); }
POSENC_OPS_INLINE float64x2_t fms(float64x2_t a, float64x2_t b, float64x2_t c) { return vfmaq_f64(vnegq_f64(c), a, b); }
POSENC_OPS_INLINE float32x4_t fnma(float32x4_t a, float32x4_t b, float32x4_t c) { return vfmsq_f32(c, a, b); }
POSENC_OPS_INLINE float64x2_t fnma(float64x2_t a, float64x2_t b, float64x2_t c) { return vfmsq_f64(c, a, b); }
// A product the compiler may not fuse into an FMA (keeps the scalar kernel's two roundings).
// Loads never fold into arithmetic on a load/store ISA: nothing to pin (see ops/avx512.hpp).
POSENC_OPS_INLINE float32x4_t in_register(float32x4_t v) { return v; }
POSENC_OPS_INLINE float64x2_t in_register(float64x2_t v) { return v; }
POSENC_OPS_INLINE float32x4_t mul_rounded(float32x4_t a, float32x4_t b) { float32x4_t r = vmulq_f32(a, b); asm("" : "+w"(r)); return r; }
POSENC_OPS_INLINE float64x2_t mul_rounded(float64x2_t a, float64x2_t b) { float64x2_t r = vmulq_f64(a, b); asm("" : "+w"(r)); return r; }
POSENC_OPS_INLINE float  hsum(float32x4_t v) { return vaddvq_f32(v); }
POSENC_OPS_INLINE double hsum(float64x2_t v) { return vaddvq_f64(v); }
POSENC_OPS_INLINE float  hmax(float32x4_t v) { return vmaxvq_f32(v); }
POSENC_OPS_INLINE double hmax(float64x2_t v) { return vmaxvq_f64(v); }

POSENC_OPS_INLINE float32x4_t flip(float32x4_t a, float32x4_t m) { return vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(m))); }
POSENC_OPS_INLINE float64x2_t flip(float64x2_t a, float64x2_t m) { return vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(a), vreinterpretq_u64_f64(m))); }
POSENC_OPS_INLINE float32x4_t sign_mask(float32x4_t, bool on) { return vdupq_n_f32(on ? -0.f : 0.f); }
POSENC_OPS_INLINE float64x2_t sign_mask(float64x2_t, bool on) { return vdupq_n_f64(on ? -0.0 : 0.0); }
POSENC_OPS_INLINE float32x4_t even_sign(float32x4_t) { return vreinterpretq_f32_u64(vdupq_n_u64(0x80000000u)); }
POSENC_OPS_INLINE float64x2_t even_sign(float64x2_t) { return vcombine_f64(vdup_n_f64(-0.0), vdup_n_f64(0.0)); }
POSENC_OPS_INLINE float32x4_t swap_pairs(float32x4_t x) { return vrev64q_f32(x); }
POSENC_OPS_INLINE float64x2_t swap_pairs(float64x2_t x) { return vextq_f64(x, x, 1); }
POSENC_OPS_INLINE float32x4_t dup_lo(float32x4_t c) { return vzip1q_f32(c, c); }
POSENC_OPS_INLINE float32x4_t dup_hi(float32x4_t c) { return vzip2q_f32(c, c); }
POSENC_OPS_INLINE float64x2_t dup_lo(float64x2_t c) { return vzip1q_f64(c, c); }
POSENC_OPS_INLINE float64x2_t dup_hi(float64x2_t c) { return vzip2q_f64(c, c); }

POSENC_OPS_INLINE float32x4_t load(const float* p)  { return vld1q_f32(p); }
POSENC_OPS_INLINE float64x2_t load(const double* p) { return vld1q_f64(p); }
POSENC_OPS_INLINE float32x4_t load(const float16* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)))); }
POSENC_OPS_INLINE void store(float* p, float32x4_t v)  { vst1q_f32(p, v); }
POSENC_OPS_INLINE void store(double* p, float64x2_t v) { vst1q_f64(p, v); }
POSENC_OPS_INLINE void store(float16* p, float32x4_t v) { vst1_u16(reinterpret_cast<std::uint16_t*>(p), vreinterpret_u16_f16(vcvt_f16_f32(v))); }

#if !defined(POSENC_KERNELS_GENERIC_BF16)
#define POSENC_OPS_NATIVE_BF16 1
POSENC_OPS_INLINE float32x4_t load(const bfloat16* p) { return vreinterpretq_f32_u32(vshlq_n_u32(vmovl_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p))), 16)); }
// RNE as x + 0x7fff + odd (odd as a lane mask from a bit test); NaN made quiet by setting bit 22;
// the shift by 16 and the narrowing are one instruction.
POSENC_OPS_INLINE void store(bfloat16* p, float32x4_t v) {
  const uint32x4_t x = vreinterpretq_u32_f32(v);
  const uint32x4_t rne = vsubq_u32(vaddq_u32(x, vdupq_n_u32(0x7fff)), vtstq_u32(x, vdupq_n_u32(0x10000)));
  vst1_u16(reinterpret_cast<std::uint16_t*>(p), vshrn_n_u32(vbslq_u32(vceqq_f32(v, v), rne, vorrq_u32(x, vdupq_n_u32(0x400000))), 16));
}
#endif

// Angle operations (kernels/drivers/angles.inl).
POSENC_OPS_INLINE float64x2_t nearest(float64x2_t x) { return vrndnq_f64(x); }
POSENC_OPS_INLINE unsigned far_lanes(float64x2_t k, double limit) {
  const uint64x2_t near = vcaltq_f64(k, set(limit));  // false for far lanes and NaN
  return (vgetq_lane_u64(near, 0) == 0 ? 1u : 0u) | (vgetq_lane_u64(near, 1) == 0 ? 2u : 0u);
}
POSENC_OPS_INLINE float32x4_t narrow(float64x2_t a, float64x2_t b) { return vcombine_f32(vcvt_f32_f64(a), vcvt_f32_f64(b)); }
POSENC_OPS_INLINE int32x4_t quadrants(float64x2_t a, float64x2_t b) { return vcombine_s32(vmovn_s64(vcvtq_s64_f64(a)), vmovn_s64(vcvtq_s64_f64(b))); }
POSENC_OPS_INLINE void store_narrow(float* p, float64x2_t v) { vst1_f32(p, vcvt_f32_f64(v)); }
POSENC_OPS_INLINE void by_quadrant(float64x2_t q, float64x2_t sp, float64x2_t cp, float64x2_t& s, float64x2_t& c) {
  const int64x2_t qi = vcvtq_s64_f64(q), one = vdupq_n_s64(1), two = vdupq_n_s64(2);
  const uint64x2_t swap = vtstq_s64(qi, one);
  const uint64x2_t sneg = vshlq_n_u64(vreinterpretq_u64_s64(vandq_s64(qi, two)), 62);
  const uint64x2_t cneg = vshlq_n_u64(vreinterpretq_u64_s64(vandq_s64(vaddq_s64(qi, one), two)), 62);
  s = vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(vbslq_f64(swap, cp, sp)), sneg));
  c = vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(vbslq_f64(swap, sp, cp)), cneg));
}
POSENC_OPS_INLINE void by_quadrant(int32x4_t q, float32x4_t sp, float32x4_t cp, float32x4_t& s, float32x4_t& c) {
  const int32x4_t one = vdupq_n_s32(1), two = vdupq_n_s32(2);
  const uint32x4_t swap = vtstq_s32(q, one);
  const uint32x4_t sneg = vshlq_n_u32(vreinterpretq_u32_s32(vandq_s32(q, two)), 30);
  const uint32x4_t cneg = vshlq_n_u32(vreinterpretq_u32_s32(vandq_s32(vaddq_s32(q, one), two)), 30);
  s = vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(vbslq_f32(swap, cp, sp)), sneg));
  c = vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(vbslq_f32(swap, sp, cp)), cneg));
}
// Attention tile operations (attention/fast/tile-inl.hpp).
POSENC_OPS_INLINE float32x4_t min(float32x4_t a, float32x4_t b) { return vminq_f32(a, b); }
POSENC_OPS_INLINE float32x4_t div(float32x4_t a, float32x4_t b) { return vdivq_f32(a, b); }
POSENC_OPS_INLINE float32x4_t abs(float32x4_t x) { return vabsq_f32(x); }
POSENC_OPS_INLINE float32x4_t nearest(float32x4_t x) { return vrndnq_f32(x); }
POSENC_OPS_INLINE float32x4_t pow2(float32x4_t n) { return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23)); }
POSENC_OPS_INLINE float32x4_t keep_ge(float32x4_t x, float32x4_t lim, float32x4_t y) { return vreinterpretq_f32_u32(vandq_u32(vcgeq_f32(x, lim), vreinterpretq_u32_f32(y))); }
POSENC_OPS_INLINE float32x4_t with_sign(float32x4_t m, float32x4_t s) { return vbslq_f32(vdupq_n_u32(0x80000000u), s, m); }
POSENC_OPS_INLINE float32x4_t pick_gt(float32x4_t x, float32x4_t lim, float32x4_t a, float32x4_t b) { return vbslq_f32(vcgtq_f32(x, lim), a, b); }
POSENC_OPS_INLINE bool any_gt(float32x4_t x, float32x4_t lim) { return vmaxvq_u32(vcgtq_f32(x, lim)) != 0; }
POSENC_OPS_INLINE float32x4_t set(float16 h) { return vdupq_laneq_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h.bits))), 0); }
POSENC_OPS_INLINE float32x4_t load(const std::int8_t* p) {
  std::int32_t w;
  std::memcpy(&w, p, 4);
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(w))))));
}
POSENC_OPS_INLINE void hsum4(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d, float f, float* out) { vst1q_f32(out, vmulq_n_f32(vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d)), f)); }
// x[i] (row i of a 4 x 4 block) becomes column i.
POSENC_OPS_INLINE void transpose(float32x4_t (&x)[4]) {
  const float32x4x2_t p = vtrnq_f32(x[0], x[1]), q = vtrnq_f32(x[2], x[3]);
  x[0] = vcombine_f32(vget_low_f32(p.val[0]), vget_low_f32(q.val[0])), x[2] = vcombine_f32(vget_high_f32(p.val[0]), vget_high_f32(q.val[0]));
  x[1] = vcombine_f32(vget_low_f32(p.val[1]), vget_low_f32(q.val[1])), x[3] = vcombine_f32(vget_high_f32(p.val[1]), vget_high_f32(q.val[1]));
}
// 8 bfloat16 (one 128-bit load) widened by parity: e = elements 0, 2, 4, 6 and o = 1, 3, 5, 7 (the top
// half of each 32-bit lane is the odd element's float, the bottom half shifted up the even one's).
POSENC_OPS_INLINE void load_even_odd(const bfloat16* p, float32x4_t& e, float32x4_t& o) {
  const uint32x4_t x = vreinterpretq_u32_u16(vld1q_u16(reinterpret_cast<const std::uint16_t*>(p)));
  e = vreinterpretq_f32_u32(vshlq_n_u32(x, 16)), o = vreinterpretq_f32_u32(vandq_u32(x, vdupq_n_u32(0xFFFF0000u)));
}
// clang-format on

#include <posenc/kernels/ops/generic.inl>

}  // namespace neon
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_NEON_KERNELS
