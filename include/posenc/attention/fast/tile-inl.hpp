// posenc/attention/fast/tile-inl.hpp — the attention tile kernels, written once over the operations
// vocabulary of kernels/ops (kernels/ops/generic.hpp). NO include guard: each target's attention
// header (fast/scalar.hpp, fast/x86/*.hpp, fast/arm/neon.hpp) includes this file inside its target
// region and its namespace kernels::<target>, after defining qk_block_rows and pv_block_rows (query
// rows per register block of the packed products). FL = lanes<float>, the floats per vector.
//
// Kernels (all float, fp32 accumulation; rows are addressed through pointer arrays so one call
// covers every query head of a GQA group and the K/V tile is read once for all of them; the records
// and their argument structs are in fast/tile_kernels.hpp):
//   qk_packed  s[r][j] = scale * sum_d q_r[d] * kt[d][j]   (kt: the key tile transposed, zero-padded)
//   pv_packed  o[r][c] (+)= sum_j p[r][j] * vt[j][c]       (vt: float, rows padded to 64; p in any layout)
//   qk_heads   s[r][j] = scale * sum_d q_r[d] * k_j,h(r)[d] (every kv head, token by token, read in
//              place: float/bf16/fp16; bf16 q rows come through split_q, see "pair order" below)
//   pv_heads   o[r][c] += sum_j p[r][j] * v_j,h(r)[c]       (every kv head, v_j read in place: float/bf16/fp16;
//              bf16 o rows in pair order until merge_o)
//   exp_sum    x[j] = exp(x[j] - m) for j < n, returns the sum (vectorised exp, see exp_v)
//   pack_kt / pack_v  the prefill packing of a K tile (transposed, FL x FL blocks) and a V tile (widened)
//   row_max (NaN when the row holds one), scale_row, add_row, add_const
//   row_max_add / exp_sum_add  row_max and exp_sum of x + t, x + t never stored (a bias row folded in)
//   softcap    x[j] = cap tanh(x[j] / cap) for j < n (logit soft-capping, see tanh_v)
// The q8_0 kernels (fast/q8_0-inl.hpp) are included at the end, over the same traversals, and
// make_attention_kernels() puts every kernel of the target into its records.
//
// exp_v: Cephes-style expf (round(x log2 e) split with a two-constant ln 2, degree-6 polynomial,
// 2^n by exponent arithmetic); inputs below -87.33 give exactly 0 (masked scores are -inf), inputs
// are clamped at 88. Measured max relative error vs exp in double: 1.2e-7 on [-87, 88]
// (tests/attention/fast_kernels_test.cpp checks 4e-7 for every ISA).
//
// tanh_v: Cephes-style tanhf. |x| <= 0.625: x (1 + x^2 P(x^2)) (degree-4 P); above: 1 - 2 /
// (exp(2|x|) + 1) with exp_v, the sign put back (no cancellation there: tanh >= 0.55). |x| >= 9.1
// gives exactly +-1 (2 / (e + 1) < 2^-25, and exp_v clamps at 88 so infinities give +-1 too); NaN
// takes the polynomial branch and stays NaN; -0 stays -0. Max relative error vs tanh in double:
// tests/attention/semantics_test.cpp checks 2.5e-7 for every ISA.
//
// Pair order (bfloat16 K/V on the in-place path): the kernels read each full block of 2 FL values of
// a row as one pair (load_pair), which for bfloat16 is load_even_odd's parity order: block
// [b, b + 2 FL) gives lanes b, b + 2, .. then b + 1, b + 3, ... The products are the exact ones of the
// in-order kernel (bf16 -> fp32 is exact); only the summation order differs. So the bfloat16 record's
// qk takes q rows rearranged once per call by split_q (its prep_q), and its pv leaves o's full 2 FL
// blocks in that order, put back once per row at the end of the work item by merge_o (its finish_o).
// Values past the last full block (D % 2 FL) stay in order. float and float16 read pairs in order.
//
// Compiles to nothing unless a target header defined POSENC_ATTENTION_OPS_REGION (so the header
// self-containment check can include it alone).

#if defined(POSENC_ATTENTION_OPS_REGION)

using vf = vec<float>;
static constexpr int FL = lanes<float>;
[[maybe_unused]] static constexpr int qk_mr = qk_block_rows;  // query rows per register block
[[maybe_unused]] static constexpr int pv_mr = pv_block_rows;
static constexpr int nv = 4;          // vectors across one column block of the packed kernels
static constexpr int cols = nv * FL;  // 64 / 32 / 16 / 4 columns: always divides the padded tile (64)

static inline vf exp_v(vf x) {
  const vf lo = set(-87.3365478515625f);
  const vf xx = min(max(x, lo), set(88.0f));
  const vf fx = nearest(mul(xx, set(1.44269504088896341f)));
  vf r = fma(fx, set(-0.693359375f), xx);
  r = fma(fx, set(2.12194440e-4f), r);
  vf p = set(1.9875691500e-4f);
  p = fma(p, r, set(1.3981999507e-3f));
  p = fma(p, r, set(8.3334519073e-3f));
  p = fma(p, r, set(4.1665795894e-2f));
  p = fma(p, r, set(1.6666665459e-1f));
  p = fma(p, r, set(5.0000001201e-1f));
  p = fma(p, mul(r, r), add(r, set(1.0f)));
  return keep_ge(x, lo, mul(p, pow2(fx)));
}

