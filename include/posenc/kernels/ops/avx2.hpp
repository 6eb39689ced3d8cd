// posenc/kernels/ops/avx2.hpp — AVX2+FMA+F16C operations: 8 floats or 4 doubles per vector.
//
// The vocabulary is listed in ops/generic.hpp. Compiled in an AVX2 target region, so the TU needs
// no -m flag; the dispatcher runs it only on CPUs with AVX2, FMA and F16C.
#pragma once

#include <posenc/kernels/ops/generic.hpp>

#if POSENC_HAS_X86_KERNELS
#include <algorithm>
#include <immintrin.h>
#include <type_traits>

#include <posenc/kernels/ops/begin_avx2.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx2 {
namespace self = avx2;  // this ISA, for qualified calls from the drivers

template <class T>
struct vec_of {
  using type = __m256;
};
template <>
struct vec_of<double> {
  using type = __m256d;
};
template <class T>
using vec = typename vec_of<std::remove_const_t<T>>::type;
template <class T>
inline constexpr int lanes = std::is_same_v<std::remove_const_t<T>, double> ? 4 : 8;
using ivec = __m256i;
inline constexpr std::size_t vector_bytes = 32;
inline constexpr int vector_registers = 16;  // architectural vector registers
inline constexpr bool has_stream = true;

