// posenc/attention/fast/scores.hpp — what one (query tile, key tile) pair does to its score rows, in
// both directions: the tile's class from the per-tile summaries (skip, full, partial), the element
// mask of a partial tile, and the score hooks that follow the content logit and the soft-cap in the
// order of attention/options.hpp: the distance table's row, the general biases, then the mask.
//
// The forward (fast/forward.hpp) and the backward (fast/backward.hpp) call the same functions on
// the same tables, so a logit is formed the same way in both. Encoder hooks that add a term per
// (query, key) pair are new cases of score_hooks; hooks that need their own pass over a tile (a key
// dependent bias gathered by bucket, a running sum over the keys) get a step beside it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <posenc/attention/fast/encoder_paths.hpp>
#include <posenc/attention/fast/plan.hpp>
#include <posenc/attention/fast/workspace.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/checked.hpp>

namespace posenc::inline v0::detail {

enum class tile_class : unsigned char { skip, full, partial };

/// The class of the pair (query tile q, key tile k) from their summaries: skip (nothing visible),
/// full (everything visible: no mask work) or partial (the element mask decides).
inline tile_class classify(const attention_options& o, const tile_summary& q, const tile_summary& k) noexcept {
  if (k.visible == 0 || q.count == 0) return tile_class::skip;
  bool full = k.visible == k.count;
  if (!o.query_segments.empty()) {
    if (q.smax < 0 || k.smax < 0 || q.smax < k.smin || k.smax < q.smin) return tile_class::skip;
    full = full && q.smin == q.smax && k.smin == k.smax && q.smin == k.smin && q.smin >= 0;
  }
  const std::int64_t dlo = saturating_difference(q.pmin, k.pmax),
                     dhi = saturating_difference(q.pmax, k.pmin);  // pos_q - pos_k
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

/// The element mask of a partial tile: mk[t ld + j] = query token i0 + t of sequence b sees key j0 + j.
inline void fill_tile_mask(const attention_mask& mask, std::ptrdiff_t b, std::ptrdiff_t i0, std::ptrdiff_t nq,
                           std::ptrdiff_t j0, int nk, std::uint8_t* mk, std::ptrdiff_t ld) {
  for (std::ptrdiff_t t = 0; t < nq; ++t)
    for (int j = 0; j < nk; ++j) mk[t * ld + j] = mask.allowed(b, i0 + t, j0 + j) ? 1 : 0;
}

/// Maps distance d into a table over range r (clamped: outside r the hook is constant).
[[nodiscard]] inline std::ptrdiff_t table_index(distance_range r, std::int64_t d) noexcept {
  return static_cast<std::ptrdiff_t>(std::clamp(d, r.lo, r.hi) - r.lo);
}

/// The table column of key j0 + j of sequence b seen from pos_q, in range r.
template <class C>
[[nodiscard]] std::ptrdiff_t key_column(const C& c, distance_range r, std::int64_t pos_q, std::ptrdiff_t b,
                                        std::ptrdiff_t j) noexcept {
  return table_index(r, saturating_difference(c.pk[static_cast<std::size_t>(b * c.p.Sk + j)], pos_q));
}

/// Adds the general-path biases (score-bias leaves not covered by the table) of row (h, pos_q).
template <class C>
void add_general_bias(const C& c, std::ptrdiff_t h, std::int64_t pos_q, std::ptrdiff_t b, std::ptrdiff_t j0, int nk,
                      float* s) {
  for_each_leaf(c.enc, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (score_bias_encoding<L>) {
      if (distance_bias_encoding<L> && c.p.use_table) return;
      for (int j = 0; j < nk; ++j)
        s[j] += static_cast<float>(leaf.bias(h, pos_q, c.pk[static_cast<std::size_t>(b * c.p.Sk + j0 + j)]));
    }
  });
}

/// The per-row constant of the table path (query_bias of the distance leaves), double: left out of
/// the table's rows, it cancels in the softmax except against a sink and in the log-sum-exp.
template <class C>
double table_query_bias(const C& c, std::ptrdiff_t h, std::int64_t pos_q) {
  double r = 0;
  if (!c.p.use_table) return r;
  for_each_leaf(c.enc, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (distance_bias_encoding<L>) r += static_cast<double>(leaf.query_bias(h, pos_q));
  });
  return r;
}

