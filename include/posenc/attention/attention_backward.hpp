// posenc/attention/attention_backward.hpp — posenc::attention_backward, the fused FlashAttention-2
// backward on the CPU beside the sdpa_backward oracle (docs/training.md).
//
// Dao 2023, FlashAttention-2 Algorithm 2, fp32: the forward (posenc::attention) hands out each row's
// log-sum-exp L_i (fast_attention_options::log_sum_exp); the backward recomputes every score tile
// from q, k and L_i (p_ij = exp(s_ij - L_i)), never an Sq x Sk buffer, and takes
// D_i = rowsum(dout_i * out_i). Per (query tile, key tile) pair, five products on the forward's
// microkernels (fast/tile-inl.hpp: qk_packed, pv_packed): S = Q K^T, dP = dO V^T, dV += P^T dO,
// dK += dS^T Q, dQ += dS K, with the hooks of sdpa_backward.hpp in between (soft-cap derivative,
// masks, distance-table and general biases, Shaw terms) and the encoder's parameter gradients
// accumulated inside the tiles through its accumulate_* hooks (T5 buckets, Shaw tables).
// Work: one item per (sequence, kv head, lane); lane l owns the key tiles l, l + lanes, ... (the
// interleave balances a causal mask), so dK and dV rows have one writer; dQ and the parameter
// gradients go to per-item partials summed in item order. The cut depends on the shape only, so
// the result is bit-identical for any thread count. Causal / window / chunk / segment tile pairs
// with nothing visible are skipped (detail::classify, the forward's rule).
// Memory: the per-call buffers and the per-item scratch live in fast_attention_options::workspace
// when one is given (a call no larger than an earlier one allocates nothing); a lane's dQ partial
// of a query tile is cleared on its first write, and partials it never wrote are not summed.
// Not here: bfloat16 / float16 K, V (float only), dropout, the weights output.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/driver.hpp>
#include <posenc/attention/fast/encoder_paths.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/attention/fast/options.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/attention/rules.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0 {

namespace detail {

/// Everything the work items of one backward call share.
template <class E>
struct backward_call {
  const E& enc;
  const attention_options& o;
  const attention_mask& mask;
  const detail::tile_kernels& kern;
  std::span<const std::int64_t> pq, pk;
  std::ptrdiff_t B = 0, Sq = 0, Sk = 0, Hq = 0, Hkv = 0, G = 1, D = 0, Dv = 0, Dp = 0, Dvp = 0;
  int TQ = 1, TK = 64;
  std::ptrdiff_t nqt = 0, nkt = 0, lanes = 1, rmax = 0;
  float scale = 1;
  bool softcap = false;
  float cap = 1, inv_cap = 1;
  const tile_summary *qsum = nullptr, *ksum = nullptr;
  // per query tile, rows r = head-in-group * nq + token: [B][Hkv][nqt][rmax][Dp] / [..][Dvp] / [..]
  const float *qp = nullptr, *dop = nullptr, *off = nullptr, *drow = nullptr;
  const float* k = nullptr;  // transformed k, contiguous [B, Sk, Hkv, D]
  tensor_view<const float> v{};
  float* dk = nullptr;           // w.r.t. the transformed k, contiguous [B, Sk, Hkv, D]
  float* dv = nullptr;           // contiguous [B, Sk, Hkv, Dv]
  float* dqp = nullptr;          // [lanes][B][Hkv][nqt][rmax][Dp]
  std::uint8_t* live = nullptr;  // [lanes][B][Hkv][nqt]: the lane wrote that dQ partial
  std::ptrdiff_t n_params = 0;
  // distance table of the distance-bias leaves (as the forward's), or the general path
  bool use_table = false;
  distance_range trange{};
  std::ptrdiff_t tn = 0;
  const float* table = nullptr;  // [Hq][tn]

