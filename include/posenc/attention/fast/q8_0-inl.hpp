// posenc/attention/fast/q8_0-inl.hpp — the attention tile microkernels over q8_0 K/V (core/q8_0.hpp,
// ggml's block_q8_0). NO include guard: fast/tile-inl.hpp includes it inside each ISA's target region
// and namespace, after its own kernels, whose traversals (qk_by_token, pv_by_head) these reuse.
//
// Rows are arrays of blocks (D, Dv % 32 == 0; token and head strides in blocks, dim stride 1). Each
// kernel dequantises in registers as it reads, L values at a time: the L quants widened to float,
// times the block's scale (load_i8, set1_half of the ISA's operations), which is exact in fp32 (a
// 7-bit by 11-bit product). Every product and sum is then the one the float kernel of tile-inl.hpp
// forms on the dequantised values, in the same order, so on one ISA a q8_0 call gives bit for bit
// what the float call on dequantize_row_q8_0's output gives (tests/attention/q8_0_attention_test.cpp).
// The cache is read once, 34 bytes per 32 values; nothing is dequantised outside the tiles.

#if defined(POSENC_ATTENTION_OPS_REGION)

// L values of a q8_0 row from value d (d % L == 0; L divides 32, so they lie in one block).
static inline vf load_q8(const block_q8_0* row, int d) {
  const block_q8_0& b = row[d / 32];
  return mul(load_i8(b.qs + d % 32), set1_half(b.d.bits));
}

// The in-place QK^T over q8_0 keys: qk_widen's rows4 / rows4x4 / row1 (same accumulators, same order:
// pairs of vectors at d and d + L), one block's scale broadcast for its 32 / (2L) pairs.
struct qk_q8 {
  const float* const* q;
  int D;
  float scale;

  POSENC_FORCE_INLINE void rows4(int r, const block_q8_0* k, float* out) const {
    const float *q0 = q[r], *q1 = q[r + 1], *q2 = q[r + 2], *q3 = q[r + 3];
    vf a0 = zero(), a1 = zero(), a2 = zero(), a3 = zero(), b0 = zero(), b1 = zero(), b2 = zero(), b3 = zero();
    for (int d0 = 0; d0 < D; d0 += 32) {
      const block_q8_0& blk = k[d0 / 32];
      const vf sc = set1_half(blk.d.bits);
      for (int o = 0; o < 32; o += 2 * L) {
        const int d = d0 + o;
        const vf x = mul(load_i8(blk.qs + o), sc), y = mul(load_i8(blk.qs + o + L), sc);
        a0 = fmadd(load(q0 + d), x, a0), b0 = fmadd(load(q0 + d + L), y, b0);
        a1 = fmadd(load(q1 + d), x, a1), b1 = fmadd(load(q1 + d + L), y, b1);
        a2 = fmadd(load(q2 + d), x, a2), b2 = fmadd(load(q2 + d + L), y, b2);
        a3 = fmadd(load(q3 + d), x, a3), b3 = fmadd(load(q3 + d + L), y, b3);
      }
    }
    reduce4(add(a0, b0), add(a1, b1), add(a2, b2), add(a3, b3), scale, out);
  }

  POSENC_FORCE_INLINE void rows4x4(int r, const block_q8_0* k, std::ptrdiff_t ks, float* out, std::ptrdiff_t os) const {
    const float* qr[4] = {q[r], q[r + 1], q[r + 2], q[r + 3]};
    vf acc[4][4];
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t)
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) acc[t][i] = zero();
    for (int d0 = 0; d0 < D; d0 += 32) {
      vf sc[4];
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) sc[t] = set1_half(k[t * ks + d0 / 32].d.bits);
      for (int o = 0; o < 32; o += 2 * L) {
        const int d = d0 + o;
        vf qa[4], qb[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) qa[i] = load(qr[i] + d), qb[i] = load(qr[i] + d + L);
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
          const std::int8_t* kq = k[t * ks + d0 / 32].qs + o;
          const vf x = mul(load_i8(kq), sc[t]), y = mul(load_i8(kq + L), sc[t]);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) acc[t][i] = fmadd(qb[i], y, fmadd(qa[i], x, acc[t][i]));
        }
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) reduce4(acc[0][i], acc[1][i], acc[2][i], acc[3][i], scale, out + i * os);
  }

  [[nodiscard]] POSENC_FORCE_INLINE float row1(int r, const block_q8_0* k) const {
    const float* qr = q[r];
    vf a = zero(), b = zero();
    for (int d0 = 0; d0 < D; d0 += 32) {
      const block_q8_0& blk = k[d0 / 32];
      const vf sc = set1_half(blk.d.bits);
      for (int o = 0; o < 32; o += 2 * L) {
        a = fmadd(load(qr + d0 + o), mul(load_i8(blk.qs + o), sc), a);
        b = fmadd(load(qr + d0 + o + L), mul(load_i8(blk.qs + o + L), sc), b);
      }
    }
    return reduce_add(add(a, b)) * scale;
  }
};

