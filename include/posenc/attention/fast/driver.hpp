// posenc/attention/fast/driver.hpp — the fused, tiled attention behind posenc::attention: query x
// key tiles, online softmax (running max and sum, FlashAttention-2 order), fp32 accumulation.
//
// In stages (docs/attention.md, "The driver in stages"):
//   1. plan (fast/plan.hpp): tile sizes, prefill or decode path, key chunks, the work items and
//      the hook paths, from shapes and options only;
//   2. build_tables: tile summaries, the distance table, Shaw's tables, prepared q rows;
//   3. run_items: each work item, prefill_item or decode_item, then the key-chunk merges.
// One work item = (sequence b, kv head(s), query tile[, key chunk]); its rows are every query head
// of the GQA group times the tile's query tokens, so each K/V tile is read (and, for prefill,
// packed by load_kv_tile) once for all of them. Per key tile: classify from per-tile
// position/padding/segment summaries (skip: nothing visible; full: no mask work; partial: the
// element mask from attention_mask), QK^T, then softmax_tile (hooks, mask, the online-softmax step
// shared by both paths), PV. Work is cut by shape only, so the result is bit-identical for any
// thread count. Not here: the weights output (declined), double inputs (use sdpa), dropout.
// Attention chunks (attention_options::attention_chunk) are a tile class like the window: key tiles
// in no chunk of the query tile are skipped. Logit soft-capping runs on each score row right after
// the Shaw key term, before the biases and the mask (the order of attention/options.hpp).
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

#include <posenc/attention/fast/encoder_paths.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/attention/fast/kv_q8_0.hpp>
#include <posenc/attention/fast/options.hpp>
#include <posenc/attention/fast/plan.hpp>
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

enum class tile_class : unsigned char { skip, full, partial };

inline tile_class classify(const attention_options& o, const tile_summary& q, const tile_summary& k) noexcept {
  if (k.visible == 0 || q.count == 0) return tile_class::skip;
  bool full = k.visible == k.count;
  if (!o.query_segments.empty()) {
    if (q.smax < 0 || k.smax < 0 || q.smax < k.smin || k.smax < q.smin) return tile_class::skip;
    full = full && q.smin == q.smax && k.smin == k.smax && q.smin == k.smin && q.smin >= 0;
  }
  const std::int64_t dlo = saturating_difference(q.pmin, k.pmax), dhi = saturating_difference(q.pmax, k.pmin);  // pos_q - pos_k
  if (o.causal) {
    if (dhi < 0) return tile_class::skip;
    full = full && dlo >= 0;
  }
  if (o.sliding_window) {
    const std::int64_t w = *o.sliding_window;
    if (dlo >= w || (!o.causal && dhi <= -w)) return tile_class::skip;
    full = full && dhi < w && (o.causal || dlo > -w);
  }
  if (o.attention_chunk) {  // the chunks the query tile spans against those of the key tile
    const std::int64_t ch = *o.attention_chunk;
    const std::int64_t qlo = attention_mask::chunk_of(q.pmin, ch), qhi = attention_mask::chunk_of(q.pmax, ch);
    const std::int64_t klo = attention_mask::chunk_of(k.pmin, ch), khi = attention_mask::chunk_of(k.pmax, ch);
    if (khi < qlo || qhi < klo) return tile_class::skip;
    full = full && qlo == qhi && klo == khi && qlo == klo;
  }
  return full ? tile_class::full : tile_class::partial;
}

/// Maps distance d into a table over range r (clamped: outside r the hook is constant).
[[nodiscard]] inline std::ptrdiff_t table_index(distance_range r, std::int64_t d) noexcept {
  return static_cast<std::ptrdiff_t>(std::clamp(d, r.lo, r.hi) - r.lo);
}

/// The decode path's in-place kernels for storage TK / TV (the AVX512_BF16 forms where the plan
/// takes them), chosen once per call.
template <class TK, class TV>
struct in_place_kernels {
  decltype(std::declval<detail::tile_kernels>().template qk_heads<TK>()) qk = nullptr;
  decltype(std::declval<detail::tile_kernels>().template pv_heads<TV>()) pv = nullptr;
};

/// K or V rows as the work items read them: a strided view, or one sequence's blocks of a paged
/// cache (attention/paged.hpp: the pool is a view [blocks, block_size, heads, dim], key j of the
/// sequence is slot j % block_size of block blocks[j / block_size]; b is then 0).
template <class T>
struct kv_rows {
  tensor_view<const T> view;
  const std::int32_t* blocks = nullptr;  // paged: the sequence's block ids; null: view is the operand
  std::ptrdiff_t block_size = 0;
  std::ptrdiff_t nblocks = 0;  // paged: the ids the sequence's keys use (ceil(keys / block_size))

  [[nodiscard]] const T* row(std::ptrdiff_t b, std::ptrdiff_t j, std::ptrdiff_t h) const noexcept {
    if (blocks == nullptr) return view.row(b, j, h);
    return view.row(blocks[j / block_size], j % block_size, h);
  }
  [[nodiscard]] std::ptrdiff_t stride(axis a) const noexcept { return view.stride(a); }
  /// Keys from j on that lie one token stride apart: all for a view; if paged, the rest of j's block
  /// and of the blocks after it that follow it in the pool (ids x, x + 1, ... of a pool that stores
  /// its blocks back to back, as a fresh pool hands them out), up to max_run keys.
  static constexpr std::ptrdiff_t max_run = 512;
  [[nodiscard]] std::ptrdiff_t run(std::ptrdiff_t j) const noexcept {
    if (blocks == nullptr) return std::numeric_limits<std::ptrdiff_t>::max();
    std::ptrdiff_t x = j / block_size, n = block_size - j % block_size;
    if (view.stride(axis::batch) == block_size * view.stride(axis::token))
      for (; n < max_run && x + 1 < nblocks && blocks[x + 1] == blocks[x] + 1; ++x) n += block_size;
    return n;
  }
};

