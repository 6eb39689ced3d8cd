// posenc/attention/fast/backward.hpp — the fused FlashAttention-2 backward behind
// posenc::attention_backward, on the forward's call description (docs/training.md).
//
// Dao 2023, FlashAttention-2 Algorithm 2, fp32: the forward hands out each row's log-sum-exp L_i;
// the backward recomputes every score tile from q, k and L_i (p_ij = exp(s_ij - L_i)), never an
// Sq x Sk buffer, and takes D_i = rowsum(dout_i * out_i). It is the forward's call (fast/call.hpp)
// planned as a backward (fast/plan.hpp: backward_plan), with the forward's stage 2 (fast/tables.hpp:
// hook-2 copies, tile summaries, the distance table, Shaw's tables) and the forward's score hooks
// (fast/scores.hpp); it adds only its inputs from the forward (out, L, dout, packed per query tile),
// its gradients, its work items and its reductions. Per (query tile, key tile) pair, five products
// on the float-tile kernels: S = Q K^T, dP = dO V^T, dV += P^T dO, dK += dS^T Q, dQ += dS K, with
// the hooks of sdpa_backward.hpp in between (soft-cap derivative, masks, distance-table and general
// biases, Shaw terms) and the encoder's parameter gradients accumulated inside the tiles through
// its accumulate_* hooks (T5 buckets, Shaw tables). DeBERTa's c2p and p2c terms are products over
// the distances each pair can see (relative_pair): q . aK and k . aQ gathered into S, dU binned by
// distance per row and per key, then dQ, dK and the tables' sums by the same kernels. CoPE: a pass
// per query tile (contextual_prepass) first keeps each row's gate sum after each key tile and its
// sum of dt slope before it; a pair then forms its positions, dt, the gates' dx (a prefix sum from
// the first key) and the products dq += aw e, dE += aw^T q (and q . v's for value gates).
// Work: one item per (sequence, kv head, lane); lane l owns the key tiles l, l + lanes, ..., so dK
// and dV rows have one writer; dQ and the parameter gradients go to per-item partials summed in item
// order. The cut depends on the shape only, so the result is bit-identical for any thread count.
// Memory: the per-call buffers and the per-item scratch live in the workspace (a call no larger than
// an earlier one allocates nothing); a lane's dQ partial of a query tile is cleared on its first
// write, and partials it never wrote are not summed. Not here: dropout, the weights output.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

#include <posenc/attention/fast/call.hpp>
#include <posenc/attention/fast/contextual.hpp>
#include <posenc/attention/fast/encoder_paths.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/attention/fast/options.hpp>
#include <posenc/attention/fast/plan.hpp>
#include <posenc/attention/fast/scores.hpp>
#include <posenc/attention/fast/tables.hpp>
#include <posenc/attention/fast/workspace.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/attention/rules.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0::detail {

/// The backward's call: the forward's description (float K/V) and what the backward adds: its inputs
/// packed per query tile, its gradients and their partials. Rows of a query tile are r = head in group
/// * nq + token, rows_max apart: qp [B][Hkv][nqt][rows_max][Dp], dop [..][dvp], off and drow [..].
template <class E>
struct backward_call : call<E, float, float> {
  std::ptrdiff_t lanes = 1, Dp = 0;             // the plan's lanes; D padded to 64
  const float *qp = nullptr, *dop = nullptr;    // q and dout rows, zero-padded
  const float *off = nullptr, *drow = nullptr;  // L_i less the table path's query bias (+inf: no key), D_i
  float* dk = nullptr;                          // w.r.t. the transformed k, contiguous [B, Sk, Hkv, D]
  float* dv = nullptr;                          // contiguous [B, Sk, Hkv, Dv]
  float* dqp = nullptr;                         // dQ partials [lanes][B][Hkv][nqt][rows_max][Dp]
  std::uint8_t* live = nullptr;                 // [lanes][B][Hkv][nqt]: the lane wrote that dQ partial
  std::ptrdiff_t n_params = 0;                  // encoder parameters whose gradient is asked for
  // CoPE, per row (tile_index + r) and key tile: the row's gate sum over the key tiles after it, and its
  // sum of dp = dt slope over the key tiles before it ([rows][nkt] each, from contextual_prepass)
  double *cope_after = nullptr, *cope_before = nullptr;

  [[nodiscard]] std::size_t tile_index(std::ptrdiff_t b, std::ptrdiff_t g, std::ptrdiff_t qt) const noexcept {
    return static_cast<std::size_t>(((b * this->p.Hkv + g) * this->p.nqt + qt) * this->p.rows_max);
  }
  [[nodiscard]] std::size_t rows() const noexcept {
    return static_cast<std::size_t>(this->p.B * this->p.Hkv * this->p.nqt * this->p.rows_max);
  }
  [[nodiscard]] float* dq_partial(std::ptrdiff_t lane, std::size_t ti) const noexcept {
    return dqp + (static_cast<std::size_t>(lane) * rows() + ti) * static_cast<std::size_t>(Dp);
  }
  [[nodiscard]] std::uint8_t& wrote(std::ptrdiff_t lane, std::ptrdiff_t b, std::ptrdiff_t g,
                                    std::ptrdiff_t qt) const noexcept {
    return live[((lane * this->p.B + b) * this->p.Hkv + g) * this->p.nqt + qt];
  }
};

/// One key tile of a backward item: its packed operands, its dK and dV, and the scratch of one
/// (query tile, key tile) pair.
struct backward_tile {
  std::ptrdiff_t j0 = 0;
  int nk = 0;
  float *kt, *vt, *kr;  // K^T [D][TK], V^T [Dv][TK], K [TK][Dp], zero-padded
  float *dka, *dva;     // the tile's dK [TK][Dp], dV [TK][dvp]
  float *s, *dp, *lc;   // per row, TK apart: scores then P; dP then dS; capped logits (soft-cap only)
  const float** qrows;  // the pair's q rows, then its dout rows
  const float** drows;
  std::uint8_t* mk;  // element mask of a partial pair [nq][TK]
};

/// The scratch of a backward item, laid out once.
template <class E>
backward_tile backward_scratch(const backward_call<E>& c, attention_scratch& sc) {
  const plan& p = c.p;
  const std::ptrdiff_t TK = p.TK, D = p.D, Dv = p.Dv, Dp = c.Dp, dvp = p.dvp, R0 = p.rows_max;
  backward_tile t;
  t.kt = grow(sc.f, static_cast<std::size_t>(D * TK + Dv * TK + 2 * TK * Dp + TK * dvp + 3 * R0 * TK));
  t.vt = t.kt + D * TK;
  t.kr = t.vt + Dv * TK;
  t.dka = t.kr + TK * Dp;
  t.dva = t.dka + TK * Dp;
  t.s = t.dva + TK * dvp;
  t.dp = t.s + R0 * TK;
  t.lc = t.dp + R0 * TK;
  t.qrows = grow(sc.rows, static_cast<std::size_t>(2 * R0));
  t.drows = t.qrows + R0;
  t.mk = grow(sc.mask, static_cast<std::size_t>(p.TQ * TK));
  return t;
}

