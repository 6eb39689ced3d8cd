// posenc/attention/fast/driver.hpp — the fused, tiled attention behind posenc::attention: query x
// key tiles, online softmax (running max and sum, FlashAttention-2 order), fp32 accumulation.
//
// One work item = (sequence b, kv head g, query tile[, key chunk]); its rows are every query head of
// the GQA group times the tile's query tokens, so each K/V tile is read (and, for prefill, packed)
// once for all of them. Per key tile: classify from per-tile position/padding/segment summaries
// (skip: nothing visible; full: no mask work; partial: the element mask from attention_mask), QK^T,
// hooks (distance-table biases, general biases, Shaw key term), row max/exp/sum update, PV, Shaw
// per-distance probability sums. Decode-shaped calls split the keys into fixed chunks merged by
// log-sum-exp. Work is cut by shape only, so the result is bit-identical for any thread count.
// Not here: the weights output (declined), double inputs (use sdpa), dropout.
// Attention chunks (attention_options::attention_chunk) are a tile class like the window: key tiles
// in no chunk of the query tile are skipped. Logit soft-capping runs on each score row right after
// the Shaw key term, before the biases and the mask (the order of attention/options.hpp).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <posenc/attention/fast/encoder_paths.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/attention/fast/kv_q8_0.hpp>
#include <posenc/attention/fast/options.hpp>
#include <posenc/attention/fast/workspace.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0::fast_detail {

/// K/V storage types of the fast path (q8_0: views of blocks, fast/kv_q8_0.hpp).
template <class T>
concept kv_storage =
    std::same_as<T, float> || std::same_as<T, bfloat16> || std::same_as<T, float16> || std::same_as<T, block_q8_0>;

enum class tile_class : unsigned char { skip, full, partial };

using detail::tile_summary;

inline tile_class classify(const attention_options& o, const tile_summary& q, const tile_summary& k) noexcept {
  if (k.visible == 0 || q.count == 0) return tile_class::skip;
  bool full = k.visible == k.count;
  if (!o.query_segments.empty()) {
    if (q.smax < 0 || k.smax < 0 || q.smax < k.smin || k.smax < q.smin) return tile_class::skip;
    full = full && q.smin == q.smax && k.smin == k.smax && q.smin == k.smin && q.smin >= 0;
  }
  const std::int64_t dlo = sat_sub(q.pmin, k.pmax), dhi = sat_sub(q.pmax, k.pmin);  // pos_q - pos_k
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

/// Everything one call shares between its work items.
template <class E, class TK, class TV>
struct call {
  const E& enc;
  const attention_options& o;
  const attention_mask& mask;
  const attention_kernels::tile_kernels& kern;
  tensor_view<const float> q;
  tensor_view<const TK> k;
  tensor_view<const TV> v;
  tensor_view<float> out;
  std::span<const std::int64_t> pq, pk;
  std::ptrdiff_t B, Sq, Sk, Hq, Hkv, G, D, Dv, dvp;
  int TQ, TK_;
  std::ptrdiff_t nqt, nkt, chunks, chunk_tiles;
  bool packed;
  float scale;
  const tile_summary *qsum, *ksum;
  // logit soft-capping: cap tanh(s inv_cap) on the content logits, before the biases and the mask
  bool softcap = false;
  float cap = 1, inv_cap = 1;
  // distance table
  bool use_table = false;
  distance_range trange{};
  std::ptrdiff_t tn = 0;
  const float* table = nullptr;  // [Hq][tn]
  // Shaw
  bool shaw = false, shaw_value = false;
  distance_range srange{};
  std::ptrdiff_t sn = 0, sld = 0, shaw_heads = 1;  // distances, padded to 64
  const float *ak = nullptr, *av = nullptr;        // [shaw_heads][D][sld] (transposed), [shaw_heads][sn][dvp]
  float* partial = nullptr;                        // [items][chunks][rows][2 + dvp]
  std::ptrdiff_t rows_max = 0;
  bool dot_qk = false, dot_pv = false;  // AVX512_BF16 kernels (bf16_dot_products)
  std::ptrdiff_t gpi = 1, ngs = 0;      // kv heads per work item (in-place path: all, so rows are read in order), sets
  // bfloat16 K in place: q rows prepared once per call for the key kernel (split_q_bf16's pair order,
  // or round_q_bf16_dot), row (b, i, h) at qk_q + ((b Sq + i) Hq + h) D; null: the kernel reads q rows
  const float* qk_q = nullptr;
  bool merge_o = false;  // bfloat16 V in place (not the dot kernel): o rows in pair order until merge_o_bf16

  [[nodiscard]] std::ptrdiff_t table_index(distance_range r, std::int64_t d) const noexcept {
    return static_cast<std::ptrdiff_t>(std::clamp(d, r.lo, r.hi) - r.lo);
  }
};

/// Adds the general-path biases (score-bias leaves not covered by the table) of row (h, pos_q).
template <class E, class C>
void add_general_bias(const E& enc, const C& c, std::ptrdiff_t h, std::int64_t pos_q, std::ptrdiff_t b,
                      std::ptrdiff_t j0, int nk, float* s) {
  for_each_leaf(enc, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (score_bias_encoding<L>) {
      if (distance_bias_encoding<L> && c.use_table) return;
      for (int j = 0; j < nk; ++j)
        s[j] += static_cast<float>(leaf.bias(h, pos_q, c.pk[static_cast<std::size_t>(b * c.Sk + j0 + j)]));
    }
  });
}

