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
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 12> no_effect_keys{{
    {"use_qk_norm / qk_layernorm", "norms on the q/k projections: the caller's, before attention"},
    {"attn_config.clip_qkv", "MPT clamps the q/k/v projections: the caller's, before attention"},
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
inline constexpr std::array<architecture, 53> table{{
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
     .local_rope = local_rope_rule::local_base,
     .default_local_theta = 10000,
     .scale = scale_rule::query_pre_attn_scalar,
     .default_scale_param = 256,
     .softcap = true,
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
     .gguf_arch = "lfm2",
     .default_theta = 1000000,
     .layers = layer_rule::hybrid_indices,
     .mixer = layer_attention::conv,
     .indices_default_attention = true,
     .sources = "models/lfm2/configuration_lfm2.py transformers@decba1d2 (default_theta 1e6, layer_types: "
                "full_attention at full_attn_idxs (default every layer), else conv); modeling_lfm2.py (rotate_half "
                "on the attention layers, scaling head_dim^-0.5); llama.cpp src/llama-model.cpp llama.cpp@b97ebdc9 "
                "(lfm2: recurrent_layer_arr[i] = n_head_kv(i) == 0; rope type NEOX)"},
}};

#undef POSENC_HF_V5

}  // namespace detail::arch

/// Every row of the table.
[[nodiscard]] constexpr const auto& architectures() noexcept {
  return detail::arch::table;
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
