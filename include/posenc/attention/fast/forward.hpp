// posenc/attention/fast/forward.hpp — the forward of the fused, tiled attention behind
// posenc::attention: query x key tiles, online softmax (running max and sum, FlashAttention-2 order),
// fp32 accumulation.
//
// In stages (docs/attention.md, "The driver in stages"):
//   1. plan (fast/plan.hpp): tile sizes, prefill or decode path, key chunks, the work items and
//      the hook paths, from shapes and options only;
//   2. tables (fast/tables.hpp): hook-2 copies, tile summaries, the distance table, Shaw's tables,
//      decode's prepared q rows (a prefill item prepares its own in begin_item);
//   3. run_items: each work item, prefill_item or decode_item, then the key-chunk merges.
// One work item = (sequence b, kv head(s), query tile[, key chunk]); its rows are every query head
// of the GQA group times the tile's query tokens, so each K/V tile is read (and, for prefill,
// packed by load_kv_tile) once for all of them. Per key tile: classify from per-tile
// position/padding/segment summaries (skip: nothing visible; full: no mask work; partial: the
// element mask), QK^T, then softmax_tile (the score hooks of fast/scores.hpp and the online-softmax
// step shared by both paths), PV, each product by the K or V storage record. Work is cut by shape
// only, so the result is bit-identical for any thread count. Not here: the weights output
// (declined), double inputs (use sdpa), dropout. Attention chunks (attention_options::attention_chunk)
// are a tile class like the window: key tiles in no chunk of the query tile are skipped. Logit
// soft-capping runs on each score row right after the Shaw key term, before the biases and the mask
// (the order of attention/options.hpp). CoPE (fast/contextual.hpp): an item walks its key tiles last
// to first carrying each row's gate sum; QK^T runs at scale 1 and contextual_tile adds the term and
// scales; within the bound of attention/attention.hpp with A including the term.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <posenc/attention/fast/call.hpp>
#include <posenc/attention/fast/contextual.hpp>
#include <posenc/attention/fast/encoder_paths.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/attention/fast/kv_q8_0.hpp>
#include <posenc/attention/fast/options.hpp>
#include <posenc/attention/fast/plan.hpp>
#include <posenc/attention/fast/scores.hpp>
#include <posenc/attention/fast/tables.hpp>
#include <posenc/attention/fast/workspace.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/attention/rules.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0::detail {

/// The forward's call: the shared description (fast/call.hpp) and the outputs.
template <class E, class TK, class TV>
struct forward_call : call<E, TK, TV> {
  tensor_view<float> out;
  float* lse = nullptr;  // fast_attention_options::log_sum_exp, [B, Hq, Sq], or null
};

/// The operands of one forward call as the kernels read them (after hook 2), its key count and its
/// mask: a whole call, or one sequence of a ragged batch or a paged cache (positions its own).
template <class TK, class TV>
struct forward_operands {
  tensor_view<const float> q;  // [B, Sq, Hq, D]
  kv_rows<TK> k;
  kv_rows<TV> v;
  tensor_view<float> out;  // [B, Sq, Hq, Dv]
  std::ptrdiff_t Sk = 0;
  const attention_mask* mask = nullptr;
};

/// Shaw's value term: adds each probability of row (pos_q) to the sum of its clipped distance. A key
/// tile whose distances all clip to one end adds its row sum once.
template <class C>
void add_buckets(const C& c, const tile_summary& ks, std::int64_t pos_q, std::ptrdiff_t b, std::ptrdiff_t j0, int nk,
                 const float* p, float psum, float* bk) {
  const std::int64_t* pk = c.pk.data() + b * c.p.Sk + j0;
  if (ks.contiguous) {
    const std::int64_t d0 = saturating_difference(pk[0], pos_q), d1 = saturating_difference(pk[nk - 1], pos_q);
    if (d1 <= c.p.srange.lo) {
      bk[0] += psum;
      return;
    }
    if (d0 >= c.p.srange.hi) {
      bk[c.p.srange.hi - c.p.srange.lo] += psum;
      return;
    }
  }
  for (int j = 0; j < nk; ++j) bk[table_index(c.p.srange, saturating_difference(pk[j], pos_q))] += p[j];
}

/// The row's log-sum-exp over its logits and sink (attention_backward's input): m and l are the
/// running max and sum of the logits less the table path's query bias, which is added back.
template <class C>
float row_log_sum_exp(const C& c, std::ptrdiff_t b, std::ptrdiff_t i, std::ptrdiff_t h, float m, float l) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const double qb = table_query_bias(c, h, c.pq[static_cast<std::size_t>(b * c.p.Sq + i)]);
  const bool sink = !c.o.sinks.empty();
  const double s = sink ? c.o.sinks[static_cast<std::size_t>(h)] - qb : -inf, hi = std::max<double>(m, s);
  if (l != l) return l;
  if (hi == -inf || hi == inf) return static_cast<float>(hi);
  const double den = (m == -inf ? 0.0 : l * std::exp(m - hi)) + (sink ? std::exp(s - hi) : 0.0);
  return static_cast<float>(qb + hi + std::log(den));
}

/// Writes row r's result: o / l, with the sink (shifted by the row's query bias) in the denominator.
template <class C>
void finish_row(const C& c, std::ptrdiff_t b, std::ptrdiff_t i, std::ptrdiff_t h, float m, float l, float* o) {
  double den = l, f = 1;
  if (c.lse != nullptr) c.lse[(b * c.p.Hq + h) * c.p.Sq + i] = row_log_sum_exp(c, b, i, h, m, l);
  if (!c.o.sinks.empty()) {
    const double sink =
        c.o.sinks[static_cast<std::size_t>(h)] - table_query_bias(c, h, c.pq[static_cast<std::size_t>(b * c.p.Sq + i)]);
    if (sink == std::numeric_limits<double>::infinity()) {  // takes all the mass, shared with +inf logits
      den = m == std::numeric_limits<float>::infinity() || den != den ? den + 1 : 0;
    } else if (sink == -std::numeric_limits<double>::infinity()) {  // takes none
    } else if (m == -std::numeric_limits<float>::infinity() || sink <= m) {
      den += std::exp(sink - static_cast<double>(m));
    } else {  // the sink is the running max: rescale the row to it
      f = std::exp(static_cast<double>(m) - sink);
      den = den * f + 1;
    }
  }
  // den is NaN for a row with a NaN logit: its output is NaN, as sdpa's
  const float inv = den > 0 ? static_cast<float>(f / den) : den == 0 ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  float* y = c.out.row(b, i, h);  // one row address, then the dim stride (unit: a vectorised loop)
  if (const std::ptrdiff_t ds = c.out.stride(axis::dim); ds == 1)
    for (std::ptrdiff_t d = 0; d < c.p.Dv; ++d) y[d] = o[d] * inv;
  else
    for (std::ptrdiff_t d = 0; d < c.p.Dv; ++d) y[d * ds] = o[d] * inv;
}