/// The per-row constant of the table path (query_bias of the distance leaves), double.
template <class E, class C>
double table_query_bias(const E& enc, const C& c, std::ptrdiff_t h, std::int64_t pos_q) {
  double r = 0;
  if (!c.use_table) return r;
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
  const std::int64_t* pk = c.pk.data() + b * c.Sk + j0;
  if (ks.contiguous) {
    const std::int64_t d0 = sat_sub(pk[0], pos_q), d1 = sat_sub(pk[nk - 1], pos_q);
    if (d1 <= r.lo || d0 >= r.hi) {  // the whole row saturates: one constant
      c.kern.add_const(s, tab[d1 <= r.lo ? 0 : r.hi - r.lo], nk);
      return;
    }
    if (d1 - d0 == nk - 1) {  // keys [0, a) clip to r.lo, [a, e) are a slice of the table, [e, nk) clip to r.hi
      const auto a = static_cast<int>(std::clamp<std::int64_t>(sat_sub(r.lo, d0), 0, nk));
      const auto e = static_cast<int>(std::clamp<std::int64_t>(sat_sub(r.hi, d0), -1, nk - 1) + 1);
      if (a > 0) c.kern.add_const(s, tab[0], a);
      if (e > a) c.kern.add_row(s + a, tab + (d0 + a - r.lo), e - a);
      if (e < nk) c.kern.add_const(s + std::max(a, e), tab[r.hi - r.lo], nk - std::max(a, e));
      return;
    }
  }
  for (int j = 0; j < nk; ++j) s[j] += tab[c.table_index(r, sat_sub(pk[j], pos_q))];
}

/// Shaw's value term: adds each probability of row (pos_q) to the sum of its clipped distance. A key
/// tile whose distances all clip to one end adds its row sum once.
template <class C>
void add_buckets(const C& c, const tile_summary& ks, std::int64_t pos_q, std::ptrdiff_t b, std::ptrdiff_t j0, int nk,
                 const float* p, float psum, float* bk) {
  const std::int64_t* pk = c.pk.data() + b * c.Sk + j0;
  if (ks.contiguous) {
    const std::int64_t d0 = sat_sub(pk[0], pos_q), d1 = sat_sub(pk[nk - 1], pos_q);
    if (d1 <= c.srange.lo) {
      bk[0] += psum;
      return;
    }
    if (d0 >= c.srange.hi) {
      bk[c.srange.hi - c.srange.lo] += psum;
      return;
    }
  }
  for (int j = 0; j < nk; ++j) bk[c.table_index(c.srange, sat_sub(pk[j], pos_q))] += p[j];
}

