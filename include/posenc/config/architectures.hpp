// posenc/config/architectures.hpp — what each model family does with positions and attention, the
// one table the Hugging Face and GGUF loaders read (config/layered.hpp).
//
// One row per family: the positional family, the RoPE pair layout (as HF stores the weights and as
// llama.cpp rotates the GGUF tensors, which convert_hf_to_gguf.py permutes for some families), the
// partial-rotary convention, the per-layer rules (sliding pattern and its class default, NoPE
// layers, chunked layers, hybrid linear-attention layers), the softmax-scale rule, soft-capping,
// sinks, temperature, and the class defaults of every key that may be absent from a config.json.
// The values were read from the reference code: transformers configuration_*.py / modeling_*.py
// (files named in each row's `sources`, with the commit of the version read) and llama.cpp
// src/llama-model.cpp / src/llama-arch.cpp. This header is data and lookups only; it parses no
// config and does not decide what a given config means (config/layered.hpp does, from this table).
// See docs/configs.md for the generated supported-models table.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <posenc/core/pairing.hpp>

namespace posenc::inline v0 {

/// How a family encodes positions.
enum class positional_family : unsigned char { rope, alibi, t5_buckets, learned, sinusoidal, none };

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
    case positional_family::none:
      break;
  }
  return "none";
}

/// Which key gives the rotated part of a head.
enum class partial_rule : unsigned char {
  full,                   ///< every dimension rotates (a partial_rotary_factor key is still honoured)
  partial_rotary_factor,  ///< R = floor(head_dim * partial_rotary_factor)
  rotary_pct,             ///< GPT-NeoX: R = floor(head_dim * rotary_pct)
  rotary_dim,             ///< GPT-J: R = rotary_dim
  qk_rope_head_dim,       ///< DeepSeek MLA: [nope | rope] per head, R = qk_rope_head_dim
};

/// How the layers are assigned their attention kind when the config has no `layer_types`.
enum class layer_rule : unsigned char {
  uniform,                            ///< every layer full attention; a sliding_window key is not read by the model
  sliding_all,                        ///< every layer slides when sliding_window is set (Mistral, Phi-3, Starcoder2)
  max_window_layers,                  ///< Qwen2: layer i slides iff use_sliding_window and i >= max_window_layers
  alternate_below_max_window_layers,  ///< Qwen2-MoE: use_sliding_window, i < max_window_layers and i even
  use_sliding_window_all,             ///< Qwen3-MoE: every layer slides iff use_sliding_window
  period,            ///< sliding iff (i + 1) % sliding_window_pattern != 0 (Gemma 2/3, Cohere2, gpt-oss)
  nope_interval,     ///< Llama 4 / SmolLM3: layer i is NoPE iff no_rope_layers[i] == 0 (default every 4th)
  hybrid_interval,   ///< Qwen3-Next: linear attention iff (i + 1) % full_attention_interval != 0
  hybrid_alternate,  ///< MiniMax: full attention iff (i + 1) % 2 != 0, else linear attention
};

/// Which layers skip RoPE.
enum class nope_rule : unsigned char {
  none,                   ///< every attention layer rotates
  non_sliding,            ///< Cohere2: only sliding layers rotate
  non_sliding_if_window,  ///< EXAONE 4: with a sliding window, only sliding layers rotate
  no_rope_layers,         ///< Llama 4 / SmolLM3: no_rope_layers[i] == 0
};

