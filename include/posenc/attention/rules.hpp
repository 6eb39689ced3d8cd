// posenc/attention/rules.hpp — the rules every attention call follows before it computes anything:
// the shapes of q, k, v, out (and of the gradients), the encoder's fit to them, the sizes of Shaw's
// and DeBERTa's vectors, and the softmax scale. sdpa and sdpa_backward (the oracles),
// posenc::attention and posenc::attention_backward (the fused paths) all check through these, so one
// call is refused the same way, with the same parameter names in the errors, whichever function
// gets it.
// Not here: the options' own checks (attention/mask.hpp), what each path adds (overlaps, tiles).
#pragma once

#include <cmath>
#include <cstddef>
#include <string>

#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0::detail {

/// Checks that an encoder's sizes fit the heads it is given (once per call, not per element).
template <class E>
void require_encoder_fits(const E& e, std::ptrdiff_t head_dim, std::ptrdiff_t query_heads) {
  if constexpr (qk_transform_encoding<E> || relative_kv_encoding<E> || relative_query_encoding<E> ||
                contextual_position_encoding<E>)
    detail::require_shape(static_cast<std::ptrdiff_t>(e.head_dim()) == head_dim, "encoder.head_dim",
                          static_cast<std::ptrdiff_t>(e.head_dim()), "q.dim = " + std::to_string(head_dim));
  if constexpr (requires { e.num_heads(); })  // score biases, and per-head tables of other hooks (DeBERTa)
    detail::require_shape(static_cast<std::ptrdiff_t>(e.num_heads()) == query_heads, "encoder.num_heads",
                          static_cast<std::ptrdiff_t>(e.num_heads()), "q.heads = " + std::to_string(query_heads));
}

/// The softmax scale of a call: the option or 1/sqrt(D), times the encoder's multiplier.
template <class E>
double softmax_scale(const E& e, const attention_options& o, std::ptrdiff_t head_dim) {
  double s = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
  detail::require(std::isfinite(s), "attention.scale", s, "a finite number");
  if constexpr (has_softmax_scale_multiplier<E>) s *= static_cast<double>(e.softmax_scale_multiplier());
  return s;
}

/// The shape checks sdpa and posenc::attention share, with the same parameter names in the errors:
/// the extents of q, k, v and out against each other, q.dim >= 1, the GQA/MQA head ratio and the
/// sinks' count. Not here: the weights output, overlaps and the encoder's fit (each caller's own).
template <class TQ, class TK, class TV, class TO>
void check_attention_shapes(const tensor_view<TQ>& q, const tensor_view<TK>& k, const tensor_view<TV>& v,
                            const tensor_view<TO>& out, const attention_options& o) {
  const std::ptrdiff_t Hq = q.heads(), D = q.dim(), Hkv = k.heads();
  require_same_extent(q, k, axis::batch, "k.batch (vs q.batch)");
  require_same_extent(q, v, axis::batch, "v.batch (vs q.batch)");
  require_same_extent(k, v, axis::token, "v.tokens (vs k.tokens)");
  require_same_extent(k, v, axis::head, "v.heads (vs k.heads)");
  require_same_extent(q, k, axis::dim, "k.dim (vs q.dim)");
  require_same_extent(q, out, axis::batch, "out.batch (vs q.batch)");
  require_same_extent(q, out, axis::token, "out.tokens (vs q.tokens)");
  require_same_extent(q, out, axis::head, "out.heads (vs q.heads)");
  require_same_extent(v, out, axis::dim, "out.dim (vs v.dim)");
  detail::require_shape(D >= 1, "q.dim", D, ">= 1");
  detail::require(Hkv >= 1 || Hq == 0, "k.heads", Hkv, ">= 1");
  // The messages that name a value are built on failure only: these checks run on every call.
  if (Hkv != 0 && Hq % Hkv != 0)
    throw config_error("q.heads", detail::to_text(Hq),
                       "a multiple of the key/value heads " + std::to_string(Hkv) + " (GQA/MQA)");
  if (!o.sinks.empty() && static_cast<std::ptrdiff_t>(o.sinks.size()) != Hq)
    throw shape_error("attention.sinks", detail::to_text(o.sinks.size()), "q.heads = " + std::to_string(Hq));
  for (double x : o.sinks) detail::require(!std::isnan(x), "attention.sinks", x, "a number or +-inf, not NaN");
}