/// Rows of one key tile for the in-place kernels: key a of head gi at p + a ts + gi hs.
template <class T>
struct tile_rows {
  const T* p;
  std::ptrdiff_t ts, hs;
};

/// The K/V tile load of the decode path: keys j0 .. j0 + nk - 1 of kv heads g .. g + heads - 1 in
/// place when they lie one token stride apart (a view; a tile inside one block of a paged cache),
/// else copied into `stage` as [nk][heads][dim] (a tile spanning blocks). The kernels read the same
/// values either way, so the result does not depend on where the tile lives.
template <class T>
tile_rows<T> decode_tile(const kv_rows<T>& x, std::ptrdiff_t b, std::ptrdiff_t j0, int nk, std::ptrdiff_t g,
                         std::ptrdiff_t heads, std::ptrdiff_t dim, std::vector<std::byte>& stage) {
  if (x.run(j0) >= nk) return {x.row(b, j0, g), x.stride(axis::token), x.stride(axis::head)};
  const std::ptrdiff_t n = dim / values_per_element<T>;  // elements of a row (q8_0: blocks)
  const auto row_bytes = static_cast<std::size_t>(n) * sizeof(T);
  std::byte* buf = detail::grow(stage, static_cast<std::size_t>(nk * heads) * row_bytes);
  for (int j = 0; j < nk; ++j)
    for (std::ptrdiff_t gi = 0; gi < heads; ++gi)
      std::memcpy(buf + static_cast<std::size_t>(j * heads + gi) * row_bytes, x.row(b, j0 + j, g + gi), row_bytes);
  return {reinterpret_cast<const T*>(buf), heads * n, n};
}

/// f(a, e) for each run [a, e) of keys j0 + a .. j0 + e - 1 inside one block (the whole tile for a view).
template <class T, class F>
void for_block_runs(const kv_rows<T>& x, std::ptrdiff_t j0, int nk, F&& f) {
  for (int a = 0; a < nk;) {
    const int e = a + static_cast<int>(std::min<std::ptrdiff_t>(nk - a, x.run(j0 + a)));
    f(a, e);
    a = e;
  }
}

/// The per-call tables of stage 2 (build_tables): what the work items read besides the operands.
struct call_tables {
  const tile_summary *qsum = nullptr, *ksum = nullptr;  // [B][nqt], [B][nkt]
  const float* table = nullptr;                         // distance table [Hq][tn]
  std::ptrdiff_t shaw_heads = 1;                        // Shaw tables per head (Hq) or shared (1)
  const float *ak = nullptr, *av = nullptr;             // [shaw_heads][D][sld] (transposed), [shaw_heads][sn][dvp]
  // bfloat16 K in place: q rows prepared once per call for the key kernel (split_q_bf16's pair order,
  // or round_q_bf16_dot; for q8_0 keys prep_q_q8_dot), row (b, i, h) at qk_q + ((b Sq + i) Hq + h)
  // qk_q_stride; null: the kernel reads q rows
  const float* qk_q = nullptr;
  std::ptrdiff_t qk_q_stride = 0;
  float* partial = nullptr;  // key-chunk partials [items][chunks][rows_max][2 + dvp]
};

/// Everything one call shares between its work items (built with named fields in run()).
template <class E, class TK, class TV>
struct call {
  const plan& p;
  const E& enc;
  const attention_options& o;
  const attention_mask& mask;
  const detail::tile_kernels& kern;
  in_place_kernels<TK, TV> in_place;
  tensor_view<const float> q;
  kv_rows<TK> k;
  kv_rows<TV> v;
  tensor_view<float> out;
  std::span<const std::int64_t> pq, pk;
  float scale = 1;
  call_tables t;
  float* lse = nullptr;  // fast_attention_options::log_sum_exp, [B, Hq, Sq], or null
};

/// Adds the general-path biases (score-bias leaves not covered by the table) of row (h, pos_q).
template <class E, class C>
void add_general_bias(const E& enc, const C& c, std::ptrdiff_t h, std::int64_t pos_q, std::ptrdiff_t b,
                      std::ptrdiff_t j0, int nk, float* s) {
  for_each_leaf(enc, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (score_bias_encoding<L>) {
      if (distance_bias_encoding<L> && c.p.use_table) return;
      for (int j = 0; j < nk; ++j)
        s[j] += static_cast<float>(leaf.bias(h, pos_q, c.pk[static_cast<std::size_t>(b * c.p.Sk + j0 + j)]));
    }
  });
}

/// The per-row constant of the table path (query_bias of the distance leaves), double.
template <class E, class C>
double table_query_bias(const E& enc, const C& c, std::ptrdiff_t h, std::int64_t pos_q) {
  double r = 0;
  if (!c.p.use_table) return r;
  for_each_leaf(enc, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (distance_bias_encoding<L>) r += static_cast<double>(leaf.query_bias(h, pos_q));
  });
  return r;
}