/// The multiplier of q.k before the softmax (before any encoder correction such as YaRN mscale²).
enum class scale_rule : unsigned char {
  head_dim,               ///< head_dim^-0.5
  query_pre_attn_scalar,  ///< Gemma 2/3: query_pre_attn_scalar^-0.5
  attention_multiplier,   ///< Granite: attention_multiplier
  qk_head_dim,        ///< DeepSeek: (qk_nope_head_dim + qk_rope_head_dim)^-0.5 (YaRN mscale²: see mscale2_hf/_gguf)
  mpt_softmax_scale,  ///< MPT: attn_config.softmax_scale, else head_dim^-0.5
  unscaled,           ///< T5: 1
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
  layer_rule layers = layer_rule::uniform;
  int default_period = 0;                        ///< class default of the pattern / interval
  std::optional<std::int64_t> default_window{};  ///< class default of sliding_window
  int default_max_window_layers = 0;             ///< Qwen2 family
  nope_rule nope = nope_rule::none;
  bool chunked = false;  ///< attention_chunk_size on the RoPE layers (Llama 4)
  std::optional<std::int64_t> default_chunk{};
  scale_rule scale = scale_rule::head_dim;
  /// The softmax scale is multiplied by YaRN get_mscale(s, mscale_all_dim)^2 (DeepSeek-V3 modeling); without
  /// it a YaRN mscale / mscale_all_dim pair only sets the rotary magnitude (their ratio).
  bool mscale2_hf = false;
  bool mscale2_gguf = false;           ///< the same for llama.cpp's graph (deepseek2: kq_scale = mscale^2 / sqrt(d))
  bool reads_rope_interleave = false;  ///< the modeling code reads rope_interleave (DeepSeek-V3)
  double default_scale_param = 0;      ///< class default query_pre_attn_scalar / attention_multiplier
  bool softcap = false;                ///< reads attn_logit_softcapping / final_logit_softcapping
  std::optional<double> default_attn_softcap{};
  std::optional<double> default_final_softcap{};
  bool sinks = false;               ///< learned per-head sink logits (gpt-oss)
  bool llama4_temperature = false;  ///< attn_temperature_tuning on the NoPE layers
  bool local_base = false;          ///< rope_local_base_freq for the sliding layers (Gemma 3)
  double default_local_theta = 0;
  bool mrope = false;  ///< multimodal RoPE sections (text positions: plain RoPE)
  bool mrope_interleaved = false;
  bool gguf_reads_window = true;        ///< llama.cpp reads {arch}.attention.sliding_window for this architecture
  bool gguf_mrope_interleaved = false;  ///< llama.cpp rotates the mRoPE sections interleaved (IMROPE)
  int gguf_period_block_count = 0;      ///< llama.cpp applies the built-in pattern only at this block_count (EXAONE 4)
  bool per_layer_bias = false;
  bool longrope_mscale = false;  ///< LongRoPE magnitude from rope_scaling.short_mscale / long_mscale (Phi-MoE)  ///< T5
                                 ///< buckets: every layer has its own bias table (UMT5), else layer 0's is shared
  /// rope_parameters the config class sets when a config has neither rope_parameters nor rope_scaling, as
  /// comma-separated key=value pairs (a value with a '.' is a number, digits an integer, else a string)
  std::string_view default_rope_parameters{};
  std::string_view refused{};  ///< what posenc refuses for this family (config_error), "" if nothing
  std::string_view sources{};  ///< the reference files this row was read from
};

/// Keys posenc reads and reports in `warnings` because they do not change the attention it computes:
/// what they act on is outside it (projections, embeddings, the LM head) or the family's reference
/// does not read them. (key, why) pairs, for docs/configs.md.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 11> no_effect_keys{{
    {"use_qk_norm / qk_layernorm", "norms on the q/k projections: the caller's, before attention"},
    {"attn_config.clip_qkv", "MPT clamps the q/k/v projections: the caller's, before attention"},
    {"logit_scale / logits_scaling", "Cohere / Granite multiply the LM-head logits"},
    {"embedding_multiplier / residual_multiplier", "Granite's embedding and residual scales"},
    {"sliding_window (uniform families)", "Llama-style models attend fully; their modeling code does not read it"},
    {"sliding_window_pattern (families without a pattern)", "not read by the family's modeling code"},
    {"no_rope_layers (families without NoPE layers)", "not read by the family's modeling code"},
    {"rope_local_base_freq (families other than Gemma 3)", "not read by the family's modeling code"},
    {"query_pre_attn_scalar (families other than Gemma 2/3)", "the scale stays head_dim^-0.5"},
    {"attention_multiplier (families other than Granite)", "not read by the family's modeling code"},
    {"floor_scale / attn_scale without attn_temperature_tuning", "Llama 4 applies no temperature then"},
}};

