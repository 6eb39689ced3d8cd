// posenc/kernels/ops/avx512.hpp — AVX-512 (F/BW/DQ/VL) operations: 16 floats or 8 doubles per vector.
//
// The vocabulary is listed in ops/generic.hpp. Tails use masked loads and stores. bfloat16 rounding
// is done with integer operations rather than VCVTNEPS2BF16, which flushes subnormals and so would
// not be bit-exact with bfloat16::from_float (and needs AVX512_BF16, which this target does not ask).
#pragma once

#include <posenc/kernels/ops/generic.hpp>

#if POSENC_HAS_X86_KERNELS
#include <algorithm>
#include <immintrin.h>
#include <type_traits>

#include <posenc/kernels/ops/begin_avx512.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx512 {
namespace self = avx512;  // this ISA, for qualified calls from the drivers

template <class T>
struct vec_of {
  using type = __m512;
};
template <>
struct vec_of<double> {
  using type = __m512d;
};
template <class T>
using vec = typename vec_of<std::remove_const_t<T>>::type;
template <class T>
inline constexpr int lanes = std::is_same_v<std::remove_const_t<T>, double> ? 8 : 16;
using ivec = __m512i;
inline constexpr std::size_t vector_bytes = 64;
inline constexpr int vector_registers = 32;  // architectural vector registers
inline constexpr bool has_stream = true;

