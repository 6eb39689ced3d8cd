// posenc/core/half.hpp — 16-bit storage types: bfloat16 and float16 (IEEE binary16).
//
// Storage only: conversion from float rounds to nearest, ties to even (NaN stays NaN, overflow goes
// to infinity, subnormals are produced and read exactly); conversion to float is exact. Arithmetic
// on these types is done by converting to float (core/element.hpp). No dependency on _Float16 or
// std::bfloat16_t, which GCC 12 / Clang 14 do not provide portably.
#pragma once

#include <cstdint>

#include <posenc/core/platform.hpp>

namespace posenc::inline v0 {

/// Brain float: 1 sign, 8 exponent, 7 mantissa bits (the top half of a binary32).
struct bfloat16 {
  std::uint16_t bits = 0;

  bfloat16() = default;
  POSENC_FORCE_INLINE explicit bfloat16(float f) noexcept : bits(from_float(f)) {}
  [[nodiscard]] POSENC_FORCE_INLINE static constexpr bfloat16 from_bits(std::uint16_t b) noexcept {
    bfloat16 r;
    r.bits = b;
    return r;
  }
  // The conversions are forced inline and use the builtin rather than std::bit_cast: the kernels' target
  // regions fix their own tuning (kernels/ops/begin_avx2.inl), and GCC inlines nothing else across that.
  POSENC_FORCE_INLINE explicit operator float() const noexcept {
    return __builtin_bit_cast(float, std::uint32_t{bits} << 16);
  }
  friend bool operator==(bfloat16, bfloat16) = default;  // bitwise

  [[nodiscard]] POSENC_FORCE_INLINE static std::uint16_t from_float(float f) noexcept {
    std::uint32_t x = __builtin_bit_cast(std::uint32_t, f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even; carries into the exponent correctly
    return static_cast<std::uint16_t>(x >> 16);
  }
};

/// IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits.
struct float16 {
  std::uint16_t bits = 0;

  float16() = default;
  POSENC_FORCE_INLINE explicit float16(float f) noexcept : bits(from_float(f)) {}
  [[nodiscard]] POSENC_FORCE_INLINE static constexpr float16 from_bits(std::uint16_t b) noexcept {
    float16 r;
    r.bits = b;
    return r;
  }
  POSENC_FORCE_INLINE explicit operator float() const noexcept {
    return __builtin_bit_cast(float, to_float_bits(bits));
  }
  friend bool operator==(float16, float16) = default;  // bitwise

  [[nodiscard]] POSENC_FORCE_INLINE static std::uint16_t from_float(float f) noexcept {
    std::uint32_t x = __builtin_bit_cast(std::uint32_t, f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    std::uint32_t h;
    if (x >= 0x7f800000u) {  // inf or NaN (NaN keeps the top payload bits and is made quiet)
      h = 0x7c00u | (x > 0x7f800000u ? (0x200u | ((x >> 13) & 0x3ffu)) : 0u);
    } else if (x >= 0x477ff000u) {  // >= 65520 rounds to infinity
      h = 0x7c00u;
    } else if (x < 0x38800000u) {                  // below 2^-14: subnormal or zero; let the FPU round at 2^-24
      constexpr std::uint32_t magic = 126u << 23;  // 0.5f: aligns the half ulp with the float ulp
      const float t = __builtin_bit_cast(float, x) + __builtin_bit_cast(float, magic);
      h = __builtin_bit_cast(std::uint32_t, t) - magic;
    } else {
      const std::uint32_t odd = (x >> 13) & 1u;
      x += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + odd;
      h = x >> 13;
    }
    return static_cast<std::uint16_t>(sign | h);
  }

  [[nodiscard]] POSENC_FORCE_INLINE static constexpr std::uint32_t to_float_bits(std::uint16_t b) noexcept {
    const std::uint32_t sign = std::uint32_t{b & 0x8000u} << 16;
    const std::uint32_t exp = (b >> 10) & 0x1fu;
    std::uint32_t mant = b & 0x3ffu;
    if (exp == 0x1fu) return sign | 0x7f800000u | (mant << 13);
    if (exp != 0) return sign | ((exp + 112u) << 23) | (mant << 13);
    if (mant == 0) return sign;
    std::uint32_t shift = 0;  // subnormal: normalise m * 2^-24
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      ++shift;
    }
    return sign | ((113u - shift) << 23) | ((mant & 0x3ffu) << 13);
  }
};

}  // namespace posenc::inline v0