/// Key tile kti of kv head g: K^T, V^T and K packed (zero-padded) by the records, its dK and dV cleared.
template <class E>
void load_backward_tile(const backward_call<E>& c, std::ptrdiff_t b, std::ptrdiff_t g, std::ptrdiff_t kti,
                        backward_tile& t) {
  const plan& p = c.p;
  const std::ptrdiff_t TK = p.TK, D = p.D, Dv = p.Dv, Dp = c.Dp;
  t.j0 = kti * TK;
  t.nk = static_cast<int>(std::min<std::ptrdiff_t>(TK, p.Sk - t.j0));
  std::fill(t.kt, t.kt + D * TK, 0.0f);
  std::fill(t.vt, t.vt + Dv * TK, 0.0f);
  std::fill(t.kr, t.kr + TK * Dp, 0.0f);
  std::fill(t.dka, t.dka + TK * Dp, 0.0f);
  std::fill(t.dva, t.dva + TK * p.dvp, 0.0f);
  pack_tile<true>(c.k_ops, c.k, b, g, t.j0, t.nk, D, t.kt, TK);
  pack_tile<true>(c.v_ops, c.v, b, g, t.j0, t.nk, Dv, t.vt, TK);
  pack_tile<false>(c.k_ops, c.k, b, g, t.j0, t.nk, D, t.kr, Dp);
}

/// Shaw's terms of row r into the scores and dP: scale q . aK into S, dO . aV into dP (the value term
/// adds 0 when there is none), from the forward's tables.
template <class E>
void shaw_scores(const backward_call<E>& c, const backward_tile& t, std::ptrdiff_t h, std::int64_t pos_q,
                 std::ptrdiff_t b, const float* qr, const float* dor, float* sr, float* dr) {
  const plan& p = c.p;
  for (int j = 0; j < t.nk; ++j) {
    const std::ptrdiff_t x = key_column(c, p.srange, pos_q, b, t.j0 + j);
    float a = 0;
    for (std::ptrdiff_t d = 0; d < p.D; ++d) a += qr[d] * c.t.shaw_key(h, d, x, p);
    sr[j] += c.scale * a;
    float w = 0;
    if (p.shaw_value) {
      const float* av = c.t.shaw_value(h, x, p);
      for (std::ptrdiff_t d = 0; d < p.Dv; ++d) w += dor[d] * av[d];
    }
    dr[j] += w;
  }
}

/// Shaw's gradients of row r: dQ += dU aK, and the tables' through the encoder's hooks
/// (d aK += dU q, d aV += P dO).
template <class E>
void shaw_gradients(const backward_call<E>& c, const backward_tile& t, std::ptrdiff_t h, std::int64_t pos_q,
                    std::ptrdiff_t b, const float* qr, const float* dor, const float* sr, const float* dr, float* dq,
                    std::span<double> pgrad) {
  const plan& p = c.p;
  for (int j = 0; j < t.nk; ++j) {
    if (sr[j] == 0) continue;
    const std::int64_t pos_k = c.pk[static_cast<std::size_t>(b * p.Sk + t.j0 + j)];
    const std::ptrdiff_t x = key_column(c, p.srange, pos_q, b, t.j0 + j);
    for (std::ptrdiff_t d = 0; d < p.D; ++d) dq[d] += dr[j] * c.t.shaw_key(h, d, x, p);
    if constexpr (trainable_relative_kv_encoding<E>)
      if (c.n_params > 0) {
        c.enc.accumulate_relative_key_gradient(h, pos_q, pos_k, static_cast<double>(dr[j]),
                                               std::span<const float>(qr, static_cast<std::size_t>(p.D)), pgrad);
        c.enc.accumulate_relative_value_gradient(h, pos_q, pos_k, static_cast<double>(sr[j]),
                                                 std::span<const float>(dor, static_cast<std::size_t>(p.Dv)), pgrad);
      }
  }
}

/// DeBERTa's terms of one (query tile, key tile) pair (c2p on Shaw's aK, p2c on aQ), as products over
/// the distances x0 .. x0 + cols - 1 the pair can see, per query head of the item (hn < G): qa [R][cols]
/// = q . aK, kq [G][TK][cols] = k . aQ; dU binned by distance, per row wq [R][cols] and per key wk
/// [G][TK][cols]; the tables' gradients summed in float per item, ga [G][2][sld + 64][Dp] (aK, aQ).
struct relative_pair {
  std::ptrdiff_t x0 = 0;
  int cols = 0;
  float *qa = nullptr, *kq = nullptr, *wq = nullptr, *wk = nullptr, *ga = nullptr;
};

/// The per-item gradient sums of DeBERTa's tables, cleared (a null pair without p2c).
template <class E>
relative_pair relative_item(const backward_call<E>& c, attention_scratch& sc) {
  relative_pair rp;
  if (!c.p.p2c) return rp;
  const auto n = static_cast<std::size_t>(c.p.G * 2 * (c.p.sld + 64) * c.Dp);
  rp.ga = grow(sc.relative, n);
  std::fill(rp.ga, rp.ga + n, 0.0f);
  return rp;
}

/// The pair's q . aK and k . aQ over its distance window (the PV kernel: q rows against aK^T, the
/// packed K^T read transposed against aQ^T), and the bins cleared.
template <class E>
void relative_products(const backward_call<E>& c, const backward_tile& t, attention_scratch& sc, const tile_summary& qs,
                       const tile_summary& ks, std::ptrdiff_t g, std::ptrdiff_t nq, const float* qp,
                       relative_pair& rp) {
  const plan& p = c.p;
  const std::ptrdiff_t TK = p.TK, G = p.G, R = G * nq, D = p.D;
  rp.x0 = table_index(p.srange, saturating_difference(ks.pmin, qs.pmax));
  const std::ptrdiff_t x1 = table_index(p.srange, saturating_difference(ks.pmax, qs.pmin));
  rp.cols = static_cast<int>((x1 - rp.x0 + 64) / 64 * 64);
  const auto cols = static_cast<std::size_t>(rp.cols), n = 2 * (static_cast<std::size_t>(R + G * TK)) * cols;
  rp.qa = grow(sc.p2c, n);
  rp.kq = rp.qa + static_cast<std::size_t>(R) * cols;
  rp.wq = rp.kq + static_cast<std::size_t>(G * TK) * cols;
  rp.wk = rp.wq + static_cast<std::size_t>(R) * cols;
  std::fill(rp.wq, rp.qa + n, 0.0f);
  for (std::ptrdiff_t hn = 0; hn < G; ++hn) {
    const std::ptrdiff_t h = g * G + hn;
    if (c.t.ak == nullptr) {  // no relative_kv leaf: no c2p term
      std::fill(rp.qa, rp.kq, 0.0f);
    } else {
      const float* ak = c.t.ak + (c.t.shaw_heads == 1 ? 0 : h) * D * p.sld + rp.x0;
      c.tiles.pv_packed({.p = qp + hn * nq * c.Dp,
                         .row_stride = c.Dp,
                         .rows = static_cast<int>(nq),
                         .keys = static_cast<int>(D),
                         .vt = {ak, p.sld},
                         .cols = rp.cols,
                         .o = {rp.qa + hn * nq * rp.cols, rp.cols},
                         .accumulate = false});
    }
    c.tiles.pv_packed({.p = t.kt,
                       .row_stride = 1,
                       .key_stride = TK,
                       .rows = t.nk,
                       .keys = static_cast<int>(D),
                       .vt = {c.t.aq + h * D * p.sld + rp.x0, p.sld},
                       .cols = rp.cols,
                       .o = {rp.kq + hn * TK * rp.cols, rp.cols},
                       .accumulate = false});
  }
}

