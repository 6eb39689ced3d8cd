// posenc/attention/options.hpp — everything a call to sdpa() can be told besides q, k, v and the
// encoder: scale, masks, explicit positions, attention sinks, where to put the weights; and where a
// backward puts the gradients that are not tensors (attention_gradients).
//
// A flat aggregate for designated initialisers. Spans are borrowed for the duration
// of the call only. Validation happens once per sdpa() call (attention/sdpa.hpp), which throws
// config_error / shape_error naming the field (e.g. "attention.key_positions").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace posenc::inline v0 {

/// Options of one attention call. Shapes use B = batch, Sq / Sk = query / key tokens, Hq = query
/// heads. Every span is either empty (feature off) or exactly the documented size.
///
///   posenc::attention_options o{.causal = true, .query_positions = pq, .key_positions = pk};
struct attention_options {
  /// Softmax scale. Absent: 1 / sqrt(D). Explicit values are used as given (T5: 1.0). Either way it
  /// is multiplied by `encoder.softmax_scale_multiplier()` when the encoder has one (DeepSeek YaRN).
  std::optional<double> scale{};

  /// Causal mask on POSITIONS: key j is allowed for query i iff key_pos[j] <= query_pos[i]
  /// (llama.cpp convention; equals the index mask for unpadded, unpacked sequences).
  bool causal = false;

  /// Sliding window W >= 1 on positions: allowed iff query_pos - key_pos < W (the query and the
  /// W - 1 tokens before it, as Mistral/Gemma). Without `causal` it is symmetric:
  /// |query_pos - key_pos| < W. Both rules hold exactly for any int64 positions:
  /// the difference is never wrapped (query 0 and key INT64_MIN: causal allows, a window refuses).
  /// The causal rule is the references' own: transformers masking_utils.py sliding_window_overlay
  /// (kv_idx > q_idx - sliding_window) and llama.cpp is_masked_swa LLAMA_SWA_TYPE_STANDARD (masked
  /// iff p_q - p_k >= n_swa), with W = the config's `sliding_window`. The non-causal rule matches
  /// neither bidirectional reference: transformers sliding_window_bidirectional_overlay allows
  /// |d| <= W and llama.cpp LLAMA_SWA_TYPE_SYMMETRIC allows |d| <= n_swa / 2; such a model needs
  /// W = its window + 1 here (resp. n_swa / 2 + 1). (transformers masking_utils.py at 00c4411c,
  /// llama.cpp src/llama-hparams.cpp at 01b77b57.)
  std::optional<std::int64_t> sliding_window{};

  /// Chunked attention (Llama 4 `attention_chunk_size`) C >= 1 on positions: key j is visible for
  /// query i iff floor(query_pos / C) == floor(key_pos / C), and the causal rule when `causal` is
  /// set (Llama 4 sets it). Floor division, so negative positions fall into chunks [-C, -1],
  /// [-2C, -C - 1], ... exactly; any int64 positions, no overflow. Combines with every other mask
  /// (window, padding, packing). With `causal` set this is transformers masking_utils.py
  /// chunked_overlay ((kv_idx - left_padding) // C == (q_idx - left_padding) // C: indices minus
  /// the left padding are our positions when they start at 0 at the first real token) and llama.cpp
  /// is_masked_swa LLAMA_SWA_TYPE_CHUNKED (masked iff p_k < (p_q / C) * C, with p_k <= p_q).
  /// Without `causal` the rule stays the symmetric one above (transformers' overlay alone).
  std::optional<std::int64_t> attention_chunk{};

  /// Logit soft-capping (Gemma 2 `attn_logit_softcapping`) cap > 0 and finite: the content logit
  /// l = scale * q.(k + a^K) (Shaw's key term included, as it is part of the product) becomes
  /// cap * tanh(l / cap); the encoder's score bias (ALiBi, T5, ...) is then added uncapped, then
  /// the mask, then the sinks take their share of the softmax uncapped. This is the order of both
  /// references: transformers Gemma 2 eager_attention_forward (matmul * scaling, / cap, tanh,
  /// * cap, + attention_mask, which is also where any additive bias would enter) and llama.cpp
  /// build_attn_mha (tanh on the product, then kq_b — T5's bias — then ggml_soft_max_ext adds the
  /// mask with ALiBi's slope * -|p_q - p_k| folded in, then the sinks). llama.cpp caps the product
  /// before its kq_scale; its Gemma 2 graph scales Q beforehand and passes kq_scale = 1, so both
  /// cap scale * q.k as here (Grok's tanh(kq * f_attn_out_scale / cap) * cap is the same with
  /// scale = f_attn_out_scale). No reference model combines a bias with soft-capping.
  /// (transformers models/gemma2/modeling_gemma2.py at 006e8693; llama.cpp src/llama-graph.cpp at
  /// 00395eb2, src/models/gemma2-iswa.cpp at 5c880d94.)
  std::optional<double> logit_softcap{};

  /// Explicit positions, one per (batch, token), row-major: [B * Sq] and [B * Sk]. Give both or
  /// neither. Neither: keys are 0..Sk-1 and queries the LAST Sq of them, Sk - Sq + i (bottom-right
  /// alignment, FlashAttention / t2t / CT2). They drive the masks and every positional hook.
  std::span<const std::int64_t> query_positions{};
  std::span<const std::int64_t> key_positions{};

  /// Padding, per sequence: keys j >= key_lengths[b] are masked. [B], each in [0, Sk].
  std::span<const std::int64_t> key_lengths{};
  /// Padding, per token: key_mask[b * Sk + j] == 0 masks key j of sequence b. [B * Sk].
  std::span<const std::uint8_t> key_mask{};

  /// Packing: a query attends only to keys with the same segment id (block-diagonal mask). [B * Sq]
  /// and [B * Sk]; give both or neither (for self-attention pass the same span twice). A negative id
  /// marks padding: such keys are never attended, such query rows give zeros.
  std::span<const std::int32_t> query_segments{};
  std::span<const std::int32_t> key_segments{};

  /// Attention sinks (gpt-oss, ggml_soft_max_add_sinks): one logit per query head [Hq], added to
  /// the softmax denominator only (it takes probability mass but contributes no value).
  std::span<const double> sinks{};

  /// Optional output of the attention weights, [B, Hq, Sq, Sk] row-major (masked entries are
  /// exactly 0). Empty: not written.
  std::span<double> weights{};

  /// Apply the encoder's query/key transform (hook 2) to q / to k. Turn `transform_keys` off when
  /// the keys were transformed already (they come from a KV cache, or you rotated them in place
  /// yourself); likewise `transform_queries`. sdpa never modifies q, k or v: it transforms copies.
  bool transform_queries = true;
  bool transform_keys = true;
};

/// Where the backward puts the gradients that are not tensors (both optional, both ACCUMULATED:
/// += into what the caller holds, so a training step sums them over layers and calls; zero them
/// first). dq, dk, dv are overwritten.
struct attention_gradients {
  /// encoder.parameter_count() values in the encoder's parameter layout (concepts.hpp
  /// trainable_encoding). Empty: not computed. Must be empty for an encoder with no parameters.
  std::span<double> encoder{};
  /// One per query head [Hq], the gradient of attention_options::sinks. Empty: not computed.
  /// Requires options.sinks.
  std::span<double> sinks{};
};

}  // namespace posenc::inline v0