  [[nodiscard]] std::size_t tile_index(std::ptrdiff_t b, std::ptrdiff_t g, std::ptrdiff_t qt) const noexcept {
    return static_cast<std::size_t>(((b * Hkv + g) * nqt + qt) * rmax);
  }
};

/// Adds the biases of row (h, pos_q) for keys j0 .. j0 + nk of sequence b (query bias left out
/// on the table path: it is folded into the row's offset).
template <class E>
void backward_bias_row(const backward_call<E>& c, std::ptrdiff_t h, std::int64_t pos_q, std::ptrdiff_t b,
                       std::ptrdiff_t j0, int nk, float* s) {
  const std::int64_t* pk = c.pk.data() + b * c.Sk + j0;
  if (c.use_table) {
    const float* tab = c.table + h * c.tn;
    for (int j = 0; j < nk; ++j) s[j] += tab[std::clamp(saturating_difference(pk[j], pos_q), c.trange.lo, c.trange.hi) - c.trange.lo];
  }
  for_each_leaf(c.enc, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (score_bias_encoding<L>) {
      if (distance_bias_encoding<L> && c.use_table) return;
      for (int j = 0; j < nk; ++j) s[j] += static_cast<float>(leaf.bias(h, pos_q, pk[j]));
    }
  });
}