/// Row r's DeBERTa terms: into the scores before the cap (scale (q . aK + k . aQ), gathered by the
/// pair's distance), or (bins) dU added to the row's and the key's bin of that distance.
template <class E>
void relative_row(const backward_call<E>& c, const backward_tile& t, const relative_pair& rp, std::ptrdiff_t r,
                  std::ptrdiff_t nq, std::int64_t pos_q, std::ptrdiff_t b, float* sr, const float* dr) {
  const std::ptrdiff_t cols = rp.cols;
  const float* kq = rp.kq + (r / nq) * c.p.TK * cols;
  float* wk = rp.wk + (r / nq) * c.p.TK * cols;
  for (int j = 0; j < t.nk; ++j) {
    const std::ptrdiff_t x = key_column(c, c.p.srange, pos_q, b, t.j0 + j) - rp.x0;
    if (dr == nullptr)
      sr[j] += c.scale * (rp.qa[r * cols + x] + kq[j * cols + x]);
    else
      rp.wq[r * cols + x] += dr[j], wk[j * cols + x] += dr[j];
  }
}

/// The pair's DeBERTa gradients from the bins: dQ += wq aK, dK += wk aQ (the PV kernel on the row
/// layouts of the tables), and the tables' sums d aK += wq^T Q, d aQ += wk^T K.
template <class E>
void relative_gradients(const backward_call<E>& c, const backward_tile& t, const relative_pair& rp, std::ptrdiff_t g,
                        std::ptrdiff_t nq, const float* qp, float* dq) {
  const plan& p = c.p;
  const std::ptrdiff_t Dp = c.Dp, TK = p.TK, rl = (p.sld + 64) * Dp;
  auto product = [&](const float* w, std::ptrdiff_t rs, std::ptrdiff_t ks, int rows, int keys, const float* vt,
                     float* o) {
    c.tiles.pv_packed({.p = w,
                       .row_stride = rs,
                       .key_stride = ks,
                       .rows = rows,
                       .keys = keys,
                       .vt = {vt, Dp},
                       .cols = static_cast<int>(Dp),
                       .o = {o, Dp}});
  };
  for (std::ptrdiff_t hn = 0; hn < p.G; ++hn) {
    const std::ptrdiff_t h = g * p.G + hn, x0 = rp.x0 * Dp;
    const float *wq = rp.wq + hn * nq * rp.cols, *wk = rp.wk + hn * TK * rp.cols;
    float* ga = rp.ga + hn * 2 * rl + x0;
    if (c.t.akr != nullptr) {
      product(wq, rp.cols, 1, static_cast<int>(nq), rp.cols, c.t.akr + (c.t.shaw_heads == 1 ? 0 : h) * rl + x0,
              dq + hn * nq * Dp);
      product(wq, 1, rp.cols, rp.cols, static_cast<int>(nq), qp + hn * nq * Dp, ga);
    }
    product(wk, rp.cols, 1, t.nk, rp.cols, c.t.aqr + h * rl + x0, t.dka);
    product(wk, 1, rp.cols, rp.cols, t.nk, t.kr, ga + rl);
  }
}

/// The item's sums of DeBERTa's table gradients into its parameter partial, through the encoder's
/// hooks at each distance d (pos_q 0, pos_k d: the rows of distance d).
template <class E>
void relative_flush(const backward_call<E>& c, const relative_pair& rp, std::ptrdiff_t g, std::span<double> pgrad) {
  if constexpr (trainable_relative_query_encoding<E>) {
    const plan& p = c.p;
    const std::ptrdiff_t rl = (p.sld + 64) * c.Dp;
    if (c.n_params == 0 || rp.ga == nullptr) return;
    for (std::ptrdiff_t hn = 0; hn < p.G; ++hn)
      for (std::ptrdiff_t x = 0; x < p.sn; ++x) {
        const std::ptrdiff_t h = g * p.G + hn;
        const std::int64_t d = p.srange.lo + x;
        const float* a = rp.ga + hn * 2 * rl + x * c.Dp;
        const auto D = static_cast<std::size_t>(p.D);
        c.enc.accumulate_relative_key_gradient(h, 0, d, 1.0, std::span<const float>(a, D), pgrad);
        c.enc.accumulate_relative_query_gradient(h, 0, d, 1.0, std::span<const float>(a + rl, D), pgrad);
      }
  }
}

/// CoPE's scratch of a backward item and of its current (query tile, key tile) pair: the window
/// [x0, x0 + cols) of table rows the pair's positions reach and q . e(n) over it per row (cq); per row,
/// TK apart, the terms t (value gates: first the products q . v), the gates g, the uncapped positions
/// pos and dt = dL/dt; the position weights aw (dt split between floor p and ceil p, cols apart), the
/// value gates' dx (dxv), the tile's V rows [TK][Dp], TK floats of scratch (z), the rows' running gate
/// sums (run); the item's sums of the table's gradient ge [table heads of the item][cn + 64][Dp].
struct cope_pair {
  std::ptrdiff_t x0 = 0;
  int cols = 0;
  float *cq = nullptr, *aw = nullptr, *t = nullptr, *g = nullptr, *dt = nullptr, *dxv = nullptr, *vr = nullptr,
        *z = nullptr, *ge = nullptr;
  double *pos = nullptr, *run = nullptr;
};

