// posenc/config/layered.hpp — per-layer positional configuration: which encoder acts on each layer,
// read from Hugging Face config.json or GGUF metadata.
//
// docs/spec.md §7.8, §8.8, §11. Today's models mix encoders across layers:
//   - Gemma 2/3: sliding (local) layers use RoPE with `rope_local_base_freq` and NO scaling, full
//     (global) layers `rope_theta` with `rope_scaling` (HF legacy: sliding iff (i + 1) %
//     sliding_window_pattern != 0; Gemma 2: even layers; v5: `layer_types` and
//     `rope_parameters[layer_type]`; GGUF: `rope.freq_base_swa`, `attention.sliding_window_pattern`);
//   - gpt-oss: `layer_types` alternating sliding (window 128) / full, YaRN with truncate: false on
//     every layer, learned attention sinks;
//   - Llama 4: `no_rope_layers[i] == 1` means layer i USES RoPE (default every 4th layer is NoPE,
//     `no_rope_layer_interval`); NoPE layers get the query temperature (attn_temperature_tuning,
//     floor_scale, attn_scale); RoPE layers are chunked (attention_chunk_size);
//   - Mistral / Ministral 3: `rope_parameters.llama_4_scaling_beta` puts the other temperature rule
//     on every layer, after RoPE;
//   - Qwen2-VL / 2.5-VL / 3-VL: `mrope_section` (+ `mrope_interleaved`), GGUF `rope.dimension_sections`.
// Strictness as config/hf.hpp: absent != 0, a pattern longer than the layer count, lists of the
// wrong length, contradictions between legacy and v5 keys are config_error naming the key. This
// header only describes and loads; config/layer_encoder.hpp builds the encoders.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/config/gguf.hpp>
#include <posenc/config/hf.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/value.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/config.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/schedule.hpp>

