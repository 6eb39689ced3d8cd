// posenc/config/architecture.hpp — the vocabulary of the architecture table: what a model family does
// with positions and attention, one column per rule the loaders apply.
//
// A row (config/architectures.hpp) says, for one family, which positional family it uses, its pair
// layouts (as Hugging Face stores the weights and as llama.cpp rotates the GGUF tensors), which key
// gives the rotated width, how layers are assigned their kind (sliding patterns, hybrid mixers), which
// layers skip RoPE, what each layer type's RoPE is, the softmax-scale rule, soft-capping, sinks,
// temperature, the class defaults of keys a config.json may leave out, and the reference files it was
// read from. Every rule of the loaders (config/rules) reads these columns and nothing else about a
// family. This header holds the types and the lookups by name; it reads no config.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <posenc/core/pairing.hpp>
#include <posenc/rope/vision_rope.hpp>

namespace posenc::inline v0 {

/// How a family encodes positions.
/// `deberta`: DeBERTa's disentangled relative terms (encoders/deberta.hpp) when the config's
/// relative_attention is true; otherwise the family's positions are its learned absolute ones.
enum class positional_family : unsigned char { rope, alibi, t5_buckets, learned, sinusoidal, deberta, none };

[[nodiscard]] constexpr const char* positional_name(positional_family p) noexcept {
  switch (p) {
    case positional_family::rope:
      return "rope";
    case positional_family::alibi:
      return "alibi";
    case positional_family::t5_buckets:
      return "t5_buckets";
    case positional_family::learned:
      return "learned";
    case positional_family::sinusoidal:
      return "sinusoidal";
    case positional_family::deberta:
      return "deberta_relative";
    case positional_family::none:
      break;
  }
  return "none";
}

/// The kind of a layer. Softmax attention (full, sliding, chunked) or one of the token mixers of
/// hybrid models, on which posenc applies nothing (no positions, no softmax).
enum class layer_attention : unsigned char {
  full,       ///< every earlier key ("full_attention")
  sliding,    ///< the last `window` keys ("sliding_attention")
  chunked,    ///< keys of the same chunk of `chunk_size` tokens (Llama 4 "chunked_attention")
  linear,     ///< linear attention (Qwen3-Next gated DeltaNet, MiniMax lightning, Kimi delta attention)
  mamba,      ///< a Mamba / Mamba-2 state-space mixer (Jamba, Bamba, Granite 4.0-H, Nemotron-H, ...)
  conv,       ///< a short convolution mixer (LFM2)
  mlp,        ///< no token mixer at all: an MLP-only layer (Nemotron-H "-")
  moe,        ///< no token mixer at all: an MoE-only layer (Nemotron-H "E")
  recurrent,  ///< a gated linear recurrence (RecurrentGemma's RG-LRU block)
  /// cross-attention to another sequence (Mllama's image tokens): keys and values are not the text's, no
  /// positions are applied, the text tokens do not attend to each other
  cross,
};

/// The name a layer kind is reported by (HF v5 layer-type names for softmax attention).
[[nodiscard]] constexpr const char* layer_type_name(layer_attention a) noexcept {
  switch (a) {
    case layer_attention::full:
      return "full_attention";
    case layer_attention::sliding:
      return "sliding_attention";
    case layer_attention::chunked:
      return "chunked_attention";
    case layer_attention::linear:
      return "linear_attention";
    case layer_attention::mamba:
      return "mamba";
    case layer_attention::conv:
      return "conv";
    case layer_attention::mlp:
      return "mlp";
    case layer_attention::moe:
      return "moe";
    case layer_attention::recurrent:
      return "recurrent";
    case layer_attention::cross:
      break;
  }
  return "cross_attention";
}

/// True for the layer kinds that are softmax attention (full, sliding, chunked).
[[nodiscard]] constexpr bool is_softmax(layer_attention a) noexcept {
  return a == layer_attention::full || a == layer_attention::sliding || a == layer_attention::chunked;
}

/// Which key gives the rotated part of a head.
enum class partial_rule : unsigned char {
  full,                   ///< every dimension rotates; the modeling code never reads partial_rotary_factor
  partial_rotary_factor,  ///< R = floor(head_dim * partial_rotary_factor)
  rotary_pct,             ///< GPT-NeoX: R = floor(head_dim * rotary_pct)
  rotary_dim,             ///< GPT-J: R = rotary_dim
  qk_rope_head_dim,       ///< DeepSeek MLA: [nope | rope] per head, R = qk_rope_head_dim
};

/// How the layers are assigned their kind when the config has no `layer_types`.
enum class layer_rule : unsigned char {
  uniform,                            ///< every layer full attention; a sliding_window key is not read by the model
  sliding_all,                        ///< every layer slides when sliding_window is set (Mistral, Phi-3, Starcoder2)
  max_window_layers,                  ///< Qwen2: layer i slides iff use_sliding_window and i >= max_window_layers
  alternate_below_max_window_layers,  ///< Qwen2-MoE: use_sliding_window, i < max_window_layers and i even
  use_sliding_window_all,             ///< Qwen3-MoE: every layer slides iff use_sliding_window
  /// dots.llm1: layer i slides iff sliding_window is set and i >= max_window_layers (no use_sliding_window)
  window_max_window_layers,
  period,                ///< sliding iff (i + 1) % sliding_window_pattern != 0 (Gemma 2/3, Cohere2, gpt-oss)
  nope_interval,         ///< Llama 4 / SmolLM3: layer i is NoPE iff no_rope_layers[i] == 0 (default every 4th)
  hybrid_interval,       ///< Qwen3-Next: the mixer iff (i + 1) % full_attention_interval != 0
  hybrid_alternate,      ///< MiniMax: full attention iff (i + 1) % 2 != 0, else the mixer
  hybrid_period_offset,  ///< Jamba: attention iff i % attn_layer_period == attn_layer_offset, else the mixer
  hybrid_indices,        ///< Bamba attn_layer_indices / LFM2 full_attn_idxs: attention there, else the mixer
  hybrid_pattern,  ///< Nemotron-H hybrid_override_pattern: one letter per layer (M mixer, * attention, - MLP, E MoE)
  hybrid_block_types,  ///< layer_types / layers_block_type required ("mamba", "attention"); absent: every layer the
                       ///< mixer
  /// Zamba / Zamba2 layers_block_type ("hybrid": the shared attention block, then the mixer); absent: Zamba's
  /// [mixer, mixer, attention] + attention iff i % attn_layer_period == attn_layer_offset over the rest
  /// (default_period / default_offset), Zamba2's fixed 54-layer list (default_period 0)
  zamba_block_types,
  /// RecurrentGemma block_types cycled over the layers ("recurrent": the mixer; "attention": local attention,
  /// sliding with the window)
  block_types_cycle,
  /// Mllama cross_attention_layers: those layers are the mixer (cross-attention), the others full attention;
  /// absent: default_layer_indices (the config class's list)
  cross_attention_indices,
  block_configs,    ///< DeciLM / Nemotron-NAS block_configs: a layer whose attention is a no-op or a linear map is the
                    ///< mixer (no token mixing); GGUF: a KV head count of 0
  parallel_hybrid,  ///< Falcon-H1: every layer runs attention and the mixer side by side (attention reported)
  attention_types,  ///< GPT-Neo attention_types [[["global", "local"], n], ...] expanded over the layers
};

/// Which softmax-attention layers skip RoPE.
enum class nope_rule : unsigned char {
  none,                   ///< every attention layer rotates
  non_sliding,            ///< Cohere2: only sliding layers rotate
  non_sliding_if_window,  ///< EXAONE 4: with a sliding window, only sliding layers rotate
  /// Cohere2-MoE: only sliding layers rotate, and the dense-MLP layers (mlp_layer_types, default the first
  /// first_k_dense_replace) when prefix_dense_sliding_window_pattern is 1 (force_rope)
  non_sliding_or_dense_prefix,
  /// OLMo Hybrid: no layer rotates when rope_theta is written as null and no rope_parameters give one (its
  /// modeling code then builds no rotary embedding)
  null_theta,
  no_rope_layers,           ///< Llama 4 / SmolLM3: no_rope_layers[i] == 0
  all,                      ///< no attention layer rotates (Jamba, Nemotron-H: the mixers carry position)
  position_embedding_type,  ///< Granite 4.0-H: RoPE iff position_embedding_type == "rope" (class default NoPE)
  use_mem_rope,             ///< Zamba2: RoPE iff use_mem_rope (class default false)
};

/// What the sliding layers' RoPE is when the config gives one RoPE (legacy keys).
enum class local_rope_rule : unsigned char {
  same,              ///< every layer type the same RoPE
  local_base,        ///< Gemma 3: rope_local_base_freq (class default below), no scaling
  unscaled_sliding,  ///< OLMo 3: the same base, no scaling (legacy rope_scaling acts on the full layers only)
};

/// The multiplier of q.k before the softmax (before any encoder correction such as YaRN mscale²).
enum class scale_rule : unsigned char {
  head_dim,               ///< head_dim^-0.5
  query_pre_attn_scalar,  ///< Gemma 2/3: query_pre_attn_scalar^-0.5
  attention_multiplier,   ///< Granite: attention_multiplier
  qk_head_dim,            ///< DeepSeek: (qk_nope_head_dim + qk_rope_head_dim)^-0.5 (YaRN mscale²: mscale2_hf/_gguf)
  mpt_softmax_scale,      ///< MPT: attn_config.softmax_scale, else head_dim^-0.5
  unscaled,               ///< T5: 1
  one,                    ///< Gemma 3n: 1 (q/k norms replace 1/sqrt(d))
  key_multiplier,  ///< Falcon-H1: head_dim^-0.5 * key_multiplier * attention_in_multiplier^2 (q and k are scaled)
  inv_head_dim,    ///< Jais (muP): head_dim^-1
  /// DeBERTa: (head_dim (1 + n))^-0.5, n the cross terms of pos_att_type (c2p, p2c), also without
  /// relative_attention; with it the deberta_relative encoder carries the (1 + n)^-0.5
  deberta_cross_terms,
  half_head_dim,  ///< Zamba / Zamba2: (head_dim / 2)^-0.5, head_dim the width of the doubled attention input
};

/// One family.
struct architecture {
  std::string_view family{};         ///< display name
  std::string_view hf_model_type{};  ///< HF model_type ("" when HF has none)
  std::string_view hf_aliases{};     ///< further HF model_type values, comma-separated
  std::string_view gguf_arch{};      ///< llama.cpp general.architecture ("" when llama.cpp has none)
  std::string_view gguf_aliases{};   ///< further llama.cpp architecture names, comma-separated
  positional_family positional = positional_family::rope;
  pairing hf_layout = pairing::half_split;    ///< pairs in HF's weight layout
  pairing gguf_layout = pairing::half_split;  ///< pairs llama.cpp rotates (GGUF tensors)
  partial_rule partial = partial_rule::full;
  double default_partial = 1;    ///< class default of the rotated fraction (or rotary_dim for GPT-J)
  double default_theta = 10000;  ///< class default rope_theta
  int default_head_dim = 0;      ///< class default head_dim (0: hidden_size / num_attention_heads)
  /// without a head_dim, head_dim = head_dim_hidden_factor * hidden_size / num_attention_heads (Zamba: 2, the
  /// attention reads the hidden states concatenated with the embeddings)
  int head_dim_hidden_factor = 1;
  /// the config class replaces a top-level partial_rotary_factor by default_partial (Bamba); a
  /// rope_parameters.partial_rotary_factor still wins
  bool partial_fixed = false;
  layer_rule layers = layer_rule::uniform;
  layer_attention mixer = layer_attention::linear;  ///< the hybrid layers' kind (hybrid layer rules)
  bool indices_default_attention = false;           ///< hybrid_indices without the key: every layer attention (LFM2)
  int default_period = 0;                           ///< class default of the pattern / interval / period
  int default_offset = 0;                           ///< class default of attn_layer_offset (Jamba)
  std::string_view default_layer_indices{};  ///< cross_attention_indices: the class default list, comma-separated
  bool first_layer_full = false;             ///< the class-default period also makes layer 0 full (MiMo-V2-Flash)
  bool period_first = false;  ///< period rule: layer i is full iff i % period == 0 (else (i + 1) % period == 0)
  std::optional<std::int64_t> default_window{};  ///< class default of sliding_window
  int default_max_window_layers = 0;             ///< Qwen2 family
  nope_rule nope = nope_rule::none;
  bool chunked = false;  ///< attention_chunk_size on the RoPE layers (Llama 4)
  std::optional<std::int64_t> default_chunk{};
  local_rope_rule local_rope = local_rope_rule::same;
  double default_local_theta = 0;  ///< local_base: class default rope_local_base_freq
  scale_rule scale = scale_rule::head_dim;
  bool reads_scale_attn_weights = false;  ///< GPT-2 / GPT-BigCode: scale_attn_weights false means an unscaled q.k
  /// The softmax scale is multiplied by YaRN get_mscale(s, mscale_all_dim)^2 (DeepSeek modeling); without
  /// it a YaRN mscale / mscale_all_dim pair only sets the rotary magnitude (their ratio).
  bool mscale2_hf = false;
  bool mscale2_gguf = false;           ///< the same for llama.cpp's graph (deepseek2: kq_scale = mscale^2 / sqrt(d))
  bool reads_rope_interleave = false;  ///< the modeling code reads rope_interleave (DeepSeek-V3)
  double default_scale_param = 0;      ///< class default query_pre_attn_scalar / attention_multiplier
  bool softcap = false;                ///< reads attn_logit_softcapping / final_logit_softcapping
  std::optional<double> default_attn_softcap{};
  std::optional<double> default_final_softcap{};
  bool sinks = false;               ///< learned per-head sink logits (gpt-oss)
  bool layer_rope_theta = false;    ///< layer_rope_theta[i] is layer i's base, 0 its NoPE (GraniteSWA)
  bool sinks_sliding_only = false;  ///< the sinks are on the sliding layers only (MiMo-V2)
  bool llama4_temperature = false;  ///< attn_temperature_tuning on the NoPE layers
  bool mrope = false;               ///< multimodal RoPE sections (text positions: plain RoPE)
  bool mrope_interleaved = false;
  bool alibi_scaled = false;             ///< Falcon: the ALiBi bias is multiplied by head_dim^-0.5 with q.k
  int alibi_at_block_count = 0;          ///< ALiBi instead of RoPE at this layer count (Baichuan 13B), else RoPE
  int learned_offset = 0;                ///< learned positions: the first position's row (OPT 2)
  bool learned_offset_from_pad = false;  ///< RoBERTa: positions start at pad_token_id + 1
  bool bidirectional = false;            ///< the layers are not causal (encoders: BERT, T5's encoder)
  bool reads_bidirectional_key = false;  ///< use_bidirectional_attention makes the layers bidirectional (Gemma 3)
  bool gguf_reads_window = true;         ///< llama.cpp reads {arch}.attention.sliding_window for this architecture
  bool gguf_mrope_interleaved = false;   ///< llama.cpp rotates the mRoPE sections interleaved (IMROPE)
  int gguf_period_block_count = 0;       ///< llama.cpp applies the built-in pattern only at this block_count (EXAONE 4)
  bool gguf_pattern_array_ignored = false;  ///< llama.cpp reads no per-layer pattern array (its built-in period)
  bool gguf_ignores_rope_keys = false;      ///< llama.cpp rotates with base 10000, unscaled, whatever the keys say
  std::optional<std::int64_t> gguf_fixed_window{};  ///< llama.cpp uses this window whatever the key says (SmallThinker)
  /// DeBERTa v2/v3: reads position_buckets (log buckets when > 0), share_att_key, attention_head_size and counts
  /// c2p / p2c in the scale; false (v1): distances clamped, talking_head refused, every pos_att_type entry counted
  bool deberta_v2_rules = false;
  bool per_layer_bias = false;   ///< T5 buckets: every layer has its own bias table (UMT5), else layer 0's
  bool longrope_mscale = false;  ///< LongRoPE magnitude from rope_scaling.short_mscale / long_mscale (Phi-MoE)
  /// rope_type renames the family's config class or modeling code applies (config.json only), comma-separated
  /// `type+key=scaling` (HunYuan: "dynamic+alpha=dynamic_alpha": a dynamic rope_type carrying an alpha is
  /// HunYuan's own scaling; Phi-3: "yarn=longrope")
  std::string_view scaling_renames{};
  /// rope_parameters the config class sets when a config has neither rope_parameters nor rope_scaling, as
  /// comma-separated key=value pairs (a value with a '.' is a number, digits an integer, else a string);
  /// without rope_theta among them the config's rope_theta (else default_theta) is the base (gpt-oss); keys
  /// spelled `layer_type.key` give one entry per layer type (Laguna)
  std::string_view default_rope_parameters{};
  /// further class defaults of keys the rules read, as key=value pairs (same syntax)
  std::string_view defaults{};
  /// the family's own names of logical keys, comma-separated `logical=spelling` (ModernBERT
  /// "rope_theta=global_rope_theta,sliding_window=local_attention"): the rules read the spelling
  std::string_view spellings{};
  std::string_view refused{};  ///< "key: why" when posenc refuses this family (config_error), "" if it loads
  std::string_view sources{};  ///< the reference files this row was read from, with their commits
};

/// One rotary vision tower (the vision_config of a multimodal model): which vision_rope convention its
/// modeling code rotates with and under which keys its config gives the shapes. A row of vision_towers
/// (config/architectures.hpp); the rule is config/rules_vision.hpp.
struct vision_tower {
  std::string_view name{};         ///< display name
  std::string_view model_types{};  ///< vision_config.model_type values, comma-separated
  std::string_view outer_types{};  ///< model_types whose config class fixes the tower (vision_config without one)
  vision_rope_convention convention = vision_rope_convention::qwen_vl;
  std::string_view hidden_key = "hidden_size";  ///< head_dim = hidden / heads
  std::string_view heads_key = "num_heads";
  std::string_view depth_key = "depth";
  bool reads_theta = false;     ///< rope_theta / rope_parameters.rope_theta (else the modeling code's fixed 10000)
  bool grid_side = false;       ///< image_size / patch_size patches per side (the position table's side)
  bool merge = false;           ///< spatial_merge_size and temporal_patch_size (positions in merge-block order)
  bool windows = false;         ///< window_size and fullatt_block_indexes (window attention elsewhere)
  bool learned_grid = false;    ///< num_position_embeddings learned absolute positions added too (Qwen3-VL)
  std::string_view defaults{};  ///< class defaults of the keys read, key=value pairs
  std::string_view sources{};   ///< the reference files this row was read from, with their commits
};

namespace detail::arch {

/// True when `name` is an entry of the comma-separated `list`.
constexpr bool in_list(std::string_view list, std::string_view name) noexcept {
  while (!list.empty()) {
    const auto c = list.find(',');
    if (list.substr(0, c) == name) return true;
    if (c == std::string_view::npos) break;
    list.remove_prefix(c + 1);
  }
  return false;
}

}  // namespace detail::arch
}  // namespace posenc::inline v0