/// One work item: sequence b, kv head g, the key tiles of lane `lane`.
template <class E>
void backward_item(const backward_call<E>& c, attention_scratch& scratch, std::ptrdiff_t b, std::ptrdiff_t g,
                   std::ptrdiff_t lane, std::span<double> pgrad) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  const std::ptrdiff_t TKc = c.TK, D = c.D, Dv = c.Dv, Dp = c.Dp, Dvp = c.Dvp, R0 = c.rmax;
  float* kt = grow(scratch.f, static_cast<std::size_t>(D * TKc + Dv * TKc + 2 * TKc * Dp + TKc * Dvp + 3 * R0 * TKc));
  // kt: [D][TKc]: K^T for S = Q K^T
  float* vt = kt + D * TKc;     // [Dv][TKc]: V^T for dP = dO V^T
  float* kr = vt + Dv * TKc;    // [TKc][Dp]: K for dQ += dS K
  float* dka = kr + TKc * Dp;   // [TKc][Dp]: dK of the tile
  float* dva = dka + TKc * Dp;  // [TKc][Dvp]: dV of the tile
  float* s = dva + TKc * Dvp;   // [R][TKc]: scores, then P
  float* dp = s + R0 * TKc;     // [R][TKc]: dP, then dS (scaled, soft-cap derivative applied)
  float* lc = dp + R0 * TKc;    // [R][TKc]: capped logits (soft-cap only)
  const float** qrows = grow(scratch.rows, static_cast<std::size_t>(2 * R0));
  const float** drows = qrows + R0;
  std::uint8_t* mk = grow(scratch.mask, static_cast<std::size_t>(c.TQ * TKc));

  for (std::ptrdiff_t kti = lane; kti < c.nkt; kti += c.lanes) {
    const tile_summary& ks = c.ksum[b * c.nkt + kti];
    const std::ptrdiff_t j0 = kti * TKc;
    const int nk = static_cast<int>(std::min<std::ptrdiff_t>(TKc, c.Sk - j0));
    // pack K^T, V^T, K (zero-padded), clear the tile's dK, dV
    std::fill(kt, kt + D * TKc, 0.0f);
    std::fill(vt, vt + Dv * TKc, 0.0f);
    std::fill(kr, kr + TKc * Dp, 0.0f);
    std::fill(dka, dka + TKc * Dp, 0.0f);
    std::fill(dva, dva + TKc * Dvp, 0.0f);
    for (int j = 0; j < nk; ++j) {
      const float* krow = c.k + ((b * c.Sk + j0 + j) * c.Hkv + g) * D;
      for (std::ptrdiff_t d = 0; d < D; ++d) kt[d * TKc + j] = krow[d], kr[j * Dp + d] = krow[d];
      for (std::ptrdiff_t d = 0; d < Dv; ++d) vt[d * TKc + j] = c.v(b, j0 + j, g, d);
    }
    bool touched = false;
    for (std::ptrdiff_t qt = 0; qt < c.nqt; ++qt) {
      const tile_summary& qs = c.qsum[b * c.nqt + qt];
      const tile_class cls = classify(c.o, qs, ks);
      if (cls == tile_class::skip) continue;
      touched = true;
      const std::ptrdiff_t i0 = qt * c.TQ, nq = std::min<std::ptrdiff_t>(c.TQ, c.Sq - i0), R = c.G * nq;
      const std::size_t ti = c.tile_index(b, g, qt);
      const float* qp = c.qp + ti * static_cast<std::size_t>(Dp);
      const float* dop = c.dop + ti * static_cast<std::size_t>(Dvp);
      const float* off = c.off + ti;
      const float* drow = c.drow + ti;
      float* dqp = c.dqp + (static_cast<std::size_t>(lane) * static_cast<std::size_t>(c.B * c.Hkv * c.nqt * R0) + ti) *
                               static_cast<std::size_t>(Dp);
      std::uint8_t& live = c.live[(lane * c.B + b) * c.Hkv * c.nqt + g * c.nqt + qt];
      bool dq_accumulate = live != 0;
      if constexpr (relative_kv_encoding<E>)  // Shaw's dQ terms come first
        if (!live) std::fill(dqp, dqp + R * Dp, 0.0f), dq_accumulate = true;
      for (std::ptrdiff_t r = 0; r < R; ++r) {
        qrows[r] = qp + r * Dp;
        drows[r] = dop + r * Dvp;
      }
      if (cls == tile_class::partial)
        for (std::ptrdiff_t t = 0; t < nq; ++t)
          for (int j = 0; j < nk; ++j) mk[t * TKc + j] = c.mask.allowed(b, i0 + t, j0 + j);

      // ---- S, then P = exp(S - L) row by row with every hook of the forward ----
      c.kern.qk_packed(qrows, static_cast<int>(R), kt, TKc, static_cast<int>(D), c.scale, s, TKc);
      c.kern.qk_packed(drows, static_cast<int>(R), vt, TKc, static_cast<int>(Dv), 1.0f, dp, TKc);
      for (std::ptrdiff_t r = 0; r < R; ++r) {
        float* sr = s + r * TKc;
        float* dr = dp + r * TKc;
        const std::ptrdiff_t h = g * c.G + r / nq;
        const std::int64_t pos_q = c.pq[static_cast<std::size_t>(b * c.Sq + i0 + r % nq)];
        const std::int64_t* pk = c.pk.data() + b * c.Sk + j0;
        if constexpr (relative_kv_encoding<E>) {  // Shaw: scale q . aK into S, dO . aV into dP
          const float* qr = qrows[r];
          const float* dor = drows[r];
          for (int j = 0; j < nk; ++j) {
            const auto ak = c.enc.relative_key(h, pos_q, pk[j]);
            float a = 0;
            for (std::ptrdiff_t d = 0; d < D; ++d) a += qr[d] * static_cast<float>(ak[static_cast<std::size_t>(d)]);
            sr[j] += c.scale * a;
            const auto av = c.enc.relative_value(h, pos_q, pk[j]);
            float w = 0;
            for (std::size_t d = 0; d < av.size(); ++d) w += dor[d] * static_cast<float>(av[d]);
            dr[j] += w;
          }
        }
        if (c.softcap) {
          c.kern.softcap(sr, nk, c.cap, c.inv_cap);
          std::copy_n(sr, nk, lc + r * TKc);
        }
        if constexpr (score_bias_encoding<E>) backward_bias_row(c, h, pos_q, b, j0, nk, sr);
        if (cls == tile_class::partial) {
          const std::uint8_t* mr = mk + (r % nq) * TKc;
          for (int j = 0; j < nk; ++j) sr[j] = mr[j] ? sr[j] : ninf;
        }
        for (int j = nk; j < TKc; ++j) sr[j] = ninf;  // padding keys: p = 0
        // L = +inf marks a row that attends to nothing: every p is exp(-inf) = 0
        c.kern.exp_sum(sr, static_cast<int>(TKc), off[r]);
        // dS = P (dP - D_i); d bias = dS; then the soft-cap derivative and the scale: dU
        const float Di = drow[r];
        for (int j = 0; j < nk; ++j) dr[j] = sr[j] * (dr[j] - Di);
        for (int j = nk; j < TKc; ++j) dr[j] = 0;
        if constexpr (trainable_score_bias_encoding<E>)
          if (c.n_params > 0)
            for (int j = 0; j < nk; ++j)
              if (sr[j] != 0) c.enc.accumulate_bias_gradient(h, pos_q, pk[j], static_cast<double>(dr[j]), pgrad);
        if (c.softcap) {
          const float* lr = lc + r * TKc;
          for (int j = 0; j < nk; ++j) {
            const float t = lr[j] * c.inv_cap;
            dr[j] *= c.scale * (1.0f - t * t);
          }
        } else {
          for (int j = 0; j < nk; ++j) dr[j] *= c.scale;
        }
        if constexpr (relative_kv_encoding<E>) {  // Shaw: dQ += dU aK, d aK += dU q, d aV += P dO
          const float* qr = qrows[r];
          const float* dor = drows[r];
          float* dq = dqp + r * Dp;
          for (int j = 0; j < nk; ++j) {
            if (sr[j] == 0) continue;
            const auto ak = c.enc.relative_key(h, pos_q, pk[j]);
            for (std::ptrdiff_t d = 0; d < D; ++d) dq[d] += dr[j] * static_cast<float>(ak[static_cast<std::size_t>(d)]);
            if constexpr (trainable_relative_kv_encoding<E>)
              if (c.n_params > 0) {
                c.enc.accumulate_relative_key_gradient(h, pos_q, pk[j], static_cast<double>(dr[j]),
                                                       std::span<const float>(qr, static_cast<std::size_t>(D)), pgrad);
                c.enc.accumulate_relative_value_gradient(h, pos_q, pk[j], static_cast<double>(sr[j]),
                                                         std::span<const float>(dor, static_cast<std::size_t>(Dv)),
                                                         pgrad);
              }
          }
        }
      }
      // ---- dV += P^T dO, dK += dU^T Q (P, dU read transposed), dQ += dU K (the first write clears) ----
      c.kern.pv_strided(s, 1, TKc, nk, dop, Dvp, static_cast<int>(R), static_cast<int>(Dvp), dva, Dvp, true);
      c.kern.pv_strided(dp, 1, TKc, nk, qp, Dp, static_cast<int>(R), static_cast<int>(Dp), dka, Dp, true);
      c.kern.pv_strided(dp, TKc, 1, static_cast<int>(R), kr, Dp, nk, static_cast<int>(Dp), dqp, Dp, dq_accumulate);
      live = 1;
    }
    // the tile's dK, dV rows (this item is their only writer)
    for (int j = 0; j < nk; ++j) {
      float* dkr = c.dk + ((b * c.Sk + j0 + j) * c.Hkv + g) * D;
      float* dvr = c.dv + ((b * c.Sk + j0 + j) * c.Hkv + g) * Dv;
      for (std::ptrdiff_t d = 0; d < D; ++d) dkr[d] = touched ? dka[j * Dp + d] : 0.0f;
      for (std::ptrdiff_t d = 0; d < Dv; ++d) dvr[d] = touched ? dva[j * Dvp + d] : 0.0f;
    }
  }
}

