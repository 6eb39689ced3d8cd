// posenc/attention/fast/tables.hpp — stage 2 of a fused attention call, shared by the forward and the
// backward: the operands as the kernels read them (hook 2 on copies of q and k) and the per-call
// tables the plan asks for (tile summaries, the distance table, Shaw's and DeBERTa's tables, q rows
// prepared for decode's key record, room for key-chunk partials), in the workspace.
//
// Every table is built once per call from the encoder's hooks, never per work item; the backward
// reads the forward's tables of the same call (same plan rules, same values). Not here: what a work
// item does with them (fast/scores.hpp, fast/forward.hpp, fast/backward.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include <posenc/attention/fast/call.hpp>
#include <posenc/attention/fast/encoder_paths.hpp>
#include <posenc/attention/fast/kv_q8_0.hpp>
#include <posenc/attention/fast/plan.hpp>
#include <posenc/attention/fast/workspace.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0::detail {

/// The distances pos_k - pos_q the call can see (saturated), {0, 0} without queries or keys.
[[nodiscard]] inline distance_range call_distances(const attention_mask& mask) {
  const auto pq = mask.query_positions(), pk = mask.key_positions();
  if (pq.empty() || pk.empty()) return {0, 0};
  const auto [qlo, qhi] = std::minmax_element(pq.begin(), pq.end());
  const auto [klo, khi] = std::minmax_element(pk.begin(), pk.end());
  return {saturating_difference(*klo, *qhi), saturating_difference(*khi, *qlo)};
}

