// posenc/attention/sdpa_backward.hpp — the reference backward of sdpa: dQ, dK, dV and the gradients
// of the encoder's parameters and of the attention sinks, in double (docs/training.md).
//
// The forward (attention/sdpa.hpp), per query head h, query i, visible key j:
//   u_ij = scale (q_i . k_j + q_i . aK_ij),  l_ij = cap(u_ij),  s_ij = l_ij + bias_ij,
//   p_ij = exp(s_ij) / (sum_j exp(s_ij) + exp(sink_h)),  o_i = sum_j p_ij (v_j + aV_ij).
// (plus, inside u_ij, DeBERTa's k_j . aQ_ij and CoPE's contextual term t_ij; attention/sdpa.hpp)
// Its backward (Dao 2023, FlashAttention-2 §2.2, with the hooks of Shaw et al. 2018 eq. 3-4):
//   dp_ij = do_i . (v_j + aV_ij),  D_i = do_i . o_i,  ds_ij = p_ij (dp_ij - D_i),
//   du_ij = ds_ij cap'(u_ij) (cap' = 1 - (l / c)^2 under soft-capping, else 1),
//   dq_i = scale sum_j du_ij (k_j + aK_ij),  dk_j = scale sum_i du_ij q_i,  dv_j = sum_i p_ij do_i,
//   d bias_ij = ds_ij,  d aK_ij = scale du_ij q_i,  d aV_ij = p_ij do_i,
//   d sink_h = -sum_i p_sink,i D_i   (the sink takes mass and gives no value: its dp is 0),
//   dk_j += scale du_ij aQ_ij,  d aQ_ij = scale du_ij k_j   (hook 5),
//   dt_ij = scale du_ij (or ds_ij when the term is not scaled), then back through the contextual
//   positions and their gates into dq and dk or dv (hook 6, attention/contextual_rows.hpp),
// then dq, dk through the transpose of hook 2 (rope, xPos, mRoPE, temperature) at the same positions.
// GQA: dk, dv of kv head g sum the query heads of its group. Written for clarity, one query row at a
// time, recomputing the forward; it is the oracle of posenc::attention_backward, not a fast path.
// Not here: hook 1 (additive encoders act on embeddings, before the projections: see
// learned_absolute::accumulate_gradient), gradients w.r.t. positions (they are integers).
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

#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/attention/rules.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0 {

