// posenc/kernels/q8_0.hpp — q8_0 rows (core/q8_0.hpp, ggml's block_q8_0) quantised and dequantised
// with SIMD: AVX2 (4 x 8 floats per block) and AVX-512 (2 x 16), bit-exact with the scalar reference
// q8_0::quantize_row_ref / dequantize_row_ref (tests/attention/q8_0_format_test.cpp, every ISA).
//
// Exactness: |x| and the max are order-free (max of non-NaN floats), d = amax / 127 and 1 / d are the
// scalar's fp32 divisions, q = x * id the same product; roundf is rebuilt as t = trunc(x id), plus
// sign(x id) when |x id - t| >= 0.5 (x id - t is exact), converted as cvttss2si does (0x80000000 when
// not finite or out of int32 range) and stored as its low byte (no saturation). A block that
// holds a NaN takes the scalar path (its amax depends on where the NaN is: core/q8_0.hpp).
// Dequantisation q * d is exact in fp32 on every path. The rows of each target live in its namespace
// (kernels::avx2, kernels::avx512) and form a kernel family (kernels/isa.hpp: kernel_table), which
// the entries index with kernels::active_isa() as the rotation kernels do. Not here: the attention
// tile kernels that read q8_0 K/V (attention/fast/q8_0-inl.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <posenc/core/platform.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/kernels/ops/avx2.hpp>
#include <posenc/kernels/ops/avx512.hpp>

#if POSENC_HAS_X86_KERNELS
#include <immintrin.h>

#include <posenc/kernels/ops/begin_avx2.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx2 {

// roundf of each lane as int32 (0x80000000 when not finite or out of range), its low byte kept.
static inline __m256i round_quant_q8_0(__m256 t) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 r = _mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 half = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(t, r)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 step = _mm256_and_ps(half, _mm256_or_ps(_mm256_and_ps(t, sign), _mm256_set1_ps(1.0f)));
  return _mm256_and_si256(_mm256_cvttps_epi32(_mm256_add_ps(r, step)), _mm256_set1_epi32(0xff));
}

static inline void quantize_row_q8_0(const float* x, block_q8_0* y, std::ptrdiff_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (std::ptrdiff_t b = 0; b < n / q8_0::block; ++b) {
    const float* xb = x + b * q8_0::block;
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
    const __m256 unord = _mm256_or_ps(_mm256_cmp_ps(v[0], v[1], _CMP_UNORD_Q), _mm256_cmp_ps(v[2], v[3], _CMP_UNORD_Q));
    if (_mm256_movemask_ps(unord) != 0) {
      q8_0::quantize_block(xb, y[b]);
      continue;
    }
    const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                                   _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    const float d = hmax(m) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float16(d);
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = round_quant_q8_0(_mm256_mul_ps(v[i], idv));
    // low bytes (0..255: the unsigned packs do not saturate); the packs interleave 128-bit lanes, the permute undoes it
    const __m256i p = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]), _mm256_packus_epi32(q[2], q[3]));
    const __m256i o = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), o);
  }
}

#include <posenc/kernels/drivers/q8_0.inl>

}  // namespace avx2
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
// (the AVX2 region closed before the AVX-512 one opens)
#include <posenc/kernels/ops/begin_avx512.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx512 {

// As the AVX2 one; the caller keeps the low bytes (vpmovdb truncates).
static inline __m512i round_quant_q8_0(__m512 t) {
  const __m512 r = _mm512_roundscale_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask16 half = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(t, r)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 step = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(t), _mm512_set1_epi32(static_cast<int>(0x80000000u))),
                      _mm512_castps_si512(_mm512_set1_ps(1.0f))));
  return _mm512_cvttps_epi32(_mm512_mask_add_ps(r, half, r, step));
}

static inline void quantize_row_q8_0(const float* x, block_q8_0* y, std::ptrdiff_t n) {
  for (std::ptrdiff_t b = 0; b < n / q8_0::block; ++b) {
    const float* xb = x + b * q8_0::block;
    const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
    if (_mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q) != 0) {
      q8_0::quantize_block(xb, y[b]);
      continue;
    }
    const float d = hmax(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1))) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float16(d);
    const __m512 idv = _mm512_set1_ps(id);
    const __m128i q0 = _mm512_cvtepi32_epi8(round_quant_q8_0(_mm512_mul_ps(v0, idv)));
    const __m128i q1 = _mm512_cvtepi32_epi8(round_quant_q8_0(_mm512_mul_ps(v1, idv)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), q0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16), q1);
  }
}

#include <posenc/kernels/drivers/q8_0.inl>

}  // namespace avx512
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_X86_KERNELS

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {

/// One ISA's q8_0 rows: (x, y, n) with n % 32 == 0 values.
struct q8_0_rows {
  void (*quantize)(const float*, block_q8_0*, std::ptrdiff_t) = nullptr;
  void (*dequantize)(const block_q8_0*, float*, std::ptrdiff_t) = nullptr;
};

/// The q8_0 rows as a kernel family: the scalar reference for ISAs without q8_0 kernels (NEON, scalar).
template <>
struct kernel_family<q8_0_rows> {
  template <isa I>
  static consteval q8_0_rows make() {
#if POSENC_HAS_X86_KERNELS
    if constexpr (I == isa::avx512)
      return {&avx512::quantize_row_q8_0, &avx512::dequantize_row_q8_0};
    else if constexpr (I == isa::avx2)
      return {&avx2::quantize_row_q8_0, &avx2::dequantize_row_q8_0};
    else
#endif
      return {&q8_0::quantize_row_ref, &q8_0::dequantize_row_ref};
  }
};

/// The rows of ISA `which`.
[[nodiscard]] inline const q8_0_rows& q8_0_rows_for(isa which) noexcept {
  return kernel_table<q8_0_rows>(which);
}

/// quantize_row_q8_0_ref on the active ISA (bit-exact with it): n % 32 == 0 values into n / 32 blocks.
inline void quantize_row_q8_0(const float* x, block_q8_0* y, std::ptrdiff_t n) noexcept {
  q8_0_rows_for(active_isa()).quantize(x, y, n);
}
/// dequantize_row_q8_0 on the active ISA.
inline void dequantize_row_q8_0(const block_q8_0* x, float* y, std::ptrdiff_t n) noexcept {
  q8_0_rows_for(active_isa()).dequantize(x, y, n);
}

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
