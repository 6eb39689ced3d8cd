// posenc/config/architectures.hpp — the architecture table: one row per model family, the only place
// the loaders learn what a family does with positions and attention.
//
// Columns: config/architecture.hpp. The values were read from the reference code: transformers
// configuration_*.py / modeling_*.py (files named in each row's `sources`, with the commit of the
// version read) and llama.cpp's converter (convert_hf_to_gguf.py) and loader (src/llama-model.cpp,
// src/llama-arch.cpp, src/models/*.cpp). A family posenc cannot run exactly is a row too, with the
// reason it is refused. Adding a family that fits the rules is one row here and its conformance case
// (tests/golden/configs/conformance/). This header is data and lookups only; it reads no config.
// docs/configs.md carries the generated supported-models table (scripts/supported-models).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <posenc/config/architecture.hpp>

namespace posenc::inline v0 {

/// Keys posenc reads and reports in `warnings` because they do not change the attention it computes:
/// what they act on is outside it (projections, embeddings, the LM head) or the family's reference
/// does not read them. (key, why) pairs, for docs/configs.md.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 13> no_effect_keys{{
    {"use_qk_norm / qk_layernorm", "norms on the q/k projections: the caller's, before attention"},
    {"attn_config.clip_qkv", "MPT clamps the q/k/v projections: the caller's, before attention"},
    {"attention_value_scale", "MiMo-V2-Flash multiplies the value projection: the caller's, on V"},
    {"logit_scale / logits_scaling", "Cohere / Granite multiply the LM-head logits"},
    {"embedding_multiplier / residual_multiplier", "Granite's embedding and residual scales"},
    {"sliding_window (uniform families)", "Llama-style models attend fully; their modeling code does not read it"},
    {"sliding_window_pattern (families without a pattern)", "not read by the family's modeling code"},
    {"no_rope_layers (families without NoPE layers)", "not read by the family's modeling code"},
    {"rope_local_base_freq (families other than Gemma 3)", "not read by the family's modeling code"},
    {"query_pre_attn_scalar (families that scale by head_dim)", "the scale stays head_dim^-0.5"},
    {"attention_multiplier (families other than Granite)", "not read by the family's modeling code"},
    {"partial_rotary_factor (families that rotate the whole head)", "not read by the family's modeling code"},
    {"floor_scale / attn_scale without attn_temperature_tuning", "Llama 4 applies no temperature then"},
}};

