// posenc/attention/fast/ops/avx2.hpp — AVX2+FMA operations (8 floats per vector) for the attention
// tile microkernels: a target region plus the ABI-tagged namespace attention_kernels::avx2, into
// which the one algorithm, fast/tile-inl.hpp, is included.
#pragma once

#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/core/half.hpp>
#include <posenc/kernels/isa.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cstddef>
#include <cstdint>
#include <immintrin.h>
#include <type_traits>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace posenc::inline v0::attention_kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx2 {

using vf = __m256;
static constexpr int L = 8;
static constexpr int ops_qk_mr = 2;  // 2 rows x 4 vectors = 8 accumulators + 4 key vectors of 16 registers
static constexpr int ops_pv_mr = 2;

// clang-format off
static inline vf zero() { return _mm256_setzero_ps(); }
static inline vf set1(float f) { return _mm256_set1_ps(f); }
static inline vf load(const float* p) { return _mm256_loadu_ps(p); }
static inline void store(float* p, vf v) { _mm256_storeu_ps(p, v); }
static inline vf fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf min(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf max(vf a, vf b) { return _mm256_max_ps(a, b); }
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
static inline vf load_f(const bfloat16* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}
static inline vf load_f(const float16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
static inline vf round_nearest(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline vf pow2(vf n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)); }
static inline vf keep_ge(vf x, vf lim, vf y) { return _mm256_and_ps(_mm256_cmp_ps(x, lim, _CMP_GE_OQ), y); }
// clang-format on

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION

}  // namespace avx2
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::attention_kernels

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // POSENC_HAS_X86_KERNELS
