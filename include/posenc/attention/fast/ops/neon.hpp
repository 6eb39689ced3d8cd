// posenc/attention/fast/ops/neon.hpp — NEON operations (4 floats per vector, AArch64 baseline) for
// the attention tile microkernels, in the ABI-tagged namespace attention_kernels::neon, into which
// the one algorithm, fast/tile-inl.hpp, is included. No target region: NEON is baseline.
#pragma once

#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/core/half.hpp>
#include <posenc/kernels/isa.hpp>

#if POSENC_HAS_NEON_KERNELS
#include <arm_neon.h>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace posenc::inline v0::attention_kernels {
inline namespace POSENC_KERNELS_ABI {
namespace neon {

using vf = float32x4_t;
static constexpr int L = 4;
static constexpr int ops_qk_mr = 6;  // 24 accumulators of 32 registers
static constexpr int ops_pv_mr = 6;

// clang-format off
static inline vf zero() { return vdupq_n_f32(0.0f); }
static inline vf set1(float f) { return vdupq_n_f32(f); }
static inline vf load(const float* p) { return vld1q_f32(p); }
static inline void store(float* p, vf v) { vst1q_f32(p, v); }
static inline vf fmadd(vf a, vf b, vf c) { return vfmaq_f32(c, a, b); }
static inline vf mul(vf a, vf b) { return vmulq_f32(a, b); }
static inline vf add(vf a, vf b) { return vaddq_f32(a, b); }
static inline vf sub(vf a, vf b) { return vsubq_f32(a, b); }
static inline vf min(vf a, vf b) { return vminq_f32(a, b); }
static inline vf max(vf a, vf b) { return vmaxq_f32(a, b); }
static inline float reduce_add(vf a) { return vaddvq_f32(a); }
static inline float reduce_max(vf a) { return vmaxvq_f32(a); }
static inline vf load_f(const bfloat16* p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)), 16)); }
static inline vf load_f(const float16* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)))); }
static inline vf round_nearest(vf x) { return vrndnq_f32(x); }
static inline vf pow2(vf n) { return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23)); }
static inline vf keep_ge(vf x, vf lim, vf y) { return vreinterpretq_f32_u32(vandq_u32(vcgeq_f32(x, lim), vreinterpretq_u32_f32(y))); }
// clang-format on

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION

}  // namespace neon
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::attention_kernels
#endif  // POSENC_HAS_NEON_KERNELS