/// Adds row `tab` (a distance table over range r) for keys j0.. of sequence b to s.
template <class C>
void add_distance_row(const C& c, const float* tab, distance_range r, const tile_summary& ks, std::int64_t pos_q,
                      std::ptrdiff_t b, std::ptrdiff_t j0, int nk, float* s) {
  const std::int64_t* pk = c.pk.data() + b * c.p.Sk + j0;
  if (ks.contiguous) {
    const std::int64_t d0 = saturating_difference(pk[0], pos_q), d1 = saturating_difference(pk[nk - 1], pos_q);
    if (d1 <= r.lo || d0 >= r.hi) {  // the whole row saturates: one constant
      c.kern.add_const(s, tab[d1 <= r.lo ? 0 : r.hi - r.lo], nk);
      return;
    }
    if (d1 - d0 == nk - 1) {  // keys [0, a) clip to r.lo, [a, e) are a slice of the table, [e, nk) clip to r.hi
      const auto a = static_cast<int>(std::clamp<std::int64_t>(saturating_difference(r.lo, d0), 0, nk));
      const auto e = static_cast<int>(std::clamp<std::int64_t>(saturating_difference(r.hi, d0), -1, nk - 1) + 1);
      if (a > 0) c.kern.add_const(s, tab[0], a);
      if (e > a) c.kern.add_row(s + a, tab + (d0 + a - r.lo), e - a);
      if (e < nk) c.kern.add_const(s + std::max(a, e), tab[r.hi - r.lo], nk - std::max(a, e));
      return;
    }
  }
  for (int j = 0; j < nk; ++j) s[j] += tab[table_index(r, saturating_difference(pk[j], pos_q))];
}

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
  const double qb = table_query_bias(c.enc, c, h, c.pq[static_cast<std::size_t>(b * c.p.Sq + i)]);
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
    const double sink = c.o.sinks[static_cast<std::size_t>(h)] -
                        table_query_bias(c.enc, c, h, c.pq[static_cast<std::size_t>(b * c.p.Sq + i)]);
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

  [[nodiscard]] std::ptrdiff_t head(std::ptrdiff_t r) const noexcept { return g * G + r / nq; }
};

/// Start of an item (both paths): scratch laid out, running state reset, q row pointers, and the
/// Shaw key term q . aK over the call's distances once per row (the QK^T kernel on the transposed aK).
template <class E, class TK, class TV>
item_state begin_item(const call<E, TK, TV>& c, detail::attention_scratch& sc, const work_item& w) {
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
  if (c.t.qk_q != nullptr) {
    const float** kq = it.rows + nR;
    for (std::ptrdiff_t r = 0; r < it.R; ++r)
      kq[r] = c.t.qk_q + ((w.b * p.Sq + it.i0 + r % nq) * p.Hq + it.head(r)) * c.t.qk_q_stride;
    it.kq = kq;
  }
  if (p.shaw) {
    if (c.t.shaw_heads == 1)
      c.kern.qk_packed(it.rows, static_cast<int>(it.R), c.t.ak, it.sw, static_cast<int>(D), c.scale, it.qa, it.sw);
    else
      for (std::ptrdiff_t r = 0; r < it.R; r += nq)
        c.kern.qk_packed(it.rows + r, static_cast<int>(nq), c.t.ak + it.head(r) * D * it.sw, it.sw, static_cast<int>(D),
                         c.scale, it.qa + r * it.sw, it.sw);
  }
  return it;
}

/// The element mask of a partial tile: mk[t][j] = query token i0 + t sees key j0 + j.
template <class C>
void tile_mask(const C& c, item_state& it, std::ptrdiff_t j0, int nk) {
  for (std::ptrdiff_t t = 0; t < it.nq; ++t)
    for (int j = 0; j < nk; ++j) it.mk[t * c.p.TK + j] = c.mask.allowed(it.w.b, it.i0 + t, j0 + j) ? 1 : 0;
}

/// The online-softmax step of one row over one key tile (FlashAttention-2 order), shared by the
/// prefill and decode paths: the tile's row max, the running output o, sum l and Shaw buckets
/// rescaled to the new max m, exp, sum update. sr holds the row's nk scores (masked ones -inf) and
/// becomes its unnormalised probabilities (0 where nothing counts). Returns the weight mass the
/// tile added when sr holds probabilities for the Shaw value term, nothing otherwise.
template <class C>
std::optional<float> online_softmax_step(const C& c, float* sr, int nk, float& m, float& l, float* o, float* bucket) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  const float rmax = c.kern.row_max(sr, nk);
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
    c.kern.scale_row(o, static_cast<int>(c.p.Dv), alpha);
    l *= alpha;
    if (bucket != nullptr) c.kern.scale_row(bucket, static_cast<int>(c.p.sld), alpha);
    m = mnew;
  }
  const float psum = c.kern.exp_sum(sr, nk, mnew);
  l += psum;
  return psum;
}

/// Scores of one key tile to probabilities (both paths), per row: Shaw key term, soft-capping,
/// distance table, general biases, the mask of a partial tile, then the online-softmax step and
/// the Shaw per-distance probability sums.
template <class E, class TK, class TV>
void softmax_tile(const call<E, TK, TV>& c, item_state& it, const tile_summary& ks, tile_class cls, std::ptrdiff_t j0,
                  int nk) {
  const plan& p = c.p;
  const std::ptrdiff_t b = it.w.b;
  for (std::ptrdiff_t r = 0; r < it.R; ++r) {
    float* sr = it.s + r * p.TK;
    const std::ptrdiff_t h = it.head(r);
    const std::int64_t pos_q = c.pq[static_cast<std::size_t>(b * p.Sq + it.i0 + r % it.nq)];
    if (p.shaw) add_distance_row(c, it.qa + r * it.sw, p.srange, ks, pos_q, b, j0, nk, sr);
    if (p.softcap) c.kern.softcap(sr, nk, p.cap, p.inv_cap);
    if (p.use_table) add_distance_row(c, c.t.table + h * p.tn, p.trange, ks, pos_q, b, j0, nk, sr);
    if constexpr (score_bias_encoding<E>) add_general_bias(c.enc, c, h, pos_q, b, j0, nk, sr);
    if (cls == tile_class::partial) {
      const std::uint8_t* mr = it.mk + (r % it.nq) * p.TK;
      for (int j = 0; j < nk; ++j) sr[j] = mr[j] ? sr[j] : -std::numeric_limits<float>::infinity();
    }
    float* bucket = p.shaw_value ? it.bucket + r * it.sw : nullptr;
    const std::optional<float> mass = online_softmax_step(c, sr, nk, it.m[r], it.l[r], it.o + r * p.dvp, bucket);
    if (bucket != nullptr && mass) add_buckets(c, ks, pos_q, b, j0, nk, sr, *mass, bucket);
  }
}