namespace detail {

template <attention_element T, positional_encoding E>
void sdpa_backward_reference(tensor_view<const T> q_in, tensor_view<const T> k_in, tensor_view<const T> v_in,
                             tensor_view<const T> dout_in, tensor_view<T> dq_out, tensor_view<T> dk_out,
                             tensor_view<T> dv_out, const E& enc, const attention_options& o,
                             const attention_gradients& grads) {
  static_assert(backward_supported<E>,
                "sdpa_backward: the encoder's q/k transform or contextual positions have no backward "
                "(qk_transform_backward_encoding, contextual_position_backward_encoding)");
  const std::ptrdiff_t B = q_in.batch(), Sq = q_in.tokens(), Hq = q_in.heads(), D = q_in.dim();
  const std::ptrdiff_t Sk = k_in.tokens(), Hkv = k_in.heads(), Dv = v_in.dim();
  check_backward_shapes(q_in, k_in, v_in, dout_in, dq_out, dk_out, dv_out, enc, o, grads);
  require(o.weights.empty(), "attention.weights", "given", "empty in a backward (ask sdpa for the weights)");
  require_encoder_fits(enc, D, Hq);
  const attention_mask mask(o, B, Sq, Sk);
  const std::span<const std::int64_t> pq = mask.query_positions(), pk = mask.key_positions();
  const double scale = softmax_scale(enc, o, D);
  const bool softcap = o.logit_softcap.has_value();
  const double cap = o.logit_softcap.value_or(1.0);
  if (B > 0 && Hq > 0) check_relative_sizes(enc, mask, D, Dv);

  // Contiguous double copies of every input (the outputs may then alias anything), hook 2 applied.
  auto copy = [](tensor_view<const T> x) {
    std::vector<double> r(static_cast<std::size_t>(x.size()));
    std::size_t n = 0;
    for (std::ptrdiff_t b = 0; b < x.batch(); ++b)
      for (std::ptrdiff_t t = 0; t < x.tokens(); ++t)
        for (std::ptrdiff_t h = 0; h < x.heads(); ++h)
          for (std::ptrdiff_t d = 0; d < x.dim(); ++d) r[n++] = static_cast<double>(x(b, t, h, d));
    return r;
  };
  std::vector<double> q = copy(q_in), k = copy(k_in), v = copy(v_in), dout = copy(dout_in);
  auto view = [](std::vector<double>& x, std::ptrdiff_t b, std::ptrdiff_t s, std::ptrdiff_t h, std::ptrdiff_t d) {
    return tensor_view<double>::bthd(x.data(), b, s, h, d);
  };
  if constexpr (qk_transform_encoding<E>) {
    // In double, as the gradient is; sdpa transforms T copies (for double inputs the same values).
    if (o.transform_queries) enc.transform_q(view(q, B, Sq, Hq, D), pq);
    if (o.transform_keys) enc.transform_k(view(k, B, Sk, Hkv, D), pk);
  }
  std::vector<double> dq(q.size(), 0.0), dk(k.size(), 0.0), dv(v.size(), 0.0);
  auto qrow = [&](std::vector<double>& x, std::ptrdiff_t b, std::ptrdiff_t i, std::ptrdiff_t h) {
    return x.data() + ((b * Sq + i) * Hq + h) * D;
  };
  auto krow = [&](std::vector<double>& x, std::ptrdiff_t b, std::ptrdiff_t j, std::ptrdiff_t g) {
    return x.data() + ((b * Sk + j) * Hkv + g) * D;
  };
  auto vrow = [&](std::vector<double>& x, std::ptrdiff_t b, std::ptrdiff_t j, std::ptrdiff_t g) {
    return x.data() + ((b * Sk + j) * Hkv + g) * Dv;
  };

  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::ptrdiff_t group = Hkv == 0 ? 1 : Hq / Hkv;
  const bool has_sink = !o.sinks.empty();
  std::vector<double> s(static_cast<std::size_t>(Sk)), l(static_cast<std::size_t>(Sk)),
      dp(static_cast<std::size_t>(Sk)), orow(static_cast<std::size_t>(Dv));
  [[maybe_unused]] contextual_row ctx;  // hook 6: the positions of the current row, and dL/dt
  [[maybe_unused]] std::vector<double> dt(contextual_position_encoding<E> ? static_cast<std::size_t>(Sk) : 0);
  [[maybe_unused]] const auto kview = tensor_view<const double>::bthd(k.data(), B, Sk, Hkv, D);
  [[maybe_unused]] const auto vview = tensor_view<const double>::bthd(v.data(), B, Sk, Hkv, Dv);
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t i = 0; i < Sq; ++i) {
      const std::int64_t pos_q = pq[static_cast<std::size_t>(b * Sq + i)];
      for (std::ptrdiff_t h = 0; h < Hq; ++h) {
        const std::ptrdiff_t g = h / group;
        const double* qi = qrow(q, b, i, h);
        const double* doi = dout.data() + ((b * Sq + i) * Hq + h) * Dv;
        const std::span<const double> qspan(qi, static_cast<std::size_t>(D));
        if constexpr (contextual_position_encoding<E>)
          contextual_forward(
              enc, qspan, enc.gate_source() == contextual_gate_source::keys ? kview : vview, b, g,
              [&](std::ptrdiff_t j) { return mask.allowed(b, i, j); }, ctx);
        // ---- the forward's logits of this row (sdpa's order: content, Shaw key, DeBERTa p2c, CoPE, cap, bias) ----
        for (std::ptrdiff_t j = 0; j < Sk; ++j) {
          const auto uj = static_cast<std::size_t>(j);
          if (!mask.allowed(b, i, j)) {
            s[uj] = -inf;
            continue;
          }
          const std::int64_t pos_k = pk[static_cast<std::size_t>(b * Sk + j)];
          const double* kj = krow(k, b, j, g);
          double dot = 0;
          for (std::ptrdiff_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
          if constexpr (relative_kv_encoding<E>) {
            const auto ak = enc.relative_key(h, pos_q, pos_k);
            for (std::ptrdiff_t d = 0; d < D; ++d) dot += qi[d] * ak[static_cast<std::size_t>(d)];
          }
          if constexpr (relative_query_encoding<E>) dot += dot_strided(kj, 1, enc.relative_query(h, pos_q, pos_k));
          double unscaled = 0;
          if constexpr (contextual_position_encoding<E>)
            (enc.position_term_scaled() ? dot : unscaled) +=
                static_cast<double>(enc.position_logit(h, qspan, ctx.position[uj]));
          double x = scale * dot;
          if (softcap) x = cap * std::tanh(x / cap);
          l[uj] = x;
          if constexpr (score_bias_encoding<E>) x += static_cast<double>(enc.bias(h, pos_q, pos_k));
          s[uj] = x + unscaled;
        }
        // ---- softmax with the sink's share ----
        const double sink = has_sink ? o.sinks[static_cast<std::size_t>(h)] : -inf;
        double m = sink;
        for (double x : s) m = x > m ? x : m;
        if (m == -inf) continue;  // attends to nothing: zero output, zero gradient
        double den = 0, p_sink = 0;
        if (m == inf || std::isnan(m)) {  // non-finite logits: the weights of sdpa's softmax_row
          softmax_row(s, has_sink, sink);
        } else {
          den = has_sink ? std::exp(sink - m) : 0;
          for (double& x : s) {
            x = std::exp(x - m);  // masked: exp(-inf) = 0
            den += x;
          }
          for (double& x : s) x /= den;
          p_sink = has_sink ? std::exp(sink - m) / den : 0;
        }
        // ---- o_i, D_i, dp, ds ----
        for (double& x : orow) x = 0;
        for (std::ptrdiff_t j = 0; j < Sk; ++j) {
          const auto uj = static_cast<std::size_t>(j);
          const double w = s[uj];
          dp[uj] = 0;
          if (w == 0) continue;
          const double* vj = vrow(v, b, j, g);
          const std::int64_t pos_k = pk[static_cast<std::size_t>(b * Sk + j)];
          double acc = 0;
          for (std::ptrdiff_t d = 0; d < Dv; ++d) {
            orow[static_cast<std::size_t>(d)] += w * vj[d];
            acc += doi[d] * vj[d];
          }
          if constexpr (relative_kv_encoding<E>) {
            const auto av = enc.relative_value(h, pos_q, pos_k);
            for (std::size_t d = 0; d < av.size(); ++d) {
              orow[d] += w * av[d];
              acc += doi[d] * av[d];
            }
          }
          dp[uj] = acc;
        }
        double Di = 0;
        for (std::ptrdiff_t d = 0; d < Dv; ++d) Di += doi[d] * orow[static_cast<std::size_t>(d)];
        if (!grads.sinks.empty()) grads.sinks[static_cast<std::size_t>(h)] -= p_sink * Di;
        // ---- gradients of every visible key of the row ----
        double* dqi = qrow(dq, b, i, h);
        if constexpr (contextual_position_encoding<E>) std::fill(dt.begin(), dt.end(), 0.0);
        for (std::ptrdiff_t j = 0; j < Sk; ++j) {
          const auto uj = static_cast<std::size_t>(j);
          const double w = s[uj];
          if (w == 0) continue;
          const std::int64_t pos_k = pk[static_cast<std::size_t>(b * Sk + j)];
          const double ds = w * (dp[uj] - Di);
          if constexpr (trainable_score_bias_encoding<E>)
            if (!grads.encoder.empty()) enc.accumulate_bias_gradient(h, pos_q, pos_k, ds, grads.encoder);
          const double du = scale * (softcap ? ds * (1 - (l[uj] / cap) * (l[uj] / cap)) : ds);
          const double* kj = krow(k, b, j, g);
          double* dkj = krow(dk, b, j, g);
          for (std::ptrdiff_t d = 0; d < D; ++d) {
            dqi[d] += du * kj[d];
            dkj[d] += du * qi[d];
          }
          double* dvj = vrow(dv, b, j, g);
          for (std::ptrdiff_t d = 0; d < Dv; ++d) dvj[d] += w * doi[d];
          if constexpr (relative_kv_encoding<E>) {
            const auto ak = enc.relative_key(h, pos_q, pos_k);
            for (std::ptrdiff_t d = 0; d < D; ++d) dqi[d] += du * ak[static_cast<std::size_t>(d)];
            if constexpr (trainable_relative_kv_encoding<E>)
              if (!grads.encoder.empty()) {
                enc.accumulate_relative_key_gradient(h, pos_q, pos_k, du, std::span<const double>(qi, D),
                                                     grads.encoder);
                enc.accumulate_relative_value_gradient(h, pos_q, pos_k, w, std::span<const double>(doi, Dv),
                                                       grads.encoder);
              }
          }
          if constexpr (relative_query_encoding<E>) {  // DeBERTa p2c: dk_j += dU aQ, d aQ += dU k_j
            const auto aq = enc.relative_query(h, pos_q, pos_k);
            for (std::ptrdiff_t d = 0; d < D; ++d) dkj[d] += du * aq[static_cast<std::size_t>(d)];
            if constexpr (trainable_relative_query_encoding<E>)
              if (!grads.encoder.empty())
                enc.accumulate_relative_query_gradient(h, pos_q, pos_k, du, std::span<const double>(kj, D),
                                                       grads.encoder);
          }
          if constexpr (contextual_position_encoding<E>) dt[uj] = enc.position_term_scaled() ? du : ds;
        }
        if constexpr (contextual_position_encoding<E>) {
          const bool keys = enc.gate_source() == contextual_gate_source::keys;
          contextual_backward(enc, h, qspan, ctx, dt, keys ? kview : vview, b, g,
                              keys ? view(dk, B, Sk, Hkv, D) : view(dv, B, Sk, Hkv, Dv),
                              std::span<double>(dqi, static_cast<std::size_t>(D)), grads.encoder);
        }
      }
    }

  // ---- hook 2 backward, then out ----
  if constexpr (qk_transform_encoding<E>) {
    if (o.transform_queries) enc.transform_q_backward(view(dq, B, Sq, Hq, D), pq);
    if (o.transform_keys) enc.transform_k_backward(view(dk, B, Sk, Hkv, D), pk);
  }
  auto write = [](const std::vector<double>& x, tensor_view<T> y) {
    std::size_t n = 0;
    for (std::ptrdiff_t b = 0; b < y.batch(); ++b)
      for (std::ptrdiff_t t = 0; t < y.tokens(); ++t)
        for (std::ptrdiff_t h = 0; h < y.heads(); ++h)
          for (std::ptrdiff_t d = 0; d < y.dim(); ++d) y(b, t, h, d) = static_cast<T>(x[n++]);
  };
  write(dq, dq_out);
  write(dk, dk_out);
  write(dv, dv_out);
}

}  // namespace detail