/// The whole backward (validation in attention_backward below).
template <class E>
void fast_attention_backward(tensor_view<const float> q, tensor_view<const float> k, tensor_view<const float> v,
                             tensor_view<const float> out, std::span<const float> lse, tensor_view<const float> dout,
                             tensor_view<float> dq, tensor_view<float> dk, tensor_view<float> dv, const E& enc,
                             const attention_options& o, const attention_gradients& grads,
                             const fast_attention_options& f) {
  const std::ptrdiff_t B = q.batch(), Sq = q.tokens(), Hq = q.heads(), D = q.dim();
  const std::ptrdiff_t Sk = k.tokens(), Hkv = k.heads(), Dv = v.dim();
  const attention_mask mask(o, B, Sq, Sk);
  const auto pq = mask.query_positions(), pk = mask.key_positions();
  const float scale = static_cast<float>(detail::softmax_scale(enc, o, D));
  const std::ptrdiff_t G = Hkv == 0 ? 1 : Hq / Hkv;
  constexpr float inf = std::numeric_limits<float>::infinity();
  auto zero = [](tensor_view<float> x) {
    for (std::ptrdiff_t b = 0; b < x.batch(); ++b)
      for (std::ptrdiff_t t = 0; t < x.tokens(); ++t)
        for (std::ptrdiff_t h = 0; h < x.heads(); ++h)
          for (std::ptrdiff_t d = 0; d < x.dim(); ++d) x(b, t, h, d) = 0.0f;
  };
  if (B == 0 || Sq == 0 || Hq == 0 || Sk == 0) {
    zero(dq), zero(dk), zero(dv);
    return;
  }
  const detail::tile_kernels kern = detail::active_tile_kernels();
  attention_workspace local;
  attention_workspace& ws = f.workspace ? *f.workspace : local;

  // ---- hook 2 on contiguous float copies (as the forward), D_i, the row offsets, the sinks ----
  float* const qt_buf = grow(ws.q, static_cast<std::size_t>(B * Sq * Hq * D));
  float* const kt_buf = grow(ws.k, static_cast<std::size_t>(B * Sk * Hkv * D));
  const auto qv = tensor_view<float>::bthd(qt_buf, B, Sq, Hq, D);
  const auto kv = tensor_view<float>::bthd(kt_buf, B, Sk, Hkv, D);
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    for (std::ptrdiff_t t = 0; t < Sq; ++t)
      for (std::ptrdiff_t h = 0; h < Hq; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d) qv(b, t, h, d) = q(b, t, h, d);
    for (std::ptrdiff_t t = 0; t < Sk; ++t)
      for (std::ptrdiff_t h = 0; h < Hkv; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d) kv(b, t, h, d) = k(b, t, h, d);
  }
  if constexpr (qk_transform_encoding<E>) {
    if (o.transform_queries) enc.transform_q(qv, pq);
    if (o.transform_keys) enc.transform_k(kv, pk);
  }

  backward_call<E> c{enc, o, mask, kern, pq, pk};
  c.B = B, c.Sq = Sq, c.Sk = Sk, c.Hq = Hq, c.Hkv = Hkv, c.G = G, c.D = D, c.Dv = Dv;
  c.Dp = (D + 63) / 64 * 64;
  c.Dvp = (Dv + 63) / 64 * 64;
  c.TK = f.key_tile;
  c.TQ = f.query_tile > 0 ? f.query_tile : static_cast<int>(std::max<std::ptrdiff_t>(1, 64 / G));
  c.nqt = (Sq + c.TQ - 1) / c.TQ;
  c.nkt = (Sk + c.TK - 1) / c.TK;
  c.rmax = G * c.TQ;
  c.scale = scale;
  c.softcap = o.logit_softcap.has_value();
  if (c.softcap) {  // the forward's clamp of the cap (driver.hpp)
    const double cp = std::clamp(*o.logit_softcap, 0x1p-100, 0x1p100);
    c.cap = static_cast<float>(cp);
    c.inv_cap = static_cast<float>(1.0 / cp);
  } else {
    c.cap = c.inv_cap = 1;
  }
  // Lanes: enough items for the threads a machine has, fixed by the shape alone.
  c.lanes = std::clamp<std::ptrdiff_t>(16 / std::max<std::ptrdiff_t>(1, B * Hkv), 1, c.nkt);
  tile_summary* const sums = grow(ws.tiles, static_cast<std::size_t>(B * (c.nqt + c.nkt)));
  summarize(pq, o.query_segments, o, false, B, Sq, c.TQ, sums);
  summarize(pk, o.key_segments, o, true, B, Sk, c.TK, sums + B * c.nqt);
  c.qsum = sums;
  c.ksum = sums + B * c.nqt;

  // distance table (the forward's construction)
  if constexpr (any_leaf_distance_bias<E>()) {
    const auto [qlo, qhi] = std::minmax_element(pq.begin(), pq.end());
    const auto [klo, khi] = std::minmax_element(pk.begin(), pk.end());
    const distance_range call_range{saturating_difference(*klo, *qhi), saturating_difference(*khi, *qlo)};
    distance_range r{INT64_MAX, INT64_MIN};
    for_each_leaf(enc, [&](const auto& leaf) {
      if constexpr (distance_bias_encoding<std::remove_cvref_t<decltype(leaf)>>) {
        const distance_range x = leaf.bias_distance_range();
        r = {std::min(r.lo, x.lo), std::max(r.hi, x.hi)};
      }
    });
    c.trange = clip_range(call_range, r);
    const std::int64_t span = saturating_difference(c.trange.hi, c.trange.lo);
    if (span < INT64_MAX && span + 1 <= f.max_bias_table / std::max<std::ptrdiff_t>(Hq, 1)) {
      c.use_table = true;
      c.tn = static_cast<std::ptrdiff_t>(span + 1);
      float* const table = grow(ws.bias, static_cast<std::size_t>(Hq * c.tn));
      for (std::ptrdiff_t h = 0; h < Hq; ++h)
        for (std::ptrdiff_t x = 0; x < c.tn; ++x) {
          double sum = 0;
          for_each_leaf(enc, [&](const auto& leaf) {
            if constexpr (distance_bias_encoding<std::remove_cvref_t<decltype(leaf)>>)
              sum += static_cast<double>(leaf.bias_at_distance(h, c.trange.lo + x));
          });
          table[h * c.tn + x] = static_cast<float>(sum);
        }
      c.table = table;
    }
  }

  // per query tile: packed q and dout rows (zero-padded), offsets L_i - query bias, D_i; the sinks'
  // gradient. Then dK, dV (every row written by its item) and the lanes' dQ partials.
  const auto n_rows = static_cast<std::size_t>(B * Hkv * c.nqt * c.rmax);
  const std::size_t n_qp = n_rows * static_cast<std::size_t>(c.Dp), n_dop = n_rows * static_cast<std::size_t>(c.Dvp);
  const auto n_dk = static_cast<std::size_t>(B * Sk * Hkv * D), n_dv = static_cast<std::size_t>(B * Sk * Hkv * Dv);
  float* const qp =
      grow(ws.backward, n_qp + n_dop + 2 * n_rows + n_dk + n_dv + static_cast<std::size_t>(c.lanes) * n_qp);
  float* const dop = qp + n_qp;
  float* const off = dop + n_dop;
  float* const drow = off + n_rows;
  float* const dk_buf = drow + n_rows;
  float* const dv_buf = dk_buf + n_dk;
  float* const dqp = dv_buf + n_dv;
  std::fill(qp, qp + n_qp + n_dop, 0.0f);
  std::fill(off, off + n_rows, inf);
  std::fill(drow, drow + n_rows, 0.0f);
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t g = 0; g < Hkv; ++g)
      for (std::ptrdiff_t t = 0; t < c.nqt; ++t) {
        const std::ptrdiff_t i0 = t * c.TQ, nq = std::min<std::ptrdiff_t>(c.TQ, Sq - i0);
        for (std::ptrdiff_t r = 0; r < G * nq; ++r) {
          const std::ptrdiff_t h = g * G + r / nq, i = i0 + r % nq;
          const std::size_t x = c.tile_index(b, g, t) + static_cast<std::size_t>(r);
          for (std::ptrdiff_t d = 0; d < D; ++d) qp[x * static_cast<std::size_t>(c.Dp) + d] = qv(b, i, h, d);
          double dd = 0;
          for (std::ptrdiff_t d = 0; d < Dv; ++d) {
            const float y = dout(b, i, h, d);
            dop[x * static_cast<std::size_t>(c.Dvp) + d] = y;
            dd += static_cast<double>(y) * static_cast<double>(out(b, i, h, d));
          }
          drow[x] = static_cast<float>(dd);
          const float L = lse[static_cast<std::size_t>((b * Hq + h) * Sq + i)];
          const std::int64_t pos_q = pq[static_cast<std::size_t>(b * Sq + i)];
          double qb = 0;
          if (c.use_table)
            for_each_leaf(enc, [&](const auto& leaf) {
              if constexpr (distance_bias_encoding<std::remove_cvref_t<decltype(leaf)>>)
                qb += static_cast<double>(leaf.query_bias(h, pos_q));
            });
          off[x] = L == -inf ? inf : static_cast<float>(static_cast<double>(L) - qb);
          if (!grads.sinks.empty() && L != -inf)  // d sink = -p_sink D_i, in row order
            grads.sinks[static_cast<std::size_t>(h)] -=
                std::exp(o.sinks[static_cast<std::size_t>(h)] - static_cast<double>(L)) * dd;
        }
      }
  c.qp = qp;
  c.dop = dop;
  c.off = off;
  c.drow = drow;
  c.k = kt_buf;
  c.v = v;
  c.dk = dk_buf;
  c.dv = dv_buf;
  c.dqp = dqp;
  const auto n_live = static_cast<std::size_t>(c.lanes * B * Hkv * c.nqt);
  c.live = grow(ws.backward_live, n_live);
  std::fill(c.live, c.live + n_live, std::uint8_t{0});
  c.n_params = 0;
  if constexpr (trainable_encoding<E>) c.n_params = grads.encoder.empty() ? 0 : enc.parameter_count();
  const std::ptrdiff_t items = B * Hkv * c.lanes;
  double* const pgrad = grow(ws.parameter_grads, static_cast<std::size_t>(items * c.n_params));
  std::fill(pgrad, pgrad + items * c.n_params, 0.0);

  run_parallel(f.executor, items, [&](std::ptrdiff_t n) {
    const std::ptrdiff_t lane = n % c.lanes, g = (n / c.lanes) % Hkv, b = n / (c.lanes * Hkv);
    scratch_slot slot(ws);
    backward_item(c, slot.get(), b, g, lane,
                  std::span<double>(pgrad + n * c.n_params, static_cast<std::size_t>(c.n_params)));
  });

  // ---- reductions in a fixed order, hook 2 backward, out ----
  for (std::ptrdiff_t n = 0; n < items; ++n)
    for (std::ptrdiff_t x = 0; x < c.n_params; ++x)
      grads.encoder[static_cast<std::size_t>(x)] += pgrad[n * c.n_params + x];
  // dq w.r.t. the transformed q, summed over lanes in lane order, into qt_buf's layout
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t g = 0; g < Hkv; ++g)
      for (std::ptrdiff_t t = 0; t < c.nqt; ++t) {
        const std::ptrdiff_t i0 = t * c.TQ, nq = std::min<std::ptrdiff_t>(c.TQ, Sq - i0);
        for (std::ptrdiff_t r = 0; r < G * nq; ++r) {
          const std::ptrdiff_t h = g * G + r / nq, i = i0 + r % nq;
          const std::size_t x = c.tile_index(b, g, t) + static_cast<std::size_t>(r);
          for (std::ptrdiff_t d = 0; d < D; ++d) qv(b, i, h, d) = 0.0f;
          for (std::ptrdiff_t l = 0; l < c.lanes; ++l) {
            if (!c.live[(l * B + b) * Hkv * c.nqt + g * c.nqt + t]) continue;
            const float* part = dqp + (static_cast<std::size_t>(l) * n_rows + x) * static_cast<std::size_t>(c.Dp);
            for (std::ptrdiff_t d = 0; d < D; ++d) qv(b, i, h, d) += part[d];
          }
        }
      }
  if constexpr (qk_transform_encoding<E>) {
    if (o.transform_queries) enc.transform_q_backward(qv, pq);
    if (o.transform_keys) enc.transform_k_backward(tensor_view<float>::bthd(dk_buf, B, Sk, Hkv, D), pk);
  }
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    for (std::ptrdiff_t t = 0; t < Sq; ++t)
      for (std::ptrdiff_t h = 0; h < Hq; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d) dq(b, t, h, d) = qv(b, t, h, d);
    for (std::ptrdiff_t t = 0; t < Sk; ++t)
      for (std::ptrdiff_t h = 0; h < Hkv; ++h) {
        for (std::ptrdiff_t d = 0; d < D; ++d) dk(b, t, h, d) = dk_buf[((b * Sk + t) * Hkv + h) * D + d];
        for (std::ptrdiff_t d = 0; d < Dv; ++d) dv(b, t, h, d) = dv_buf[((b * Sk + t) * Hkv + h) * Dv + d];
      }
  }
}

}  // namespace detail