static inline vf tanh_v(vf x) {
  const vf ax = abs(x), lim = set(0.625f);
  const vf z = mul(x, x);
  vf p = set(-5.70498872745e-3f);
  p = fma(p, z, set(2.06390887954e-2f));
  p = fma(p, z, set(-5.37397155531e-2f));
  p = fma(p, z, set(1.33314422036e-1f));
  p = fma(p, z, set(-3.33332819422e-1f));
  const vf small = mul(x, fma(p, z, set(1.0f)));  // x (1 + x^2 P): keeps the sign of -0
  // Every lane on the polynomial (soft-capped logits mostly are: |l| < 0.625 cap): the exp form,
  // two thirds of the work, is skipped; the result is the same either way.
  if (!any_gt(ax, lim)) return small;
  const vf e = exp_v(add(ax, ax));
  const vf big = with_sign(sub(set(1.0f), div(set(2.0f), add(e, set(1.0f)))), x);
  return pick_gt(ax, lim, big, small);
}

// Asks for the cache lines of `bytes` bytes at address a into L2, or into L1 and L2 (l1: the CPU
// decodes faster so, fast/prefetch.hpp). A prefetch never faults, so a may lie past the end of the
// data; it is an integer for that reason. The kernels read l1 once, before their loops: the guard of
// decode_prefetch_l1's static is a call, around which the compiler keeps no vector register live (in
// a loop, it saved the accumulators to the stack and back at every step).
static inline void prefetch_l2(bool l1, std::uintptr_t a, std::ptrdiff_t bytes) {
#if defined(__GNUC__) || defined(__clang__)
  // The empty asm: GCC 12 deletes a loop of prefetches whose hint depends on a branch outside it.
  if (l1)
    for (std::ptrdiff_t x = 0; x < bytes; x += 64) {
      __builtin_prefetch(reinterpret_cast<const void*>(a + static_cast<std::uintptr_t>(x)), 0, 3);
      asm volatile("");
    }
  else
    for (std::ptrdiff_t x = 0; x < bytes; x += 64) {
      __builtin_prefetch(reinterpret_cast<const void*>(a + static_cast<std::uintptr_t>(x)), 0, 2);
      asm volatile("");
    }
#else
  static_cast<void>(l1), static_cast<void>(a), static_cast<void>(bytes);
#endif
}

// The 2 FL values at p as two vectors in pair order (see the banner): bfloat16 by parity, else in order.
template <class T>
static inline void load_pair(const T* p, vf& a, vf& b) {
  if constexpr (std::is_same_v<T, bfloat16>)
    load_even_odd(p, a, b);
  else
    a = load(p), b = load(p + FL);
}

// q row (D values) in bfloat16 pair order: each full 2 FL block as its even then its odd elements.
static inline void split_q(const float* q, int D, float* out) {
  int d = 0;
  for (; d + 2 * FL <= D; d += 2 * FL)
    for (int i = 0; i < FL; ++i) out[d + i] = q[d + 2 * i], out[d + FL + i] = q[d + 2 * i + 1];
  for (; d < D; ++d) out[d] = q[d];
}

// The inverse of split_q in place: an o row (Dv values) accumulated in pair order put back in order.
static inline void merge_o(float* o, int Dv) {
  for (int d = 0; d + 2 * FL <= Dv; d += 2 * FL) {
    float t[2 * FL];
    for (int i = 0; i < 2 * FL; ++i) t[i] = o[d + i];
    for (int i = 0; i < FL; ++i) o[d + 2 * i] = t[i], o[d + 2 * i + 1] = t[FL + i];
  }
}

// The first n (< FL) values of p, zero-filled (tails of rows whose length is not a multiple of FL).
template <class T>
static inline vf load_tail(const T* p, int n) {
  if constexpr (std::is_same_v<T, float>) {
    return load_n(p, n);
  } else {
    alignas(64) float buf[FL] = {};
    for (int i = 0; i < n; ++i) buf[i] = static_cast<float>(p[i]);
    return load(buf);
  }
}

// A register block of R rows x C vectors: filled with v, loaded from or stored to o (row r at
// o + r os, vector c at o + r os + c FL). The products start and end their blocks through these.
template <int R, int C>
static POSENC_FORCE_INLINE void fill_block(vf (&acc)[R][C], vf v) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[r][c] = v;
}
template <int R, int C>
static POSENC_FORCE_INLINE void load_block(vf (&acc)[R][C], const float* o, std::ptrdiff_t os) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[r][c] = load(o + r * os + c * FL);
}
template <int R, int C>
static POSENC_FORCE_INLINE void store_block(const vf (&acc)[R][C], float* o, std::ptrdiff_t os) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) store(o + r * os + c * FL, acc[r][c]);
}
// Four query rows q against one pair of key vectors at d: a[i] += q_i[d, d + FL) x, b[i] += q_i[d + FL, d + 2 FL) y.
static POSENC_FORCE_INLINE void fma_pair4(const float* const (&q)[4], int d, vf x, vf y, vf (&a)[4], vf (&b)[4]) {
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) a[i] = fma(load(q[i] + d), x, a[i]), b[i] = fma(load(q[i] + d + FL), y, b[i]);
}
// The four rows' sums a[i] + b[i], scaled, to out[0..3].
static POSENC_FORCE_INLINE void store_sums4(const vf (&a)[4], const vf (&b)[4], float scale, float* out) {
  hsum4(add(a[0], b[0]), add(a[1], b[1]), add(a[2], b[2]), add(a[3], b[3]), scale, out);
}
// Four keys x four query rows (acc[t][i]: key t, row i): row i's four sums, scaled, to out + i os, key t's
// at t cs (cs 1: one store per row).
static POSENC_FORCE_INLINE void store_sums4x4(const vf (&acc)[4][4], float scale, float* out, std::ptrdiff_t os,
                                              std::ptrdiff_t cs = 1) {
  if (cs == 1) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) hsum4(acc[0][i], acc[1][i], acc[2][i], acc[3][i], scale, out + i * os);
    return;
  }
  alignas(16) float t[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    hsum4(acc[0][i], acc[1][i], acc[2][i], acc[3][i], scale, t);
#pragma GCC unroll 4
    for (int x = 0; x < 4; ++x) out[i * os + x * cs] = t[x];
  }
}