/// The slice of row `tab` (a distance table over range r) that keys j0 .. j0 + nk - 1 of sequence b
/// read from pos_q when their positions are consecutive and all inside r, else null.
template <class C>
const float* distance_slice(const C& c, const float* tab, distance_range r, const tile_summary& ks, std::int64_t pos_q,
                            std::ptrdiff_t b, std::ptrdiff_t j0, int nk) {
  if (!ks.contiguous) return nullptr;
  const std::int64_t* pk = c.pk.data() + b * c.p.Sk + j0;
  const std::int64_t d0 = saturating_difference(pk[0], pos_q), d1 = saturating_difference(pk[nk - 1], pos_q);
  return d1 - d0 == nk - 1 && d0 >= r.lo && d1 <= r.hi ? tab + (d0 - r.lo) : nullptr;
}

/// Adds row `tab` (a distance table over range r) for keys j0.. of sequence b to s: runs of keys whose
/// distances clip to one end as one constant, a contiguous run as a slice of the table.
template <class C>
void add_distance_row(const C& c, const float* tab, distance_range r, const tile_summary& ks, std::int64_t pos_q,
                      std::ptrdiff_t b, std::ptrdiff_t j0, int nk, float* s) {
  const std::int64_t* pk = c.pk.data() + b * c.p.Sk + j0;
  if (ks.contiguous) {
    const std::int64_t d0 = saturating_difference(pk[0], pos_q), d1 = saturating_difference(pk[nk - 1], pos_q);
    if (d1 <= r.lo || d0 >= r.hi) {  // the whole row saturates: one constant
      c.tiles.add_const(s, tab[d1 <= r.lo ? 0 : r.hi - r.lo], nk);
      return;
    }
    if (d1 - d0 == nk - 1) {  // keys [0, a) clip to r.lo, [a, e) are a slice of the table, [e, nk) clip to r.hi
      const auto a = static_cast<int>(std::clamp<std::int64_t>(saturating_difference(r.lo, d0), 0, nk));
      const auto e = static_cast<int>(std::clamp<std::int64_t>(saturating_difference(r.hi, d0), -1, nk - 1) + 1);
      if (a > 0) c.tiles.add_const(s, tab[0], a);
      if (e > a) c.tiles.add_row(s + a, tab + (d0 + a - r.lo), e - a);
      if (e < nk) c.tiles.add_const(s + std::max(a, e), tab[r.hi - r.lo], nk - std::max(a, e));
      return;
    }
  }
  for (int j = 0; j < nk; ++j) s[j] += tab[table_index(r, saturating_difference(pk[j], pos_q))];
}

/// The score hooks of row (head h, query position pos_q) after the content logit and the soft-cap:
/// the distance table's row (its query bias left out), the general biases, then -inf for the keys
/// that mask row `mr` hides (null: a full tile). With `fold`, a table row that is one slice of the
/// table and the row's last hook (no general bias, no mask) is not added but returned, for the
/// softmax to add in its own passes (row_max_add, exp_sum_add: the same sums); null otherwise.
template <class C>
const float* score_hooks(const C& c, float* s, std::ptrdiff_t h, std::int64_t pos_q, const tile_summary& ks,
                         std::ptrdiff_t b, std::ptrdiff_t j0, int nk, const std::uint8_t* mr, bool fold = false) {
  using E = std::remove_cvref_t<decltype(c.enc)>;
  constexpr bool general =
      count_leaves<E>([]<class L>() { return score_bias_encoding<L> && !distance_bias_encoding<L>; }) > 0;
  if (!general && fold && mr == nullptr && c.p.use_table)
    if (const float* t = distance_slice(c, c.t.table + h * c.p.tn, c.p.trange, ks, pos_q, b, j0, nk)) return t;
  if (c.p.use_table) add_distance_row(c, c.t.table + h * c.p.tn, c.p.trange, ks, pos_q, b, j0, nk, s);
  if constexpr (score_bias_encoding<std::remove_cvref_t<decltype(c.enc)>>) add_general_bias(c, h, pos_q, b, j0, nk, s);
  if (mr != nullptr)
    for (int j = 0; j < nk; ++j) s[j] = mr[j] ? s[j] : -std::numeric_limits<float>::infinity();
  return nullptr;
}

}  // namespace posenc::inline v0::detail
