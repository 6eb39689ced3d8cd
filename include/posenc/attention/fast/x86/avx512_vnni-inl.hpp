// posenc/attention/fast/x86/avx512_vnni-inl.hpp — the decode (in-place) QK^T kernel for q8_0 keys on
// vpdpbusd (AVX512_VNNI: 64 u8 x s8 products summed four at a time into 16 int32 lanes per
// instruction): the q8_0 dot record's qk and prep_q. NO include guard: fast/x86/avx512.hpp includes it
// in the AVX-512 region (which enables AVX512_VNNI) and namespace kernels::avx512, after tile-inl.hpp.
//
// The default for q8_0 keys on CPUs with the instruction (fast_attention_options::q8_0_int8_dot_products;
// false keeps the widening kernels of fast/q8_0-inl.hpp). The instruction multiplies integers, so each
// query row is quantised once per call with one scale: dq = max_i |q_i| / 127 (fp32), qi_i =
// round(q_i / dq) in [-127, 127], ties to even. The products and each key block's 16-value partial
// sums are then exact in int32, and a score is
//     s = scale dq sum_b dk_b sum_{i in b} qi_i ki_i,
// rounded only where the partial sums are converted and scaled by dk_b in fp32. The error against the
// float kernel on the unquantised q is the quantisation of q, |q_i - dq qi_i| <= dq / 2:
//     |s - s_float| <= delta = scale (max |q| / 254) sum_i |k_i| <= scale D max|q| max|k| / 254,
// and on the output |out - sdpa| <= (exp(2 delta) - 1) max |v| plus the float bound
// (tests/attention/fast_q8_dot_test.cpp; against sdpa on the quantised q, the float bound alone).
// One scale per row rather than per block of 32 is what lets the kernel sum four query rows' integer
// lanes before any conversion: one conversion and one FMA per key block pair for four rows, where
// per-block query scales need both per row (measured: that form is slower than the widening kernel).
// vpdpbusd takes one unsigned operand: the keys are made unsigned (k + 128, an XOR of the sign bit)
// and each lane starts from -128 times the sum of its four query quants, prepared with q. Values (PV)
// keep the widening kernel: the probabilities are not quantised. A q row holding Inf or NaN gets a NaN
// scale, so that row's scores and output are NaN (the float kernel carries the Inf into the products
// and its softmax may then give finite weights); other rows are not affected.

#if defined(POSENC_ATTENTION_OPS_REGION)

// A prepared query row (prep_q_q8_dot) in floats, for D values padded to 64 (Dp): Dp int8 quants (Dp / 4
// floats), Dp / 4 int32 lane starts (-128 times the sum of the lane's four quants), then the scale dq;
// quants and starts past D are zero.
[[nodiscard]] constexpr int q8_dot_padded(int D) noexcept {
  return (D + 63) / 64 * 64;
}
[[nodiscard]] constexpr int q8_dot_floats(int D) noexcept {
  return q8_dot_padded(D) / 2 + 16;
}

// Keys against four (or one) prepared query rows, the kernel object of tile-inl.hpp's token-order
// traversal qk_by_token (as qk_bf16_dot).
struct qk_q8_dot {
  const float* const* q;
  int D;
  float scale;