namespace detail::arch {

using P = pairing;
inline constexpr P half = P::half_split;
inline constexpr P inter = P::interleaved;
// Commits of the versions read (the reference index stores several per file).
#define POSENC_HF_V5 "transformers@008e574391258935f3ecc3035c882e73bbcac419"

/// The table. Rows sharing an HF model_type are told apart by `variant` in find_hf_architecture.
inline constexpr std::array<architecture, 186> table{{
    {.family = "Llama 1-3",
     .hf_model_type = "llama",
     .hf_aliases = "aria_text,aria",
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
    {.family = "OLMo Hybrid",
     .hf_model_type = "olmo_hybrid",
     .layers = layer_rule::hybrid_interval,
     .default_period = 4,
     .nope = nope_rule::null_theta,
     .sources =
         "models/olmo_hybrid/configuration_olmo_hybrid.py and modeling_olmo_hybrid.py transformers@decba1d2 "
         "(layer_types: full_attention iff i % 4 == 3, else linear_attention (GatedDeltaNet); head_dim = "
         "hidden_size / heads; Olmo3Attention, head_dim^-0.5; no rotary embedding when rope_theta is None, as the "
         "released checkpoints write it)"},
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
     .hf_aliases = "qwen3_vl_text",
     .gguf_arch = "qwen3vl",
     .gguf_aliases = "qwen3vlmoe",
     .default_theta = 500000,
     .default_head_dim = 128,
     .mrope = true,
     .mrope_interleaved = true,
     .sources = "models/qwen3_vl/configuration_qwen3_vl.py transformers@decba1d2 (Qwen3VLTextConfig: default_theta "
                "500000, head_dim 128); modeling_qwen3_vl.py (interleaved mRoPE)"},
    {.family = "Gemma",
     .hf_model_type = "gemma",
     .gguf_arch = "gemma",
     .default_head_dim = 256,
     .sources = "models/gemma/configuration_gemma.py " POSENC_HF_V5 " (head_dim 256, rope default theta 10000)"},
    {.family = "Gemma 2",
     .hf_model_type = "gemma2",
     .hf_aliases = "vaultgemma",
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
                "(46 layers: scale 1/sqrt(n_embd/n_head)); VaultGemma: models/vaultgemma/modular_vaultgemma.py "
                "transformers@decba1d2 (Gemma2Config and Gemma2Attention, always causal)"},
    {.family = "Gemma 3",
     .hf_model_type = "gemma3_text",
     .hf_aliases = "gemma3",
     .gguf_arch = "gemma3",
     .default_theta = 1000000,
     .default_head_dim = 256,
     .layers = layer_rule::period,
     .default_period = 6,
     .default_window = 4096,
     .local_rope = local_rope_rule::local_base,
     .default_local_theta = 10000,
     .scale = scale_rule::query_pre_attn_scalar,
     .default_scale_param = 256,
     .softcap = true,
     .reads_bidirectional_key = true,
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
    {.family = "Phi-3 / Phi-3.5 / Phi-4",
     .hf_model_type = "phi3",
     .gguf_arch = "phi3",
     .partial = partial_rule::partial_rotary_factor,
     .layers = layer_rule::sliding_all,
     .scaling_renames = "yarn=longrope",
     .sources = "models/phi3/configuration_phi3.py (sliding_window, partial_rotary_factor 1); llama.cpp phi3 "
                "is_sliding = n_swa > 0; configuration_phi3.py transformers@decba1d2 convert_rope_params_to_dict (a "
                "rope_type \"su\" or \"yarn\" is LongRoPE)"},
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
    {.family = "Cohere2-MoE",
     .hf_model_type = "cohere2_moe",
     .hf_layout = inter,
     .default_head_dim = 128,
     .layers = layer_rule::period,
     .default_period = 4,
     .default_window = 4096,
     .nope = nope_rule::non_sliding_or_dense_prefix,
     .sources = "models/cohere2_moe/configuration_cohere2_moe.py and modular_cohere2_moe.py transformers@decba1d2 "
                "(head_dim 128, sliding_window 4096, sliding_window_pattern 4; Cohere2Attention: RoPE iff the layer "
                "slides or force_rope, a dense-MLP layer with prefix_dense_sliding_window_pattern 1; interleaved "
                "rotate_half)"},
    {.family = "DeepSeek-V2",
     .hf_model_type = "deepseek_v2",
     .gguf_arch = "deepseek2",
     .hf_layout = inter,
     .gguf_layout = inter,
     .partial = partial_rule::qk_rope_head_dim,
     .scale = scale_rule::qk_head_dim,
     .mscale2_hf = true,
     .mscale2_gguf = true,
     .sources =
         "models/deepseek_v2/modeling_deepseek_v2.py transformers@decba1d2 (view_as_complex pairs; lines "
         "289-295, 345: scaling = qk_head_dim^-0.5 * mscale^2 with mscale = yarn_get_mscale(factor, "
         "mscale_all_dim)); llama.cpp src/models/deepseek2.cpp llama.cpp@07bede6a8f329362c72d46a0bc9756b6a12c22eb "
         "(kq_scale = mscale^2 / sqrt(n_embd_head_k), mscale = 1 + 0.1 yarn_log_mul ln(factor)) and "
         "src/llama-context.cpp llama.cpp@001d906a6d86e2490e394361e7cc6f478b100088 (deepseek2: rotary "
         "magnitude 1)"},
    {.family = "DeepSeek-V3",
     .hf_model_type = "deepseek_v3",
     .hf_aliases = "glm4_moe_lite,youtu,axk1",
     .gguf_arch = "deepseek2",
     .hf_layout = inter,
     .gguf_layout = inter,
     .partial = partial_rule::qk_rope_head_dim,
     .scale = scale_rule::qk_head_dim,
     .mscale2_hf = true,
     .mscale2_gguf = true,
     .reads_rope_interleave = true,
     .sources =
         "models/deepseek_v3/configuration_deepseek_v3.py transformers@001f85b38fb432858ace93f18622f07cec46d874 "
         "(rope_interleave default True); modeling_deepseek_v3.py (interleaved pairs iff rope_interleave, "
         "else rotate_half; scaling * mscale * mscale); llama.cpp deepseek2 as DeepSeek-V2; GLM-4 MoE Lite: "
         "models/glm4_moe_lite/modular_glm4_moe_lite.py transformers@decba1d2 (DeepseekV3Attention); Youtu and A.X-K1: "
         "models/youtu/modular_youtu.py and models/axk1/modular_axk1.py transformers@decba1d2 (DeepseekV3Config, "
         "DeepseekV3Attention)"},
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
     .default_rope_parameters = "rope_type=yarn,factor=32.0,beta_fast=32.0,beta_slow=1.0,truncate=false,"
                                "original_max_position_embeddings=4096",
     .sources = "models/gpt_oss/configuration_gpt_oss.py transformers@02b8f42b4240dddea1b27c45d2dc95fb2682f841 "
                "(default_theta 150000, sliding_window 128, even layers slide); configuration_gpt_oss.py "
                "transformers@decba1d2 (absent rope_parameters: YaRN factor 32 over 4096, beta_fast 32, beta_slow 1, "
                "truncate False, rope_theta from the config or 150000)"},
    {.family = "OLMo",
     .hf_model_type = "olmo",
     .gguf_arch = "olmo",
     .gguf_layout = inter,
     .sources = "models/olmo/modeling_olmo.py"},
    {.family = "OLMo 2", .hf_model_type = "olmo2", .gguf_arch = "olmo2", .sources = "models/olmo2/modeling_olmo2.py"},
    {.family = "FlexOlmo",
     .hf_model_type = "flex_olmo",
     .default_theta = 500000,
     .sources = "models/flex_olmo/modular_flex_olmo.py transformers@decba1d2 (Olmo2Attention, default_theta 500000)"},
    {.family = "EXAONE 4",
     .hf_model_type = "exaone4",
     .hf_aliases = "exaone4_5,exaone4_5_text",
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
         "the layer slides or no SWA); EXAONE 4.5: models/exaone4_5/configuration_exaone4_5.py and "
         "modular_exaone4_5.py transformers@decba1d2 (text_config model_type exaone4 by default, exaone4_5_text "
         "renamed to it; 1D text positions)"},
    {.family = "GLM-4.1V / GLM-OCR",
     .hf_model_type = "glm4v",
     .hf_aliases = "glm4v_text,glm_ocr,glm_ocr_text",
     .hf_layout = inter,
     .partial = partial_rule::partial_rotary_factor,
     .mrope = true,
     .sources =
         "models/glm4v/configuration_glm4v.py and modeling_glm4v.py transformers@decba1d2 (Glm4vTextConfig: no "
         "head_dim or partial_rotary_factor defaults, theta 10000; Glm4vTextRotaryEmbedding: "
         "rope_parameters.partial_rotary_factor (default 1.0) of head_dim, mrope_section chunks taken from "
         "stream i % 3 (contiguous, default [8, 12, 12]); apply_rotary_pos_emb: cos[..., :half] "
         "repeat_interleave(2) with rotate_half_llm on x[..., 0::2], x[..., 1::2] (interleaved pairs) over the "
         "rotary prefix; Glm4vTextAttention: scaling head_dim^-0.5, full attention); GLM-OCR: "
         "models/glm_ocr/configuration_glm_ocr.py and modeling_glm_ocr.py transformers@decba1d2 (Glm4vTextConfig "
         "subclass, the same rotary embedding and apply_rotary_pos_emb)"},
    {.family = "GLM-4.5V (MoE)",
     .hf_model_type = "glm4v_moe",
     .hf_aliases = "glm4v_moe_text",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.5,
     .mrope = true,
     .sources = "models/glm4v_moe/configuration_glm4v_moe.py and modeling_glm4v_moe.py transformers@decba1d2 "
                "(Glm4vMoeTextConfig: partial_rotary_factor 0.5 by default, theta 10000; Glm4vMoeTextRotaryEmbedding: "
                "mrope_section chunks from stream i % 3 (contiguous, default [8, 12, 12]); apply_rotary_pos_emb: "
                "Llama rotate_half on the rotary prefix; scaling head_dim^-0.5, head_dim from the config or "
                "hidden_size / heads)"},
    {.family = "GLM-Image",
     .hf_model_type = "glm_image",
     .hf_aliases = "glm_image_text",
     .partial = partial_rule::partial_rotary_factor,
     .mrope = true,
     .sources = "models/glm_image/configuration_glm_image.py and modeling_glm_image.py transformers@decba1d2 "
                "(GlmImageTextConfig: a Glm4vTextConfig, no partial_rotary_factor default (1.0), theta 10000; "
                "GlmImageTextAttention is Glm4vMoeTextAttention: Llama rotate_half on the rotary prefix, scaling "
                "head_dim^-0.5; contiguous mrope_section chunks as GLM-4.1V)"},
    {.family = "Qwen3-VL-MoE",
     .hf_model_type = "qwen3_vl_moe_text",
     .hf_aliases = "qwen3_vl_moe",
     .default_theta = 500000,
     .mrope = true,
     .mrope_interleaved = true,
     .sources = "models/qwen3_vl_moe/configuration_qwen3_vl_moe.py and modeling_qwen3_vl_moe.py transformers@decba1d2 "
                "(Qwen3VLMoeTextConfig: default_theta 500000, head_dim None -> hidden_size / heads, sliding_window "
                "forced to None; Qwen3VLMoeTextRotaryEmbedding: apply_interleaved_mrope, default [24, 20, 20]; "
                "rotate_half; scaling head_dim^-0.5)"},
    {.family = "ERNIE 4.5 VL (MoE)",
     .hf_model_type = "ernie4_5_vl_moe",
     .hf_aliases = "ernie4_5_vl_moe_text",
     .hf_layout = inter,
     .default_theta = 500000,
     .refused = "mrope_section: ERNIE 4.5 VL's multimodal RoPE gives the h and w position streams alternate pairs over "
                "the first section[0] + section[1] pairs and the t stream the last section[2] pairs (its frequencies "
                "pre-permuted to match), a stream layout posenc's mRoPE (contiguous or interleaved sections) does not "
                "model",
     .sources = "models/ernie4_5_vl_moe/configuration_ernie4_5_vl_moe.py and modeling_ernie4_5_vl_moe.py "
                "transformers@decba1d2 (Ernie4_5_VLMoeTextRotaryEmbedding: compute_default_rope_parameters pre-rotates "
                "inv_freq[:-t_dim] into even then odd entries, recomposition_to_3d stacks h and w pair by pair and "
                "appends t, default mrope_section [22, 22, 20]; only rope_type default; rotate_half_text interleaved)"},
    {.family = "Kimi K2.5",
     .hf_model_type = "kimi_k25",
     .hf_aliases = "kimi_k2",
     .hf_layout = inter,
     .partial = partial_rule::qk_rope_head_dim,
     .scale = scale_rule::qk_head_dim,
     .mscale2_hf = true,
     .reads_rope_interleave = true,
     .sources =
         "models/kimi_k25/configuration_kimi_k25.py and modeling_kimi_k25.py transformers@decba1d2 "
         "(text_config model_type deepseek_v3 by default, kimi_k2 renamed to deepseek_v3; the language model "
         "is AutoModel.from_config(text_config)): DeepSeek-V3's rules, models/deepseek_v3/modeling_deepseek_v3.py"},
    {.family = "MiniMax-M3 VL",
     .hf_model_type = "minimax_m3_vl",
     .hf_aliases = "minimax_m3_vl_text",
     .default_theta = 5000000,
     .default_head_dim = 128,
     .refused = "layer_types: MiniMax-M3's minimax_m3_sparse layers keep, per query, the top index_topk_blocks key "
                "blocks scored by a learned indexer (MiniMaxM3VLIndexer), a content-dependent sparsity posenc does "
                "not model",
     .sources = "models/minimax_m3_vl/configuration_minimax_m3_vl.py and modeling_minimax_m3_vl.py "
                "transformers@decba1d2 (layer_types from sparse_attention_config.sparse_attention_freq; "
                "MiniMaxM3VLAttention builds an indexer on minimax_m3_sparse layers and masks all but the selected "
                "key blocks)"},
    {.family = "Granite 4 Vision",
     .hf_model_type = "granite4_vision",
     .hf_aliases = "granite4_vision_text",
     .scale = scale_rule::attention_multiplier,
     .default_scale_param = 1.0,
     .sources = "models/granite4_vision/configuration_granite4_vision.py and modeling_granite4_vision.py "
                "transformers@decba1d2 (text_config model_type granite4_vision_text by default: Granite's text "
                "model; Granite4VisionTextAttention: scaling = attention_multiplier (1.0), rotate_half, theta 10000)"},
    {.family = "Cosmos3-Edge",
     .hf_model_type = "cosmos3_edge",
     .hf_aliases = "cosmos3_edge_text",
     .default_theta = 100000000,
     .default_head_dim = 128,
     .mrope = true,
     .mrope_interleaved = true,
     .default_rope_parameters = "rope_type=default,rope_theta=100000000.0",
     .sources = "models/cosmos3_edge/configuration_cosmos3_edge.py and modeling_cosmos3_edge.py transformers@decba1d2 "
                "(Cosmos3EdgeTextConfig: head_dim 128, without rope_parameters {default, theta 1e8, mrope_section "
                "[24, 20, 20]}, rope_type default only; Cosmos3EdgeTextRotaryEmbedding: h on pairs i % 3 == 1 below "
                "3 section[1], w on i % 3 == 2 below 3 section[2], t elsewhere (interleaved); rotate_half; scaling "
                "head_dim^-0.5)"},
    {.family = "LightOnOCR",
     .hf_model_type = "lighton_ocr",
     .default_head_dim = 128,
     .layers = layer_rule::max_window_layers,
     .default_window = 4096,
     .default_max_window_layers = 28,
     .sources = "models/lighton_ocr/configuration_lighton_ocr.py transformers@decba1d2 (text_config model_type qwen3 "
                "by default: Qwen3's rules, models/qwen3/configuration_qwen3.py)"},
    {.family = "MiniCPM-V 4.6",
     .hf_model_type = "minicpmv4_6",
     .refused = "model_type: MiniCPM-V 4.6 builds its language model from text_config.model_type (Qwen3.5 only when "
                "text_config is absent); its configuration class rejects a text_config without one",
     .sources = "models/minicpmv4_6/configuration_minicpmv4_6.py transformers@decba1d2 (CONFIG_MAPPING["
                "text_config[\"model_type\"]])"},
    {.family = "DeepSeek-OCR 2",
     .hf_model_type = "deepseek_ocr2",
     .hf_aliases = "deepseek_ocr2_text",
     .sources = "models/deepseek_ocr2/configuration_deepseek_ocr2.py and modeling_deepseek_ocr2.py "
                "transformers@decba1d2 (DeepseekOcr2TextConfig: head_dim set to hidden_size / heads, theta 10000; "
                "DeepseekOcr2TextAttention: Llama multi-head attention, rotate_half, scaling head_dim^-0.5, causal "
                "mask only)"},
    {.family = "Inkling",
     .hf_model_type = "inkling_mm_model",
     .hf_aliases = "inkling_text",
     .positional = positional_family::none,
     .refused = "d_rel: Inkling adds to every layer's logits a learned relative bias mixed per query from "
                "r_proj(hidden) (d_rel profiles over the distances below rel_extent, the sliding window on "
                "hybrid_sliding layers), scales q.k by 1 / head_dim, gives the sliding layers their own head shape and "
                "runs short convolutions on k and v: no RoPE, a positional mechanism posenc does not model",
     .sources = "models/inkling/configuration_inkling.py and modeling_inkling.py transformers@decba1d2 "
                "(InklingRelativeLogits, InklingAttention: swa_head_dim / swa_num_attention_heads on hybrid_sliding "
                "layers, scaling 1 / head_dim, k_sconv / v_sconv)"},
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
    {.family = "HyperCLOVA X",
     .hf_model_type = "hyperclovax",
     .scale = scale_rule::attention_multiplier,
     .sources = "models/hyperclovax/modular_hyperclovax.py transformers@decba1d2 (GraniteAttention: the scale is "
                "attention_multiplier, head_dim^-0.5 when absent or null; head_dim = hidden_size / heads when "
                "absent)"},
    {.family = "Granite SWA",
     .hf_model_type = "granite_swa",
     .hf_aliases = "granitemoe_swa",
     .layers = layer_rule::period,
     .default_period = 4,
     .period_first = true,
     .default_window = 128,
     .scale = scale_rule::attention_multiplier,
     .default_scale_param = 1.0,
     .sinks = true,
     .layer_rope_theta = true,
     .sources = "models/granite_swa/modular_granite_swa.py and models/granitemoe_swa/modular_granitemoe_swa.py "
                "transformers@decba1d2 (Granite's attention_multiplier scale, sliding_window 128, layer i full iff "
                "i % 4 == 0, per-head sinks on every layer, layer_rope_theta: layer i's base, 0 = NoPE)"},
    {.family = "Granite MoE",
     .hf_model_type = "granitemoe",
     .hf_aliases = "granitemoeshared",
     .gguf_arch = "granitemoe",
     .gguf_layout = inter,
     .scale = scale_rule::attention_multiplier,
     .default_scale_param = 1.0,
     .sources = "models/granitemoe/configuration_granitemoe.py (attention_multiplier); "
                "models/granitemoeshared/modular_granitemoeshared.py transformers@decba1d2 (GraniteMoe's attention)"},
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
    {.family = "JetMoE",
     .hf_model_type = "jetmoe",
     .default_head_dim = 128,
     .spellings = "head_dim=kv_channels",
     .sources =
         "models/jetmoe/configuration_jetmoe.py and modular_jetmoe.py transformers@decba1d2 (attribute_map head_dim "
         "-> kv_channels, default 128; num_attention_heads = num_key_value_heads x num_experts_per_tok; "
         "JetMoeAttention: MixtralRotaryEmbedding over kv_channels, rotate_half, scaling kv_channels^-0.5, the "
         "causal mask on every layer; the mixture of attention experts acts on the q / o projections)"},
    {.family = "NanoChat",
     .hf_model_type = "nanochat",
     .refused = "rope_parameters: NanoChat's rotate_half is cat(x2, -x1), the negative of Llama's, so its RoPE turns "
                "every pair by -m theta instead of +m theta (the logits see n - m where every other family sees "
                "m - n), a rotation direction posenc's rope does not express",
     .sources = "models/nanochat/modular_nanochat.py transformers@decba1d2 lines 51-55 (rotate_half), 58-97 "
                "(Qwen3Attention with apply_rotary_pos_emb, then weightless L2 q/k norms)"},
    {.family = "Doge",
     .hf_model_type = "doge",
     .refused = "keep_window_size: Doge adds a learned, content-dependent bias exp(A softplus(dt_proj(v))) to the "
                "logits of every key and keeps only the keep_window_size largest per query (dynamic mask "
                "attention), which posenc does not model",
     .sources = "models/doge/modeling_doge.py transformers@decba1d2 lines 304-315, 336-372 (dt_states, "
                "prepare_dynamic_mask: topk over the biased mask)"},
    {.family = "GPT-NeoX Japanese",
     .hf_model_type = "gpt_neox_japanese",
     .partial = partial_rule::rotary_pct,
     .sources = "models/gpt_neox_japanese/configuration_gpt_neox_japanese.py and modeling_gpt_neox_japanese.py "
                "transformers@decba1d2 (rotary_emb_base -> rope_theta 10000, rotary_pct -> partial_rotary_factor 1.0; "
                "rotate_half over the first rotary_ndims = head_size x partial_rotary_factor; baddbmm alpha "
                "1 / sqrt(head_size); create_causal_mask)"},
    {.family = "ZAYA",
     .hf_model_type = "zaya",
     .partial = partial_rule::partial_rotary_factor,
     .default_head_dim = 128,
     .default_rope_parameters = "full_attention.rope_type=default,full_attention.rope_theta=5000000.0,"
                                "full_attention.partial_rotary_factor=0.5,sliding_attention.rope_type=default,"
                                "sliding_attention.rope_theta=10000.0,sliding_attention.partial_rotary_factor=0.5",
     .spellings = "rope_parameters.full_attention=rope_parameters.hybrid,"
                  "rope_parameters.sliding_attention=rope_parameters.hybrid_sliding",
     .sources = "models/zaya/modular_zaya.py and modeling_zaya.py transformers@decba1d2 (layer_types hybrid (full) "
                "and hybrid_sliding (sliding_window), all hybrid by default; rope_parameters per hybrid / "
                "hybrid_sliding, class default theta 5e6 / 1e4 on half the head (head_dim 128), legacy keys not "
                "converted; ZayaAttention: Phi3Attention scaling head_dim^-0.5, the mask of the layer's type; the CCA "
                "q / k / v projections (causal convolutions over time) and ZayaQKNorm come before the rotation)"},
    {.family = "HRM-Text",
     .hf_model_type = "hrm_text",
     .default_head_dim = 128,
     .refused = "prefix_lm: HRM-Text lets the instruction tokens (token_type_ids 1) attend bidirectionally as one "
                "block and the rest causally (prefix_lm, true by default), a prefix-LM mask posenc does not model; "
                "num_hidden_layers counts its two stacks' recurrent passes (H_cycles x (L_cycles + 1))",
     .sources = "models/hrm_text/configuration_hrm_text.py and modular_hrm_text.py transformers@decba1d2 "
                "(prefix_lm, num_layers_per_stack, token_type_ids bidirectional block; LlamaAttention otherwise)"},
    {.family = "ModernBERT decoder",
     .hf_model_type = "modernbert-decoder",
     .default_theta = 160000,
     .layers = layer_rule::period,
     .default_period = 3,
     .period_first = true,
     .default_window = 64,
     .local_rope = local_rope_rule::local_base,
     .default_local_theta = 10000,
     .spellings = "rope_theta=global_rope_theta,rope_local_base_freq=local_rope_theta,"
                  "sliding_window_pattern=global_attn_every_n_layers",
     .sources = "models/modernbert_decoder/configuration_modernbert_decoder.py and modeling_modernbert_decoder.py "
                "transformers@decba1d2 (layer i full iff i % global_attn_every_n_layers (3) == 0; sliding_window = "
                "local_attention // 2 (64) on the sliding layers, causal; full_attention theta global_rope_theta "
                "160000, sliding_attention local_rope_theta 10000; scaling head_dim^-0.5)"},
    {.family = "Emu3",
     .hf_model_type = "emu3_text_model",
     .hf_aliases = "emu3",
     .default_theta = 1000000,
     .sources = "models/emu3/configuration_emu3.py and modular_emu3.py transformers@decba1d2 (Emu3TextConfig "
                "default_theta 1e6 under text_config; Emu3TextModel is LlamaModel: rotate_half, head_dim^-0.5)"},
    {.family = "CSM",
     .hf_model_type = "csm",
     .hf_aliases = "csm_depth_decoder_model",
     .default_theta = 500000,
     .sources = "models/csm/configuration_csm.py and modular_csm.py transformers@decba1d2 (default_theta 500000, "
                "head_dim = hidden_size / heads when absent; CsmBackboneModel and CsmDepthDecoderModel are LlamaModel "
                "with LlamaAttention; the top-level keys are the backbone's, depth_decoder_config the depth "
                "decoder's)"},
    {.family = "Step-3.5 / Step-3.7",
     .hf_model_type = "step3p5",
     .hf_aliases = "step3p7",
     .refused = "layer_types: Step-3.5 / 3.7 give their sliding-attention layers their own head count "
                "(num_sliding_attention_heads, per_layer_config), rotate half the dimensions on full-attention "
                "layers and all of them on sliding ones from per-layer rope_theta / partial_rotary_factors lists, "
                "and may mark layers minimax_m3_sparse (a learned top-k indexer); posenc's layered configuration "
                "has one head count",
     .sources = "models/step3p7/configuration_step3p7.py transformers@decba1d2 (Step3p7TextConfig.__post_init__: "
                "per_layer_config, rope_theta / partial_rotary_factors per layer, sparse_attention_config) and "
                "modeling_step3p7.py lines 676-766 (per-layer head count, query_pre_attn_scalar, head-wise gate)"},
    {.family = "Phi-4-multimodal",
     .hf_model_type = "phi4_multimodal",
     .partial = partial_rule::partial_rotary_factor,
     .layers = layer_rule::sliding_all,
     .scaling_renames = "yarn=longrope",
     .defaults = "original_max_position_embeddings=4096",
     .sources = "models/phi4_multimodal/configuration_phi4_multimodal.py and modeling_phi4_multimodal.py "
                "transformers@decba1d2 (the text decoder at the top level: Phi-3's attention and rotary embedding, "
                "partial_rotary_factor 1.0 unless given, original_max_position_embeddings 4096, rope_type su / yarn "
                "-> longrope, sliding_window on every layer when set)"},
    {.family = "RoFormer",
     .hf_model_type = "roformer",
     .hf_layout = inter,
     .bidirectional = true,
     .sources = "models/roformer/modeling_roformer.py transformers@decba1d2 lines 49-70 "
                "(RoFormerSinusoidalPositionalEmbedding over hidden_size / heads: base 10000), 220-245 "
                "(apply_rotary_position_embeddings on pairs (x[2k], x[2k+1])), 199 (scores / "
                "sqrt(attention_head_size)); bidirectional unless is_decoder, as BERT; rotary_value refused by the "
                "rules"},
    {.family = "GPT-J",
     .hf_model_type = "gptj",
     .gguf_arch = "gptj",
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
     .alibi_scaled = true,
     .sources = "models/falcon/modeling_falcon.py transformers@decba1d2 (build_alibi_tensor: the BLOOM slopes; "
                "the mask carries alibi / sqrt(hidden_size / num_heads), added to q.k / sqrt(head_dim))"},
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
     .gguf_aliases = "t5encoder",
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
     .sources = "models/persimmon/configuration_persimmon.py transformers@decba1d2 (partial_rotary_factor 0.5, "
                "no rope_theta default: 10000)"},
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
     .reads_scale_attn_weights = true,
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
    {.family = "LFM2",
     .hf_model_type = "lfm2",
     .hf_aliases = "lfm2_moe",
     .gguf_arch = "lfm2",
     .gguf_aliases = "lfm2moe",
     .default_theta = 1000000,
     .layers = layer_rule::hybrid_indices,
     .mixer = layer_attention::conv,
     .indices_default_attention = true,
     .sources = "models/lfm2/configuration_lfm2.py transformers@decba1d2 (default_theta 1e6, layer_types: "
                "full_attention at full_attn_idxs (default every layer), else conv); modeling_lfm2.py (rotate_half "
                "on the attention layers, scaling head_dim^-0.5); llama.cpp src/llama-model.cpp llama.cpp@b97ebdc9 "
                "(lfm2: recurrent_layer_arr[i] = n_head_kv(i) == 0; rope type NEOX)"},
    {.family = "AFMoE",
     .hf_model_type = "afmoe",
     .gguf_arch = "afmoe",
     .default_head_dim = 128,
     .layers = layer_rule::period,
     .default_period = 4,
     .default_window = 1024,
     .nope = nope_rule::non_sliding,
     .spellings = "sliding_window_pattern=global_attn_every_n_layers",
     .sources = "models/afmoe/configuration_afmoe.py transformers@decba1d2 (head_dim 128, sliding_window 1024, "
                "layer_types: sliding iff (i + 1) % global_attn_every_n_layers (4) != 0); modeling_afmoe.py (RoPE iff "
                "is_local_attention); llama.cpp@b97ebdc9 src/models/afmoe.cpp (set_swa_pattern(4), RoPE iff (il + 1) "
                "% 4 != 0, NEOX)"},
    {.family = "Apertus",
     .hf_model_type = "apertus",
     .gguf_arch = "apertus",
     .default_theta = 12000000,
     .default_rope_parameters = "rope_type=llama3,rope_theta=12000000.0,factor=8.0,original_max_position_embeddings="
                                "8192,low_freq_factor=1.0,high_freq_factor=4.0",
     .sources = "models/apertus/configuration_apertus.py transformers@decba1d2 (absent rope_parameters: llama3, theta "
                "1.2e7, factor 8 over 8192); llama.cpp@b97ebdc9 src/models/apertus.cpp (NEOX, rope_freqs from the "
                "converter's llama3 factors)"},
    {.family = "Solar Open",
     .hf_model_type = "solar_open",
     .partial = partial_rule::partial_rotary_factor,
     .default_theta = 1000000,
     .default_head_dim = 128,
     .sources = "models/solar_open/modular_solar_open.py transformers@decba1d2 (Glm4MoeConfig with default_theta 1e6, "
                "head_dim 128, partial_rotary_factor 1.0 unless given; LlamaAttention)"},
    {.family = "HY-V3",
     .hf_model_type = "hy_v3",
     .default_theta = 11158840,
     .default_head_dim = 128,
     .sources = "models/hy_v3/modular_hy_v3.py transformers@decba1d2 (default_theta 11158840, head_dim 128; "
                "ApertusAttention with LlamaRotaryEmbedding)"},
    {.family = "DiffLlama",
     .hf_model_type = "diffllama",
     .sources = "models/diffllama/configuration_diffllama.py and modeling_diffllama.py transformers@decba1d2 "
                "(Llama's RoPE and head_dim^-0.5 on both softmaxes of the differential attention, causal on every "
                "layer; how it subtracts them, lambda-weighted, is not positional)"},
    {.family = "Laguna",
     .hf_model_type = "laguna",
     .partial = partial_rule::partial_rotary_factor,
     .default_head_dim = 128,
     .default_window = 512,
     .default_rope_parameters = "full_attention.rope_type=default,full_attention.rope_theta=500000.0,"
                                "full_attention.partial_rotary_factor=0.5,sliding_attention.rope_type=default,"
                                "sliding_attention.rope_theta=10000.0,sliding_attention.partial_rotary_factor=1.0",
     .sources = "models/laguna/configuration_laguna.py and modeling_laguna.py transformers@decba1d2 (head_dim 128, "
                "sliding_window 512 on the sliding_attention layers, layer_types all full_attention by default; "
                "class-default rope_parameters per layer type: full theta 500000 on half the dims, sliding theta "
                "10000 on all; every layer rotates with its type's; legacy keys are not converted)"},
    {.family = "Mellum",
     .hf_model_type = "mellum",
     .partial = partial_rule::partial_rotary_factor,
     .default_head_dim = 128,
     .default_window = 1024,
     .default_rope_parameters = "full_attention.rope_type=default,full_attention.rope_theta=500000.0,"
                                "sliding_attention.rope_type=default,sliding_attention.rope_theta=10000.0",
     .sources = "models/mellum/modular_mellum.py transformers@decba1d2 (head_dim 128, sliding_window 1024 on the "
                "sliding_attention layers, layer_types all full_attention by default, class-default rope_parameters "
                "per layer type: full theta 500000, sliding theta 10000; Qwen3MoeAttention with Laguna's rotary "
                "embedding; legacy keys are not converted)"},
    {.family = "CWM",
     .hf_model_type = "cwm",
     .default_theta = 1000000,
     .default_head_dim = 128,
     .layers = layer_rule::period,
     .default_period = 4,
     .period_first = true,
     .default_window = 8192,
     .default_rope_parameters = "rope_type=llama3,rope_theta=1000000.0,factor=16.0,high_freq_factor=4.0,"
                                "low_freq_factor=1.0,original_max_position_embeddings=8192",
     .sources =
         "models/cwm/modular_cwm.py transformers@decba1d2 (CwmConfig: head_dim 128, sliding_window 8192, "
         "layer i full iff i % 4 == 0, class-default llama3 rope_parameters with rope_theta 1e6; Qwen2Attention, "
         "Qwen2RotaryEmbedding)"},
    {.family = "Arcee",
     .hf_model_type = "arcee",
     .gguf_arch = "arcee",
     .gguf_layout = inter,
     .sources = "models/arcee/modeling_arcee.py transformers@decba1d2 (Llama attention, rotate_half); "
                "llama.cpp@b97ebdc9 convert_hf_to_gguf.py (LlamaModel permute) and src/llama-model.cpp (arcee: NORM)"},
    {.family = "Arctic",
     .hf_model_type = "arctic",
     .gguf_arch = "arctic",
     .gguf_layout = inter,
     .sources = "remote code Snowflake arctic (Llama/Mixtral attention); llama.cpp@b97ebdc9 src/models/arctic.cpp "
                "(NORM after the converter's Llama permute, 1/sqrt(head_dim), no window)"},
    {.family = "Baichuan",
     .hf_model_type = "baichuan",
     .gguf_arch = "baichuan",
     .gguf_layout = inter,
     .alibi_at_block_count = 40,
     .sources = "remote code Baichuan / Baichuan 2 (7B rotary, 13B ALiBi); llama.cpp@b97ebdc9 src/llama-model.cpp "
                "(baichuan: 32 layers RoPE NORM, 40 layers ALiBi with max bias 8) and convert_hf_to_gguf.py (W_pack "
                "split, Llama permute)"},
    {.family = "Bailing MoE (Ling)",
     .hf_model_type = "bailing_moe",
     .gguf_arch = "bailingmoe",
     .gguf_layout = inter,
     .sources = "remote code inclusionAI bailing_moe; llama.cpp@b97ebdc9 convert_hf_to_gguf.py (Llama permute) and "
                "src/models/bailingmoe.cpp (NORM, 1/sqrt(rotary dim) = 1/sqrt(head_dim))"},
    {.family = "Bailing MoE 2 (Ling 2.0)",
     .hf_model_type = "bailing_moe_v2",
     .gguf_arch = "bailingmoe2",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.5,
     .sources = "remote code inclusionAI bailing_moe_v2; llama.cpp@b97ebdc9 convert_hf_to_gguf.py "
                "(rope.dimension_count = head_dim * partial_rotary_factor, default 0.5) and "
                "src/models/bailingmoe2.cpp (NEOX)"},
    {.family = "BERT",
     .hf_model_type = "bert",
     .hf_aliases = "distilbert",
     .gguf_arch = "bert",
     .positional = positional_family::learned,
     .bidirectional = true,
     .sources = "models/bert/modeling_bert.py transformers@decba1d2 (position_embeddings from 0, BertSelfAttention "
                "scaling attention_head_size^-0.5, is_causal = is_decoder); llama.cpp@b97ebdc9 src/models/bert.cpp "
                "(pos_embd, attention.causal false; the converter drops RoBERTa's pad_token_id + 1 rows)"},
    {.family = "RoBERTa",
     .hf_model_type = "roberta",
     .hf_aliases = "xlm-roberta,camembert",
     .positional = positional_family::learned,
     .learned_offset = 2,
     .learned_offset_from_pad = true,
     .bidirectional = true,
     .sources = "models/roberta/modeling_roberta.py transformers@decba1d2 (position ids from padding_idx + 1, "
                "padding_idx = pad_token_id); GGUF: the bert architecture, offset 0 after the converter's slice"},
    {.family = "DeBERTa",
     .hf_model_type = "deberta",
     .positional = positional_family::deberta,
     .scale = scale_rule::deberta_cross_terms,
     .bidirectional = true,
     .defaults = "relative_attention=false,position_biased_input=true,max_relative_positions=-1,"
                 "max_position_embeddings=512,hidden_size=768,num_attention_heads=12,num_hidden_layers=12",
     .sources = "models/deberta/configuration_deberta.py and modeling_deberta.py transformers@decba1d2 "
                "(DisentangledSelfAttention: relative_attention, max_relative_positions < 1 -> "
                "max_position_embeddings, scale sqrt(d (1 + len(pos_att_type))), c2p pos_proj / p2c pos_q_proj, "
                "distances clamped to the span, talking_head; DebertaEmbeddings position_biased_input)"},
    {.family = "DeBERTa-v2 / v3 / mDeBERTa",
     .hf_model_type = "deberta-v2",
     .positional = positional_family::deberta,
     .scale = scale_rule::deberta_cross_terms,
     .bidirectional = true,
     .deberta_v2_rules = true,
     .defaults = "relative_attention=false,position_biased_input=true,max_relative_positions=-1,"
                 "max_position_embeddings=512,hidden_size=1536,num_attention_heads=24,num_hidden_layers=24",
     .spellings = "head_dim=attention_head_size",
     .sources = "models/deberta_v2/configuration_deberta_v2.py and modeling_deberta_v2.py transformers@decba1d2 "
                "(DisentangledSelfAttention: position_buckets, max_relative_positions < 1 -> max_position_embeddings, "
                "make_log_bucket_position, share_att_key, attention_head_size, scale sqrt(d (1 + [c2p] + [p2c])); "
                "DebertaV2Encoder norm_rel_ebd, conv_kernel_size; DebertaV2Embeddings position_biased_input)"},
    {.family = "BitNet",
     .hf_model_type = "bitnet",
     .gguf_arch = "bitnet",
     .default_theta = 500000,
     .sources = "models/bitnet/configuration_bitnet.py transformers@decba1d2 (default_theta 500000); "
                "llama.cpp@b97ebdc9 src/models/bitnet.cpp (NEOX)"},
    {.family = "Chameleon",
     .hf_model_type = "chameleon",
     .gguf_arch = "chameleon",
     .gguf_layout = inter,
     .sources = "models/chameleon/modeling_chameleon.py transformers@decba1d2 (rotate_half, head_dim^-0.5); "
                "llama.cpp@b97ebdc9 src/models/chameleon.cpp (NORM after the Llama permute)"},
    {.family = "ChatGLM (GGUF)",
     .gguf_arch = "chatglm",
     .hf_layout = inter,
     .gguf_layout = inter,
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.5,
     .sources = "llama.cpp@b97ebdc9 convert_hf_to_gguf.py ChatGLMModel (rope.dimension_count = head_dim / 2, "
                "freq_base = 10000 * rope_ratio) and src/models/chatglm.cpp (NORM over the first half); remote-code "
                "ChatGLM config.json files (rope_ratio) are not read: the HF glm rows are GLM-4"},
    {.family = "CodeShell",
     .hf_model_type = "codeshell",
     .gguf_arch = "codeshell",
     .sources = "remote code WisdomShell codeshell; llama.cpp@b97ebdc9 convert_hf_to_gguf.py (freq_base 10000, linear "
                "1.0) and src/models/codeshell.cpp (NEOX)"},
    {.family = "CogVLM (GGUF)",
     .gguf_arch = "cogvlm",
     .gguf_ignores_rope_keys = true,
     .sources = "llama.cpp@b97ebdc9 src/models/cogvlm.cpp (ggml_rope NEOX with base 10000, no scaling: rope keys are "
                "not read); the remote-code HF model assigns image tokens their own position ids (not read)"},
    {.family = "DBRX",
     .hf_model_type = "dbrx",
     .gguf_arch = "dbrx",
     .sources = "models/dbrx/modeling_dbrx.py transformers@decba1d2 (the rotary embedding reads rope_parameters: "
                "attn_config.rope_theta is not read, base 10000 unless rope_theta / rope_parameters give one; run by "
                "tests/golden/gen_conformance.py); llama.cpp@b97ebdc9 convert_hf_to_gguf.py (freq_base = "
                "attn_config.rope_theta) and src/models/dbrx.cpp (NEOX)"},
    {.family = "Zamba",
     .hf_model_type = "zamba",
     .positional = positional_family::none,
     .head_dim_hidden_factor = 2,
     .layers = layer_rule::zamba_block_types,
     .mixer = layer_attention::mamba,
     .default_period = 6,
     .default_offset = 4,
     .nope = nope_rule::all,
     .scale = scale_rule::half_head_dim,
     .defaults = "hidden_size=3712,num_attention_heads=16,num_key_value_heads=16,num_hidden_layers=76",
     .spellings = "layer_types=layers_block_type,head_dim=attention_head_dim",
     .sources = "models/zamba/configuration_zamba.py transformers@decba1d2 (attention_head_dim or 2 hidden_size / "
                "heads; layers_block_type default [mamba, mamba, hybrid] + hybrid iff i % attn_layer_period (6) == "
                "attn_layer_offset (4)); modeling_zamba.py lines 113-180 (ZambaAttention: no positional encoding, "
                "scaling (head_dim / 2)^-0.5, causal; a hybrid layer runs the shared attention block, then Mamba)"},
    {.family = "Zamba2",
     .hf_model_type = "zamba2",
     .head_dim_hidden_factor = 2,
     .layers = layer_rule::zamba_block_types,
     .mixer = layer_attention::mamba,
     .nope = nope_rule::use_mem_rope,
     .scale = scale_rule::half_head_dim,
     .defaults = "hidden_size=2560,num_attention_heads=32,num_hidden_layers=54",
     .spellings = "layer_types=layers_block_type,head_dim=attention_head_dim",
     .sources = "models/zamba2/configuration_zamba2.py transformers@decba1d2 (attention_head_dim = 2 hidden_size / "
                "heads, the default 54-entry layers_block_type, use_mem_rope false); modeling_zamba2.py lines 92-130 "
                "(rotary over head_dim, half_split), 219-337 (scaling (head_dim / 2)^-0.5, RoPE iff use_mem_rope, "
                "causal; the adapters act on the projections), 1212-1248 (hybrid: shared attention, then Mamba-2); "
                "run by tests/golden/gen_conformance.py"},
    {.family = "RecurrentGemma (Griffin)",
     .hf_model_type = "recurrent_gemma",
     .layers = layer_rule::block_types_cycle,
     .mixer = layer_attention::recurrent,
     .default_window = 2048,
     .softcap = true,
     .default_final_softcap = 30.0,
     .defaults = "hidden_size=2560,num_attention_heads=10,num_hidden_layers=26",
     .spellings = "sliding_window=attention_window_size,final_logit_softcapping=logits_soft_cap",
     .sources = "models/recurrent_gemma/configuration_recurrent_gemma.py transformers@decba1d2 (block_types "
                "(recurrent, recurrent, attention) cycled over the layers, attention_window_size 2048, head_dim = "
                "hidden_size / heads, logits_soft_cap 30); modeling_recurrent_gemma.py lines 66-130 (the rotary "
                "embedding's own default parameters span head_dim: partial_rotary_factor is not read), 208-270 "
                "(scaling head_dim^-0.5, sliding_window), 291-480 (RG-LRU recurrent block: no attention), 771 (final "
                "soft-cap); run by tests/golden/gen_conformance.py"},
    {.family = "DeepSeek-V4",
     .hf_model_type = "deepseek_v4",
     .refused = "layer_types: DeepSeek-V4's compressed_sparse_attention and heavily_compressed_attention layers attend "
                "to learned compressions of the keys (compress_rates), the sparse ones to the top-k entries a learned "
                "indexer picks, beside a sliding window with per-head sinks; posenc does not model compressed or "
                "content-dependent sparse attention",
     .sources = "models/deepseek_v4/configuration_deepseek_v4.py transformers@decba1d2 (layer_types default "
                "heavily_compressed_attention x 2 then CSA / HCA interleaved, compress_rates 4 / 128, index_topk 512, "
                "sliding_window 128); modeling_deepseek_v4.py lines 450-700 (compressor, Lightning Indexer top-k), "
                "746-790 (sinks)"},
    {.family = "Mllama (Llama 3.2 Vision)",
     .hf_model_type = "mllama_text_model",
     .hf_aliases = "mllama",
     .default_theta = 500000,
     .layers = layer_rule::cross_attention_indices,
     .mixer = layer_attention::cross,
     .default_layer_indices = "3,8,13,18,23,28,33,38",
     .defaults = "hidden_size=4096,num_attention_heads=32,num_key_value_heads=8,num_hidden_layers=40",
     .sources = "models/mllama/configuration_mllama.py transformers@decba1d2 (MllamaTextConfig: default_theta 5e5, "
                "cross_attention_layers default [3, 8, 13, 18, 23, 28, 33, 38]); modeling_mllama.py lines 384-470 "
                "(MllamaTextCrossAttention: keys and values from the image states, no RoPE), 502-560 (self-attention: "
                "half_split RoPE, head_dim^-0.5, causal), 1023-1030 (layer_idx in cross_attention_layers); run by "
                "tests/golden/gen_conformance.py"},
    {.family = "T5Gemma",
     .hf_model_type = "t5gemma",
     .hf_aliases = "t5_gemma_module",
     .refused = "is_encoder_decoder: T5Gemma is an encoder-decoder of two Gemma 2 stacks with their own configurations "
                "(encoder / decoder): the encoder bidirectional with a symmetric sliding window, the decoder causal "
                "with a cross-attention to the encoder in every layer; posenc's layered configuration holds one stack "
                "of self-attention layers",
     .sources = "models/t5gemma/configuration_t5gemma.py transformers@decba1d2 (T5GemmaConfig encoder / decoder "
                "T5GemmaModuleConfig, is_decoder); modeling_t5gemma.py lines 234-390 (is_causal = is_decoder, "
                "T5GemmaCrossAttention), 670-690 (bidirectional sliding masks in the encoder)"},
    {.family = "T5Gemma 2",
     .hf_model_type = "t5gemma2",
     .hf_aliases = "t5gemma2_text,t5gemma2_encoder,t5gemma2_decoder",
     .refused = "is_encoder_decoder: T5Gemma 2 is an encoder-decoder (a bidirectional Gemma 3 encoder with a vision "
                "tower, a causal decoder whose layers merge self- and cross-attention), two layer stacks with their "
                "own configurations; posenc's layered configuration holds one stack of self-attention layers",
     .sources = "models/t5gemma2/configuration_t5gemma2.py and modeling_t5gemma2.py transformers@decba1d2"},
    {.family = "Dia",
     .hf_model_type = "dia",
     .hf_aliases = "dia_encoder,dia_decoder",
     .refused = "is_encoder_decoder: Dia is an encoder-decoder (encoder_config: a bidirectional RoPE encoder; "
                "decoder_config: a causal RoPE decoder with cross-attention to the encoder), two layer stacks with "
                "their own configurations; posenc's layered configuration holds one stack of self-attention layers",
     .sources = "models/dia/configuration_dia.py and modeling_dia.py transformers@decba1d2"},
    {.family = "DiffusionGemma",
     .hf_model_type = "diffusion_gemma_text",
     .hf_aliases = "diffusion_gemma",
     .refused = "global_head_dim: DiffusionGemma's full-attention layers have their own head width (global_head_dim, "
                "512 by default, per_layer_config) and rotate with the 'proportional' partial RoPE over it, and "
                "use_bidirectional_attention attends both ways over image or all tokens; posenc's layered "
                "configuration has one head width",
     .sources = "models/diffusion_gemma/configuration_diffusion_gemma.py transformers@decba1d2 (__post_init__: "
                "per_layer_config head_dim = global_head_dim on full layers, rope_parameters full_attention "
                "proportional partial_rotary_factor 0.25 theta 1e6, sliding 1e4, use_bidirectional_attention)"},
    {.family = "Moshi",
     .hf_model_type = "moshi",
     .defaults = "hidden_size=4096,num_attention_heads=32,num_hidden_layers=32",
     .sources = "models/moshi/configuration_moshi.py transformers@decba1d2 (head_dim or hidden_size / heads, rope "
                "theta 10000 by default, sliding_window 3000 not read by the attention); modeling_moshi.py lines "
                "272-330 (rotary over head_dim, half_split), 421-500 (MoshiAttention: head_dim^-0.5, causal, RoPE in "
                "the main decoder), 857 (create_causal_mask: no window)"},
    {.family = "Moshi depth decoder",
     .hf_model_type = "moshi_depth",
     .positional = positional_family::none,
     .nope = nope_rule::all,
     .defaults = "hidden_size=1024,num_attention_heads=16,num_hidden_layers=6",
     .sources = "models/moshi/configuration_moshi.py transformers@decba1d2 (MoshiDepthConfig, sliding_window 8 not "
                "read); modeling_moshi.py lines 421-460, 613 (MoshiDecoderLayer(use_flexible_linear=True, "
                "use_rope=False): no positions in the attention; the codebook index selects the projections' "
                "weights, the caller's), 739 (create_causal_mask: no window)"},
    {.family = "DeciLM / Nemotron-NAS",
     .hf_model_type = "deci",
     .hf_aliases = "nemotron-nas",
     .gguf_arch = "deci",
     .gguf_layout = inter,
     .layers = layer_rule::block_configs,
     .mixer = layer_attention::mlp,
     .sources = "remote code DeciLM-7B (per-layer KV heads) and Llama-3_1-Nemotron-NAS (block_configs: attention "
                "no_op or replace_with_linear); llama.cpp@b97ebdc9 src/llama-model.cpp (deci: per-layer head counts) "
                "and src/models/deci.cpp (n_head 0: no attention; n_head_kv 0: a linear map, no token mixing; else "
                "NORM RoPE)"},
    {.family = "DeepSeek (v1)",
     .hf_model_type = "deepseek",
     .gguf_arch = "deepseek",
     .gguf_layout = inter,
     .sources = "remote code deepseek-moe; llama.cpp@b97ebdc9 convert_hf_to_gguf.py (Llama permute, rope.scaling.type "
                "none) and src/models/deepseek.cpp (NORM)"},
    {.family = "DeepSeek-OCR (GGUF)",
     .gguf_arch = "deepseek2-ocr",
     .gguf_ignores_rope_keys = true,
     .sources = "llama.cpp@b97ebdc9 src/models/deepseek2.cpp (deepseek2-ocr: NEOX over the whole head, freq_base "
                "asserted 10000, no scaling, plain MHA); the remote-code HF model is not read"},
    {.family = "dots.llm1",
     .hf_model_type = "dots1",
     .gguf_arch = "dots1",
     .layers = layer_rule::window_max_window_layers,
     .default_window = 4096,
     .default_max_window_layers = 62,
     .gguf_reads_window = false,
     .sources = "models/dots1/configuration_dots1.py transformers@decba1d2 (layer_types: sliding iff sliding_window "
                "is not None and i >= max_window_layers (62); no use_sliding_window key); llama.cpp@b97ebdc9 "
                "src/llama-model.cpp (dots1 reads no window) and "
                "src/models/dots1.cpp (NEOX)"},
    {.family = "Dream",
     .hf_model_type = "dream",
     .gguf_arch = "dream",
     .bidirectional = true,
     .sources = "remote code Dream-org Dream (Qwen2.5 diffusion LM); llama.cpp@b97ebdc9 src/llama-model.cpp (dream: "
                "causal_attn false) and src/models/dream.cpp (NEOX)"},
    {.family = "EuroBERT",
     .hf_model_type = "eurobert",
     .gguf_arch = "eurobert",
     .bidirectional = true,
     .sources = "models/eurobert/modeling_eurobert.py transformers@decba1d2 (is_causal False, rotate_half); "
                "llama.cpp@b97ebdc9 src/models/eurobert.cpp (NEOX)"},
    {.family = "EXAONE 3 / 3.5",
     .hf_model_type = "exaone",
     .gguf_arch = "exaone",
     .sources = "remote code LGAI EXAONE 3 / 3.5; llama.cpp@b97ebdc9 convert_hf_to_gguf.py (llama3 factors as "
                "rope_freqs) and src/models/exaone.cpp (NEOX, n_rot == head_dim)"},
    {.family = "EXAONE MoE",
     .hf_model_type = "exaone_moe",
     .gguf_arch = "exaone-moe",
     .layers = layer_rule::period,
     .default_period = 4,
     .default_window = 4096,
     .nope = nope_rule::non_sliding_if_window,
     .gguf_pattern_array_ignored = true,
     .sources = "models/exaone_moe/configuration_exaone_moe.py transformers@decba1d2 (sliding_window 4096, "
                "layer_types: sliding iff (i + 1) % 4 != 0); modeling_exaone_moe.py (RoPE iff sliding_window is None "
                "or the layer slides); llama.cpp@b97ebdc9 src/llama-model.cpp and src/models/exaone-moe.cpp (period "
                "4, RoPE on the SWA layers)"},
    {.family = "Falcon-H1",
     .hf_model_type = "falcon_h1",
     .gguf_arch = "falcon-h1",
     .layers = layer_rule::parallel_hybrid,
     .mixer = layer_attention::mamba,
     .scale = scale_rule::key_multiplier,
     .sources = "models/falcon_h1/modeling_falcon_h1.py transformers@decba1d2 (every layer: attention with RoPE and a "
                "Mamba-2 mixer side by side; k = k_proj(x * attention_in_multiplier) * key_multiplier, lines 205-219, "
                "876-922); llama.cpp@b97ebdc9 src/models/falcon-h1.cpp (NEOX; the converter folds the multipliers "
                "into the weights: 1/sqrt(head_dim))"},
    {.family = "Gemma 3n",
     .hf_model_type = "gemma3n_text",
     .hf_aliases = "gemma3n",
     .gguf_arch = "gemma3n",
     .default_theta = 1000000,
     .default_head_dim = 256,
     .layers = layer_rule::period,
     .default_period = 5,
     .default_window = 512,
     .local_rope = local_rope_rule::local_base,
     .default_local_theta = 10000,
     .scale = scale_rule::one,
     .softcap = true,
     .default_final_softcap = 30.0,
     .gguf_pattern_array_ignored = true,
     .sources = "models/gemma3n/configuration_gemma3n.py transformers@decba1d2 (layer_types: full iff (i + 1) % 5 == "
                "0, sliding_window 512, theta 1e6 / local 1e4, final_logit_softcapping 30); modeling_gemma3n.py "
                "(scaling = 1.0: q/k norms; query_pre_attn_scalar not read); llama.cpp@b97ebdc9 "
                "src/models/gemma3n-iswa.cpp (kq_scale 1, set_swa_pattern(5): the per-layer array is not read)"},
    {.family = "Gemma 4",
     .hf_model_type = "gemma4_text",
     .hf_aliases = "gemma4,gemma4_unified,gemma4_unified_text",
     .gguf_arch = "gemma4",
     .refused = "global_head_dim: Gemma 4's full-attention layers have their own head width (global_head_dim, 512 by "
                "default) and key/value head count, share K/V across the last num_kv_shared_layers and rotate with "
                "the 'proportional' partial RoPE over that width; posenc's layered configuration has one head width",
     .sources = "models/gemma4/configuration_gemma4.py transformers@decba1d2 lines 171-210 (global_head_dim, "
                "num_global_key_value_heads, attention_k_eq_v, num_kv_shared_layers, per-layer-type rope_parameters "
                "with proportional partial_rotary_factor 0.25 on full layers); modeling_gemma4.py (scaling 1.0); "
                "llama.cpp@b97ebdc9 src/models/gemma4-iswa.cpp, convert_hf_to_gguf.py Gemma4Model"},
    {.family = "Gemma embedding (GGUF)",
     .gguf_arch = "gemma-embedding",
     .default_theta = 1000000,
     .default_head_dim = 256,
     .layers = layer_rule::period,
     .default_period = 6,
     .default_window = 512,
     .local_rope = local_rope_rule::local_base,
     .default_local_theta = 10000,
     .bidirectional = true,
     .sources = "llama.cpp@b97ebdc9 src/llama-model.cpp (gemma-embedding: causal_attn false, "
                "LLAMA_SWA_TYPE_SYMMETRIC, set_swa_pattern(6)) and src/models/gemma-embedding.cpp (1/sqrt(head_dim)); "
                "HF EmbeddingGemma is gemma3_text with use_bidirectional_attention (the Gemma 3 row)"},
    {.family = "GLM DSA (DeepSeek sparse attention)",
     .hf_model_type = "glm_moe_dsa",
     .hf_aliases = "deepseek_v32",
     .gguf_arch = "glm-dsa",
     .refused = "layer_types: DeepSeek Sparse Attention picks the top-k keys of each query with a learned indexer, a "
                "content-dependent sparsity posenc does not model",
     .sources = "models/glm_moe_dsa/modeling_glm_moe_dsa.py and models/deepseek_v32/ transformers@decba1d2 (indexer, "
                "index_topk 2048); llama.cpp@b97ebdc9 src/models/deepseek2.cpp runs glm-dsa densely"},
    {.family = "Grok (GGUF)",
     .gguf_arch = "grok",
     .scale = scale_rule::attention_multiplier,
     .default_scale_param = 0.08838834764831845,
     .softcap = true,
     .default_attn_softcap = 30.0,
     .sources = "llama.cpp@b97ebdc9 src/models/grok.cpp (kq = 30 tanh(kq * attention.output_scale / 30), default "
                "0.08838834764831845, NEOX) and src/llama-model.cpp; remote-code Grok configs are not read"},
    {.family = "GroveMoE",
     .hf_model_type = "grove_moe",
     .gguf_arch = "grovemoe",
     .sources = "remote code inclusionAI GroveMoE (Qwen3-MoE attention); llama.cpp@b97ebdc9 src/models/grovemoe.cpp "
                "(NEOX)"},
    {.family = "HunYuan Dense",
     .hf_model_type = "hunyuan_v1_dense",
     .gguf_arch = "hunyuan-dense",
     .scaling_renames = "dynamic+alpha=dynamic_alpha",
     .sources = "models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py transformers@decba1d2 (lines 312-340: a dynamic "
                "rope_type with alpha: base theta * alpha^(d/(d-2)), dynamic_rope_update growth from rope_theta "
                "beyond max_position_embeddings); llama.cpp@b97ebdc9 convert_hf_to_gguf.py (alpha folded into "
                "freq_base) and src/models/hunyuan-dense.cpp (NEOX)"},
    {.family = "HunYuan MoE",
     .hf_model_type = "hunyuan_v1_moe",
     .gguf_arch = "hunyuan-moe",
     .scaling_renames = "dynamic+alpha=dynamic_alpha",
     .sources = "models/hunyuan_v1_moe/modeling_hunyuan_v1_moe.py transformers@decba1d2 (lines 371-405: the alpha "
                "rule of HunYuan Dense); llama.cpp@b97ebdc9 convert_hf_to_gguf.py HunYuanMoEModel (freq_base = theta "
                "* alpha^(d/(d-2)), context 256k) and src/models/hunyuan-moe.cpp (NEOX)"},
    {.family = "HunYuan-VL",
     .hf_model_type = "hunyuan_vl",
     .hf_aliases = "hunyuan_vl_text",
     .gguf_arch = "hunyuan_vl",
     .scaling_renames = "xdrope+alpha=dynamic_alpha,dynamic+alpha=dynamic_alpha",
     .sources = "models/hunyuan_vl/configuration_hunyuan_vl.py transformers@decba1d2 (xdrope renamed dynamic; text "
                "positions: plain RoPE with the alpha base; XD-RoPE image sections not modelled); llama.cpp@b97ebdc9 "
                "src/llama-model.cpp (hunyuan_vl: base = theta * alpha^(d/(d-2)))"},
    {.family = "Jais (GGUF)",
     .gguf_arch = "jais",
     .positional = positional_family::alibi,
     .scale = scale_rule::inv_head_dim,
     .sources = "llama.cpp@b97ebdc9 src/models/jais.cpp (kq_scale 1/n_embd_head, muP) and src/llama-model.cpp "
                "(attention.max_alibi_bias); the remote-code Jais config is not read"},
    {.family = "Jais 2",
     .hf_model_type = "jais2",
     .gguf_arch = "jais2",
     .sources = "models/jais2/modeling_jais2.py transformers@decba1d2 (rotate_half, head_dim^-0.5); "
                "llama.cpp@b97ebdc9 src/models/jais2.cpp (NEOX)"},
    {.family = "Jina BERT v2 (GGUF)",
     .gguf_arch = "jina-bert-v2",
     .positional = positional_family::alibi,
     .bidirectional = true,
     .sources = "llama.cpp@b97ebdc9 src/llama-model.cpp (jina-bert-v2: max bias 8, symmetric -slope |i - j|) and "
                "src/models/bert.cpp; the remote-code Jina config is not read"},
    {.family = "Jina embeddings v3",
     .hf_model_type = "jina_embeddings_v3",
     .gguf_arch = "jina-bert-v3",
     .default_theta = 20000,
     .bidirectional = true,
     .sources = "models/jina_embeddings_v3/configuration_jina_embeddings_v3.py transformers@decba1d2 (default_theta "
                "20000, bidirectional); llama.cpp@b97ebdc9 src/models/bert.cpp (jina-bert-v3: NEOX)"},
    {.family = "Kimi Linear (GGUF)",
     .gguf_arch = "kimi-linear",
     .positional = positional_family::none,
     .layers = layer_rule::hybrid_block_types,
     .mixer = layer_attention::linear,
     .sources = "llama.cpp@b97ebdc9 src/llama-model.cpp (kimi-linear: KDA layers where head_count_kv is 0) and "
                "src/models/kimi-linear.cpp (MLA layers without RoPE, kq_scale 1/sqrt(192)); the remote-code config "
                "is not read"},
    {.family = "LLaDA",
     .hf_model_type = "llada",
     .gguf_arch = "llada",
     .gguf_layout = inter,
     .bidirectional = true,
     .sources = "remote code GSAI-ML LLaDA (masked diffusion); llama.cpp@b97ebdc9 src/llama-model.cpp (llada: "
                "causal_attn false) and src/models/llada.cpp (NORM after the Llama permute)"},
    {.family = "LLaDA-MoE",
     .hf_model_type = "llada_moe",
     .gguf_arch = "llada-moe",
     .bidirectional = true,
     .sources = "remote code inclusionAI LLaDA-MoE; llama.cpp@b97ebdc9 src/models/llada-moe.cpp (NEOX, causal_attn "
                "false)"},
    {.family = "Llama embedding (GGUF)",
     .gguf_arch = "llama-embed",
     .gguf_layout = inter,
     .sources = "llama.cpp@b97ebdc9 src/models/llama.cpp (llm_build_llama<true>, NORM) and src/llama-model.cpp "
                "(attention.causal decides the direction)"},
    {.family = "Maincoder (GGUF)",
     .gguf_arch = "maincoder",
     .hf_layout = inter,
     .gguf_layout = inter,
     .sources = "llama.cpp@b97ebdc9 src/models/maincoder.cpp (NORM, no converter permute); the remote-code config is "
                "not read"},
    {.family = "Mamba",
     .hf_model_type = "mamba",
     .hf_aliases = "falcon_mamba",
     .gguf_arch = "mamba",
     .positional = positional_family::none,
     .refused = "layer_types: every layer is a Mamba (S6) state-space block: no attention",
     .sources = "models/mamba/modeling_mamba.py transformers@decba1d2; llama.cpp@b97ebdc9 src/models/mamba.cpp"},
    {.family = "Mamba-2",
     .hf_model_type = "mamba2",
     .gguf_arch = "mamba2",
     .positional = positional_family::none,
     .refused = "layer_types: every layer is a Mamba-2 (SSD) block: no attention",
     .sources = "models/mamba2/modeling_mamba2.py transformers@decba1d2; llama.cpp@b97ebdc9 src/models/mamba.cpp"},
    {.family = "RWKV",
     .hf_model_type = "rwkv",
     .hf_aliases = "rwkv6,rwkv7,rwkv6qwen2,arwkv",
     .gguf_arch = "rwkv6",
     .gguf_aliases = "rwkv6qwen2,rwkv7,arwkv7",
     .positional = positional_family::none,
     .refused = "layer_types: RWKV time-mixing replaces every attention layer: no attention",
     .sources = "models/rwkv/modeling_rwkv.py transformers@decba1d2 (RWKV-4); llama.cpp@b97ebdc9 "
                "src/models/rwkv6.cpp, rwkv7.cpp, arwkv7.cpp (recurrent architectures)"},
    {.family = "LongCat-Flash",
     .hf_model_type = "longcat_flash",
     .hf_layout = inter,
     .partial = partial_rule::qk_rope_head_dim,
     .refused = "kv_lora_rank: LongCat-Flash multiplies the query by sqrt(hidden_size / q_lora_rank) and the latent "
                "keys by sqrt(hidden_size / kv_lora_rank) before attention, so the logits' rotated and unrotated parts "
                "scale differently; a layer also holds two attention sublayers",
     .sources = "models/longcat_flash/modeling_longcat_flash.py transformers@decba1d2 lines 279-333, 380-383, 424-426 "
                "(MLA, interleaved rotation, mla_scale_q_lora / mla_scale_kv_lora, self_attn[0..1]); "
                "configuration_longcat_flash.py lines 84-119 (num_hidden_layers = 2 x num_layers)"},
    {.family = "MiMo-V2-Flash",
     .hf_model_type = "mimo_v2_flash",
     .gguf_arch = "mimo2",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.334,
     .default_theta = 5000000,
     .default_head_dim = 192,
     .layers = layer_rule::period,
     .default_period = 6,
     .first_layer_full = true,
     .default_window = 128,
     .local_rope = local_rope_rule::local_base,
     .default_local_theta = 10000,
     .sinks = true,
     .sinks_sliding_only = true,
     .sources = "models/mimo_v2_flash/configuration_mimo_v2_flash.py transformers@decba1d2 lines 104-137 (head_dim "
                "192, sliding_window 128, layer_types full iff i == 0 or (i + 1) % 6 == 0, rope_parameters full "
                "5e6 / sliding 1e4 with partial_rotary_factor 0.334); modeling_mimo_v2_flash.py lines 345-410 "
                "(scaling head_dim^-0.5, sinks on sliding layers only; attention_value_scale multiplies V); "
                "llama.cpp@b97ebdc9 src/models/mimo2-iswa.cpp (NEOX, per-layer sliding_window_pattern array)"},
    {.family = "MiniCPM",
     .hf_model_type = "minicpm",
     .gguf_arch = "minicpm",
     .gguf_layout = inter,
     .sources = "remote code openbmb MiniCPM (Llama attention, muP scales outside the attention); llama.cpp@b97ebdc9 "
                "src/models/granite.cpp (minicpm: NORM, 1/sqrt(head_dim))"},
    {.family = "MiniCPM3",
     .hf_model_type = "minicpm3",
     .gguf_arch = "minicpm3",
     .partial = partial_rule::qk_rope_head_dim,
     .scale = scale_rule::qk_head_dim,
     .mscale2_hf = true,
     .defaults = "qk_nope_head_dim=64,qk_rope_head_dim=32",
     .sources = "models/minicpm3/modeling_minicpm3.py transformers@decba1d2 (MLA: rotate_half on the qk_rope_head_dim "
                "slice, scaling qk_head_dim^-0.5 x mscale^2 when scaled); llama.cpp@b97ebdc9 src/models/minicpm3.cpp "
                "(NEOX, 1/sqrt(key_length))"},
    {.family = "MiniMax-M2",
     .hf_model_type = "minimax_m2",
     .gguf_arch = "minimax-m2",
     .partial = partial_rule::partial_rotary_factor,
     .default_theta = 5000000,
     .default_head_dim = 128,
     .sources = "models/minimax_m2/configuration_minimax_m2.py transformers@decba1d2 (theta 5e6, head_dim 128, "
                "partial_rotary_factor; rotary_dim is not read); llama.cpp@b97ebdc9 src/models/minimax-m2.cpp (NEOX "
                "over rope.dimension_count)"},
    {.family = "Mistral 4",
     .hf_model_type = "mistral4",
     .gguf_arch = "mistral4",
     .hf_layout = inter,
     .gguf_layout = inter,
     .partial = partial_rule::qk_rope_head_dim,
     .scale = scale_rule::qk_head_dim,
     .mscale2_hf = true,
     .mscale2_gguf = true,
     .reads_rope_interleave = true,
     .default_rope_parameters = "rope_type=yarn,rope_theta=10000.0,factor=128.0,original_max_position_embeddings=8192,"
                                "beta_fast=32.0,beta_slow=1.0,mscale=1.0,mscale_all_dim=1.0,llama_4_scaling_beta=0.1",
     .defaults = "qk_nope_head_dim=64,qk_rope_head_dim=64",
     .sources = "models/mistral4/configuration_mistral4.py and modeling_mistral4.py transformers@decba1d2 (MLA as "
                "DeepSeek-V3, class-default YaRN 128 over 8192, scaling x mscale^2, llama_4_scaling_beta temperature "
                "on every layer, lines 288-296, 370-372, 421); llama.cpp@b97ebdc9 src/models/deepseek2.cpp (mistral4)"},
    {.family = "ModernBERT",
     .hf_model_type = "modernbert",
     .gguf_arch = "modern-bert",
     .default_theta = 160000,
     .layers = layer_rule::period,
     .default_period = 3,
     .period_first = true,
     .default_window = 128,
     .local_rope = local_rope_rule::local_base,
     .default_local_theta = 10000,
     .bidirectional = true,
     .spellings = "rope_theta=global_rope_theta,rope_local_base_freq=local_rope_theta,sliding_window=local_attention,"
                  "sliding_window_pattern=global_attn_every_n_layers",
     .sources = "models/modernbert/configuration_modernbert.py transformers@decba1d2 (layer i global iff i % "
                "global_attn_every_n_layers (3) == 0, local_attention 128: |q - k| <= 64, global_rope_theta 160000, "
                "local_rope_theta 10000); llama.cpp@b97ebdc9 src/llama-model.cpp (modern-bert: set_swa_pattern(3, "
                "dense_first), LLAMA_SWA_TYPE_SYMMETRIC)"},
    {.family = "Nemotron",
     .hf_model_type = "nemotron",
     .gguf_arch = "nemotron",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.5,
     .sources = "models/nemotron/configuration_nemotron.py transformers@decba1d2 (partial_rotary_factor 0.5, "
                "rotate_half on the first half); llama.cpp@b97ebdc9 src/models/nemotron.cpp (NEOX)"},
    {.family = "Nemotron-H",
     .hf_model_type = "nemotron_h",
     .gguf_arch = "nemotron_h",
     .gguf_aliases = "nemotron_h_moe",
     .positional = positional_family::none,
     .default_head_dim = 128,
     .layers = layer_rule::hybrid_pattern,
     .mixer = layer_attention::mamba,
     .nope = nope_rule::all,
     .sources = "models/nemotron_h/configuration_nemotron_h.py transformers@decba1d2 (hybrid_override_pattern M / * / "
                "- / E, head_dim 128); modeling_nemotron_h.py (no RoPE is applied); llama.cpp@b97ebdc9 "
                "src/llama-model.cpp (recurrent iff head_count_kv and feed_forward_length are 0)"},
    {.family = "NeoBERT (GGUF)",
     .gguf_arch = "neo-bert",
     .hf_layout = inter,
     .gguf_layout = inter,
     .bidirectional = true,
     .sources = "llama.cpp@b97ebdc9 src/models/neo-bert.cpp (NORM, no permute, freq_base 10000) and "
                "convert_hf_to_gguf.py NeoBert; the remote-code config is not read"},
    {.family = "Nomic BERT",
     .hf_model_type = "nomic_bert",
     .gguf_arch = "nomic-bert",
     .gguf_aliases = "nomic-bert-moe",
     .default_theta = 1000,
     .bidirectional = true,
     .sources = "models/nomic_bert/configuration_nomic_bert.py transformers@decba1d2 (default_theta 1000, "
                "bidirectional); llama.cpp@b97ebdc9 src/models/bert.cpp (nomic-bert: NEOX)"},
    {.family = "OLMo 3",
     .hf_model_type = "olmo3",
     .default_theta = 500000,
     .layers = layer_rule::period,
     .default_period = 4,
     .default_window = 4096,
     .local_rope = local_rope_rule::unscaled_sliding,
     .sources = "models/olmo3/configuration_olmo3.py transformers@decba1d2 (default_theta 5e5, sliding_window 4096, "
                "layer_types: sliding iff (i + 1) % 4 != 0, legacy rope_scaling on full_attention only)"},
    {.family = "OpenELM (GGUF)",
     .gguf_arch = "openelm",
     .sources = "llama.cpp@b97ebdc9 src/models/openelm.cpp (NEOX, per-layer head counts) and convert_hf_to_gguf.py "
                "(rope_freq_constant as freq_base); the remote-code config is not read"},
    {.family = "Orion (GGUF)",
     .gguf_arch = "orion",
     .sources = "llama.cpp@b97ebdc9 src/models/orion.cpp (NEOX; the converter writes no rope keys: base 10000); the "
                "remote-code config is not read"},
    {.family = "PaddleOCR-VL",
     .hf_model_type = "paddleocr_vl",
     .hf_aliases = "paddleocr_vl_text",
     .gguf_arch = "paddleocr",
     .default_theta = 500000,
     .mrope = true,
     .sources = "models/paddleocr_vl/modeling_paddleocr_vl.py transformers@decba1d2 (rotate_half, mRoPE sections "
                "doubled over cat(freqs, freqs)); llama.cpp@b97ebdc9 src/models/paddleocr.cpp (MROPE)"},
    {.family = "openPangu Embedded (GGUF)",
     .gguf_arch = "pangu-embedded",
     .sources = "llama.cpp@b97ebdc9 src/models/pangu-embedded.cpp (NEOX); the remote-code config is not read"},
    {.family = "PLaMo (GGUF)",
     .gguf_arch = "plamo",
     .sources = "llama.cpp@b97ebdc9 src/models/plamo.cpp (NEOX, no rope keys: base 10000); the remote-code config is "
                "not read"},
    {.family = "PLaMo 2 (GGUF)",
     .gguf_arch = "plamo2",
     .layers = layer_rule::hybrid_block_types,
     .mixer = layer_attention::mamba,
     .sources = "llama.cpp@b97ebdc9 src/llama-model.cpp (plamo2: recurrent iff head_count_kv is 0) and "
                "src/models/plamo2.cpp (NEOX on the attention layers); the remote-code config is not read"},
    {.family = "PLaMo 3 (GGUF)",
     .gguf_arch = "plamo3",
     .layers = layer_rule::period,
     .default_period = 8,
     .local_rope = local_rope_rule::local_base,
     .default_local_theta = 10000,
     .sources = "llama.cpp@b97ebdc9 src/llama-model.cpp (plamo3: set_swa_pattern(sliding_window_pattern, default 8), "
                "rope.freq_base_swa default 10000) and src/models/plamo3.cpp (NEOX); the remote-code config is not "
                "read"},
    {.family = "PLM (GGUF)",
     .gguf_arch = "plm",
     .hf_layout = inter,
     .gguf_layout = inter,
     .partial = partial_rule::qk_rope_head_dim,
     .scale = scale_rule::qk_head_dim,
     .sources = "llama.cpp@b97ebdc9 src/models/plm.cpp (MLA-style rope slice, NORM, 1/sqrt(key_length)); the "
                "remote-code config is not read"},
    {.family = "Qwen (v1, GGUF)",
     .gguf_arch = "qwen",
     .sources = "llama.cpp@b97ebdc9 src/models/qwen.cpp (NEOX, 1/sqrt(head_dim)); Qwen-1's remote code "
                "(use_dynamic_ntk, use_logn_attn beyond seq_length) is not read"},
    {.family = "Refact (GGUF)",
     .gguf_arch = "refact",
     .positional = positional_family::alibi,
     .sources = "llama.cpp@b97ebdc9 src/llama-model.cpp (refact: ALiBi with max bias 8) and src/models/refact.cpp; "
                "the remote-code config is not read"},
    {.family = "RND1 (GGUF)",
     .gguf_arch = "rnd1",
     .bidirectional = true,
     .sources = "llama.cpp@b97ebdc9 src/models/rnd1.cpp (NEOX, causal_attn false); the remote-code config is not read"},
    {.family = "Seed-OSS",
     .hf_model_type = "seed_oss",
     .gguf_arch = "seed_oss",
     .default_head_dim = 128,
     .sources = "models/seed_oss/configuration_seed_oss.py transformers@decba1d2 (head_dim 128); llama.cpp@b97ebdc9 "
                "src/models/seed-oss.cpp (NEOX)"},
    {.family = "SmallThinker (GGUF)",
     .gguf_arch = "smallthinker",
     .layers = layer_rule::period,
     .default_period = 4,
     .period_first = true,
     .nope = nope_rule::non_sliding,
     .gguf_fixed_window = 4096,
     .sources = "llama.cpp@b97ebdc9 src/llama-model.cpp (smallthinker: with a window, n_swa 4096, set_swa_pattern(4, "
                "dense_first), RoPE iff il % 4 != 0) and src/models/smallthinker.cpp; the remote-code config is not "
                "read"},
    {.family = "Step-3.5 (GGUF)",
     .gguf_arch = "step35",
     .refused = "rope.dimension_count: Step-3.5 rotates half the dimensions on its full-attention layers and all of "
                "them on the sliding ones, per-layer-type rotary widths posenc does not model",
     .sources = "llama.cpp@b97ebdc9 src/llama-model.cpp (step35: n_rot halved for the full layers, line 2943)"},
    {.family = "XVERSE (GGUF)",
     .gguf_arch = "xverse",
     .gguf_layout = inter,
     .sources = "llama.cpp@b97ebdc9 src/models/xverse.cpp (NORM after the Llama permute); the remote-code config is "
                "not read"},
    {.family = "CLIP projector (GGUF)",
     .gguf_arch = "clip",
     .positional = positional_family::none,
     .refused = "general.architecture: a vision / audio projector (mmproj) file, not a language model",
     .sources = "llama.cpp@b97ebdc9 src/llama-arch.cpp (clip: only used by llama-quantize)"},
    {.family = "WavTokenizer decoder (GGUF)",
     .gguf_arch = "wavtokenizer-dec",
     .positional = positional_family::none,
     .refused = "general.architecture: an audio codec decoder (ConvNeXt and PosNet), not a language model",
     .sources = "llama.cpp@b97ebdc9 src/models/wavtokenizer-dec.cpp"},
    {.family = "BioGPT",
     .hf_model_type = "biogpt",
     .positional = positional_family::learned,
     .learned_offset = 2,
     .sources = "models/biogpt/modeling_biogpt.py transformers@decba1d2 (BioGptLearnedPositionalEmbedding offset 2, "
                "head_dim^-0.5)"},
    {.family = "CodeGen",
     .hf_model_type = "codegen",
     .hf_layout = inter,
     .partial = partial_rule::rotary_dim,
     .default_partial = 64,
     .sources = "models/codegen/modeling_codegen.py transformers@decba1d2 (create_sinusoidal_positions base 10000, "
                "rotate_every_two on the first rotary_dim (64) dims)"},
    {.family = "GPT-Neo",
     .hf_model_type = "gpt_neo",
     .positional = positional_family::learned,
     .layers = layer_rule::attention_types,
     .default_window = 256,
     .scale = scale_rule::unscaled,
     .spellings = "sliding_window=window_size",
     .sources = "models/gpt_neo/modeling_gpt_neo.py transformers@decba1d2 (wpe; attention_types global / local, "
                "window_size 256; q.k not divided by sqrt(d))"},
    {.family = "OPT",
     .hf_model_type = "opt",
     .positional = positional_family::learned,
     .learned_offset = 2,
     .sources = "models/opt/modeling_opt.py transformers@decba1d2 (OPTLearnedPositionalEmbedding offset 2, scaling "
                "head_dim^-0.5)"},
    {.family = "XGLM",
     .hf_model_type = "xglm",
     .positional = positional_family::sinusoidal,
     .learned_offset = 2,
     .sources = "models/xglm/modeling_xglm.py transformers@decba1d2 (XGLMSinusoidalPositionalEmbedding offset 2, "
                "head_dim^-0.5)"},
    {.family = "GPT-BigCode / StarCoder",
     .hf_model_type = "gpt_bigcode",
     .gguf_arch = "starcoder",
     .positional = positional_family::learned,
     .reads_scale_attn_weights = true,
     .sources = "models/gpt_bigcode/modeling_gpt_bigcode.py transformers@decba1d2 (wpe; scale head_dim^-0.5 iff "
                "scale_attn_weights); llama.cpp@b97ebdc9 src/models/starcoder.cpp (pos_embd; no rotation despite "
                "llama_model_rope_type NORM)"},
    {.family = "Helium",
     .hf_model_type = "helium",
     .hf_layout = inter,
     .default_theta = 100000,
     .sources = "models/helium/modeling_helium.py transformers@decba1d2 (interleaved rotate_half, default_theta 1e5; "
                "run by tests/golden/gen_conformance.py)"},
    {.family = "Bamba",
     .hf_model_type = "bamba",
     .partial = partial_rule::partial_rotary_factor,
     .default_partial = 0.5,
     .partial_fixed = true,
     .layers = layer_rule::hybrid_indices,
     .mixer = layer_attention::mamba,
     .sources = "models/bamba/configuration_bamba.py transformers@decba1d2 (attention at attn_layer_indices, else "
                "Mamba-2; __post_init__ sets kwargs partial_rotary_factor = 0.5 whatever the config says, "
                "rope_parameters' own kept); GGUF: the granitehybrid architecture"},
    {.family = "Granite 4.0-H",
     .hf_model_type = "granitemoehybrid",
     .gguf_arch = "granitehybrid",
     .gguf_layout = inter,
     .layers = layer_rule::hybrid_block_types,
     .mixer = layer_attention::mamba,
     .nope = nope_rule::position_embedding_type,
     .scale = scale_rule::attention_multiplier,
     .default_scale_param = 1.0,
     .spellings = "layer_types=layers_block_type",
     .sources = "models/granitemoehybrid/configuration_granitemoehybrid.py and modeling_granitemoehybrid.py "
                "transformers@decba1d2 (layer_types mamba / attention, default all Mamba; RoPE iff "
                "position_embedding_type == rope, line 1049; attention_multiplier 1.0); llama.cpp@b97ebdc9 "
                "src/llama-model.cpp (granitehybrid: recurrent iff head_count_kv 0, RoPE iff rope.scaling.finetuned) "
                "and convert_hf_to_gguf.py (Llama permute)"},
    {.family = "Jamba",
     .hf_model_type = "jamba",
     .gguf_arch = "jamba",
     .positional = positional_family::none,
     .layers = layer_rule::hybrid_period_offset,
     .mixer = layer_attention::mamba,
     .default_period = 8,
     .default_offset = 4,
     .nope = nope_rule::all,
     .sources = "models/jamba/configuration_jamba.py transformers@decba1d2 (attention iff i % attn_layer_period (8) "
                "== attn_layer_offset (4), else Mamba); modeling_jamba.py (no positional encoding); "
                "llama.cpp@b97ebdc9 src/llama-model.cpp (jamba: recurrent iff head_count_kv 0, rope type NONE)"},
}};

