// posenc/config/layered.hpp — per-layer positional configuration: which encoder, mask, scale and
// soft-cap act on each layer, read from Hugging Face config.json or GGUF metadata.
//
// What a family does is not guessed from the keys a config happens to carry: the architecture
// table (config/architectures.hpp) gives each family's pair layout, class defaults, layer rules
// (sliding patterns, NoPE layers, chunked layers, hybrid linear-attention layers), softmax scale and
// soft-capping, and both loaders read it, so an HF config and the GGUF converted from it give the
// same layers. Examples: Gemma 2/3 sliding layers with their own RoPE base, query_pre_attn_scalar
// and soft-capping; Cohere2 and EXAONE 4 rotating only their sliding layers; Llama 4 NoPE layers
// with a query temperature and chunked RoPE layers; gpt-oss sinks; Qwen3-Next linear-attention
// layers (posenc applies nothing there); Qwen2-VL / 2.5-VL / 3-VL mRoPE sections. Strictness as
// config/hf.hpp: absent != 0, a pattern longer than the layer count, lists of the wrong length,
// contradictions between legacy and v5 keys are config_error naming the key. This header only
// describes and loads; config/layer_encoder.hpp builds the encoders and attention options.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/config/architectures.hpp>
#include <posenc/config/gguf.hpp>
#include <posenc/config/hf.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/value.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/config.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/scaling/yarn.hpp>
#include <posenc/rope/schedule.hpp>

