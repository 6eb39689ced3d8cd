// posenc/config/layered.hpp — per-layer positional configuration: which encoder, mask, scale and
// soft-cap act on each layer, read from Hugging Face config.json or GGUF metadata.
//
// What a family does is not guessed from the keys a config happens to carry: the architecture table
// (config/architectures.hpp) gives each family's pair layout, class defaults, layer rules (sliding
// patterns, NoPE layers, chunked layers, the mixer layers of hybrid models), softmax scale and
// soft-capping, and both formats go through the same rules (config/rules.hpp), so an HF config and the
// GGUF converted from it give the same layers where transformers and llama.cpp agree. Examples: Gemma
// 2/3 sliding layers with their own RoPE base, query_pre_attn_scalar and soft-capping; Cohere2 and
// EXAONE 4 rotating only their sliding layers; Llama 4 NoPE layers with a query temperature and chunked
// RoPE layers; gpt-oss sinks; Qwen3-Next / Jamba / LFM2 mixer layers (posenc applies nothing there);
// OLMo 3 YaRN on its full-attention layers only; Qwen2-VL / 2.5-VL / 3-VL mRoPE sections. Strictness:
// an unknown family is refused (unless generic), absent != 0, a pattern longer than the layer count,
// lists of the wrong length and contradictions are config_error naming the key. This header only
// describes and loads; config/layer_encoder.hpp builds the encoders and attention options.
#pragma once

#include <posenc/config/gguf.hpp>
#include <posenc/config/hf.hpp>
#include <posenc/config/layered_config.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/read_gguf.hpp>
#include <posenc/config/read_hf.hpp>
#include <posenc/config/rules.hpp>
#include <posenc/config/value.hpp>

namespace posenc::inline v0 {

/// Reads the per-layer positional configuration of a Hugging Face config.json tree (legacy keys and
/// the transformers v5 rope_parameters / layer_types forms). A multimodal config whose text model sits
/// under `text_config` (Gemma 3, Llama 4, Qwen3-VL) is read from there. Keys the family's reference
/// reads are applied or refused (config_error naming the key); keys it does not read are reported in
/// `warnings`. An unknown model_type is a config_error unless `options.generic`.
[[nodiscard]] inline layered_config load_hf_layered(const config_value& root, const load_options& options = {}) {
  return detail::rules::load_layered(read_hf_view(root), options);
}

/// Reads the per-layer positional configuration from GGUF metadata the way llama.cpp runs it:
/// `{arch}.block_count`, `{arch}.rope.dimension_sections` ([t, h, w, 4th]; the 4th stream must be 0),
/// `{arch}.rope.freq_base_swa` (sliding layers' base, no scaling), `{arch}.attention.sliding_window`,
/// `{arch}.attention.sliding_window_pattern` (a period or one bool per layer), per-layer KV head counts
/// (0: a hybrid model's mixer layer), `{arch}.attention.temperature_scale` / `.temperature_length`
/// (Mistral 3 rule), `{arch}.attention.scale` (Granite), `{arch}.attn_logit_softcapping` /
/// `{arch}.final_logit_softcapping` (Gemma 2), `{arch}.full_attention_interval` (Qwen3-Next). Where a
/// key is absent llama.cpp's built-in values apply (Gemma 2 / gpt-oss alternate, Gemma 3 period 6 with a
/// sliding base of 10000, Cohere2 period 4, Llama 4 NoPE every 4th layer with the temperature
/// (8192, 0.1) and chunks of 8192, SmolLM3 NoPE every 4th layer), with a warning.
[[nodiscard]] inline layered_config load_gguf_layered(const config_value& metadata,
                                                      const config_value* tensors = nullptr,
                                                      const load_options& options = {}) {
  return detail::rules::load_layered(read_gguf_view(metadata, tensors), options);
}

}  // namespace posenc::inline v0