/// True when one of n values at p is Inf or NaN (all exponent bits set), read as bits.
template <class T>
bool any_nonfinite(const T* p, std::ptrdiff_t n) noexcept {
  unsigned r = 0;  // no early exit: a branch-free loop the compiler vectorises
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, float>)
      r |= (std::bit_cast<std::uint32_t>(p[i]) & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
    else if constexpr (std::is_same_v<T, bfloat16>)
      r |= (p[i].bits & 0x7f80u) == 0x7f80u ? 1u : 0u;
    else
      r |= (p[i].bits & 0x7c00u) == 0x7c00u ? 1u : 0u;
  }
  return r != 0;
}

/// Over the keys j < nk of a partial tile that at least one of its nq query tokens cannot see
/// (mask mk, rows TK apart): true when f(j) is true for one of them.
template <class F>
bool any_masked_key(const std::uint8_t* mk, std::ptrdiff_t nq, std::ptrdiff_t TK, int nk, F&& f) {
  for (int j = 0; j < nk; ++j) {
    bool all = true;
    for (std::ptrdiff_t t = 0; t < nq; ++t) all = all && mk[t * TK + j] != 0;
    if (!all && f(j)) return true;
  }
  return false;
}

/// Calls f(t, a, e) for every run [a, e) of keys visible to query token t of a partial tile.
template <class F>
void for_visible_runs(const std::uint8_t* mk, std::ptrdiff_t nq, std::ptrdiff_t TK, int nk, F&& f) {
  for (std::ptrdiff_t t = 0; t < nq; ++t) {
    const std::uint8_t* mr = mk + t * TK;
    for (int a = 0; a < nk;) {
      if (mr[a] == 0) {
        ++a;
        continue;
      }
      int e = a;
      while (e < nk && mr[e] != 0) ++e;
      f(t, a, e);
      a = e;
    }
  }
}

/// One work item's rows and scratch. Row r is query token i0 + r % nq of query head g G + r / nq
/// (g: the item's first kv head), so a head's rows are a block of nq.
struct item_state {
  work_item w;
  std::ptrdiff_t g = 0, i0 = 0, nq = 0, Rg = 0, R = 0, G = 1;
  std::ptrdiff_t sw = 0;                   // Shaw row stride (the call's distances padded to 64), 0 without Shaw
  const float** rows = nullptr;            // q rows
  const float** kq = nullptr;              // q rows the in-place key kernel reads (prepared ones for bfloat16 keys)
  float *kt = nullptr, *vt = nullptr;      // prefill: packed K^T [D][TK], V [TK][dvp]
  float *s = nullptr, *o = nullptr;        // scores [R][TK], outputs [R][dvp]
  float *m = nullptr, *l = nullptr;        // running max and sum per row
  float *qa = nullptr, *bucket = nullptr;  // Shaw: q . aK per distance, probability mass per distance [R][sw]
  std::uint8_t* mk = nullptr;              // element mask of a partial tile [nq][TK]
  float *cq = nullptr, *ct = nullptr;      // CoPE: q . e(n) per row [R][cld]; value-gate products, then terms [R][TK]
  float *cg = nullptr, *cvt = nullptr;     // CoPE: gates and scratch [2][TK]; the tile's V^T [Dv][TK] (value gates)
  double* carry = nullptr;                 // CoPE: each row's gate sum over the key tiles already walked

  [[nodiscard]] std::ptrdiff_t head(std::ptrdiff_t r) const noexcept { return g * G + r / nq; }
  /// The rows of the decode path's key kernel: Rg per kv head, heads kv heads.
  [[nodiscard]] kernels::query_rows queries(std::ptrdiff_t heads, std::ptrdiff_t D) const noexcept {
    return {kq, static_cast<int>(Rg), static_cast<int>(heads), static_cast<int>(D)};
  }
};

