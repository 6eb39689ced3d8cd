// posenc/config/rules_attention.hpp — the family and attention rules: which row of the architecture
// table a config belongs to (strict: an unknown family is refused, naming the nearest known names),
// its positional family (ALiBi slopes, T5 buckets, learned offsets), the softmax scale, soft-caps,
// mRoPE sections, query temperatures, the RoPE of each layer type, and the keys the family's
// reference does not read (reported, never applied). One function per rule, for every format.
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
#include <posenc/config/layered_config.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/rules_layers.hpp>
#include <posenc/config/rules_relative.hpp>
#include <posenc/config/rules_rope.hpp>
#include <posenc/config/view.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/config.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/schedule.hpp>

namespace posenc::inline v0::detail::rules {

using mrope_spec_t = mrope_spec;

/// The table's row for the view's model type (text_config's, else the outer one); nullptr when the type
/// is unknown and `generic` allows reading the keys at face value. Strict: config_error naming the type
/// and the nearest known names.
inline const architecture* rule_family(const key_view& v, const load_options& o, std::vector<std::string>& warnings) {
  const bool alibi = v.read().boolean("alibi").value_or(false);
  const architecture* a = v.gguf() ? find_gguf_architecture(v.model_type) : find_hf_architecture(v.model_type, alibi);
  if (!a && !v.gguf() && v.reported_type != v.model_type) a = find_hf_architecture(v.reported_type, alibi);
  if (a) return a;
  const std::string key = v.gguf()                                              ? "general.architecture"
                          : v.prefix.empty() || v.model_type == v.reported_type ? std::string("model_type")
                                                                                : v.prefix + "model_type";
  if (o.generic) {
    warnings.push_back(key + " \"" + v.model_type + "\": not in the architecture table; keys read at face value");
    return nullptr;
  }
  if (v.model_type.empty())
    throw config_error(key, "absent", "the model type, which names the family (or load generically: --generic)");
  std::string near;
  for (const auto& n : nearest_architecture_names(v.model_type, v.gguf())) near += (near.empty() ? "" : ", ") + n;
  throw config_error(key, "\"" + v.model_type + "\"",
                     "a model type posenc knows (nearest: " + near +
                         "); posenc does not guess a family's attention (load generically to read the keys at "
                         "face value: --generic)");
}

/// Families posenc refuses, and mechanisms it does not model in any family, are config_errors.
inline void rule_refused(const context& c) {
  if (c.known && !c.A.refused.empty()) {
    const auto colon = c.A.refused.find(':');
    throw config_error(c.v.prefix + std::string(c.A.refused.substr(0, colon)),
                       std::string(c.A.family) + " is refused: " + std::string(c.A.refused.substr(colon + 2)));
  }
  if (c.top().boolean("use_bidirectional_attention").value_or(false) && !(c.known && c.A.reads_bidirectional_key))
    throw config_error(c.v.name("use_bidirectional_attention"), "true",
                       "false or absent (" + c.who() + " reads no such key)");
  // RoFormer's rotary_value rotates the values too (modeling_roformer.py apply_rotary_position_embeddings)
  if (!c.v.gguf() && c.top().boolean("rotary_value").value_or(false))
    throw config_error(c.v.name("rotary_value"), "true",
                       "false or absent (rotary_value also rotates the values; posenc rotates queries and keys only)");
}

/// ALiBi parameters: the family's (MPT: HF's modeling code always uses a maximum bias of 8; Falcon: slopes
/// times head_dim^-0.5), GGUF attention.max_alibi_bias (0 means none), or, for unknown families, the keys.
inline std::optional<model_config::alibi_params> rule_alibi(const context& c, std::optional<int> head_dim) {
  const auto& t = c.top();
  const config_value* ac = t.get("attn_config");
  const detail::key_reader a{ac && ac->is_object() ? ac : nullptr, c.v.prefix + "attn_config."};
  if (c.v.gguf()) {
    if (const auto b = t.number("alibi_bias_max")) {
      if (*b > 0) return model_config::alibi_params{*b, 1};
      return std::nullopt;
    }
    return c.known && c.A.positional == positional_family::alibi ? std::optional(model_config::alibi_params{})
                                                                 : std::nullopt;
  }
  if (!c.known) {
    if (a.boolean("alibi").value_or(false))
      return model_config::alibi_params{a.number("alibi_bias_max").value_or(8.0), 1};
    if (t.boolean("alibi").value_or(false)) return model_config::alibi_params{};
    return std::nullopt;
  }
  if (c.A.positional != positional_family::alibi) return std::nullopt;
  for (const char* k : {"alibi", "alibi_bias_max"})
    if (a.has(k) && !(std::string_view(k) == "alibi" && *a.boolean(k)) &&
        !(std::string_view(k) == "alibi_bias_max" && *a.number(k) == 8.0))
      c.warn(a.name(k) + ": " + c.who() +
             "'s modeling code does not read it (ALiBi with a maximum bias of 8); ignored");
  model_config::alibi_params p;
  if (c.A.alibi_scaled) {
    if (!head_dim) throw config_error(c.v.name("hidden_size"), "absent", "the head width the ALiBi bias is scaled by");
    p.slope_scale = 1.0 / std::sqrt(static_cast<double>(*head_dim));
  }
  return p;
}

/// T5 relative-position buckets (GGUF: llama.cpp has no key for the maximum distance and uses 128).
inline std::optional<model_config::t5_params> rule_t5(const context& c) {
  const auto& t = c.top();
  const bool keys = t.has("relative_attention_num_buckets") || t.has("relative_attention_max_distance");
  const bool family = c.known ? c.A.positional == positional_family::t5_buckets : keys;
  if (!family) return std::nullopt;
  model_config::t5_params p;
  p.num_buckets = t.int32("relative_attention_num_buckets").value_or(static_cast<int>(p.num_buckets));
  if (!c.v.gguf())
    p.max_distance = t.int32("relative_attention_max_distance").value_or(static_cast<int>(p.max_distance));
  return p;
}

/// The positional family: the row's, else what the keys show.
inline positional_family rule_positional(const context& c, bool rope, bool alibi, bool t5) {
  if (c.known) return c.A.positional;
  return rope    ? positional_family::rope
         : alibi ? positional_family::alibi
         : t5    ? positional_family::t5_buckets
                 : positional_family::none;
}

/// Learned absolute positions: the embedding row of position 0 (OPT 2; RoBERTa pad_token_id + 1).
inline std::optional<std::int64_t> rule_learned_offset(const context& c) {
  if (is_deberta(c))  // DeBERTa: absolute positions from row 0 when position_biased_input (class default true)
    return c.top().boolean("position_biased_input").value_or(true) ? std::optional<std::int64_t>(0) : std::nullopt;
  if (!c.known || (c.A.positional != positional_family::learned && c.A.positional != positional_family::sinusoidal))
    return std::nullopt;
  if (!c.A.learned_offset_from_pad) return c.A.learned_offset;
  const auto pad = c.top().integer("pad_token_id", 0, max_length);
  return pad.value_or(c.A.learned_offset - 1) + 1;
}

/// A finite positive number (a scale or a cap).
inline double positive(const std::string& key, double v) {
  detail::require(std::isfinite(v) && v > 0, key, v, "a finite number > 0");
  return v;
}

/// The multiplier of q.k (without an encoder's own correction such as DeepSeek's YaRN mscale²).
inline double rule_scale(const context& c, std::ptrdiff_t head_dim, int n) {
  const auto& t = c.top();
  double scale = head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : 0.0;
  const scale_rule rule = c.known ? c.A.scale : scale_rule::head_dim;
  if (c.v.gguf()) {
    const auto embd = t.int32("hidden_size", 1), heads = t.int32("num_attention_heads", 1);
    // llama.cpp: the 27B Gemma 2 (46 layers) / Gemma 3 (62 layers) scale by 1/sqrt(n_embd / n_head)
    if (rule == scale_rule::query_pre_attn_scalar && embd && heads &&
        ((c.v.model_type == "gemma2" && n == 46) || (c.v.model_type == "gemma3" && n == 62)))
      scale = 1.0 / std::sqrt(static_cast<double>(*embd / *heads));
    for (const char* k : {"attention_scale", "attention_output_scale"})  // Granite attention.scale, Grok output_scale
      if (auto s = t.number(k); s && *s != 0) scale = positive(c.v.name(k), *s);
    if (rule == scale_rule::inv_head_dim && head_dim > 0) return 1.0 / static_cast<double>(head_dim);
    return rule == scale_rule::unscaled || rule == scale_rule::one ? 1.0 : scale;
  }
  if (c.known && c.A.reads_scale_attn_weights && !t.boolean("scale_attn_weights").value_or(true)) return 1.0;
  switch (rule) {
    case scale_rule::head_dim:
    case scale_rule::qk_head_dim:
      break;
    case scale_rule::query_pre_attn_scalar:
      scale = 1.0 / std::sqrt(positive(c.v.name("query_pre_attn_scalar"),
                                       t.number("query_pre_attn_scalar").value_or(c.A.default_scale_param)));
      break;
    case scale_rule::attention_multiplier:  // absent with no class default: head_dim^-0.5 (HyperCLOVAX)
      if (const auto m = t.number("attention_multiplier"))
        scale = positive(c.v.name("attention_multiplier"), *m);
      else if (c.A.default_scale_param != 0)
        scale = c.A.default_scale_param;
      break;
    case scale_rule::mpt_softmax_scale:
      if (const config_value* ac = t.get("attn_config"); ac && ac->is_object())
        if (auto v = detail::key_reader{ac, c.v.prefix + "attn_config."}.number("softmax_scale"))
          scale = positive(c.v.prefix + "attn_config.softmax_scale", *v);
      break;
    case scale_rule::unscaled:
    case scale_rule::one:
      scale = 1.0;
      break;
    case scale_rule::key_multiplier: {  // k = k_proj(x * in) * key_multiplier, q = q_proj(x * in)
      const double in =
          positive(c.v.name("attention_in_multiplier"), t.number("attention_in_multiplier").value_or(1.0));
      scale *= positive(c.v.name("key_multiplier"), t.number("key_multiplier").value_or(1.0)) * in * in;
      break;
    }
    case scale_rule::inv_head_dim:
      scale = head_dim > 0 ? 1.0 / static_cast<double>(head_dim) : 0.0;
      break;
    case scale_rule::half_head_dim:  // Zamba: (head_dim / 2)^-0.5
      scale = head_dim > 0 ? std::sqrt(2.0 / static_cast<double>(head_dim)) : 0.0;
      break;
    case scale_rule::deberta_cross_terms:  // with relative_attention the encoder applies (1 + n)^-0.5
      if (!t.boolean("relative_attention").value_or(false)) scale /= std::sqrt(1.0 + deberta_cross_terms(c));
      break;
  }
  if (t.has("query_pre_attn_scalar") && rule != scale_rule::query_pre_attn_scalar)
    c.warn(c.v.name("query_pre_attn_scalar") + ": " + c.who() + " does not read it (its scale is " +
           (rule == scale_rule::one ? std::string("1") : std::string("set otherwise")) + "); ignored");
  if (t.has("attention_multiplier") && rule != scale_rule::attention_multiplier)
    c.warn(c.v.name("attention_multiplier") + ": " + c.who() + " does not read it; ignored");
  return scale;
}

/// Logit soft-caps (Gemma 2): {attention, final}. A family whose reference does not soft-cap refuses them.
inline std::pair<std::optional<double>, std::optional<double>> rule_softcap(const context& c) {
  const auto& t = c.top();
  std::pair<std::optional<double>, std::optional<double>> out;
  const bool reads = c.v.gguf() || !c.known || c.A.softcap;
  if (!reads) {
    for (const char* k : {"attn_logit_softcapping", "final_logit_softcapping"})
      if (t.has(k))
        throw config_error(c.v.name(k), t.get(k)->to_text(),
                           "absent: this model type's reference does not soft-cap (give model_type gemma2 / gemma3)");
    return out;
  }
  auto cap = [&](const char* k, std::optional<double> dflt) -> std::optional<double> {
    if (const auto v = t.number(k)) {
      if (c.v.gguf() && *v == 0) return std::nullopt;
      return positive(c.v.name(k), *v);
    }
    return c.v.present(k) || !c.known || c.v.gguf() ? std::nullopt : dflt;
  };
  out.first = cap("attn_logit_softcapping", c.A.default_attn_softcap);
  out.second = cap("final_logit_softcapping", c.A.default_final_softcap);
  return out;
}

/// mRoPE sections (Qwen2-VL family; GGUF rope.dimension_sections with a 4th stream of 0).
inline std::optional<mrope_spec_t> rule_mrope(const context& c, const std::optional<rope_config>& global) {
  const rope_entry* e = c.v.rope_for("");
  const config_value* sec = c.top().get("mrope_section");
  std::string key = c.v.name("mrope_section");
  if (!sec && e)
    if (const config_value* s = e->params.find("mrope_section"); s && !s->is_null()) {
      sec = s;
      key = detail::key_reader{&e->params, e->prefix, &e->spelling}.name("mrope_section");
    }
  if (!sec || (c.known && !c.A.mrope && !c.v.gguf())) return std::nullopt;
  const auto& it = sec->is_list() ? sec->items() : std::vector<config_value>{};
  const bool four = c.v.gguf() && it.size() == 4;
  if (!sec->is_list() || (it.size() != 3 && !four) ||
      !std::all_of(it.begin(), it.end(), [](const config_value& x) { return x.is_integer(); }))
    throw config_error(key, sec->to_text(),
                       c.v.gguf() ? "a list of 3 or 4 integers" : "a list of three integers [t, h, w]");
  if (four && it[3].as_integer() != 0)
    throw config_error(key, sec->to_text(), "a 4th section of 0 (ggml's 4th position stream is not modelled)");
  mrope_spec_t ms;
  for (std::size_t i = 0; i < 3; ++i) ms.section[i] = static_cast<int>(it[i].as_integer());
  if (c.known && (c.A.mrope_interleaved || (c.v.gguf() && c.A.gguf_mrope_interleaved)))
    ms.layout = mrope_layout::interleaved;
  if (!c.v.gguf() && e)
    if (const config_value* il = e->params.find("mrope_interleaved"); il && !il->is_null()) {
      if (!il->is_bool()) throw config_error(e->prefix + "mrope_interleaved", il->to_text(), "true or false");
      ms.layout = il->as_bool() ? mrope_layout::interleaved : mrope_layout::contiguous;
    }
  if (!global) throw config_error(key, sec->to_text(), "a model with RoPE");
  const int P = rope_schedule(*global).pairs();
  try {
    static_cast<void>(mrope_pair_streams(ms.section, ms.layout, P));
  } catch (const config_error&) {
    throw config_error(key, sec->to_text(), "entries >= 0 summing to the rotary pair count " + std::to_string(P));
  }
  return ms;
}

/// The query temperatures: Llama 4's on the NoPE layers (attn_temperature_tuning, floor_scale,
/// attn_scale; GGUF: llama.cpp's built-in (8192, 0.1)), and Mistral 3's llama_4_scaling_beta on every
/// layer (GGUF attention.temperature_scale / temperature_length).
struct temperatures {
  std::optional<attention_temperature_config> nope, every;
};

inline void check_temperature(const attention_temperature_config& t, const std::string& floor_key,
                              const std::string& scale_key) {
  detail::require(std::isfinite(t.floor_scale) && t.floor_scale > 0, floor_key, t.floor_scale, "a finite number > 0");
  detail::require(std::isfinite(t.scale) && t.scale >= 0, scale_key, t.scale, "a finite number >= 0");
}

inline temperatures rule_temperature(const context& c, std::ptrdiff_t head_dim, bool gguf_window_zero) {
  const auto& t = c.top();
  temperatures out;
  const bool llama4 = c.known && c.A.llama4_temperature;
  if (c.v.gguf()) {
    if (llama4 && !gguf_window_zero) {
      out.nope = attention_temperature_config{.head_dim = head_dim};
      c.warn(c.v.model_type + ": the Llama 4 temperature (8192, 0.1) and chunks of " +
             std::to_string(c.A.default_chunk.value_or(0)) + " are llama.cpp's built-in values");
    }
  } else if (t.boolean("attn_temperature_tuning").value_or(llama4) && (llama4 || !c.known)) {
    attention_temperature_config a{.head_dim = head_dim, .rule = temperature_rule::llama4};
    if (auto v = t.number("floor_scale")) a.floor_scale = *v;
    if (auto v = t.number("attn_scale")) a.scale = *v;
    check_temperature(a, c.v.name("floor_scale"), c.v.name("attn_scale"));
    out.nope = a;
  } else if (t.has("floor_scale") || t.has("attn_scale")) {
    c.warn(c.v.name("floor_scale") + "/attn_scale: attn_temperature_tuning is off or absent; ignored");
  }
  const rope_entry e = entry_for(c, "");
  const detail::key_reader r{&e.params, e.prefix, &e.spelling};
  std::optional<double> beta = c.v.gguf() ? t.number("temperature_scale") : r.number("llama_4_scaling_beta");
  std::optional<double> length = c.v.gguf() ? t.number("temperature_length")
                                 : r.has("original_max_position_embeddings")
                                     ? r.number("original_max_position_embeddings")
                                     : t.number("original_max_position_embeddings");
  const std::string bkey = c.v.gguf() ? c.v.name("temperature_scale") : r.name("llama_4_scaling_beta");
  const std::string lkey = c.v.gguf() ? c.v.name("temperature_length") : r.name("original_max_position_embeddings");
  if (c.v.gguf() && length && !beta) throw config_error(bkey, "absent", "given with temperature_length");
  if (!beta) return out;
  if (!length)
    throw config_error(
        lkey, "absent",
        c.v.gguf() ? "given with temperature_scale" : "the length L0 of the llama_4_scaling_beta temperature");
  attention_temperature_config a{
      .head_dim = head_dim, .rule = temperature_rule::llama4_beta, .floor_scale = *length, .scale = *beta};
  check_temperature(a, lkey, bkey);
  out.every = a;
  return out;
}

/// For a family whose softmax scale carries no YaRN mscale² (every one but DeepSeek's): a YaRN mscale /
/// mscale_all_dim pair sets only the rotary magnitude (their ratio, modeling_rope_utils), so it is folded
/// into attention_factor and the softmax multiplier drops to 1.
inline void fold_mscale(std::optional<rope_config>& r) {
  if (!r) return;
  auto* y = std::get_if<yarn_scaling>(&r->scaling);
  if (!y || !y->mscale_all_dim) return;
  if (!y->attention_factor) y->attention_factor = yarn_attention_factor(*y);
  y->mscale.reset();
  y->mscale_all_dim.reset();
}

/// Phi-MoE replaces LongRoPE's magnitude by short_mscale / long_mscale, chosen by the sequence length:
/// equal ones are a fixed magnitude, different ones a config_error.
inline void rule_longrope_mscale(const context& c, std::optional<rope_config>& global) {
  if (!c.known || !c.A.longrope_mscale || !global || !std::holds_alternative<longrope_scaling>(global->scaling)) return;
  const rope_entry e = entry_for(c, "");
  const detail::key_reader r{&e.params, e.prefix, &e.spelling};
  const auto sm = r.get("short_mscale"), lm = r.get("long_mscale");
  if (!sm && !lm) return;
  if (!sm || !lm || !sm->is_number() || !lm->is_number())
    throw config_error(sm ? r.name("long_mscale") : r.name("short_mscale"), "absent or not a number",
                       "short_mscale and long_mscale, both numbers");
  if (sm->as_number() != lm->as_number())
    throw config_error(r.name("short_mscale"), sm->to_text(),
                       "equal to long_mscale (" + lm->to_text() +
                           "): a magnitude that switches with the sequence length is not modelled");
  auto& l = std::get<longrope_scaling>(global->scaling);
  if (l.attention_factor && *l.attention_factor != sm->as_number())
    throw config_error(r.name("short_mscale"), "contradicts attention_factor (" + sm->to_text() + " vs " +
                                                   detail::to_text(*l.attention_factor) + ")");
  l.attention_factor = positive(r.name("short_mscale"), sm->as_number());
}

/// The RoPE of each layer type, and where it came from ("global", "local", "rope_parameters.<type>").
struct layer_ropes {
  std::optional<rope_config> full, sliding, chunked;
  std::string full_source = "global", sliding_source = "global", chunked_source = "global";
  std::string rope_type;  ///< the full-attention layers' scaling name
};

/// The sliding layers' RoPE when the config gives one RoPE: the family's local rule (Gemma 3's own base
/// without scaling, OLMo 3's unscaled base), or the global one.
inline void legacy_local(const context& c, layer_ropes& r) {
  const auto local_theta = c.top().number("rope_local_base_freq");
  const bool local_base = c.known ? c.A.local_rope == local_rope_rule::local_base : local_theta.has_value();
  if (local_theta && c.known && !local_base)
    c.warn(c.v.name("rope_local_base_freq") + ": " + c.who() + " does not read it; ignored");
  r.sliding = r.full;
  r.sliding_source = r.full_source;
  if (!r.sliding) return;
  if (c.v.gguf() ? c.known && c.A.local_rope == local_rope_rule::local_base : local_base) {
    r.sliding->theta = c.v.gguf() ? c.A.default_local_theta : local_theta.value_or(c.A.default_local_theta);
    r.sliding->scaling = default_scaling{};  // Gemma: local layers never scale
    r.sliding_source = "local";
  } else if (c.known && c.A.local_rope == local_rope_rule::unscaled_sliding && !c.v.gguf()) {
    r.sliding->scaling = default_scaling{};  // OLMo 3: legacy rope_scaling acts on the full-attention layers
    r.sliding_source = "local";
  }
}

inline layer_ropes rule_layer_ropes(const context& c, bool rope, const kinds_t& kinds) {
  layer_ropes r;
  if (!rope) return r;
  const double dflt = c.known ? c.A.default_theta : 10000.0;
  const auto top_theta = c.top().number("rope_theta");
  auto per_type = [&](const char* type, double fallback, std::string* name) -> std::optional<rope_config> {
    const rope_entry* e = c.v.rope_for(type);
    if (!e || e->layer_type != type) return std::nullopt;
    return rule_rope(c, *e, fallback, name);
  };
  r.full = per_type("full_attention", top_theta.value_or(dflt), &r.rope_type);
  if (r.full) {
    const auto own = scaling_keys{*c.v.rope_for("full_attention"), c}.number("rope_theta");
    if (top_theta && own && *own != *top_theta)
      c.warn(c.v.name("rope_theta") + " = " + detail::to_text(*top_theta) +
             " ignored: rope_parameters.full_attention "
             "gives the full-attention layers' base (" +
             detail::to_text(*own) + ")");
    r.full_source = "rope_parameters.full_attention";
  } else {
    const bool needs_full = std::any_of(kinds.begin(), kinds.end(), [](layer_attention a) {
      return a == layer_attention::full || a == layer_attention::chunked;
    });
    if (needs_full && !c.v.rope.empty() && !c.v.rope_for("") && !c.v.gguf())
      throw config_error(c.v.prefix + "rope_parameters.full_attention", "absent",
                         "RoPE parameters for the full-attention layers (per-layer-type rope_parameters)");
    r.full = rule_rope(c, entry_for(c, ""), dflt, &r.rope_type);
  }
  const auto local_theta = c.top().number("rope_local_base_freq");
  const bool local_base = c.known && c.A.local_rope == local_rope_rule::local_base;
  std::string ignored;
  r.sliding = per_type("sliding_attention",
                       local_base ? local_theta.value_or(c.A.default_local_theta) : top_theta.value_or(dflt), &ignored);
  if (r.sliding) {
    r.sliding_source = c.v.gguf() ? "local" : "rope_parameters.sliding_attention";
    if (local_theta && r.sliding->theta != *local_theta && !c.v.gguf())
      c.warn(c.v.name("rope_local_base_freq") + " = " + detail::to_text(*local_theta) +
             " ignored: rope_parameters.sliding_attention gives the sliding layers' base (" +
             detail::to_text(r.sliding->theta) + ")");
  } else {
    legacy_local(c, r);
  }
  r.chunked = per_type("chunked_attention", top_theta.value_or(dflt), &ignored);
  if (!r.chunked) {
    r.chunked = r.full;
    r.chunked_source = r.full_source;
  }
  rule_longrope_mscale(c, r.full);
  if (c.known && c.A.longrope_mscale) r.sliding = r.chunked = r.full;
  const bool mscale2 = c.v.gguf() ? c.A.mscale2_gguf : c.A.mscale2_hf;
  if (c.known && !mscale2)
    for (auto* x : {&r.full, &r.sliding, &r.chunked}) fold_mscale(*x);
  return r;
}

/// Top-level keys that look rotary but no rule reads are reported, not ignored silently.
inline void rule_unknown_rotary_keys(const context& c) {
  if (c.v.gguf()) return;
  static constexpr std::string_view known[] = {
      "rope_theta",           "rope_scaling",          "rope_parameters",        "rotary_pct",      "rotary_emb_base",
      "rotary_dim",           "partial_rotary_factor", "qk_rope_head_dim",       "rope_interleave", "rotary",
      "rope_local_base_freq", "no_rope_layers",        "no_rope_layer_interval", "use_rope",        "rope_scaling_type",
      "rotary_emb_fraction",  "rotary_value"};
  for (const auto& m : c.v.keys.members()) {
    if (const auto sp = c.v.spelling.find(m.key);
        m.value.is_null() || sp == c.v.spelling.end() || sp->second != c.v.prefix + m.key)
      continue;  // an alias folded onto its logical key
    if (m.key.find("rope") == std::string::npos && m.key.find("rotary") == std::string::npos) continue;
    if (std::find(std::begin(known), std::end(known), m.key) != std::end(known)) continue;
    if (m.key == "use_mem_rope" && c.known && c.A.nope == nope_rule::use_mem_rope) continue;  // Zamba2 reads it
    c.warn(c.v.name(m.key) + ": unknown rotary key; ignored");
  }
}

/// Keys acting outside the attention posenc computes (architectures.hpp no_effect_keys) are reported.
inline void rule_no_effect_keys(const context& c) {
  if (c.v.gguf()) return;
  const auto& t = c.top();
  for (const char* k : {"use_qk_norm", "qk_layernorm", "logit_scale", "logits_scaling", "embedding_multiplier",
                        "residual_multiplier", "attention_value_scale"})
    if (const config_value* v = t.get(k);
        v && !(v->is_bool() && !v->as_bool()) &&
        !(v->is_number() && v->as_number() == 1.0 && std::string_view(k) != "logit_scale"))
      c.warn(c.v.name(k) +
             ": acts on the projections, embeddings or LM head, outside the attention; not applied by posenc");
  if (const config_value* ac = t.get("attn_config"); ac && ac->is_object())
    if (const config_value* clip = ac->find("clip_qkv"); clip && !clip->is_null())
      c.warn(c.v.prefix +
             "attn_config.clip_qkv: clamps the q/k/v projections, before the attention; not applied by posenc");
}

}  // namespace posenc::inline v0::detail::rules