/// End of an item (both paths): bfloat16 pair order undone, Shaw value term (probability mass per
/// distance x aV, the PV kernel), then the rows written (o / l) or, for a key chunk, its partials.
template <class E, class TK, class TV>
void end_item(const call<E, TK, TV>& c, item_state& it) {
  const plan& p = c.p;
  const std::ptrdiff_t dvp = p.dvp, R = it.R, nq = it.nq;
  if (p.merge_o)
    for (std::ptrdiff_t r = 0; r < R; ++r) c.kern.merge_o_bf16(it.o + r * dvp, static_cast<int>(p.Dv));
  if (p.shaw_value) {
    if (c.t.shaw_heads == 1)
      c.kern.pv_packed(it.bucket, it.sw, static_cast<int>(R), c.t.av, dvp, static_cast<int>(p.sn),
                       static_cast<int>(dvp), it.o, dvp);
    else
      for (std::ptrdiff_t r = 0; r < R; r += nq)
        c.kern.pv_packed(it.bucket + r * it.sw, it.sw, static_cast<int>(nq), c.t.av + it.head(r) * p.sn * dvp, dvp,
                         static_cast<int>(p.sn), static_cast<int>(dvp), it.o + r * dvp, dvp);
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
/// K transposed into kt [D][TK] (columns from nk on zeroed) and V into vt [nk][dvp]. The one place
/// that reads K/V elements on this path, so a storage type is one more case here.
template <class E, class TK, class TV>
void load_kv_tile(const call<E, TK, TV>& c, std::ptrdiff_t b, std::ptrdiff_t g, std::ptrdiff_t j0, int nk, float* kt,
                  float* vt) {
  const plan& p = c.p;
  const std::ptrdiff_t TK_ = p.TK, D = p.D, kds = c.k.stride(axis::dim), vds = c.v.stride(axis::dim);
  // runs of keys one token stride apart (the whole tile but for a paged tile spanning blocks)
  for (int a = 0, e = 0; a < nk; a = e) {
    e = static_cast<int>(std::min<std::ptrdiff_t>(nk, a + c.k.run(j0 + a)));
    if (kds == 1)
      c.kern.template pack_kt<TK>()(c.k.row(b, j0 + a, g), c.k.stride(axis::token), e - a, static_cast<int>(D), kt + a,
                                    TK_);
    else
      for (int j = a; j < e; ++j) {
        const TK* kr = c.k.row(b, j0 + j, g);
        for (std::ptrdiff_t d = 0; d < D; ++d) kt[d * TK_ + j] = kv_value(kr, d, kds);
      }
  }
  for (int a = 0, e = 0; a < nk; a = e) {
    e = static_cast<int>(std::min<std::ptrdiff_t>(nk, a + c.v.run(j0 + a)));
    if (vds == 1)
      c.kern.template pack_v<TV>()(c.v.row(b, j0 + a, g), c.v.stride(axis::token), e - a, static_cast<int>(p.Dv),
                                   vt + a * p.dvp, p.dvp);
    else
      for (int j = a; j < e; ++j) {
        const TV* vr = c.v.row(b, j0 + j, g);
        for (std::ptrdiff_t d = 0; d < p.Dv; ++d) vt[j * p.dvp + d] = kv_value(vr, d, vds);
      }
  }
  if (nk < TK_)
    for (std::ptrdiff_t d = 0; d < D; ++d) std::fill(kt + d * TK_ + nk, kt + (d + 1) * TK_, 0.0f);
}

/// A prefill work item (kv_path::prefill, one kv head): per key tile, classify, load and pack K/V
/// once for all G nq rows, QK^T, softmax_tile, PV on the packed V.
template <class E, class TK, class TV>
void prefill_item(const call<E, TK, TV>& c, detail::attention_scratch& sc, const work_item& w) {
  const plan& p = c.p;
  item_state it = begin_item(c, sc, w);
  const std::ptrdiff_t TK_ = p.TK, dvp = p.dvp, nq = it.nq;
  const tile_summary& qs = c.t.qsum[w.b * p.nqt + w.qt];
  const auto [kt0, kt1] = p.key_tiles(w);
  for (std::ptrdiff_t kti = kt0; kti < kt1; ++kti) {
    const tile_summary& ks = c.t.ksum[w.b * p.nkt + kti];
    const tile_class cls = classify(c.o, qs, ks);
    if (cls == tile_class::skip) continue;
    const std::ptrdiff_t j0 = kti * TK_;
    const int nk = static_cast<int>(std::min<std::ptrdiff_t>(TK_, p.Sk - j0));
    if (cls == tile_class::partial) tile_mask(c, it, j0, nk);
    load_kv_tile(c, w.b, it.g, j0, nk, it.kt, it.vt);
    c.kern.qk_packed(it.rows, static_cast<int>(it.R), it.kt, TK_, static_cast<int>(p.D), c.scale, it.s, TK_);
    softmax_tile(c, it, ks, cls, j0, nk);
    // A masked key has p = 0, but 0 x Inf / NaN is NaN: when a key masked for some row holds a value
    // that is not finite, each row takes its visible keys only (runs of them, per query token).
    if (cls == tile_class::partial &&
        any_masked_key(it.mk, nq, TK_, nk, [&](int j) { return any_nonfinite(it.vt + j * dvp, p.Dv); }))
      for_visible_runs(it.mk, nq, TK_, nk, [&](std::ptrdiff_t t, int a, int e) {
        c.kern.pv_packed(it.s + t * TK_ + a, nq * TK_, static_cast<int>(p.G), it.vt + a * dvp, dvp, e - a,
                         static_cast<int>(dvp), it.o + t * dvp, nq * dvp);
      });
    else
      c.kern.pv_packed(it.s, TK_, static_cast<int>(it.R), it.vt, dvp, nk, static_cast<int>(dvp), it.o, dvp);
  }
  end_item(c, it);
}

/// A decode work item (kv_path::decode, gpi kv heads): per key tile, classify, QK^T and PV by the
/// in-place kernels straight from the K/V rows (every kv head of a token together, the next rows
/// prefetched), softmax_tile between them.
template <class E, class TK, class TV>
void decode_item(const call<E, TK, TV>& c, detail::attention_scratch& sc, const work_item& w) {
  const plan& p = c.p;
  item_state it = begin_item(c, sc, w);
  const std::ptrdiff_t TK_ = p.TK, dvp = p.dvp, nq = it.nq, b = w.b, g = it.g;
  const tile_summary& qs = c.t.qsum[b * p.nqt + w.qt];
  const auto [kt0, kt1] = p.key_tiles(w);
  for (std::ptrdiff_t kti = kt0; kti < kt1; ++kti) {
    const tile_summary& ks = c.t.ksum[b * p.nkt + kti];
    const tile_class cls = classify(c.o, qs, ks);
    if (cls == tile_class::skip) continue;
    const std::ptrdiff_t j0 = kti * TK_;
    const int nk = static_cast<int>(std::min<std::ptrdiff_t>(TK_, p.Sk - j0));
    if (cls == tile_class::partial) tile_mask(c, it, j0, nk);
    const auto vts = static_cast<std::ptrdiff_t>(c.v.stride(axis::token) * static_cast<std::ptrdiff_t>(sizeof(TV)));
    const auto vhs = static_cast<std::ptrdiff_t>(c.v.stride(axis::head) * static_cast<std::ptrdiff_t>(sizeof(TV)));
    // A paged tile spanning blocks of a multiple of 4 tokens goes block by block, with no copy: the
    // key kernels take keys in groups of 4 from the tile's first and PV adds key after key to o, so
    // each block's keys meet the arithmetic of one call over the tile (the same bits). Other block
    // sizes copy the tile (decode_tile).
    const bool by_block = c.k.run(j0) < nk && c.k.block_size % 4 == 0;
    tile_rows<TV> vr{};
    if (by_block) {
      for_block_runs(c.k, j0, nk, [&](int a, int e) {
        c.in_place.qk(it.kq, static_cast<int>(it.Rg), static_cast<int>(p.gpi), c.k.row(b, j0 + a, g),
                      c.k.stride(axis::token), c.k.stride(axis::head), e - a, static_cast<int>(p.D), c.scale, it.s + a,
                      TK_, c.v.row(b, j0 + a, g), vts, vhs, kv_row_bytes<TV>(p.Dv), 0);
      });
    } else {
      const tile_rows<TK> kr = decode_tile(c.k, b, j0, nk, g, p.gpi, p.D, sc.k_stage);
      vr = decode_tile(c.v, b, j0, nk, g, p.gpi, p.Dv, sc.v_stage);
      // keys past the tile in the same run, which the kernel may ask for ahead (none for a copy)
      const int ahead =
          c.k.run(j0) >= nk ? static_cast<int>(std::min<std::ptrdiff_t>({c.k.run(j0) - nk, p.Sk - j0 - nk, TK_})) : 0;
      // every kv head, four tokens at a time, prefetching K and V rows ahead
      c.in_place.qk(
          it.kq, static_cast<int>(it.Rg), static_cast<int>(p.gpi), kr.p, kr.ts, kr.hs, nk, static_cast<int>(p.D),
          c.scale, it.s, TK_, vr.p, static_cast<std::ptrdiff_t>(vr.ts * static_cast<std::ptrdiff_t>(sizeof(TV))),
          static_cast<std::ptrdiff_t>(vr.hs * static_cast<std::ptrdiff_t>(sizeof(TV))), kv_row_bytes<TV>(p.Dv), ahead);
    }
    softmax_tile(c, it, ks, cls, j0, nk);
    // As prefill: masked keys whose values are not finite leave the rows to their visible runs.
    const auto masked_nonfinite = [&](int j) {
      for (std::ptrdiff_t gi = 0; gi < p.gpi; ++gi)
        if (any_nonfinite(c.v.row(b, j0 + j, g + gi), p.Dv)) return true;
      return false;
    };
    const std::ptrdiff_t next = j0 + TK_, nn = std::min<std::ptrdiff_t>(TK_, p.Sk - next);
    const bool runs = cls == tile_class::partial && any_masked_key(it.mk, nq, TK_, nk, masked_nonfinite);
    // The rows' visible runs (rare) read a copy of a tile spanning blocks.
    const bool pv_by_block = by_block && !runs;
    if (by_block && !pv_by_block) vr = decode_tile(c.v, b, j0, nk, g, p.gpi, p.Dv, sc.v_stage);
    if (runs) {
      for_visible_runs(it.mk, nq, TK_, nk, [&](std::ptrdiff_t t, int a, int e) {
        c.in_place.pv(it.s + t * TK_ + a, nq * TK_, static_cast<int>(p.G), static_cast<int>(p.gpi), vr.p + a * vr.ts,
                      vr.ts, vr.hs, e - a, static_cast<int>(p.Dv), it.o + t * dvp, nq * dvp, nullptr, 0);
      });
    } else if (pv_by_block) {
      // block a of this tile asks for block a of the next tile's K rows into L2
      for_block_runs(c.v, j0, nk, [&](int a, int e) {
        const std::ptrdiff_t n = next + a < p.Sk ? std::min<std::ptrdiff_t>({e - a, nn - a, c.k.run(next + a)}) : 0;
        c.in_place.pv(
            it.s + a, TK_, static_cast<int>(it.Rg), static_cast<int>(p.gpi), c.v.row(b, j0 + a, g),
            c.v.stride(axis::token), c.v.stride(axis::head), e - a, static_cast<int>(p.Dv), it.o, dvp,
            n > 0 ? c.k.row(b, next + a, g) : nullptr,
            n > 0 ? static_cast<std::ptrdiff_t>(n * c.k.stride(axis::token) * static_cast<std::ptrdiff_t>(sizeof(TK)))
                  : 0);
      });
    } else {
      // the next tile's K rows asked into L2 during PV, when they lie one token stride apart
      const bool prefetch = next < p.Sk && c.k.run(next) >= nn;
      c.in_place.pv(
          it.s, TK_, static_cast<int>(it.Rg), static_cast<int>(p.gpi), vr.p, vr.ts, vr.hs, nk, static_cast<int>(p.Dv),
          it.o, dvp, prefetch ? c.k.row(b, next, g) : nullptr,
          prefetch ? static_cast<std::ptrdiff_t>(nn * c.k.stride(axis::token) * static_cast<std::ptrdiff_t>(sizeof(TK)))
                   : 0);
    }
  }
  end_item(c, it);
}

/// Merges the key chunks of item w's query side in chunk order (log-sum-exp) and writes the rows.
template <class E, class TK, class TV>
void merge_item(const call<E, TK, TV>& c, detail::attention_scratch& sc, const work_item& w) {
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

inline void summarize(std::span<const std::int64_t> pos, std::span<const std::int32_t> seg, const attention_options& o,
                      bool keys, std::ptrdiff_t B, std::ptrdiff_t S, std::ptrdiff_t tile, tile_summary* out) {
  const std::ptrdiff_t nt = (S + tile - 1) / tile;
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t t = 0; t < nt; ++t) {
      tile_summary ts{INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, 0, 0, 1};
      const std::ptrdiff_t j0 = t * tile, j1 = std::min(S, j0 + tile);
      ts.count = j1 - j0;
      for (std::ptrdiff_t j = j0; j < j1; ++j) {
        const auto x = static_cast<std::size_t>(b * S + j);
        const std::int64_t p = pos[x];
        ts.pmin = std::min(ts.pmin, p);
        ts.pmax = std::max(ts.pmax, p);
        if (j > j0 && (pos[x - 1] == INT64_MAX || p != pos[x - 1] + 1)) ts.contiguous = 0;
        const std::int64_t sg = seg.empty() ? 0 : seg[x];
        ts.smin = std::min(ts.smin, sg);
        ts.smax = std::max(ts.smax, sg);
        bool vis = sg >= 0;
        if (keys && !o.key_lengths.empty() && j >= o.key_lengths[static_cast<std::size_t>(b)]) vis = false;
        if (keys && !o.key_mask.empty() && o.key_mask[x] == 0) vis = false;
        ts.visible += vis ? 1 : 0;
      }
      if (!keys) ts.visible = ts.count;
      out[b * nt + t] = ts;
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

/// The distances pos_k - pos_q the call can see (saturated), {0, 0} without queries or keys.
[[nodiscard]] inline distance_range call_distances(const attention_mask& mask) {
  const auto pq = mask.query_positions(), pk = mask.key_positions();
  if (pq.empty() || pk.empty()) return {0, 0};
  const auto [qlo, qhi] = std::minmax_element(pq.begin(), pq.end());
  const auto [klo, khi] = std::minmax_element(pk.begin(), pk.end());
  return {saturating_difference(*klo, *qhi), saturating_difference(*khi, *qlo)};
}

/// Stage 2: the per-call tables the plan asks for, in the workspace: tile summaries, the distance
/// table, Shaw's aK / aV, the prepared q rows of bfloat16 in-place keys, room for key-chunk partials.
template <class E>
call_tables build_tables(const plan& p, const E& enc, const attention_options& o, const attention_mask& mask,
                         tensor_view<const float> q, const detail::tile_kernels& kern, attention_workspace& ws) {
  call_tables t;
  const std::ptrdiff_t B = p.B, Sq = p.Sq, Hq = p.Hq, D = p.D;
  tile_summary* qsum = detail::grow(ws.tiles, static_cast<std::size_t>(B * (p.nqt + p.nkt)));
  tile_summary* ksum = qsum + B * p.nqt;
  summarize(mask.query_positions(), o.query_segments, o, false, B, Sq, p.TQ, qsum);
  summarize(mask.key_positions(), o.key_segments, o, true, B, p.Sk, p.TK, ksum);
  t.qsum = qsum;
  t.ksum = ksum;
  if (p.use_table) {
    float* tab = detail::grow(ws.bias, static_cast<std::size_t>(Hq * p.tn));
    for (std::ptrdiff_t h = 0; h < Hq; ++h)
      for (std::ptrdiff_t x = 0; x < p.tn; ++x) {
        double sum = 0;
        for_each_leaf(enc, [&](const auto& leaf) {
          if constexpr (distance_bias_encoding<std::remove_cvref_t<decltype(leaf)>>)
            sum += static_cast<double>(leaf.bias_at_distance(h, p.trange.lo + x));
        });
        tab[h * p.tn + x] = static_cast<float>(sum);
      }
    t.table = tab;
  }
  if constexpr (any_leaf_relative_kv<E>()) {
    for_each_leaf(enc, [&](const auto& leaf) {
      if constexpr (distance_relative_kv_encoding<std::remove_cvref_t<decltype(leaf)>>) {
        // Per-head tables iff two heads differ: ask for head 0 and head 1 and compare addresses.
        t.shaw_heads =
            Hq > 1 && leaf.relative_key_at_distance(0, 0).data() != leaf.relative_key_at_distance(1, 0).data() ? Hq : 1;
        const auto nak = static_cast<std::size_t>(t.shaw_heads * D * p.sld),
                   nav = static_cast<std::size_t>(p.shaw_value ? t.shaw_heads * p.sn * p.dvp : 0);
        float* ak = detail::grow(ws.shaw_key, nak);
        float* av = detail::grow(ws.shaw_value, nav);
        std::fill(ak, ak + nak, 0.0f);
        std::fill(av, av + nav, 0.0f);
        for (std::ptrdiff_t h = 0; h < t.shaw_heads; ++h)
          for (std::ptrdiff_t x = 0; x < p.sn; ++x) {
            const auto a = leaf.relative_key_at_distance(h, p.srange.lo + x);
            for (std::ptrdiff_t d = 0; d < D; ++d)
              ak[(h * D + d) * p.sld + x] = static_cast<float>(a[static_cast<std::size_t>(d)]);
            if (p.shaw_value) {
              const auto w = leaf.relative_value_at_distance(h, p.srange.lo + x);
              for (std::ptrdiff_t d = 0; d < p.Dv; ++d)
                av[(h * p.sn + x) * p.dvp + d] = static_cast<float>(w[static_cast<std::size_t>(d)]);
            }
          }
        t.ak = ak;
        t.av = av;
      }
    });
  }
  if (p.prep_q) {  // q rows for the bfloat16 / q8_0 dot key kernel, once per call (not per key tile)
    const auto prep = p.dot_q8 ? kern.prep_q_q8_dot : p.dot_qk ? kern.round_q_bf16_dot : kern.split_q_bf16;
    const std::ptrdiff_t n = p.dot_q8 ? kern.q8_dot_floats(static_cast<int>(D)) : D;
    float* buf = detail::grow(ws.qk_q, static_cast<std::size_t>(B * Sq * Hq * n));
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t i = 0; i < Sq; ++i)
        for (std::ptrdiff_t h = 0; h < Hq; ++h)
          prep(q.row(b, i, h), static_cast<int>(D), buf + ((b * Sq + i) * Hq + h) * n);
    t.qk_q = buf;
    t.qk_q_stride = n;
  }
  if (p.chunks > 1)
    t.partial = detail::grow(ws.partial, static_cast<std::size_t>(p.items * p.chunks * p.rows_max * (2 + p.dvp)));
  return t;
}

/// The in-place kernels of the decode path for storage TK / TV under plan p.
template <class TK, class TV>
[[nodiscard]] in_place_kernels<TK, TV> in_place_kernels_for(const detail::tile_kernels& kern, const plan& p) noexcept {
  in_place_kernels<TK, TV> r{kern.template qk_heads<TK>(), kern.template pv_heads<TV>()};
  if constexpr (std::is_same_v<TK, bfloat16>)
    if (p.dot_qk) r.qk = kern.qk_heads_bf16_dot;
  if constexpr (is_q8_0<TK>)
    if (p.dot_q8) r.qk = kern.qk_heads_q8_dot;
  if constexpr (std::is_same_v<TV, bfloat16>)
    if (p.dot_pv) r.pv = kern.pv_heads_bf16_dot;
  return r;
}

/// A workspace scratch slot for one running work item, given back on scope exit.
class scratch_slot {
 public:
  explicit scratch_slot(attention_workspace& ws) : ws_(ws), s_(ws.acquire()) {}
  ~scratch_slot() { ws_.release(s_); }
  scratch_slot(const scratch_slot&) = delete;
  scratch_slot& operator=(const scratch_slot&) = delete;
  detail::attention_scratch& get() noexcept { return *s_; }

 private:
  attention_workspace& ws_;
  detail::attention_scratch* s_;
};

/// Stage 3: the plan's work items on the executor (prefill or decode items), then, for key chunks,
/// one merge per query-side item.
template <class E, class TK, class TV>
void run_items(const call<E, TK, TV>& c, attention_workspace& ws, const parallel_for& executor) {
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

/// The plan facts of operands q, k, v over Sk keys (k, v: a view or a paged sequence).
template <class TK, class TV>
[[nodiscard]] plan_input plan_input_of(tensor_view<const float> q, const kv_rows<TK>& k, const kv_rows<TV>& v,
                                       std::ptrdiff_t Sk, const detail::tile_kernels& kern) noexcept {
  return {.B = q.batch(),
          .Sq = q.tokens(),
          .Sk = Sk,
          .Hq = q.heads(),
          .Hkv = k.view.heads(),
          .D = q.dim(),
          .Dv = kv_dim(v.view),
          .k_dim_unit = k.view.dim_contiguous(),
          .v_dim_unit = v.view.dim_contiguous(),
          .k_head_major = k.stride(axis::head) > k.stride(axis::token),
          .k_bf16 = std::is_same_v<TK, bfloat16>,
          .v_bf16 = std::is_same_v<TV, bfloat16>,
          .bf16_dot_kernels = kern.qk_heads_bf16_dot != nullptr && kern.pv_heads_bf16_dot != nullptr,
          .k_q8 = is_q8_0<TK>,
          .q8_dot_kernels = kern.qk_heads_q8_dot != nullptr};
}

/// Plan (stage 1), tables (stage 2), work items (stage 3) on the operands as given to the kernels.
template <class E, class TK, class TV>
void run(tensor_view<const float> q, tensor_view<const TK> k, tensor_view<const TV> v, tensor_view<float> out,
         const E& enc, const attention_options& o, const fast_attention_options& f, const attention_mask& mask,
         attention_workspace& ws, float scale) {
  const detail::tile_kernels kern = detail::active_tile_kernels();
  const kv_rows<TK> kr{.view = k};
  const kv_rows<TV> vr{.view = v};
  const plan p = make_plan(plan_input_of(q, kr, vr, k.tokens(), kern), hook_facts_of(enc, call_distances(mask)), o, f);
  const call<E, TK, TV> c{.p = p,
                          .enc = enc,
                          .o = o,
                          .mask = mask,
                          .kern = kern,
                          .in_place = in_place_kernels_for<TK, TV>(kern, p),
                          .q = q,
                          .k = kr,
                          .v = vr,
                          .out = out,
                          .pq = mask.query_positions(),
                          .pk = mask.key_positions(),
                          .scale = scale,
                          .t = build_tables(p, enc, o, mask, q, kern, ws),
                          .lse = f.log_sum_exp.empty() ? nullptr : f.log_sum_exp.data()};
  run_items(c, ws, f.executor);
}

/// Hook 2 on q: the rows the kernels read. A copy (never the input) when the encoder transforms
/// queries, when q's rows are not contiguous, and when out overlaps q other than row for row (same
/// address, strides and size: each work item reads its own q rows before it writes the same out
/// rows); otherwise an item could overwrite q rows another item has still to read.
template <class E>
tensor_view<const float> kernel_queries(tensor_view<const float> q, tensor_view<float> out, const E& enc,
                                        const attention_options& o, const attention_mask& mask,
                                        attention_workspace& ws) {
  const bool same_rows = q.data() == out.data() && q.dim() == out.dim() &&
                         q.stride(axis::batch) == out.stride(axis::batch) &&
                         q.stride(axis::token) == out.stride(axis::token) &&
                         q.stride(axis::head) == out.stride(axis::head) && q.stride(axis::dim) == out.stride(axis::dim);
  bool q_copy = !q.dim_contiguous() || (!same_rows && overlaps(out, q));
  if constexpr (qk_transform_encoding<E>) q_copy = q_copy || o.transform_queries;
  if (!q_copy) return q;
  const std::ptrdiff_t B = q.batch(), Sq = q.tokens(), Hq = q.heads(), D = q.dim();
  float* buf = detail::grow(ws.q, static_cast<std::size_t>(q.size()));
  const auto view = tensor_view<float>::bthd(buf, B, Sq, Hq, D);
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t t = 0; t < Sq; ++t)
      for (std::ptrdiff_t h = 0; h < Hq; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d) view(b, t, h, d) = q(b, t, h, d);
  if constexpr (qk_transform_encoding<E>)
    if (o.transform_queries) enc.transform_q(view, mask.query_positions());
  return view;
}

/// Hook 2 on k: transformed keys, float whatever their storage (the oracle's rounding), in ws.
template <class E, class TK>
tensor_view<const float> transformed_keys(tensor_view<const TK> k, const E& enc, const attention_mask& mask,
                                          attention_workspace& ws) {
  const std::ptrdiff_t B = k.batch(), Sk = k.tokens(), H = k.heads(), D = kv_dim(k);  // D in values (q8_0: blocks x 32)
  float* buf = detail::grow(ws.k, static_cast<std::size_t>(B * Sk * H * D));
  const auto view = tensor_view<float>::bthd(buf, B, Sk, H, D);
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t t = 0; t < Sk; ++t)
      for (std::ptrdiff_t h = 0; h < H; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d) view(b, t, h, d) = kv_value(k.row(b, t, h), d, k.stride(axis::dim));
  if constexpr (qk_transform_encoding<E>) enc.transform_k(view, mask.key_positions());
  return view;
}

/// The whole call: validation, hook-2 copies, then run() on the (possibly transformed) operands.
template <kv_element TK, kv_element TV, positional_encoding E>
void fast_attention(tensor_view<const float> q, tensor_view<const TK> k, tensor_view<const TV> v,
                    tensor_view<float> out, const E& enc, const attention_options& o, const fast_attention_options& f) {
  static_assert(all_relative_kv_by_distance<E>(),
                "posenc::attention needs relative_kv encoders in distance form (distance_relative_kv_encoding)");
  validate_call(q, k, v, out, enc, o, f);
  const std::ptrdiff_t B = q.batch(), Sq = q.tokens(), Hq = q.heads(), D = q.dim(), Sk = k.tokens();
  const attention_mask mask(o, B, Sq, Sk);
  const float scale = static_cast<float>(detail::softmax_scale(enc, o, D));
  if (B > 0 && Hq > 0) check_relative_sizes(enc, mask, D, kv_dim(v));
  if (B == 0 || Sq == 0 || Hq == 0 || kv_dim(v) == 0) return;
  if (Sk == 0) {  // no key: every row attends to nothing, zeros with or without sinks (as sdpa)
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t i = 0; i < Sq; ++i)
        for (std::ptrdiff_t h = 0; h < Hq; ++h)
          for (std::ptrdiff_t d = 0; d < kv_dim(v); ++d) out(b, i, h, d) = 0.0f;
    for (std::size_t n = 0; n < f.log_sum_exp.size(); ++n)  // [B, Hq, Sq]: the sink alone, or nothing
      f.log_sum_exp[n] =
          o.sinks.empty()
              ? -std::numeric_limits<float>::infinity()
              : static_cast<float>(o.sinks[(n / static_cast<std::size_t>(Sq)) % static_cast<std::size_t>(Hq)]);
    return;
  }
  attention_workspace local;
  attention_workspace& ws = f.workspace ? *f.workspace : local;
  q = kernel_queries(q, out, enc, o, mask, ws);
  if constexpr (qk_transform_encoding<E>)
    if (o.transform_keys) {
      run<E, float, TV>(q, transformed_keys(k, enc, mask, ws), v, out, enc, o, f, mask, ws, scale);
      return;
    }
  run<E, TK, TV>(q, k, v, out, enc, o, f, mask, ws, scale);
}

}  // namespace posenc::inline v0::detail