/// Start of an item (both paths): scratch laid out, running state reset, q row pointers, and the
/// Shaw key term q . aK over the call's distances once per row (the QK^T kernel on the transposed aK).
template <class E, class TK, class TV>
item_state begin_item(const forward_call<E, TK, TV>& c, detail::attention_scratch& sc, const work_item& w) {
  const plan& p = c.p;
  item_state it;
  it.w = w;
  it.g = w.gs * p.gpi;
  it.i0 = w.qt * p.TQ;
  it.nq = p.tile_queries(w.qt);
  it.G = p.G;
  it.Rg = p.G * it.nq;
  it.R = p.gpi * it.Rg;
  it.sw = p.shaw ? p.sld : 0;
  const std::ptrdiff_t TKn = p.TK, dvp = p.dvp, D = p.D, nq = it.nq;
  const bool packed = p.path == kv_path::prefill;
  const std::size_t n_kt = packed ? static_cast<std::size_t>(D * TKn) : 0,
                    n_vt = packed ? static_cast<std::size_t>(TKn * dvp) : 0;
  const auto nR = static_cast<std::size_t>(it.R);
  it.kt = detail::grow(sc.f, n_kt + n_vt + nR * static_cast<std::size_t>(TKn + dvp + 2 + 2 * it.sw));
  it.vt = it.kt + n_kt;
  it.s = it.vt + n_vt;
  it.o = it.s + nR * static_cast<std::size_t>(TKn);
  it.m = it.o + nR * static_cast<std::size_t>(dvp);
  it.l = it.m + nR;
  it.qa = it.l + nR;
  it.bucket = it.qa + nR * static_cast<std::size_t>(it.sw);
  it.rows = detail::grow(sc.rows, 2 * nR);
  it.kq = it.rows;
  it.mk = detail::grow(sc.mask, static_cast<std::size_t>(nq * TKn));
  std::fill(it.o, it.o + nR * static_cast<std::size_t>(dvp), 0.0f);
  std::fill(it.m, it.m + nR, -std::numeric_limits<float>::infinity());
  std::fill(it.l, it.l + nR, 0.0f);
  std::fill(it.bucket, it.bucket + nR * static_cast<std::size_t>(it.sw), 0.0f);
  if (packed) std::fill(it.vt, it.vt + n_vt, 0.0f);  // padding columns stay 0
  for (std::ptrdiff_t r = 0; r < it.R; ++r) it.rows[r] = c.q.row(w.b, it.i0 + r % nq, it.head(r));
  if (p.prep_q) {  // decode: the call's prepared rows; prefill: the item's, prepared here
    const float** kq = it.rows + nR;
    const std::ptrdiff_t n = c.t.qk_q_stride;
    float* own = c.t.qk_q == nullptr ? detail::grow(sc.qk_q, nR * static_cast<std::size_t>(n)) : nullptr;
    for (std::ptrdiff_t r = 0; r < it.R; ++r) {
      if (own != nullptr) c.k_ops.prep_q(it.rows[r], static_cast<int>(D), own + r * n);
      kq[r] = own != nullptr ? own + r * n : c.t.qk_q + ((w.b * p.Sq + it.i0 + r % nq) * p.Hq + it.head(r)) * n;
    }
    it.kq = kq;
  }
  if (p.shaw) {
    if (c.t.shaw_heads == 1)
      c.tiles.qk_packed({.q = it.rows,
                         .rows = static_cast<int>(it.R),
                         .dim = static_cast<int>(D),
                         .scale = c.scale,
                         .kt = {c.t.ak, it.sw},
                         .s = {it.qa, it.sw}});
    else
      for (std::ptrdiff_t r = 0; r < it.R; r += nq)
        c.tiles.qk_packed({.q = it.rows + r,
                           .rows = static_cast<int>(nq),
                           .dim = static_cast<int>(D),
                           .scale = c.scale,
                           .kt = {c.t.ak + it.head(r) * D * it.sw, it.sw},
                           .s = {it.qa + r * it.sw, it.sw}});
  }
  return it;
}

/// CoPE's start of an item: q . e_h(n) for every row and table row n < cn (the QK^T kernel on the
/// transposed table, once for all rows when the heads share it), the running gate sums cleared.
template <class E, class TK, class TV>
void begin_contextual(const forward_call<E, TK, TV>& c, item_state& it, attention_scratch& sc) {
  const plan& p = c.p;
  const auto nR = static_cast<std::size_t>(it.R), TK_ = static_cast<std::size_t>(p.TK);
  it.cq = grow(sc.cope, nR * (static_cast<std::size_t>(p.cld) + TK_) + (2 + static_cast<std::size_t>(p.Dv)) * TK_);
  it.ct = it.cq + nR * static_cast<std::size_t>(p.cld);
  it.cg = it.ct + nR * TK_;
  it.cvt = it.cg + 2 * TK_;
  std::fill(it.cvt, it.cvt + static_cast<std::size_t>(p.Dv) * TK_, 0.0f);  // columns past a short tile stay 0
  it.carry = grow(sc.carry, nR);
  std::fill(it.carry, it.carry + nR, 0.0);
  const std::ptrdiff_t step = c.t.cope_heads == 1 ? it.R : it.nq;
  for (std::ptrdiff_t r = 0; r < it.R; r += step)
    c.tiles.qk_packed({.q = it.rows + r,
                       .rows = static_cast<int>(step),
                       .dim = static_cast<int>(p.D),
                       .scale = 1.0f,
                       .kt = {c.t.ce + (c.t.cope_heads == 1 ? 0 : it.head(r)) * p.D * p.cld, p.cld},
                       .s = {it.cq + r * p.cld, p.cld}});
}

/// CoPE's term of one key tile (keys j0 .. j0 + nk - 1), the raw q . k in the scores (QK^T at scale
/// 1): per row the gates, positions and terms (fast/contextual.hpp; value gates on the tile's V^T),
/// then the scores become scale (q . k + t), or scale q . k with t kept in it.ct for after the score
/// biases (an unscaled term).
template <class E, class TK, class TV>
void contextual_tile(const forward_call<E, TK, TV>& c, item_state& it, tile_class cls, std::ptrdiff_t j0, int nk) {
  const plan& p = c.p;
  const std::ptrdiff_t TK_ = p.TK;
  if (p.cope_values) {
    pack_tile<true>(c.v_ops, c.v, it.w.b, it.g, j0, nk, p.Dv, it.cvt, TK_);
    c.tiles.qk_packed({.q = it.rows,
                       .rows = static_cast<int>(it.R),
                       .dim = static_cast<int>(p.Dv),
                       .scale = 1.0f,
                       .kt = {it.cvt, TK_},
                       .s = {it.ct, TK_}});
  }
  for (std::ptrdiff_t r = 0; r < it.R; ++r) {
    float *sr = it.s + r * TK_, *ct = it.ct + r * TK_;
    const std::uint8_t* mr = cls == tile_class::partial ? it.mk + (r % it.nq) * TK_ : nullptr;
    contextual_tile_row(c.t, c.tiles, p.cope_values ? ct : sr, mr, nk, it.cq + r * p.cld, 0, it.carry[r], it.cg,
                        it.cg + TK_, nullptr, ct);
    if (p.cope_scaled)
      for (int j = 0; j < nk; ++j) sr[j] = c.scale * (sr[j] + ct[j]);
    else
      c.tiles.scale_row(sr, nk, c.scale);
  }
  if (p.cope_values && nk < TK_)
    for (std::ptrdiff_t d = 0; d < p.Dv; ++d) std::fill(it.cvt + d * TK_ + nk, it.cvt + (d + 1) * TK_, 0.0f);
}

