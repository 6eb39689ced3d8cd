// posenc/attention/fast/ops/scalar.hpp — the portable operations (one float per "vector") under
// which fast/tile-inl.hpp becomes the scalar reference microkernels that every SIMD ISA is tested
// against. Same algorithm, same exp polynomial; no target attribute.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/core/half.hpp>
#include <posenc/kernels/isa.hpp>

namespace posenc::inline v0::detail {
inline namespace POSENC_KERNELS_ABI {
namespace scalar {

using vf = float;
static constexpr int L = 1;
static constexpr int ops_qk_mr = 4;
static constexpr int ops_pv_mr = 4;

// clang-format off
static inline vf zero() { return 0.0f; }
static inline vf set1(float f) { return f; }
static inline vf load(const float* p) { return *p; }
static inline void store(float* p, vf v) { *p = v; }
static inline vf fmadd(vf a, vf b, vf c) { return a * b + c; }
static inline vf mul(vf a, vf b) { return a * b; }
static inline vf add(vf a, vf b) { return a + b; }
static inline vf sub(vf a, vf b) { return a - b; }
static inline vf min(vf a, vf b) { return b < a ? b : a; }
static inline vf max(vf a, vf b) { return a < b ? b : a; }
static inline float reduce_add(vf a) { return a; }
static inline float reduce_max(vf a) { return a; }
static inline vf load_f(const bfloat16* p) { return static_cast<float>(*p); }
static inline vf load_f(const float16* p) { return static_cast<float>(*p); }
static inline void reduce4(vf a, vf b, vf c, vf d, float f, float* out) { out[0] = a * f; out[1] = b * f; out[2] = c * f; out[3] = d * f; }
static inline void transpose(vf (&)[L]) {}
static inline void load_eo(const bfloat16* p, vf& e, vf& o) { e = static_cast<float>(p[0]); o = static_cast<float>(p[1]); }
static inline vf round_nearest(vf x) { return static_cast<float>(static_cast<std::int32_t>(x + (x < 0 ? -0.5f : 0.5f))); }
static inline vf pow2(vf n) { return std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23); }
static inline vf keep_ge(vf x, vf lim, vf y) { return x >= lim ? y : 0.0f; }
static inline vf abs_v(vf x) { return std::fabs(x); }
static inline vf divide(vf a, vf b) { return a / b; }
static inline vf with_sign(vf m, vf s) { return std::copysign(m, s); }
static inline vf pick_gt(vf x, vf lim, vf a, vf b) { return x > lim ? a : b; }
static inline bool any_gt(vf x, vf lim) { return x > lim; }
static inline vf load_i8(const std::int8_t* p) { return static_cast<float>(*p); }
static inline vf set1_half(std::uint16_t h) { return static_cast<float>(float16::from_bits(h)); }
// clang-format on

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION
}  // namespace scalar
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::detail