/// The backward of posenc::attention(q, k, v, out, encoder, options, fast) run with
/// fast.log_sum_exp = lse: given out, lse ([B, Hq, Sq]) and dout = dL/dout, writes dq, dk, dv (the
/// gradients w.r.t. q, k, v as given, through hook 2 when options.transform_queries / _keys are on)
/// and accumulates the encoder's parameter gradients and the sinks' into `grads` (+=), as
/// sdpa_backward does. All float, any strides; the gradients must not overlap any input. Same
/// options as the forward (every mask, soft-cap, sinks, GQA/MQA, scale x the encoder's
/// multiplier); `fast` gives the executor, the workspace (reused across calls as the forward's)
/// and the tile sizes (key_tile, query_tile, max_bias_table); they need not be the forward's (any
/// valid values give gradients within the bound below; log_sum_exp is ignored here).
/// Accuracy (tests/attention/backward_fast_test.cpp): with A = max |logit| of the call, each
/// gradient tensor is within 1e-6 (1 + A) x max |sdpa_backward| of sdpa_backward on the same
/// inputs (fp32 products of length D, Dv, Sq or Sk: docs/training.md). Bit-identical for any thread
/// count. Throws what sdpa_backward throws, shape_error naming "lse" or an overlapping gradient,
/// config_error for invalid `fast_attention.*` fields, before writing anything.
///
///   posenc::attention(q, k, v, out, enc, opts, {.log_sum_exp = lse});
///   posenc::attention_backward(q, k, v, out, lse, dout, dq, dk, dv, enc, opts, {.encoder = grad});
template <maybe_const<float> Q, maybe_const<float> K, maybe_const<float> V, maybe_const<float> O, maybe_const<float> DO,
          positional_encoding E>