namespace posenc::inline v0 {

/// The attention kind of a layer.
enum class layer_attention : unsigned char {
  full,     ///< every earlier key ("full_attention")
  sliding,  ///< the last `window` keys ("sliding_attention")
  chunked,  ///< keys of the same chunk of `chunk_size` tokens (Llama 4 "chunked_attention")
  linear,   ///< a hybrid model's linear-attention layer ("linear_attention"): no softmax attention, no positions
};

/// HF v5 layer-type name of a layer_attention.
[[nodiscard]] inline const char* layer_type_name(layer_attention a) noexcept {
  switch (a) {
    case layer_attention::full:
      return "full_attention";
    case layer_attention::sliding:
      return "sliding_attention";
    case layer_attention::chunked:
      return "chunked_attention";
    case layer_attention::linear:
      break;
  }
  return "linear_attention";
}

/// What acts on one layer.
struct layer_spec {
  layer_attention attention = layer_attention::full;
  std::optional<std::int64_t> window{};                       ///< sliding window W (sliding layers only)
  std::optional<std::int64_t> chunk_size{};                   ///< chunk C (chunked layers only)
  std::optional<rope_config> rope{};                          ///< absent: NoPE
  std::optional<attention_temperature_config> temperature{};  ///< query temperature of this layer
  std::string rope_source;  ///< where the RoPE came from: "global", "local", "rope_parameters.<type>", "none"
  /// The exact multiplier of q.k in the softmax, corrections included (YaRN mscale² of DeepSeek);
  /// 0 for linear-attention layers.
  double softmax_scale = 0;
  /// The part of softmax_scale that attention_options::scale carries: the attention multiplies it
  /// by the encoder's softmax_scale_multiplier() itself, so softmax_scale = base_scale * that.
  double base_scale = 0;
  std::optional<double> logit_softcap{};  ///< Gemma 2 attn_logit_softcapping
  bool sinks = false;                     ///< learned per-head sink logits (gpt-oss)
  bool alibi = false;                     ///< ALiBi bias on this layer
  bool causal = true;                     ///< false for bidirectional (encoder) layers: T5's encoder
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
  positional_family positional = positional_family::none;
  std::string family;           ///< the architecture-table row ("" when the model type is not in the table)
  std::ptrdiff_t head_dim = 0;  ///< per-head q/k width (0 when the config does not say)
  std::optional<double> final_logit_softcap{};  ///< Gemma 2 final_logit_softcapping (on the LM logits)
  std::vector<std::string> warnings;
};

namespace detail::layered {

inline const architecture& generic_architecture() {
  // A model type the table does not know: the keys are read at face value (layer_types,
  // sliding_window_pattern, no_rope_layers, rope_local_base_freq), with a warning.
  static constexpr architecture g{.family = "", .layers = layer_rule::period};
  return g;
}

/// A copy of `o` with `key` set to `v` when `o` has no non-null value for it.
inline void set_default(config_value& o, std::string_view key, config_value v) {
  if (const config_value* e = o.find(key); e && !e->is_null()) return;
  o.set(std::string(key), std::move(v));
}

inline bool has_key(const config_value& o, std::string_view key) {
  const config_value* e = o.find(key);
  return e && !e->is_null();
}

/// An object from "key=value,key=value" (architecture::default_rope_parameters).
inline config_value pairs_object(std::string_view list) {
  config_value o = config_value::object();
  while (!list.empty()) {
    const auto c = list.find(',');
    const std::string_view item = list.substr(0, c);
    const auto eq = item.find('=');
    const std::string key(item.substr(0, eq)), v(item.substr(eq + 1));
    if (v.find_first_not_of("0123456789") == std::string::npos)
      o.set(key, config_value::integer(std::stoll(v)));
    else if (v.find_first_not_of("0123456789.-e") == std::string::npos)
      o.set(key, config_value::number(std::stod(v)));
    else
      o.set(key, config_value::string(v));
    if (c == std::string_view::npos) break;
    list.remove_prefix(c + 1);
  }
  return o;
}

/// `text` with the class defaults of `a` for the keys load_hf_config reads (rope_theta, the
/// rotated fraction, head_dim), where the config leaves them out: HF fills them in the same way.
inline config_value with_class_defaults(const config_value& text, const architecture& a) {
  config_value t = text;
  if (a.positional != positional_family::rope || a.family.empty()) return t;  // unknown families: keys as given
  if (!a.default_rope_parameters.empty() && !has_key(t, "rope_parameters") && !has_key(t, "rope_scaling")) {
    config_value d = pairs_object(a.default_rope_parameters);
    // the class default dict carries its own rope_theta, which a top-level rope_theta does not replace
    if (const config_value* top = t.find("rope_theta");
        top && !top->is_null() && !(top->is_number() && top->as_number() == d.find("rope_theta")->as_number()))
      throw config_error("rope_theta", top->to_text(),
                         "absent or " + d.find("rope_theta")->to_text() + ": without rope_parameters " +
                             std::string(a.family) + " uses its class default rope_parameters (" +
                             std::string(a.default_rope_parameters) + ")");
    t.set("rope_parameters", std::move(d));
  }
  const config_value* rp = t.find("rope_parameters");
  const bool rp_theta = rp && rp->is_object() && has_key(*rp, "rope_theta");
  if (!has_key(t, "rope_theta") && !rp_theta && !has_key(t, "rotary_emb_base"))
    t.set("rope_theta", config_value::number(a.default_theta));
  const bool rp_partial = rp && rp->is_object() && has_key(*rp, "partial_rotary_factor");
  switch (a.partial) {
    case partial_rule::partial_rotary_factor:
      if (a.default_partial != 1 && !has_key(t, "partial_rotary_factor") && !rp_partial && !has_key(t, "rotary_dim"))
        t.set("partial_rotary_factor", config_value::number(a.default_partial));
      break;
    case partial_rule::rotary_pct:
      if (!has_key(t, "rotary_pct") && !has_key(t, "partial_rotary_factor") && !rp_partial)
        t.set("rotary_pct", config_value::number(a.default_partial));
      break;
    case partial_rule::rotary_dim:
      if (!has_key(t, "rotary_dim") && !has_key(t, "partial_rotary_factor") && !rp_partial)
        t.set("rotary_dim", config_value::integer(static_cast<std::int64_t>(a.default_partial)));
      break;
    case partial_rule::full:
    case partial_rule::qk_rope_head_dim:
      break;
  }
  if (a.default_head_dim && !has_key(t, "head_dim") && !has_key(t, "qk_rope_head_dim"))
    t.set("head_dim", config_value::integer(a.default_head_dim));
  return t;
}

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

/// The encoder's own softmax-scale factor (DeepSeek YaRN mscale²), 1 for every other RoPE.
inline double encoder_scale_multiplier(const std::optional<rope_config>& r) {
  if (!r) return 1.0;
  if (const auto* y = std::get_if<yarn_scaling>(&r->scaling)) return yarn_softmax_scale_multiplier(*y);
  return 1.0;
}

/// For a family whose softmax scale carries no YaRN mscale² (every one but DeepSeek-V3, and llama.cpp's
/// deepseek2 graph): a YaRN mscale / mscale_all_dim pair sets only the rotary magnitude (their ratio,
/// modeling_rope_utils), so it is folded into attention_factor and the softmax multiplier drops to 1.
inline void fold_mscale(std::optional<rope_config>& r) {
  if (!r) return;
  auto* y = std::get_if<yarn_scaling>(&r->scaling);
  if (!y || !y->mscale_all_dim) return;
  if (!y->attention_factor) y->attention_factor = yarn_attention_factor(*y);
  y->mscale.reset();
  y->mscale_all_dim.reset();
}

/// A finite positive number (a scale or a cap).
inline double positive(const std::string& key, double v) {
  detail::require(std::isfinite(v) && v > 0, key, v, "a finite number > 0");
  return v;
}

/// Fills softmax_scale / base_scale / softcap / sinks / alibi of every layer.
inline void finish_layers(layered_config& out, double base_scale, std::optional<double> softcap, bool alibi) {
  for (auto& s : out.layers) {
    if (s.attention == layer_attention::linear) {
      s.rope.reset();
      s.temperature.reset();
      s.rope_source = "none";
      continue;
    }
    s.base_scale = base_scale;
    s.softmax_scale = base_scale * encoder_scale_multiplier(s.rope);
    s.logit_softcap = softcap;
    s.sinks = out.attention_sinks;
    s.alibi = alibi;
    s.causal = out.positional != positional_family::t5_buckets;  // the layers counted are T5's encoder layers
  }
}

}  // namespace detail::layered

/// Reads the per-layer positional configuration of a Hugging Face config.json tree (legacy keys
/// and the transformers v5 rope_parameters / layer_types forms) through the architecture table
/// (config/architectures.hpp): the family's pair layout, class defaults, layer rules, scale and
/// soft-capping. A multimodal config whose text model sits under `text_config` (Gemma 3, Llama 4,
/// Qwen3-VL) is read from there. Keys the family's reference reads are applied or refused
/// (config_error naming the key); keys it does not read are reported in `warnings`.
[[nodiscard]] inline layered_config load_hf_layered(const config_value& root) {
  namespace L = detail::layered;
  if (!root.is_object()) throw config_error("config", root.to_text(), "a JSON object");
  const config_value* tc = root.find("text_config");
  const bool nested = tc && tc->is_object();
  const config_value& text_in = nested ? *tc : root;
  const std::string pre = nested ? "text_config." : "";
  const detail::key_reader outer{&root, ""};
  const detail::key_reader raw{&text_in, pre};
  std::string mt = outer.string("model_type").value_or("");
  const std::string inner_mt = nested ? raw.string("model_type").value_or("") : "";
  const bool alibi_key = raw.boolean("alibi").value_or(false);
  const architecture* found = find_hf_architecture(inner_mt.empty() ? mt : inner_mt, alibi_key);
  if (!found && !inner_mt.empty()) found = find_hf_architecture(mt, alibi_key);
  const architecture& A = found ? *found : L::generic_architecture();
  layered_config out;
  out.family = std::string(A.family);
  out.positional = A.positional;
  if (!A.refused.empty()) {
    const auto colon = A.refused.find(':');
    throw config_error(pre + std::string(A.refused.substr(0, colon)),
                       std::string(A.family) + " is refused: " + std::string(A.refused.substr(colon + 2)));
  }
  const config_value text = L::with_class_defaults(text_in, A);
  out.base = load_hf_config(text);
  if (!mt.empty()) out.base.model_type = mt;  // gemma3, llama4, qwen3_vl, ...
  out.warnings = L::residual_warnings(out.base.warnings);
  if (!found)
    out.warnings.push_back("model_type \"" + mt + "\": not in the architecture table; layer keys read at face value");
  // the positional family the keys show when the table does not know the model
  if (!found)
    out.positional = out.base.rope    ? positional_family::rope
                     : out.base.alibi ? positional_family::alibi
                     : out.base.t5    ? positional_family::t5_buckets
                                      : positional_family::none;
  if (A.scale == scale_rule::mpt_softmax_scale && !out.base.alibi) out.positional = positional_family::learned;
  const detail::key_reader top{&text, pre};
  const bool llama4 = A.llama4_temperature;
  // keys acting outside the attention posenc computes (architectures.hpp no_effect_keys)
  for (const char* k :
       {"use_qk_norm", "qk_layernorm", "logit_scale", "logits_scaling", "embedding_multiplier", "residual_multiplier"})
    if (const config_value* v = top.get(k);
        v && !(v->is_bool() && !v->as_bool()) &&
        !(v->is_number() && v->as_number() == 1.0 && std::string_view(k) != "logit_scale"))
      out.warnings.push_back(pre + k +
                             ": acts on the projections, embeddings or LM head, outside the attention; "
                             "not applied by posenc");
  if (const config_value* ac = top.get("attn_config"); ac && ac->is_object())
    if (const config_value* c = ac->find("clip_qkv"); c && !c->is_null())
      out.warnings.push_back(pre +
                             "attn_config.clip_qkv: clamps the q/k/v projections, before the attention; "
                             "not applied by posenc");
  const bool honour_interleave = top.has("rope_interleave") && (A.reads_rope_interleave || !found);
  if (top.has("rope_interleave") && !honour_interleave)
    out.warnings.push_back(pre + "rope_interleave: " + std::string(A.family) +
                           " does not read it (its pair layout is fixed); ignored");
  if (out.base.rope && found && !honour_interleave) out.base.rope->layout = A.hf_layout;
  if (top.boolean("use_bidirectional_attention").value_or(false))
    throw config_error(pre + "use_bidirectional_attention", "true",
                       "false or absent (bidirectional decoder attention, as in EmbeddingGemma, is not modelled)");

  // the layer count: num_hidden_layers, or the aliases of T5 (num_layers), GPT-2 / BLOOM (n_layer), MPT (n_layers)
  std::optional<int> n_alt = top.int32("num_hidden_layers", 1);
  for (const char* alias : {"num_layers", "n_layer", "n_layers"})
    if (!n_alt) n_alt = top.int32(alias, 1);
  if (!n_alt) throw config_error(pre + "num_hidden_layers", "absent", "the layer count (>= 1)");
  const int n = *n_alt;
  const auto nz = static_cast<std::size_t>(n);
  auto below_n = [&](const std::string& key, std::int64_t v) {
    detail::require(v <= n, pre + key, v,
                    "<= num_hidden_layers = " + std::to_string(n) + " (a pattern longer than the model)");
  };

  // ---- the sliding window (class default where the key is absent; explicit null means none) ----
  const config_value* sw_raw = text.find("sliding_window");
  const bool sw_null = sw_raw && sw_raw->is_null();
  std::optional<std::int64_t> window = top.integer("sliding_window", 1, std::int64_t{1} << 53);
  if (!window && !sw_raw) window = A.default_window;

  // ---- which layers use RoPE (no_rope_layers) ----
  std::vector<bool> use_rope(nz, out.base.rope.has_value());
  const bool has_nrl = top.has("no_rope_layers"), has_interval = top.has("no_rope_layer_interval");
  const bool nope_rule = A.nope == nope_rule::no_rope_layers || (!found && (has_nrl || has_interval));
  if (nope_rule) {
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
      const auto iv = top.int32("no_rope_layer_interval", 1).value_or(A.default_period ? A.default_period : 4);
      below_n("no_rope_layer_interval", iv);
      for (int i = 0; i < n; ++i)
        use_rope[static_cast<std::size_t>(i)] = use_rope[static_cast<std::size_t>(i)] && (i + 1) % iv != 0;
    }
  } else if (has_nrl || has_interval) {
    out.warnings.push_back(pre + "no_rope_layers: " + std::string(A.family) + " does not read it; ignored");
  }

