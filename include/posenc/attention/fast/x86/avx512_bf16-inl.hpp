// posenc/attention/fast/x86/avx512_bf16-inl.hpp — the QK^T and PV kernels for bfloat16 K/V on
// vdpbf16ps (AVX512_BF16: 32 bf16 products summed pairwise into 16 fp32 lanes per instruction): the
// bfloat16 dot record's decode (in-place) qk, pv and prep_q, and its prefill pair tiles (pack_kt,
// pack_v) and their products (qk_tile, pv_tile), below. NO include guard: fast/x86/avx512.hpp
// includes it in the AVX-512 region (which enables AVX512_BF16) and namespace kernels::avx512, after
// tile-inl.hpp.
//
// The default for bfloat16 K/V on CPUs with the instruction (fast_attention_options::bf16_dot_products,
// false for the exact kernels of tile-inl.hpp): the instruction multiplies bf16 by bf16,
// so q (for QK^T) and the probabilities p (for PV) are rounded to bfloat16 (round to nearest even,
// relative error <= 2^-9) before the products, where the default path widens K/V to float and keeps
// q and p in fp32. Bound (tests/attention/fast_bf16_dot_test.cpp):
//     |out - sdpa| <= 2^-8 (1 + A) max_j |v_j|      (A = max |logit|, as in attention/attention.hpp)
// from the scores' error <= 2^-9 A (each weight's relative error <= 2 x that) plus the rounding of p
// (2^-9 per weight); the prefill kernels form the same products (tests/attention/fast_bf16_dot_test.cpp
// checks both paths). It halves the instructions per cached byte, which is what bfloat16 decode needs
// to keep up with memory, and per prefill score. Used when D (for K) / Dv (for V) is a multiple of 32 and the CPU
// reports AVX512_BF16 (CPUID leaf 7 sub-leaf 1, EAX bit 5) besides the AVX-512 kernels; otherwise the default kernels
// run. Products of bf16 values are exact in fp32 unless subnormal.
//
// Subnormals: vdpbf16ps and vcvtne2ps2bf16 ignore MXCSR and treat subnormal inputs as 0 and flush
// subnormal results to 0 (Intel SDM). So a subnormal value v_j (|v_j| < 2^-126) counts as 0, a
// probability below 2^-126 too, and every accumulation step whose result is subnormal loses it:
// each costs at most 2^-126 per output element after the division by the row sum (>= 1), so the
// bound above becomes
//     |out - sdpa| <= 2^-8 (1 + A) max_j |v_j| + (Sk + 2) 2^-126
// (tests/attention/fast_bf16_subnormal_test.cpp; with every |v_j| subnormal the first term alone
// does not hold). Keys alike: a subnormal q or k element counts as 0, a logit error of at most
// scale (D + 2) 2^-126 max(1, |q|max), negligible against the 2^-9 A above for any finite q.

#if defined(POSENC_ATTENTION_OPS_REGION)

static inline __m512bh load_bf16_dot(const bfloat16* p) {
  return (__m512bh)_mm512_loadu_si512(p);
}
// 32 floats rounded to bfloat16 in order (cvtne2ps_pbh puts its second operand in the low half).
static inline __m512bh round_bf16_dot(const float* p) {
  return _mm512_cvtne2ps_pbh(_mm512_loadu_ps(p + 16), _mm512_loadu_ps(p));
}

// One key row against four (or one) query rows already rounded to bfloat16 (round_q_bf16_dot: row r at q[r], D
// bfloat16 in D / 2 floats), the kernel object of tile-inl.hpp's token-order traversal qk_by_token.
struct qk_bf16_dot {
  const float* const* q;
  int D;
  float scale;

  [[nodiscard]] POSENC_FORCE_INLINE __m512bh qrow(int r, int d) const {
    return (__m512bh)_mm512_loadu_si512(q[r] + d / 2);
  }

