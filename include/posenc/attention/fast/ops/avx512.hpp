// posenc/attention/fast/ops/avx512.hpp — AVX-512 operations (16 floats per vector) for the attention tile microkernels:
// the shared per-ISA operations layer (kernels/ops/avx512.hpp, namespace kernels::avx512) plus the few operations only
// attention needs (min, reductions, the exp pieces), in the avx512 target region and the ABI-tagged namespace
// detail::avx512, into which the one algorithm, fast/tile-inl.hpp, is included. Zen 4 runs 512-bit FMAs
// double-pumped: the same FLOP/cycle peak as AVX2, with half the instructions and twice the registers.
#pragma once

#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/core/half.hpp>
#include <posenc/kernels/ops/avx512.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cstddef>
#include <cstdint>
#include <immintrin.h>
#include <type_traits>

#include <posenc/kernels/ops/begin_avx512.inl>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12 intrinsics that start from undefined vectors
#endif
namespace posenc::inline v0::detail {
inline namespace POSENC_KERNELS_ABI {
namespace avx512 {

namespace ops = ::posenc::kernels::avx512;
using vf = ops::vec<float>;
static constexpr int L = ops::lanes<float>;
static constexpr int ops_qk_mr = 6;  // 6 rows x 4 vectors = 24 accumulators of 32 registers
static constexpr int ops_pv_mr = 6;

#include <posenc/attention/fast/ops/shared_ops.inl>  // zero, set1, load, store, fmadd, mul, add, sub, max, load_f
// clang-format off

// Attention-only operations.
static inline vf min(vf a, vf b) { return _mm512_min_ps(a, b); }
// Halves folded with lane shuffles (maskz forms: GCC 12 warns on the ones that start from undefined vectors).
static inline float reduce_add(vf a) {
  const __m512 h = _mm512_add_ps(a, _mm512_maskz_shuffle_f32x4(0xFFFF, a, a, 0x4E));
  const __m512 q = _mm512_add_ps(h, _mm512_maskz_shuffle_f32x4(0xFFFF, h, h, 0xB1));
  __m128 s = _mm512_castps512_ps128(q);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
static inline float reduce_max(vf a) {
  const __m512 h = _mm512_max_ps(a, _mm512_maskz_shuffle_f32x4(0xFFFF, a, a, 0x4E));
  const __m512 q = _mm512_max_ps(h, _mm512_maskz_shuffle_f32x4(0xFFFF, h, h, 0xB1));
  __m128 s = _mm512_castps512_ps128(q);
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}
// Four sums at once: pairs interleaved and added, then the 128-bit lanes folded (13 operations, not 4 x 7).
static inline void reduce4(vf a, vf b, vf c, vf d, float f, float* out) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512 x = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));
  const __m512 y = _mm512_add_ps(x, _mm512_maskz_shuffle_f32x4(0xFFFF, x, x, 0x4E));
  const __m256 z = _mm512_castps512_ps256(y);
  const __m128 w = _mm_add_ps(_mm256_castps256_ps128(z), _mm256_extractf128_ps(z, 1));
  _mm_storeu_ps(out, _mm_mul_ps(w, _mm_set1_ps(f)));
}
// x[i] (row i of a 16 x 16 block) becomes column i: pairs, quads within 128-bit lanes, then the lanes.
static inline void transpose(vf (&x)[L]) {
  vf t[L], u[L];
  for (int i = 0; i < 8; ++i) t[2 * i] = _mm512_unpacklo_ps(x[2 * i], x[2 * i + 1]), t[2 * i + 1] = _mm512_unpackhi_ps(x[2 * i], x[2 * i + 1]);
  for (int i = 0; i < 4; ++i) {
    u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44), u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44), u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) {
    const vf v = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88), w = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xDD);
    const vf v2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88), w2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xDD);
    x[m] = _mm512_shuffle_f32x4(v, v2, 0x88), x[8 + m] = _mm512_shuffle_f32x4(v, v2, 0xDD);
    x[4 + m] = _mm512_shuffle_f32x4(w, w2, 0x88), x[12 + m] = _mm512_shuffle_f32x4(w, w2, 0xDD);
  }
}
// 2L bfloat16 (one 512-bit load) widened by parity: e = elements 0, 2, .., 30 and o = 1, 3, .., 31. A
// bfloat16 is the top half of its float, so the even ones are a shift up of each 32-bit lane and the odd
// ones a mask in place: two in-lane operations per 32 values, where load_f takes a cross-lane widening
// and a shift per 16 (the one pair of bfloat16 decode steps that needs the shuffle port).
static inline void load_eo(const bfloat16* p, vf& e, vf& o) {
  const __m512i x = _mm512_loadu_si512(p);
  e = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)), o = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
static inline vf round_nearest(vf x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf pow2(vf n) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23)); }
static inline vf keep_ge(vf x, vf lim, vf y) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lim, _CMP_GE_OQ), y); }
static inline vf abs_v(vf x) { return _mm512_abs_ps(x); }
static inline vf divide(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf with_sign(vf m, vf s) { return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(m), _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32(static_cast<int>(0x80000000u))))); }
static inline vf pick_gt(vf x, vf lim, vf a, vf b) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lim, _CMP_GT_OQ), b, a); }
static inline bool any_gt(vf x, vf lim) { return _mm512_cmp_ps_mask(x, lim, _CMP_GT_OQ) != 0; }
static inline vf load_i8(const std::int8_t* p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))); }
static inline vf set1_half(std::uint16_t h) { return _mm512_set1_ps(_cvtsh_ss(h)); }
// clang-format on

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION

}  // namespace avx512
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::detail
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_X86_KERNELS