/// CoPE's scratch of an item, laid out once, the table's gradient sums and the V rows' padding cleared
/// (an empty pair without CoPE).
template <class E>
cope_pair cope_item(const backward_call<E>& c, attention_scratch& sc) {
  cope_pair cp;
  if (!c.p.cope) return cp;
  const plan& p = c.p;
  const auto R0 = static_cast<std::size_t>(p.rows_max), TK = static_cast<std::size_t>(p.TK),
             W = static_cast<std::size_t>(p.cld + 64), Dp = static_cast<std::size_t>(c.Dp);
  const auto nge = static_cast<std::size_t>((c.t.cope_heads == 1 ? 1 : p.G) * (p.cn + 64)) * Dp;
  cp.cq = grow(sc.cope, 2 * R0 * W + 4 * R0 * TK + TK * Dp + TK + nge);
  cp.aw = cp.cq + R0 * W;
  cp.t = cp.aw + R0 * W;
  cp.g = cp.t + R0 * TK;
  cp.dt = cp.g + R0 * TK;
  cp.dxv = cp.dt + R0 * TK;
  cp.vr = cp.dxv + R0 * TK;
  cp.z = cp.vr + TK * Dp;
  cp.ge = cp.z + TK;
  std::fill(cp.vr, cp.vr + TK * Dp, 0.0f);
  std::fill(cp.ge, cp.ge + nge, 0.0f);
  cp.pos = grow(sc.carry, R0 * TK + R0);
  cp.run = cp.pos + R0 * TK;
  return cp;
}

/// CoPE on a pair's raw scores (QK^T at scale 1), rows R of query tile qt against key tile kti: the
/// window of table rows the positions reach (from the rows' gate sums after the tile), q . e(n) over it
/// (the PV kernel on the transposed table), value-gate products on the packed V^T, then per row the
/// gates, positions and terms (contextual_tile_row); the scores become scale (q . k + t), or scale q . k
/// with t added after the biases (backward_row). next (or null): each row's gate sum once this tile's
/// gates are added.
template <class E>
void contextual_scores(const backward_call<E>& c, const backward_tile& t, cope_pair& cp, std::ptrdiff_t b,
                       std::ptrdiff_t g, std::ptrdiff_t qt, std::ptrdiff_t kti, bool partial, const float* qp,
                       double* next) {
  const plan& p = c.p;
  const std::ptrdiff_t TK = p.TK, nq = p.tile_queries(qt), R = p.G * nq;
  const double* after = c.cope_after + c.tile_index(b, g, qt) * static_cast<std::size_t>(p.nkt);
  const double cap = c.t.cope_cap;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (std::ptrdiff_t r = 0; r < R; ++r)
    if (const double a = after[r * p.nkt + kti]; a >= 0)  // NaN sums reach no table row
      lo = std::min(lo, std::min(a, cap)), hi = std::max(hi, std::min(a + t.nk, cap));
  if (!(lo <= hi)) lo = hi = 0;
  cp.x0 = static_cast<std::ptrdiff_t>(std::floor(lo));
  cp.cols = static_cast<int>((static_cast<std::ptrdiff_t>(std::ceil(hi)) - cp.x0 + 64) / 64 * 64);
  const std::ptrdiff_t step = c.t.cope_heads == 1 ? R : nq;
  for (std::ptrdiff_t r0 = 0; r0 < R; r0 += step)
    c.tiles.pv_packed({.p = qp + r0 * c.Dp,
                       .row_stride = c.Dp,
                       .rows = static_cast<int>(step),
                       .keys = static_cast<int>(p.D),
                       .vt = {c.t.ce + (c.t.cope_heads == 1 ? 0 : g * p.G + r0 / nq) * p.D * p.cld + cp.x0, p.cld},
                       .cols = cp.cols,
                       .o = {cp.cq + r0 * cp.cols, cp.cols},
                       .accumulate = false});
  if (p.cope_values)
    c.tiles.qk_packed({.q = t.qrows,
                       .rows = static_cast<int>(R),
                       .dim = static_cast<int>(p.Dv),
                       .scale = 1.0f,
                       .kt = {t.vt, TK},
                       .s = {cp.t, TK}});
  for (std::ptrdiff_t r = 0; r < R; ++r) {
    float *sr = t.s + r * TK, *tr = cp.t + r * TK;
    double carry = after[r * p.nkt + kti];
    contextual_tile_row(c.t, c.tiles, p.cope_values ? tr : sr, partial ? t.mk + (r % nq) * TK : nullptr, t.nk,
                        cp.cq + r * cp.cols, cp.x0, carry, cp.g + r * TK, cp.z, cp.pos + r * TK, tr);
    if (next != nullptr) next[r] = carry;
    if (p.cope_scaled)
      for (int j = 0; j < t.nk; ++j) sr[j] = c.scale * (sr[j] + tr[j]);
    else
      c.tiles.scale_row(sr, t.nk, c.scale);
  }
}

/// Row r's CoPE gradients, dt = dL/dt (backward_row) in hand: dp_j = dt_j slope_j (0 where capped or at
/// an integer position), dg_j = before + sum_{k <= j} dp_k (before: the row's dp over the key tiles
/// before this one) and dx_j = dg_j gate'(x_j), into the scores' gradient dr (key gates: the same
/// products as q . k's) or dxv (value gates); the position weights aw for dq += aw e and the table's
/// gradient. Returns the tile's sum of dp. With grads false (contextual_prepass) only the sum.
template <class E>
double contextual_row_gradients(const backward_call<E>& c, const backward_tile& t, const cope_pair& cp,
                                std::ptrdiff_t r, double before, float* dr, bool grads) {
  const plan& p = c.p;
  const std::ptrdiff_t TK = p.TK;
  const float *dt = cp.dt + r * TK, *g = cp.g + r * TK, *cq = cp.cq + r * cp.cols;
  const double* pos = cp.pos + r * TK;
  float* aw = cp.aw + r * cp.cols;
  float* dx = p.cope_values ? cp.dxv + r * TK : dr;
  if (grads) std::fill(aw, aw + cp.cols, 0.0f);
  if (grads && p.cope_values) std::fill(dx, dx + TK, 0.0f);
  double dg = before, sum = 0;
  for (int j = 0; j < t.nk; ++j) {
    const double pc = std::min(pos[j], c.t.cope_cap);
    float dp = 0;
    if (dt[j] != 0 && pc >= 0) {
      const double f = std::floor(pc);
      const std::ptrdiff_t lo = static_cast<std::ptrdiff_t>(f) - cp.x0;
      const auto w = static_cast<float>(pc - f);
      if (w > 0) dp = dt[j] * (cq[lo + 1] - cq[lo]);
      if (grads) {
        aw[lo] += dt[j] * (1.0f - w);
        if (w > 0) aw[lo + 1] += dt[j] * w;
      }
    }
    sum += static_cast<double>(dp);
    dg += static_cast<double>(dp);
    if (grads && g[j] != 0) dx[j] += static_cast<float>(dg) * g[j] * (1.0f - g[j]) * c.t.cope_gate;
  }
  return sum;
}

