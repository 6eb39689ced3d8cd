// posenc/concepts.hpp — the one concept every encoder models, and one refinement per hook point.
//
// An encoding acts on attention at one or more of six points (docs/design.md §3, docs/spec.md §0):
//
//   additive        x[p] += PE(p) on the token embedding, before the projections  (learned, sinusoidal)
//   qk_transform    q, k rewritten from their own positions, before scores/cache  (RoPE, xPos, vision RoPE)
//   score_bias      logit(h, i, j) += b(h, pos_i, pos_j), after scaling            (ALiBi, T5, FIRE, KERPLE)
//   relative_kv     logit += q_i . aK(i, j) (scaled with q.k); out_i += sum_j p_ij aV(i, j)   (Shaw, DeBERTa c2p)
//   relative_query  logit += k_j . aQ(i, j) (scaled with q.k)                     (DeBERTa p2c)
//   contextual      logit += q_i . e(p_ij), p_ij a sum of content gates            (CoPE)
//
// An encoder is an immutable, copyable value that models exactly the hooks it needs; the attention
// asks with `if constexpr` which ones, so an unused hook costs nothing. This header defines the
// concepts only; encoders live under posenc/encoders/ and posenc/rope/.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <posenc/core/distance.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0 {

/// What every encoder is: a copyable value with a human-readable name.
template <class E>
concept positional_encoding = std::copyable<E> && requires(const E& e) {
  { e.name() } -> std::convertible_to<std::string_view>;
};

/// Hook 1. `model_dim()` is the embedding width; `add(p, row)` adds the encoding of position `p`
/// to one embedding row of that width (float and double rows). Throws config_error for a position
/// the encoding cannot represent (e.g. beyond a learned table, unless its policy says otherwise).
template <class E>
concept additive_encoding = positional_encoding<E> &&
    requires(const E& e, std::int64_t p, std::span<float> rf, std::span<double> rd) {
  { e.model_dim() } -> std::convertible_to<std::ptrdiff_t>;
  e.add(p, rf);
  e.add(p, rd);
};

/// Hook 2. `transform_q(q, positions)` / `transform_k(k, positions)` rewrite a [batch, token, head,
/// head_dim()] view in place; `positions` holds one entry per (batch, token), row-major
/// (size batch * tokens). Queries and keys are separate calls because some encodings treat them
/// differently (xPos scales them inversely); keys are transformed before they enter a KV cache.
template <class E>
concept qk_transform_encoding = positional_encoding<E> &&
    requires(const E& e, tensor_view<float> xf, tensor_view<double> xd, std::span<const std::int64_t> pos) {
  { e.head_dim() } -> std::convertible_to<std::ptrdiff_t>;
  e.transform_q(xf, pos);
  e.transform_k(xf, pos);
  e.transform_q(xd, pos);
  e.transform_k(xd, pos);
};

/// Hook 3. `bias(h, pos_q, pos_k)` is added to the already scaled logit of query head `h`
/// (0 <= h < num_heads()) for a query at position pos_q and a key at pos_k.
template <class E>
concept score_bias_encoding = positional_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, std::int64_t i, std::int64_t j) {
  { e.num_heads() } -> std::convertible_to<std::ptrdiff_t>;
  { e.bias(h, i, j) } -> std::convertible_to<double>;
};

/// Refinement of hook 3 that tells a fused attention which path the bias takes: an encoder that
/// models it has bias(h, pos_q, pos_k) == query_bias(h, pos_q) + bias_at_distance(h, pos_k - pos_q)
/// (with the distance saturated to the int64 range), so the attention builds one per-head table
/// over the distances a call can see instead of calling bias() per score. query_bias is a per-row
/// constant (0 except for BLOOM-style ALiBi); it cancels in the softmax except against a sink.
/// Score-bias encoders that do not model it take the attention's general per-tile path.
template <class E>
concept distance_bias_encoding = score_bias_encoding<E> && requires(const E& e, std::ptrdiff_t h, std::int64_t d) {
  { e.bias_at_distance(h, d) } -> std::convertible_to<double>;
  { e.query_bias(h, d) } -> std::convertible_to<double>;
  { e.bias_distance_range() } -> std::convertible_to<distance_range>;
};