  POSENC_FORCE_INLINE void rows4(int r, const bfloat16* k, float* out) const {
    __m512 a[4], b[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) a[i] = b[i] = _mm512_setzero_ps();
    int d = 0;
    for (; d + 64 <= D; d += 64) {
      const __m512bh x = load_bf16_dot(k + d), y = load_bf16_dot(k + d + 32);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        a[i] = _mm512_dpbf16_ps(a[i], qrow(r + i, d), x);
        b[i] = _mm512_dpbf16_ps(b[i], qrow(r + i, d + 32), y);
      }
    }
    if (d < D) {
      const __m512bh x = load_bf16_dot(k + d);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) a[i] = _mm512_dpbf16_ps(a[i], qrow(r + i, d), x);
    }
    hsum4(_mm512_add_ps(a[0], b[0]), _mm512_add_ps(a[1], b[1]), _mm512_add_ps(a[2], b[2]), _mm512_add_ps(a[3], b[3]),
          scale, out);
  }

  // Four keys (k + t ks) against the same four query rows, as tile-inl.hpp's qk_widen::rows4x4: each q
  // vector loaded once for four keys; row r + i's four scores to out + i os.
  POSENC_FORCE_INLINE void rows4x4(int r, const bfloat16* k, std::ptrdiff_t ks, float* out, std::ptrdiff_t os) const {
    __m512 acc[4][4];
    fill_block(acc, set(0.0f));
    int d = 0;
    for (; d + 64 <= D; d += 64) {
      __m512bh qa[4], qb[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) qa[i] = qrow(r + i, d), qb[i] = qrow(r + i, d + 32);
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        const __m512bh x = load_bf16_dot(k + t * ks + d), y = load_bf16_dot(k + t * ks + d + 32);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) acc[t][i] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(acc[t][i], qa[i], x), qb[i], y);
      }
    }
    if (d < D) {
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        const __m512bh x = load_bf16_dot(k + t * ks + d);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) acc[t][i] = _mm512_dpbf16_ps(acc[t][i], qrow(r + i, d), x);
      }
    }
    store_sums4x4(acc, scale, out, os);
  }

  [[nodiscard]] POSENC_FORCE_INLINE float row1(int r, const bfloat16* k) const {
    __m512 a = _mm512_setzero_ps();
    for (int d = 0; d < D; d += 32) a = _mm512_dpbf16_ps(a, qrow(r, d), load_bf16_dot(k + d));
    return hsum(a) * scale;
  }
};

// A query row rounded to bfloat16 for qk_bf16_dot (D % 32 == 0; out holds D / 2 floats' worth), once per call
// by the driver into its per-call scratch.
static inline void round_q_bf16_dot(const float* q, int D, float* out) {
  for (int d = 0; d < D; d += 32) _mm512_storeu_si512(out + d / 2, (__m512i)round_bf16_dot(q + d));
}

// qk_heads of tile-inl.hpp on vdpbf16ps (same arguments, same traversal; D % 32 == 0), q rows from round_q_bf16_dot.
static inline void qk_heads_bf16_dot(const qk_in_place& a, const tile_rows<bfloat16>& k) {
  qk_by_token(qk_bf16_dot{a.q.rows, a.q.dim, a.scale}, a, k);
}