// y[j] = f(x[j]) for j < n (y may be x), FL values at a time, the tail through a zero-filled buffer.
template <class F>
static POSENC_FORCE_INLINE void map_row(const float* x, float* y, int n, const F& f) {
  int j = 0;
  for (; j + FL <= n; j += FL) store(y + j, f(load(x + j)));
  if (j < n) {
    alignas(64) float buf[FL];
    store(buf, f(load_tail(x + j, n - j)));
    for (int i = 0; i < n - j; ++i) y[j + i] = buf[i];
  }
}
struct exp_op {
  POSENC_FORCE_INLINE vf operator()(vf v) const { return exp_v(v); }
};
struct tanh_op {
  POSENC_FORCE_INLINE vf operator()(vf v) const { return tanh_v(v); }
};
struct softcap_op {  // cap tanh(v / cap)
  vf cap, inv_cap;
  POSENC_FORCE_INLINE vf operator()(vf v) const { return mul(cap, tanh_v(mul(v, inv_cap))); }
};

static inline void exp_block(const float* x, float* y, int n) {
  map_row(x, y, n, exp_op{});
}
static inline void tanh_block(const float* x, float* y, int n) {
  map_row(x, y, n, tanh_op{});
}
// Logit soft-capping of a score row in place, x[j] = cap tanh(x[j] inv_cap) for j < n (one pass over
// a row still in L1, after QK^T and before the biases and the mask; only called when the option is set).
static inline void softcap_row(float* x, int n, float cap, float inv_cap) {
  map_row(x, x, n, softcap_op{set(cap), set(inv_cap)});
}

// The largest of x[0, n) (with t: of x[j] + t[j], the sums rounded as add_row rounds them), or NaN
// when one of them is NaN (a NaN logit makes its row NaN, as in sdpa; max() alone drops NaN on x86).
// keep_ge(v, v, 1) counts the ordered lanes (exact below 2^24).
template <bool Bias>
static POSENC_FORCE_INLINE float row_max_of(const float* x, const float* t, int n) {
  vf m = set(-__builtin_inff()), ordered = set(0.0f);
  const vf one = set(1.0f);
  int j = 0;
  for (; j + FL <= n; j += FL) {
    vf v = load(x + j);
    if constexpr (Bias) v = add(v, load(t + j));
    m = max(m, v);
    ordered = add(ordered, keep_ge(v, v, one));
  }
  float r = hmax(m);
  bool nan = hsum(ordered) != static_cast<float>(j);
  for (; j < n; ++j) {
    float v = x[j];
    if constexpr (Bias) v += t[j];
    r = v > r ? v : r;
    nan = nan || v != v;
  }
  return nan ? __builtin_nanf("") : r;
}
static inline float row_max(const float* x, int n) {
  return row_max_of<false>(x, nullptr, n);
}
static inline float row_max_add(const float* x, const float* t, int n) {
  return row_max_of<true>(x, t, n);
}

// x[j] = exp(x[j] - m) (with t: exp(x[j] + t[j] - m), the bias added first as add_row adds it),
// returns the sum; x is a padded row (n rounded up to FL is writable), t is read only below n.
template <bool Bias>
static POSENC_FORCE_INLINE float exp_sum_of(float* x, const float* t, int n, float m) {
  const vf mv = set(m);
  vf s = set(0.0f);
  int j = 0;
  for (; j + FL <= n; j += FL) {
    vf v = load(x + j);
    if constexpr (Bias) v = add(v, load(t + j));
    const vf e = exp_v(sub(v, mv));
    store(x + j, e);
    s = add(s, e);
  }
  float r = hsum(s);
  if (j < n) {
    alignas(64) float buf[FL];
    vf v = load_tail(x + j, n - j);
    if constexpr (Bias) v = add(v, load_tail(t + j, n - j));
    store(buf, exp_v(sub(v, mv)));
    for (int i = 0; i < n - j; ++i) {
      x[j + i] = buf[i];
      r += buf[i];
    }
  }
  return r;
}
static inline float exp_sum(float* x, int n, float m) {
  return exp_sum_of<false>(x, nullptr, n, m);
}
static inline float exp_sum_add(float* x, const float* t, int n, float m) {
  return exp_sum_of<true>(x, t, n, m);
}