namespace posenc::inline v0 {

/// The attention span of a layer.
enum class layer_attention : unsigned char {
  full,     ///< every earlier key ("full_attention")
  sliding,  ///< the last `window` keys ("sliding_attention")
  chunked,  ///< keys of the same chunk of `window` tokens (Llama 4 "chunked_attention")
};

/// HF v5 layer-type name of a layer_attention.
[[nodiscard]] inline const char* layer_type_name(layer_attention a) noexcept {
  return a == layer_attention::full ? "full_attention"
                                    : (a == layer_attention::sliding ? "sliding_attention" : "chunked_attention");
}

/// What acts on one layer.
struct layer_spec {
  layer_attention attention = layer_attention::full;
  std::optional<std::int64_t> window{};  ///< sliding window (sliding) or chunk size (chunked); absent for full
  std::optional<rope_config> rope{};     ///< absent: NoPE
  std::optional<attention_temperature_config> temperature{};  ///< query temperature of this layer
  std::string rope_source;  ///< where the RoPE came from: "global", "local", "rope_parameters.<type>", "none"
  friend bool operator==(const layer_spec&, const layer_spec&) = default;
};

/// mRoPE sections of a multimodal model (rope/mrope.hpp).
struct mrope_spec {
  std::array<int, 3> section{};
  mrope_layout layout = mrope_layout::contiguous;
  friend bool operator==(const mrope_spec&, const mrope_spec&) = default;
};

/// A model's positional configuration, layer by layer.
struct layered_config {
  model_config base;               ///< what load_hf_config / load_gguf_config read (the global RoPE)
  std::vector<layer_spec> layers;  ///< one per layer (num_hidden_layers / block_count)
  std::optional<mrope_spec> mrope{};
  bool attention_sinks = false;  ///< learned per-head sink logits in the softmax (gpt-oss)
  std::vector<std::string> warnings;
};

namespace detail::layered {

/// A copy of object `o` without the keys in `drop`.
inline config_value without(const config_value& o, std::initializer_list<std::string_view> drop) {
  config_value out = config_value::object();
  for (const auto& m : o.members())
    if (std::find(drop.begin(), drop.end(), m.key) == drop.end()) out.set(m.key, m.value);
  return out;
}

/// base.warnings minus those about keys this loader models.
inline std::vector<std::string> residual_warnings(const std::vector<std::string>& w) {
  std::vector<std::string> out;
  for (const auto& s : w) {
    const bool handled =
        s.rfind("rope_local_base_freq", 0) == 0 || s.rfind("no_rope_layer", 0) == 0 ||
        s.find("mrope_section") != std::string::npos || s.find("mrope_interleaved") != std::string::npos ||
        s.find("llama_4_scaling_beta") != std::string::npos || s.find("per-layer-type RoPE") != std::string::npos ||
        s.find("rope.dimension_sections") != std::string::npos || s.find("rope.freq_base_swa") != std::string::npos ||
        s.find("multimodal RoPE") != std::string::npos;
    if (!handled) out.push_back(s);
  }
  return out;
}

/// Rotary pair count of a rope_config (validates it).
inline int pairs_of(const rope_config& c) {
  return rope_schedule(c).pairs();
}

inline void check_temperature(const attention_temperature_config& t, const std::string& floor_key,
                              const std::string& scale_key) {
  detail::require(std::isfinite(t.floor_scale) && t.floor_scale > 0, floor_key, t.floor_scale, "a finite number > 0");
  detail::require(std::isfinite(t.scale) && t.scale >= 0, scale_key, t.scale, "a finite number >= 0");
}

/// Sliding flags from a period (sliding iff (i + 1) % period != 0, Gemma 3 / llama.cpp set_swa_pattern).
inline std::vector<bool> sliding_from_period(int n, std::int64_t period) {
  std::vector<bool> s(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) s[static_cast<std::size_t>(i)] = (i + 1) % period != 0;
  return s;
}

}  // namespace detail::layered

/// Reads the per-layer positional configuration of a Hugging Face config.json tree. A multimodal
/// config whose text model sits under `text_config` (Gemma 3, Llama 4, Qwen3-VL) is read from there.
[[nodiscard]] inline layered_config load_hf_layered(const config_value& root) {
  namespace L = detail::layered;
  if (!root.is_object()) throw config_error("config", root.to_text(), "a JSON object");
  const config_value* tc = root.find("text_config");
  const bool nested = tc && tc->is_object();
  const config_value& text = nested ? *tc : root;
  const std::string pre = nested ? "text_config." : "";
  layered_config out;
  out.base = load_hf_config(text);
  const detail::key_reader top{&text, pre};
  const detail::key_reader outer{&root, ""};
  if (const auto mt = outer.string("model_type")) out.base.model_type = *mt;  // gemma3, llama4, qwen3_vl, ...
  const std::string mt = out.base.model_type;
  out.warnings = L::residual_warnings(out.base.warnings);
  const bool llama4 = mt == "llama4" || mt == "llama4_text";

  const auto n_opt = top.int32("num_hidden_layers", 1);
  if (!n_opt) throw config_error(pre + "num_hidden_layers", "absent", "the layer count (>= 1)");
  const int n = *n_opt;
  const auto nz = static_cast<std::size_t>(n);

  // ---- which layers use RoPE (Llama 4) ----
  std::vector<bool> use_rope(nz, out.base.rope.has_value());
  const bool has_nrl = top.has("no_rope_layers"), has_interval = top.has("no_rope_layer_interval");
  if (has_nrl || has_interval || llama4) {
    if (has_nrl) {
      const config_value* v = top.get("no_rope_layers");
      if (!v->is_list()) throw config_error(pre + "no_rope_layers", v->to_text(), "a list of 0/1 per layer");
      detail::require(v->items().size() == nz, pre + "no_rope_layers", v->items().size(),
                      "num_hidden_layers = " + std::to_string(n) + " entries");
      for (std::size_t i = 0; i < nz; ++i) {
        const auto& e = v->items()[i];
        if (!e.is_integer() || (e.as_integer() != 0 && e.as_integer() != 1))
          throw config_error(pre + "no_rope_layers[" + std::to_string(i) + "]", e.to_text(),
                             "0 (NoPE) or 1 (the layer uses RoPE)");
        use_rope[i] = use_rope[i] && e.as_integer() == 1;
      }
      if (has_interval) {
        const auto iv = *top.int32("no_rope_layer_interval", 1);
        for (int i = 0; i < n; ++i)
          if (((i + 1) % iv != 0) != use_rope[static_cast<std::size_t>(i)])
            throw config_error(pre + "no_rope_layer_interval",
                               "contradicts no_rope_layers at layer " + std::to_string(i));
      }
    } else {
      const auto iv = top.int32("no_rope_layer_interval", 1).value_or(4);  // HF Llama4TextConfig default
      detail::require(iv <= n, pre + "no_rope_layer_interval", iv,
                      "<= num_hidden_layers = " + std::to_string(n) + " (a pattern longer than the model)");
      for (int i = 0; i < n; ++i)
        use_rope[static_cast<std::size_t>(i)] = use_rope[static_cast<std::size_t>(i)] && (i + 1) % iv != 0;
    }
  }

  // ---- attention kind per layer ----
  std::vector<layer_attention> kind(nz, layer_attention::full);
  std::optional<std::vector<bool>> sliding;
  const auto pattern = top.int32("sliding_window_pattern", 1);
  if (pattern) {
    detail::require(*pattern <= n, pre + "sliding_window_pattern", *pattern,
                    "<= num_hidden_layers = " + std::to_string(n) + " (a pattern longer than the model)");
    sliding = L::sliding_from_period(n, *pattern);
  } else if ((mt == "gemma2" || mt == "gpt_oss") && !top.has("layer_types")) {
    sliding = L::sliding_from_period(n, 2);  // HF Gemma 2 / GptOssConfig default: even layers slide
  }
  if (sliding)
    for (std::size_t i = 0; i < nz; ++i) kind[i] = (*sliding)[i] ? layer_attention::sliding : layer_attention::full;
  const auto chunk = top.integer("attention_chunk_size", 1, std::int64_t{1} << 53);
  if (const config_value* lt = top.get("layer_types")) {
    if (!lt->is_list()) throw config_error(pre + "layer_types", lt->to_text(), "a list of layer-type names");
    detail::require(lt->items().size() == nz, pre + "layer_types", lt->items().size(),
                    "num_hidden_layers = " + std::to_string(n) + " entries");
    for (std::size_t i = 0; i < nz; ++i) {
      const auto& e = lt->items()[i];
      const std::string key = pre + "layer_types[" + std::to_string(i) + "]";
      if (!e.is_string()) throw config_error(key, e.to_text(), "a layer-type name");
      layer_attention a{};
      if (e.as_string() == "full_attention")
        a = layer_attention::full;
      else if (e.as_string() == "sliding_attention")
        a = layer_attention::sliding;
      else if (e.as_string() == "chunked_attention")
        a = layer_attention::chunked;
      else
        throw config_error(key, e.to_text(), "full_attention, sliding_attention or chunked_attention");
      if (sliding && a != kind[i])
        throw config_error(pre + "sliding_window_pattern", "contradicts layer_types at layer " + std::to_string(i));
      kind[i] = a;
    }
  } else if (llama4 || ((has_nrl || has_interval) && chunk)) {
    for (std::size_t i = 0; i < nz; ++i)
      kind[i] = use_rope[i] && chunk ? layer_attention::chunked : layer_attention::full;
  }
  const auto window = top.integer("sliding_window", 1, std::int64_t{1} << 53);

  // ---- RoPE per layer type ----
  // Llama 4 rotates (2j, 2j + 1) as complex numbers (HF view_as_complex): interleaved pairs.
  if (out.base.rope && (llama4 || has_nrl || has_interval)) out.base.rope->layout = kernels::pairing::interleaved;
  std::optional<rope_config> global = out.base.rope, local = out.base.rope;
  std::string global_src = "global", local_src = "global";
  const auto local_theta = top.number("rope_local_base_freq");
  if (local_theta && local) {
    local->theta = *local_theta;
    local->scaling = default_scaling{};  // Gemma: local layers never scale
    local_src = "local";
  }
  std::optional<rope_config> chunked = global;
  if (const config_value* rp = top.get("rope_parameters"); rp && rp->is_object() && !rp->members().empty()) {
    const auto pm = rp->members();
    const bool per_type =
        std::all_of(pm.begin(), pm.end(), [](const config_value::member& m) { return m.value.is_object(); });
    if (per_type) {
      auto load_type = [&](const char* type) -> std::optional<rope_config> {
        const config_value* e = rp->find(type);
        if (!e) return std::nullopt;
        // the legacy top-level keys describe the full-attention layers; checked against that entry below
        config_value sub = L::without(text, {"rope_parameters", "rope_scaling", "rope_local_base_freq", "rope_theta"});
        sub.set("rope_parameters", *e);
        const model_config m = load_hf_config(sub);
        return m.rope;
      };
      const std::string rpk = pre + "rope_parameters.";
      if (auto f = load_type("full_attention")) {
        if (const auto top_theta = top.number("rope_theta"); top_theta && *top_theta != f->theta)
          throw config_error(rpk + "full_attention.rope_theta", "contradicts rope_theta (" + detail::to_text(f->theta) +
                                                                    " vs " + detail::to_text(*top_theta) + ")");
        global = f;
        global_src = "rope_parameters.full_attention";
      }
      if (auto s = load_type("sliding_attention")) {
        if (local_theta && s->theta != *local_theta)
          throw config_error(rpk + "sliding_attention.rope_theta", "contradicts rope_local_base_freq (" +
                                                                       detail::to_text(s->theta) + " vs " +
                                                                       detail::to_text(*local_theta) + ")");
        local = s;
        local_src = "rope_parameters.sliding_attention";
      } else {
        local = global;
        local_src = global_src;
      }
      if (auto c = load_type("chunked_attention")) {
        chunked = c;
      } else {
        chunked = global;
      }
      const bool needs_full =
          std::any_of(kind.begin(), kind.end(), [](layer_attention a) { return a != layer_attention::sliding; });
      if (needs_full && !rp->find("full_attention"))
        throw config_error(rpk + "full_attention", "absent",
                           "RoPE parameters for the full-attention layers (per-layer-type rope_parameters)");
    }
  }

  // ---- mRoPE sections ----
  std::string sp;
  const config_value merged = detail::hf::merged_scaling(top.get("rope_scaling"), nullptr, sp, out.warnings);
  const config_value* rparams = top.get("rope_parameters");
  auto scaling_key = [&](std::string_view k) -> std::pair<const config_value*, std::string> {
    if (const config_value* v = merged.find(k); v && !v->is_null()) return {v, pre + "rope_scaling." + std::string(k)};
    if (rparams && rparams->is_object())
      if (const config_value* v = rparams->find(k); v && !v->is_null())
        return {v, pre + "rope_parameters." + std::string(k)};
    return {nullptr, ""};
  };
  if (auto [sec, key] = scaling_key("mrope_section"); sec) {
    if (!sec->is_list() || sec->items().size() != 3 ||
        !std::all_of(sec->items().begin(), sec->items().end(), [](const config_value& e) { return e.is_integer(); }))
      throw config_error(key, sec->to_text(), "a list of three integers [t, h, w]");
    mrope_spec ms;
    for (std::size_t i = 0; i < 3; ++i) ms.section[i] = static_cast<int>(sec->items()[i].as_integer());
    if (auto [il, ikey] = scaling_key("mrope_interleaved"); il) {
      if (!il->is_bool()) throw config_error(ikey, il->to_text(), "true or false");
      if (il->as_bool()) ms.layout = mrope_layout::interleaved;
    }
    if (!global) throw config_error(key, sec->to_text(), "a model with RoPE");
    const int P = L::pairs_of(*global);
    try {
      static_cast<void>(mrope_pair_streams(ms.section, ms.layout, P));
    } catch (const config_error&) {
      throw config_error(key, sec->to_text(), "entries >= 0 summing to the rotary pair count " + std::to_string(P));
    }
    out.mrope = ms;
  }

  // ---- temperature ----
  std::optional<attention_temperature_config> nope_temp, every_temp;
  const auto tuning = top.boolean("attn_temperature_tuning");
  if (tuning.value_or(llama4)) {
    attention_temperature_config t{.head_dim = global ? global->head_dim : 0, .rule = temperature_rule::llama4};
    if (auto v = top.number("floor_scale")) t.floor_scale = *v;
    if (auto v = top.number("attn_scale")) t.scale = *v;
    L::check_temperature(t, pre + "floor_scale", pre + "attn_scale");
    nope_temp = t;
  } else if (top.has("floor_scale") || top.has("attn_scale")) {
    out.warnings.push_back(pre + "floor_scale/attn_scale: attn_temperature_tuning is off or absent; ignored");
  }
  if (auto [beta, key] = scaling_key("llama_4_scaling_beta"); beta) {
    if (!beta->is_number()) throw config_error(key, beta->to_text(), "a number");
    auto [l0, l0key] = scaling_key("original_max_position_embeddings");
    if (!l0) l0 = top.get("original_max_position_embeddings");
    if (!l0 || !l0->is_number())
      throw config_error(pre + "rope_parameters.original_max_position_embeddings", l0 ? l0->to_text() : "absent",
                         "the length L0 of the llama_4_scaling_beta temperature");
    attention_temperature_config t{.head_dim = global ? global->head_dim : 0,
                                   .rule = temperature_rule::llama4_beta,
                                   .floor_scale = l0->as_number(),
                                   .scale = beta->as_number()};
    L::check_temperature(t, pre + "rope_parameters.original_max_position_embeddings", key);
    every_temp = t;
  }

  // ---- assemble ----
  out.layers.resize(nz);
  for (std::size_t i = 0; i < nz; ++i) {
    layer_spec& s = out.layers[i];
    s.attention = kind[i];
    if (kind[i] == layer_attention::sliding) {
      if (!window) throw config_error(pre + "sliding_window", "absent", "a window for the sliding layers");
      s.window = window;
    } else if (kind[i] == layer_attention::chunked) {
      if (!chunk) throw config_error(pre + "attention_chunk_size", "absent", "a chunk size for the chunked layers");
      s.window = chunk;
    }
    if (use_rope[i]) {
      if (kind[i] == layer_attention::sliding) {
        s.rope = local;
        s.rope_source = local_src;
      } else if (kind[i] == layer_attention::chunked) {
        s.rope = chunked;
        s.rope_source = global_src;
      } else {
        s.rope = global;
        s.rope_source = global_src;
      }
    } else {
      s.rope_source = "none";
    }
    if (!use_rope[i] && nope_temp) s.temperature = nope_temp;
    if (every_temp) s.temperature = every_temp;
  }
  out.attention_sinks = mt == "gpt_oss";
  return out;
}

/// Reads the per-layer positional configuration from GGUF metadata: `{arch}.block_count`,
/// `{arch}.rope.dimension_sections` ([t, h, w, 4th]; the 4th stream must be 0 — we follow HF's three
/// streams), `{arch}.rope.freq_base_swa` (sliding layers' base, no scaling),
/// `{arch}.attention.sliding_window`, `{arch}.attention.sliding_window_pattern` (a period or one
/// bool per layer), `{arch}.attention.temperature_scale` / `.temperature_length` (Mistral 3 rule).
/// Without a pattern key, gemma2 / gpt-oss alternate and gemma3 uses period 6 (llama.cpp's
/// built-in patterns), with a warning; llama4 gets NoPE every 4th layer with the Llama 4 temperature
/// (8192, 0.1), also llama.cpp's built-in values.
[[nodiscard]] inline layered_config load_gguf_layered(const config_value& metadata,
                                                      const config_value* tensors = nullptr) {
  namespace L = detail::layered;
  layered_config out;
  out.base = load_gguf_config(metadata, tensors);
  out.warnings = L::residual_warnings(out.base.warnings);
  const std::string arch = out.base.model_type, p = arch + ".";
  const detail::key_reader md{&metadata, ""};
  const auto n_opt = md.int32(p + "block_count", 1);
  if (!n_opt) throw config_error(p + "block_count", "absent", "the layer count (>= 1)");
  const int n = *n_opt;
  const auto nz = static_cast<std::size_t>(n);
  const std::optional<rope_config> global = out.base.rope;

  // sliding layers
  std::optional<std::vector<bool>> sliding;
  const std::string pk = p + "attention.sliding_window_pattern";
  if (const config_value* v = md.get(pk)) {
    if (v->is_list()) {
      detail::require(v->items().size() == nz, pk, v->items().size(),
                      "block_count = " + std::to_string(n) + " entries");
      sliding = std::vector<bool>(nz);
      for (std::size_t i = 0; i < nz; ++i) {
        if (!v->items()[i].is_bool())
          throw config_error(pk + "[" + std::to_string(i) + "]", v->items()[i].to_text(), "a bool");
        (*sliding)[i] = v->items()[i].as_bool();
      }
    } else {
      const auto period = *md.int32(pk, 1);
      detail::require(period <= n, pk, period,
                      "<= block_count = " + std::to_string(n) + " (a pattern longer than the model)");
      sliding = L::sliding_from_period(n, period);
    }
  } else if (arch == "gemma2" || arch == "gpt-oss" || arch == "gemma3") {
    const int period = arch == "gemma3" ? 6 : 2;
    sliding = L::sliding_from_period(n, period);
    out.warnings.push_back(pk + " absent: llama.cpp's built-in pattern for " + arch + " (every " +
                           std::to_string(period) + "th layer full) is used");
  }
  const auto window = md.integer(p + "attention.sliding_window", 1, std::int64_t{1} << 53);
  std::optional<rope_config> local = global;
  if (auto swa = md.number(p + "rope.freq_base_swa"); swa && local) {
    local->theta = *swa;
    local->scaling = default_scaling{};
  }

  // mRoPE sections
  const std::string sk = p + "rope.dimension_sections";
  if (const config_value* v = md.get(sk)) {
    if (!v->is_list() || v->items().size() < 3 || v->items().size() > 4 ||
        !std::all_of(v->items().begin(), v->items().end(), [](const config_value& e) { return e.is_integer(); }))
      throw config_error(sk, v->to_text(), "a list of 3 or 4 integers");
    if (v->items().size() == 4 && v->items()[3].as_integer() != 0)
      throw config_error(sk, v->to_text(), "a 4th section of 0 (ggml's 4th position stream is not modelled)");
    mrope_spec ms;
    for (std::size_t i = 0; i < 3; ++i) ms.section[i] = static_cast<int>(v->items()[i].as_integer());
    if (arch == "qwen3vl" || arch == "qwen3vlmoe") ms.layout = mrope_layout::interleaved;
    if (!global) throw config_error(sk, v->to_text(), "a model with RoPE");
    const int P = L::pairs_of(*global);
    try {
      static_cast<void>(mrope_pair_streams(ms.section, ms.layout, P));
    } catch (const config_error&) {
      throw config_error(sk, v->to_text(), "entries >= 0 summing to the rotary pair count " + std::to_string(P));
    }
    out.mrope = ms;
  }

  // NoPE layers and temperature
  std::vector<bool> use_rope(nz, global.has_value());
  std::optional<attention_temperature_config> nope_temp, every_temp;
  if (arch == "llama4") {
    for (int i = 0; i < n; ++i)
      use_rope[static_cast<std::size_t>(i)] = use_rope[static_cast<std::size_t>(i)] && (i + 1) % 4 != 0;
    nope_temp = attention_temperature_config{.head_dim = global ? global->head_dim : 0};
    out.warnings.push_back(arch +
                           ": NoPE every 4th layer and the Llama 4 temperature (8192, 0.1) are llama.cpp's "
                           "built-in values");
  }
  const auto ts = md.number(p + "attention.temperature_scale");
  const auto tl = md.number(p + "attention.temperature_length");
  if (ts || tl) {
    if (!ts) throw config_error(p + "attention.temperature_scale", "absent", "given with temperature_length");
    if (!tl) throw config_error(p + "attention.temperature_length", "absent", "given with temperature_scale");
    attention_temperature_config t{.head_dim = global ? global->head_dim : 0,
                                   .rule = temperature_rule::llama4_beta,
                                   .floor_scale = *tl,
                                   .scale = *ts};
    L::check_temperature(t, p + "attention.temperature_length", p + "attention.temperature_scale");
    every_temp = t;
  }

  out.layers.resize(nz);
  for (std::size_t i = 0; i < nz; ++i) {
    layer_spec& s = out.layers[i];
    const bool sl = sliding && (*sliding)[i];
    s.attention = sl ? layer_attention::sliding : layer_attention::full;
    if (sl) {
      if (!window) throw config_error(p + "attention.sliding_window", "absent", "a window for the sliding layers");
      s.window = window;
    }
    if (use_rope[i]) {
      s.rope = sl ? local : global;
      s.rope_source = sl && md.has(p + "rope.freq_base_swa") ? "local" : "global";
    } else {
      s.rope_source = "none";
      if (nope_temp) s.temperature = nope_temp;
    }
    if (every_temp) s.temperature = every_temp;
  }
  out.attention_sinks = arch == "gpt-oss";
  return out;
}

}  // namespace posenc::inline v0