// NR rows x 64 (G = 2) or 32 (G = 1) columns over keys [0, m): key pairs (j, j + 1) interleaved
// lane by lane (unpack lo/hi of the two rows), so one vdpbf16ps adds p_j v_j + p_j+1 v_j+1; the
// accumulators hold the columns of o in unpack order (permuted in at the start, back at the end), so
// o goes through the pairs in order and a call over keys [0, a) then one over [a, m) (a even) give the
// bits of one call over [0, m): a paged tile block by block (fast/forward.hpp).
template <int NR, int G>
static inline void pv_bf16_dot_block(const std::uint32_t* pp, int pps, const bfloat16* v, std::ptrdiff_t vs, int m,
                                     float* o, std::ptrdiff_t os, std::uintptr_t pf, std::ptrdiff_t pf_step) {
  const bool l1 = ::posenc::detail::decode_prefetch_l1();
  const __m512i i0 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i i1 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  const __m512i u0 = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);  // inverse
  const __m512i u1 = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  __m512 acc[NR][2 * G];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) {
      const float* y = o + r * os + 32 * g;
      const __m512 lo = _mm512_loadu_ps(y), hi = _mm512_loadu_ps(y + 16);
      acc[r][2 * g] = _mm512_permutex2var_ps(lo, u0, hi);
      acc[r][2 * g + 1] = _mm512_permutex2var_ps(lo, u1, hi);
    }
  for (int j = 0; j < m; j += 2) {
    if (pf != 0) prefetch_l2(l1, pf + static_cast<std::uintptr_t>(j * pf_step), 2 * pf_step);
    __m512bh lo[G], hi[G];
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) {
      const __m512i a = _mm512_loadu_si512(v + j * vs + 32 * g);
      const __m512i b = j + 1 < m ? _mm512_loadu_si512(v + (j + 1) * vs + 32 * g) : _mm512_setzero_si512();
      lo[g] = (__m512bh)_mm512_unpacklo_epi16(a, b);
      hi[g] = (__m512bh)_mm512_unpackhi_epi16(a, b);
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const __m512bh pb = (__m512bh)_mm512_set1_epi32(static_cast<int>(pp[r * pps + j / 2]));
#pragma GCC unroll 2
      for (int g = 0; g < G; ++g) {
        acc[r][2 * g] = _mm512_dpbf16_ps(acc[r][2 * g], pb, lo[g]);
        acc[r][2 * g + 1] = _mm512_dpbf16_ps(acc[r][2 * g + 1], pb, hi[g]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) {
      float* y = o + r * os + 32 * g;
      _mm512_storeu_ps(y, _mm512_permutex2var_ps(acc[r][2 * g], i0, acc[r][2 * g + 1]));
      _mm512_storeu_ps(y + 16, _mm512_permutex2var_ps(acc[r][2 * g], i1, acc[r][2 * g + 1]));
    }
}

template <int NR>
static inline void pv_bf16_dot_rows(const float* p, std::ptrdiff_t ps, const bfloat16* v, std::ptrdiff_t vs, int n,
                                    int Dv, float* o, std::ptrdiff_t os, std::uintptr_t pf, std::ptrdiff_t pf_step) {
  constexpr int chunk = 128;  // keys whose p are rounded at a time (pairs of bf16 in one 32-bit word)
  alignas(64) std::uint32_t pp[NR][chunk / 2];
  for (int j0 = 0; j0 < n; j0 += chunk) {
    const int m = n - j0 < chunk ? n - j0 : chunk;
    for (int r = 0; r < NR; ++r)
      for (int x = 0; x < m; x += 32) {
        const float* px = p + r * ps + j0 + x;
        const int left = m - x;
        const auto first = [](int k) { return static_cast<__mmask16>(k >= 16 ? 0xFFFFu : (1u << k) - 1u); };
        const __m512 a = _mm512_maskz_loadu_ps(first(left), px);
        const __m512 b = left > 16 ? _mm512_maskz_loadu_ps(first(left - 16), px + 16) : _mm512_setzero_ps();
        _mm512_store_si512(&pp[r][x / 2], (__m512i)_mm512_cvtne2ps_pbh(b, a));
      }
    const bfloat16* vj = v + j0 * vs;
    int c = 0;
    const std::uintptr_t a = pf != 0 ? pf + static_cast<std::uintptr_t>(j0 * pf_step) : 0;
    for (; c + 64 <= Dv; c += 64)
      pv_bf16_dot_block<NR, 2>(&pp[0][0], chunk / 2, vj + c, vs, m, o + c, os, c == 0 ? a : 0, pf_step);
    for (; c < Dv; c += 32)
      pv_bf16_dot_block<NR, 1>(&pp[0][0], chunk / 2, vj + c, vs, m, o + c, os, c == 0 ? a : 0, pf_step);
  }
}

struct pv_bf16_dot {
  template <int NR>
  POSENC_FORCE_INLINE void run(const float* p, std::ptrdiff_t ps, const bfloat16* v, std::ptrdiff_t vs, int n, int Dv,
                               float* o, std::ptrdiff_t os, std::uintptr_t pf, std::ptrdiff_t pf_step) const {
    pv_bf16_dot_rows<NR>(p, ps, v, vs, n, Dv, o, os, pf, pf_step);
  }
};

// pv_heads of tile-inl.hpp on vdpbf16ps (Dv % 32 == 0; same arguments, same traversal).
static inline void pv_heads_bf16_dot(const pv_in_place& a, const tile_rows<bfloat16>& v) {
  pv_by_head(pv_bf16_dot{}, a, v);
}

// ---- prefill: the bfloat16 dot record's packed tiles and their products ----
//
// The K tile pair-interleaved along D: word kt[(d / 2) ld + j] = (k_j[d], k_j[d + 1]), low half d, which
// is a bfloat16 row read as 32-bit words, so the pack is the float pack's 16 x 16 transpose of words.
// The V tile pair-interleaved along keys: word vt[(j / 2) ld + c] = (v_j[c], v_j+1[c]), the partner of
// an odd last key 0. Then one vdpbf16ps adds two products per lane in both products: s[r][j] +=
// q_r[d] k_j[d] + q_r[d + 1] k_j[d + 1] (q pairs broadcast), o[r][c] += p_rj v_j[c] + p_r,j+1 v_j+1[c]
// (p pairs broadcast), half the instructions of the fp32 kernels per score.

// kt[(d / 2) ld + j] for keys j < rows.keys (D even).
static inline void pack_kt_bf16_dot(const tile_rows<bfloat16>& rows, int D, float* kt, std::ptrdiff_t ld) {
  const bfloat16* k = rows.p;
  const std::ptrdiff_t ks = rows.token_stride;
  const int nk = rows.keys, W = D / 2;
  int j = 0;
  for (; j + 16 <= nk; j += 16) {
    int w = 0;
    for (; w + 16 <= W; w += 16) {
      __m512 x[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) x[i] = _mm512_loadu_ps(k + (j + i) * ks + 2 * w);  // words as bits
      transpose(x);
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) _mm512_storeu_ps(kt + (w + i) * ld + j, x[i]);
    }
    for (; w < W; ++w)
      for (int i = 0; i < 16; ++i) std::memcpy(kt + w * ld + j + i, k + (j + i) * ks + 2 * w, 4);
  }
  for (; j < nk; ++j)
    for (int w = 0; w < W; ++w) std::memcpy(kt + w * ld + j, k + j * ks + 2 * w, 4);
}

