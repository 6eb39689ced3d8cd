// posenc/attention/options.hpp — everything a call to sdpa() can be told besides q, k, v and the
// encoder: scale, masks, explicit positions, attention sinks, where to put the weights.
//
// A flat aggregate for designated initialisers (docs/spec.md §10). Spans are borrowed for the duration
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
  /// |query_pos - key_pos| < W. Both rules hold exactly for any int64 positions (docs/spec.md §7.5):
  /// the difference is never wrapped (query 0 and key INT64_MIN: causal allows, a window refuses).
  std::optional<std::int64_t> sliding_window{};

  /// Chunked attention (Llama 4 `attention_chunk_size`) C >= 1 on positions: key j is visible for
  /// query i iff floor(query_pos / C) == floor(key_pos / C) (and the causal rule, when set).
  std::optional<std::int64_t> attention_chunk{};

  /// Logit soft-capping (Gemma 2 `attn_logit_softcapping`) cap > 0: every logit l = scale * q.k +
  /// bias becomes cap * tanh(l / cap) before the mask is applied.
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

}  // namespace posenc::inline v0
