// posenc/attention/fast/q8_0-inl.hpp — the attention tile microkernels over q8_0 K/V (core/q8_0.hpp,
// ggml's block_q8_0): the q8_0 record's kernels. NO include guard: fast/tile-inl.hpp includes it
// inside each target's region and namespace, after its own kernels, whose traversals (qk_by_token,
// pv_by_head) these reuse.
//
// Rows are arrays of blocks (D, Dv % 32 == 0; token and head strides in blocks, dim stride 1). Each
// kernel dequantises in registers as it reads, FL values at a time: the FL quants widened to float,
// times the block's scale (load(const int8_t*), set(float16) of the operations), which is exact in fp32 (a
// 7-bit by 11-bit product). Every product and sum is then the one the float kernel of tile-inl.hpp
// forms on the dequantised values, in the same order, so on one ISA a q8_0 call gives bit for bit
// what the float call on dequantize_row_q8_0's output gives (tests/attention/q8_0_attention_test.cpp).
// The cache is read once, 34 bytes per 32 values; nothing is dequantised outside the tiles.

#if defined(POSENC_ATTENTION_OPS_REGION)

// FL values of a q8_0 row from value d (d % FL == 0; FL divides 32, so they lie in one block).
static inline vf load_q8(const block_q8_0* row, int d) {
  const block_q8_0& b = row[d / 32];
  return mul(load(b.qs + d % 32), set(b.d));
}

// The in-place QK^T over q8_0 keys: qk_widen's rows4 / rows4x4 / row1 (same accumulators, same order:
// pairs of vectors at d and d + FL), one block's scale broadcast for its 32 / (2 FL) pairs.
struct qk_q8 {
  const float* const* q;
  int D;
  float scale;

  POSENC_FORCE_INLINE void rows4(int r, const block_q8_0* k, float* out) const {
    const float* const qr[4] = {q[r], q[r + 1], q[r + 2], q[r + 3]};
    vf a[4] = {set(0.0f), set(0.0f), set(0.0f), set(0.0f)}, b[4] = {set(0.0f), set(0.0f), set(0.0f), set(0.0f)};
    for (int d0 = 0; d0 < D; d0 += 32) {
      const block_q8_0& blk = k[d0 / 32];
      const vf sc = set(blk.d);
      for (int o = 0; o < 32; o += 2 * FL)
        fma_pair4(qr, d0 + o, mul(load(blk.qs + o), sc), mul(load(blk.qs + o + FL), sc), a, b);
    }
    store_sums4(a, b, scale, out);
  }

  POSENC_FORCE_INLINE void rows4x4(int r, const block_q8_0* k, std::ptrdiff_t ks, float* out, std::ptrdiff_t os,
                                   std::ptrdiff_t cs = 1) const {
    const float* qr[4] = {q[r], q[r + 1], q[r + 2], q[r + 3]};
    vf acc[4][4];
    fill_block(acc, set(0.0f));
    for (int d0 = 0; d0 < D; d0 += 32) {
      vf sc[4];
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) sc[t] = set(k[t * ks + d0 / 32].d);
      for (int o = 0; o < 32; o += 2 * FL) {
        const int d = d0 + o;
        vf qa[4], qb[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) qa[i] = load(qr[i] + d), qb[i] = load(qr[i] + d + FL);
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
          const std::int8_t* kq = k[t * ks + d0 / 32].qs + o;
          const vf x = mul(load(kq), sc[t]), y = mul(load(kq + FL), sc[t]);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) acc[t][i] = fma(qb[i], y, fma(qa[i], x, acc[t][i]));
        }
      }
    }
    store_sums4x4(acc, scale, out, os, cs);
  }

  [[nodiscard]] POSENC_FORCE_INLINE float row1(int r, const block_q8_0* k) const {
    const float* qr = q[r];
    vf a = set(0.0f), b = set(0.0f);
    for (int d0 = 0; d0 < D; d0 += 32) {
      const block_q8_0& blk = k[d0 / 32];
      const vf sc = set(blk.d);
      for (int o = 0; o < 32; o += 2 * FL) {
        a = fma(load(qr + d0 + o), mul(load(blk.qs + o), sc), a);
        b = fma(load(qr + d0 + o + FL), mul(load(blk.qs + o + FL), sc), b);
      }
    }
    return hsum(add(a, b)) * scale;
  }
};