/// The backward of sdpa(q, k, v, out, encoder, options): given dout = dL/dout [B, Sq, Hq, Dv],
/// writes dq = dL/dq [B, Sq, Hq, D], dk = dL/dk [B, Sk, Hkv, D], dv = dL/dv [B, Sk, Hkv, Dv]
/// (gradients w.r.t. the inputs AS GIVEN: through hook 2 when options.transform_queries / _keys
/// are on, w.r.t. the given rows when they are off) and accumulates the encoder's parameter
/// gradients and the sinks' into `grads`. Same arguments and semantics as sdpa for every option;
/// computes in double for float inputs too, recomputing the forward (nothing saved). Masked keys
/// and rows that attend to nothing get zero gradient. Defined for finite logits; a row with an
/// infinite or NaN logit gets non-finite or zero gradients. Throws what sdpa throws, shape_error
/// naming "dq (vs q)" / "dk (vs k)" / "dv (vs v)" for mismatched gradients, "gradients.encoder" /
/// "gradients.sinks" for wrong spans, config_error for `attention.weights` (not an output here),
/// before writing anything. The outputs may alias the inputs (everything is read first).
///
///   posenc::sdpa_backward(q, k, v, dout, dq, dk, dv, posenc::combine(rope, t5), {.causal = true},
///                         {.encoder = t5_grad});  // t5_grad: parameter_count() doubles, zeroed
template <attention_element T, maybe_const<T> Q, maybe_const<T> K, maybe_const<T> V, maybe_const<T> DO,
          positional_encoding E>
void sdpa_backward(tensor_view<Q> q, tensor_view<K> k, tensor_view<V> v, tensor_view<DO> dout, tensor_view<T> dq,
                   tensor_view<T> dk, tensor_view<T> dv, const E& encoder, const attention_options& options = {},
                   const attention_gradients& grads = {}) {
  detail::sdpa_backward_reference<T>(tensor_view<const T>(q), tensor_view<const T>(k), tensor_view<const T>(v),
                                     tensor_view<const T>(dout), dq, dk, dv, encoder, options, grads);
}

}  // namespace posenc::inline v0