// x[j] += t[j] and x[j] += c, j < n (the distance-table biases: vector stores, so the row_max that
// follows reads them back without store-forwarding stalls).
static inline void add_row(float* x, const float* t, int n) {
  int j = 0;
  for (; j + FL <= n; j += FL) store(x + j, add(load(x + j), load(t + j)));
  for (; j < n; ++j) x[j] += t[j];
}

static inline void add_const(float* x, float c, int n) {
  const vf cv = set(c);
  int j = 0;
  for (; j + FL <= n; j += FL) store(x + j, add(load(x + j), cv));
  for (; j < n; ++j) x[j] += c;
}

static inline void scale_row(float* x, int n, float f) {
  const vf fv = set(f);
  int j = 0;
  for (; j + FL <= n; j += FL) store(x + j, mul(load(x + j), fv));
  for (; j < n; ++j) x[j] *= f;
}

template <int MR>
static inline void qk_packed_block(const float* const* q, const float* kt, std::ptrdiff_t ldk, int D, float scale,
                                   float* s, std::ptrdiff_t ss) {
  vf acc[MR][nv];
  fill_block(acc, set(0.0f));
  for (int d = 0; d < D; ++d) {
    const float* kr = kt + d * ldk;
    vf kv[nv];
#pragma GCC unroll 16
    for (int v = 0; v < nv; ++v) kv[v] = load(kr + v * FL);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const vf qb = set(q[r][d]);
#pragma GCC unroll 16
      for (int v = 0; v < nv; ++v) acc[r][v] = fma(qb, kv[v], acc[r][v]);
    }
  }
  const vf sc = set(scale);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < nv; ++v) store(s + r * ss + v * FL, mul(acc[r][v], sc));
}

// Rows r < rows, columns [0, ldk) in blocks of 64 (kt is zero-padded, so padded columns give 0).
static inline void qk_packed(const packed_qk& a) {
  const float* const* q = a.q;
  const int rows = a.rows, D = a.dim;
  const float scale = a.scale, *kt = a.kt.p;
  const std::ptrdiff_t ldk = a.kt.stride, ss = a.s.stride;
  float* s = a.s.p;
  for (std::ptrdiff_t c = 0; c < ldk; c += cols) {
    int r = 0;
    for (; r + qk_mr <= rows; r += qk_mr) qk_packed_block<qk_mr>(q + r, kt + c, ldk, D, scale, s + r * ss + c, ss);
    if constexpr (qk_mr > 4)  // tails in blocks too (64 rows = 10 x 6 + 4)
      if (r + 4 <= rows) qk_packed_block<4>(q + r, kt + c, ldk, D, scale, s + r * ss + c, ss), r += 4;
    if constexpr (qk_mr > 2)
      if (r + 2 <= rows) qk_packed_block<2>(q + r, kt + c, ldk, D, scale, s + r * ss + c, ss), r += 2;
    for (; r < rows; ++r) qk_packed_block<1>(q + r, kt + c, ldk, D, scale, s + r * ss + c, ss);
  }
}

// o[r][c] (+)= sum_j p[r ps + j pe] vt[j][c]: p through a row stride ps and a key stride pe (pe = 1:
// the forward's layout; ps = 1: p given transposed, so the backward's P^T dO and dS^T Q need no
// transposed copy), o overwritten instead of accumulated when !accumulate. Forced inline, so
// pv_packed's call with constant pe and accumulate compiles to the plain kernel.
template <int MR>
static POSENC_FORCE_INLINE void pv_strided_block(const float* p, std::ptrdiff_t ps, std::ptrdiff_t pe, const float* vt,
                                                 std::ptrdiff_t vs, int n, float* o, std::ptrdiff_t os,
                                                 bool accumulate) {
  vf acc[MR][nv];
  if (accumulate)
    load_block(acc, o, os);
  else
    fill_block(acc, set(0.0f));
  for (int j = 0; j < n; ++j) {
    const float* vr = vt + j * vs;
    const float* pj = p + j * pe;
    vf vv[nv];
#pragma GCC unroll 16
    for (int v = 0; v < nv; ++v) vv[v] = load(vr + v * FL);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const vf pb = set(pj[r * ps]);
#pragma GCC unroll 16
      for (int v = 0; v < nv; ++v) acc[r][v] = fma(pb, vv[v], acc[r][v]);
    }
  }
  store_block(acc, o, os);
}

static POSENC_FORCE_INLINE void pv_strided(const float* p, std::ptrdiff_t ps, std::ptrdiff_t pe, int rows,
                                           const float* vt, std::ptrdiff_t vs, int n, int dvp, float* o,
                                           std::ptrdiff_t os, bool accumulate) {
  for (int c = 0; c < dvp; c += cols) {
    int r = 0;
    for (; r + pv_mr <= rows; r += pv_mr)
      pv_strided_block<pv_mr>(p + r * ps, ps, pe, vt + c, vs, n, o + r * os + c, os, accumulate);
    if constexpr (pv_mr > 4)
      if (r + 4 <= rows) pv_strided_block<4>(p + r * ps, ps, pe, vt + c, vs, n, o + r * os + c, os, accumulate), r += 4;
    if constexpr (pv_mr > 2)
      if (r + 2 <= rows) pv_strided_block<2>(p + r * ps, ps, pe, vt + c, vs, n, o + r * os + c, os, accumulate), r += 2;
    for (; r < rows; ++r) pv_strided_block<1>(p + r * ps, ps, pe, vt + c, vs, n, o + r * os + c, os, accumulate);
  }
}