#undef POSENC_HF_V5

}  // namespace detail::arch

/// Every row of the table.
[[nodiscard]] constexpr const auto& architectures() noexcept {
  return detail::arch::table;
}

/// The rotary vision towers posenc loads from a multimodal config's vision_config.
inline constexpr std::array<vision_tower, 6> vision_towers{{
    {.name = "Pixtral",
     .model_types = "pixtral",
     .outer_types = "pixtral",
     .convention = vision_rope_convention::pixtral,
     .heads_key = "num_attention_heads",
     .depth_key = "num_hidden_layers",
     .reads_theta = true,
     .grid_side = true,
     .defaults = "hidden_size=1024,num_attention_heads=16,num_hidden_layers=24,image_size=1024,patch_size=16,"
                 "rope_theta=10000.0",
     .sources = "models/pixtral/configuration_pixtral.py and modeling_pixtral.py transformers@decba1d2 "
                "(head_dim = hidden_size // num_attention_heads whatever head_dim says; PixtralRotaryEmbedding: "
                "freqs[::2] on rows, freqs[1::2] on columns, image_size // patch_size per side)"},
    {.name = "Qwen2-VL vision",
     .model_types = "qwen2_vl_vision",
     .outer_types = "qwen2_vl",
     .hidden_key = "embed_dim",
     .merge = true,
     .defaults = "depth=32,embed_dim=1280,num_heads=16,patch_size=14,spatial_merge_size=2,temporal_patch_size=2",
     .sources = "models/qwen2_vl/configuration_qwen2_vl.py and modeling_qwen2_vl.py transformers@decba1d2 "
                "(VisionRotaryEmbedding(embed_dim // num_heads // 2), theta 10000; rot_pos_emb in merge blocks)"},
    {.name = "Qwen2.5-VL vision",
     .model_types = "qwen2_5_vl_vision",
     .outer_types = "qwen2_5_vl",
     .merge = true,
     .windows = true,
     .defaults = "depth=32,hidden_size=3584,num_heads=16,patch_size=14,spatial_merge_size=2,temporal_patch_size=2,"
                 "window_size=112",
     .sources = "models/qwen2_5_vl/configuration_qwen2_5_vl.py and modeling_qwen2_5_vl.py transformers@decba1d2 "
                "(Qwen2_5_VisionRotaryEmbedding(hidden_size // num_heads // 2), theta 10000; get_window_index, "
                "fullatt_block_indexes (7, 15, 23, 31) by default)"},
    {.name = "EXAONE 4.5 vision",
     .model_types = "exaone4_5_vision",
     .outer_types = "exaone4_5",
     .merge = true,
     .windows = true,
     .defaults = "depth=32,hidden_size=3584,num_heads=16,patch_size=14,spatial_merge_size=2,temporal_patch_size=2,"
                 "window_size=112",
     .sources = "models/exaone4_5/configuration_exaone4_5.py and modular_exaone4_5.py transformers@decba1d2 "
                "(Qwen2.5-VL's vision transformer with grouped kv heads: Qwen2_5_VisionRotaryEmbedding(hidden_size // "
                "num_heads // 2), theta 10000; fullatt_block_indexes (7, 15, 23, 31) by default)"},
    {.name = "Qwen3-VL vision",
     .model_types = "qwen3_vl,qwen3_vl_vision,qwen3_vl_moe",
     .outer_types = "qwen3_vl,qwen3_vl_moe",
     .merge = true,
     .learned_grid = true,
     .defaults = "depth=27,hidden_size=1152,num_heads=16,patch_size=16,spatial_merge_size=2,temporal_patch_size=2,"
                 "num_position_embeddings=2304",
     .sources = "models/qwen3_vl/configuration_qwen3_vl.py and modeling_qwen3_vl.py transformers@decba1d2 "
                "(Qwen3VLVisionRotaryEmbedding(hidden_size // num_heads // 2), theta 10000; pos_embed of "
                "num_position_embeddings bilinearly interpolated, added to the patches)"},
    {.name = "Llama 4 vision",
     .model_types = "llama4_vision_model",
     .outer_types = "llama4",
     .convention = vision_rope_convention::llama4,
     .heads_key = "num_attention_heads",
     .depth_key = "num_hidden_layers",
     .reads_theta = true,
     .grid_side = true,
     .defaults = "hidden_size=768,num_attention_heads=16,num_hidden_layers=34,image_size=448,patch_size=14,"
                 "rope_theta=10000.0",
     .sources = "models/llama4/configuration_llama4.py and modeling_llama4.py transformers@decba1d2 "
                "(Llama4VisionRotaryEmbedding: interleaved pairs, x then y, positions from 1, the class token last "
                "with angle 0)"},
}};