// clang-format off
POSENC_OPS_INLINE __m256  set(float x)  { return _mm256_set1_ps(x); }
POSENC_OPS_INLINE __m256d set(double x) { return _mm256_set1_pd(x); }
POSENC_OPS_INLINE __m256  add(__m256 a, __m256 b)   { return _mm256_add_ps(a, b); }
POSENC_OPS_INLINE __m256d add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
POSENC_OPS_INLINE __m256  sub(__m256 a, __m256 b)   { return _mm256_sub_ps(a, b); }
POSENC_OPS_INLINE __m256d sub(__m256d a, __m256d b) { return _mm256_sub_pd(a, b); }
POSENC_OPS_INLINE __m256  mul(__m256 a, __m256 b)   { return _mm256_mul_ps(a, b); }
POSENC_OPS_INLINE __m256d mul(__m256d a, __m256d b) { return _mm256_mul_pd(a, b); }
POSENC_OPS_INLINE __m256  max(__m256 a, __m256 b)   { return _mm256_max_ps(a, b); }
POSENC_OPS_INLINE __m256d max(__m256d a, __m256d b) { return _mm256_max_pd(a, b); }
POSENC_OPS_INLINE __m256  fma(__m256 a, __m256 b, __m256 c)    { return _mm256_fmadd_ps(a, b, c); }
POSENC_OPS_INLINE __m256d fma(__m256d a, __m256d b, __m256d c) { return _mm256_fmadd_pd(a, b, c); }
POSENC_OPS_INLINE __m256  fms(__m256 a, __m256 b, __m256 c)    { return _mm256_fmsub_ps(a, b, c); }
POSENC_OPS_INLINE __m256d fms(__m256d a, __m256d b, __m256d c) { return _mm256_fmsub_pd(a, b, c); }
POSENC_OPS_INLINE __m256  fnma(__m256 a, __m256 b, __m256 c)    { return _mm256_fnmadd_ps(a, b, c); }
POSENC_OPS_INLINE __m256d fnma(__m256d a, __m256d b, __m256d c) { return _mm256_fnmadd_pd(a, b, c); }
// A product the compiler may not fuse into an FMA (keeps the scalar kernel's two roundings).
// A value the compiler must keep in a register (see ops/avx512.hpp).
POSENC_OPS_INLINE __m256  in_register(__m256 v)  { asm("" : "+v"(v)); return v; }
POSENC_OPS_INLINE __m256d in_register(__m256d v) { asm("" : "+v"(v)); return v; }
POSENC_OPS_INLINE __m256  mul_rounded(__m256 a, __m256 b)   { __m256 r = _mm256_mul_ps(a, b); asm("" : "+v"(r)); return r; }
POSENC_OPS_INLINE __m256d mul_rounded(__m256d a, __m256d b) { __m256d r = _mm256_mul_pd(a, b); asm("" : "+v"(r)); return r; }
// The lanes folded by op in one written order (the two 128-bit halves, then within 128 bits):
// hsum adds them, hmax takes their maximum.
struct fold_add {
  POSENC_OPS_INLINE __m128  operator()(__m128 a, __m128 b) const   { return _mm_add_ps(a, b); }
  POSENC_OPS_INLINE __m128d operator()(__m128d a, __m128d b) const { return _mm_add_pd(a, b); }
};
struct fold_max {
  POSENC_OPS_INLINE __m128  operator()(__m128 a, __m128 b) const   { return _mm_max_ps(a, b); }
  POSENC_OPS_INLINE __m128d operator()(__m128d a, __m128d b) const { return _mm_max_pd(a, b); }
};
template <class Op>
POSENC_OPS_INLINE float fold(__m256 v, Op op) {
  __m128 s = op(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = op(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(op(s, _mm_movehdup_ps(s)));
}
template <class Op>
POSENC_OPS_INLINE double fold(__m256d v, Op op) {
  const __m128d s = op(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(op(s, _mm_unpackhi_pd(s, s)));
}
POSENC_OPS_INLINE float  hsum(__m256 v)  { return fold(v, fold_add{}); }
POSENC_OPS_INLINE double hsum(__m256d v) { return fold(v, fold_add{}); }
POSENC_OPS_INLINE float  hmax(__m256 v)  { return fold(v, fold_max{}); }
POSENC_OPS_INLINE double hmax(__m256d v) { return fold(v, fold_max{}); }

POSENC_OPS_INLINE __m256  flip(__m256 a, __m256 m)    { return _mm256_xor_ps(a, m); }
POSENC_OPS_INLINE __m256d flip(__m256d a, __m256d m)  { return _mm256_xor_pd(a, m); }
POSENC_OPS_INLINE __m256  sign_mask(__m256, bool on)  { return on ? _mm256_set1_ps(-0.f) : _mm256_setzero_ps(); }
POSENC_OPS_INLINE __m256d sign_mask(__m256d, bool on) { return on ? _mm256_set1_pd(-0.0) : _mm256_setzero_pd(); }
POSENC_OPS_INLINE __m256  even_sign(__m256)  { return _mm256_setr_ps(-0.f, 0.f, -0.f, 0.f, -0.f, 0.f, -0.f, 0.f); }
POSENC_OPS_INLINE __m256d even_sign(__m256d) { return _mm256_setr_pd(-0.0, 0.0, -0.0, 0.0); }
POSENC_OPS_INLINE __m256  swap_pairs(__m256 x)  { return _mm256_permute_ps(x, 0xB1); }
POSENC_OPS_INLINE __m256d swap_pairs(__m256d x) { return _mm256_permute_pd(x, 0x5); }
POSENC_OPS_INLINE __m256  dup_lo(__m256 c)  { return _mm256_permutevar8x32_ps(c, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3)); }
POSENC_OPS_INLINE __m256  dup_hi(__m256 c)  { return _mm256_permutevar8x32_ps(c, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7)); }
POSENC_OPS_INLINE __m256d dup_lo(__m256d c) { return _mm256_permute4x64_pd(c, 0x50); }
POSENC_OPS_INLINE __m256d dup_hi(__m256d c) { return _mm256_permute4x64_pd(c, 0xFA); }

POSENC_OPS_INLINE __m256  load(const float* p)  { return _mm256_loadu_ps(p); }
POSENC_OPS_INLINE __m256d load(const double* p) { return _mm256_loadu_pd(p); }
POSENC_OPS_INLINE __m256  load(const float16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
POSENC_OPS_INLINE void store(float* p, __m256 v)   { _mm256_storeu_ps(p, v); }
POSENC_OPS_INLINE void store(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
POSENC_OPS_INLINE void store(float16* p, __m256 v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
POSENC_OPS_INLINE void stream(float* p, __m256 v)   { _mm256_stream_ps(p, v); }
POSENC_OPS_INLINE void stream(double* p, __m256d v) { _mm256_stream_pd(p, v); }
POSENC_OPS_INLINE void stream(float16* p, __m256 v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
POSENC_OPS_INLINE void fence() { _mm_sfence(); }
#define POSENC_OPS_NATIVE_STREAM 1
// Masked loads and stores never touch the lanes they leave out.
POSENC_OPS_INLINE __m256i first32(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
POSENC_OPS_INLINE __m256i first64(int n) { return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3)); }
POSENC_OPS_INLINE __m256  load_n(const float* p, int n)  { return _mm256_maskload_ps(p, first32(n)); }
POSENC_OPS_INLINE __m256d load_n(const double* p, int n) { return _mm256_maskload_pd(p, first64(n)); }
POSENC_OPS_INLINE void store_n(float* p, __m256 v, int n)   { _mm256_maskstore_ps(p, first32(n), v); }
POSENC_OPS_INLINE void store_n(double* p, __m256d v, int n) { _mm256_maskstore_pd(p, first64(n), v); }

// Realigned rows (drivers/rotate.inl, as ops/avx512.hpp): lane l of realign(lo, hi, realign_index(V,
// k)) is lane L - k + l of lo for l < k, else lane l - k of hi. Two lane permutes and a blend (AVX2
// has no two-source permute); used once per angle vector, never per data vector. A 32-byte store
// 16 bytes off a 64-byte line splits the line every other vector: ggml's buffers at decode ran at
// 0.63-0.67 of aligned ones on Zen 4 (AVX2 kernels) before the aligned-stream path.
#define POSENC_OPS_NATIVE_REALIGN 1
inline constexpr bool has_realign = true;
struct realign_perm {
  __m256i index;  // lane l takes source lane (l - k) mod L (as int32 lanes)
  __m256i low;    // lanes l < k (taken from lo)
};
POSENC_OPS_INLINE realign_perm realign_index(__m256, int k) {
  const __m256i l = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return {_mm256_and_si256(_mm256_sub_epi32(l, _mm256_set1_epi32(k)), _mm256_set1_epi32(7)), _mm256_cmpgt_epi32(_mm256_set1_epi32(k), l)};
}
POSENC_OPS_INLINE realign_perm realign_index(__m256d, int k) {
  const __m256i l = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3), half = _mm256_setr_epi32(0, 1, 0, 1, 0, 1, 0, 1);
  const __m256i src = _mm256_and_si256(_mm256_sub_epi32(l, _mm256_set1_epi32(k)), _mm256_set1_epi32(3));
  return {_mm256_add_epi32(_mm256_add_epi32(src, src), half), _mm256_cmpgt_epi32(_mm256_set1_epi32(k), l)};
}
POSENC_OPS_INLINE __m256 realign(__m256 lo, __m256 hi, realign_perm i) {
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(hi, i.index), _mm256_permutevar8x32_ps(lo, i.index), _mm256_castsi256_ps(i.low));
}
POSENC_OPS_INLINE __m256d realign(__m256d lo, __m256d hi, realign_perm i) {
  return _mm256_castps_pd(realign(_mm256_castpd_ps(lo), _mm256_castpd_ps(hi), i));
}
POSENC_OPS_INLINE void store_aligned(float* p, __m256 v)   { _mm256_store_ps(p, v); }
POSENC_OPS_INLINE void store_aligned(double* p, __m256d v) { _mm256_store_pd(p, v); }
POSENC_OPS_INLINE __m256  load_aligned(const float* p)  { return _mm256_load_ps(p); }
POSENC_OPS_INLINE __m256d load_aligned(const double* p) { return _mm256_load_pd(p); }
// Lanes [k, L) or [0, k) of an aligned vector; the other lanes are neither read (zero) nor written.
POSENC_OPS_INLINE __m256i lanes_from32(int k) { return _mm256_cmpgt_epi32(_mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8), _mm256_set1_epi32(k)); }
POSENC_OPS_INLINE __m256i lanes_from64(int k) { return _mm256_cmpgt_epi64(_mm256_setr_epi64x(1, 2, 3, 4), _mm256_set1_epi64x(k)); }
POSENC_OPS_INLINE __m256  load_lanes_from(const float* p, int k)  { return _mm256_maskload_ps(p, lanes_from32(k)); }
POSENC_OPS_INLINE __m256d load_lanes_from(const double* p, int k) { return _mm256_maskload_pd(p, lanes_from64(k)); }
POSENC_OPS_INLINE __m256  load_lanes_below(const float* p, int k)  { return load_n(p, k); }
POSENC_OPS_INLINE __m256d load_lanes_below(const double* p, int k) { return load_n(p, k); }
// The partial stores are plain 128/64/32-bit stores picked by k: vmaskmovps/pd stores are
// microcoded on AMD (the two per call cost a decode call ~30 ns on Zen 4), and a copy through a
// buffer costs as much; the masked loads are cheap.
// Lanes [a, 4) / [0, b) of a 128-bit float vector x at p (p: x's lane 0).
POSENC_OPS_INLINE void store4_from(float* p, __m128 x, int a) {
  if (a == 0) _mm_storeu_ps(p, x);
  if (a == 1) _mm_store_ss(p + 1, _mm_shuffle_ps(x, x, 1));
  if (a == 3) _mm_store_ss(p + 3, _mm_shuffle_ps(x, x, 3));
  if (a == 1 || a == 2) _mm_storeh_pi(reinterpret_cast<__m64*>(p + 2), x);
}
POSENC_OPS_INLINE void store4_below(float* p, __m128 x, int b) {
  if (b == 4) _mm_storeu_ps(p, x);
  if (b == 2 || b == 3) _mm_storel_pi(reinterpret_cast<__m64*>(p), x);
  if (b == 1) _mm_store_ss(p, x);
  if (b == 3) _mm_store_ss(p + 2, _mm_movehl_ps(x, x));
}
POSENC_OPS_INLINE void store_lanes_from(float* p, __m256 v, int k) {
  if (k < 4) store4_from(p, _mm256_castps256_ps128(v), k);
  store4_from(p + 4, _mm256_extractf128_ps(v, 1), k < 4 ? 0 : k - 4);
}
POSENC_OPS_INLINE void store_lanes_below(float* p, __m256 v, int k) {
  store4_below(p, _mm256_castps256_ps128(v), k < 4 ? k : 4);
  if (k > 4) store4_below(p + 4, _mm256_extractf128_ps(v, 1), k - 4);
}
POSENC_OPS_INLINE void store_lanes_from(double* p, __m256d v, int k) {
  const __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
  if (k == 0) _mm_storeu_pd(p, lo);
  if (k == 1) _mm_storeh_pd(p + 1, lo);
  if (k <= 2) _mm_storeu_pd(p + 2, hi);
  if (k == 3) _mm_storeh_pd(p + 3, hi);
}
POSENC_OPS_INLINE void store_lanes_below(double* p, __m256d v, int k) {
  const __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
  if (k == 1) _mm_storel_pd(p, lo);
  if (k >= 2) _mm_storeu_pd(p, lo);
  if (k == 3) _mm_storel_pd(p + 2, hi);
}
// Lanes [0, k) of a, [k, L) of b.
POSENC_OPS_INLINE __m256  blend_from(__m256 a, __m256 b, int k)   { return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(lanes_from32(k))); }
POSENC_OPS_INLINE __m256d blend_from(__m256d a, __m256d b, int k) { return _mm256_blendv_pd(a, b, _mm256_castsi256_pd(lanes_from64(k))); }