// The packed PV of fast/tile_kernels.hpp: the forward's layout (key stride 1, accumulating) runs the
// kernel compiled for it, any other the strided one; both form the same products in the same order.
static inline void pv_packed(const packed_pv& a) {
  const float* vt = a.vt.p + a.first * a.vt.stride;
  if (a.key_stride == 1 && a.accumulate)
    pv_strided(a.p, a.row_stride, 1, a.rows, vt, a.vt.stride, a.keys, a.cols, a.o.p, a.o.stride, true);
  else
    pv_strided(a.p, a.row_stride, a.key_stride, a.rows, vt, a.vt.stride, a.keys, a.cols, a.o.p, a.o.stride,
               a.accumulate);
}

// Prefill packing of one key tile (rows j < nk at k + j ks, contiguous in d): kt[d ldk + j] = k_j[d]
// through FL x FL register transposes (edges one by one), and V rows widened to float, vt[j ldv + d].
template <class T>
static inline void pack_kt(const tile_rows<T>& rows, int D, float* kt, std::ptrdiff_t ldk) {
  const T* k = rows.p;
  const std::ptrdiff_t ks = rows.token_stride;
  const int nk = rows.keys;
  int j = 0;
  for (; j + FL <= nk; j += FL) {
    int d = 0;
    for (; d + FL <= D; d += FL) {
      vf x[FL];
      for (int i = 0; i < FL; ++i) x[i] = load(k + (j + i) * ks + d);
      transpose(x);
      for (int i = 0; i < FL; ++i) store(kt + (d + i) * ldk + j, x[i]);
    }
    for (; d < D; ++d)
      for (int i = 0; i < FL; ++i) kt[d * ldk + j + i] = static_cast<float>(k[(j + i) * ks + d]);
  }
  for (; j < nk; ++j)
    for (int d = 0; d < D; ++d) kt[d * ldk + j] = static_cast<float>(k[j * ks + d]);
}

template <class T>
static inline void pack_v(const tile_rows<T>& rows, int Dv, float* vt, std::ptrdiff_t ldv) {
  const T* v = rows.p;
  const std::ptrdiff_t vs = rows.token_stride;
  const int nk = rows.keys;
  for (int j = 0; j < nk; ++j) {
    int d = 0;
    for (; d + FL <= Dv; d += FL) store(vt + j * ldv + d, load(v + j * vs + d));
    for (; d < Dv; ++d) vt[j * ldv + d] = static_cast<float>(v[j * vs + d]);
  }
}

// The in-place QK^T (decode) kernel: one key row against the query rows of its GQA group. Four rows
// share each load of the key row (widened once for bf16/fp16, 2 FL values at a time in pair order, so
// bf16 q rows are split_q's); two accumulators per row halve the FMA chains, and the four sums come
// out of one transpose-and-add (reduce4).
template <class T>
struct qk_widen {
  const float* const* q;
  int D;
  float scale;

  POSENC_FORCE_INLINE void rows4(int r, const T* k, float* out) const {
    const float* const qr[4] = {q[r], q[r + 1], q[r + 2], q[r + 3]};
    vf a[4] = {set(0.0f), set(0.0f), set(0.0f), set(0.0f)}, b[4] = {set(0.0f), set(0.0f), set(0.0f), set(0.0f)};
    int d = 0;
    for (; d + 2 * FL <= D; d += 2 * FL) {
      vf x, y;
      load_pair(k + d, x, y);
      fma_pair4(qr, d, x, y, a, b);
    }
    if (d + FL <= D) {
      const vf x = load(k + d);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) a[i] = fma(load(qr[i] + d), x, a[i]);
      d += FL;
    }
    if (d < D) {
      const int t = D - d;
      const vf x = load_tail(k + d, t);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) b[i] = fma(load_tail(qr[i] + d, t), x, b[i]);
    }
    store_sums4(a, b, scale, out);
  }

  // Four keys (k + t ks, t < 4: one head's rows of four tokens) against the same four query rows: each q
  // vector is loaded once for the four keys, a quarter of rows4's q loads. Row r + i's four scores go to
  // out + i os, out[i os + t cs] for key t (cs 1: one reduce4 per row, four contiguous floats).
  POSENC_FORCE_INLINE void rows4x4(int r, const T* k, std::ptrdiff_t ks, float* out, std::ptrdiff_t os,
                                   std::ptrdiff_t cs = 1) const {
    const float* qr[4] = {q[r], q[r + 1], q[r + 2], q[r + 3]};
    vf acc[4][4];
    fill_block(acc, set(0.0f));
    int d = 0;
    for (; d + 2 * FL <= D; d += 2 * FL) {
      vf qa[4], qb[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) qa[i] = load(qr[i] + d), qb[i] = load(qr[i] + d + FL);
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        vf x, y;
        load_pair(k + t * ks + d, x, y);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) acc[t][i] = fma(qb[i], y, fma(qa[i], x, acc[t][i]));
      }
    }
    if (d + FL <= D) {
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        const vf x = load(k + t * ks + d);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) acc[t][i] = fma(load(qr[i] + d), x, acc[t][i]);
      }
      d += FL;
    }
    if (d < D) {
      const int n = D - d;
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        const vf x = load_tail(k + t * ks + d, n);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) acc[t][i] = fma(load_tail(qr[i] + d, n), x, acc[t][i]);
      }
    }
    store_sums4x4(acc, scale, out, os, cs);
  }

  [[nodiscard]] POSENC_FORCE_INLINE float row1(int r, const T* k) const {
    const float* qr = q[r];
    vf a = set(0.0f), b = set(0.0f);
    int d = 0;
    for (; d + 2 * FL <= D; d += 2 * FL) {
      vf x, y;
      load_pair(k + d, x, y);
      a = fma(load(qr + d), x, a);
      b = fma(load(qr + d + FL), y, b);
    }
    if (d + FL <= D) a = fma(load(qr + d), load(k + d), a), d += FL;
    if (d < D) b = fma(load_tail(qr + d, D - d), load_tail(k + d, D - d), b);
    return hsum(add(a, b)) * scale;
  }
};