/// The online-softmax step of one row over one key tile (FlashAttention-2 order), shared by the
/// prefill and decode paths: the tile's row max, the running output o, sum l and Shaw buckets
/// rescaled to the new max m, exp, sum update. sr holds the row's nk scores (masked ones -inf) and
/// becomes its unnormalised probabilities (0 where nothing counts). A `bias` row (score_hooks' folded
/// table slice) is added to the scores inside the max and exp passes. Returns the weight mass the
/// tile added when sr holds probabilities for the Shaw value term, nothing otherwise.
template <class C>
std::optional<float> online_softmax_step(const C& c, float* sr, int nk, float& m, float& l, float* o, float* bucket,
                                         const float* bias = nullptr) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  const float rmax = bias != nullptr ? c.tiles.row_max_add(sr, bias, nk) : c.tiles.row_max(sr, nk);
  if (bias != nullptr && (rmax != rmax || !std::isfinite(std::max(m, rmax)))) {  // the special rows read sr
    c.tiles.add_row(sr, bias, nk);
    bias = nullptr;
  }
  if (rmax != rmax) {  // a NaN logit: the row's output is NaN (as sdpa); no weight from this tile
    l = std::numeric_limits<float>::quiet_NaN();
    std::fill(sr, sr + nk, 0.0f);
    return std::nullopt;
  }
  const float mnew = std::max(m, rmax);
  if (mnew == ninf) {  // nothing visible in this row yet
    std::fill(sr, sr + nk, 0.0f);
    return std::nullopt;
  }
  if (mnew == -ninf) {  // +inf logits share the row's weight equally (as sdpa), finite ones get 0
    if (m != mnew) {
      std::fill(o, o + c.p.dvp, 0.0f);  // not o x 0: an infinite value would give NaN
      l = l != l ? l : 0.0f;
      if (bucket != nullptr) std::fill(bucket, bucket + c.p.sld, 0.0f);
      m = mnew;
    }
    float count = 0;
    for (int j = 0; j < nk; ++j) count += sr[j] = sr[j] == mnew ? 1.0f : 0.0f;
    l += count;
    return count;
  }
  if (mnew != m) {
    const float alpha = m == ninf ? 0.0f : std::exp(m - mnew);
    c.tiles.scale_row(o, static_cast<int>(c.p.Dv), alpha);
    l *= alpha;
    if (bucket != nullptr) c.tiles.scale_row(bucket, static_cast<int>(c.p.sld), alpha);
    m = mnew;
  }
  const float psum = bias != nullptr ? c.tiles.exp_sum_add(sr, bias, nk, mnew) : c.tiles.exp_sum(sr, nk, mnew);
  l += psum;
  return psum;
}

/// Scores of one key tile to probabilities (both paths), per row: Shaw key term, soft-capping,
/// distance table, general biases, the mask of a partial tile, then the online-softmax step and
/// the Shaw per-distance probability sums.
template <class E, class TK, class TV>
void softmax_tile(const forward_call<E, TK, TV>& c, item_state& it, const tile_summary& ks, tile_class cls,
                  std::ptrdiff_t j0, int nk) {
  const plan& p = c.p;
  const std::ptrdiff_t b = it.w.b;
  for (std::ptrdiff_t r = 0; r < it.R; ++r) {
    float* sr = it.s + r * p.TK;
    const std::ptrdiff_t h = it.head(r);
    const std::int64_t pos_q = c.pq[static_cast<std::size_t>(b * p.Sq + it.i0 + r % it.nq)];
    if (p.shaw) add_distance_row(c, it.qa + r * it.sw, p.srange, ks, pos_q, b, j0, nk, sr);
    if (p.softcap) c.tiles.softcap(sr, nk, p.cap, p.inv_cap);
    const bool cope_term = p.cope && !p.cope_scaled;  // CoPE's unscaled term comes after the hooks
    const float* bias = score_hooks(c, sr, h, pos_q, ks, b, j0, nk,
                                    cls == tile_class::partial ? it.mk + (r % it.nq) * p.TK : nullptr, !cope_term);
    if (cope_term) c.tiles.add_row(sr, it.ct + r * p.TK, nk);
    float* bucket = p.shaw_value ? it.bucket + r * it.sw : nullptr;
    const std::optional<float> mass = online_softmax_step(c, sr, nk, it.m[r], it.l[r], it.o + r * p.dvp, bucket, bias);
    if (bucket != nullptr && mass) add_buckets(c, ks, pos_q, b, j0, nk, sr, *mass, bucket);
  }
}

/// End of an item (both paths): bfloat16 pair order undone, Shaw value term (probability mass per
/// distance x aV, the PV kernel), then the rows written (o / l) or, for a key chunk, its partials.
template <class E, class TK, class TV>
void end_item(const forward_call<E, TK, TV>& c, item_state& it) {
  const plan& p = c.p;
  const std::ptrdiff_t dvp = p.dvp, R = it.R, nq = it.nq;
  if (p.merge_o)
    for (std::ptrdiff_t r = 0; r < R; ++r) c.v_ops.finish_o(it.o + r * dvp, static_cast<int>(p.Dv));
  if (p.shaw_value) {
    if (c.t.shaw_heads == 1)
      c.tiles.pv_packed({.p = it.bucket,
                         .row_stride = it.sw,
                         .rows = static_cast<int>(R),
                         .keys = static_cast<int>(p.sn),
                         .vt = {c.t.av, dvp},
                         .cols = static_cast<int>(dvp),
                         .o = {it.o, dvp}});
    else
      for (std::ptrdiff_t r = 0; r < R; r += nq)
        c.tiles.pv_packed({.p = it.bucket + r * it.sw,
                           .row_stride = it.sw,
                           .rows = static_cast<int>(nq),
                           .keys = static_cast<int>(p.sn),
                           .vt = {c.t.av + it.head(r) * p.sn * dvp, dvp},
                           .cols = static_cast<int>(dvp),
                           .o = {it.o + r * dvp, dvp}});
  }
  if (p.chunks == 1) {
    for (std::ptrdiff_t r = 0; r < R; ++r)
      finish_row(c, it.w.b, it.i0 + r % nq, it.head(r), it.m[r], it.l[r], it.o + r * dvp);
    return;
  }
  const std::ptrdiff_t stride = 2 + dvp;
  float* part = c.t.partial + (p.item_index(it.w) * p.chunks + it.w.ch) * p.rows_max * stride;
  for (std::ptrdiff_t r = 0; r < R; ++r) {
    part[r * stride] = it.m[r];
    part[r * stride + 1] = it.l[r];
    std::copy_n(it.o + r * dvp, p.Dv, part + r * stride + 2);
  }
}

