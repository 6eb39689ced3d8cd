// posenc/attention/attention_backward.hpp — posenc::attention_backward, the fused FlashAttention-2
// backward on the CPU beside the sdpa_backward oracle (docs/training.md).
//
// The backward of posenc::attention on the forward's own description of the call: the same plan
// rules, tables and score hooks, with the backward's inputs, gradients, work items and reductions
// added (attention/fast/backward.hpp). This header checks the call and hands it over. Not here:
// bfloat16 / float16 / q8_0 K, V (float only), dropout, the weights output.
#pragma once

#include <cstddef>
#include <span>

#include <posenc/attention/fast/backward.hpp>
#include <posenc/attention/fast/options.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/attention/rules.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0 {

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
  static_assert(fused_attention_supports<E>,
                "posenc::attention_backward does not compute every hook of this encoder "
                "(fused_attention_supports: hook 6 only in table form and not beside hook 4 or 5); use "
                "posenc::sdpa_backward");
  static_assert(detail::backward_supported<E>,
                "attention_backward: the encoder's q/k transform has no backward "
                "(qk_transform_backward_encoding)");
  static_assert(detail::all_relative_kv_by_distance<E>(),
                "attention_backward needs relative_kv encoders in distance form (distance_relative_kv_encoding)");
  static_assert(detail::all_relative_query_by_distance<E>(),
                "attention_backward needs relative_query encoders in distance form "
                "(distance_relative_query_encoding)");
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