// vt[(j / 2) ld + c] for keys j < rows.keys, c < Dv (Dv % 32 == 0); an odd last key's partner is 0.
static inline void pack_v_bf16_dot(const tile_rows<bfloat16>& rows, int Dv, float* vt, std::ptrdiff_t ld) {
  const __m512i i0 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i i1 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  const bfloat16* v = rows.p;
  const std::ptrdiff_t vs = rows.token_stride;
  const int nk = rows.keys;
  for (int j = 0; j < nk; j += 2) {
    float* out = vt + (j / 2) * ld;
    for (int c = 0; c < Dv; c += 32) {
      const __m512i a = _mm512_loadu_si512(v + j * vs + c);
      const __m512i b = j + 1 < nk ? _mm512_loadu_si512(v + (j + 1) * vs + c) : _mm512_setzero_si512();
      const __m512i lo = _mm512_unpacklo_epi16(a, b), hi = _mm512_unpackhi_epi16(a, b);  // 4-word groups
      _mm512_storeu_si512(out + c, _mm512_permutex2var_epi32(lo, i0, hi));
      _mm512_storeu_si512(out + c + 16, _mm512_permutex2var_epi32(lo, i1, hi));
    }
  }
}

// MR rows x 64 keys of s = scale q kt on the pair tile (q rows: round_q_bf16_dot's, D / 2 words).
template <int MR>
static inline void qk_tile_block_dot(const float* const* q, const float* kt, std::ptrdiff_t ldk, int D, float scale,
                                     float* s, std::ptrdiff_t ss) {
  __m512 acc[MR][4];
  fill_block(acc, _mm512_setzero_ps());
  for (int w = 0; w < D / 2; ++w) {
    const float* kr = kt + w * ldk;
    __m512bh kv[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) kv[v] = (__m512bh)_mm512_loadu_ps(kr + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh qb = (__m512bh)_mm512_set1_ps(q[r][w]);  // the pair (q[2w], q[2w + 1]) as bits
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], qb, kv[v]);
    }
  }
  const __m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(s + r * ss + 16 * v, _mm512_mul_ps(acc[r][v], sc));
}

// The record's qk_tile: packed_qk's contract on the pair tile (a.q: the prepared bfloat16 q rows).
static inline void qk_tile_bf16_dot(const packed_qk& a) {
  const int rows = a.rows, D = a.dim;
  const std::ptrdiff_t ldk = a.kt.stride, ss = a.s.stride;
  for (std::ptrdiff_t c = 0; c < ldk; c += 64) {
    const float* kt = a.kt.p + c;
    float* s = a.s.p + c;
    int r = 0;
    for (; r + 6 <= rows; r += 6) qk_tile_block_dot<6>(a.q + r, kt, ldk, D, a.scale, s + r * ss, ss);
    if (r + 4 <= rows) qk_tile_block_dot<4>(a.q + r, kt, ldk, D, a.scale, s + r * ss, ss), r += 4;
    if (r + 2 <= rows) qk_tile_block_dot<2>(a.q + r, kt, ldk, D, a.scale, s + r * ss, ss), r += 2;
    if (r < rows) qk_tile_block_dot<1>(a.q + r, kt, ldk, D, a.scale, s + r * ss, ss);
  }
}