  // ---- attention kind per layer ----
  std::vector<layer_attention> kind(nz, layer_attention::full);
  std::optional<std::vector<bool>> sliding;
  const config_value* pattern_v = top.get("sliding_window_pattern");
  const bool reads_pattern = A.layers == layer_rule::period;
  if (pattern_v && reads_pattern) {
    if (pattern_v->is_string()) {
      // EXAONE 4: "LLLG" — one letter per layer (L local, G global), repeated over the layers, as
      // llama.cpp's converter reads it (transformers' config class computes only an integer period).
      const std::string& p = pattern_v->as_string();
      if (p.empty() || p.find_first_not_of("LG") != std::string::npos)
        throw config_error(pre + "sliding_window_pattern", pattern_v->to_text(),
                           "an integer period or a string of L (sliding) and G (full) letters");
      below_n("sliding_window_pattern", static_cast<std::int64_t>(p.size()));
      sliding = std::vector<bool>(nz);
      for (std::size_t i = 0; i < nz; ++i) (*sliding)[i] = p[i % p.size()] == 'L';
    } else {
      const auto period = *top.int32("sliding_window_pattern", 0);
      below_n("sliding_window_pattern", period);
      sliding = period == 0 ? std::vector<bool>(nz, false) : L::sliding_from_period(n, period);
    }
  } else if (pattern_v) {
    out.warnings.push_back(pre + "sliding_window_pattern: " + std::string(A.family) + " does not read it; ignored");
  }
  const bool has_lt = top.has("layer_types") && A.layers != layer_rule::use_sliding_window_all;
  const config_value* chunk_raw = text.find("attention_chunk_size");
  std::optional<std::int64_t> chunk = top.integer("attention_chunk_size", 1, std::int64_t{1} << 53);
  if (!chunk && !chunk_raw && A.chunked) chunk = A.default_chunk;
  if (!has_lt) {
    switch (A.layers) {
      case layer_rule::uniform:
        if (window && sw_raw)
          out.warnings.push_back(pre + "sliding_window: " + std::string(A.family) +
                                 " attends fully on every layer (its modeling code does not read the key); ignored");
        break;
      case layer_rule::sliding_all:
        if (window) sliding = std::vector<bool>(nz, true);
        break;
      case layer_rule::max_window_layers: {
        const bool use = top.boolean("use_sliding_window").value_or(false);
        const int mwl = top.int32("max_window_layers", 0).value_or(A.default_max_window_layers);
        sliding = std::vector<bool>(nz, false);
        if (use && window)
          for (int i = mwl; i < n; ++i) (*sliding)[static_cast<std::size_t>(i)] = true;
        break;
      }
      case layer_rule::alternate_below_max_window_layers: {
        const bool use = top.boolean("use_sliding_window").value_or(false);
        const int mwl = top.int32("max_window_layers", 0).value_or(A.default_max_window_layers);
        sliding = std::vector<bool>(nz, false);
        if (use && window)
          for (int i = 0; i < n && i < mwl; i += 2) (*sliding)[static_cast<std::size_t>(i)] = true;
        break;
      }
      case layer_rule::use_sliding_window_all:
        // the config class drops sliding_window unless use_sliding_window; then every layer slides
        sliding = std::vector<bool>(nz, top.boolean("use_sliding_window").value_or(false) && window.has_value());
        break;
      case layer_rule::period:
        if (!sliding && A.default_period) {
          // EXAONE 4 without a window: every layer full (its config sets the pattern to 0)
          if (A.nope == nope_rule::non_sliding_if_window && !window)
            sliding = std::vector<bool>(nz, false);
          else
            sliding = L::sliding_from_period(n, A.default_period);
        }
        break;
      case layer_rule::nope_interval:
        if (llama4 || (!found && chunk)) {
          for (std::size_t i = 0; i < nz; ++i)
            kind[i] = use_rope[i] && chunk ? layer_attention::chunked : layer_attention::full;
        } else if (top.boolean("use_sliding_window").value_or(false) && window) {
          // SmolLM3: the NoPE layers slide
          for (std::size_t i = 0; i < nz; ++i) kind[i] = use_rope[i] ? layer_attention::full : layer_attention::sliding;
        }
        break;
      case layer_rule::hybrid_interval: {
        const auto iv = top.int32("full_attention_interval", 1).value_or(A.default_period);
        below_n("full_attention_interval", iv);
        for (int i = 0; i < n; ++i)
          kind[static_cast<std::size_t>(i)] = (i + 1) % iv != 0 ? layer_attention::linear : layer_attention::full;
        break;
      }
      case layer_rule::hybrid_alternate:
        if (top.has("attn_type_list"))
          throw config_error(pre + "attn_type_list", "given without layer_types",
                             "layer_types (transformers does not read attn_type_list: it alternates full and "
                             "linear attention)");
        for (int i = 0; i < n; ++i) {
          // MiniMaxAttention passes config.sliding_window to every softmax layer
          const auto softmax_kind = window ? layer_attention::sliding : layer_attention::full;
          kind[static_cast<std::size_t>(i)] = (i + 1) % 2 != 0 ? softmax_kind : layer_attention::linear;
        }
        break;
    }
    if (!found && (has_nrl || has_interval) && chunk)
      for (std::size_t i = 0; i < nz; ++i) kind[i] = use_rope[i] ? layer_attention::chunked : layer_attention::full;
  }
  if (sliding)
    for (std::size_t i = 0; i < nz; ++i) kind[i] = (*sliding)[i] ? layer_attention::sliding : layer_attention::full;
  const config_value* lt = top.get("layer_types");
  if (lt && A.layers == layer_rule::use_sliding_window_all) {
    // Qwen3-MoE's attention reads config.sliding_window on every layer, never layer_types
    out.warnings.push_back(pre + "layer_types: " + std::string(A.family) + " does not read it; ignored");
    lt = nullptr;
  }
  if (lt) {
    if (!lt->is_list()) throw config_error(pre + "layer_types", lt->to_text(), "a list of layer-type names");
    detail::require(lt->items().size() == nz, pre + "layer_types", lt->items().size(),
                    "num_hidden_layers = " + std::to_string(n) + " entries");
    for (std::size_t i = 0; i < nz; ++i) {
      const auto& e = lt->items()[i];
      const std::string key = pre + "layer_types[" + std::to_string(i) + "]";
      if (!e.is_string()) throw config_error(key, e.to_text(), "a layer-type name");
      layer_attention a{};
      const std::string& name = e.as_string();
      if (name == "full_attention")
        a = layer_attention::full;
      else if (name == "sliding_attention")
        a = layer_attention::sliding;
      else if (name == "chunked_attention")
        a = layer_attention::chunked;
      else if (name == "linear_attention")
        a = layer_attention::linear;
      else
        throw config_error(key, e.to_text(),
                           "full_attention, sliding_attention, chunked_attention or linear_attention");
      if (sliding && pattern_v && a != kind[i])
        throw config_error(pre + "sliding_window_pattern", "contradicts layer_types at layer " + std::to_string(i));
      kind[i] = a;
    }
  }

