// posenc/kernels/ops/scalar.hpp — the portable operations: one float per "vector", no target region.
//
// The vocabulary of ops/generic.hpp as far as the attention tile kernels use it (float only), so
// attention/fast/tile-inl.hpp compiles, under kernels::scalar, into the reference kernels every SIMD
// ISA is tested against: the same algorithm and the same exp and tanh polynomials. fma(a, b, c) is
// a * b + c written out (the reference rounds the product unless the TU's own flags contract it);
// nearest rounds halves away from zero (the exp's argument reduction takes either rounding).
// Not here: the rotation's scalar oracle (kernels/scalar/rotate.hpp), which needs no operations.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <posenc/core/half.hpp>
#include <posenc/kernels/ops/generic.hpp>

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace scalar {

template <class T>
using vec = float;
template <class T>
inline constexpr int lanes = 1;

// clang-format off
POSENC_OPS_INLINE float set(float x) { return x; }
POSENC_OPS_INLINE float set(float16 h) { return static_cast<float>(h); }
POSENC_OPS_INLINE float add(float a, float b) { return a + b; }
POSENC_OPS_INLINE float sub(float a, float b) { return a - b; }
POSENC_OPS_INLINE float mul(float a, float b) { return a * b; }
POSENC_OPS_INLINE float div(float a, float b) { return a / b; }
POSENC_OPS_INLINE float fma(float a, float b, float c) { return a * b + c; }
POSENC_OPS_INLINE float min(float a, float b) { return b < a ? b : a; }
POSENC_OPS_INLINE float max(float a, float b) { return a < b ? b : a; }
POSENC_OPS_INLINE float abs(float x) { return std::fabs(x); }
POSENC_OPS_INLINE float hsum(float a) { return a; }
POSENC_OPS_INLINE float hmax(float a) { return a; }
POSENC_OPS_INLINE float load_n(const float* p, int n) { return n > 0 ? *p : 0.0f; }
POSENC_OPS_INLINE void hsum4(float a, float b, float c, float d, float f, float* out) { out[0] = a * f; out[1] = b * f; out[2] = c * f; out[3] = d * f; }
POSENC_OPS_INLINE float load(const float* p) { return *p; }
POSENC_OPS_INLINE float load(const bfloat16* p) { return static_cast<float>(*p); }
POSENC_OPS_INLINE float load(const float16* p) { return static_cast<float>(*p); }
POSENC_OPS_INLINE float load(const std::int8_t* p) { return static_cast<float>(*p); }
POSENC_OPS_INLINE void store(float* p, float v) { *p = v; }
POSENC_OPS_INLINE void transpose(float (&)[1]) {}
POSENC_OPS_INLINE void load_even_odd(const bfloat16* p, float& e, float& o) { e = static_cast<float>(p[0]); o = static_cast<float>(p[1]); }
POSENC_OPS_INLINE float nearest(float x) { return static_cast<float>(static_cast<std::int32_t>(x + (x < 0 ? -0.5f : 0.5f))); }
POSENC_OPS_INLINE float pow2(float n) { return std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23); }
POSENC_OPS_INLINE float keep_ge(float x, float lim, float y) { return x >= lim ? y : 0.0f; }
POSENC_OPS_INLINE float with_sign(float m, float s) { return std::copysign(m, s); }
POSENC_OPS_INLINE float pick_gt(float x, float lim, float a, float b) { return x > lim ? a : b; }
POSENC_OPS_INLINE bool any_gt(float x, float lim) { return x > lim; }
// clang-format on

}  // namespace scalar
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