/// The pair's CoPE products, after dQ += dU K: dq += aw e over the window's table rows, the table's
/// sums ge += aw^T Q (when its gradient is asked for) and, for value gates, dq += dxv V, dV += dxv^T Q.
template <class E>
void contextual_products(const backward_call<E>& c, const backward_tile& t, const cope_pair& cp, std::ptrdiff_t g,
                         std::ptrdiff_t nq, const float* qp, float* dq) {
  const plan& p = c.p;
  const std::ptrdiff_t R = p.G * nq, Dp = c.Dp, rl = (p.cn + 64) * Dp, step = c.t.cope_heads == 1 ? R : nq;
  for (std::ptrdiff_t r0 = 0; r0 < R; r0 += step) {
    const std::ptrdiff_t hn = c.t.cope_heads == 1 ? 0 : r0 / nq;
    c.tiles.pv_packed({.p = cp.aw + r0 * cp.cols,
                       .row_stride = cp.cols,
                       .rows = static_cast<int>(step),
                       .keys = cp.cols,
                       .vt = {c.t.cr + (c.t.cope_heads == 1 ? 0 : g * p.G + hn) * rl + cp.x0 * Dp, Dp},
                       .cols = static_cast<int>(Dp),
                       .o = {dq + r0 * Dp, Dp}});
    if (c.n_params > 0)
      c.tiles.pv_packed({.p = cp.aw + r0 * cp.cols,
                         .row_stride = 1,
                         .key_stride = cp.cols,
                         .rows = cp.cols,
                         .keys = static_cast<int>(step),
                         .vt = {qp + r0 * Dp, Dp},
                         .cols = static_cast<int>(Dp),
                         .o = {cp.ge + hn * rl + cp.x0 * Dp, Dp}});
  }
  if (!p.cope_values) return;
  c.tiles.pv_packed({.p = cp.dxv,
                     .row_stride = p.TK,
                     .rows = static_cast<int>(R),
                     .keys = t.nk,
                     .vt = {cp.vr, Dp},
                     .cols = static_cast<int>(Dp),
                     .o = {dq, Dp}});
  c.tiles.pv_packed({.p = cp.dxv,
                     .row_stride = 1,
                     .key_stride = p.TK,
                     .rows = t.nk,
                     .keys = static_cast<int>(R),
                     .vt = {qp, Dp},
                     .cols = static_cast<int>(p.dvp),
                     .o = {t.dva, p.dvp}});
}

/// The item's sums of CoPE's table gradient into its parameter partial, through the encoder's hook at
/// each integer position n (w = 1: the whole sum to row n).
template <class E>
void contextual_flush(const backward_call<E>& c, const cope_pair& cp, std::ptrdiff_t g, std::span<double> pgrad) {
  if constexpr (trainable_contextual_position_encoding<E>) {
    const plan& p = c.p;
    if (c.n_params == 0 || cp.ge == nullptr) return;
    const std::ptrdiff_t heads = c.t.cope_heads == 1 ? 1 : p.G, rl = (p.cn + 64) * c.Dp;
    std::vector<double> row(static_cast<std::size_t>(p.D));
    for (std::ptrdiff_t hn = 0; hn < heads; ++hn)
      for (std::ptrdiff_t n = 0; n < p.cn; ++n) {
        const float* a = cp.ge + hn * rl + n * c.Dp;
        std::copy_n(a, p.D, row.begin());
        c.enc.accumulate_position_gradient(c.t.cope_heads == 1 ? 0 : g * p.G + hn, static_cast<double>(n), 1.0, row,
                                           pgrad);
      }
  }
}

/// Row r of a (query tile, key tile) pair, after S and dP: the forward's hooks on S (Shaw, soft-cap,
/// the score hooks), P = exp(S - L), dS = P (dP - D_i) with the bias gradients, then the soft-cap
/// derivative and the scale (dU), and Shaw's gradients.
template <class E>
void backward_row(const backward_call<E>& c, const backward_tile& t, const tile_summary& ks, bool partial,
                  std::ptrdiff_t b, std::ptrdiff_t h, std::ptrdiff_t i, std::ptrdiff_t r, std::size_t ti, float* dq,
                  std::span<double> pgrad, const relative_pair& rp, const cope_pair& cp) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  const plan& p = c.p;
  const std::ptrdiff_t TK = p.TK, nq = p.tile_queries(i / p.TQ);
  float* sr = t.s + r * TK;
  float* dr = t.dp + r * TK;
  const float *qr = t.qrows[r], *dor = t.drows[r];
  const std::int64_t pos_q = c.pq[static_cast<std::size_t>(b * p.Sq + i)];
  const std::int64_t* pk = c.pk.data() + b * p.Sk + t.j0;
  if constexpr (relative_query_encoding<E>)  // DeBERTa: c2p and p2c by products (no value term)
    relative_row(c, t, rp, r, nq, pos_q, b, sr, nullptr);
  else if constexpr (relative_kv_encoding<E>)
    shaw_scores(c, t, h, pos_q, b, qr, dor, sr, dr);
  if (p.softcap) {
    c.tiles.softcap(sr, t.nk, p.cap, p.inv_cap);
    std::copy_n(sr, t.nk, t.lc + r * TK);
  }
  score_hooks(c, sr, h, pos_q, ks, b, t.j0, t.nk, partial ? t.mk + (r % nq) * TK : nullptr);
  if (p.cope && !p.cope_scaled) c.tiles.add_row(sr, cp.t + r * TK, t.nk);  // CoPE's unscaled term
  for (int j = t.nk; j < TK; ++j) sr[j] = ninf;                            // padding keys: p = 0
  // L = +inf marks a row that attends to nothing: every p is exp(-inf) = 0
  c.tiles.exp_sum(sr, static_cast<int>(TK), c.off[ti + static_cast<std::size_t>(r)]);
  const float Di = c.drow[ti + static_cast<std::size_t>(r)];
  for (int j = 0; j < t.nk; ++j) dr[j] = sr[j] * (dr[j] - Di);  // dS = P (dP - D_i) = d bias
  for (int j = t.nk; j < TK; ++j) dr[j] = 0;
  if (p.cope && !p.cope_scaled) std::copy_n(dr, TK, cp.dt + r * TK);  // dL/dt = dS
  if constexpr (trainable_score_bias_encoding<E>)
    if (c.n_params > 0)
      for (int j = 0; j < t.nk; ++j)
        if (sr[j] != 0) c.enc.accumulate_bias_gradient(h, pos_q, pk[j], static_cast<double>(dr[j]), pgrad);
  if (p.softcap) {
    const float* lr = t.lc + r * TK;
    for (int j = 0; j < t.nk; ++j) {
      const float x = lr[j] * p.inv_cap;
      dr[j] *= c.scale * (1.0f - x * x);
    }
  } else {
    for (int j = 0; j < t.nk; ++j) dr[j] *= c.scale;
  }
  if (p.cope && p.cope_scaled) std::copy_n(dr, TK, cp.dt + r * TK);  // dL/dt = dU
  if constexpr (relative_query_encoding<E>)
    relative_row(c, t, rp, r, nq, pos_q, b, sr, dr);
  else if constexpr (relative_kv_encoding<E>)
    shaw_gradients(c, t, h, pos_q, b, qr, dor, sr, dr, dq + r * c.Dp, pgrad);
}