  // Query row r's chunk c (values 64c .. 64c + 63): quants and lane starts.
  struct qchunk {
    __m512i qi, start;
  };
  [[nodiscard]] POSENC_FORCE_INLINE qchunk chunk(int r, int c) const {
    const float* p = q[r];
    return {_mm512_loadu_si512(reinterpret_cast<const std::int8_t*>(p) + 64 * c),
            _mm512_loadu_si512(p + q8_dot_padded(D) / 4 + 16 * c)};
  }
  [[nodiscard]] POSENC_FORCE_INLINE float dq(int r) const { return q[r][q8_dot_padded(D) / 2]; }
  // Blocks 2c and 2c + 1 of a key row (Pair; else block 2c alone, the last of D % 64 == 32, in the
  // low lanes, whose high lanes meet zero quants of q): quants made unsigned, and the scales.
  template <bool Pair>
  POSENC_FORCE_INLINE static void key(const block_q8_0* k, int c, __m512i& ku, __m512& dk) {
    const block_q8_0* b = k + 2 * c;
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs));
    const __m256i hi = Pair ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)) : _mm256_setzero_si256();
    ku = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), _mm512_set1_epi8(-128));
    const auto d1 = static_cast<short>(Pair ? b[1].d.bits : 0);
    dk = _mm512_cvtph_ps(_mm256_setr_m128i(_mm_set1_epi16(static_cast<short>(b[0].d.bits)), _mm_set1_epi16(d1)));
  }
  // Four rows' lane sums against one key chunk, folded: 128-bit lane L holds rows 0..3's sums over the
  // lane's 16 values (L = 0, 1: the first block, 2, 3: the second), exact.
  [[nodiscard]] POSENC_FORCE_INLINE static __m512i fold4(const qchunk (&x)[4], __m512i ku) {
    const __m512i a = _mm512_dpbusd_epi32(x[0].start, ku, x[0].qi), b = _mm512_dpbusd_epi32(x[1].start, ku, x[1].qi);
    const __m512i c = _mm512_dpbusd_epi32(x[2].start, ku, x[2].qi), d = _mm512_dpbusd_epi32(x[3].start, ku, x[3].qi);
    const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
    const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
  }
  // acc (lanes 4L + r) += key chunk c against rows r .. r + 3, scaled by the key's block scales
  template <bool Pair>
  POSENC_FORCE_INLINE static __m512 step4(const qchunk (&x)[4], const block_q8_0* k, int c, __m512 acc) {
    __m512i ku;
    __m512 dk;
    key<Pair>(k, c, ku, dk);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(fold4(x, ku)), dk, acc);
  }
  // scale dq_r for lanes 4t + r
  [[nodiscard]] POSENC_FORCE_INLINE __m512 row_scales(int r) const {
    return _mm512_mul_ps(_mm512_broadcast_f32x4(_mm_setr_ps(dq(r), dq(r + 1), dq(r + 2), dq(r + 3))),
                         _mm512_set1_ps(scale));
  }

  POSENC_FORCE_INLINE void rows4(int r, const block_q8_0* k, float* out) const {
    __m512 acc = _mm512_setzero_ps();
    int c = 0;
    for (; 64 * c + 64 <= D; ++c) {
      const qchunk x[4] = {chunk(r, c), chunk(r + 1, c), chunk(r + 2, c), chunk(r + 3, c)};
      acc = step4<true>(x, k, c, acc);
    }
    if (64 * c < D) {
      const qchunk x[4] = {chunk(r, c), chunk(r + 1, c), chunk(r + 2, c), chunk(r + 3, c)};
      acc = step4<false>(x, k, c, acc);
    }
    const __m512 h = _mm512_add_ps(acc, _mm512_maskz_shuffle_f32x4(0xFFFF, acc, acc, 0x4E));
    const __m512 s = _mm512_mul_ps(_mm512_add_ps(h, _mm512_maskz_shuffle_f32x4(0xFFFF, h, h, 0xB1)), row_scales(r));
    _mm_storeu_ps(out, _mm512_castps512_ps128(s));
  }

  // Four keys (k + t ks) against the same four query rows: row r + i's four scores to out + i os.
  POSENC_FORCE_INLINE void rows4x4(int r, const block_q8_0* k, std::ptrdiff_t ks, float* out, std::ptrdiff_t os) const {
    __m512 acc[4];
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) acc[t] = _mm512_setzero_ps();
    int c = 0;
    for (; 64 * c + 64 <= D; ++c) {
      const qchunk x[4] = {chunk(r, c), chunk(r + 1, c), chunk(r + 2, c), chunk(r + 3, c)};
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) acc[t] = step4<true>(x, k + t * ks, c, acc[t]);
    }
    if (64 * c < D) {
      const qchunk x[4] = {chunk(r, c), chunk(r + 1, c), chunk(r + 2, c), chunk(r + 3, c)};
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) acc[t] = step4<false>(x, k + t * ks, c, acc[t]);
    }
    // the four 128-bit lanes of each key summed (lanes 4t + r), scaled, then transposed to 4r + t
    const __m512 t01 =
        _mm512_add_ps(_mm512_shuffle_f32x4(acc[0], acc[1], 0x44), _mm512_shuffle_f32x4(acc[0], acc[1], 0xEE));
    const __m512 t23 =
        _mm512_add_ps(_mm512_shuffle_f32x4(acc[2], acc[3], 0x44), _mm512_shuffle_f32x4(acc[2], acc[3], 0xEE));
    const __m512 v = _mm512_add_ps(_mm512_shuffle_f32x4(t01, t23, 0x88), _mm512_shuffle_f32x4(t01, t23, 0xDD));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512 w = _mm512_permutexvar_ps(order, _mm512_mul_ps(v, row_scales(r)));
    _mm_storeu_ps(out, _mm512_extractf32x4_ps(w, 0));
    _mm_storeu_ps(out + os, _mm512_extractf32x4_ps(w, 1));
    _mm_storeu_ps(out + 2 * os, _mm512_extractf32x4_ps(w, 2));
    _mm_storeu_ps(out + 3 * os, _mm512_extractf32x4_ps(w, 3));
  }

  [[nodiscard]] POSENC_FORCE_INLINE float row1(int r, const block_q8_0* k) const {
    __m512 a = _mm512_setzero_ps();
    __m512i ku;
    __m512 dk;
    int c = 0;
    for (; 64 * c + 64 <= D; ++c) {
      const qchunk x = chunk(r, c);
      key<true>(k, c, ku, dk);
      a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(x.start, ku, x.qi)), dk, a);
    }
    if (64 * c < D) {
      const qchunk x = chunk(r, c);
      key<false>(k, c, ku, dk);
      a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(x.start, ku, x.qi)), dk, a);
    }
    return hsum(a) * (dq(r) * scale);
  }
};