static inline void qk_heads_q8(const qk_in_place& a, const tile_rows<block_q8_0>& k) {
  qk_by_token(qk_q8{a.q.rows, a.q.dim, a.scale}, a, k);
}

// The in-place PV over q8_0 values: NR rows x chunks of NV vectors (one block on AVX2 / AVX-512, half
// or a quarter of one below), each o column accumulating p[r][j] v[j][c] over j in pv_direct_block's
// order (the column blocking does not change any column's sums).
struct pv_q8_rows {
  static constexpr int NV = 4 * FL <= 32 ? 4 : 32 / FL;
  int runs = 1;  // pv_in_place::runs
  template <int NR>
  POSENC_FORCE_INLINE void run(const float* p, std::ptrdiff_t ps, const block_q8_0* v, std::ptrdiff_t vs, int n, int Dv,
                               float* o, std::ptrdiff_t os, std::uintptr_t pf, std::ptrdiff_t pf_step) const {
    const bool l1 = ::posenc::detail::decode_prefetch_l1();
    for (int c = 0; c < Dv; c += NV * FL, pf = 0) {
      vf acc[NR][NV];
      load_block(acc, o + c, os);
      const int L = run_length(runs, n);
      for (int x = 0; x < n; ++x) {
        if (pf != 0) prefetch_l2(l1, pf + static_cast<std::uintptr_t>(x * pf_step), pf_step);
        const int j = run_key(x, L);
        const block_q8_0& blk = v[j * vs + c / 32];
        const vf sc = set(blk.d);
        vf vv[NV];
#pragma GCC unroll 4
        for (int i = 0; i < NV; ++i) vv[i] = mul(load(blk.qs + c % 32 + i * FL), sc);
#pragma GCC unroll 4
        for (int r = 0; r < NR; ++r) {
          const vf pb = set(p[r * ps + j]);
#pragma GCC unroll 4
          for (int i = 0; i < NV; ++i) acc[r][i] = fma(pb, vv[i], acc[r][i]);
        }
      }
      store_block(acc, o + c, os);
    }
  }
};

static inline void pv_heads_q8(const pv_in_place& a, const tile_rows<block_q8_0>& v) {
  pv_by_head(pv_q8_rows{.runs = a.runs}, a, v);
}

// Prefill packing of a q8_0 key tile (pack_kt's FL x FL transposes on dequantised vectors) and value tile.
static inline void pack_kt_q8(const tile_rows<block_q8_0>& rows, int D, float* kt, std::ptrdiff_t ldk) {
  const block_q8_0* k = rows.p;
  const std::ptrdiff_t ks = rows.token_stride;
  const int nk = rows.keys;
  int j = 0;
  for (; j + FL <= nk; j += FL)
    for (int d = 0; d < D; d += FL) {
      vf x[FL];
      for (int i = 0; i < FL; ++i) x[i] = load_q8(k + (j + i) * ks, d);
      transpose(x);
      for (int i = 0; i < FL; ++i) store(kt + (d + i) * ldk + j, x[i]);
    }
  for (; j < nk; ++j)
    for (int d = 0; d < D; ++d) kt[d * ldk + j] = k[j * ks + d / 32].value(d % 32);
}

static inline void pack_v_q8(const tile_rows<block_q8_0>& rows, int Dv, float* vt, std::ptrdiff_t ldv) {
  const block_q8_0* v = rows.p;
  const std::ptrdiff_t vs = rows.token_stride;
  const int nk = rows.keys;
  for (int j = 0; j < nk; ++j)
    for (int d = 0; d < Dv; d += FL) store(vt + j * ldv + d, load_q8(v + j * vs, d));
}

#endif  // POSENC_ATTENTION_OPS_REGION