/// A pair's S = Q K^T (at scale 1 under CoPE: contextual_scores scales) and dP = dO V^T over its rows.
template <class E>
void pair_products(const backward_call<E>& c, const backward_tile& t, int rows) {
  const plan& p = c.p;
  c.tiles.qk_packed({.q = t.qrows,
                     .rows = rows,
                     .dim = static_cast<int>(p.D),
                     .scale = p.cope ? 1.0f : c.scale,
                     .kt = {t.kt, p.TK},
                     .s = {t.s, p.TK}});
  c.tiles.qk_packed({.q = t.drows,
                     .rows = rows,
                     .dim = static_cast<int>(p.Dv),
                     .scale = 1.0f,
                     .kt = {t.vt, p.TK},
                     .s = {t.dp, p.TK}});
}

/// One (query tile qt, key tile) pair of item w: S and dP, each row (backward_row), then dV += P^T dO,
/// dK += dU^T Q (P, dU read transposed) and dQ += dU K (the lane's first write to the partial clears it).
template <class E>
void backward_pair(const backward_call<E>& c, const backward_tile& t, const tile_summary& ks, tile_class cls,
                   const backward_item& w, std::ptrdiff_t qt, std::span<double> pgrad, attention_scratch& sc,
                   relative_pair& rp, cope_pair& cp) {
  const plan& p = c.p;
  const std::ptrdiff_t TK = p.TK, Dp = c.Dp, dvp = p.dvp, i0 = qt * p.TQ, nq = p.tile_queries(qt), R = p.G * nq;
  const std::size_t ti = c.tile_index(w.b, w.g, qt);
  const float* qp = c.qp + ti * static_cast<std::size_t>(Dp);
  const float* dop = c.dop + ti * static_cast<std::size_t>(dvp);
  float* dq = c.dq_partial(w.lane, ti);
  std::uint8_t& wrote = c.wrote(w.lane, w.b, w.g, qt);
  bool dq_accumulate = wrote != 0;
  if constexpr (relative_kv_encoding<E>)  // Shaw's dQ terms come first
    if (!wrote) std::fill(dq, dq + R * Dp, 0.0f), dq_accumulate = true;
  for (std::ptrdiff_t r = 0; r < R; ++r) t.qrows[r] = qp + r * Dp, t.drows[r] = dop + r * dvp;
  if (cls == tile_class::partial) fill_tile_mask(c.mask, w.b, i0, nq, t.j0, t.nk, t.mk, TK);
  if constexpr (relative_query_encoding<E>)
    relative_products(c, t, sc, c.t.qsum[w.b * p.nqt + qt], ks, w.g, nq, qp, rp);
  const auto rows = static_cast<int>(R);
  pair_products(c, t, rows);
  if constexpr (contextual_position_encoding<E>)
    contextual_scores(c, t, cp, w.b, w.g, qt, t.j0 / TK, cls == tile_class::partial, qp, nullptr);
  for (std::ptrdiff_t r = 0; r < R; ++r)
    backward_row(c, t, ks, cls == tile_class::partial, w.b, w.g * p.G + r / nq, i0 + r % nq, r, ti, dq, pgrad, rp, cp);
  if constexpr (contextual_position_encoding<E>) {
    const double* before = c.cope_before + ti * static_cast<std::size_t>(p.nkt);
    for (std::ptrdiff_t r = 0; r < R; ++r)
      contextual_row_gradients(c, t, cp, r, before[r * p.nkt + t.j0 / TK], t.dp + r * TK, true);
  }
  c.tiles.pv_packed({.p = t.s,
                     .row_stride = 1,
                     .key_stride = TK,
                     .rows = t.nk,
                     .keys = rows,
                     .vt = {dop, dvp},
                     .cols = static_cast<int>(dvp),
                     .o = {t.dva, dvp}});
  c.tiles.pv_packed({.p = t.dp,
                     .row_stride = 1,
                     .key_stride = TK,
                     .rows = t.nk,
                     .keys = rows,
                     .vt = {qp, Dp},
                     .cols = static_cast<int>(Dp),
                     .o = {t.dka, Dp}});
  c.tiles.pv_packed({.p = t.dp,
                     .row_stride = TK,
                     .rows = rows,
                     .keys = t.nk,
                     .vt = {t.kr, Dp},
                     .cols = static_cast<int>(Dp),
                     .o = {dq, Dp},
                     .accumulate = dq_accumulate});
  if constexpr (relative_query_encoding<E>) relative_gradients(c, t, rp, w.g, nq, qp, dq);
  if constexpr (contextual_position_encoding<E>) contextual_products(c, t, cp, w.g, nq, qp, dq);
  wrote = 1;
}

/// One backward work item: the key tiles of its lane, each against every query tile it sees, then the
/// tile's dK and dV rows written (the item is their only writer).
template <class E>
void backward_item_run(const backward_call<E>& c, attention_scratch& sc, const backward_item& w,
                       std::span<double> pgrad) {
  const plan& p = c.p;
  backward_tile t = backward_scratch(c, sc);
  relative_pair rp = relative_item(c, sc);
  cope_pair cp = cope_item(c, sc);
  for (std::ptrdiff_t kti = w.lane; kti < p.nkt; kti += c.lanes) {
    const tile_summary& ks = c.t.ksum[w.b * p.nkt + kti];
    load_backward_tile(c, w.b, w.g, kti, t);
    if (p.cope_values) pack_tile<false>(c.v_ops, c.v, w.b, w.g, t.j0, t.nk, p.Dv, cp.vr, c.Dp);
    bool touched = false;
    for (std::ptrdiff_t qt = 0; qt < p.nqt; ++qt) {
      const tile_class cls = classify(c.o, c.t.qsum[w.b * p.nqt + qt], ks);
      if (cls == tile_class::skip) continue;
      touched = true;
      backward_pair(c, t, ks, cls, w, qt, pgrad, sc, rp, cp);
    }
    for (int j = 0; j < t.nk; ++j) {
      float* dkr = c.dk + ((w.b * p.Sk + t.j0 + j) * p.Hkv + w.g) * p.D;
      float* dvr = c.dv + ((w.b * p.Sk + t.j0 + j) * p.Hkv + w.g) * p.Dv;
      for (std::ptrdiff_t d = 0; d < p.D; ++d) dkr[d] = touched ? t.dka[j * c.Dp + d] : 0.0f;
      for (std::ptrdiff_t d = 0; d < p.Dv; ++d) dvr[d] = touched ? t.dva[j * p.dvp + d] : 0.0f;
    }
  }
  if constexpr (relative_query_encoding<E>) relative_flush(c, rp, w.g, pgrad);
  if constexpr (contextual_position_encoding<E>) contextual_flush(c, cp, w.g, pgrad);
}