/// The K/V tile load of the prefill path: keys j0 .. j0 + nk - 1 of kv head g converted to float,
/// K transposed into kt [D][TK] (columns from nk on zeroed) and V into vt [nk][dvp], by the storage
/// records' pack_kt and pack_v (fast/call.hpp).
/// A record with its own tile form (pv_tile: V pairs along keys) packs the tile in one call, from a copy
/// when the tile spans blocks of a paged cache.
template <class E, class TK, class TV>
void load_kv_tile(const forward_call<E, TK, TV>& c, attention_scratch& sc, std::ptrdiff_t b, std::ptrdiff_t g,
                  std::ptrdiff_t j0, int nk, float* kt, float* vt) {
  const plan& p = c.p;
  pack_tile<true>(c.k_ops, c.k, b, g, j0, nk, p.D, kt, p.TK);
  if (c.v_ops.pv_tile != nullptr)
    c.v_ops.pack_v(decode_tile(c.v, b, j0, nk, g, 1, p.Dv, sc.v_stage), static_cast<int>(p.Dv), vt, p.dvp);
  else
    pack_tile<false>(c.v_ops, c.v, b, g, j0, nk, p.Dv, vt, p.dvp);
  if (nk < p.TK)
    for (std::ptrdiff_t d = 0; d < p.D; ++d) std::fill(kt + d * p.TK + nk, kt + (d + 1) * p.TK, 0.0f);
}

/// f(ks, cls, j0, nk) for each key tile item w visits (p.key_tiles) that some of its rows can see:
/// its summary, its class (a partial tile's element mask filled into it.mk), first key, key count.
/// In key order; last to first under CoPE (its positions are sums over the keys after each key).
template <class E, class TK, class TV, class F>
void for_each_key_tile(const forward_call<E, TK, TV>& c, item_state& it, F&& f) {
  const plan& p = c.p;
  const work_item& w = it.w;
  const tile_summary& qs = c.t.qsum[w.b * p.nqt + w.qt];
  const auto [kt0, kt1] = p.key_tiles(w);
  for (std::ptrdiff_t n = kt0; n < kt1; ++n) {
    const std::ptrdiff_t kti = p.cope ? kt1 - 1 - (n - kt0) : n;
    const tile_summary& ks = c.t.ksum[w.b * p.nkt + kti];
    const tile_class cls = classify(c.o, qs, ks);
    if (cls == tile_class::skip) continue;
    const std::ptrdiff_t j0 = kti * p.TK;
    const int nk = static_cast<int>(std::min<std::ptrdiff_t>(p.TK, p.Sk - j0));
    if (cls == tile_class::partial) fill_tile_mask(c.mask, w.b, it.i0, it.nq, j0, nk, it.mk, p.TK);
    f(ks, cls, j0, nk);
  }
}

/// DeBERTa's p2c term of one key tile into the item's scores, scaled with the content logit: per query
/// head, k_j . aQ over the distances the (query tile, key tile) pair can see (the PV kernel reading
/// the packed K^T transposed, into sc.p2c [nk][cols]), then each row gathers its keys' columns.
template <class E, class TK, class TV>
void add_p2c_tile(const forward_call<E, TK, TV>& c, item_state& it, attention_scratch& sc, const tile_summary& ks,
                  std::ptrdiff_t j0, int nk) {
  const plan& p = c.p;
  const std::ptrdiff_t b = it.w.b;
  const tile_summary& qs = c.t.qsum[b * p.nqt + it.w.qt];
  const std::ptrdiff_t x0 = table_index(p.srange, saturating_difference(ks.pmin, qs.pmax)),
                       x1 = table_index(p.srange, saturating_difference(ks.pmax, qs.pmin));
  const auto cols = static_cast<int>((x1 - x0 + 64) / 64 * 64);
  float* kq = grow(sc.p2c, static_cast<std::size_t>(nk) * static_cast<std::size_t>(cols));
  for (std::ptrdiff_t r0 = 0; r0 < it.R; r0 += it.nq) {
    c.tiles.pv_packed({.p = it.kt,
                       .row_stride = 1,
                       .key_stride = p.TK,
                       .rows = nk,
                       .keys = static_cast<int>(p.D),
                       .vt = {c.t.aq + it.head(r0) * p.D * p.sld + x0, p.sld},
                       .cols = cols,
                       .o = {kq, cols},
                       .accumulate = false});
    for (std::ptrdiff_t r = r0; r < r0 + it.nq; ++r) {
      const std::int64_t pos_q = c.pq[static_cast<std::size_t>(b * p.Sq + it.i0 + r % it.nq)];
      float* sr = it.s + r * p.TK;
      for (int j = 0; j < nk; ++j) sr[j] += c.scale * kq[j * cols + key_column(c, p.srange, pos_q, b, j0 + j) - x0];
    }
  }
}

