// posenc/config/view.hpp — one normalised view of a model configuration's keys, whatever its format.
//
// llama.cpp's LLM_KV is the model: one logical key, one spelling per format. The format readers
// (config/read_hf.hpp: config.json, legacy keys and transformers v5 `rope_parameters`; config/read_gguf.hpp:
// GGUF metadata) fill a key_view under the logical names (Hugging Face's canonical spelling) and
// remember how each key was spelled in the file, so that every rule (config/rules.hpp) serves every
// format and its errors name the key as the user wrote it. RoPE parameters are kept per layer type
// ("" for every layer). This header holds the view, the catalogue of spellings and typed access; it
// decides nothing about what a key means.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/config/model_config.hpp>
#include <posenc/config/value.hpp>

namespace posenc::inline v0 {

/// One logical key and its spellings: further Hugging Face names (aliases that must agree with it,
/// comma-separated) and the GGUF suffix after `{arch}.` ("" when llama.cpp has none).
struct logical_key {
  std::string_view name;
  std::string_view hf_aliases;
  std::string_view gguf;
};

/// The keys whose spelling differs between the formats (the others are read under their HF names).
inline constexpr std::array<logical_key, 16> logical_keys{{
    {"num_hidden_layers", "num_layers,n_layer,n_layers", "block_count"},
    {"hidden_size", "n_embd,d_model", "embedding_length"},
    {"num_attention_heads", "n_head,num_heads,n_heads", "attention.head_count"},
    {"num_key_value_heads", "", "attention.head_count_kv"},
    {"head_dim", "", "attention.key_length"},
    {"max_position_embeddings", "n_positions,max_seq_len", "context_length"},
    {"rope_theta", "rotary_emb_base", "rope.freq_base"},
    {"partial_rotary_factor", "rotary_pct", ""},
    {"rotary_dim", "", "rope.dimension_count"},
    {"sliding_window", "", "attention.sliding_window"},
    {"sliding_window_pattern", "", "attention.sliding_window_pattern"},
    {"full_attention_interval", "", "full_attention_interval"},
    {"attn_logit_softcapping", "", "attn_logit_softcapping"},
    {"final_logit_softcapping", "", "final_logit_softcapping"},
    {"relative_attention_num_buckets", "", "attention.relative_buckets_count"},
    {"alibi_bias_max", "", "attention.max_alibi_bias"},
}};

/// RoPE parameters of one layer type: rope_type, rope_theta, partial_rotary_factor and the scaling's
/// keys, under their HF names.
struct rope_entry {
  std::string layer_type;  ///< "" for every layer type
  config_value params = config_value::object();
  std::string prefix;  ///< how the entry's keys are spelled: "rope_scaling.", "rope_parameters.full_attention.", ...
  std::map<std::string, std::string, std::less<>> spelling;  ///< keys spelled otherwise (GGUF)
};

/// A configuration's keys under their logical names.
struct key_view {
  std::string format;         ///< "hf" or "gguf"
  std::string model_type;     ///< the name the family is looked up by (text_config's model_type when nested)
  std::string reported_type;  ///< the model_type / general.architecture reported (the outer one)
  std::string prefix;         ///< where the keys sit in the file ("text_config." for nested configs)
  config_value keys = config_value::object();
  std::map<std::string, std::string, std::less<>> spelling;  ///< logical name -> as spelled in the file
  std::vector<rope_entry> rope;                              ///< RoPE parameters per layer type ("" first when given)
  config_value tensors = config_value::object();             ///< GGUF RoPE tensors by name
  config_value vision;  ///< HF `vision_config` of a multimodal model as written (null when absent)
  std::vector<std::string> warnings;

  [[nodiscard]] bool gguf() const noexcept { return format == "gguf"; }
  /// Typed access to the logical keys (detail::key_reader semantics: null is absent, wrong types throw
  /// config_error naming the key as spelled in the file).
  [[nodiscard]] detail::key_reader read() const { return detail::key_reader{&keys, prefix, &spelling}; }
  [[nodiscard]] const config_value* get(std::string_view key) const noexcept { return read().get(key); }
  [[nodiscard]] bool has(std::string_view key) const noexcept { return get(key) != nullptr; }
  /// True when the key is present, also as an explicit null (null means "none" for a few keys).
  [[nodiscard]] bool present(std::string_view key) const noexcept { return keys.find(key) != nullptr; }
  [[nodiscard]] std::string name(std::string_view key) const { return read().name(key); }
  void set(std::string_view key, config_value v, std::string spelled) {
    keys.set(key, std::move(v));
    spelling[std::string(key)] = std::move(spelled);
  }
  /// The RoPE entry of `layer_type`, else the one for every layer type; nullptr when neither.
  [[nodiscard]] const rope_entry* rope_for(std::string_view layer_type) const noexcept {
    const rope_entry* all = nullptr;
    for (const auto& e : rope) {
      if (e.layer_type == layer_type) return &e;
      if (e.layer_type.empty()) all = &e;
    }
    return all;
  }
};

}  // namespace posenc::inline v0
