// posenc/attention/sdpa.hpp — the reference scaled dot-product attention that plugs in any encoder.
//
// O = softmax(cap(scale * (Q K^T + Q.A_K + K.A_Q + T)) + bias + mask) (V + A_V), per head, with GQA/MQA
// (Shaw et al. 2018 eq. 3-4; DeBERTa's position-to-content K.A_Q, He et al. 2021 eq. 4; CoPE's
// contextual term T, Golovneva et al. 2024, attention/contextual_rows.hpp; cap(l) = c tanh(l / c)
// under logit soft-capping, else l). A function
// template over the encoder: `if constexpr` asks which hooks it models, so there is no virtual call
// and an unused hook costs nothing. Written for clarity and checked in double: it accumulates in
// double for float inputs too, allocates scratch per call and materialises one score row at a
// time. It is the oracle, not the fast path.
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <posenc/attention/contextual_rows.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/attention/rules.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/assert.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0 {

/// The element types sdpa() computes on.
template <class T>
concept attention_element = std::same_as<T, float> || std::same_as<T, double>;

namespace detail {

/// A contiguous [B, T, H, D] copy of a view (the encoder's hook 2 rewrites the copy, never the input).
template <class T>
std::vector<T> contiguous_copy(tensor_view<const T> x) {
  std::vector<T> buf(static_cast<std::size_t>(x.size()));
  std::size_t n = 0;
  for (std::ptrdiff_t b = 0; b < x.batch(); ++b)
    for (std::ptrdiff_t t = 0; t < x.tokens(); ++t)
      for (std::ptrdiff_t h = 0; h < x.heads(); ++h)
        for (std::ptrdiff_t d = 0; d < x.dim(); ++d) buf[n++] = x(b, t, h, d);
  return buf;
}

template <class T>
tensor_view<T> contiguous_view(std::vector<T>& buf, const tensor_view<const T>& like) {
  return tensor_view<T>::bthd(buf.data(), like.batch(), like.tokens(), like.heads(), like.dim());
}

/// Turns scores (−inf = masked) into weights in place; returns false for a row that attends to
/// nothing (all weights 0). A NaN logit makes the row's weights NaN. Subtracts the row max, so no finite score
/// overflows; +inf scores share the mass equally; −inf never meets −inf in a subtraction, so no NaN is made here.
inline bool softmax_row(std::span<double> s, bool has_sink, double sink) noexcept {
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (double x : s)
    if (std::isnan(x)) {  // a NaN logit: every weight of the row's visible keys is NaN (masked ones stay 0)
      for (double& y : s) y = y == -inf ? 0 : std::numeric_limits<double>::quiet_NaN();
      return true;
    }
  double m = has_sink ? sink : -inf;
  for (double x : s) m = x > m ? x : m;
  if (m == -inf) {
    for (double& x : s) x = 0;
    return false;
  }
  if (m == inf) {
    double count = has_sink && sink == inf ? 1 : 0;
    for (double x : s) count += x == inf ? 1 : 0;
    for (double& x : s) x = x == inf ? 1 / count : 0;
    return true;
  }
  double den = has_sink ? std::exp(sink - m) : 0;
  for (double& x : s) {
    x = std::exp(x - m);  // exp(−inf) = 0 for masked keys
    den += x;
  }
  for (double& x : s) x /= den;  // den >= 1: the maximum contributes exp(0)
  return true;
}

/// x . the vector `a` (a.size() values, x strided), for hook 5's k_j . aQ.
template <class T>
double dot_strided(const T* x, std::ptrdiff_t stride, std::span<const double> a) noexcept {
  double s = 0;
  for (std::size_t d = 0; d < a.size(); ++d)
    s += static_cast<double>(x[static_cast<std::ptrdiff_t>(d) * stride]) * a[d];
  return s;
}

template <attention_element T, positional_encoding E>
void sdpa_reference(tensor_view<const T> q, tensor_view<const T> k, tensor_view<const T> v, tensor_view<T> out,
                    const E& enc, const attention_options& o) {
  // ---- shapes, once ----
  const std::ptrdiff_t B = q.batch(), Sq = q.tokens(), Hq = q.heads(), D = q.dim();
  const std::ptrdiff_t Sk = k.tokens(), Hkv = k.heads(), Dv = v.dim();
  check_attention_shapes(q, k, v, out, o);
  if (!o.weights.empty()) {
    const std::int64_t nw = checked_product<shape_error>(
        "attention.weights", {{"batch", B}, {"q.heads", Hq}, {"q.tokens", Sq}, {"k.tokens", Sk}});
    detail::require_shape(static_cast<std::int64_t>(o.weights.size()) == nw, "attention.weights", o.weights.size(),
                          "batch * q.heads * q.tokens * k.tokens = " + std::to_string(nw));
  }
  detail::require_shape(!overlaps(out, k), "out", "a view overlapping k", "memory disjoint from k and v");
  detail::require_shape(!overlaps(out, v), "out", "a view overlapping v", "memory disjoint from k and v");
  require_encoder_fits(enc, D, Hq);
  const attention_mask mask(o, B, Sq, Sk);
  const std::span<const std::int64_t> pq = mask.query_positions(), pk = mask.key_positions();
  const double scale = softmax_scale(enc, o, D);
  const bool softcap = o.logit_softcap.has_value();  // validated by the mask: finite, > 0
  const double cap = o.logit_softcap.value_or(1.0);
  if (B > 0 && Hq > 0) check_relative_sizes(enc, mask, D, Dv);

  // ---- hook 2: query/key transform, on copies ----
  std::vector<T> qbuf, kbuf;
  if constexpr (qk_transform_encoding<E>) {
    if (o.transform_queries) {
      qbuf = contiguous_copy(q);
      const auto view = contiguous_view(qbuf, q);
      enc.transform_q(view, pq);
      q = view;
    }
    if (o.transform_keys) {
      kbuf = contiguous_copy(k);
      const auto view = contiguous_view(kbuf, k);
      enc.transform_k(view, pk);
      k = view;
    }
  }
  // out may share memory with q in any layout (e.g. in place with Dv > D): read q from a copy then.
  if (qbuf.empty() && overlaps(out, q)) {
    qbuf = contiguous_copy(q);
    q = contiguous_view(qbuf, q);
  }

  // ---- scores, softmax, weighted sum: one (batch, query, head) row at a time ----
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::ptrdiff_t group = Hkv == 0 ? 1 : Hq / Hkv;
  const std::ptrdiff_t ks = k.stride(axis::dim), vs = v.stride(axis::dim);
  std::vector<double> qrow(static_cast<std::size_t>(D)), s(static_cast<std::size_t>(Sk)),
      acc(static_cast<std::size_t>(Dv));
  [[maybe_unused]] contextual_row ctx;  // hook 6: the positions of the current row
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    for (std::ptrdiff_t i = 0; i < Sq; ++i) {
      const std::int64_t pos_q = pq[static_cast<std::size_t>(b * Sq + i)];
      for (std::ptrdiff_t h = 0; h < Hq; ++h) {
        const std::ptrdiff_t g = h / group;  // GQA: query head h reads kv head h / (Hq / Hkv)
        for (std::ptrdiff_t d = 0; d < D; ++d) qrow[static_cast<std::size_t>(d)] = static_cast<double>(q(b, i, h, d));
        if constexpr (contextual_position_encoding<E>)
          contextual_forward(
              enc, std::span<const double>(qrow), enc.gate_source() == contextual_gate_source::keys ? k : v, b, g,
              [&](std::ptrdiff_t j) { return mask.allowed(b, i, j); }, ctx);
        for (std::ptrdiff_t j = 0; j < Sk; ++j) {
          double& x = s[static_cast<std::size_t>(j)];
          if (!mask.allowed(b, i, j)) {
            x = -inf;
            continue;
          }
          const std::int64_t pos_k = pk[static_cast<std::size_t>(b * Sk + j)];
          const T* kr = k.row(b, j, g);
          double dot = 0;
          for (std::ptrdiff_t d = 0; d < D; ++d)
            dot += qrow[static_cast<std::size_t>(d)] * static_cast<double>(kr[d * ks]);
          if constexpr (relative_kv_encoding<E>) {  // Shaw: q_i . a^K(i, j), scaled with the content term
            const std::span<const double> ak = enc.relative_key(h, pos_q, pos_k);
            POSENC_ASSERT(static_cast<std::ptrdiff_t>(ak.size()) == D);
            for (std::ptrdiff_t d = 0; d < D; ++d)
              dot += qrow[static_cast<std::size_t>(d)] * ak[static_cast<std::size_t>(d)];
          }
          if constexpr (relative_query_encoding<E>)  // DeBERTa p2c: k_j . a^Q(i, j), scaled with the content term
            dot += dot_strided(kr, ks, enc.relative_query(h, pos_q, pos_k));
          double unscaled = 0;  // hook 6's term when the encoder adds it after scaling
          if constexpr (contextual_position_encoding<E>)
            (enc.position_term_scaled() ? dot : unscaled) += static_cast<double>(
                enc.position_logit(h, std::span<const double>(qrow), ctx.position[static_cast<std::size_t>(j)]));
          x = scale * dot;
          if (softcap) x = cap * std::tanh(x / cap);  // before the bias and the mask (options.hpp)
          if constexpr (score_bias_encoding<E>) x += static_cast<double>(enc.bias(h, pos_q, pos_k));  // after scaling
          x += unscaled;
        }
        const bool has_sink = !o.sinks.empty();
        softmax_row(s, has_sink, has_sink ? o.sinks[static_cast<std::size_t>(h)] : 0.0);

        for (double& a : acc) a = 0;
        for (std::ptrdiff_t j = 0; j < Sk; ++j) {
          const double w = s[static_cast<std::size_t>(j)];
          if (w == 0) continue;  // masked (or underflowed): contributes nothing, and 0 * inf is avoided
          const T* vr = v.row(b, j, g);
          for (std::ptrdiff_t d = 0; d < Dv; ++d)
            acc[static_cast<std::size_t>(d)] += w * static_cast<double>(vr[d * vs]);
          if constexpr (relative_kv_encoding<E>) {  // Shaw: sum_j p_ij a^V(i, j)
            const std::span<const double> av = enc.relative_value(h, pos_q, pk[static_cast<std::size_t>(b * Sk + j)]);
            if (!av.empty()) {
              POSENC_ASSERT(static_cast<std::ptrdiff_t>(av.size()) == Dv);
              for (std::ptrdiff_t d = 0; d < Dv; ++d)
                acc[static_cast<std::size_t>(d)] += w * av[static_cast<std::size_t>(d)];
            }
          }
        }
        for (std::ptrdiff_t d = 0; d < Dv; ++d) out(b, i, h, d) = static_cast<T>(acc[static_cast<std::size_t>(d)]);
        if (!o.weights.empty()) {
          double* w = o.weights.data() + ((b * Hq + h) * Sq + i) * Sk;
          for (std::ptrdiff_t j = 0; j < Sk; ++j) w[j] = s[static_cast<std::size_t>(j)];
        }
      }
    }
  }
}

}  // namespace detail

