// posenc/attention/fast/ops/avx2.hpp — AVX2+FMA operations (8 floats per vector) for the attention tile microkernels:
// the shared per-ISA operations layer (kernels/ops/avx2.hpp, namespace kernels::avx2) plus the few operations only
// attention needs (min, reductions, the exp pieces), in the avx2 target region and the ABI-tagged namespace
// detail::avx2, into which the one algorithm, fast/tile-inl.hpp, is included.
#pragma once

#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/core/half.hpp>
#include <posenc/kernels/ops/avx2.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cstddef>
#include <cstdint>
#include <immintrin.h>
#include <type_traits>

#include <posenc/kernels/ops/begin_avx2.inl>
namespace posenc::inline v0::detail {
inline namespace POSENC_KERNELS_ABI {
namespace avx2 {

namespace ops = ::posenc::kernels::avx2;
using vf = ops::vec<float>;
static constexpr int L = ops::lanes<float>;
static constexpr int ops_qk_mr = 2;  // 2 rows x 4 vectors = 8 accumulators + 4 key vectors of 16 registers
static constexpr int ops_pv_mr = 2;

#include <posenc/attention/fast/ops/shared_ops.inl>  // zero, set1, load, store, fmadd, mul, add, sub, max, load_f
// clang-format off

// Attention-only operations.
static inline vf min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline float reduce_add(vf a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
static inline float reduce_max(vf a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}
// Four sums at once: pairs interleaved and added, then the two 128-bit halves folded.
static inline void reduce4(vf a, vf b, vf c, vf d, float f, float* out) {
  const __m256 ab = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
  const __m256 cd = _mm256_add_ps(_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
  const __m256 x = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, 0x44), _mm256_shuffle_ps(ab, cd, 0xEE));
  const __m128 w = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  _mm_storeu_ps(out, _mm_mul_ps(w, _mm_set1_ps(f)));
}
// x[i] (row i of an 8 x 8 block) becomes column i: pairs, quads within 128-bit lanes, then the lanes.
static inline void transpose(vf (&x)[L]) {
  vf t[L], u[L];
  for (int i = 0; i < 4; ++i) t[2 * i] = _mm256_unpacklo_ps(x[2 * i], x[2 * i + 1]), t[2 * i + 1] = _mm256_unpackhi_ps(x[2 * i], x[2 * i + 1]);
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44), u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44), u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) x[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20), x[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
}
// 2L bfloat16 (one 256-bit load) widened by parity: e = elements 0, 2, .., 14 and o = 1, 3, .., 15 (the
// top half of each 32-bit lane is the odd element's float, the bottom half shifted up the even one's).
static inline void load_eo(const bfloat16* p, vf& e, vf& o) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  e = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)), o = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
static inline vf round_nearest(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf pow2(vf n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)); }
static inline vf keep_ge(vf x, vf lim, vf y) { return _mm256_and_ps(_mm256_cmp_ps(x, lim, _CMP_GE_OQ), y); }
static inline vf abs_v(vf x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
static inline vf divide(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf with_sign(vf m, vf s) { return _mm256_or_ps(m, _mm256_and_ps(s, _mm256_set1_ps(-0.0f))); }
static inline vf pick_gt(vf x, vf lim, vf a, vf b) { return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, lim, _CMP_GT_OQ)); }
static inline bool any_gt(vf x, vf lim) { return _mm256_movemask_ps(_mm256_cmp_ps(x, lim, _CMP_GT_OQ)) != 0; }
static inline vf load_i8(const std::int8_t* p) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))); }
static inline vf set1_half(std::uint16_t h) { return _mm256_set1_ps(_cvtsh_ss(h)); }
// clang-format on

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION

}  // namespace avx2
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::detail
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_X86_KERNELS
