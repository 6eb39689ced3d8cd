// posenc/attention/fast/x86/avx2_vnni.hpp — the q8_0 key products on the VEX-encoded vpdpbusd
// (AVX-VNNI: 32 u8 x s8 products summed four at a time into 8 int32 lanes), for AVX2 CPUs that have
// the instruction (Intel since Alder Lake, with or without AVX-512; AMD Zen 5), in the AVX-VNNI region
// and namespace kernels::avx2_vnni; the AVX2 target (fast/x86/avx2.hpp) drives it from its traversal.
//
// fast/x86/avx512_vnni-inl.hpp at half the width: the same quantisation of each query row (one scale
// per row, dq = max|q| / 127 in fp32, quants rounded to nearest, ties to even), so the same bound
// (docs/attention.md, "Integer key products"); only the order of the fp32 sums differs. One 256-bit
// vector is one key block: four query rows' int32 lanes are folded per block, converted once and
// scaled by the block's dk with one FMA. Keys are made unsigned (an XOR of the sign bit) and each lane
// starts from -128 times the sum of its four query quants, prepared with q. The kernel methods are
// called, not inlined, from the AVX2 traversal (qk_by_token): the AVX2 region is compiled without
// AVX-VNNI, so that no AVX2 code can contain it. Values (PV) keep the widening kernel; CPUs without
// AVX-VNNI keep the widening key kernel.
#pragma once

#include <posenc/core/q8_0.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/kernels/ops/avx2.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <immintrin.h>
#include <limits>

#include <posenc/kernels/ops/begin_avx2_vnni.inl>

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx2_vnni {

// A prepared query row (prep_q) in floats, D % 32 == 0: D int8 quants (D / 4 floats), D / 4 int32 lane
// starts (-128 times the sum of the lane's four quants), then the scale dq.
[[nodiscard]] constexpr int prepared_floats(int D) noexcept {
  return D / 2 + 8;
}

// Keys against four (or one) prepared query rows, the kernel object of the AVX2 traversal qk_by_token
// (fast/x86/avx2.hpp: qk_heads_q8_dot).
struct qk_dot_q8 {
  const float* const* q;
  int D;
  float scale;

  struct qblock {
    __m256i qi, start;
  };
  // Query row r's block b (values 32b .. 32b + 31): quants and lane starts.
  [[nodiscard]] qblock block(int r, int b) const {
    const float* p = q[r];
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const std::int8_t*>(p) + 32 * b)),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + D / 4 + 8 * b))};
  }
  [[nodiscard]] float dq(int r) const { return q[r][D / 2]; }
  // Four rows' lane sums against key block b, folded (128-bit lane L: rows 0..3 over the block's values
  // 16L .. 16L + 15, exact), converted and scaled by the block's dk into acc.
  static __m256 step4(const qblock (&x)[4], const block_q8_0& kb, __m256 acc) {
    const __m256i ku =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(kb.qs)), _mm256_set1_epi8(-128));
    const __m256i a = _mm256_dpbusd_avx_epi32(x[0].start, ku, x[0].qi);
    const __m256i b = _mm256_dpbusd_avx_epi32(x[1].start, ku, x[1].qi);
    const __m256i c = _mm256_dpbusd_avx_epi32(x[2].start, ku, x[2].qi);
    const __m256i d = _mm256_dpbusd_avx_epi32(x[3].start, ku, x[3].qi);
    const __m256i ab = _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
    const __m256i cd = _mm256_add_epi32(_mm256_unpacklo_epi32(c, d), _mm256_unpackhi_epi32(c, d));
    const __m256i s = _mm256_add_epi32(_mm256_unpacklo_epi64(ab, cd), _mm256_unpackhi_epi64(ab, cd));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(_cvtsh_ss(kb.d.bits)), acc);
  }
  // lanes 0..3 of acc plus lanes 4..7 (the two halves of each block), times scale dq_r for lane r
  [[nodiscard]] __m128 finish(__m256 acc, int r) const {
    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    return _mm_mul_ps(h, _mm_mul_ps(_mm_setr_ps(dq(r), dq(r + 1), dq(r + 2), dq(r + 3)), _mm_set1_ps(scale)));
  }

  __attribute__((noinline)) void rows4(int r, const block_q8_0* k, float* out) const {
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < D / 32; ++b) {
      const qblock x[4] = {block(r, b), block(r + 1, b), block(r + 2, b), block(r + 3, b)};
      acc = step4(x, k[b], acc);
    }
    _mm_storeu_ps(out, finish(acc, r));
  }

  // Four keys (k + t ks) against the same four query rows: row r + i's four scores to out + i os.
  __attribute__((noinline)) void rows4x4(int r, const block_q8_0* k, std::ptrdiff_t ks, float* out,
                                         std::ptrdiff_t os) const {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int b = 0; b < D / 32; ++b) {
      const qblock x[4] = {block(r, b), block(r + 1, b), block(r + 2, b), block(r + 3, b)};
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) acc[t] = step4(x, k[t * ks + b], acc[t]);
    }
    __m128 w0 = finish(acc[0], r), w1 = finish(acc[1], r), w2 = finish(acc[2], r), w3 = finish(acc[3], r);
    _MM_TRANSPOSE4_PS(w0, w1, w2, w3);  // lanes: rows -> keys
    _mm_storeu_ps(out, w0);
    _mm_storeu_ps(out + os, w1);
    _mm_storeu_ps(out + 2 * os, w2);
    _mm_storeu_ps(out + 3 * os, w3);
  }

  [[nodiscard]] __attribute__((noinline)) float row1(int r, const block_q8_0* k) const {
    __m256 a = _mm256_setzero_ps();
    for (int b = 0; b < D / 32; ++b) {
      const qblock x = block(r, b);
      const __m256i ku =
          _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(k[b].qs)), _mm256_set1_epi8(-128));
      a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_dpbusd_avx_epi32(x.start, ku, x.qi)),
                          _mm256_set1_ps(_cvtsh_ss(k[b].d.bits)), a);
    }
    return avx2::hsum(a) * (dq(r) * scale);
  }
};