// Every kv head of a decode item in address order. Kernels with rows4x4 (the default ones) take four
// tokens at a time, head by head (each q vector loaded once for four keys: in cache 1.3x faster than
// token by token); those four tokens' rows are read out of order, which the hardware prefetcher does
// not follow (1.1x slower than token by token from DRAM), so the K rows k_ahead tokens ahead are asked
// for into L2, spread evenly over the heads (4 to 16 tokens measured alike; the hint: fast/prefetch.hpp).
// Kernels without it (the vdpbf16ps one) go token by token: token j's rows of every head are one
// contiguous run, which the hardware prefetcher follows. Row r of head gi is q row gi Rg + r; its score
// for key j goes to s[(gi Rg + r) ss + j]. The V row of (token j, head gi) is asked for into L2 beside
// the QK^T of that row, so the V stream is sequential too and its prefetches are spread evenly between
// the products (all of a token's at once, or 8 tokens ahead in blocks of 4, stall once the miss buffers
// are full: measured 1.2-1.3x slower at DRAM size); the PV pass after this tile reads them head by head
// from L2.
static constexpr int k_ahead = 16;
// The PV side of qk_side_by_side's order: a tile of n keys read with `runs` (pv_in_place::runs) is four
// runs of run_length keys (0: one run), and its x-th key in that order is run_key(x, L).
static POSENC_FORCE_INLINE int run_length(int runs, int n) {
  return runs == 4 && n % 4 == 0 ? n / 4 : 0;
}
static POSENC_FORCE_INLINE int run_key(int x, int L) {
  return L == 0 ? x : (x & 3) * L + (x >> 2);
}
// The tile as four runs of L = n / 4 keys read side by side (qk_in_place::runs): keys m, m + L, m + 2L,
// m + 3L in one rows4x4 block, their scores stored in key order. Four hardware-prefetch streams advance
// together, which one head's rows read in a single run do not give the memory (the head-major read loop
// of bench/fast_attention_bench.cpp: 4 streams over 256-key tiles read ~1.2x faster than 1). Each run's
// K rows run_ahead keys ahead and the V rows of the block's keys are asked for into L2, as below.
static constexpr int run_ahead = 4;
template <class T, class Kern>
static inline void qk_side_by_side(const Kern& kern, const qk_in_place& a, const tile_rows<T>& rows) {
  const bool l1 = ::posenc::detail::decode_prefetch_l1();
  const int Rg = a.q.per_head, heads = a.q.heads, L = rows.keys / 4;
  const std::ptrdiff_t ks = rows.token_stride, hs = rows.head_stride, ss = a.s.stride, rs = L * ks;
  constexpr auto eb = static_cast<std::ptrdiff_t>(sizeof(T));
  const auto kb = reinterpret_cast<std::uintptr_t>(rows.p), va = reinterpret_cast<std::uintptr_t>(a.v);
  const std::ptrdiff_t k_part = ks * eb / heads;
  for (int m = 0; m < L; ++m)
    for (int gi = 0; gi < heads; ++gi) {
      for (int t = 0; t < 4; ++t) {
        if (t < 3 || m + run_ahead < L + a.k_more)  // the last run's rows ahead: not past the run
          prefetch_l2(l1, kb + static_cast<std::uintptr_t>(((m + run_ahead) * ks + t * rs + gi * hs) * eb), k_part);
        if (a.v != nullptr)
          prefetch_l2(l1, va + static_cast<std::uintptr_t>((m + t * L) * a.v_token_bytes + gi * a.v_head_bytes),
                      a.v_row_bytes);
      }
      for (int r = gi * Rg; r < (gi + 1) * Rg; r += 4)
        kern.rows4x4(r, rows.p + m * ks + gi * hs, rs, a.s.p + r * ss + m, ss, L);
    }
}