namespace detail::arch {

using P = pairing;
inline constexpr P half = P::half_split;
inline constexpr P inter = P::interleaved;
// Commits of the versions read (the reference index stores several per file).
#define POSENC_HF_V5 "transformers@008e574391258935f3ecc3035c882e73bbcac419"

/// The table. Rows sharing an HF model_type are told apart by `variant` in find_hf_architecture.
inline constexpr std::array<architecture, 52> table{{
    {.family = "Llama 1-3",
     .hf_model_type = "llama",
     .gguf_arch = "llama",
     .gguf_layout = inter,
     .sources = "models/llama/modeling_llama.py (rotate_half on halves); convert_hf_to_gguf.py LlamaModel.permute; "
                "src/llama-model.cpp llama_model_rope_type NORM"},
    {.family = "Llama 4",
     .hf_model_type = "llama4",
     .hf_aliases = "llama4_text",
     .gguf_arch = "llama4",
     .hf_layout = inter,
     .gguf_layout = inter,
     .default_theta = 500000,
     .default_head_dim = 128,
     .layers = layer_rule::nope_interval,
     .default_period = 4,
     .nope = nope_rule::no_rope_layers,
     .chunked = true,
     .default_chunk = 8192,
     .llama4_temperature = true,
     .sources =
         "models/llama4/configuration_llama4.py " POSENC_HF_V5
         " (default_theta 500000, no_rope_layer_interval 4, attention_chunk_size 8192, layer_types "
         "chunked_attention on RoPE layers, floor_scale 8192, attn_scale 0.1); modeling_llama4.py view_as_complex"},
    {.family = "Mistral",
     .hf_model_type = "mistral",
     .hf_aliases = "mistral3",
     .layers = layer_rule::sliding_all,
     .default_window = 4096,
     .sources = "models/mistral/configuration_mistral.py transformers@001f85b38fb432858ace93f18622f07cec46d874 "
                "(sliding_window default 4096); models/mistral3/configuration_mistral3.py "
                "transformers@0db25542f2190e3dd1e402c477fa713ed516d655 (text_config model_type defaults to mistral); "
                "GGUF: arch llama"},
    {.family = "Ministral",
     .hf_model_type = "ministral",
     .layers = layer_rule::sliding_all,
     .default_window = 4096,
     .sources = "models/ministral/configuration_ministral.py transformers@052b1dcdbe751ed16e8da95261021318f170a130 "
                "(rope_theta 10000, sliding_window 4096, layer_types: every layer sliding iff sliding_window is set)"},
    {.family = "Ministral 3",
     .hf_model_type = "ministral3",
     .gguf_arch = "mistral3",
     .gguf_layout = inter,
     .default_theta = 1000000,
     .default_head_dim = 128,
     .layers = layer_rule::sliding_all,
     .default_rope_parameters = "rope_type=yarn,rope_theta=1000000.0,factor=16.0,original_max_position_embeddings="
                                "16384,beta_fast=32.0,beta_slow=1.0,mscale_all_dim=1.0,mscale=1.0,"
                                "llama_4_scaling_beta=0.1",
     .sources = "models/ministral3/configuration_ministral3.py " POSENC_HF_V5
                " (head_dim 128, sliding_window None, absent rope_parameters: YaRN factor 16 over 16384, theta 1e6, "
                "mscale = mscale_all_dim = 1, llama_4_scaling_beta 0.1); modular_ministral3.py "
                "transformers@00b364c707dac287e81ab6a952c386246a1025f3 (_get_llama_4_attn_scale on every layer, "
                "scale head_dim^-0.5, config.sliding_window on every layer)"},
    {.family = "Mixtral",
     .hf_model_type = "mixtral",
     .default_theta = 1000000,
     .layers = layer_rule::sliding_all,
     .sources = "models/mixtral/configuration_mixtral.py (rope_theta 1e6, sliding_window None); GGUF: arch llama"},
    {.family = "Qwen2 / Qwen2.5",
     .hf_model_type = "qwen2",
     .gguf_arch = "qwen2",
     .layers = layer_rule::max_window_layers,
     .default_window = 4096,
     .default_max_window_layers = 28,
     .sources = "models/qwen2/configuration_qwen2.py " POSENC_HF_V5
                " (layer_types: sliding iff use_sliding_window and i >= max_window_layers; sliding_window 4096, "
                "max_window_layers 28); modeling_qwen2.py transformers@00d4b3d2142cb4ced2f51b90614b5d26bc045015 "
                "(sliding_window on the sliding_attention layers)"},
    {.family = "Qwen2-MoE",
     .hf_model_type = "qwen2_moe",
     .gguf_arch = "qwen2moe",
     .layers = layer_rule::alternate_below_max_window_layers,
     .default_window = 4096,
     .default_max_window_layers = 28,
     .sources = "models/qwen2_moe/configuration_qwen2_moe.py " POSENC_HF_V5
                " (layer_types: sliding iff (i + 1) % 2, i < max_window_layers and use_sliding_window; sliding_window "
                "4096, 0 when off); modular_qwen2_moe.py transformers@001f85b38fb432858ace93f18622f07cec46d874 "
                "(sliding_window on the sliding_attention layers)"},
    {.family = "Qwen3",
     .hf_model_type = "qwen3",
     .gguf_arch = "qwen3",
     .default_head_dim = 128,
     .layers = layer_rule::max_window_layers,
     .default_window = 4096,
     .default_max_window_layers = 28,
     .sources = "models/qwen3/configuration_qwen3.py " POSENC_HF_V5
                " (head_dim 128, layer_types: sliding iff use_sliding_window and i >= max_window_layers); "
                "modular_qwen3.py transformers@02e8340b967815b4a5417c6273a7774aae298a03 (sliding_window on the "
                "sliding_attention layers)"},
    {.family = "Qwen3-MoE",
     .hf_model_type = "qwen3_moe",
     .gguf_arch = "qwen3moe",
     .layers = layer_rule::use_sliding_window_all,
     .default_window = 4096,
     .sources =
         "models/qwen3_moe/configuration_qwen3_moe.py " POSENC_HF_V5
         " (no head_dim, max_window_layers or layer_types; sliding_window 4096 if use_sliding_window else None); "
         "modular_qwen3_moe.py transformers@00eb1166685205e8b2c75ab33eee83dc77b18fca (every layer: "
         "sliding_window = config.sliding_window)"},
    {.family = "Qwen3-Next",
     .hf_model_type = "qwen3_next",
     .gguf_arch = "qwen3next",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.25,
     .default_head_dim = 256,
     .layers = layer_rule::hybrid_interval,
     .default_period = 4,
     .sources = "models/qwen3_next/configuration_qwen3_next.py " POSENC_HF_V5
                " (partial_rotary_factor 0.25, full_attention_interval 4, linear_attention layers)"},
    {.family = "Qwen3.5",
     .hf_model_type = "qwen3_5_text",
     .hf_aliases = "qwen3_5,qwen3_5_moe,qwen3_5_moe_text",
     .gguf_arch = "qwen35",
     .gguf_aliases = "qwen35moe",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.25,
     .default_head_dim = 256,
     .layers = layer_rule::hybrid_interval,
     .default_period = 4,
     .mrope = true,
     .gguf_mrope_interleaved = true,
     .sources = "models/qwen3_5/configuration_qwen3_5.py " POSENC_HF_V5
                " (head_dim 256, partial_rotary_factor 0.25, full_attention_interval 4, linear_attention layers, "
                "mrope_section / mrope_interleaved); llama.cpp src/llama-arch.cpp "
                "llama.cpp@00395eb285c7c6821ff372e3ca41dae9da33c2c7 (qwen35, qwen35moe)"},
    {.family = "Qwen2-VL",
     .hf_model_type = "qwen2_vl",
     .hf_aliases = "qwen2_vl_text",
     .gguf_arch = "qwen2vl",
     .default_theta = 1000000,
     .layers = layer_rule::max_window_layers,
     .default_window = 4096,
     .default_max_window_layers = 80,
     .mrope = true,
     .sources = "models/qwen2_vl/configuration_qwen2_vl.py (mrope_section)"},
    {.family = "Qwen2.5-VL",
     .hf_model_type = "qwen2_5_vl",
     .hf_aliases = "qwen2_5_vl_text",
     .gguf_arch = "qwen2vl",
     .default_theta = 1000000,
     .layers = layer_rule::max_window_layers,
     .default_window = 4096,
     .default_max_window_layers = 80,
     .mrope = true,
     .sources = "models/qwen2_5_vl/configuration_qwen2_5_vl.py"},
    {.family = "Qwen3-VL",
     .hf_model_type = "qwen3_vl",
     .hf_aliases = "qwen3_vl_text,qwen3_vl_moe",
     .gguf_arch = "qwen3vl",
     .gguf_aliases = "qwen3vlmoe",
     .default_theta = 5000000,
     .mrope = true,
     .mrope_interleaved = true,
     .sources = "models/qwen3_vl/modeling_qwen3_vl.py (interleaved mRoPE)"},
    {.family = "Gemma",
     .hf_model_type = "gemma",
     .gguf_arch = "gemma",
     .default_head_dim = 256,
     .sources = "models/gemma/configuration_gemma.py " POSENC_HF_V5 " (head_dim 256, rope default theta 10000)"},
    {.family = "Gemma 2",
     .hf_model_type = "gemma2",
     .gguf_arch = "gemma2",
     .default_head_dim = 256,
     .layers = layer_rule::period,
     .default_period = 2,
     .default_window = 4096,
     .scale = scale_rule::query_pre_attn_scalar,
     .default_scale_param = 256,
     .softcap = true,
     .default_attn_softcap = 50.0,
     .default_final_softcap = 30.0,
     .sources = "models/gemma2/configuration_gemma2.py " POSENC_HF_V5
                " (query_pre_attn_scalar 256, sliding_window 4096, layer_types even layers slide, "
                "attn_logit_softcapping 50, final_logit_softcapping 30); llama.cpp llama_load_hparams_gemma2 "
                "(46 layers: scale 1/sqrt(n_embd/n_head))"},
    {.family = "Gemma 3",
     .hf_model_type = "gemma3_text",
     .hf_aliases = "gemma3",
     .gguf_arch = "gemma3",
     .default_theta = 1000000,
     .default_head_dim = 256,
     .layers = layer_rule::period,
     .default_period = 6,
     .default_window = 4096,
     .scale = scale_rule::query_pre_attn_scalar,
     .default_scale_param = 256,
     .softcap = true,
     .local_base = true,
     .default_local_theta = 10000,
     .sources = "models/gemma3/configuration_gemma3.py transformers@008f5c8c29be84d4721dc6d1e0fcd72300580be4 "
                "(rope_theta 1e6, rope_local_base_freq 1e4, sliding_window_pattern 6, sliding_window 4096, "
                "query_pre_attn_scalar 256, softcapping None); llama.cpp gemma3 set_swa_pattern(6), 62 layers: "
                "scale 1/sqrt(n_embd/n_head)"},
    {.family = "Phi-2",
     .hf_model_type = "phi",
     .gguf_arch = "phi2",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.5,
     .sources = "models/phi/configuration_phi.py (partial_rotary_factor 0.5)"},
    {.family = "Phi-3 / Phi-3.5",
     .hf_model_type = "phi3",
     .gguf_arch = "phi3",
     .partial = partial_rule::partial_rotary_factor,
     .layers = layer_rule::sliding_all,
     .sources = "models/phi3/configuration_phi3.py (sliding_window, partial_rotary_factor 1); llama.cpp phi3 "
                "is_sliding = n_swa > 0"},
    {.family = "Cohere / Command-R",
     .hf_model_type = "cohere",
     .gguf_arch = "command-r",
     .hf_layout = inter,
     .gguf_layout = inter,
     .sources = "models/cohere/modeling_cohere.py transformers@015bfeb86891c5f5e450f48942260ac3e2cd2bf2 "
                "(rotate_half on x[..., ::2], x[..., 1::2], repeat_interleave of the frequencies, scaling "
                "head_dim^-0.5)"},
    {.family = "Cohere2 / Command-R7B",
     .hf_model_type = "cohere2",
     .gguf_arch = "cohere2",
     .hf_layout = inter,
     .gguf_layout = inter,
     .layers = layer_rule::period,
     .default_period = 4,
     .default_window = 4096,
     .nope = nope_rule::non_sliding,
     .sources = "models/cohere2/configuration_cohere2.py " POSENC_HF_V5
                " (sliding_window 4096, sliding_window_pattern 4); modeling_cohere2.py "
                "transformers@015bfeb86891c5f5e450f48942260ac3e2cd2bf2 (RoPE only when sliding_window is not None; "
                "interleaved rotate_half)"},
    {.family = "DeepSeek-V2",
     .hf_model_type = "deepseek_v2",
     .gguf_arch = "deepseek2",
     .hf_layout = inter,
     .gguf_layout = inter,
     .partial = partial_rule::qk_rope_head_dim,
     .scale = scale_rule::qk_head_dim,
     .mscale2_gguf = true,
     .sources = "models/deepseek_v2/modular_deepseek_v2.py transformers@000c33fdfde12e1ffafbfcdb3c926df5727a00b6 "
                "(view_as_complex pairs, scaling = qk_head_dim^-0.5 without mscale^2, the YaRN ratio in the "
                "rotation); llama.cpp src/models/deepseek2.cpp llama.cpp@07bede6a8f329362c72d46a0bc9756b6a12c22eb "
                "(kq_scale = mscale^2 / sqrt(n_embd_head_k), mscale = 1 + 0.1 yarn_log_mul ln(factor)) and "
                "src/llama-context.cpp llama.cpp@001d906a6d86e2490e394361e7cc6f478b100088 (deepseek2: rotary "
                "magnitude 1)"},
    {.family = "DeepSeek-V3",
     .hf_model_type = "deepseek_v3",
     .gguf_arch = "deepseek2",
     .hf_layout = inter,
     .gguf_layout = inter,
     .partial = partial_rule::qk_rope_head_dim,
     .scale = scale_rule::qk_head_dim,
     .mscale2_hf = true,
     .mscale2_gguf = true,
     .reads_rope_interleave = true,
     .sources = "models/deepseek_v3/configuration_deepseek_v3.py transformers@001f85b38fb432858ace93f18622f07cec46d874 "
                "(rope_interleave default True); modeling_deepseek_v3.py (interleaved pairs iff rope_interleave, "
                "else rotate_half; scaling * mscale * mscale); llama.cpp deepseek2 as DeepSeek-V2"},
    {.family = "GLM-4",
     .hf_model_type = "glm4",
     .hf_aliases = "glm",
     .gguf_arch = "glm4",
     .hf_layout = inter,
     .gguf_layout = inter,
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.5,
     .default_head_dim = 128,
     .sources = "models/glm4/configuration_glm4.py " POSENC_HF_V5
                " (head_dim 128, partial_rotary_factor 0.5); models/glm/configuration_glm.py (head_dim 128); "
                "models/glm4/modeling_glm4.py transformers@00d01786ab67861791c57a11f3fca93e342c9e2d "
                "(rotate_half on x[..., 0::2], x[..., 1::2] over the rotary prefix)"},
    {.family = "GLM-4.5 (MoE)",
     .hf_model_type = "glm4_moe",
     .gguf_arch = "glm4moe",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.5,
     .sources = "models/glm4_moe/modeling_glm4_moe.py transformers@000c33fdfde12e1ffafbfcdb3c926df5727a00b6 "
                "(Llama rotate_half on the rotary prefix)"},
    {.family = "gpt-oss",
     .hf_model_type = "gpt_oss",
     .gguf_arch = "gpt-oss",
     .default_theta = 150000,
     .default_head_dim = 64,
     .layers = layer_rule::period,
     .default_period = 2,
     .default_window = 128,
     .sinks = true,
     .sources = "models/gpt_oss/configuration_gpt_oss.py transformers@02b8f42b4240dddea1b27c45d2dc95fb2682f841 "
                "(default_theta 150000, sliding_window 128, even layers slide, YaRN 32 default rope_parameters)"},
    {.family = "OLMo",
     .hf_model_type = "olmo",
     .gguf_arch = "olmo",
     .gguf_layout = inter,
     .sources = "models/olmo/modeling_olmo.py"},
    {.family = "OLMo 2", .hf_model_type = "olmo2", .gguf_arch = "olmo2", .sources = "models/olmo2/modeling_olmo2.py"},
    {.family = "EXAONE 4",
     .hf_model_type = "exaone4",
     .gguf_arch = "exaone4",
     .layers = layer_rule::period,
     .default_period = 4,
     .default_window = 4096,
     .nope = nope_rule::non_sliding_if_window,
     .gguf_period_block_count = 64,
     .sources =
         "models/exaone4/configuration_exaone4.py " POSENC_HF_V5
         " (sliding_window 4096, sliding_window_pattern 4: sliding iff (i + 1) % pattern != 0); llama.cpp "
         "conversion/exaone.py llama.cpp@051139f511300aaf6159294433fab91c73ef7455 (a letter pattern: layer i slides "
         "iff pattern[i % len] == 'L'); modeling_exaone4.py transformers@0205eec1d869591488aa74eda3f2da23610c28d9 "
         "(RoPE iff sliding_window is None or the layer slides); llama.cpp src/llama-model.cpp "
         "llama.cpp@00342301d01add50835550e8a916f12097d94517 (exaone4: n_swa 4096 and set_swa_pattern(4) only for "
         "64 layers) and src/models/exaone4.cpp llama.cpp@0f7288922039b9231e22f3ab85ff78b62778c3a1 (RoPE iff "
         "the layer slides or no SWA)"},
    {.family = "SmolLM3",
     .hf_model_type = "smollm3",
     .gguf_arch = "smollm3",
     .gguf_layout = inter,
     .default_theta = 2000000,
     .layers = layer_rule::nope_interval,
     .default_period = 4,
     .nope = nope_rule::no_rope_layers,
     .sources = "models/smollm3/configuration_smollm3.py " POSENC_HF_V5
                " (no_rope_layer_interval 4, sliding only on NoPE layers with use_sliding_window); "
                "modeling_smollm3.py (Llama rotate_half)"},
    {.family = "Granite",
     .hf_model_type = "granite",
     .gguf_arch = "granite",
     .gguf_layout = inter,
     .scale = scale_rule::attention_multiplier,
     .default_scale_param = 1.0,
     .sources = "models/granite/configuration_granite.py " POSENC_HF_V5
                " (attention_multiplier 1.0 is the softmax scale); GGUF {arch}.attention.scale"},
    {.family = "Granite MoE",
     .hf_model_type = "granitemoe",
     .gguf_arch = "granitemoe",
     .gguf_layout = inter,
     .scale = scale_rule::attention_multiplier,
     .default_scale_param = 1.0,
     .sources = "models/granitemoe/configuration_granitemoe.py (attention_multiplier)"},
    {.family = "ERNIE 4.5",
     .hf_model_type = "ernie4_5",
     .hf_aliases = "ernie4_5_moe",
     .gguf_arch = "ernie4_5",
     .gguf_aliases = "ernie4_5-moe",
     .hf_layout = inter,
     .gguf_layout = inter,
     .default_theta = 500000,
     .default_head_dim = 128,
     .sources = "models/ernie4_5/configuration_ernie4_5.py " POSENC_HF_V5
                " (default_theta 500000, head_dim 128); modeling_ernie4_5.py "
                "transformers@016bc8ef0876cf366e321dfe1922500c897a0d90 (interleaved rotate_half); llama.cpp "
                "src/llama-arch.cpp llama.cpp@00395eb285c7c6821ff372e3ca41dae9da33c2c7 (ernie4_5-moe)"},
    {.family = "StableLM",
     .hf_model_type = "stablelm",
     .gguf_arch = "stablelm",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.25,
     .sources = "models/stablelm/configuration_stablelm.py (partial_rotary_factor 0.25)"},
    {.family = "GPT-NeoX / Pythia",
     .hf_model_type = "gpt_neox",
     .gguf_arch = "gptneox",
     .partial = partial_rule::rotary_pct,
     .default_partial = 0.25,
     .sources = "models/gpt_neox/configuration_gpt_neox.py (rotary_pct 0.25, rotary_emb_base 10000)"},
    {.family = "GPT-J",
     .hf_model_type = "gptj",
     .hf_layout = inter,
     .gguf_layout = inter,
     .partial = partial_rule::rotary_dim,
     .default_partial = 64,
     .sources = "models/gptj/modeling_gptj.py (rotate_every_two, rotary_dim 64)"},
    {.family = "Falcon (RoPE)",
     .hf_model_type = "falcon",
     .gguf_arch = "falcon",
     .sources = "models/falcon/modeling_falcon.py (alibi false: Llama-style rotary)"},
    {.family = "Falcon (ALiBi)",
     .hf_model_type = "falcon",
     .positional = positional_family::alibi,
     .refused = "alibi: Falcon scales its ALiBi bias by head_dim^-0.5 together with q.k, which posenc's ALiBi "
                "(an unscaled bias) does not model",
     .sources = "models/falcon/modeling_falcon.py (attention_logits = scores + alibi; attention_logits *= "
                "inv_norm_factor)"},
    {.family = "BLOOM",
     .hf_model_type = "bloom",
     .gguf_arch = "bloom",
     .positional = positional_family::alibi,
     .sources = "models/bloom/modeling_bloom.py (baddbmm beta 1 on alibi, alpha inv_norm_factor on q.k)"},
    {.family = "MPT",
     .hf_model_type = "mpt",
     .gguf_arch = "mpt",
     .positional = positional_family::alibi,
     .scale = scale_rule::mpt_softmax_scale,
     .sources = "models/mpt/modeling_mpt.py (attn_config.alibi, alibi_bias_max 8, softmax_scale)"},
    {.family = "T5",
     .hf_model_type = "t5",
     .hf_aliases = "mt5,switch_transformers",
     .gguf_arch = "t5",
     .positional = positional_family::t5_buckets,
     .scale = scale_rule::unscaled,
     .sources = "models/t5/modeling_t5.py (no 1/sqrt(d) scaling; relative_attention_bias on layer 0, shared)"},
    {.family = "UMT5",
     .hf_model_type = "umt5",
     .positional = positional_family::t5_buckets,
     .scale = scale_rule::unscaled,
     .per_layer_bias = true,
     .sources = "models/umt5/modeling_umt5.py (UMT5Attention always has_relative_attention_bias: a bucket table in "
                "every layer; no 1/sqrt(d) scaling)"},
    {.family = "LongT5",
     .hf_model_type = "longt5",
     .positional = positional_family::t5_buckets,
     .scale = scale_rule::unscaled,
     .refused = "encoder_attention_type: LongT5's encoder attends locally or with transient-global tokens, which "
                "posenc does not model",
     .sources = "models/longt5/modeling_longt5.py (LongT5LocalAttention / LongT5TransientGlobalAttention by "
                "encoder_attention_type)"},
    {.family = "Starcoder2",
     .hf_model_type = "starcoder2",
     .gguf_arch = "starcoder2",
     .layers = layer_rule::sliding_all,
     .gguf_reads_window = false,
     .sources = "models/starcoder2/configuration_starcoder2.py " POSENC_HF_V5
                " (sliding_window None by default); llama.cpp llama_load_hparams_starcoder2 reads no window"},
    {.family = "Persimmon",
     .hf_model_type = "persimmon",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.5,
     .default_theta = 25000,
     .sources = "models/persimmon/configuration_persimmon.py (rope_theta 25000, partial_rotary_factor 0.5)"},
    {.family = "MiniMax",
     .hf_model_type = "minimax",
     .default_theta = 1000000,
     .layers = layer_rule::hybrid_alternate,
     .default_period = 2,
     .sources = "models/minimax/configuration_minimax.py " POSENC_HF_V5
                " (default_theta 1e6, layer_types full iff (i + 1) % 2, else linear_attention)"},
    {.family = "GPT-2",
     .hf_model_type = "gpt2",
     .gguf_arch = "gpt2",
     .positional = positional_family::learned,
     .sources = "models/gpt2/modeling_gpt2.py (wpe learned absolute positions)"},
    {.family = "Marian",
     .hf_model_type = "marian",
     .positional = positional_family::sinusoidal,
     .sources = "models/marian/modeling_marian.py (MarianSinusoidalPositionalEmbedding)"},
    {.family = "InternLM2",
     .hf_model_type = "internlm2",
     .gguf_arch = "internlm2",
     .gguf_layout = inter,
     .sources = "remote code InternLM2 (Llama rotate_half); llama.cpp NORM after permute"},
    {.family = "Phi-MoE",
     .hf_model_type = "phimoe",
     .gguf_arch = "phimoe",
     .default_theta = 1000000,
     .layers = layer_rule::sliding_all,
     .longrope_mscale = true,
     .sources = "models/phimoe/configuration_phimoe.py transformers@040e1a7e4bb4f48ff62dfbbb1f6f8eff23e894ac "
                "(rope_theta 1e6, sliding_window None); modeling_phimoe.py (PhimoeRotaryEmbedding: the rotary "
                "magnitude is long_mscale beyond original_max_position_embeddings, else short_mscale)"},
    {.family = "OLMoE", .hf_model_type = "olmoe", .gguf_arch = "olmoe", .sources = "models/olmoe/modeling_olmoe.py"},
}};

#undef POSENC_HF_V5

inline bool in_list(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const auto c = list.find(',');
    if (list.substr(0, c) == name) return true;
    if (c == std::string_view::npos) break;
    list.remove_prefix(c + 1);
  }
  return false;
}

}  // namespace detail::arch

/// Every row of the table.
[[nodiscard]] constexpr const auto& architectures() noexcept {
  return detail::arch::table;
}

/// The row for an HF model_type; `alibi` picks Falcon's ALiBi variant. nullptr when unknown.
[[nodiscard]] inline const architecture* find_hf_architecture(std::string_view model_type, bool alibi = false) {
  for (const auto& a : detail::arch::table) {
    if (a.hf_model_type != model_type && !detail::arch::in_list(a.hf_aliases, model_type)) continue;
    if (model_type == "falcon" && (a.positional == positional_family::alibi) != alibi) continue;
    return &a;
  }
  return nullptr;
}

/// The row for a llama.cpp architecture name (the first row naming it). nullptr when unknown.
[[nodiscard]] inline const architecture* find_gguf_architecture(std::string_view arch) {
  for (const auto& a : detail::arch::table)
    if (!a.gguf_arch.empty() && (a.gguf_arch == arch || detail::arch::in_list(a.gguf_aliases, arch))) return &a;
  return nullptr;
}

}  // namespace posenc::inline v0