// A query row prepared for qk_dot_q8 (D % 32 == 0; out holds prepared_floats(D)), once per call by the
// driver; q / dq rounds in the current (default: to nearest even) mode, as std::nearbyint and as
// avx512_vnni::prep_q. A row holding Inf or NaN gets a NaN scale.
static inline void prep_q(const float* q, int D, float* out) {
  auto* qi = reinterpret_cast<std::int8_t*>(out);
  std::memset(out, 0, static_cast<std::size_t>(prepared_floats(D)) * sizeof(float));
  __m256 m = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
  for (int i = 0; i < D; i += 8) {
    const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_loadu_ps(q + i));
    m = _mm256_max_ps(m, a);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, _mm256_set1_ps(std::numeric_limits<float>::infinity()), _CMP_NLT_UQ));
  }
  const bool finite = _mm256_movemask_ps(bad) == 0;
  const float d = finite ? avx2::hmax(m) / 127.0f : std::numeric_limits<float>::quiet_NaN();
  if (finite && d > 0)
    for (int i = 0; i < D; i += 32) {
      __m256i n[4];
      for (int j = 0; j < 4; ++j) {
        const __m256i x = _mm256_cvtps_epi32(_mm256_div_ps(_mm256_loadu_ps(q + i + 8 * j), _mm256_set1_ps(d)));
        n[j] = _mm256_max_epi32(_mm256_set1_epi32(-127), _mm256_min_epi32(x, _mm256_set1_epi32(127)));
      }
      // bytes [n0 0-3, n1 0-3, n2 0-3, n3 0-3 | n0 4-7, ...]: dwords 0, 4, 1, 5, 2, 6, 3, 7 put them in order
      const __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qi + i),
                          _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
  for (int i = 0; i < D; i += 32) {  // -128 x the sum of each lane's four quants
    const __m256i sum = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1),
                                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qi + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + D / 4 + i / 4),
                        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sum, 7)));
  }
  out[D / 2] = d;
}

}  // namespace avx2_vnni
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_X86_KERNELS