/// Hook 2 on q: the rows the kernels read. A contiguous copy (never the input) when `copy`, when the
/// encoder transforms queries and when q's rows are not contiguous; else q itself.
template <class E>
tensor_view<const float> kernel_queries(tensor_view<const float> q, bool copy, const E& enc, const attention_options& o,
                                        const attention_mask& mask, attention_workspace& ws) {
  copy = copy || !q.dim_contiguous();
  if constexpr (qk_transform_encoding<E>) copy = copy || o.transform_queries;
  if (!copy) return q;
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

/// Hook 2 on k: transformed keys, float whatever their storage (the oracle's rounding), contiguous,
/// in ws.
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

/// Per-tile summaries of positions, segments and padding (B sequences of S tokens, tiles of `tile`).
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

/// The distance-bias leaves' table: row h holds sum over the leaves of bias_at_distance(h, d) for the
/// plan's distances d in trange, [Hq][tn].
template <class E>
const float* build_distance_table(const plan& p, const E& enc, attention_workspace& ws) {
  float* tab = detail::grow(ws.bias, static_cast<std::size_t>(p.Hq * p.tn));
  for (std::ptrdiff_t h = 0; h < p.Hq; ++h)
    for (std::ptrdiff_t x = 0; x < p.tn; ++x) {
      double sum = 0;
      for_each_leaf(enc, [&](const auto& leaf) {
        if constexpr (distance_bias_encoding<std::remove_cvref_t<decltype(leaf)>>)
          sum += static_cast<double>(leaf.bias_at_distance(h, p.trange.lo + x));
      });
      tab[h * p.tn + x] = static_cast<float>(sum);
    }
  return tab;
}

/// Shaw's aK (transposed, [heads][D][sld]) and aV ([heads][sn][dvp]) over the plan's distances, in
/// float; one table pair for all heads unless two heads' vectors differ.
template <class E>
void build_shaw_tables(const plan& p, const E& enc, attention_workspace& ws, call_tables& t) {
  for_each_leaf(enc, [&](const auto& leaf) {
    if constexpr (distance_relative_kv_encoding<std::remove_cvref_t<decltype(leaf)>>) {
      // Per-head tables iff two heads differ: ask for head 0 and head 1 and compare addresses.
      t.shaw_heads =
          p.Hq > 1 && leaf.relative_key_at_distance(0, 0).data() != leaf.relative_key_at_distance(1, 0).data() ? p.Hq
                                                                                                               : 1;
      const auto nak = static_cast<std::size_t>(t.shaw_heads * p.D * p.sld + 64),  // slack: windows read past sn
          nav = static_cast<std::size_t>(p.shaw_value ? t.shaw_heads * p.sn * p.dvp : 0);
      float* ak = detail::grow(ws.shaw_key, nak);
      float* av = detail::grow(ws.shaw_value, nav);
      std::fill(ak, ak + nak, 0.0f);
      std::fill(av, av + nav, 0.0f);
      for (std::ptrdiff_t h = 0; h < t.shaw_heads; ++h)
        for (std::ptrdiff_t x = 0; x < p.sn; ++x) {
          const auto a = leaf.relative_key_at_distance(h, p.srange.lo + x);
          for (std::ptrdiff_t d = 0; d < p.D; ++d)
            ak[(h * p.D + d) * p.sld + x] = static_cast<float>(a[static_cast<std::size_t>(d)]);
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

/// DeBERTa's p2c aQ over the plan's distances, in float, transposed as Shaw's aK ([Hq][D][sld]), with
/// 64 zero floats after it: a key tile's product reads a window of up to 64 columns past its last.
/// And, for the backward's products, aK (Shaw's table) and aQ as rows: [heads][sld + 64][Dp], Dp =
/// D padded to 64, zero past sn.
template <class E>
void build_p2c_table(const plan& p, const E& enc, attention_workspace& ws, call_tables& t) {
  for_each_leaf(enc, [&](const auto& leaf) {
    if constexpr (distance_relative_query_encoding<std::remove_cvref_t<decltype(leaf)>>) {
      const auto n = static_cast<std::size_t>(p.Hq * p.D * p.sld + 64);
      float* aq = detail::grow(ws.shaw_query, n);
      std::fill(aq, aq + n, 0.0f);
      for (std::ptrdiff_t h = 0; h < p.Hq; ++h)
        for (std::ptrdiff_t x = 0; x < p.sn; ++x) {
          const auto a = leaf.relative_query_at_distance(h, p.srange.lo + x);
          for (std::ptrdiff_t d = 0; d < p.D; ++d)
            aq[(h * p.D + d) * p.sld + x] = static_cast<float>(a[static_cast<std::size_t>(d)]);
        }
      t.aq = aq;
    }
  });
  const std::ptrdiff_t Dp = (p.D + 63) / 64 * 64, rl = (p.sld + 64) * Dp, hk = t.ak != nullptr ? t.shaw_heads : 0;
  const auto n = static_cast<std::size_t>((hk + p.Hq) * rl);
  float* rows = detail::grow(ws.shaw_rows, n);
  std::fill(rows, rows + n, 0.0f);
  auto transpose = [&](const float* from, std::ptrdiff_t heads, float* to) {  // [h][D][sld] -> [h][sld + 64][Dp]
    for (std::ptrdiff_t h = 0; h < heads; ++h)
      for (std::ptrdiff_t d = 0; d < p.D; ++d)
        for (std::ptrdiff_t x = 0; x < p.sn; ++x) to[h * rl + x * Dp + d] = from[(h * p.D + d) * p.sld + x];
  };
  if (hk > 0) transpose(t.ak, hk, rows);
  transpose(t.aq, p.Hq, rows + hk * rl);
  t.akr = hk > 0 ? rows : nullptr;
  t.aqr = rows + hk * rl;
}

/// CoPE's embedding rows n < cn in float: transposed [cope_heads][D][cld] (zero past cn; 64 floats of
/// slack: a window of columns may read past the last row) for the q . e(n) products, and as rows
/// [cope_heads][cn + 64][Dp] (zero-padded, Dp = D padded to 64) for the backward's dq; one table for all
/// heads unless two heads' rows differ.
template <class E>
void build_cope_tables(const plan& p, const E& enc, attention_workspace& ws, call_tables& t) {
  for_each_leaf(enc, [&](const auto& leaf) {
    if constexpr (contextual_position_table_encoding<std::remove_cvref_t<decltype(leaf)>>) {
      t.cope_heads =
          p.Hq > 1 && leaf.position_embedding(0, 0).data() != leaf.position_embedding(1, 0).data() ? p.Hq : 1;
      const std::ptrdiff_t Dp = (p.D + 63) / 64 * 64;
      const auto nt = static_cast<std::size_t>(t.cope_heads * p.D * p.cld + 64),
                 nr = static_cast<std::size_t>(t.cope_heads * (p.cn + 64) * Dp);
      float* ce = detail::grow(ws.cope, nt + nr);
      std::fill(ce, ce + nt + nr, 0.0f);
      float* cr = ce + nt;
      for (std::ptrdiff_t h = 0; h < t.cope_heads; ++h)
        for (std::ptrdiff_t n = 0; n < p.cn; ++n) {
          const auto e = leaf.position_embedding(h, n);
          for (std::ptrdiff_t d = 0; d < p.D; ++d) {
            const auto x = static_cast<float>(e[static_cast<std::size_t>(d)]);
            ce[(h * p.D + d) * p.cld + n] = x;
            cr[(h * (p.cn + 64) + n) * Dp + d] = x;
          }
        }
      t.ce = ce;
      t.cr = cr;
      t.cope_gate = static_cast<float>(leaf.gate_logit_scale());
      t.cope_cap = static_cast<double>(leaf.max_position());
    }
  });
}

/// Stage 2: the per-call tables plan p asks for (see the banner). k_ops: the key record, whose prep_q
/// prepares the q rows of the decode path's key kernel once per call (not per key tile); the
/// prefill's work items prepare their own rows (begin_item), in parallel and in cache.
template <class E, class TK>
call_tables build_tables(const plan& p, const E& enc, const attention_options& o, const attention_mask& mask,
                         tensor_view<const float> q, const kernels::storage_kernels<TK>& k_ops,
                         attention_workspace& ws) {
  call_tables t;
  const std::ptrdiff_t B = p.B, Sq = p.Sq, Hq = p.Hq, D = p.D;
  tile_summary* qsum = detail::grow(ws.tiles, static_cast<std::size_t>(B * (p.nqt + p.nkt)));
  tile_summary* ksum = qsum + B * p.nqt;
  summarize(mask.query_positions(), o.query_segments, o, false, B, Sq, p.TQ, qsum);
  summarize(mask.key_positions(), o.key_segments, o, true, B, p.Sk, p.TK, ksum);
  t.qsum = qsum;
  t.ksum = ksum;
  if (p.use_table) t.table = build_distance_table(p, enc, ws);
  if constexpr (any_leaf_relative_kv<E>()) build_shaw_tables(p, enc, ws, t);
  if constexpr (any_leaf_relative_query<E>()) build_p2c_table(p, enc, ws, t);
  if constexpr (contextual_position_table_encoding<E>) build_cope_tables(p, enc, ws, t);
  if (p.prep_q) t.qk_q_stride = k_ops.prep_floats != nullptr ? k_ops.prep_floats(static_cast<int>(D)) : D;
  if (p.prep_q && p.path == kv_path::decode) {  // prefill: each work item prepares its own rows
    const std::ptrdiff_t n = t.qk_q_stride;
    float* buf = detail::grow(ws.qk_q, static_cast<std::size_t>(B * Sq * Hq * n));
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t i = 0; i < Sq; ++i)
        for (std::ptrdiff_t h = 0; h < Hq; ++h)
          k_ops.prep_q(q.row(b, i, h), static_cast<int>(D), buf + ((b * Sq + i) * Hq + h) * n);
    t.qk_q = buf;
  }
  if (p.chunks > 1)
    t.partial = detail::grow(ws.partial, static_cast<std::size_t>(p.items * p.chunks * p.rows_max * (2 + p.dvp)));
  return t;
}

}  // namespace posenc::inline v0::detail