/// A prefill work item (kv_path::prefill, one kv head): per key tile, classify, load and pack K/V
/// once for all G nq rows, QK^T, softmax_tile, PV on the packed V; the products of the K / V record's
/// own tile form where it has one (bfloat16 pair tiles on vdpbf16ps), else the float tile record's.
template <class E, class TK, class TV>
void prefill_item(const forward_call<E, TK, TV>& c, detail::attention_scratch& sc, const work_item& w) {
  const plan& p = c.p;
  item_state it = begin_item(c, sc, w);
  if constexpr (contextual_position_encoding<E>) begin_contextual(c, it, sc);
  const std::ptrdiff_t TK_ = p.TK, dvp = p.dvp, nq = it.nq;
  const auto qk = c.k_ops.qk_tile != nullptr ? c.k_ops.qk_tile : c.tiles.qk_packed;
  const auto pv = c.v_ops.pv_tile != nullptr ? c.v_ops.pv_tile : c.tiles.pv_packed;
  const auto nonfinite = [&](std::ptrdiff_t j0, int j) {  // key j0 + j's value (its row when the tile is pairs)
    return c.v_ops.pv_tile != nullptr ? any_nonfinite(c.v.row(w.b, j0 + j, it.g), p.Dv)
                                      : any_nonfinite(it.vt + j * dvp, p.Dv);
  };
  for_each_key_tile(c, it, [&](const tile_summary& ks, tile_class cls, std::ptrdiff_t j0, int nk) {
    load_kv_tile(c, sc, w.b, it.g, j0, nk, it.kt, it.vt);
    qk({.q = c.k_ops.qk_tile != nullptr ? it.kq : it.rows,
        .rows = static_cast<int>(it.R),
        .dim = static_cast<int>(p.D),
        .scale = p.cope ? 1.0f : c.scale,  // CoPE scales after its gates (contextual_tile)
        .kt = {it.kt, TK_},
        .s = {it.s, TK_}});
    if constexpr (contextual_position_encoding<E>) contextual_tile(c, it, cls, j0, nk);
    if constexpr (any_leaf_relative_query<E>()) add_p2c_tile(c, it, sc, ks, j0, nk);
    softmax_tile(c, it, ks, cls, j0, nk);
    // A masked key has p = 0, but 0 x Inf / NaN is NaN: when a key masked for some row holds a value
    // that is not finite, each row takes its visible keys only (runs of them, per query token).
    if (cls == tile_class::partial && any_masked_key(it.mk, nq, TK_, nk, [&](int j) { return nonfinite(j0, j); }))
      for_visible_runs(it.mk, nq, TK_, nk, [&](std::ptrdiff_t t, int a, int e) {
        pv({.p = it.s + t * TK_ + a,
            .row_stride = nq * TK_,
            .rows = static_cast<int>(p.G),
            .keys = e - a,
            .vt = {it.vt, dvp},
            .cols = static_cast<int>(dvp),
            .o = {it.o + t * dvp, nq * dvp},
            .first = a});
      });
    else
      pv({.p = it.s,
          .row_stride = TK_,
          .rows = static_cast<int>(it.R),
          .keys = nk,
          .vt = {it.vt, dvp},
          .cols = static_cast<int>(dvp),
          .o = {it.o, dvp}});
  });
  end_item(c, it);
}

/// QK^T of one decode key tile (keys j0 .. j0 + nk - 1) over every kv head of the item, by the key
/// record's in-place kernel. A paged tile spanning blocks of a multiple of 4 tokens goes block by
/// block, with no copy (by_block): the key kernels take keys in groups of 4 from the tile's first,
/// so each block's keys meet the arithmetic of one call over the tile (the same bits); other tiles
/// are read in place or copied (decode_tile), with the K rows past the tile in the same run asked
/// for ahead. The V rows of the tile's tokens are asked for into L2 beside their keys. Returns the
/// placed V tile (none by block), which PV reads.
template <class E, class TK, class TV>
kernels::tile_rows<TV> decode_qk(const forward_call<E, TK, TV>& c, const item_state& it, attention_scratch& sc,
                                 std::ptrdiff_t j0, int nk, bool by_block) {
  const plan& p = c.p;
  const std::ptrdiff_t b = it.w.b, g = it.g;
  constexpr auto elem = static_cast<std::ptrdiff_t>(sizeof(TV));
  kernels::qk_in_place a{.q = it.queries(p.gpi, p.D), .scale = c.scale, .v_row_bytes = kv_row_bytes<TV>(p.Dv)};
  if (by_block) {
    for_block_runs(c.k, j0, nk, [&](int x, int e) {
      a.s = {it.s + x, p.TK};
      a.v = c.v.row(b, j0 + x, g);
      a.v_token_bytes = c.v.stride(axis::token) * elem;
      a.v_head_bytes = c.v.stride(axis::head) * elem;
      c.k_ops.qk(a, c.k.tile(b, j0 + x, g, e - x));
    });
    return {};
  }
  const kernels::tile_rows<TK> kr = decode_tile(c.k, b, j0, nk, g, p.gpi, p.D, sc.k_stage);
  const kernels::tile_rows<TV> vr = decode_tile(c.v, b, j0, nk, g, p.gpi, p.Dv, sc.v_stage);
  a.s = {it.s, p.TK};
  a.runs = p.runs;
  a.v = vr.p;
  a.v_token_bytes = vr.token_stride * elem;
  a.v_head_bytes = vr.head_stride * elem;
  // keys past the tile in the same run, which the kernel may ask for ahead (none for a copy)
  a.k_more =
      c.k.run(j0) >= nk ? static_cast<int>(std::min<std::ptrdiff_t>({c.k.run(j0) - nk, p.Sk - j0 - nk, p.TK})) : 0;
  c.k_ops.qk(a, kr);
  return vr;
}

/// PV of one decode key tile by the value record's in-place kernel. As prefill: when a key masked for
/// some row holds a value that is not finite (0 x Inf is NaN), each row takes its visible runs, on a
/// placed tile (a tile spanning blocks is copied for it). Else a paged tile spanning blocks goes block
/// by block, block a asking for block a of the next tile's K rows into L2, and a placed tile in one
/// call, asking for the next tile's K rows when they lie one token stride apart.
template <class E, class TK, class TV>
void decode_pv(const forward_call<E, TK, TV>& c, const item_state& it, attention_scratch& sc, tile_class cls,
               std::ptrdiff_t j0, int nk, bool by_block, kernels::tile_rows<TV> vr) {
  const plan& p = c.p;
  const std::ptrdiff_t TK_ = p.TK, dvp = p.dvp, nq = it.nq, b = it.w.b, g = it.g;
  const auto masked_nonfinite = [&](int j) {
    for (std::ptrdiff_t gi = 0; gi < p.gpi; ++gi)
      if (any_nonfinite(c.v.row(b, j0 + j, g + gi), p.Dv)) return true;
    return false;
  };
  const auto rows = [&](const float* s, std::ptrdiff_t ss, std::ptrdiff_t per_head, float* o, std::ptrdiff_t os) {
    return kernels::pv_in_place{.p = {s, ss},
                                .per_head = static_cast<int>(per_head),
                                .heads = static_cast<int>(p.gpi),
                                .dim = static_cast<int>(p.Dv),
                                .o = {o, os}};
  };
  if (cls == tile_class::partial && any_masked_key(it.mk, nq, TK_, nk, masked_nonfinite)) {
    if (by_block) vr = decode_tile(c.v, b, j0, nk, g, p.gpi, p.Dv, sc.v_stage);
    for_visible_runs(it.mk, nq, TK_, nk, [&](std::ptrdiff_t t, int a, int e) {
      c.v_ops.pv(rows(it.s + t * TK_ + a, nq * TK_, p.G, it.o + t * dvp, nq * dvp),
                 {vr.p + a * vr.token_stride, vr.token_stride, vr.head_stride, e - a});
    });
    return;
  }
  const std::ptrdiff_t next = j0 + TK_, nn = std::min<std::ptrdiff_t>(TK_, p.Sk - next);
  if (by_block) {
    for_block_runs(c.v, j0, nk, [&](int a, int e) {
      kernels::pv_in_place x = rows(it.s + a, TK_, it.Rg, it.o, dvp);
      const std::ptrdiff_t n = next + a < p.Sk ? std::min<std::ptrdiff_t>({e - a, nn - a, c.k.run(next + a)}) : 0;
      if (n > 0) x.k_next = c.k.row(b, next + a, g), x.k_next_bytes = n * c.k.token_bytes();
      c.v_ops.pv(x, c.v.tile(b, j0 + a, g, e - a));
    });
    return;
  }
  kernels::pv_in_place x = rows(it.s, TK_, it.Rg, it.o, dvp);
  x.runs = p.runs;
  if (next < p.Sk && c.k.run(next) >= nn) x.k_next = c.k.row(b, next, g), x.k_next_bytes = nn * c.k.token_bytes();
  c.v_ops.pv(x, vr);
}