// clang-format off
POSENC_OPS_INLINE __m512  set(float x)  { return _mm512_set1_ps(x); }
POSENC_OPS_INLINE __m512d set(double x) { return _mm512_set1_pd(x); }
POSENC_OPS_INLINE __m512  add(__m512 a, __m512 b)   { return _mm512_add_ps(a, b); }
POSENC_OPS_INLINE __m512d add(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
POSENC_OPS_INLINE __m512  sub(__m512 a, __m512 b)   { return _mm512_sub_ps(a, b); }
POSENC_OPS_INLINE __m512d sub(__m512d a, __m512d b) { return _mm512_sub_pd(a, b); }
POSENC_OPS_INLINE __m512  mul(__m512 a, __m512 b)   { return _mm512_mul_ps(a, b); }
POSENC_OPS_INLINE __m512d mul(__m512d a, __m512d b) { return _mm512_mul_pd(a, b); }
POSENC_OPS_INLINE __m512  max(__m512 a, __m512 b)   { return _mm512_max_ps(a, b); }
POSENC_OPS_INLINE __m512d max(__m512d a, __m512d b) { return _mm512_max_pd(a, b); }
POSENC_OPS_INLINE __m512  fma(__m512 a, __m512 b, __m512 c)    { return _mm512_fmadd_ps(a, b, c); }
POSENC_OPS_INLINE __m512d fma(__m512d a, __m512d b, __m512d c) { return _mm512_fmadd_pd(a, b, c); }
POSENC_OPS_INLINE __m512  fms(__m512 a, __m512 b, __m512 c)    { return _mm512_fmsub_ps(a, b, c); }
POSENC_OPS_INLINE __m512d fms(__m512d a, __m512d b, __m512d c) { return _mm512_fmsub_pd(a, b, c); }
POSENC_OPS_INLINE __m512  fnma(__m512 a, __m512 b, __m512 c)    { return _mm512_fnmadd_ps(a, b, c); }
POSENC_OPS_INLINE __m512d fnma(__m512d a, __m512d b, __m512d c) { return _mm512_fnmadd_pd(a, b, c); }
// A product the compiler may not fuse into an FMA (keeps the scalar kernel's two roundings).
POSENC_OPS_INLINE __m512  mul_rounded(__m512 a, __m512 b)   { __m512 r = _mm512_mul_ps(a, b); asm("" : "+v"(r)); return r; }
POSENC_OPS_INLINE __m512d mul_rounded(__m512d a, __m512d b) { __m512d r = _mm512_mul_pd(a, b); asm("" : "+v"(r)); return r; }
// A value the compiler must keep in a register: one load feeding two instructions stays one load
// (GCC otherwise folds the load into both, doubling the load traffic of a load-bound loop).
POSENC_OPS_INLINE __m512  in_register(__m512 v)  { asm("" : "+v"(v)); return v; }
POSENC_OPS_INLINE __m512d in_register(__m512d v) { asm("" : "+v"(v)); return v; }
// The float lanes folded by op in one written order (halves, quarters, then within 128 bits; maskz
// shuffles: GCC 12 warns on the forms that start from undefined vectors), the same on every compiler:
// hsum adds them, hmax takes their maximum.
struct fold_add {
  POSENC_OPS_INLINE __m512 operator()(__m512 a, __m512 b) const { return _mm512_add_ps(a, b); }
  POSENC_OPS_INLINE __m128 operator()(__m128 a, __m128 b) const { return _mm_add_ps(a, b); }
};
struct fold_max {
  POSENC_OPS_INLINE __m512 operator()(__m512 a, __m512 b) const { return _mm512_max_ps(a, b); }
  POSENC_OPS_INLINE __m128 operator()(__m128 a, __m128 b) const { return _mm_max_ps(a, b); }
};
template <class Op>
POSENC_OPS_INLINE float fold(__m512 v, Op op) {
  const __m512 h = op(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0x4E));
  const __m512 q = op(h, _mm512_maskz_shuffle_f32x4(0xFFFF, h, h, 0xB1));
  __m128 s = _mm512_castps512_ps128(q);
  s = op(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(op(s, _mm_movehdup_ps(s)));
}
POSENC_OPS_INLINE float  hsum(__m512 v)  { return fold(v, fold_add{}); }
POSENC_OPS_INLINE double hsum(__m512d v) { return _mm512_reduce_add_pd(v); }
POSENC_OPS_INLINE float  hmax(__m512 v)  { return fold(v, fold_max{}); }
POSENC_OPS_INLINE double hmax(__m512d v) { return _mm512_reduce_max_pd(v); }

POSENC_OPS_INLINE __m512  flip(__m512 a, __m512 m)    { return _mm512_xor_ps(a, m); }
POSENC_OPS_INLINE __m512d flip(__m512d a, __m512d m)  { return _mm512_xor_pd(a, m); }
POSENC_OPS_INLINE __m512  sign_mask(__m512, bool on)  { return on ? _mm512_set1_ps(-0.f) : _mm512_setzero_ps(); }
POSENC_OPS_INLINE __m512d sign_mask(__m512d, bool on) { return on ? _mm512_set1_pd(-0.0) : _mm512_setzero_pd(); }
POSENC_OPS_INLINE __m512  even_sign(__m512)  { return _mm512_castsi512_ps(_mm512_set1_epi64(0x80000000)); }
POSENC_OPS_INLINE __m512d even_sign(__m512d) { return _mm512_castsi512_pd(_mm512_set_epi64(0, INT64_MIN, 0, INT64_MIN, 0, INT64_MIN, 0, INT64_MIN)); }
POSENC_OPS_INLINE __m512  swap_pairs(__m512 x)  { return _mm512_permute_ps(x, 0xB1); }
POSENC_OPS_INLINE __m512d swap_pairs(__m512d x) { return _mm512_permute_pd(x, 0x55); }
POSENC_OPS_INLINE __m512  dup_lo(__m512 c)  { return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), c); }
POSENC_OPS_INLINE __m512  dup_hi(__m512 c)  { return _mm512_permutexvar_ps(_mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), c); }
POSENC_OPS_INLINE __m512d dup_lo(__m512d c) { return _mm512_permutexvar_pd(_mm512_setr_epi64(0, 0, 1, 1, 2, 2, 3, 3), c); }
POSENC_OPS_INLINE __m512d dup_hi(__m512d c) { return _mm512_permutexvar_pd(_mm512_setr_epi64(4, 4, 5, 5, 6, 6, 7, 7), c); }

