// posenc/config/read_gguf.hpp — the GGUF metadata reader: llama.cpp's `{arch}.*` keys -> key_view.
//
// Maps each `{arch}.<suffix>` of config/view.hpp's catalogue onto its logical name; per-layer arrays
// (head counts, feed-forward widths: llama.cpp writes an array when layers differ) become one value
// plus the array under `<name>_per_layer`, which is how llama.cpp marks the recurrent layers of hybrid
// models (a KV head count of 0); a per-layer sliding-window pattern (one bool per layer) becomes
// `layer_types`; `rope.dimension_sections` becomes `mrope_section`, `rope.freq_base_swa` the sliding
// layers' RoPE entry, and the scaling keys are read through the scaling descriptors' GGUF spellings
// (rope/scaling/<name>.hpp). llama.cpp's defaults follow it: an absent scaling type with a factor is
// linear; the rope_freqs tensor and rope.scaling.alpha select their scalings. Unknown `rope.*` keys are
// reported in warnings. It interprets nothing else (config/rules.hpp does).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/config/model_config.hpp>
#include <posenc/config/value.hpp>
#include <posenc/config/view.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/rope/config.hpp>

namespace posenc::inline v0 {

namespace detail::read {

/// A per-layer integer array (llama.cpp writes one when layers differ): entries checked as integers
/// in [0, 2^31), the array kept under `<logical>_per_layer`, and the model's value is the first
/// nonzero entry (0 marks a layer without attention or MLP), with a warning when nonzero entries differ.
inline void read_per_layer(key_view& v, const config_value& md, const std::string& key, std::string_view logical) {
  const config_value* a = md.find(key);
  if (!a || a->is_null()) return;
  if (!a->is_list()) {
    v.set(logical, *a, key);
    return;
  }
  std::optional<std::int64_t> first;
  std::size_t first_at = 0;
  bool differs = false;
  for (std::size_t i = 0; i < a->items().size(); ++i) {
    const config_value& e = a->items()[i];
    const std::string name = key + "[" + std::to_string(i) + "]";
    if (!e.is_integer() || e.as_integer() < 0 || e.as_integer() > 2147483647)
      throw config_error(name, e.to_text(), "an integer in [0, 2147483647]");
    if (e.as_integer() == 0) continue;
    if (!first) {
      first = e.as_integer();
      first_at = i;
    } else if (e.as_integer() != *first) {
      differs = true;
    }
  }
  v.set(std::string(logical) + "_per_layer", *a, key);
  if (!first) {
    if (!a->items().empty()) v.warnings.push_back(key + ": 0 for every layer (no attention layer); ignored");
    return;
  }
  if (differs)
    v.warnings.push_back(key + ": differs per attention layer; using the first, " + key + "[" +
                         std::to_string(first_at) + "] = " + std::to_string(*first));
  v.set(logical, config_value::integer(*first), key);
}

/// The scaling type llama.cpp runs: a descriptor selected by its key or tensor (rope_freqs, alpha), else
/// rope.scaling.type by the descriptors' GGUF names ("none"; absent with a factor: linear).
inline std::string gguf_scaling_name(const config_value& md, const config_value* tensors, const std::string& p,
                                     bool& has_factor) {
  has_factor = md.find(p + "rope.scaling.factor") || md.find(p + "rope.scale_linear");
  const detail::key_reader r{&md, ""};
  const auto type = r.string(p + "rope.scaling.type");
  std::string name;
  if (!type) {
    name = has_factor ? "linear" : "default";
  } else {
    std::string known;
    for_each_scaling([&](auto d) {
      using D = decltype(d);
      if (D::gguf_name.empty()) return;
      known += (known.empty() ? "" : ", ") + std::string(D::gguf_name);
      if (D::gguf_name == *type) name = D::name;
    });
    if (name.empty()) throw config_error(p + "rope.scaling.type", "\"" + *type + "\"", "one of " + known);
  }
  // rope_freqs / alpha select their scalings where llama.cpp would otherwise apply none (or linear at 1)
  const auto factor = r.number(p + "rope.scaling.factor");
  const bool identity = name == "default" || (name == "linear" && (!factor || *factor == 1.0));
  for_each_scaling([&](auto d) {
    using D = decltype(d);
    if constexpr (requires { D::gguf_selected_by; }) {
      const std::string_view by = D::gguf_selected_by;
      const bool present = by.substr(0, 7) == "tensor:" ? (tensors && tensors->find(by.substr(7)))
                                                        : md.find(p + std::string(by)) != nullptr;
      if (!present) return;
      if (!identity && by.substr(0, 7) == "tensor:")
        throw config_error(std::string(by.substr(7)), "cannot be combined with " + p + "rope.scaling.type = " + name);
      if (identity) name = D::name;
    }
  });
  return name;
}

/// The RoPE entry for every layer: the scaling's keys under their logical names (the descriptor's
/// GGUF spellings), rope_type the descriptor's name.
inline void read_gguf_scaling(key_view& v, const config_value& md, const config_value* tensors, const std::string& p) {
  bool has_factor = false;
  const std::string name = gguf_scaling_name(md, tensors, p, has_factor);
  rope_entry e{"", config_value::object(), p + "rope.scaling.", {}};
  e.params.set("rope_type", config_value::string(name));
  e.spelling["rope_type"] = p + "rope.scaling.type";
  for_each_scaling([&](auto d) {
    using D = decltype(d);
    if (D::name != name) return;
    for (const auto& s : D::gguf_keys) {
      const bool tensor = s.gguf.substr(0, 7) == "tensor:";
      const std::string key = tensor ? std::string(s.gguf.substr(7)) : p + std::string(s.gguf);
      const config_value* value = tensor ? (tensors ? tensors->find(key) : nullptr) : md.find(key);
      if (!value || value->is_null()) {
        e.spelling.emplace(std::string(s.key), key);  // the first spelling names an absent key
        continue;
      }
      if (const config_value* prev = e.params.find(s.key); prev && !(*prev == *value))
        throw config_error(key, "contradicts " + e.spelling[std::string(s.key)] + " (" + prev->to_text() + " vs " +
                                    value->to_text() + ")");
      if (!e.params.find(s.key)) e.spelling[std::string(s.key)] = key;
      e.params.set(s.key, *value);
    }
  });
  v.rope.insert(v.rope.begin(), std::move(e));
}

/// `{arch}.rope.*` keys this reader does not know, or knows and does not interpret, go to warnings.
inline void warn_rope_keys(key_view& v, const config_value& md, const std::string& p) {
  static constexpr std::string_view known[] = {"rope.freq_base",
                                               "rope.dimension_count",
                                               "rope.scale_linear",
                                               "rope.scaling.type",
                                               "rope.scaling.factor",
                                               "rope.scaling.original_context_length",
                                               "rope.scaling.alpha",
                                               "rope.scaling.attn_factor",
                                               "rope.scaling.yarn_beta_fast",
                                               "rope.scaling.yarn_beta_slow",
                                               "rope.scaling.yarn_ext_factor",
                                               "rope.scaling.yarn_log_multiplier",
                                               "rope.dimension_sections",
                                               "rope.freq_base_swa"};
  for (const auto& m : md.members()) {
    if (m.key.rfind(p + "rope.", 0) != 0) continue;
    const std::string_view suffix = std::string_view(m.key).substr(p.size());
    if (std::find(std::begin(known), std::end(known), suffix) != std::end(known)) continue;
    if (suffix == "rope.dimension_count_swa")
      v.warnings.push_back(m.key +
                           ": sliding-window layers' rotary width is not modelled; rope.dimension_count is used");
    else if (suffix == "rope.scaling.yarn_attn_factor")
      v.warnings.push_back(m.key + ": not interpreted; ignored");
    else
      v.warnings.push_back(m.key + ": unknown rope key; ignored");
  }
}

/// `{arch}.attention.sliding_window_pattern`: a period, or one bool per layer (then `layer_types`).
inline void read_swa_pattern(key_view& v, const config_value& md, const std::string& p) {
  const std::string key = p + "attention.sliding_window_pattern";
  const config_value* a = md.find(key);
  if (!a || a->is_null()) return;
  if (!a->is_list()) {
    v.set("sliding_window_pattern", *a, key);
    return;
  }
  config_value types = config_value::list();
  for (std::size_t i = 0; i < a->items().size(); ++i) {
    const auto& e = a->items()[i];
    if (!e.is_bool()) throw config_error(key + "[" + std::to_string(i) + "]", e.to_text(), "a bool");
    types.push_back(config_value::string(e.as_bool() ? "sliding_attention" : "full_attention"));
  }
  v.set("layer_types", std::move(types), key);
}

}  // namespace detail::read

/// The key_view of GGUF metadata (an object of "key" -> value, keys as in the file) and, optionally,
/// its small RoPE tensors by name ("rope_freqs.weight", "rope_factors_long.weight",
/// "rope_factors_short.weight") as lists of numbers. Throws config_error naming the key for a missing
/// general.architecture, malformed per-layer arrays and unknown scaling types.
[[nodiscard]] inline key_view read_gguf_view(const config_value& metadata, const config_value* tensors = nullptr) {
  namespace R = detail::read;
  if (!metadata.is_object()) throw config_error("gguf", metadata.to_text(), "an object of metadata keys");
  key_view v;
  v.format = "gguf";
  const detail::key_reader md{&metadata, ""};
  const auto arch = md.string("general.architecture");
  if (!arch) throw config_error("general.architecture", "absent", "the model architecture name");
  v.model_type = v.reported_type = *arch;
  const std::string p = *arch + ".";
  for (const auto& lk : logical_keys) {
    if (lk.gguf.empty()) continue;
    v.spelling[std::string(lk.name)] = p + std::string(lk.gguf);  // absent keys are named as llama.cpp spells them
    if (lk.name != "num_attention_heads" && lk.name != "num_key_value_heads" && lk.name != "sliding_window_pattern")
      if (const config_value* e = metadata.find(p + std::string(lk.gguf)); e && !e->is_null())
        v.set(lk.name, *e, p + std::string(lk.gguf));
  }
  R::read_per_layer(v, metadata, p + "attention.head_count", "num_attention_heads");
  R::read_per_layer(v, metadata, p + "attention.head_count_kv", "num_key_value_heads");
  R::read_per_layer(v, metadata, p + "feed_forward_length", "intermediate_size");
  R::read_swa_pattern(v, metadata, p);
  const std::pair<const char*, const char*> more[] = {{"attention.key_length_mla", "key_length_mla"},
                                                      {"attention.scale", "attention_scale"},
                                                      {"rope.dimension_sections", "mrope_section"},
                                                      {"attention.temperature_scale", "temperature_scale"},
                                                      {"attention.temperature_length", "temperature_length"},
                                                      {"attention.output_scale", "attention_output_scale"},
                                                      {"attention.causal", "causal"},
                                                      {"rope.scaling.finetuned", "rope_finetuned"}};
  for (const auto& [suffix, logical] : more) {
    v.spelling[logical] = p + suffix;
    if (const config_value* e = metadata.find(p + suffix); e && !e->is_null()) v.set(logical, *e, p + suffix);
  }
  if (tensors && tensors->is_object()) v.tensors = *tensors;
  R::read_gguf_scaling(v, metadata, tensors, p);
  if (const config_value* swa = metadata.find(p + "rope.freq_base_swa"); swa && !swa->is_null()) {
    rope_entry e{"sliding_attention", config_value::object(), p + "rope.", {{"rope_theta", p + "rope.freq_base_swa"}}};
    e.params.set("rope_type", config_value::string("default"));
    e.params.set("rope_theta", *swa);
    v.rope.push_back(std::move(e));
  }
  R::warn_rope_keys(v, metadata, p);
  return v;
}

}  // namespace posenc::inline v0