/// Hook 4 (Shaw et al. 2018, eq. 3-4). `relative_key(h, pos_q, pos_k)` is the vector aK whose dot
/// product with q_i is added to q_i . k_j before scaling; `relative_value(h, pos_q, pos_k)` is the
/// vector aV added to v_j in the weighted sum (an empty span when the encoder has no value term).
/// Both have head_dim() entries.
template <class E>
concept relative_kv_encoding = positional_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, std::int64_t i, std::int64_t j) {
  { e.head_dim() } -> std::convertible_to<std::ptrdiff_t>;
  { e.relative_key(h, i, j) } -> std::convertible_to<std::span<const double>>;
  { e.relative_value(h, i, j) } -> std::convertible_to<std::span<const double>>;
};

/// Refinement of hook 4: relative_key(h, pos_q, pos_k) == relative_key_at_distance(h, pos_k - pos_q)
/// and likewise for values, constant outside relative_distance_range(). The fused attention forms
/// the q . aK products once per query row over that range and applies the value term through
/// per-distance probability sums. A relative_kv encoder without it is not supported by
/// posenc::attention (compile-time error); sdpa takes any.
template <class E>
concept distance_relative_kv_encoding = relative_kv_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, std::int64_t d) {
  { e.relative_key_at_distance(h, d) } -> std::convertible_to<std::span<const double>>;
  { e.relative_value_at_distance(h, d) } -> std::convertible_to<std::span<const double>>;
  { e.relative_distance_range() } -> std::convertible_to<distance_range>;
};

/// Hook 5 (He et al. 2021, DeBERTa eq. 4, position-to-content): `relative_query(h, pos_q, pos_k)` is
/// the vector aQ whose dot product with the KEY k_j is added to q_i . k_j before scaling, the mirror
/// of hook 4's aK (which meets the query). head_dim() entries.
template <class E>
concept relative_query_encoding = positional_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, std::int64_t i, std::int64_t j) {
  { e.head_dim() } -> std::convertible_to<std::ptrdiff_t>;
  { e.relative_query(h, i, j) } -> std::convertible_to<std::span<const double>>;
};

/// Refinement of hook 5: relative_query(h, pos_q, pos_k) == relative_query_at_distance(h, pos_k -
/// pos_q), constant outside relative_distance_range(). A fused attention forms k_j . aQ per key row
/// over that range and gathers it by distance, as it does q_i . aK for hook 4.
template <class E>
concept distance_relative_query_encoding = relative_query_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, std::int64_t d) {
  { e.relative_query_at_distance(h, d) } -> std::convertible_to<std::span<const double>>;
  { e.relative_distance_range() } -> std::convertible_to<distance_range>;
};

/// The vectors the gates of hook 6 meet the query with.
enum class contextual_gate_source : unsigned char {
  keys,    ///< g_ij = gate(q_i . k_j), k after hook 2 (CoPE's default)
  values,  ///< g_ij = gate(q_i . v_j) (CoPE's --cope-val-gates)
};

/// Hook 6 (Golovneva et al. 2024, CoPE eq. 3-5): positions computed from content. For query i and
/// each visible key j: the gate g_ij = gate(q_i . c_j) (c: gate_source()), the contextual position
/// p_ij = min(sum of g_ik over the visible keys k at or after j in key order, max_position()), and
/// the term t_ij = position_logit(h, q_i, p_ij) (q_i . e_h(p_ij), an embedding interpolated at the
/// fractional position). t_ij is added to q_i . k_j before scaling when position_term_scaled(),
/// else to the scaled logit (with the score biases).
template <class E>
concept contextual_position_encoding = positional_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, double x, std::span<const double> q) {
  { e.head_dim() } -> std::convertible_to<std::ptrdiff_t>;
  { e.gate_source() } -> std::convertible_to<contextual_gate_source>;
  { e.gate(x) } -> std::convertible_to<double>;
  { e.max_position() } -> std::convertible_to<double>;
  { e.position_logit(h, q, x) } -> std::convertible_to<double>;
  { e.position_term_scaled() } -> std::convertible_to<bool>;
};