/// The vision tower of a vision_config: by its model_type, else by the model_type of the config holding it;
/// nullptr when neither names a rotary tower posenc knows.
[[nodiscard]] inline const vision_tower* find_vision_tower(std::string_view vision_type, std::string_view outer_type) {
  for (const auto& t : vision_towers)
    if (!vision_type.empty() && detail::arch::in_list(t.model_types, vision_type)) return &t;
  if (!vision_type.empty()) return nullptr;
  for (const auto& t : vision_towers)
    if (detail::arch::in_list(t.outer_types, outer_type)) return &t;
  return nullptr;
}

/// The row for an HF model_type; `alibi` picks Falcon's ALiBi variant. nullptr when unknown.
[[nodiscard]] inline const architecture* find_hf_architecture(std::string_view model_type, bool alibi = false) {
  for (const auto& a : detail::arch::table) {
    if (model_type.empty() || (a.hf_model_type != model_type && !detail::arch::in_list(a.hf_aliases, model_type)))
      continue;
    if (model_type == "falcon" && (a.positional == positional_family::alibi) != alibi) continue;
    return &a;
  }
  return nullptr;
}

/// The row for a llama.cpp architecture name (the first row naming it). nullptr when unknown.
[[nodiscard]] inline const architecture* find_gguf_architecture(std::string_view arch) {
  for (const auto& a : detail::arch::table)
    if (!arch.empty() && !a.gguf_arch.empty() && (a.gguf_arch == arch || detail::arch::in_list(a.gguf_aliases, arch)))
      return &a;
  return nullptr;
}