template <class T, class Kern>
static inline void qk_by_token(const Kern& kern, const qk_in_place& a, const tile_rows<T>& rows) {
  const bool l1 = ::posenc::detail::decode_prefetch_l1();
  const int Rg = a.q.per_head, heads = a.q.heads, n = rows.keys, k_more = a.k_more;
  const T* k = rows.p;
  const std::ptrdiff_t ks = rows.token_stride, hs = rows.head_stride, ss = a.s.stride;
  float* s = a.s.p;
  const void* pv = a.v;
  const std::ptrdiff_t pv_ts = a.v_token_bytes, pv_hs = a.v_head_bytes, pv_bytes = a.v_row_bytes;
  const auto va = reinterpret_cast<std::uintptr_t>(pv);
  int j0 = 0;
  if constexpr (requires(float* o) { kern.rows4x4(0, k, ks, o, ss); }) {
    if constexpr (requires(float* o) { kern.rows4x4(0, k, ks, o, ss, ss); }) {
      if (run_length(a.runs, n) > 0 && Rg % 4 == 0) {
        qk_side_by_side(kern, a, rows);
        return;
      }
    }
    for (; j0 + 4 <= n; j0 += 4) {  // four tokens at a time: one head's four key rows per query block
      const T* kj = k + j0 * ks;
      const auto ka = reinterpret_cast<std::uintptr_t>(k) +
                      static_cast<std::uintptr_t>((j0 + k_ahead) * ks * static_cast<std::ptrdiff_t>(sizeof(T)));
      const std::ptrdiff_t kpart = 4 * ks * static_cast<std::ptrdiff_t>(sizeof(T)) / heads;
      const bool ahead = j0 + k_ahead < n + k_more;  // not past the run (a paged block's end)
      for (int gi = 0; gi < heads; ++gi) {
        if (ahead) prefetch_l2(l1, ka + static_cast<std::uintptr_t>(gi * kpart), kpart);
        if (pv != nullptr)
          for (int t = 0; t < 4; ++t)
            prefetch_l2(l1, va + static_cast<std::uintptr_t>((j0 + t) * pv_ts + gi * pv_hs), pv_bytes);
        const int r0 = gi * Rg;
        int r = 0;
        for (; r + 4 <= Rg; r += 4) kern.rows4x4(r0 + r, kj + gi * hs, ks, s + (r0 + r) * ss + j0, ss);
        for (; r < Rg; ++r)
          for (int x = 0; x < 4; ++x) s[(r0 + r) * ss + j0 + x] = kern.row1(r0 + r, kj + x * ks + gi * hs);
      }
    }
  }
  for (int j = j0; j < n; ++j) {
    const T* kj = k + j * ks;
    for (int gi = 0; gi < heads; ++gi) {
      if (pv != nullptr) prefetch_l2(l1, va + static_cast<std::uintptr_t>(j * pv_ts + gi * pv_hs), pv_bytes);
      const int r0 = gi * Rg;
      int r = 0;
      for (; r + 4 <= Rg; r += 4) {
        alignas(16) float t[4];
        kern.rows4(r0 + r, kj + gi * hs, t);
        for (int i = 0; i < 4; ++i) s[(r0 + r + i) * ss + j] = t[i];
      }
      for (; r < Rg; ++r) s[(r0 + r) * ss + j] = kern.row1(r0 + r, kj + gi * hs);
    }
  }
}

template <class T>
static inline void qk_heads(const qk_in_place& a, const tile_rows<T>& k) {
  qk_by_token(qk_widen<T>{a.q.rows, a.q.dim, a.scale}, a, k);
}

// Up to 4 rows x one block of NV vectors of Dv, values read in place (NV even: in pairs, so o's block
// is in pair order); L > 0: the n keys as four runs of L side by side (qk_side_by_side's order).
template <class T, int NR, int NV>
static inline void pv_direct_block(const float* p, std::ptrdiff_t ps, const T* v, std::ptrdiff_t vs, int n, float* o,
                                   std::ptrdiff_t os, std::uintptr_t pf = 0, std::ptrdiff_t pf_step = 0, int L = 0) {
  const bool l1 = ::posenc::detail::decode_prefetch_l1();
  vf acc[NR][NV];
  load_block(acc, o, os);
  for (int x = 0; x < n; ++x) {
    if (pf != 0) prefetch_l2(l1, pf + static_cast<std::uintptr_t>(x * pf_step), pf_step);
    const int j = run_key(x, L);
    vf vv[NV];
    if constexpr (NV % 2 == 0) {
#pragma GCC unroll 4
      for (int c = 0; c < NV; c += 2) load_pair(v + j * vs + c * FL, vv[c], vv[c + 1]);
    } else {
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) vv[c] = load(v + j * vs + c * FL);
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const vf pb = set(p[r * ps + j]);
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) acc[r][c] = fma(pb, vv[c], acc[r][c]);
    }
  }
  store_block(acc, o, os);
}

template <class T, int NR>
static inline void pv_direct_rows(const float* p, std::ptrdiff_t ps, const T* v, std::ptrdiff_t vs, int n, int Dv,
                                  float* o, std::ptrdiff_t os, std::uintptr_t pf, std::ptrdiff_t pf_step, int L = 0) {
  int c = 0;
  for (; c + 4 * FL <= Dv; c += 4 * FL, pf = 0)
    pv_direct_block<T, NR, 4>(p, ps, v + c, vs, n, o + c, os, pf, pf_step, L);
  if (c + 2 * FL <= Dv) pv_direct_block<T, NR, 2>(p, ps, v + c, vs, n, o + c, os, 0, 0, L), c += 2 * FL;
  for (; c + FL <= Dv; c += FL) pv_direct_block<T, NR, 1>(p, ps, v + c, vs, n, o + c, os, 0, 0, L);
  if (c < Dv) {  // tail columns: o is padded, values are widened one by one
    for (int x = 0; x < n; ++x)
      for (int r = 0, j = run_key(x, L); r < NR; ++r) {
        const float pj = p[r * ps + j];
        for (int i = c; i < Dv; ++i) o[r * os + i] += pj * static_cast<float>(v[j * vs + i]);
      }
  }
}