/// A decode work item (kv_path::decode, gpi kv heads): per key tile, classify, QK^T and PV by the
/// in-place kernels straight from the K/V rows (every kv head of a token together, the next rows
/// prefetched), softmax_tile between them.
template <class E, class TK, class TV>
void decode_item(const forward_call<E, TK, TV>& c, detail::attention_scratch& sc, const work_item& w) {
  item_state it = begin_item(c, sc, w);
  for_each_key_tile(c, it, [&](const tile_summary& ks, tile_class cls, std::ptrdiff_t j0, int nk) {
    const bool by_block = c.k.run(j0) < nk && c.k.block_size % 4 == 0;
    const kernels::tile_rows<TV> vr = decode_qk(c, it, sc, j0, nk, by_block);
    softmax_tile(c, it, ks, cls, j0, nk);
    decode_pv(c, it, sc, cls, j0, nk, by_block, vr);
  });
  end_item(c, it);
}

/// Merges the key chunks of item w's query side in chunk order (log-sum-exp) and writes the rows.
template <class E, class TK, class TV>
void merge_item(const forward_call<E, TK, TV>& c, detail::attention_scratch& sc, const work_item& w) {
  const plan& p = c.p;
  const std::ptrdiff_t i0 = w.qt * p.TQ, nq = p.tile_queries(w.qt), R = p.gpi * p.G * nq;
  const std::ptrdiff_t g = w.gs * p.gpi, item = p.item_index(w), stride = 2 + p.dvp;
  float* o = detail::grow(sc.f, static_cast<std::size_t>(p.dvp));
  for (std::ptrdiff_t r = 0; r < R; ++r) {
    float mx = -std::numeric_limits<float>::infinity();
    for (std::ptrdiff_t ch = 0; ch < p.chunks; ++ch)
      mx = std::max(mx, c.t.partial[((item * p.chunks + ch) * p.rows_max + r) * stride]);
    float l = 0;
    bool nan = false;  // a chunk saw a NaN logit: the row is NaN
    std::fill(o, o + p.Dv, 0.0f);
    for (std::ptrdiff_t ch = 0; ch < p.chunks; ++ch) {
      const float* part = c.t.partial + ((item * p.chunks + ch) * p.rows_max + r) * stride;
      nan = nan || part[1] != part[1];
      if (part[0] == -std::numeric_limits<float>::infinity() || part[1] != part[1]) continue;
      const float f = part[0] == mx ? 1.0f : std::exp(part[0] - mx);  // mx = +inf: exp(inf - inf) is NaN
      l += part[1] * f;
      for (std::ptrdiff_t d = 0; d < p.Dv; ++d) o[d] += part[2 + d] * f;
    }
    if (nan) l = std::numeric_limits<float>::quiet_NaN();
    finish_row(c, w.b, i0 + r % nq, g * p.G + r / nq, mx, l, o);
  }
}

/// Checks shapes and options exactly as sdpa does (same names in the errors), plus the fast-only ones.
template <class TK, class TV, class E>
void validate_call(tensor_view<const float> q, tensor_view<const TK> k, tensor_view<const TV> v, tensor_view<float> out,
                   const E& enc, const attention_options& o, const fast_attention_options& f) {
  if constexpr (is_q8_0<TK>)
    detail::require(q.dim() % block_q8_0::values == 0, "q.dim", q.dim(), "a multiple of 32 (q8_0 keys)");
  if constexpr (is_q8_0<TV>)
    detail::require(out.dim() % block_q8_0::values == 0, "out.dim", out.dim(), "a multiple of 32 (q8_0 values)");
  detail::check_attention_shapes(q, shape_view(k), shape_view(v), out, o);
  detail::require_shape(!overlaps(out, k), "out", "a view overlapping k", "memory disjoint from k and v");
  detail::require_shape(!overlaps(out, v), "out", "a view overlapping v", "memory disjoint from k and v");
  detail::require(o.weights.empty(), "attention.weights", "given",
                  "empty: posenc::attention never forms the weight matrix (ask sdpa for weights)");
  detail::require(f.key_tile >= 64 && f.key_tile % 64 == 0, "fast_attention.key_tile", f.key_tile,
                  "a positive multiple of 64");
  detail::require(f.query_tile >= 0, "fast_attention.query_tile", f.query_tile, ">= 0 (0 = automatic)");
  if (f.split_keys < f.key_tile || f.split_keys % f.key_tile != 0)  // the message is built only on failure
    detail::require(false, "fast_attention.split_keys", f.split_keys,
                    "a positive multiple of key_tile = " + std::to_string(f.key_tile));
  detail::require(f.max_bias_table >= 0, "fast_attention.max_bias_table", f.max_bias_table, ">= 0");
  if (!f.log_sum_exp.empty())
    detail::require_shape(f.log_sum_exp.size() == static_cast<std::size_t>(q.batch() * q.heads() * q.tokens()),
                          "fast_attention.log_sum_exp", f.log_sum_exp.size(), "batch * q.heads * q.tokens (or empty)");
  detail::require_encoder_fits(enc, q.dim(), q.heads());
}

