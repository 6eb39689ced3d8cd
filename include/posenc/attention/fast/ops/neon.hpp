// posenc/attention/fast/ops/neon.hpp — NEON operations (4 floats per vector, AArch64 baseline) for the attention tile
// microkernels: the shared per-ISA operations layer (kernels/ops/neon.hpp, namespace kernels::neon) plus the few
// operations only attention needs (min, reductions, the exp pieces), in the neon target region and the ABI-tagged
// namespace detail::neon, into which the one algorithm, fast/tile-inl.hpp, is included.
#pragma once

#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/core/half.hpp>
#include <posenc/kernels/ops/neon.hpp>

#if POSENC_HAS_NEON_KERNELS
#include <arm_neon.h>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <posenc/kernels/ops/begin_neon.inl>
namespace posenc::inline v0::detail {
inline namespace POSENC_KERNELS_ABI {
namespace neon {

namespace ops = ::posenc::kernels::neon;
using vf = ops::vec<float>;
static constexpr int L = ops::lanes<float>;
static constexpr int ops_qk_mr = 6;  // 24 accumulators of 32 registers
static constexpr int ops_pv_mr = 6;

#include <posenc/attention/fast/ops/shared_ops.inl>  // zero, set1, load, store, fmadd, mul, add, sub, max, load_f
// clang-format off

// Attention-only operations.
static inline vf min(vf a, vf b) { return vminq_f32(a, b); }
static inline float reduce_add(vf a) { return vaddvq_f32(a); }
static inline float reduce_max(vf a) { return vmaxvq_f32(a); }
static inline void reduce4(vf a, vf b, vf c, vf d, float f, float* out) { vst1q_f32(out, vmulq_n_f32(vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d)), f)); }
// x[i] (row i of a 4 x 4 block) becomes column i.
static inline void transpose(vf (&x)[L]) {
  const float32x4x2_t p = vtrnq_f32(x[0], x[1]), q = vtrnq_f32(x[2], x[3]);
  x[0] = vcombine_f32(vget_low_f32(p.val[0]), vget_low_f32(q.val[0])), x[2] = vcombine_f32(vget_high_f32(p.val[0]), vget_high_f32(q.val[0]));
  x[1] = vcombine_f32(vget_low_f32(p.val[1]), vget_low_f32(q.val[1])), x[3] = vcombine_f32(vget_high_f32(p.val[1]), vget_high_f32(q.val[1]));
}
// 2L bfloat16 (one 128-bit load) widened by parity: e = elements 0, 2, 4, 6 and o = 1, 3, 5, 7 (the top
// half of each 32-bit lane is the odd element's float, the bottom half shifted up the even one's).
static inline void load_eo(const bfloat16* p, vf& e, vf& o) {
  const uint32x4_t x = vreinterpretq_u32_u16(vld1q_u16(reinterpret_cast<const std::uint16_t*>(p)));
  e = vreinterpretq_f32_u32(vshlq_n_u32(x, 16)), o = vreinterpretq_f32_u32(vandq_u32(x, vdupq_n_u32(0xFFFF0000u)));
}
static inline vf round_nearest(vf x) { return vrndnq_f32(x); }
static inline vf pow2(vf n) { return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23)); }
static inline vf keep_ge(vf x, vf lim, vf y) { return vreinterpretq_f32_u32(vandq_u32(vcgeq_f32(x, lim), vreinterpretq_u32_f32(y))); }
static inline vf abs_v(vf x) { return vabsq_f32(x); }
static inline vf divide(vf a, vf b) { return vdivq_f32(a, b); }
static inline vf with_sign(vf m, vf s) { return vbslq_f32(vdupq_n_u32(0x80000000u), s, m); }
static inline vf pick_gt(vf x, vf lim, vf a, vf b) { return vbslq_f32(vcgtq_f32(x, lim), a, b); }
static inline bool any_gt(vf x, vf lim) { return vmaxvq_u32(vcgtq_f32(x, lim)) != 0; }
static inline vf load_i8(const std::int8_t* p) {
  std::int32_t w;
  std::memcpy(&w, p, 4);
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(w))))));
}
static inline vf set1_half(std::uint16_t h) { return vdupq_laneq_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }
// clang-format on

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION

}  // namespace neon
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::detail
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_NEON_KERNELS