void attention_backward(tensor_view<Q> q, tensor_view<K> k, tensor_view<V> v, tensor_view<O> out,
                        std::span<const float> lse, tensor_view<DO> dout, tensor_view<float> dq, tensor_view<float> dk,
                        tensor_view<float> dv, const E& encoder, const attention_options& options = {},
                        const attention_gradients& grads = {}, const fast_attention_options& fast = {}) {
  static_assert(detail::backward_supported<E>,
                "attention_backward: the encoder's q/k transform has no backward "
                "(qk_transform_backward_encoding)");
  static_assert(detail::all_relative_kv_by_distance<E>(),
                "attention_backward needs relative_kv encoders in distance form (distance_relative_kv_encoding)");
  const tensor_view<const float> cq(q), ck(k), cv(v), co(out), cdo(dout);
  detail::check_backward_shapes(cq, ck, cv, cdo, dq, dk, dv, encoder, options, grads);
  detail::check_attention_shapes(cq, ck, cv, co, options);
  detail::require(options.weights.empty(), "attention.weights", "given",
                  "empty: posenc::attention_backward never forms the weight matrix");
  detail::require(fast.key_tile >= 64 && fast.key_tile % 64 == 0, "fast_attention.key_tile", fast.key_tile,
                  "a positive multiple of 64");
  detail::require(fast.query_tile >= 0, "fast_attention.query_tile", fast.query_tile, ">= 0 (0 = automatic)");
  detail::require(fast.max_bias_table >= 0, "fast_attention.max_bias_table", fast.max_bias_table, ">= 0");
  detail::require_encoder_fits(encoder, q.dim(), q.heads());
  detail::require_shape(lse.size() == static_cast<std::size_t>(q.batch() * q.heads() * q.tokens()), "lse", lse.size(),
                        "batch * q.heads * q.tokens (fast_attention_options::log_sum_exp of the forward)");
  for (const tensor_view<float>* g : {&dq, &dk, &dv}) {
    const char* name = g == &dq ? "dq" : g == &dk ? "dk" : "dv";
    for (const tensor_view<const float>* x : {&cq, &ck, &cv, &co, &cdo})
      detail::require_shape(!overlaps(*g, *x), name, "a view overlapping an input", "memory disjoint from the inputs");
  }
  detail::require_shape(!overlaps(dq, dk) && !overlaps(dq, dv) && !overlaps(dk, dv), "dq", "overlapping gradients",
                        "dq, dk, dv disjoint");
  {
    const attention_mask check(options, q.batch(), q.tokens(), k.tokens());  // validates every mask field
    static_cast<void>(check);
  }
  detail::fast_attention_backward(cq, ck, cv, co, lse, cdo, dq, dk, dv, encoder, options, grads, fast);
}

}  // namespace posenc::inline v0