// MR rows x 64 columns of o += p vt over the key pairs [m0, m1) of the pair tile, pp[r pps + m - m0] the
// rounded pair of row r; the first pair's words AND lo, the last's AND hi (a key outside the call: its
// value is zeroed, so 0 x Inf cannot arise). pv_pair_dot: one pair, its words AND keep.
template <int MR>
static POSENC_FORCE_INLINE void pv_pair_dot(__m512 (&acc)[MR][4], const std::uint32_t* pp, int pps, const float* vr,
                                            __m512i keep) {
  __m512bh w[4];
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) w[v] = (__m512bh)_mm512_and_si512(_mm512_loadu_si512(vr + 16 * v), keep);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const __m512bh pb = (__m512bh)_mm512_set1_epi32(static_cast<int>(pp[r * pps]));
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], pb, w[v]);
  }
}
template <int MR>
static inline void pv_tile_block_dot(const std::uint32_t* pp, int pps, const float* vt, std::ptrdiff_t ldv, int m0,
                                     int m1, __m512i lo, __m512i hi, float* o, std::ptrdiff_t os) {
  __m512 acc[MR][4];
  load_block(acc, o, os);
  pv_pair_dot<MR>(acc, pp, pps, vt + m0 * ldv, m0 + 1 == m1 ? _mm512_and_si512(lo, hi) : lo);
  for (int m = m0 + 1; m < m1 - 1; ++m) {  // the inner pairs: every key of the call
    __m512bh w[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) w[v] = (__m512bh)_mm512_loadu_si512(vt + m * ldv + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh pb = (__m512bh)_mm512_set1_epi32(static_cast<int>(pp[r * pps + m - m0]));
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], pb, w[v]);
    }
  }
  if (m0 + 1 < m1) pv_pair_dot<MR>(acc, pp + (m1 - 1 - m0), pps, vt + (m1 - 1) * ldv, hi);
  store_block(acc, o, os);
}

// Lanes i of 16 with lo <= i < hi.
static inline __mmask16 lanes_between(int lo, int hi) {
  lo = lo < 0 ? 0 : lo, hi = hi > 16 ? 16 : hi;
  return static_cast<__mmask16>(hi <= lo ? 0u : ((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

// MR rows of the record's pv_tile: p rounded to bfloat16 pairs once per 128 keys for every column block.
template <int MR>
static inline void pv_tile_rows_dot(const packed_pv& a, const float* p, float* o) {
  constexpr int chunk = 128;
  alignas(64) std::uint32_t pp[MR][chunk / 2];
  const int first = a.first, end = a.first + a.keys;
  const __m512i ones = _mm512_set1_epi32(-1);
  for (int k0 = first / 2 * 2; k0 < end; k0 += chunk) {  // key pairs from an even key
    const int k1 = end - k0 < chunk ? end : k0 + chunk, m0 = k0 / 2, m1 = (k1 + 1) / 2;
    for (int x = k0; x < k1; x += 32) {  // keys outside [first, end) read as 0
      const __mmask16 mu = lanes_between(first - x, end - x), mw = lanes_between(first - x - 16, end - x - 16);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const float* pr = p + r * a.row_stride + x;
        const __m512 u = _mm512_maskz_loadu_ps(mu, pr), w = _mm512_maskz_loadu_ps(mw, pr + 16);
        _mm512_store_si512(&pp[r][(x - k0) / 2], (__m512i)_mm512_cvtne2ps_pbh(w, u));
      }
    }
    const __m512i lo = k0 < first ? _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)) : ones;
    const __m512i hi = k1 == end && end % 2 != 0 ? _mm512_set1_epi32(0xFFFF) : ones;
    for (int c = 0; c < a.cols; c += 64)
      pv_tile_block_dot<MR>(&pp[0][0], chunk / 2, a.vt.p + c, a.vt.stride, m0, m1, lo, hi, o + c, a.o.stride);
  }
}

// The record's pv_tile: packed_pv's forward layout (key_stride 1, accumulating) on the pair tile.
static inline void pv_tile_bf16_dot(const packed_pv& a) {
  int r = 0;
  for (; r + 6 <= a.rows; r += 6) pv_tile_rows_dot<6>(a, a.p - a.first + r * a.row_stride, a.o.p + r * a.o.stride);
  if (r + 4 <= a.rows) pv_tile_rows_dot<4>(a, a.p - a.first + r * a.row_stride, a.o.p + r * a.o.stride), r += 4;
  if (r + 2 <= a.rows) pv_tile_rows_dot<2>(a, a.p - a.first + r * a.row_stride, a.o.p + r * a.o.stride), r += 2;
  if (r < a.rows) pv_tile_rows_dot<1>(a, a.p - a.first + r * a.row_stride, a.o.p + r * a.o.stride);
}

#endif  // POSENC_ATTENTION_OPS_REGION