#if !defined(POSENC_KERNELS_GENERIC_BF16)
#define POSENC_OPS_NATIVE_BF16 1
POSENC_OPS_INLINE __m256 load(const bfloat16* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}
// bfloat16::from_float per lane, left in the low 16 bits: RNE as x + 0x7fff + odd (odd from a compare,
// not a shift: shifts and shuffles share two ports), NaN made quiet by setting bit 22 first.
POSENC_OPS_INLINE __m256i bf16_bits(__m256 v) {
  const __m256i x = _mm256_castps_si256(v), bit = _mm256_set1_epi32(0x10000);
  const __m256i rne = _mm256_sub_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), _mm256_cmpeq_epi32(_mm256_and_si256(x, bit), bit));
  const __m256 qnan = _mm256_castsi256_ps(_mm256_or_si256(x, _mm256_set1_epi32(0x400000)));
  const __m256 r = _mm256_blendv_ps(_mm256_castsi256_ps(rne), qnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_srli_epi32(_mm256_castps_si256(r), 16);
}
POSENC_OPS_INLINE __m128i bf16_pack(__m256 v) {
  const __m256i r = bf16_bits(v);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
POSENC_OPS_INLINE void store(bfloat16* p, __m256 v)  { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), bf16_pack(v)); }
POSENC_OPS_INLINE void stream(bfloat16* p, __m256 v) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), bf16_pack(v)); }
// A block of 16 bfloat16 as v0 = elements 0-3, 8-11 and v1 = 4-7, 12-15 (one zero-unpack each): the
// order in which store2's 16-bit pack puts them back without a cross-lane shuffle; the angle loads
// below match it.
POSENC_OPS_INLINE void load2(const bfloat16* p, __m256& v0, __m256& v1) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), z = _mm256_setzero_si256();
  v0 = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, x)), v1 = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, x));
}
template <bool Stream>
POSENC_OPS_INLINE void store2(bfloat16* p, __m256 v0, __m256 v1) {
  const __m256i x = _mm256_packus_epi32(bf16_bits(v0), bf16_bits(v1));
  if constexpr (Stream) _mm256_stream_si256(reinterpret_cast<__m256i*>(p), x);
  else _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), x);
}
POSENC_OPS_INLINE void pair_angles(const bfloat16*, const float* c, __m256& c0, __m256& c1) {
  c0 = _mm256_blend_ps(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(c)), _mm256_broadcast_ps(reinterpret_cast<const __m128*>(c + 8)), 0xF0);
  c1 = _mm256_blend_ps(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(c + 4)), _mm256_broadcast_ps(reinterpret_cast<const __m128*>(c + 12)), 0xF0);
}
POSENC_OPS_INLINE void dup_angles(const bfloat16*, const float* c, __m256& c0, __m256& c1) {
  const __m256 x = load(c);
  c0 = _mm256_unpacklo_ps(x, x), c1 = _mm256_unpackhi_ps(x, x);
}
#endif

