// posenc/attention/ragged.hpp — posenc::attention over a ragged batch: many sequences of different
// lengths packed along the token axis, delimited by offsets (flash_attn_varlen_func's cu_seqlens_q
// and cu_seqlens_k), one call for all of them: prefill sequences and decode steps side by side.
//
// Sequence s is query rows [cu_seqlens_q[s], cu_seqlens_q[s + 1]) against key rows
// [cu_seqlens_k[s], cu_seqlens_k[s + 1]), with default positions bottom-right within the sequence
// (query i of Sq at Sk - Sq + i, as a call of its own). Every option and encoder works as in
// posenc::attention, except the per-call masks (positions, key_lengths, key_mask, segments:
// config_error). The result is bit-identical to one posenc::attention call per sequence, for any
// thread count; the work items of all sequences share the executor, longest first
// (attention/fast/sequences.hpp), so a long sequence does not leave threads idle.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/sequences.hpp>
#include <posenc/core/element.hpp>
#include <posenc/encoders/no_position.hpp>

namespace posenc::inline v0 {

/// Sequence boundaries of a ragged batch: S + 1 non-decreasing offsets each, from 0 to the token
/// count of q (cu_seqlens_q) and of k and v (cu_seqlens_k).
struct ragged_batch {
  std::span<const std::int32_t> cu_seqlens_q;
  std::span<const std::int32_t> cu_seqlens_k;
};

namespace detail {

inline void check_offsets(std::span<const std::int32_t> cu, std::ptrdiff_t total, const char* name) {
  detail::require_shape(!cu.empty(), name, "empty", "S + 1 offsets (S sequences)");
  detail::require_shape(cu.front() == 0, name, cu.front(), "0 first");
  for (std::size_t s = 1; s < cu.size(); ++s)
    if (cu[s] < cu[s - 1])
      detail::require_shape(false, name, cu[s], "non-decreasing (offset " + std::to_string(s) + ")");
  detail::require_shape(cu.back() == total, name, cu.back(), "the token count " + std::to_string(total) + " last");
}

template <kv_element TK, kv_element TV, positional_encoding E>
void ragged_attention(tensor_view<const float> q, tensor_view<const TK> k, tensor_view<const TV> v,
                      tensor_view<float> out, const ragged_batch& rb, const E& enc, const attention_options& o,
                      const fast_attention_options& f) {
  static_assert(all_relative_kv_by_distance<E>(),
                "posenc::attention needs relative_kv encoders in distance form (distance_relative_kv_encoding)");
  detail::require_shape(q.batch() == 1, "q.batch", q.batch(), "1: a ragged batch packs its sequences along tokens");
  require_no_per_call_masks(o, "a ragged batch");
  validate_call(q, k, v, out, enc, o, f);
  detail::require_shape(rb.cu_seqlens_q.size() == rb.cu_seqlens_k.size(), "ragged.cu_seqlens_k", rb.cu_seqlens_k.size(),
                        "as many offsets as cu_seqlens_q");
  check_offsets(rb.cu_seqlens_q, q.tokens(), "ragged.cu_seqlens_q");
  check_offsets(rb.cu_seqlens_k, k.tokens(), "ragged.cu_seqlens_k");
  const std::size_t S = rb.cu_seqlens_q.size() - 1;
  const float scale = static_cast<float>(detail::softmax_scale(enc, o, q.dim()));
  std::deque<attention_mask> masks;
  for (std::size_t s = 0; s < S; ++s)
    masks.emplace_back(o, 1, rb.cu_seqlens_q[s + 1] - rb.cu_seqlens_q[s], rb.cu_seqlens_k[s + 1] - rb.cu_seqlens_k[s]);
  if (q.heads() > 0)
    for (const attention_mask& m : masks) check_relative_sizes(enc, m, q.dim(), kv_dim(v));
  if (S == 0 || q.heads() == 0 || v.dim() == 0) return;

  attention_workspace local;
  attention_workspace& ws = f.workspace ? *f.workspace : local;
  // out overlapping q other than row for row: every sequence reads q from one copy (an item of one
  // sequence could otherwise overwrite rows of another's q).
  const tensor_view<const float> qall =
      kernel_queries(q, out_overlaps_queries(q, out), no_position{}, o, masks.front(), ws);
  bool k_transform = false;
  if constexpr (qk_transform_encoding<E>) k_transform = o.transform_keys;
  std::vector<forward_operands<TK, TV>> seqs;
  std::vector<forward_operands<float, TV>> fseqs;
  for (std::size_t s = 0; s < S; ++s) {
    const std::ptrdiff_t q0 = rb.cu_seqlens_q[s], sq = rb.cu_seqlens_q[s + 1] - q0;
    const std::ptrdiff_t k0 = rb.cu_seqlens_k[s], sk = rb.cu_seqlens_k[s + 1] - k0;
    if (sq == 0) continue;
    const tensor_view<float> os = out.token_slice(q0, sq);
    if (sk == 0) {  // no key: zeros, with or without sinks (as a call over an empty cache)
      zero_view(os);
      continue;
    }
    attention_workspace& sws = ws.sequence(k_transform ? fseqs.size() : seqs.size());  // run_sequences' index
    const tensor_view<const float> qsl = qall.token_slice(q0, sq);
    const tensor_view<const float> qs = kernel_queries(qsl, out_overlaps_queries(qsl, os), enc, o, masks[s], sws);
    const tensor_view<const TV> vs = v.token_slice(k0, sk);
    if (k_transform)
      fseqs.push_back(
          {qs, {.view = transformed_keys(k.token_slice(k0, sk), enc, masks[s], sws)}, {.view = vs}, os, sk, &masks[s]});
    else
      seqs.push_back({qs, {.view = k.token_slice(k0, sk)}, {.view = vs}, os, sk, &masks[s]});
  }
  if (k_transform)
    run_sequences<E, float, TV>(fseqs, enc, o, f, ws, scale);
  else
    run_sequences<E, TK, TV>(seqs, enc, o, f, ws, scale);
}

}  // namespace detail

/// posenc::attention over a ragged batch: `q` [1, Tq, Hq, D] float, `k` [1, Tk, Hkv, D] and `v`
/// [1, Tk, Hkv, Dv] float, bfloat16, float16 or q8_0 blocks (dim axis in blocks), `out` [1, Tq, Hq, Dv], the sequences
/// cut by `batch` (S + 1 offsets each). Throws what posenc::attention throws, shape_error for bad offsets
/// ("ragged.cu_seqlens_q" / "ragged.cu_seqlens_k") and config_error for per-call masks in `options`.
///
///   posenc::attention(q, k, v, out, posenc::ragged_batch{cu_q, cu_k}, enc, {.causal = true});
template <maybe_const<float> Q, kv_element K, kv_element V, positional_encoding E>
void attention(tensor_view<Q> q, tensor_view<K> k, tensor_view<V> v, tensor_view<float> out, const ragged_batch& batch,
               const E& encoder, const attention_options& options = {}, const fast_attention_options& fast = {}) {
  detail::require_serving_encoder<E>();
  using TK = std::remove_const_t<K>;
  using TV = std::remove_const_t<V>;
  detail::ragged_attention<TK, TV>(tensor_view<const float>(q), tensor_view<const TK>(k), tensor_view<const TV>(v), out,
                                   batch, encoder, options, fast);
}

}  // namespace posenc::inline v0
