// posenc/core/q8_0.hpp — the q8_0 block format of ggml (llama.cpp's common 8-bit K/V cache type):
// 32 values as one fp16 scale d and 32 int8 quants q, value = q * d, 34 bytes per 32 values.
//
// Bit-compatible with ggml's block_q8_0 and its reference quantiser (llama.cpp
// ggml/src/ggml-common.h, ggml/src/ggml-quants.c quantize_row_q8_0_ref / dequantize_row_q8_0,
// ggml/src/ggml-impl.h ggml_compute_fp32_to_fp16; read at commit
// 01243c587feceaa5d6a6c2305535ef2f549c48b8), step by step in fp32:
//   amax = max over j of |x_j|, folded left to right as ggml's MAX(amax, |x_j|) (a > b ? a : b: a NaN
//          drops everything folded before it, and stays only when it is the last value)
//   d = amax / 127 (fp32 division), id = d != 0 ? 1 / d : 0
//   q_j = roundf(x_j * id): nearest integer, halves away from zero
//   stored scale = fp16(d), round to nearest even (NaN stored as sign | 0x7e00, ggml's quiet NaN)
// Note that the quants use the fp32 d, not the stored fp16 one (as ggml's reference does).
// Dequantisation q_j * float(d16) is exact in fp32 (a 7-bit by 11-bit product).
// The int8 store is spelled out as an x86 build of ggml's reference performs it (its float -> int8
// conversion is cvttss2si to int32, then the low byte; in C++ that conversion is undefined outside
// [-128, 127]): q_j = low byte of roundf(x_j id), and 0 (the low byte of 0x80000000) when x_j id is
// not finite or |x_j id| >= 2^31. Only degenerate blocks reach those cases: an infinite value, a NaN
// (values before it may exceed 127 d), or amax below about 127 x 2^-126, where d is subnormal, 1 / d
// inexact or infinite, and |x_j id| may pass 127.
// The SIMD rows (kernels/q8_0.hpp) are bit-exact with these. Not here: other ggml types (q4_0, K-quants).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <posenc/core/half.hpp>

namespace posenc::inline v0 {

/// ggml's block_q8_0: { ggml_half d; int8_t qs[32]; }, 34 bytes, alignment 2.
struct block_q8_0 {
  static constexpr int values = 32;  ///< QK8_0
  float16 d;                         ///< the scale, IEEE binary16
  std::int8_t qs[values];            ///< the quants

  /// Value j (< 32) in float: qs[j] * d, exact.
  [[nodiscard]] POSENC_FORCE_INLINE float value(int j) const noexcept {
    return static_cast<float>(qs[j]) * static_cast<float>(d);
  }
  /// The scale in float.
  [[nodiscard]] POSENC_FORCE_INLINE float scale() const noexcept { return static_cast<float>(d); }
  /// True when a value of the block can be Inf or NaN: the scale is not finite (0 x Inf is NaN).
  [[nodiscard]] bool nonfinite() const noexcept { return (d.bits & 0x7c00u) == 0x7c00u; }
};
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 must be ggml's 34-byte block");
static_assert(alignof(block_q8_0) == 2);
static_assert(std::is_standard_layout_v<block_q8_0> && std::is_trivially_copyable_v<block_q8_0>);
static_assert(offsetof(block_q8_0, d) == 0 && offsetof(block_q8_0, qs) == 2);

namespace q8_0 {

inline constexpr int block = block_q8_0::values;

/// ggml's fp32 -> fp16 for the scale: round to nearest even, overflow to infinity, NaN to sign | 0x7e00.
[[nodiscard]] POSENC_FORCE_INLINE float16 scale_to_half(float d) noexcept {
  const std::uint32_t x = __builtin_bit_cast(std::uint32_t, d);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return float16::from_bits(static_cast<std::uint16_t>(((x >> 16) & 0x8000u) | 0x7e00u));
  return float16(d);
}

/// roundf(v) stored as int8 the way the banner says (low byte of the int32 conversion).
[[nodiscard]] POSENC_FORCE_INLINE std::int8_t round_quant(float v) noexcept {
  // roundf: halves away from zero; NaN fails the comparison. The builtins, not std::round / std::fabs,
  // whose float overloads GCC would not inline into the kernels' target regions (core/half.hpp).
  const std::int32_t r = __builtin_fabsf(v) < 0x1p31f ? static_cast<std::int32_t>(__builtin_roundf(v)) : INT32_MIN;
  return static_cast<std::int8_t>(static_cast<std::uint8_t>(static_cast<std::uint32_t>(r) & 0xffu));
}

/// The scale of a block (d in fp32, before the fp16 rounding) and 1 / d, from its 32 values.
[[nodiscard]] POSENC_FORCE_INLINE float block_scale(const float* x) noexcept {
  float amax = 0.0f;
  for (int j = 0; j < block; ++j) {
    const float a = __builtin_fabsf(x[j]);
    amax = amax > a ? amax : a;  // ggml's MAX(amax, fabsf(v)), NaN order included
  }
  return amax / 127.0f;
}

/// Quantises one block of 32 values (the scalar reference every SIMD row is tested against).
POSENC_FORCE_INLINE void quantize_block(const float* x, block_q8_0& y) noexcept {
  const float d = block_scale(x);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y.d = scale_to_half(d);
  for (int j = 0; j < block; ++j) y.qs[j] = round_quant(x[j] * id);
}

/// quantize_row_q8_0_ref: n values (n % 32 == 0) into n / 32 blocks.
inline void quantize_row_ref(const float* x, block_q8_0* y, std::ptrdiff_t n) noexcept {
  for (std::ptrdiff_t b = 0; b < n / block; ++b) quantize_block(x + b * block, y[b]);
}

/// dequantize_row_q8_0: n / 32 blocks into n values.
inline void dequantize_row_ref(const block_q8_0* x, float* y, std::ptrdiff_t n) noexcept {
  for (std::ptrdiff_t b = 0; b < n / block; ++b) {
    const float d = x[b].scale();
    for (int j = 0; j < block; ++j) y[b * block + j] = static_cast<float>(x[b].qs[j]) * d;
  }
}

}  // namespace q8_0
}  // namespace posenc::inline v0