/// CoPE's pass before the backward's items, one per (sequence b, kv head g, query tile qt): its key
/// tiles from the last to the first, each row's gate sum after each tile and, with P, dS and dt formed
/// as the backward's pairs form them, the tile's sum of dp = dt slope; then those sums as sums over the
/// key tiles before each (what the gates' gradient adds up from the first key on).
template <class E>
void contextual_prepass(const backward_call<E>& c, attention_scratch& sc, std::ptrdiff_t b, std::ptrdiff_t g,
                        std::ptrdiff_t qt) {
  const plan& p = c.p;
  backward_call<E> c0 = c;  // no parameter gradients here
  c0.n_params = 0;
  backward_tile t = backward_scratch(c, sc);
  cope_pair cp = cope_item(c, sc);
  const relative_pair rp;
  const std::ptrdiff_t TK = p.TK, nq = p.tile_queries(qt), R = p.G * nq, nkt = p.nkt;
  const std::size_t ti = c.tile_index(b, g, qt);
  double *after = c.cope_after + ti * static_cast<std::size_t>(nkt),
         *before = c.cope_before + ti * static_cast<std::size_t>(nkt);
  const float *qp = c.qp + ti * static_cast<std::size_t>(c.Dp), *dop = c.dop + ti * static_cast<std::size_t>(p.dvp);
  for (std::ptrdiff_t r = 0; r < R; ++r) t.qrows[r] = qp + r * c.Dp, t.drows[r] = dop + r * p.dvp, cp.run[r] = 0;
  for (std::ptrdiff_t kti = nkt - 1; kti >= 0; --kti) {
    const tile_summary& ks = c.t.ksum[b * nkt + kti];
    const tile_class cls = classify(c.o, c.t.qsum[b * p.nqt + qt], ks);
    for (std::ptrdiff_t r = 0; r < R; ++r) after[r * nkt + kti] = cp.run[r], before[r * nkt + kti] = 0;
    if (cls == tile_class::skip) continue;
    load_backward_tile(c, b, g, kti, t);
    if (cls == tile_class::partial) fill_tile_mask(c.mask, b, qt * p.TQ, nq, t.j0, t.nk, t.mk, TK);
    pair_products(c, t, static_cast<int>(R));
    contextual_scores(c, t, cp, b, g, qt, kti, cls == tile_class::partial, qp, cp.run);
    for (std::ptrdiff_t r = 0; r < R; ++r) {
      backward_row(c0, t, ks, cls == tile_class::partial, b, g * p.G + r / nq, qt * p.TQ + r % nq, r, ti, nullptr, {},
                   rp, cp);
      before[r * nkt + kti] = contextual_row_gradients(c, t, cp, r, 0.0, nullptr, false);
    }
  }
  for (std::ptrdiff_t r = 0; r < R; ++r) {  // tile sums -> sums over the tiles before
    double acc = 0;
    for (std::ptrdiff_t kti = 0; kti < nkt; ++kti) {
      const double x = before[r * nkt + kti];
      before[r * nkt + kti] = acc;
      acc += x;
    }
  }
}

/// f(b, g, t, h, i, x) for row r of query tile t of kv head g of sequence b, for every row: query head
/// h = g G + r / nq and token i = t TQ + r % nq, at x in the per-tile layout (tile_index + r).
template <class E, class F>
void for_each_row(const backward_call<E>& c, F&& f) {
  const plan& p = c.p;
  for (std::ptrdiff_t b = 0; b < p.B; ++b)
    for (std::ptrdiff_t g = 0; g < p.Hkv; ++g)
      for (std::ptrdiff_t t = 0; t < p.nqt; ++t) {
        const std::ptrdiff_t nq = p.tile_queries(t);
        for (std::ptrdiff_t r = 0; r < p.G * nq; ++r)
          f(b, g, t, g * p.G + r / nq, t * p.TQ + r % nq, c.tile_index(b, g, t) + static_cast<std::size_t>(r));
      }
}

/// The backward's inputs per row of each query tile: the q and dout rows packed (zero-padded), the
/// offsets L_i less the table path's query bias (+inf for a row that attends to nothing), D_i =
/// dout_i . out_i in double; and the sinks' gradient d sink = -p_sink D_i, in row order.
template <class E>
void pack_backward_rows(backward_call<E>& c, float* qp, float* dop, float* off, float* drow,
                        tensor_view<const float> out, std::span<const float> lse, tensor_view<const float> dout,
                        const attention_gradients& grads) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const plan& p = c.p;
  const std::size_t n_rows = c.rows();
  std::fill(qp, qp + n_rows * static_cast<std::size_t>(c.Dp), 0.0f);
  std::fill(dop, dop + n_rows * static_cast<std::size_t>(p.dvp), 0.0f);
  std::fill(off, off + n_rows, inf);
  std::fill(drow, drow + n_rows, 0.0f);
  for_each_row(
      c, [&](std::ptrdiff_t b, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t h, std::ptrdiff_t i, std::size_t x) {
        for (std::ptrdiff_t d = 0; d < p.D; ++d) qp[x * static_cast<std::size_t>(c.Dp) + d] = c.q(b, i, h, d);
        double dd = 0;
        for (std::ptrdiff_t d = 0; d < p.Dv; ++d) {
          const float y = dout(b, i, h, d);
          dop[x * static_cast<std::size_t>(p.dvp) + d] = y;
          dd += static_cast<double>(y) * static_cast<double>(out(b, i, h, d));
        }
        drow[x] = static_cast<float>(dd);
        const float L = lse[static_cast<std::size_t>((b * p.Hq + h) * p.Sq + i)];
        const double qb = table_query_bias(c, h, c.pq[static_cast<std::size_t>(b * p.Sq + i)]);
        off[x] = L == -inf ? inf : static_cast<float>(static_cast<double>(L) - qb);
        if (!grads.sinks.empty() && L != -inf)
          grads.sinks[static_cast<std::size_t>(h)] -=
              std::exp(c.o.sinks[static_cast<std::size_t>(h)] - static_cast<double>(L)) * dd;
      });
  c.qp = qp, c.dop = dop, c.off = off, c.drow = drow;
}

/// The reductions, in a fixed order: the items' parameter gradients into grads.encoder, the lanes' dQ
/// partials (those they wrote) into dq_buf [B, Sq, Hq, D], both w.r.t. the transformed q.
template <class E>
void reduce_backward(const backward_call<E>& c, const double* pgrad, std::ptrdiff_t items, float* dq_buf,
                     const attention_gradients& grads) {
  const plan& p = c.p;
  for (std::ptrdiff_t n = 0; n < items; ++n)
    for (std::ptrdiff_t x = 0; x < c.n_params; ++x)
      grads.encoder[static_cast<std::size_t>(x)] += pgrad[n * c.n_params + x];
  const auto dq = tensor_view<float>::bthd(dq_buf, p.B, p.Sq, p.Hq, p.D);
  for_each_row(
      c, [&](std::ptrdiff_t b, std::ptrdiff_t g, std::ptrdiff_t t, std::ptrdiff_t h, std::ptrdiff_t i, std::size_t x) {
        for (std::ptrdiff_t d = 0; d < p.D; ++d) dq(b, i, h, d) = 0.0f;
        for (std::ptrdiff_t l = 0; l < c.lanes; ++l) {
          if (!c.wrote(l, b, g, t)) continue;
          const float* part = c.dq_partial(l, x);
          for (std::ptrdiff_t d = 0; d < p.D; ++d) dq(b, i, h, d) += part[d];
        }
      });
}