// Realigned rows (drivers/rotate.inl): lane l of realign(lo, hi, realign_index(V, k)) is lane
// L - k + l of lo for l < k, else lane l - k of hi: the aligned vector k lanes before hi's start.
#define POSENC_OPS_NATIVE_REALIGN 1
inline constexpr bool has_realign = true;
POSENC_OPS_INLINE __m512i realign_index(__m512, int k)  { return _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(16 - k)); }
POSENC_OPS_INLINE __m512i realign_index(__m512d, int k) { return _mm512_add_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), _mm512_set1_epi64(8 - k)); }
POSENC_OPS_INLINE __m512  realign(__m512 lo, __m512 hi, __m512i i)   { return _mm512_permutex2var_ps(lo, i, hi); }
POSENC_OPS_INLINE __m512d realign(__m512d lo, __m512d hi, __m512i i) { return _mm512_permutex2var_pd(lo, i, hi); }
POSENC_OPS_INLINE void store_aligned(float* p, __m512 v)   { _mm512_store_ps(p, v); }
POSENC_OPS_INLINE void store_aligned(double* p, __m512d v) { _mm512_store_pd(p, v); }
POSENC_OPS_INLINE __m512  load_aligned(const float* p)  { return _mm512_load_ps(p); }
POSENC_OPS_INLINE __m512d load_aligned(const double* p) { return _mm512_load_pd(p); }
// Lanes [k, L) or [0, k) of an aligned vector; the other lanes are neither read (zero) nor written.
POSENC_OPS_INLINE __m512  load_lanes_from(const float* p, int k)  { return _mm512_maskz_load_ps(static_cast<__mmask16>(~((1u << k) - 1u)), p); }
POSENC_OPS_INLINE __m512d load_lanes_from(const double* p, int k) { return _mm512_maskz_load_pd(static_cast<__mmask8>(~((1u << k) - 1u)), p); }
POSENC_OPS_INLINE __m512  load_lanes_below(const float* p, int k)  { return _mm512_maskz_load_ps(static_cast<__mmask16>((1u << k) - 1u), p); }
POSENC_OPS_INLINE __m512d load_lanes_below(const double* p, int k) { return _mm512_maskz_load_pd(static_cast<__mmask8>((1u << k) - 1u), p); }
POSENC_OPS_INLINE void store_lanes_from(float* p, __m512 v, int k)   { _mm512_mask_store_ps(p, static_cast<__mmask16>(~((1u << k) - 1u)), v); }
POSENC_OPS_INLINE void store_lanes_from(double* p, __m512d v, int k) { _mm512_mask_store_pd(p, static_cast<__mmask8>(~((1u << k) - 1u)), v); }
POSENC_OPS_INLINE void store_lanes_below(float* p, __m512 v, int k)   { _mm512_mask_store_ps(p, static_cast<__mmask16>((1u << k) - 1u), v); }
POSENC_OPS_INLINE void store_lanes_below(double* p, __m512d v, int k) { _mm512_mask_store_pd(p, static_cast<__mmask8>((1u << k) - 1u), v); }
// Lanes [0, k) of a, [k, L) of b.
POSENC_OPS_INLINE __m512  blend_from(__m512 a, __m512 b, int k)   { return _mm512_mask_blend_ps(static_cast<__mmask16>(~((1u << k) - 1u)), a, b); }
POSENC_OPS_INLINE __m512d blend_from(__m512d a, __m512d b, int k) { return _mm512_mask_blend_pd(static_cast<__mmask8>(~((1u << k) - 1u)), a, b); }
POSENC_OPS_INLINE __mmask16 first(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
POSENC_OPS_INLINE __m512  load(const float* p)  { return _mm512_loadu_ps(p); }
POSENC_OPS_INLINE __m512d load(const double* p) { return _mm512_loadu_pd(p); }
POSENC_OPS_INLINE __m512  load(const float16* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
POSENC_OPS_INLINE __m256i f16_bits(__m512 v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
POSENC_OPS_INLINE void store(float* p, __m512 v)   { _mm512_storeu_ps(p, v); }
POSENC_OPS_INLINE void store(double* p, __m512d v) { _mm512_storeu_pd(p, v); }
POSENC_OPS_INLINE void store(float16* p, __m512 v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), f16_bits(v)); }
POSENC_OPS_INLINE void stream(float* p, __m512 v)   { _mm512_stream_ps(p, v); }
POSENC_OPS_INLINE void stream(double* p, __m512d v) { _mm512_stream_pd(p, v); }
POSENC_OPS_INLINE void stream(float16* p, __m512 v) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), f16_bits(v)); }
POSENC_OPS_INLINE void fence() { _mm_sfence(); }
#define POSENC_OPS_NATIVE_STREAM 1
POSENC_OPS_INLINE __m512  load_n(const float* p, int n)  { return _mm512_maskz_loadu_ps(first(n), p); }
POSENC_OPS_INLINE __m512d load_n(const double* p, int n) { return _mm512_maskz_loadu_pd(static_cast<__mmask8>(first(n)), p); }
POSENC_OPS_INLINE __m512  load_n(const float16* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n), p)); }
POSENC_OPS_INLINE void store_n(float* p, __m512 v, int n)   { _mm512_mask_storeu_ps(p, first(n), v); }
POSENC_OPS_INLINE void store_n(double* p, __m512d v, int n) { _mm512_mask_storeu_pd(p, static_cast<__mmask8>(first(n)), v); }
POSENC_OPS_INLINE void store_n(float16* p, __m512 v, int n) { _mm256_mask_storeu_epi16(p, first(n), f16_bits(v)); }