// A query row prepared for qk_q8_dot (D % 32 == 0; out holds q8_dot_floats(D)), once per call by the
// driver. q / dq rounds in the current (default: to nearest even) mode, as std::nearbyint.
static inline void prep_q_q8_dot(const float* q, int D, float* out) {
  const int Dp = q8_dot_padded(D);
  auto* qi = reinterpret_cast<std::int8_t*>(out);
  std::memset(out, 0, static_cast<std::size_t>(q8_dot_floats(D)) * sizeof(float));
  __m512 m = _mm512_setzero_ps();
  __mmask16 bad = 0;  // Inf or NaN
  for (int i = 0; i < D; i += 16) {
    const __m512 x = _mm512_loadu_ps(q + i);
    m = _mm512_max_ps(m, _mm512_abs_ps(x));
    bad = static_cast<__mmask16>(bad | _mm512_fpclass_ps_mask(x, 0x99));  // QNaN, SNaN, +Inf, -Inf
  }
  const float d = bad == 0 ? _mm512_reduce_max_ps(m) / 127.0f : std::numeric_limits<float>::quiet_NaN();
  if (bad == 0 && d > 0)
    for (int i = 0; i < D; i += 16) {
      const __m512i n = _mm512_cvtps_epi32(_mm512_div_ps(_mm512_loadu_ps(q + i), _mm512_set1_ps(d)));
      _mm_storeu_si128(
          reinterpret_cast<__m128i*>(qi + i),
          _mm512_cvtepi32_epi8(_mm512_max_epi32(_mm512_set1_epi32(-127), _mm512_min_epi32(n, _mm512_set1_epi32(127)))));
    }
  for (int i = 0; i < Dp; i += 64) {  // -128 x the sum of each lane's four quants
    const __m512i sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), _mm512_loadu_si512(qi + i));
    _mm512_storeu_si512(out + Dp / 4 + i / 4, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7)));
  }
  out[Dp / 2] = d;
}

// qk_heads_q8 of q8_0-inl.hpp on vpdpbusd (same arguments, same traversal), q rows from prep_q_q8_dot.
static inline void qk_heads_q8_dot(const qk_in_place& a, const tile_rows<block_q8_0>& k) {
  qk_by_token(qk_q8_dot{a.q.rows, a.q.dim, a.scale}, a, k);
}

#endif  // POSENC_ATTENTION_OPS_REGION