/// Copies a contiguous [B, S, H, D] buffer into a view of any strides.
inline void copy_out(const float* from, tensor_view<float> to) {
  std::size_t n = 0;
  for (std::ptrdiff_t b = 0; b < to.batch(); ++b)
    for (std::ptrdiff_t t = 0; t < to.tokens(); ++t)
      for (std::ptrdiff_t h = 0; h < to.heads(); ++h)
        for (std::ptrdiff_t d = 0; d < to.dim(); ++d) to(b, t, h, d) = from[n++];
}

/// The backward's buffers in the workspace, laid out once per call.
struct backward_buffers {
  float *qp, *dop, *off, *drow, *dk, *dv, *dqp, *dq;
  double* pgrad;
};

template <class E>
backward_buffers backward_buffers_of(backward_call<E>& c, std::ptrdiff_t items, attention_workspace& ws) {
  const plan& p = c.p;
  const std::size_t n_rows = c.rows(), n_qp = n_rows * static_cast<std::size_t>(c.Dp),
                    n_dop = n_rows * static_cast<std::size_t>(p.dvp);
  const auto n_dk = static_cast<std::size_t>(p.B * p.Sk * p.Hkv * p.D),
             n_dv = static_cast<std::size_t>(p.B * p.Sk * p.Hkv * p.Dv),
             n_dq = static_cast<std::size_t>(p.B * p.Sq * p.Hq * p.D);
  backward_buffers x;
  x.qp = grow(ws.backward, n_qp + n_dop + 2 * n_rows + n_dk + n_dv + static_cast<std::size_t>(c.lanes) * n_qp + n_dq);
  x.dop = x.qp + n_qp;
  x.off = x.dop + n_dop;
  x.drow = x.off + n_rows;
  x.dk = x.drow + n_rows;
  x.dv = x.dk + n_dk;
  x.dqp = x.dv + n_dv;
  x.dq = x.dqp + static_cast<std::size_t>(c.lanes) * n_qp;
  const auto n_live = static_cast<std::size_t>(c.lanes * p.B * p.Hkv * p.nqt);
  c.live = grow(ws.backward_live, n_live);
  std::fill(c.live, c.live + n_live, std::uint8_t{0});
  x.pgrad = grow(ws.parameter_grads, static_cast<std::size_t>(items * c.n_params));
  std::fill(x.pgrad, x.pgrad + items * c.n_params, 0.0);
  return x;
}

/// The whole backward (validation in attention/attention_backward.hpp): the forward's stages 1 and 2
/// on the same operands, the backward's rows, its work items, its reductions, hook 2 backward.
template <class E>
void fast_attention_backward(tensor_view<const float> q, tensor_view<const float> k, tensor_view<const float> v,
                             tensor_view<const float> out, std::span<const float> lse, tensor_view<const float> dout,
                             tensor_view<float> dq, tensor_view<float> dk, tensor_view<float> dv, const E& enc,
                             const attention_options& o, const attention_gradients& grads,
                             const fast_attention_options& f) {
  const attention_mask mask(o, q.batch(), q.tokens(), k.tokens());
  if (q.batch() == 0 || q.tokens() == 0 || q.heads() == 0 || k.tokens() == 0) {
    for (const tensor_view<float>& x : {dq, dk, dv}) zero_view(x);
    return;
  }
  const kernels::attention_kernels& kern = kernels::active_attention_kernels();
  attention_workspace local;
  attention_workspace& ws = f.workspace ? *f.workspace : local;
  const tensor_view<const float> qk = kernel_queries(q, false, enc, o, mask, ws);
  kv_rows<float> kr{.view = k};
  if constexpr (qk_transform_encoding<E>)
    if (o.transform_keys) kr.view = transformed_keys(k, enc, mask, ws);
  const kv_rows<float> vr{.view = v};
  const backward_plan bp =
      make_backward_plan(plan_input_of(qk, kr, vr, k.tokens(), kern), hook_facts_of(enc, call_distances(mask)), o, f);
  backward_call<E> c{{.p = bp,
                      .enc = enc,
                      .o = o,
                      .mask = mask,
                      .tiles = kern.tiles,
                      .k_ops = kern.f32,
                      .v_ops = kern.f32,
                      .q = qk,
                      .k = kr,
                      .v = vr,
                      .pq = mask.query_positions(),
                      .pk = mask.key_positions(),
                      .scale = static_cast<float>(softmax_scale(enc, o, q.dim())),
                      .t = build_tables(bp, enc, o, mask, qk, kern.f32, ws)}};
  c.lanes = bp.lanes, c.Dp = (bp.D + 63) / 64 * 64;
  if constexpr (trainable_encoding<E>) c.n_params = grads.encoder.empty() ? 0 : enc.parameter_count();
  const backward_buffers x = backward_buffers_of(c, bp.backward_items(), ws);
  c.dk = x.dk, c.dv = x.dv, c.dqp = x.dqp;
  pack_backward_rows(c, x.qp, x.dop, x.off, x.drow, out, lse, dout, grads);
  if constexpr (contextual_position_encoding<E>) {
    const std::size_t n = c.rows() * static_cast<std::size_t>(bp.nkt);
    c.cope_after = grow(ws.cope_carry, 2 * n);
    c.cope_before = c.cope_after + n;
    run_parallel(f.executor, bp.B * bp.Hkv * bp.nqt, [&](std::ptrdiff_t m) {
      scratch_slot slot(ws);
      contextual_prepass(c, slot.get(), m / (bp.Hkv * bp.nqt), (m / bp.nqt) % bp.Hkv, m % bp.nqt);
    });
  }
  run_parallel(f.executor, bp.backward_items(), [&](std::ptrdiff_t n) {
    scratch_slot slot(ws);
    backward_item_run(c, slot.get(), bp.backward_work(n),
                      std::span<double>(x.pgrad + n * c.n_params, static_cast<std::size_t>(c.n_params)));
  });
  reduce_backward(c, x.pgrad, bp.backward_items(), x.dq, grads);
  if constexpr (qk_transform_encoding<E>) {
    if (o.transform_queries) enc.transform_q_backward(tensor_view<float>::bthd(x.dq, bp.B, bp.Sq, bp.Hq, bp.D), c.pq);
    if (o.transform_keys) enc.transform_k_backward(tensor_view<float>::bthd(x.dk, bp.B, bp.Sk, bp.Hkv, bp.D), c.pk);
  }
  copy_out(x.dq, dq), copy_out(x.dk, dk), copy_out(x.dv, dv);
}

}  // namespace posenc::inline v0::detail