/// Refinement of hook 6 that lets a fused attention take the term from a table: the gate is
/// sigmoid(gate_logit_scale() x), and position_logit(h, q, p) interpolates q . position_embedding(h, n)
/// (n < position_count(), head_dim() values each) linearly between floor(p) and ceil(p). The fused
/// attention forms q . e_h(n) for every row once per query tile and interpolates it per key.
template <class E>
concept contextual_position_table_encoding = contextual_position_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, std::int64_t n) {
  { e.gate_logit_scale() } -> std::convertible_to<double>;
  { e.position_count() } -> std::convertible_to<std::int64_t>;
  { e.position_embedding(h, n) } -> std::convertible_to<std::span<const double>>;
};

/// Backward of hook 6: `gate_derivative(x)` = d gate / d x; `position_logit_slope(h, q, p)` = d
/// position_logit / d p (at an integer p the reference's autograd gives 0); and
/// `accumulate_position_query_gradient(h, p, w, dq)`: dq += w * e_h(p) (head_dim() values).
template <class E>
concept contextual_position_backward_encoding = contextual_position_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, double x, std::span<const double> q, std::span<double> g) {
  { e.gate_derivative(x) } -> std::convertible_to<double>;
  { e.position_logit_slope(h, q, x) } -> std::convertible_to<double>;
  e.accumulate_position_query_gradient(h, x, x, g);
};

/// Optional: an encoder that asks the attention to multiply its softmax scale (DeepSeek YaRN's
/// mscale^2). The attention multiplies its scale by `softmax_scale_multiplier()` when present.
template <class E>
concept has_softmax_scale_multiplier = requires(const E& e) {
  { e.softmax_scale_multiplier() } -> std::convertible_to<double>;
};

/// Training (docs/training.md). Trainable parameters: `parameter_count()` values, laid out as the
/// encoder's constructor tables, one after the other, row-major; the backward's parameter
/// gradients are spans of that many doubles in that layout. An encoder without it has nothing to
/// learn (NoPE, sinusoidal, ALiBi, RoPE and its scalings, xPos, mRoPE, temperature): its backward
/// only maps the gradients of q, k (or of the embeddings) through the hook.
template <class E>
concept trainable_encoding = positional_encoding<E> && requires(const E& e) {
  { e.parameter_count() } -> std::convertible_to<std::ptrdiff_t>;
};

/// Whether an encoder has trainable parameters (the hook a training loop asks).
template <class E>
inline constexpr bool has_trainable_parameters = trainable_encoding<E>;

/// Backward of hook 2: `transform_q_backward(dq, positions)` / `transform_k_backward(dk, positions)`
/// turn, in place, the gradient w.r.t. the transformed rows into the gradient w.r.t. the rows
/// before the transform: the transpose of the forward's map at those positions. Every shipped
/// transform is linear in q and k (a rotation times a magnitude, an xPos or temperature scale), so
/// its transpose needs no saved activations: RoPE's is the inverse rotation times M.
template <class E>
concept qk_transform_backward_encoding = qk_transform_encoding<E> &&
    requires(const E& e, tensor_view<float> xf, tensor_view<double> xd, std::span<const std::int64_t> pos) {
  e.transform_q_backward(xf, pos);
  e.transform_k_backward(xf, pos);
  e.transform_q_backward(xd, pos);
  e.transform_k_backward(xd, pos);
};

/// Backward of hook 1 with parameters (learned tables): `accumulate_add_gradient(p, d_row, grad)`
/// adds the gradient of the embedding row at position p (the sum after add()) to the gradient of
/// the parameter row it read (a scatter-add), for float and double rows.
template <class E>
concept trainable_additive_encoding = additive_encoding<E> && trainable_encoding<E> &&
    requires(const E& e, std::int64_t p, std::span<const float> rf, std::span<const double> rd, std::span<double> g) {
  e.accumulate_add_gradient(p, rf, g);
  e.accumulate_add_gradient(p, rd, g);
};

/// Backward of hook 3 with parameters (T5 buckets): `accumulate_bias_gradient(h, pos_q, pos_k, d, grad)`
/// adds d, the gradient of the logit of that pair, to the gradient of the parameter bias() read.
template <class E>
concept trainable_score_bias_encoding = score_bias_encoding<E> && trainable_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, std::int64_t i, std::int64_t j, double d, std::span<double> g) {
  e.accumulate_bias_gradient(h, i, j, d, g);
};