/// Writes row r's result: o / l, with the sink (shifted by the row's query bias) in the denominator.
template <class C>
void finish_row(const C& c, std::ptrdiff_t b, std::ptrdiff_t i, std::ptrdiff_t h, float m, float l, float* o) {
  double den = l, f = 1;
  if (!c.o.sinks.empty()) {
    const double sink = c.o.sinks[static_cast<std::size_t>(h)] -
                        table_query_bias(c.enc, c, h, c.pq[static_cast<std::size_t>(b * c.Sq + i)]);
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
    for (std::ptrdiff_t d = 0; d < c.Dv; ++d) y[d] = o[d] * inv;
  else
    for (std::ptrdiff_t d = 0; d < c.Dv; ++d) y[d * ds] = o[d] * inv;
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

/// A partial tile's keys masked for at least one of its nq query tokens (mask mk): does one hold a
/// value that is not finite (the packed copy vt, or the rows in place for every kv head of the item)?
template <class C>
bool masked_value_nonfinite(const C& c, const std::uint8_t* mk, std::ptrdiff_t nq, std::ptrdiff_t b, std::ptrdiff_t j0,
                            std::ptrdiff_t g, int nk, const float* vt) {
  for (int j = 0; j < nk; ++j) {
    bool all = true;
    for (std::ptrdiff_t t = 0; t < nq; ++t) all = all && mk[t * c.TK_ + j] != 0;
    if (all) continue;
    if (c.packed) {
      if (any_nonfinite(vt + j * c.dvp, c.Dv)) return true;
    } else {
      for (std::ptrdiff_t gi = 0; gi < c.gpi; ++gi)
        if (any_nonfinite(c.v.row(b, j0 + j, g + gi), c.Dv)) return true;
    }
  }
  return false;
}

/// O += P V of a partial tile over each query token's visible keys only: per token t (rows t, t + nq,
/// ... of every head), the PV kernel on each run of keys visible to t. Slower than one call; taken
/// only when a masked key's value is not finite.
template <class C>
void visible_pv(const C& c, const std::uint8_t* mk, std::ptrdiff_t nq, std::ptrdiff_t b, std::ptrdiff_t j0,
                std::ptrdiff_t g, int nk, const float* s, const float* vt, float* o) {
  using TV = std::remove_const_t<typename decltype(c.v)::element_type>;
  const std::ptrdiff_t TKc = c.TK_, dvp = c.dvp;
  for (std::ptrdiff_t t = 0; t < nq; ++t) {
    const std::uint8_t* mr = mk + t * TKc;
    for (int a = 0; a < nk;) {
      if (mr[a] == 0) {
        ++a;
        continue;
      }
      int e = a;
      while (e < nk && mr[e] != 0) ++e;
      if (c.packed) {
        c.kern.pv_packed(s + t * TKc + a, nq * TKc, static_cast<int>(c.G), vt + a * dvp, dvp, e - a,
                         static_cast<int>(dvp), o + t * dvp, nq * dvp);
      } else {
        auto pv = c.kern.template pv_heads<TV>();
        if constexpr (std::is_same_v<TV, bfloat16>)
          if (c.dot_pv) pv = c.kern.pv_heads_bf16_dot;
        pv(s + t * TKc + a, nq * TKc, static_cast<int>(c.G), static_cast<int>(c.gpi), c.v.row(b, j0 + a, g),
           c.v.stride(axis::token), c.v.stride(axis::head), e - a, static_cast<int>(c.Dv), o + t * dvp, nq * dvp,
           nullptr, 0);
      }
      a = e;
    }
  }
}

/// One work item: rows of (b, kv heads [gs gpi, (gs + 1) gpi), query tile qt) against the key tiles
/// of chunk ch. Row r is query token i0 + r % nq of query head gs gpi G + r / nq.
template <class E, class TK, class TV>
void run_item(const call<E, TK, TV>& c, detail::attention_scratch& sc, std::ptrdiff_t b, std::ptrdiff_t gs,
              std::ptrdiff_t qt, std::ptrdiff_t ch) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  const std::ptrdiff_t i0 = qt * c.TQ, nq = std::min<std::ptrdiff_t>(c.TQ, c.Sq - i0), Rg = c.G * nq, R = c.gpi * Rg;
  const std::ptrdiff_t g = gs * c.gpi;  // first kv head
  const std::ptrdiff_t TKc = c.TK_, dvp = c.dvp, D = c.D;
  const std::ptrdiff_t sn = c.shaw ? c.sld : 0;  // Shaw rows: the call's distances, padded to 64
  // scratch layout
  const std::size_t n_kt = c.packed ? static_cast<std::size_t>(D * TKc) : 0,
                    n_vt = c.packed ? static_cast<std::size_t>(TKc * dvp) : 0;
  const auto nR = static_cast<std::size_t>(R);
  float* kt = detail::grow(sc.f, n_kt + n_vt + nR * static_cast<std::size_t>(TKc + dvp + 2 + 2 * sn));
  float* vt = kt + n_kt;
  float* s = vt + n_vt;
  float* o = s + nR * static_cast<std::size_t>(TKc);
  float* m = o + nR * static_cast<std::size_t>(dvp);
  float* l = m + nR;
  float* qa = l + nR;
  float* bucket = qa + nR * static_cast<std::size_t>(sn);
  const float** rows = detail::grow(sc.rows, 2 * nR);
  const float** kq = rows;  // the q rows the in-place key kernel reads (prepared ones for bfloat16 keys)
  std::uint8_t* mk = detail::grow(sc.mask, static_cast<std::size_t>(nq * TKc));
  std::fill(o, o + nR * static_cast<std::size_t>(dvp), 0.0f);
  std::fill(m, m + nR, ninf);
  std::fill(l, l + nR, 0.0f);
  std::fill(bucket, bucket + nR * static_cast<std::size_t>(sn), 0.0f);
  if (c.packed) std::fill(vt, vt + n_vt, 0.0f);  // padding columns stay 0
  for (std::ptrdiff_t r = 0; r < R; ++r) rows[r] = c.q.row(b, i0 + r % nq, g * c.G + r / nq);
  if (c.qk_q != nullptr) {
    kq = rows + nR;
    for (std::ptrdiff_t r = 0; r < R; ++r) kq[r] = c.qk_q + ((b * c.Sq + i0 + r % nq) * c.Hq + g * c.G + r / nq) * D;
  }
  auto row_head = [&](std::ptrdiff_t r) { return g * c.G + r / nq; };
  auto row_pos = [&](std::ptrdiff_t r) { return c.pq[static_cast<std::size_t>(b * c.Sq + i0 + r % nq)]; };

  // Shaw key term: scale * q . aK over the call's distances, once per row (the QK^T microkernel on
  // the transposed aK table); rows of one head are blocks of nq.
  if (c.shaw) {
    if (c.shaw_heads == 1)
      c.kern.qk_packed(rows, static_cast<int>(R), c.ak, sn, static_cast<int>(D), c.scale, qa, sn);
    else
      for (std::ptrdiff_t r = 0; r < R; r += nq)
        c.kern.qk_packed(rows + r, static_cast<int>(nq), c.ak + row_head(r) * D * sn, sn, static_cast<int>(D), c.scale,
                         qa + r * sn, sn);
  }

  const tile_summary& qs = c.qsum[b * c.nqt + qt];
  const std::ptrdiff_t kt0 = ch * c.chunk_tiles, kt1 = std::min(c.nkt, kt0 + c.chunk_tiles);
  for (std::ptrdiff_t kti = kt0; kti < kt1; ++kti) {
    const tile_summary& ks = c.ksum[b * c.nkt + kti];
    const tile_class cls = classify(c.o, qs, ks);
    if (cls == tile_class::skip) continue;
    const std::ptrdiff_t j0 = kti * TKc;
    const int nk = static_cast<int>(std::min<std::ptrdiff_t>(TKc, c.Sk - j0));
    if (cls == tile_class::partial)
      for (std::ptrdiff_t t = 0; t < nq; ++t)
        for (int j = 0; j < nk; ++j) mk[t * TKc + j] = c.mask.allowed(b, i0 + t, j0 + j) ? 1 : 0;

    // ---- S = scale * Q K^T ----
    if (c.packed) {
      const std::ptrdiff_t kds = c.k.stride(axis::dim), vds = c.v.stride(axis::dim);
      if (kds == 1)
        c.kern.template pack_kt<TK>()(c.k.row(b, j0, g), c.k.stride(axis::token), nk, static_cast<int>(D), kt, TKc);
      else
        for (int j = 0; j < nk; ++j) {
          const TK* kr = c.k.row(b, j0 + j, g);
          for (std::ptrdiff_t d = 0; d < D; ++d) kt[d * TKc + j] = kv_value(kr, d, kds);
        }
      if (vds == 1)
        c.kern.template pack_v<TV>()(c.v.row(b, j0, g), c.v.stride(axis::token), nk, static_cast<int>(c.Dv), vt, dvp);
      else
        for (int j = 0; j < nk; ++j) {
          const TV* vr = c.v.row(b, j0 + j, g);
          for (std::ptrdiff_t d = 0; d < c.Dv; ++d) vt[j * dvp + d] = kv_value(vr, d, vds);
        }
      if (nk < TKc)
        for (std::ptrdiff_t d = 0; d < D; ++d) std::fill(kt + d * TKc + nk, kt + (d + 1) * TKc, 0.0f);
      c.kern.qk_packed(rows, static_cast<int>(R), kt, TKc, static_cast<int>(D), c.scale, s, TKc);
    } else {
      // every kv head, four tokens at a time, prefetching K and V rows ahead
      auto qk = c.kern.template qk_heads<TK>();
      if constexpr (std::is_same_v<TK, bfloat16>)
        if (c.dot_qk) qk = c.kern.qk_heads_bf16_dot;
      qk(kq, static_cast<int>(Rg), static_cast<int>(c.gpi), c.k.row(b, j0, g), c.k.stride(axis::token),
         c.k.stride(axis::head), nk, static_cast<int>(D), c.scale, s, TKc, c.v.row(b, j0, g),
         static_cast<std::ptrdiff_t>(c.v.stride(axis::token) * sizeof(TV)),
         static_cast<std::ptrdiff_t>(c.v.stride(axis::head) * sizeof(TV)), kv_row_bytes<TV>(c.Dv));
    }

    // ---- hooks, mask, online softmax per row ----
    for (std::ptrdiff_t r = 0; r < R; ++r) {
      float* sr = s + r * TKc;
      const std::ptrdiff_t h = row_head(r);
      const std::int64_t pos_q = row_pos(r);
      if (c.shaw) add_distance_row(c, qa + r * sn, c.srange, ks, pos_q, b, j0, nk, sr);
      if (c.softcap) c.kern.softcap(sr, nk, c.cap, c.inv_cap);
      if (c.use_table) add_distance_row(c, c.table + h * c.tn, c.trange, ks, pos_q, b, j0, nk, sr);
      if constexpr (score_bias_encoding<E>) add_general_bias(c.enc, c, h, pos_q, b, j0, nk, sr);
      if (cls == tile_class::partial) {
        const std::uint8_t* mr = mk + (r % nq) * TKc;
        for (int j = 0; j < nk; ++j) sr[j] = mr[j] ? sr[j] : ninf;
      }
      const float rmax = c.kern.row_max(sr, nk);
      if (rmax != rmax) {  // a NaN logit: the row's output is NaN (as sdpa); no weight from this tile
        l[r] = std::numeric_limits<float>::quiet_NaN();
        std::fill(sr, sr + nk, 0.0f);
        continue;
      }
      const float mnew = std::max(m[r], rmax);
      if (mnew == ninf) {  // nothing visible in this row yet
        std::fill(sr, sr + nk, 0.0f);
        continue;
      }
      if (mnew == -ninf) {  // +inf logits share the row's weight equally (as sdpa), finite ones get 0
        if (m[r] != mnew) {
          std::fill(o + r * dvp, o + (r + 1) * dvp, 0.0f);  // not o x 0: an infinite value would give NaN
          l[r] = l[r] != l[r] ? l[r] : 0.0f;
          if (c.shaw_value) std::fill(bucket + r * sn, bucket + (r + 1) * sn, 0.0f);
          m[r] = mnew;
        }
        float count = 0;
        for (int j = 0; j < nk; ++j) count += sr[j] = sr[j] == mnew ? 1.0f : 0.0f;
        l[r] += count;
        if (c.shaw_value) add_buckets(c, ks, pos_q, b, j0, nk, sr, count, bucket + r * sn);
        continue;
      }
      if (mnew != m[r]) {
        const float alpha = m[r] == ninf ? 0.0f : std::exp(m[r] - mnew);
        c.kern.scale_row(o + r * dvp, static_cast<int>(c.Dv), alpha);
        l[r] *= alpha;
        if (c.shaw_value) c.kern.scale_row(bucket + r * sn, static_cast<int>(sn), alpha);
        m[r] = mnew;
      }
      const float psum = c.kern.exp_sum(sr, nk, mnew);
      l[r] += psum;
      if (c.shaw_value) add_buckets(c, ks, pos_q, b, j0, nk, sr, psum, bucket + r * sn);
    }

    // ---- O += P V ----
    // A masked key has p = 0, but 0 x Inf / NaN is NaN: when a key masked for some row holds a value
    // that is not finite, each row takes its visible keys only (runs of them, per query token).
    if (cls == tile_class::partial && masked_value_nonfinite(c, mk, nq, b, j0, g, nk, vt))
      visible_pv(c, mk, nq, b, j0, g, nk, s, vt, o);
    else if (c.packed)
      c.kern.pv_packed(s, TKc, static_cast<int>(R), vt, dvp, nk, static_cast<int>(dvp), o, dvp);
    else {
      auto pv = c.kern.template pv_heads<TV>();
      if constexpr (std::is_same_v<TV, bfloat16>)
        if (c.dot_pv) pv = c.kern.pv_heads_bf16_dot;
      pv(s, TKc, static_cast<int>(Rg), static_cast<int>(c.gpi), c.v.row(b, j0, g), c.v.stride(axis::token),
         c.v.stride(axis::head), nk, static_cast<int>(c.Dv), o, dvp,
         j0 + TKc < c.Sk ? c.k.row(b, j0 + TKc, g) : nullptr,
         static_cast<std::ptrdiff_t>(std::min<std::ptrdiff_t>(TKc, c.Sk - j0 - TKc) * c.k.stride(axis::token) *
                                     static_cast<std::ptrdiff_t>(sizeof(TK))));
    }
  }

  if (c.merge_o)
    for (std::ptrdiff_t r = 0; r < R; ++r) c.kern.merge_o_bf16(o + r * dvp, static_cast<int>(c.Dv));

  // Shaw value term: sum over distances of (probability mass) x aV, once per row (the PV microkernel).
  if (c.shaw_value) {
    if (c.shaw_heads == 1)
      c.kern.pv_packed(bucket, sn, static_cast<int>(R), c.av, dvp, static_cast<int>(c.sn), static_cast<int>(dvp), o,
                       dvp);
    else
      for (std::ptrdiff_t r = 0; r < R; r += nq)
        c.kern.pv_packed(bucket + r * sn, sn, static_cast<int>(nq), c.av + row_head(r) * c.sn * dvp, dvp,
                         static_cast<int>(c.sn), static_cast<int>(dvp), o + r * dvp, dvp);
  }

  if (c.chunks == 1) {
    for (std::ptrdiff_t r = 0; r < R; ++r) finish_row(c, b, i0 + r % nq, row_head(r), m[r], l[r], o + r * dvp);
    return;
  }
  const std::ptrdiff_t item = (b * c.ngs + gs) * c.nqt + qt, stride = 2 + dvp;
  float* p = c.partial + (item * c.chunks + ch) * c.rows_max * stride;
  for (std::ptrdiff_t r = 0; r < R; ++r) {
    p[r * stride] = m[r];
    p[r * stride + 1] = l[r];
    std::copy_n(o + r * dvp, c.Dv, p + r * stride + 2);
  }
}

/// Merges the key chunks of item (b, gs, qt) in chunk order (log-sum-exp) and writes the rows.
template <class E, class TK, class TV>
void merge_item(const call<E, TK, TV>& c, detail::attention_scratch& sc, std::ptrdiff_t b, std::ptrdiff_t gs,
                std::ptrdiff_t qt) {
  const std::ptrdiff_t i0 = qt * c.TQ, nq = std::min<std::ptrdiff_t>(c.TQ, c.Sq - i0), R = c.gpi * c.G * nq;
  const std::ptrdiff_t g = gs * c.gpi, item = (b * c.ngs + gs) * c.nqt + qt, stride = 2 + c.dvp;
  float* o = detail::grow(sc.f, static_cast<std::size_t>(c.dvp));
  for (std::ptrdiff_t r = 0; r < R; ++r) {
    float mx = -std::numeric_limits<float>::infinity();
    for (std::ptrdiff_t ch = 0; ch < c.chunks; ++ch)
      mx = std::max(mx, c.partial[((item * c.chunks + ch) * c.rows_max + r) * stride]);
    float l = 0;
    bool nan = false;  // a chunk saw a NaN logit: the row is NaN
    std::fill(o, o + c.Dv, 0.0f);
    for (std::ptrdiff_t ch = 0; ch < c.chunks; ++ch) {
      const float* p = c.partial + ((item * c.chunks + ch) * c.rows_max + r) * stride;
      nan = nan || p[1] != p[1];
      if (p[0] == -std::numeric_limits<float>::infinity() || p[1] != p[1]) continue;
      const float f = p[0] == mx ? 1.0f : std::exp(p[0] - mx);  // mx = +inf: exp(inf - inf) is NaN
      l += p[1] * f;
      for (std::ptrdiff_t d = 0; d < c.Dv; ++d) o[d] += p[2 + d] * f;
    }
    if (nan) l = std::numeric_limits<float>::quiet_NaN();
    finish_row(c, b, i0 + r % nq, g * c.G + r / nq, mx, l, o);
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
  detail::require_encoder_fits(enc, q.dim(), q.heads());
}

template <class E, class TK, class TV>
void run(tensor_view<const float> q, tensor_view<const TK> k, tensor_view<const TV> v, tensor_view<float> out,
         const E& enc, const attention_options& o, const fast_attention_options& f, const attention_mask& mask,
         attention_workspace& ws, float scale) {
  const std::ptrdiff_t B = q.batch(), Sq = q.tokens(), Hq = q.heads(), D = q.dim();
  const std::ptrdiff_t Sk = k.tokens(), Hkv = k.heads(), Dv = kv_dim(v), G = Hq / Hkv;
  const attention_kernels::tile_kernels kern = attention_kernels::active_tile_kernels();
  call<E, TK, TV> c{enc,
                    o,
                    mask,
                    kern,
                    q,
                    k,
                    v,
                    out,
                    mask.query_positions(),
                    mask.key_positions(),
                    B,
                    Sq,
                    Sk,
                    Hq,
                    Hkv,
                    G,
                    D,
                    Dv,
                    (Dv + 63) / 64 * 64,
                    0,
                    f.key_tile,
                    0,
                    0,
                    1,
                    0,
                    false,
                    scale,
                    nullptr,
                    nullptr};
  if (o.logit_softcap) {
    // fp32 cap and 1 / cap, the cap clamped to [2^-100, 2^100]: outside, the capped logits change
    // only by 2^-99 (a tiny cap) or only where |logit| > 2^88 (a huge one), where the documented
    // bound exceeds the range of the outputs.
    const double cap = std::clamp(*o.logit_softcap, 0x1p-100, 0x1p100);
    c.softcap = true;
    c.cap = static_cast<float>(cap);
    c.inv_cap = static_cast<float>(1.0 / cap);
  }
  c.TQ = f.query_tile > 0 ? f.query_tile : static_cast<int>(std::max<std::ptrdiff_t>(1, 64 / G));
  c.nqt = (Sq + c.TQ - 1) / c.TQ;
  c.packed = G * std::min<std::ptrdiff_t>(c.TQ, Sq) >= 16 || !k.dim_contiguous() || !v.dim_contiguous();
  // In-place (decode) path: with token-major keys one item takes every kv head, so a key tile's rows
  // (all heads of a token are adjacent) are read together rather than one head's rows Hkv rows apart.
  // Head-major keys (heads farther apart than tokens, [batch, heads, seq, dim]) take one head per
  // item: its K and V rows are two contiguous runs, and the kernels' prefetches (rows of the tile's
  // tokens, ahead) ask for that head's rows. With every head per item they asked for head 0's rows
  // only, and the other heads ran on the hardware prefetcher: 0.6x the one-core rate from DRAM.
  c.gpi = c.packed || k.stride(axis::head) > k.stride(axis::token) ? 1 : Hkv;
  if constexpr (std::is_same_v<TK, bfloat16>)
    c.dot_qk = f.bf16_dot_products && !c.packed && kern.qk_heads_bf16_dot != nullptr && D % 32 == 0;
  if constexpr (std::is_same_v<TV, bfloat16>)
    c.dot_pv = f.bf16_dot_products && !c.packed && kern.pv_heads_bf16_dot != nullptr && Dv % 32 == 0;
  if constexpr (std::is_same_v<TK, bfloat16>)
    if (!c.packed) {  // q rows for the key kernel, once per call (not per key tile)
      const auto prep = c.dot_qk ? kern.round_q_bf16_dot : kern.split_q_bf16;
      float* buf = detail::grow(ws.qk_q, static_cast<std::size_t>(B * Sq * Hq * D));
      for (std::ptrdiff_t b = 0; b < B; ++b)
        for (std::ptrdiff_t i = 0; i < Sq; ++i)
          for (std::ptrdiff_t h = 0; h < Hq; ++h)
            prep(q.row(b, i, h), static_cast<int>(D), buf + ((b * Sq + i) * Hq + h) * D);
      c.qk_q = buf;
    }
  if constexpr (std::is_same_v<TV, bfloat16>) c.merge_o = !c.packed && !c.dot_pv;
  if (!c.packed) c.TK_ = 64;  // V rows prefetched during QK^T stay in L2 for PV (16 / 32 / 128: no faster)
  c.nkt = (Sk + c.TK_ - 1) / c.TK_;
  c.ngs = Hkv / c.gpi;
  c.rows_max = c.gpi * G * std::min<std::ptrdiff_t>(c.TQ, Sq);
  const std::ptrdiff_t items = B * c.ngs * c.nqt;
  c.chunk_tiles = c.nkt;
  if (items < 8 && Sk >= 2 * f.split_keys) {
    c.chunk_tiles = f.split_keys / c.TK_;
    c.chunks = (c.nkt + c.chunk_tiles - 1) / c.chunk_tiles;
  }
  c.chunk_tiles = std::max<std::ptrdiff_t>(c.chunk_tiles, 1);

  // tile summaries
  tile_summary* qsum = detail::grow(ws.tiles, static_cast<std::size_t>(B * (c.nqt + c.nkt)));
  auto* ksum = qsum + B * c.nqt;
  summarize(c.pq, o.query_segments, o, false, B, Sq, c.TQ, qsum);
  summarize(c.pk, o.key_segments, o, true, B, Sk, c.TK_, ksum);
  c.qsum = qsum;
  c.ksum = ksum;

  // distances pos_k - pos_q the call can see
  distance_range call_range{0, 0};
  if (Sq > 0 && Sk > 0) {
    const auto [qlo, qhi] = std::minmax_element(c.pq.begin(), c.pq.end());
    const auto [klo, khi] = std::minmax_element(c.pk.begin(), c.pk.end());
    call_range = {sat_sub(*klo, *qhi), sat_sub(*khi, *qlo)};
  }
  if constexpr (any_leaf_distance_bias<E>()) {
    distance_range r{INT64_MAX, INT64_MIN};
    for_each_leaf(enc, [&](const auto& leaf) {
      if constexpr (distance_bias_encoding<std::remove_cvref_t<decltype(leaf)>>) {
        const distance_range x = leaf.bias_distance_range();
        r = {std::min(r.lo, x.lo), std::max(r.hi, x.hi)};
      }
    });
    c.trange = clip_range(call_range, r);
    const std::int64_t span = sat_sub(c.trange.hi, c.trange.lo);
    if (span < INT64_MAX && span + 1 <= f.max_bias_table / std::max<std::ptrdiff_t>(Hq, 1)) {
      c.use_table = true;
      c.tn = static_cast<std::ptrdiff_t>(span + 1);
      float* t = detail::grow(ws.bias, static_cast<std::size_t>(Hq * c.tn));
      for (std::ptrdiff_t h = 0; h < Hq; ++h)
        for (std::ptrdiff_t x = 0; x < c.tn; ++x) {
          double sum = 0;
          for_each_leaf(enc, [&](const auto& leaf) {
            if constexpr (distance_bias_encoding<std::remove_cvref_t<decltype(leaf)>>)
              sum += static_cast<double>(leaf.bias_at_distance(h, c.trange.lo + x));
          });
          t[h * c.tn + x] = static_cast<float>(sum);
        }
      c.table = t;
    }
  }
  if constexpr (any_leaf_relative_kv<E>()) {
    for_each_leaf(enc, [&](const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      if constexpr (distance_relative_kv_encoding<L>) {
        c.shaw = true;
        c.srange = clip_range(call_range, leaf.relative_distance_range());
        c.sn = static_cast<std::ptrdiff_t>(c.srange.hi - c.srange.lo + 1);
        // Per-head tables iff two heads differ: ask for head 0 and head 1 and compare addresses.
        c.shaw_heads =
            Hq > 1 && leaf.relative_key_at_distance(0, 0).data() != leaf.relative_key_at_distance(1, 0).data() ? Hq : 1;
        c.shaw_value = !leaf.relative_value_at_distance(0, 0).empty();
        c.sld = (c.sn + 63) / 64 * 64;
        const auto nak = static_cast<std::size_t>(c.shaw_heads * D * c.sld),
                   nav = static_cast<std::size_t>(c.shaw_value ? c.shaw_heads * c.sn * c.dvp : 0);
        float* ak = detail::grow(ws.shaw_key, nak);
        float* av = detail::grow(ws.shaw_value, nav);
        std::fill(ak, ak + nak, 0.0f);
        std::fill(av, av + nav, 0.0f);
        for (std::ptrdiff_t h = 0; h < c.shaw_heads; ++h)
          for (std::ptrdiff_t x = 0; x < c.sn; ++x) {
            const auto a = leaf.relative_key_at_distance(h, c.srange.lo + x);
            for (std::ptrdiff_t d = 0; d < D; ++d)
              ak[(h * D + d) * c.sld + x] = static_cast<float>(a[static_cast<std::size_t>(d)]);
            if (c.shaw_value) {
              const auto w = leaf.relative_value_at_distance(h, c.srange.lo + x);
              for (std::ptrdiff_t d = 0; d < Dv; ++d)
                av[(h * c.sn + x) * c.dvp + d] = static_cast<float>(w[static_cast<std::size_t>(d)]);
            }
          }
        c.ak = ak;
        c.av = av;
      }
    });
  }
  if (c.chunks > 1)
    c.partial = detail::grow(ws.partial, static_cast<std::size_t>(items * c.chunks * c.rows_max * (2 + c.dvp)));

  auto item = [&](std::ptrdiff_t n) {
    detail::attention_scratch* sc = ws.acquire();
    struct give_back {
      attention_workspace& w;
      detail::attention_scratch* s;
      ~give_back() { w.release(s); }
    } guard{ws, sc};
    const std::ptrdiff_t ch = n % c.chunks, it = n / c.chunks;
    // Last query tiles first: under a causal mask they see the most keys, so the items left when a
    // thread runs out of work are the short ones (the pool hands out items in index order).
    const std::ptrdiff_t qt = c.nqt - 1 - it % c.nqt, gs = (it / c.nqt) % c.ngs, b = it / (c.nqt * c.ngs);
    run_item(c, *sc, b, gs, qt, ch);
  };
  run_parallel(f.executor, items * c.chunks, item);
  if (c.chunks > 1) {
    auto merge = [&](std::ptrdiff_t it) {
      detail::attention_scratch* sc = ws.acquire();
      struct give_back {
        attention_workspace& w;
        detail::attention_scratch* s;
        ~give_back() { w.release(s); }
      } guard{ws, sc};
      merge_item(c, *sc, it / (c.nqt * c.ngs), (it / c.nqt) % c.ngs, it % c.nqt);
    };
    run_parallel(f.executor, items, merge);
  }
}

/// The whole call: validation, hook-2 copies, then run() on the (possibly transformed) operands.
template <kv_storage TK, kv_storage TV, positional_encoding E>
void fast_attention(tensor_view<const float> q, tensor_view<const TK> k, tensor_view<const TV> v,
                    tensor_view<float> out, const E& enc, const attention_options& o, const fast_attention_options& f) {
  static_assert(all_relative_kv_by_distance<E>(),
                "posenc::attention needs relative_kv encoders in distance form (distance_relative_kv_encoding)");
  validate_call(q, k, v, out, enc, o, f);
  const std::ptrdiff_t B = q.batch(), Sq = q.tokens(), Hq = q.heads(), D = q.dim(), Sk = k.tokens();
  const attention_mask mask(o, B, Sq, Sk);
  const float scale = static_cast<float>(detail::softmax_scale(enc, o, D));
  if constexpr (relative_kv_encoding<E>) {
    if (B > 0 && Sq > 0 && Sk > 0 && Hq > 0) {  // as sdpa: fixed sizes, checked before anything is written
      const auto pq = mask.query_positions(), pk = mask.key_positions();
      const auto ak = enc.relative_key(0, pq[0], pk[0]);
      const auto av = enc.relative_value(0, pq[0], pk[0]);
      detail::require_shape(static_cast<std::ptrdiff_t>(ak.size()) == D, "encoder.relative_key.size", ak.size(),
                            "q.dim = " + std::to_string(D));
      detail::require_shape(av.empty() || static_cast<std::ptrdiff_t>(av.size()) == kv_dim(v),
                            "encoder.relative_value.size", av.size(),
                            "0 (no value term) or v.dim = " + std::to_string(kv_dim(v)));
    }
  }
  if (B == 0 || Sq == 0 || Hq == 0 || kv_dim(v) == 0) return;
  if (Sk == 0) {  // no key: every row attends to nothing, zeros with or without sinks (as sdpa)
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t i = 0; i < Sq; ++i)
        for (std::ptrdiff_t h = 0; h < Hq; ++h)
          for (std::ptrdiff_t d = 0; d < kv_dim(v); ++d) out(b, i, h, d) = 0.0f;
    return;
  }

  attention_workspace local;
  attention_workspace& ws = f.workspace ? *f.workspace : local;
  // Hook 2 on copies (never on the inputs); q also copied when its rows are not contiguous, and when
  // out overlaps q other than row for row (same address, strides and size: each work item reads its
  // own q rows before it writes the same out rows): otherwise an item could overwrite q rows another
  // item has still to read (Dv != D, other layouts).
  const bool same_rows = q.data() == out.data() && q.dim() == out.dim() &&
                         q.stride(axis::batch) == out.stride(axis::batch) &&
                         q.stride(axis::token) == out.stride(axis::token) &&
                         q.stride(axis::head) == out.stride(axis::head) && q.stride(axis::dim) == out.stride(axis::dim);
  bool q_copy = !q.dim_contiguous() || (!same_rows && overlaps(out, q));
  bool k_transform = false;
  if constexpr (qk_transform_encoding<E>) {
    q_copy = q_copy || o.transform_queries;
    k_transform = o.transform_keys;
  }
  if (q_copy) {
    float* buf = detail::grow(ws.q, static_cast<std::size_t>(q.size()));
    const auto view = tensor_view<float>::bthd(buf, B, Sq, Hq, D);
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t t = 0; t < Sq; ++t)
        for (std::ptrdiff_t h = 0; h < Hq; ++h)
          for (std::ptrdiff_t d = 0; d < D; ++d) view(b, t, h, d) = q(b, t, h, d);
    if constexpr (qk_transform_encoding<E>)
      if (o.transform_queries) enc.transform_q(view, mask.query_positions());
    q = view;
  }
  if (k_transform) {  // transformed keys are float whatever their storage (the oracle's rounding)
    if constexpr (qk_transform_encoding<E>) {
      float* buf = detail::grow(ws.k, static_cast<std::size_t>(B * Sk * k.heads() * D));
      const auto view = tensor_view<float>::bthd(buf, B, Sk, k.heads(), D);
      for (std::ptrdiff_t b = 0; b < B; ++b)
        for (std::ptrdiff_t t = 0; t < Sk; ++t)
          for (std::ptrdiff_t h = 0; h < k.heads(); ++h)
            for (std::ptrdiff_t d = 0; d < D; ++d) view(b, t, h, d) = kv_value(k.row(b, t, h), d, k.stride(axis::dim));
      enc.transform_k(view, mask.key_positions());
      run<E, float, TV>(q, tensor_view<const float>(view), v, out, enc, o, f, mask, ws, scale);
    }
    return;
  }
  run<E, TK, TV>(q, k, v, out, enc, o, f, mask, ws, scale);
}

}  // namespace posenc::inline v0::fast_detail