static inline void qk_heads_q8(const float* const* q, int Rg, int heads, const block_q8_0* k, std::ptrdiff_t ks,
                               std::ptrdiff_t hs, int n, int D, float scale, float* s, std::ptrdiff_t ss,
                               const void* pv, std::ptrdiff_t pv_ts, std::ptrdiff_t pv_hs, std::ptrdiff_t pv_bytes,
                               int k_more) {
  qk_by_token(qk_q8{q, D, scale}, Rg, heads, k, ks, hs, n, s, ss, pv, pv_ts, pv_hs, pv_bytes, k_more);
}

// The in-place PV over q8_0 values: NR rows x chunks of NV vectors (one block on AVX2 / AVX-512, half
// or a quarter of one below), each o column accumulating p[r][j] v[j][c] over j in order, as
// pv_direct_block does (the column blocking does not change any column's sums).
struct pv_q8_rows {
  static constexpr int NV = 4 * L <= 32 ? 4 : 32 / L;
  template <int NR>
  POSENC_FORCE_INLINE void run(const float* p, std::ptrdiff_t ps, const block_q8_0* v, std::ptrdiff_t vs, int n, int Dv,
                               float* o, std::ptrdiff_t os, std::uintptr_t pf, std::ptrdiff_t pf_step) const {
    for (int c = 0; c < Dv; c += NV * L, pf = 0) {
      vf acc[NR][NV];
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) acc[r][i] = load(o + r * os + c + i * L);
      for (int j = 0; j < n; ++j) {
        if (pf != 0) prefetch_l2(pf + static_cast<std::uintptr_t>(j * pf_step), pf_step);
        const block_q8_0& blk = v[j * vs + c / 32];
        const vf sc = set1_half(blk.d.bits);
        vf vv[NV];
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) vv[i] = mul(load_i8(blk.qs + c % 32 + i * L), sc);
#pragma GCC unroll 4
        for (int r = 0; r < NR; ++r) {
          const vf pb = set1(p[r * ps + j]);
#pragma GCC unroll 4
          for (int i = 0; i < NV; ++i) acc[r][i] = fmadd(pb, vv[i], acc[r][i]);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) store(o + r * os + c + i * L, acc[r][i]);
    }
  }
};

static inline void pv_heads_q8(const float* p, std::ptrdiff_t ps, int Rg, int heads, const block_q8_0* v,
                               std::ptrdiff_t vs, std::ptrdiff_t vhs, int n, int Dv, float* o, std::ptrdiff_t os,
                               const void* pf, std::ptrdiff_t pf_bytes) {
  pv_by_head(pv_q8_rows{}, p, ps, Rg, heads, v, vs, vhs, n, Dv, o, os, pf, pf_bytes);
}

// Prefill packing of a q8_0 key tile (pack_kt's L x L transposes on dequantised vectors) and value tile.
static inline void pack_kt_q8(const block_q8_0* k, std::ptrdiff_t ks, int nk, int D, float* kt, std::ptrdiff_t ldk) {
  int j = 0;
  for (; j + L <= nk; j += L)
    for (int d = 0; d < D; d += L) {
      vf x[L];
      for (int i = 0; i < L; ++i) x[i] = load_q8(k + (j + i) * ks, d);
      transpose(x);
      for (int i = 0; i < L; ++i) store(kt + (d + i) * ldk + j, x[i]);
    }
  for (; j < nk; ++j)
    for (int d = 0; d < D; ++d) kt[d * ldk + j] = k[j * ks + d / 32].value(d % 32);
}

static inline void pack_v_q8(const block_q8_0* v, std::ptrdiff_t vs, int nk, int Dv, float* vt, std::ptrdiff_t ldv) {
  for (int j = 0; j < nk; ++j)
    for (int d = 0; d < Dv; d += L) store(vt + j * ldv + d, load_q8(v + j * vs, d));
}

#endif  // POSENC_ATTENTION_OPS_REGION