#if !defined(POSENC_KERNELS_GENERIC_BF16)
#define POSENC_OPS_NATIVE_BF16 1
POSENC_OPS_INLINE __m512 bf16_widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
// RNE as x + 0x7fff + odd (odd as a lane mask, as in the AVX2 ops); NaN made quiet by setting bit 22.
POSENC_OPS_INLINE __m256i bf16_bits(__m512 v) {
  const __m512i x = _mm512_castps_si512(v), up = _mm512_add_epi32(x, _mm512_set1_epi32(0x7fff));
  const __m512i rne = _mm512_mask_add_epi32(up, _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x10000)), up, _mm512_set1_epi32(1));
  const __m512i r = _mm512_mask_or_epi32(rne, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), x, _mm512_set1_epi32(0x400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}
POSENC_OPS_INLINE __m512 load(const bfloat16* p) { return bf16_widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
POSENC_OPS_INLINE __m512 load_n(const bfloat16* p, int n) { return bf16_widen(_mm256_maskz_loadu_epi16(first(n), p)); }
POSENC_OPS_INLINE void store(bfloat16* p, __m512 v)  { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bf16_bits(v)); }
POSENC_OPS_INLINE void stream(bfloat16* p, __m512 v) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), bf16_bits(v)); }
POSENC_OPS_INLINE void store_n(bfloat16* p, __m512 v, int n) { _mm256_mask_storeu_epi16(p, first(n), bf16_bits(v)); }
// The driver's blocks of two vectors: with AVX512_BF16 (Cooper Lake, Sapphire Rapids, Zen 4)
// VCVTNE2PS2BF16 rounds all 32 lanes in one instruction, RNE and quiet NaN exactly as
// bfloat16::from_float, except that it reads subnormal inputs as zero: a block holding a subnormal
// lane takes the integer rounding above. Checked once per block, so the CPU without the extension
// (or a subnormal) costs a predicted branch.
inline const bool has_avx512bf16 = detail::has_avx512bf16();
template <bool Stream>
POSENC_OPS_INLINE void store2(bfloat16* p, __m512 v0, __m512 v1) {
  __m512i x;
  if (POSENC_LIKELY(has_avx512bf16 && (_mm512_fpclass_ps_mask(v0, 0x20) | _mm512_fpclass_ps_mask(v1, 0x20)) == 0))
    x = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(v1, v0));
  else
    x = _mm512_inserti64x4(_mm512_castsi256_si512(bf16_bits(v0)), bf16_bits(v1), 1);
  if constexpr (Stream) _mm512_stream_si512(reinterpret_cast<__m512i*>(p), x);
  else _mm512_storeu_si512(p, x);
}
#endif