// PV of every kv head of a decode tile, head by head (rows [gi Rg, (gi + 1) Rg) read head gi's values
// at v + gi vhs), in blocks of 4 rows: Rows::run<NR>(p, ps, v, vs, n, Dv, o, os) is the row kernel
// (pv_direct_rows here, the vdpbf16ps one in fast/x86/avx512_bf16-inl.hpp). The next key tile's K rows (pf_bytes
// at pf, or none) are asked for into L2 during this pass, a share per head spread over the keys of the
// head's first row block: the QK^T pass asks for this tile's V rows, so the memory requests stay spread
// over both passes (without it the PV pass issued none, and one core overlapped memory and compute badly).
template <class T, class Rows>
static inline void pv_by_head(Rows rows, const pv_in_place& args, const tile_rows<T>& values) {
  const float* p = args.p.p;
  float* o = args.o.p;
  const T* v = values.p;
  const std::ptrdiff_t ps = args.p.stride, os = args.o.stride, vs = values.token_stride, vhs = values.head_stride;
  const int Rg = args.per_head, heads = args.heads, n = values.keys, Dv = args.dim;
  const void* pf = args.k_next;
  const std::ptrdiff_t pf_bytes = args.k_next_bytes;
  const std::ptrdiff_t share = pf_bytes / heads, step = n > 0 ? (share / n + 63) / 64 * 64 : 0;
  for (int gi = 0; gi < heads; ++gi) {
    const float* pg = p + gi * Rg * ps;
    float* og = o + gi * Rg * os;
    const T* vg = v + gi * vhs;
    int r = 0;
    auto a =
        pf != nullptr && step > 0 ? reinterpret_cast<std::uintptr_t>(pf) + static_cast<std::uintptr_t>(gi * share) : 0;
    for (; r + 4 <= Rg; r += 4, a = 0) rows.template run<4>(pg + r * ps, ps, vg, vs, n, Dv, og + r * os, os, a, step);
    for (; r < Rg; ++r, a = 0) rows.template run<1>(pg + r * ps, ps, vg, vs, n, Dv, og + r * os, os, a, step);
  }
}

template <class T>
struct pv_widen_rows {
  int runs = 1;  // pv_in_place::runs
  template <int NR>
  POSENC_FORCE_INLINE void run(const float* p, std::ptrdiff_t ps, const T* v, std::ptrdiff_t vs, int n, int Dv,
                               float* o, std::ptrdiff_t os, std::uintptr_t pf, std::ptrdiff_t pf_step) const {
    pv_direct_rows<T, NR>(p, ps, v, vs, n, Dv, o, os, pf, pf_step, run_length(runs, n));
  }
};

template <class T>
static inline void pv_heads(const pv_in_place& a, const tile_rows<T>& v) {
  pv_by_head(pv_widen_rows<T>{a.runs}, a, v);
}

#include <posenc/attention/fast/q8_0-inl.hpp>  // the q8_0 K/V kernels, over the traversals above

// The record of storage T read by the widening kernels above (bfloat16 in pair order: q rows split,
// o rows merged).
template <class T>
static constexpr storage_kernels<T> widening_kernels() {
  constexpr bool pairs = std::is_same_v<T, bfloat16>;
  return {.pack_kt = &pack_kt<T>,
          .pack_v = &pack_v<T>,
          .qk = &qk_heads<T>,
          .pv = &pv_heads<T>,
          .prep_q = pairs ? &split_q : nullptr,
          .finish_o = pairs ? &merge_o : nullptr,
          .side_by_side = true};
}

/// This target's attention kernels (fast/tile_kernels.hpp), the one place that fills the table: the
/// float-tile record, one record per storage type, and the dot-product forms the target's header
/// adds in dot_forms (declared before this file is included; empty where the target has none).
/// One indirect call per tile, never per score.
static constexpr attention_kernels make_attention_kernels() {
  attention_kernels t{
      .tiles = {.qk_packed = &qk_packed,
                .pv_packed = &pv_packed,
                .row_max = &row_max,
                .exp_sum = &exp_sum,
                .row_max_add = &row_max_add,
                .exp_sum_add = &exp_sum_add,
                .scale_row = &scale_row,
                .add_row = &add_row,
                .add_const = &add_const,
                .softcap = &softcap_row,
                .exp = &exp_block,
                .tanh = &tanh_block,
                .lanes = FL},
      .f32 = widening_kernels<float>(),
      .bf16 = widening_kernels<bfloat16>(),
      .f16 = widening_kernels<float16>(),
      .q8_0 = {
          .pack_kt = &pack_kt_q8, .pack_v = &pack_v_q8, .qk = &qk_heads_q8, .pv = &pv_heads_q8, .side_by_side = true}};
  dot_forms(t);
  return t;
}

#endif  // POSENC_ATTENTION_OPS_REGION