/// Stage 3: the plan's work items on the executor (prefill or decode items), then, for key chunks,
/// one merge per query-side item.
template <class E, class TK, class TV>
void run_items(const forward_call<E, TK, TV>& c, attention_workspace& ws, const parallel_for& executor) {
  const plan& p = c.p;
  run_parallel(executor, p.work_items(), [&](std::ptrdiff_t n) {
    scratch_slot slot(ws);
    if (p.path == kv_path::prefill)
      prefill_item(c, slot.get(), p.item(n));
    else
      decode_item(c, slot.get(), p.item(n));
  });
  if (p.chunks > 1)
    run_parallel(executor, p.items, [&](std::ptrdiff_t n) {
      scratch_slot slot(ws);
      merge_item(c, slot.get(), p.item(n * p.chunks));
    });
}

/// The forward's call over operands x planned as p, its tables built (stage 2) in ws.
template <class E, class TK, class TV>
forward_call<E, TK, TV> forward_call_of(const plan& p, const kernels::attention_kernels& kern, const E& enc,
                                        const attention_options& o, const forward_operands<TK, TV>& x, float scale,
                                        float* lse, attention_workspace& ws) {
  const kernels::storage_kernels<TK>& k_ops = key_records<TK>(kern, p);
  return {{.p = p,
           .enc = enc,
           .o = o,
           .mask = *x.mask,
           .tiles = kern.tiles,
           .k_ops = k_ops,
           .v_ops = value_records<TV>(kern, p),
           .q = x.q,
           .k = x.k,
           .v = x.v,
           .pq = x.mask->query_positions(),
           .pk = x.mask->key_positions(),
           .scale = scale,
           .t = build_tables(p, enc, o, *x.mask, x.q, k_ops, ws)},
          x.out,
          lse};
}

/// Plan (stage 1), tables (stage 2), work items (stage 3) on the operands as given to the kernels.
template <class E, class TK, class TV>
void run(const forward_operands<TK, TV>& x, const E& enc, const attention_options& o, const fast_attention_options& f,
         attention_workspace& ws, float scale) {
  const kernels::attention_kernels& kern = kernels::active_attention_kernels();
  const plan p = make_plan(plan_input_of(x.q, x.k, x.v, x.Sk, kern), hook_facts_of(enc, call_distances(*x.mask)), o, f);
  float* lse = f.log_sum_exp.empty() ? nullptr : f.log_sum_exp.data();
  run_items(forward_call_of(p, kern, enc, o, x, scale, lse, ws), ws, f.executor);
}

/// out overlaps q other than row for row (same address, strides and size: each work item reads its
/// own q rows before it writes the same out rows): q is then read from a copy, else an item could
/// overwrite q rows another item has still to read.
[[nodiscard]] inline bool out_overlaps_queries(tensor_view<const float> q, tensor_view<float> out) noexcept {
  const bool same_rows = q.data() == out.data() && q.dim() == out.dim() &&
                         q.stride(axis::batch) == out.stride(axis::batch) &&
                         q.stride(axis::token) == out.stride(axis::token) &&
                         q.stride(axis::head) == out.stride(axis::head) && q.stride(axis::dim) == out.stride(axis::dim);
  return !same_rows && overlaps(out, q);
}

/// No key (Sk = 0, an empty cache): every row attends to nothing, zeros with or without sinks (as
/// sdpa); each row's log-sum-exp is its sink's logit, or -inf.
inline void attend_to_nothing(tensor_view<float> out, const attention_options& o, std::span<float> lse) {
  zero_view(out);
  const auto Sq = static_cast<std::size_t>(out.tokens()), Hq = static_cast<std::size_t>(out.heads());
  for (std::size_t n = 0; n < lse.size(); ++n)  // [B, Hq, Sq]
    lse[n] = o.sinks.empty() ? -std::numeric_limits<float>::infinity() : static_cast<float>(o.sinks[(n / Sq) % Hq]);
}

/// The whole forward call: validation, hook-2 copies, then run() on the (possibly transformed) operands.
template <kv_element TK, kv_element TV, positional_encoding E>
void fast_attention(tensor_view<const float> q, tensor_view<const TK> k, tensor_view<const TV> v,
                    tensor_view<float> out, const E& enc, const attention_options& o, const fast_attention_options& f) {
  static_assert(all_relative_kv_by_distance<E>(),
                "posenc::attention needs relative_kv encoders in distance form (distance_relative_kv_encoding)");
  static_assert(all_relative_query_by_distance<E>(),
                "posenc::attention needs relative_query encoders in distance form "
                "(distance_relative_query_encoding)");
  validate_call(q, k, v, out, enc, o, f);
  const std::ptrdiff_t B = q.batch(), Sq = q.tokens(), Hq = q.heads(), D = q.dim(), Sk = k.tokens();
  const attention_mask mask(o, B, Sq, Sk);
  const float scale = static_cast<float>(detail::softmax_scale(enc, o, D));
  if (B > 0 && Hq > 0) check_relative_sizes(enc, mask, D, kv_dim(v));
  if (B == 0 || Sq == 0 || Hq == 0 || kv_dim(v) == 0) return;
  if (Sk == 0) return attend_to_nothing(out, o, f.log_sum_exp);
  attention_workspace local;
  attention_workspace& ws = f.workspace ? *f.workspace : local;
  q = kernel_queries(q, out_overlaps_queries(q, out), enc, o, mask, ws);
  if constexpr (qk_transform_encoding<E>)
    if (o.transform_keys)
      return run<E, float, TV>({q, {transformed_keys(k, enc, mask, ws)}, {v}, out, Sk, &mask}, enc, o, f, ws, scale);
  run<E, TK, TV>({q, {k}, {v}, out, Sk, &mask}, enc, o, f, ws, scale);
}

}  // namespace posenc::inline v0::detail