// Angle operations (kernels/drivers/angles.inl).
POSENC_OPS_INLINE __m512d nearest(__m512d x) { return _mm512_roundscale_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
POSENC_OPS_INLINE unsigned far_lanes(__m512d k, double limit) { return _mm512_cmp_pd_mask(_mm512_abs_pd(k), set(limit), _CMP_NLT_UQ); }
POSENC_OPS_INLINE __m512  narrow(__m512d a, __m512d b) { return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(a)), _mm512_cvtpd_ps(b), 1); }
POSENC_OPS_INLINE __m512i quadrants(__m512d a, __m512d b) { return _mm512_inserti32x8(_mm512_castsi256_si512(_mm512_cvtpd_epi32(a)), _mm512_cvtpd_epi32(b), 1); }
POSENC_OPS_INLINE void store_narrow(float* p, __m512d v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v)); }
POSENC_OPS_INLINE void by_quadrant(__m512d q, __m512d sp, __m512d cp, __m512d& s, __m512d& c) {
  const __m512i qi = _mm512_cvtpd_epi64(q), one = _mm512_set1_epi64(1), two = _mm512_set1_epi64(2);
  const __mmask8 swap = _mm512_test_epi64_mask(qi, one);
  const __m512d sneg = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_and_si512(qi, two), 62));
  const __m512d cneg = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_and_si512(_mm512_add_epi64(qi, one), two), 62));
  s = _mm512_xor_pd(_mm512_mask_blend_pd(swap, sp, cp), sneg);
  c = _mm512_xor_pd(_mm512_mask_blend_pd(swap, cp, sp), cneg);
}
POSENC_OPS_INLINE void by_quadrant(__m512i q, __m512 sp, __m512 cp, __m512& s, __m512& c) {
  const __m512i one = _mm512_set1_epi32(1), two = _mm512_set1_epi32(2);
  const __mmask16 swap = _mm512_test_epi32_mask(q, one);
  const __m512 sneg = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_and_si512(q, two), 30));
  const __m512 cneg = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_and_si512(_mm512_add_epi32(q, one), two), 30));
  s = _mm512_xor_ps(_mm512_mask_blend_ps(swap, sp, cp), sneg);
  c = _mm512_xor_ps(_mm512_mask_blend_ps(swap, cp, sp), cneg);
}
// Attention tile operations (attention/fast/tile-inl.hpp).
POSENC_OPS_INLINE __m512 min(__m512 a, __m512 b) { return _mm512_min_ps(a, b); }
POSENC_OPS_INLINE __m512 div(__m512 a, __m512 b) { return _mm512_div_ps(a, b); }
POSENC_OPS_INLINE __m512 abs(__m512 x) { return _mm512_abs_ps(x); }
POSENC_OPS_INLINE __m512 nearest(__m512 x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
POSENC_OPS_INLINE __m512 pow2(__m512 n) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23)); }
POSENC_OPS_INLINE __m512 keep_ge(__m512 x, __m512 lim, __m512 y) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lim, _CMP_GE_OQ), y); }
POSENC_OPS_INLINE __m512 with_sign(__m512 m, __m512 s) { return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(m), _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32(static_cast<int>(0x80000000u))))); }
POSENC_OPS_INLINE __m512 pick_gt(__m512 x, __m512 lim, __m512 a, __m512 b) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lim, _CMP_GT_OQ), b, a); }
POSENC_OPS_INLINE bool any_gt(__m512 x, __m512 lim) { return _mm512_cmp_ps_mask(x, lim, _CMP_GT_OQ) != 0; }
POSENC_OPS_INLINE __m512 set(float16 h) { return _mm512_set1_ps(_cvtsh_ss(h.bits)); }
POSENC_OPS_INLINE __m512 load(const std::int8_t* p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))); }
// Four sums at once, scaled: pairs interleaved and added, then the 128-bit lanes folded (13
// operations, not 4 x 7).
POSENC_OPS_INLINE void hsum4(__m512 a, __m512 b, __m512 c, __m512 d, float f, float* out) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512 x = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));
  const __m512 y = _mm512_add_ps(x, _mm512_maskz_shuffle_f32x4(0xFFFF, x, x, 0x4E));
  const __m256 z = _mm512_castps512_ps256(y);
  const __m128 w = _mm_add_ps(_mm256_castps256_ps128(z), _mm256_extractf128_ps(z, 1));
  _mm_storeu_ps(out, _mm_mul_ps(w, _mm_set1_ps(f)));
}
// x[i] (row i of a 16 x 16 block) becomes column i: pairs, quads within 128-bit lanes, then the lanes.
POSENC_OPS_INLINE void transpose(__m512 (&x)[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) t[2 * i] = _mm512_unpacklo_ps(x[2 * i], x[2 * i + 1]), t[2 * i + 1] = _mm512_unpackhi_ps(x[2 * i], x[2 * i + 1]);
  for (int i = 0; i < 4; ++i) {
    u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44), u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44), u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) {
    const __m512 v = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88), w = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xDD);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88), w2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xDD);
    x[m] = _mm512_shuffle_f32x4(v, v2, 0x88), x[8 + m] = _mm512_shuffle_f32x4(v, v2, 0xDD);
    x[4 + m] = _mm512_shuffle_f32x4(w, w2, 0x88), x[12 + m] = _mm512_shuffle_f32x4(w, w2, 0xDD);
  }
}
// 32 bfloat16 (one 512-bit load) widened by parity: e = elements 0, 2, .., 30 and o = 1, 3, .., 31. A
// bfloat16 is the top half of its float, so the even ones are a shift up of each 32-bit lane and the odd
// ones a mask in place: two in-lane operations per 32 values, where load(const bfloat16*) takes a
// cross-lane widening and a shift per 16 (the one pair of bfloat16 decode steps that needs the shuffle port).
POSENC_OPS_INLINE void load_even_odd(const bfloat16* p, __m512& e, __m512& o) {
  const __m512i x = _mm512_loadu_si512(p);
  e = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)), o = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
// clang-format on

#include <posenc/kernels/ops/generic.inl>

}  // namespace avx512
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_X86_KERNELS