/// Backward of hook 4 with parameters (Shaw tables): `accumulate_relative_key_gradient(h, pos_q,
/// pos_k, w, x, grad)` adds w * x (x: head_dim() values, float or double) to the gradient of the
/// aK row relative_key(h, pos_q, pos_k) returned; `accumulate_relative_value_gradient` likewise for
/// the aV row (nothing when the encoder has no value term).
template <class E>
concept trainable_relative_kv_encoding = relative_kv_encoding<E> && trainable_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, std::int64_t i, std::int64_t j, double w, std::span<const float> xf,
             std::span<const double> xd, std::span<double> g) {
  e.accumulate_relative_key_gradient(h, i, j, w, xf, g);
  e.accumulate_relative_key_gradient(h, i, j, w, xd, g);
  e.accumulate_relative_value_gradient(h, i, j, w, xf, g);
  e.accumulate_relative_value_gradient(h, i, j, w, xd, g);
};

/// Backward of hook 5 with parameters (DeBERTa's projected tables): `accumulate_relative_query_gradient(h,
/// pos_q, pos_k, w, x, grad)` adds w * x (x: head_dim() values) to the gradient of the aQ row
/// relative_query(h, pos_q, pos_k) returned.
template <class E>
concept trainable_relative_query_encoding = relative_query_encoding<E> && trainable_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, std::int64_t i, std::int64_t j, double w, std::span<const float> xf,
             std::span<const double> xd, std::span<double> g) {
  e.accumulate_relative_query_gradient(h, i, j, w, xf, g);
  e.accumulate_relative_query_gradient(h, i, j, w, xd, g);
};

/// Backward of hook 6 with parameters (CoPE's embeddings): `accumulate_position_gradient(h, p, w, q,
/// grad)` adds w * dt/d(e rows) to the gradient of the embedding rows position_logit(h, q, p) read:
/// w (1 - frac p) q to row floor(p), w frac(p) q to row ceil(p).
template <class E>
concept trainable_contextual_position_encoding = contextual_position_backward_encoding<E> && trainable_encoding<E> &&
    requires(const E& e, std::ptrdiff_t h, double x, std::span<const double> q, std::span<double> g) {
  e.accumulate_position_gradient(h, x, x, q, g);
};

/// The hooks an encoder models, as bits, for static checks and diagnostics.
enum hook : unsigned {
  hook_none = 0,
  hook_additive = 1u << 0,
  hook_qk_transform = 1u << 1,
  hook_score_bias = 1u << 2,
  hook_relative_kv = 1u << 3,
  hook_relative_query = 1u << 4,
  hook_contextual_position = 1u << 5,
};

template <class E>
inline constexpr unsigned hooks_of = (additive_encoding<E> ? hook_additive : 0u) |
                                     (qk_transform_encoding<E> ? hook_qk_transform : 0u) |
                                     (score_bias_encoding<E> ? hook_score_bias : 0u) |
                                     (relative_kv_encoding<E> ? hook_relative_kv : 0u) |
                                     (relative_query_encoding<E> ? hook_relative_query : 0u) |
                                     (contextual_position_encoding<E> ? hook_contextual_position : 0u);

/// The hooks posenc::attention and attention_backward (the fused path) compute inside their tiles
/// (hook 5 in distance form: DeBERTa's p2c; hook 6 in table form: CoPE). The fused entry points refuse
/// at compile time, rather than leave a term out, an encoder with another hook, hook 6 not in table
/// form (contextual_position_table_encoding), or hook 6 beside hook 4 or 5. The paged and ragged
/// entry points (decoder serving) refuse hooks 5 and 6 as well.
inline constexpr unsigned fused_attention_hooks = hook_additive | hook_qk_transform | hook_score_bias |
                                                  hook_relative_kv | hook_relative_query | hook_contextual_position;

/// Whether the fused attention computes every hook of E.
template <class E>
inline constexpr bool fused_attention_supports = (hooks_of<E> & ~fused_attention_hooks) == 0u &&
                                                 (!contextual_position_encoding<E> ||
                                                  (contextual_position_table_encoding<E> &&
                                                   (hooks_of<E> & (hook_relative_kv | hook_relative_query)) == 0u));

}  // namespace posenc::inline v0