/// Scaled dot-product attention with the hooks `encoder` models (hooks 2-4; hook 1 acts on token
/// embeddings, see attention_layer).
///
/// - `q` [B, Sq, Hq, D], `k` [B, Sk, Hkv, D], `v` [B, Sk, Hkv, Dv], `out` [B, Sq, Hq, Dv]; any strides;
///   float or double (same type for all four; the inputs may be views of const). Hq % Hkv == 0 (GQA:
///   query head h reads kv head h / (Hq / Hkv); MQA: Hkv = 1).
/// - Hook 2 (RoPE, xPos) runs on copies of q and k at their positions; q, k, v are never modified.
///   `out` may share memory with `q` in any layout (q is then read from a copy, so in place works
///   for any Dv); `out` overlapping k or v is a shape_error naming "out".
/// - `options.weights` receives the softmax WEIGHTS [B, Hq, Sq, Sk] (after masking and sinks), not
///   the logits; masked keys get exactly 0.
/// - logit(h, i, j) = cap(scale * (q_i . k_j + q_i . a^K(i, j) + k_j . a^Q(i, j) + t_ij)) + bias(h, pos_i,
///   pos_j), cap(l) = c tanh(l / c) with `options.logit_softcap` = c, else l (t_ij: hook 6's
///   contextual term, added after the cap instead when the encoder does not scale it); masked keys get
///   weight exactly 0; a row with no allowed key gives zeros (never NaN); out_i = sum_j p_ij (v_j +
///   a^V(i, j)). Accumulates in double.
/// - Throws shape_error / config_error (naming the view or option) before computing anything.
///
///   posenc::sdpa(q, k, v, out, posenc::combine(rope, alibi), {.causal = true});
template <attention_element T, maybe_const<T> Q, maybe_const<T> K, maybe_const<T> V, positional_encoding E>
void sdpa(tensor_view<Q> q, tensor_view<K> k, tensor_view<V> v, tensor_view<T> out, const E& encoder,
          const attention_options& options = {}) {
  detail::sdpa_reference<T>(tensor_view<const T>(q), tensor_view<const T>(k), tensor_view<const T>(v), out, encoder,
                            options);
}

}  // namespace posenc::inline v0