namespace detail::arch {

/// Levenshtein distance (names are short).
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// Every name of one format in the table (model types and aliases, or llama.cpp architectures).
inline std::vector<std::string_view> all_names(bool gguf) {
  std::vector<std::string_view> out;
  auto add_list = [&](std::string_view list) {
    while (!list.empty()) {
      const auto c = list.find(',');
      out.push_back(list.substr(0, c));
      if (c == std::string_view::npos) break;
      list.remove_prefix(c + 1);
    }
  };
  for (const auto& a : table) {
    add_list(gguf ? a.gguf_arch : a.hf_model_type);
    add_list(gguf ? a.gguf_aliases : a.hf_aliases);
  }
  return out;
}

}  // namespace detail::arch

/// The known names closest to `name` (edit distance, at most `count`, ties in table order): for the
/// message that refuses an unknown model_type (`gguf` false) or llama.cpp architecture (`gguf` true).
[[nodiscard]] inline std::vector<std::string> nearest_architecture_names(std::string_view name, bool gguf,
                                                                         std::size_t count = 3) {
  std::vector<std::pair<std::size_t, std::string_view>> scored;
  for (const auto n : detail::arch::all_names(gguf)) {
    bool seen = false;
    for (const auto& s : scored) seen = seen || s.second == n;
    if (!seen) scored.emplace_back(detail::arch::edit_distance(name, n), n);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < count; ++i) out.emplace_back(scored[i].second);
  return out;
}

}  // namespace posenc::inline v0