// Angle operations (kernels/drivers/angles.inl).
POSENC_OPS_INLINE __m256d nearest(__m256d x) { return _mm256_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/// Bit i set when |k[i]| >= limit or k[i] is NaN.
POSENC_OPS_INLINE unsigned far_lanes(__m256d k, double limit) {
  return static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(_mm256_andnot_pd(set(-0.0), k), set(limit), _CMP_NLT_UQ)));
}
/// Two double vectors as one float vector (a's lanes first); the integral q's as int32 lanes.
POSENC_OPS_INLINE __m256  narrow(__m256d a, __m256d b) { return _mm256_set_m128(_mm256_cvtpd_ps(b), _mm256_cvtpd_ps(a)); }
POSENC_OPS_INLINE __m256i quadrants(__m256d a, __m256d b) { return _mm256_set_m128i(_mm256_cvtpd_epi32(b), _mm256_cvtpd_epi32(a)); }
POSENC_OPS_INLINE void store_narrow(float* p, __m256d v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v)); }
/// sin and cos of q * pi/2 + y from sp = sin y and cp = cos y: swap on odd q, signs from q's bits.
POSENC_OPS_INLINE void by_quadrant(__m256d q, __m256d sp, __m256d cp, __m256d& s, __m256d& c) {
  const __m256i qi = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(q)), one = _mm256_set1_epi64x(1), two = _mm256_set1_epi64x(2);
  const __m256d swap = _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(qi, one), one));
  const __m256d sneg = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_and_si256(qi, two), 62));
  const __m256d cneg = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_and_si256(_mm256_add_epi64(qi, one), two), 62));
  s = _mm256_xor_pd(_mm256_blendv_pd(sp, cp, swap), sneg);
  c = _mm256_xor_pd(_mm256_blendv_pd(cp, sp, swap), cneg);
}
POSENC_OPS_INLINE void by_quadrant(__m256i q, __m256 sp, __m256 cp, __m256& s, __m256& c) {
  const __m256i one = _mm256_set1_epi32(1), two = _mm256_set1_epi32(2);
  const __m256 swap = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(q, one), one));
  const __m256 sneg = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(q, two), 30));
  const __m256 cneg = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(_mm256_add_epi32(q, one), two), 30));
  s = _mm256_xor_ps(_mm256_blendv_ps(sp, cp, swap), sneg);
  c = _mm256_xor_ps(_mm256_blendv_ps(cp, sp, swap), cneg);
}
// Attention tile operations (attention/fast/tile-inl.hpp).
POSENC_OPS_INLINE __m256 min(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
POSENC_OPS_INLINE __m256 div(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
POSENC_OPS_INLINE __m256 abs(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
POSENC_OPS_INLINE __m256 nearest(__m256 x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
POSENC_OPS_INLINE __m256 pow2(__m256 n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)); }
POSENC_OPS_INLINE __m256 keep_ge(__m256 x, __m256 lim, __m256 y) { return _mm256_and_ps(_mm256_cmp_ps(x, lim, _CMP_GE_OQ), y); }
POSENC_OPS_INLINE __m256 with_sign(__m256 m, __m256 s) { return _mm256_or_ps(m, _mm256_and_ps(s, _mm256_set1_ps(-0.0f))); }
POSENC_OPS_INLINE __m256 pick_gt(__m256 x, __m256 lim, __m256 a, __m256 b) { return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, lim, _CMP_GT_OQ)); }
POSENC_OPS_INLINE bool any_gt(__m256 x, __m256 lim) { return _mm256_movemask_ps(_mm256_cmp_ps(x, lim, _CMP_GT_OQ)) != 0; }
POSENC_OPS_INLINE __m256 set(float16 h) { return _mm256_set1_ps(_cvtsh_ss(h.bits)); }
POSENC_OPS_INLINE __m256 load(const std::int8_t* p) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))); }
// Four sums at once, scaled: out[0..3] = f x the lane sums of a, b, c, d (pairs interleaved and
// added, then the two 128-bit halves folded).
POSENC_OPS_INLINE void hsum4(__m256 a, __m256 b, __m256 c, __m256 d, float f, float* out) {
  const __m256 ab = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
  const __m256 cd = _mm256_add_ps(_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
  const __m256 x = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, 0x44), _mm256_shuffle_ps(ab, cd, 0xEE));
  const __m128 w = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  _mm_storeu_ps(out, _mm_mul_ps(w, _mm_set1_ps(f)));
}
// x[i] (row i of an 8 x 8 block) becomes column i: pairs, quads within 128-bit lanes, then the lanes.
POSENC_OPS_INLINE void transpose(__m256 (&x)[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) t[2 * i] = _mm256_unpacklo_ps(x[2 * i], x[2 * i + 1]), t[2 * i + 1] = _mm256_unpackhi_ps(x[2 * i], x[2 * i + 1]);
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44), u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44), u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int m = 0; m < 4; ++m) x[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20), x[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
}
// 16 bfloat16 (one 256-bit load) widened by parity: e = elements 0, 2, .., 14 and o = 1, 3, .., 15 (the
// top half of each 32-bit lane is the odd element's float, the bottom half shifted up the even one's).
POSENC_OPS_INLINE void load_even_odd(const bfloat16* p, __m256& e, __m256& o) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  e = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)), o = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
// clang-format on

#include <posenc/kernels/ops/generic.inl>

}  // namespace avx2
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_X86_KERNELS