  // ---- NoPE layers of the families that rotate only their sliding layers ----
  for (std::size_t i = 0; i < nz; ++i) {
    if (kind[i] == layer_attention::linear) use_rope[i] = false;
    if (A.nope == nope_rule::non_sliding && kind[i] != layer_attention::sliding) use_rope[i] = false;
    if (A.nope == nope_rule::non_sliding_if_window && window && kind[i] != layer_attention::sliding)
      use_rope[i] = false;
  }

  // ---- RoPE per layer type ----
  std::optional<rope_config> global = out.base.rope, local = out.base.rope;
  std::string global_src = "global", local_src = "global";
  std::optional<double> local_theta = top.number("rope_local_base_freq");
  if (local_theta && !A.local_base && found)
    out.warnings.push_back(pre + "rope_local_base_freq: " + std::string(A.family) + " does not read it; ignored");
  const bool reads_local = A.local_base || !found;
  if (reads_local && local_theta && local) {
    local->theta = *local_theta;
    local->scaling = default_scaling{};  // Gemma: local layers never scale
    local_src = "local";
  }
  std::optional<rope_config> chunked = global;
  bool per_type = false;
  if (const config_value* rp = top.get("rope_parameters"); rp && rp->is_object() && !rp->members().empty()) {
    const auto pm = rp->members();
    per_type = std::all_of(pm.begin(), pm.end(), [](const config_value::member& m) { return m.value.is_object(); });
    if (per_type) {
      auto load_type = [&](const char* type, double default_theta) -> std::optional<rope_config> {
        const config_value* e = rp->find(type);
        if (!e) return std::nullopt;
        // the legacy top-level keys describe the full-attention layers; checked against that entry below
        config_value sub = L::without(text, {"rope_parameters", "rope_scaling", "rope_local_base_freq", "rope_theta"});
        config_value entry = *e;
        L::set_default(entry, "rope_theta", config_value::number(default_theta));
        sub.set("rope_parameters", entry);
        const model_config m = load_hf_config(sub);
        std::optional<rope_config> r = m.rope;
        if (r && found && !honour_interleave) r->layout = A.hf_layout;
        return r;
      };
      const std::string rpk = pre + "rope_parameters.";
      if (auto f = load_type("full_attention", A.default_theta)) {
        if (const auto top_theta = top.number("rope_theta"); top_theta && *top_theta != f->theta)
          throw config_error(rpk + "full_attention.rope_theta", "contradicts rope_theta (" + detail::to_text(f->theta) +
                                                                    " vs " + detail::to_text(*top_theta) + ")");
        global = f;
        global_src = "rope_parameters.full_attention";
      }
      if (auto s = load_type("sliding_attention", A.local_base ? A.default_local_theta : A.default_theta)) {
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
      if (auto c = load_type("chunked_attention", A.default_theta)) {
        chunked = c;
      } else {
        chunked = global;
      }
      const bool needs_full = std::any_of(kind.begin(), kind.end(), [](layer_attention a) {
        return a == layer_attention::full || a == layer_attention::chunked;
      });
      if (needs_full && !rp->find("full_attention") && out.positional == positional_family::rope)
        throw config_error(rpk + "full_attention", "absent",
                           "RoPE parameters for the full-attention layers (per-layer-type rope_parameters)");
    }
  }
  if (!per_type && A.local_base && !local_theta && local) {
    // Gemma 3's class default for the sliding layers' base
    local->theta = A.default_local_theta;
    local->scaling = default_scaling{};
    local_src = "local";
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
    if (A.mrope_interleaved) ms.layout = mrope_layout::interleaved;
    if (auto [il, ikey] = scaling_key("mrope_interleaved"); il) {
      if (!il->is_bool()) throw config_error(ikey, il->to_text(), "true or false");
      ms.layout = il->as_bool() ? mrope_layout::interleaved : mrope_layout::contiguous;
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
  if (tuning.value_or(llama4) && (llama4 || !found)) {
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

  if (A.longrope_mscale && global && std::holds_alternative<longrope_scaling>(global->scaling)) {
    // Phi-MoE replaces LongRoPE's magnitude by short_mscale / long_mscale, chosen by the sequence length
    auto [sm, skey] = scaling_key("short_mscale");
    auto [lm, lkey] = scaling_key("long_mscale");
    if (sm || lm) {
      if (!sm || !lm || !sm->is_number() || !lm->is_number())
        throw config_error(sm ? lkey : skey, "absent or not a number", "short_mscale and long_mscale, both numbers");
      if (sm->as_number() != lm->as_number())
        throw config_error(skey, sm->to_text(),
                           "equal to long_mscale (" + lm->to_text() +
                               "): a magnitude that switches with the sequence length is not modelled");
      auto& l = std::get<longrope_scaling>(global->scaling);
      if (l.attention_factor && *l.attention_factor != sm->as_number())
        throw config_error(skey, "contradicts attention_factor (" + sm->to_text() + " vs " +
                                     detail::to_text(*l.attention_factor) + ")");
      l.attention_factor = L::positive(skey, sm->as_number());
      local = chunked = global;
      out.warnings.erase(std::remove_if(out.warnings.begin(), out.warnings.end(),
                                        [](const std::string& w) { return w.find("_mscale") != std::string::npos; }),
                         out.warnings.end());
    }
  }
  if (found && !A.mscale2_hf) {
    L::fold_mscale(global);
    L::fold_mscale(local);
    L::fold_mscale(chunked);
  }

  // ---- assemble ----
  out.layers.resize(nz);
  for (std::size_t i = 0; i < nz; ++i) {
    layer_spec& s = out.layers[i];
    s.attention = kind[i];
    if (kind[i] == layer_attention::sliding) {
      if (!window)
        throw config_error(pre + "sliding_window", sw_null ? "null" : "absent", "a window for the sliding layers");
      s.window = window;
    } else if (kind[i] == layer_attention::chunked) {
      if (!chunk) throw config_error(pre + "attention_chunk_size", "absent", "a chunk size for the chunked layers");
      s.chunk_size = chunk;
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
  out.attention_sinks = A.sinks;

  // ---- head width, softmax scale, soft-capping ----
  const auto heads = out.base.num_attention_heads;
  const auto hidden = top.int32("hidden_size", 1) ? top.int32("hidden_size", 1)
                      : top.int32("n_embd", 1)    ? top.int32("n_embd", 1)
                                                  : top.int32("d_model", 1);
  if (out.base.rope)
    out.head_dim = out.base.rope->head_dim;
  else if (auto hd = top.int32("head_dim", 1))
    out.head_dim = *hd;
  else if (auto dkv = top.int32("d_kv", 1))
    out.head_dim = *dkv;  // T5
  else if (hidden && heads && *heads > 0 && *hidden % *heads == 0)
    out.head_dim = *hidden / *heads;
  const double hd = out.head_dim > 0 ? static_cast<double>(out.head_dim) : 0.0;
  double base_scale = hd > 0 ? 1.0 / std::sqrt(hd) : 0.0;
  const bool has_qpas = top.has("query_pre_attn_scalar"), has_mult = top.has("attention_multiplier");
  switch (A.scale) {
    case scale_rule::head_dim:
    case scale_rule::qk_head_dim:
      break;
    case scale_rule::query_pre_attn_scalar:
      base_scale = 1.0 / std::sqrt(L::positive(pre + "query_pre_attn_scalar",
                                               top.number("query_pre_attn_scalar").value_or(A.default_scale_param)));
      break;
    case scale_rule::attention_multiplier:
      base_scale =
          L::positive(pre + "attention_multiplier", top.number("attention_multiplier").value_or(A.default_scale_param));
      break;
    case scale_rule::mpt_softmax_scale:
      if (const config_value* ac = top.get("attn_config"); ac && ac->is_object()) {
        const detail::key_reader a{ac, pre + "attn_config."};
        if (auto v = a.number("softmax_scale")) base_scale = L::positive(pre + "attn_config.softmax_scale", *v);
      }
      break;
    case scale_rule::unscaled:
      base_scale = 1.0;
      break;
  }
  if (has_qpas && A.scale != scale_rule::query_pre_attn_scalar)
    out.warnings.push_back(pre + "query_pre_attn_scalar: " + std::string(found ? A.family : "this model") +
                           " scales by head_dim^-0.5 (its modeling code does not read the key); ignored");
  if (has_mult && A.scale != scale_rule::attention_multiplier)
    out.warnings.push_back(pre + "attention_multiplier: " + std::string(found ? A.family : "this model") +
                           " does not read it; ignored");
  std::optional<double> softcap;
  if (A.softcap || !found) {
    const config_value* a = text.find("attn_logit_softcapping");
    if (a && !a->is_null())
      softcap = L::positive(pre + "attn_logit_softcapping", *top.number("attn_logit_softcapping"));
    else if (!a)
      softcap = A.default_attn_softcap;
    const config_value* f = text.find("final_logit_softcapping");
    if (f && !f->is_null())
      out.final_logit_softcap = L::positive(pre + "final_logit_softcapping", *top.number("final_logit_softcapping"));
    else if (!f)
      out.final_logit_softcap = A.default_final_softcap;
  } else {
    for (const char* k : {"attn_logit_softcapping", "final_logit_softcapping"})
      if (top.has(k))
        throw config_error(pre + k, top.get(k)->to_text(),
                           "absent: this model type's reference does not soft-cap (give model_type gemma2 / gemma3)");
  }
  L::finish_layers(out, base_scale, softcap, out.positional == positional_family::alibi);
  return out;
}

/// Reads the per-layer positional configuration from GGUF metadata the way llama.cpp runs it,
/// through the architecture table: `{arch}.block_count`, `{arch}.rope.dimension_sections`
/// ([t, h, w, 4th]; the 4th stream must be 0), `{arch}.rope.freq_base_swa` (sliding layers' base,
/// no scaling), `{arch}.attention.sliding_window`, `{arch}.attention.sliding_window_pattern` (a
/// period or one bool per layer), `{arch}.attention.temperature_scale` / `.temperature_length`
/// (Mistral 3 rule), `{arch}.attention.scale` (Granite), `{arch}.attn_logit_softcapping` /
/// `{arch}.final_logit_softcapping` (Gemma 2), `{arch}.full_attention_interval` (Qwen3-Next).
/// Where a key is absent llama.cpp's built-in values apply (Gemma 2 / gpt-oss alternate, Gemma 3
/// period 6 with a sliding base of 10000, Cohere2 period 4, Llama 4 NoPE every 4th layer with the
/// temperature (8192, 0.1) and chunks of 8192, SmolLM3 NoPE every 4th layer), with a warning.
[[nodiscard]] inline layered_config load_gguf_layered(const config_value& metadata,
                                                      const config_value* tensors = nullptr) {
  namespace L = detail::layered;
  layered_config out;
  out.base = load_gguf_config(metadata, tensors);
  out.warnings = L::residual_warnings(out.base.warnings);
  const std::string arch = out.base.model_type, p = arch + ".";
  const architecture* found = find_gguf_architecture(arch);
  const architecture& A = found ? *found : L::generic_architecture();
  out.family = std::string(A.family);
  out.positional = found            ? A.positional
                   : out.base.rope  ? positional_family::rope
                   : out.base.alibi ? positional_family::alibi
                   : out.base.t5    ? positional_family::t5_buckets
                                    : positional_family::none;
  if (A.scale == scale_rule::mpt_softmax_scale && !out.base.alibi) out.positional = positional_family::learned;
  if (found && out.base.rope) out.base.rope->layout = A.gguf_layout;
  const detail::key_reader md{&metadata, ""};
  const auto n_opt = md.int32(p + "block_count", 1);
  if (!n_opt) throw config_error(p + "block_count", "absent", "the layer count (>= 1)");
  const int n = *n_opt;
  const auto nz = static_cast<std::size_t>(n);
  std::optional<rope_config> global = out.base.rope;
  if (found && !A.mscale2_gguf) L::fold_mscale(global);
  // llama.cpp reads a window of 0 as "no sliding window" (and, for llama4, as "no NoPE layers, no chunks")
  const auto window_key = md.integer(p + "attention.sliding_window", 0, std::int64_t{1} << 53);
  const bool window_zero = window_key && *window_key == 0;
  std::optional<std::int64_t> window = window_zero ? std::nullopt : window_key;
  // EXAONE 4: llama.cpp sets its built-in pattern (and a window of 4096) only at one block count
  const bool builtin_here = !A.gguf_period_block_count || n == A.gguf_period_block_count;
  if (A.gguf_period_block_count && builtin_here && !window_key) window = A.default_window;

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
  } else if (A.layers == layer_rule::period && A.default_period && builtin_here &&
             !(A.nope == nope_rule::non_sliding_if_window && !window)) {
    sliding = L::sliding_from_period(n, A.default_period);
    out.warnings.push_back(pk + " absent: llama.cpp's built-in pattern for " + arch + " (every " +
                           std::to_string(A.default_period) + "th layer full) is used");
  } else if (A.layers == layer_rule::sliding_all && A.gguf_reads_window && window) {
    sliding = std::vector<bool>(nz, true);
  } else if (window && found && (A.layers != layer_rule::period || !A.gguf_reads_window || !builtin_here)) {
    out.warnings.push_back(p + "attention.sliding_window: llama.cpp attends fully on every " + arch +
                           " layer (it does not read the key for this architecture); ignored");
  }
  std::optional<rope_config> local = global;
  if (auto swa = md.number(p + "rope.freq_base_swa"); swa && local) {
    local->theta = *swa;
    local->scaling = default_scaling{};
  } else if (A.local_base && local) {
    local->theta = A.default_local_theta;  // llama.cpp gemma3: rope_freq_base_train_swa = 10000
    local->scaling = default_scaling{};
  }
  const bool local_differs = md.has(p + "rope.freq_base_swa") || A.local_base;

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
    if (A.mrope_interleaved || A.gguf_mrope_interleaved) ms.layout = mrope_layout::interleaved;
    if (!global) throw config_error(sk, v->to_text(), "a model with RoPE");
    const int P = L::pairs_of(*global);
    try {
      static_cast<void>(mrope_pair_streams(ms.section, ms.layout, P));
    } catch (const config_error&) {
      throw config_error(sk, v->to_text(), "entries >= 0 summing to the rotary pair count " + std::to_string(P));
    }
    out.mrope = ms;
  }

  // NoPE layers, chunks, hybrid layers and temperature
  std::vector<bool> use_rope(nz, global.has_value());
  std::vector<layer_attention> kind(nz, layer_attention::full);
  if (sliding)
    for (std::size_t i = 0; i < nz; ++i) kind[i] = (*sliding)[i] ? layer_attention::sliding : layer_attention::full;
  std::optional<attention_temperature_config> nope_temp, every_temp;
  if (A.layers == layer_rule::nope_interval && !(A.chunked && window_zero)) {
    for (int i = 0; i < n; ++i)
      use_rope[static_cast<std::size_t>(i)] = use_rope[static_cast<std::size_t>(i)] && (i + 1) % A.default_period != 0;
    out.warnings.push_back(arch + ": NoPE every " + std::to_string(A.default_period) +
                           "th layer is llama.cpp's built-in rule");
  }
  if (A.llama4_temperature && !window_zero) {
    nope_temp = attention_temperature_config{.head_dim = global ? global->head_dim : 0};
    out.warnings.push_back(arch + ": the Llama 4 temperature (8192, 0.1) and chunks of " +
                           std::to_string(A.default_chunk.value_or(0)) + " are llama.cpp's built-in values");
  }
  if (A.chunked && !window_zero)
    for (std::size_t i = 0; i < nz; ++i)
      if (use_rope[i]) kind[i] = layer_attention::chunked;
  if (A.layers == layer_rule::hybrid_interval) {
    const auto iv = md.int32(p + "full_attention_interval", 1).value_or(A.default_period);
    detail::require(iv <= n, p + "full_attention_interval", iv, "<= block_count = " + std::to_string(n));
    for (int i = 0; i < n; ++i)
      kind[static_cast<std::size_t>(i)] = (i + 1) % iv != 0 ? layer_attention::linear : layer_attention::full;
  }
  const bool swa_any =
      std::any_of(kind.begin(), kind.end(), [](layer_attention a) { return a == layer_attention::sliding; });
  for (std::size_t i = 0; i < nz; ++i) {
    if (kind[i] == layer_attention::linear) use_rope[i] = false;
    if (A.nope == nope_rule::non_sliding && kind[i] != layer_attention::sliding) use_rope[i] = false;
    // llama.cpp exaone4: RoPE iff the layer slides or the model has no sliding layer
    if (A.nope == nope_rule::non_sliding_if_window && swa_any && kind[i] != layer_attention::sliding)
      use_rope[i] = false;
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
    s.attention = kind[i];
    if (kind[i] == layer_attention::sliding) {
      if (!window) throw config_error(p + "attention.sliding_window", "absent", "a window for the sliding layers");
      s.window = window;
    } else if (kind[i] == layer_attention::chunked) {
      s.chunk_size = A.default_chunk;
    }
    if (use_rope[i]) {
      const bool sl = kind[i] == layer_attention::sliding;
      s.rope = sl ? local : global;
      s.rope_source = sl && local_differs ? "local" : "global";
    } else {
      s.rope_source = "none";
      if (nope_temp) s.temperature = nope_temp;
    }
    if (every_temp) s.temperature = every_temp;
  }
  out.attention_sinks = A.sinks;

  // head width, softmax scale, soft-capping
  const auto heads = out.base.num_attention_heads;
  const auto embd = md.int32(p + "embedding_length", 1);
  if (out.base.rope)
    out.head_dim = out.base.rope->head_dim;
  else if (auto kl = md.int32(p + "attention.key_length", 1))
    out.head_dim = *kl;
  else if (embd && heads && *heads > 0 && *embd % *heads == 0)
    out.head_dim = *embd / *heads;
  double base_scale = out.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(out.head_dim)) : 0.0;
  if (A.scale == scale_rule::query_pre_attn_scalar && embd && heads && *heads > 0) {
    // llama.cpp: the 27B Gemma 2 (46 layers) / Gemma 3 (62 layers) scale by 1/sqrt(n_embd / n_head)
    const bool big = (arch == "gemma2" && n == 46) || (arch == "gemma3" && n == 62);
    if (big) base_scale = 1.0 / std::sqrt(static_cast<double>(*embd / *heads));
  }
  if (auto s = md.number(p + "attention.scale"); s && *s != 0) base_scale = L::positive(p + "attention.scale", *s);
  if (A.scale == scale_rule::unscaled) base_scale = 1.0;
  std::optional<double> softcap;
  if (auto c = md.number(p + "attn_logit_softcapping"); c && *c != 0)
    softcap = L::positive(p + "attn_logit_softcapping", *c);
  if (auto c = md.number(p + "final_logit_softcapping"); c && *c != 0)
    out.final_logit_softcap = L::positive(p + "final_logit_softcapping", *c);
  L::finish_layers(out, base_scale, softcap, out.positional == positional_family::alibi);
  return out;
}

}  // namespace posenc::inline v0