/// The checks shared by both backwards: dq/dk/dv/dout against q/k/v/out, the gradient spans.
template <class TQ, class TK, class TV, class TO, class GQ, class GK, class GV, class E>
void check_backward_shapes(const tensor_view<TQ>& q, const tensor_view<TK>& k, const tensor_view<TV>& v,
                           const tensor_view<TO>& dout, const tensor_view<GQ>& dq, const tensor_view<GK>& dk,
                           const tensor_view<GV>& dv, const E& enc, const attention_options& o,
                           const attention_gradients& g) {
  check_attention_shapes(q, k, v, dout, o);  // dout has out's shape
  for (const axis a : {axis::batch, axis::token, axis::head, axis::dim}) {
    require_same_extent(q, dq, a, "dq (vs q)");
    require_same_extent(k, dk, a, "dk (vs k)");
    require_same_extent(v, dv, a, "dv (vs v)");
  }
  if constexpr (trainable_encoding<E>) {
    if (!g.encoder.empty())
      require_shape(static_cast<std::ptrdiff_t>(g.encoder.size()) == static_cast<std::ptrdiff_t>(enc.parameter_count()),
                    "gradients.encoder", g.encoder.size(),
                    "encoder.parameter_count() = " + std::to_string(enc.parameter_count()) + " (or empty)");
  } else {
    static_cast<void>(enc);
    require_shape(g.encoder.empty(), "gradients.encoder", g.encoder.size(), "empty: the encoder has no parameters");
  }
  if (!g.sinks.empty()) {
    require(!o.sinks.empty(), "gradients.sinks", "given", "empty unless attention.sinks is given");
    require_shape(g.sinks.size() == o.sinks.size(), "gradients.sinks", g.sinks.size(),
                  "q.heads = " + std::to_string(o.sinks.size()));
  }
}

/// Every q/k transform and contextual position of the encoder has its backward (else the gradient
/// cannot flow through it).
template <class E>
inline constexpr bool backward_supported = (!qk_transform_encoding<E> || qk_transform_backward_encoding<E>)&&(
    !contextual_position_encoding<E> || contextual_position_backward_encoding<E>);

/// Shaw's and DeBERTa's vectors have fixed sizes: checked once, on the first pair of the call, before
/// anything is written (relative_key has D entries, relative_value none or Dv, relative_query D);
/// contextual gates that read the values need Dv == D.
template <class E>
void check_relative_sizes(const E& enc, const attention_mask& mask, std::ptrdiff_t D, std::ptrdiff_t Dv) {
  if constexpr (contextual_position_encoding<E>)
    if (enc.gate_source() == contextual_gate_source::values)
      detail::require_shape(Dv == D, "v.dim", Dv,
                            "q.dim = " + std::to_string(D) + " (the contextual gates read the values)");
  const auto pq = mask.query_positions(), pk = mask.key_positions();
  if (pq.empty() || pk.empty()) return;
  if constexpr (relative_query_encoding<E>)
    detail::require_shape(static_cast<std::ptrdiff_t>(enc.relative_query(0, pq[0], pk[0]).size()) == D,
                          "encoder.relative_query.size", enc.relative_query(0, pq[0], pk[0]).size(),
                          "q.dim = " + std::to_string(D));
  if constexpr (relative_kv_encoding<E>) {
    const auto ak = enc.relative_key(0, pq[0], pk[0]);
    const auto av = enc.relative_value(0, pq[0], pk[0]);
    detail::require_shape(static_cast<std::ptrdiff_t>(ak.size()) == D, "encoder.relative_key.size", ak.size(),
                          "q.dim = " + std::to_string(D));
    detail::require_shape(av.empty() || static_cast<std::ptrdiff_t>(av.size()) == Dv, "encoder.relative_value.size",
                          av.size(), "0 (no value term) or v.dim = " + std::to_string(Dv));
  }
}

}  // namespace posenc::inline v0::detail
