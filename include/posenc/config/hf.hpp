// posenc/config/hf.hpp — Hugging Face config.json keys -> model_config (docs/spec.md §11, §8).
//
// Reads a config_value tree (config/json.hpp makes one from a file) the way a person reading the
// config would: rope_theta / rope_scaling / rope_parameters (v5), legacy `type`, GPT-NeoX rotary_pct
// and rotary_emb_base, GPT-J rotary_dim, DeepSeek qk_rope_head_dim / rope_interleave, Phi-3's
// top-level original_max_position_embeddings, T5 buckets, ALiBi models. Unlike HF it never derives
// a value the config gives (HF #38224), treats an explicit 0 as a value (HF's `x or default` does
// not), rejects contradictory keys, and reports every key it ignores in model_config::warnings.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/config/architectures.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/value.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/rope/config.hpp>

namespace posenc::inline v0 {

namespace detail::hf {

inline bool is_one_of(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

/// model_type values of HF decoders that use RoPE even when the config carries no rope key.
inline bool rope_family(std::string_view mt) {
  return is_one_of(mt,
                   {"llama",   "mistral",   "mixtral",          "qwen2",       "qwen2_moe", "qwen3",      "qwen3_moe",
                    "gemma",   "gemma2",    "gemma3_text",      "phi",         "phi3",      "phimoe",     "gpt_neox",
                    "gptj",    "codegen",   "deepseek_v2",      "deepseek_v3", "stablelm",  "starcoder2", "olmo",
                    "olmo2",   "olmoe",     "cohere",           "cohere2",     "internlm2", "granite",    "granitemoe",
                    "gpt_oss", "persimmon", "nemotron",         "exaone",      "glm",       "glm4",       "helium",
                    "smollm3", "ernie4_5",  "hunyuan_v1_dense", "minicpm",     "arcee",     "dbrx",       "jetmoe"});
}

/// Canonical rope_type for a name found in the config (aliases folded, docs/spec.md §8).
inline std::optional<std::string> canonical_rope_type(std::string_view t) {
  if (t == "default" || t == "none") return "default";
  if (t == "linear") return "linear";
  if (t == "dynamic") return "dynamic";
  if (t == "yarn" || t == "deepseek_yarn") return "yarn";
  if (t == "llama3") return "llama3";
  if (t == "longrope" || t == "su") return "longrope";
  if (t == "proportional") return "proportional";
  if (t == "mrope") return "mrope";
  return std::nullopt;
}

// Keys each scaling reads (besides rope_type/type and the v5 rope_theta/partial_rotary_factor).
inline constexpr std::array<std::string_view, 1> linear_keys{"factor"};
inline constexpr std::array<std::string_view, 3> dynamic_keys{"factor", "original_max_position_embeddings", "alpha"};
inline constexpr std::array<std::string_view, 9> yarn_keys{"factor",
                                                           "original_max_position_embeddings",
                                                           "beta_fast",
                                                           "beta_slow",
                                                           "mscale",
                                                           "mscale_all_dim",
                                                           "attention_factor",
                                                           "truncate",
                                                           "extrapolation_factor"};
inline constexpr std::array<std::string_view, 4> llama3_keys{"factor", "low_freq_factor", "high_freq_factor",
                                                             "original_max_position_embeddings"};
inline constexpr std::array<std::string_view, 5> longrope_keys{"short_factor", "long_factor", "factor",
                                                               "original_max_position_embeddings", "attention_factor"};

template <std::size_t N>
bool in(const std::array<std::string_view, N>& a, std::string_view k) {
  return std::find(a.begin(), a.end(), k) != a.end();
}

inline bool known_scaling_key(std::string_view k) {
  return in(linear_keys, k) || in(dynamic_keys, k) || in(yarn_keys, k) || in(llama3_keys, k) || in(longrope_keys, k) ||
         is_one_of(k, {"rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved",
                       "short_mscale", "long_mscale", "finetuned", "llama_4_scaling_beta"});
}

inline bool used_by(std::string_view type, std::string_view k) {
  if (is_one_of(k, {"rope_type", "type", "rope_theta", "partial_rotary_factor"})) return true;
  if (type == "linear") return in(linear_keys, k);
  if (type == "dynamic" || type == "ntk") return in(dynamic_keys, k);
  if (type == "yarn") return in(yarn_keys, k);
  if (type == "llama3") return in(llama3_keys, k);
  if (type == "longrope") return in(longrope_keys, k);
  return false;
}

/// rope_scaling and rope_parameters merged into one object; equal duplicates are fine, different
/// values for one key are a contradiction. HF v5 per-layer-type parameters ({"full_attention": {...},
/// "sliding_attention": {...}}) use the full-attention entry, with a warning.
inline config_value merged_scaling(const config_value* scaling, const config_value* params, std::string& prefix,
                                   std::vector<std::string>& warnings) {
  config_value merged = config_value::object();
  if (scaling && !scaling->is_null()) {
    if (!scaling->is_object()) throw config_error("rope_scaling", scaling->to_text(), "an object or null");
    merged = *scaling;
    prefix = "rope_scaling.";
  }
  if (params && !params->is_null()) {
    if (!params->is_object()) throw config_error("rope_parameters", params->to_text(), "an object or null");
    const config_value* p = params;
    const auto pm = params->members();
    const bool per_layer = !pm.empty() && std::all_of(pm.begin(), pm.end(), [](const config_value::member& m) {
      return m.value.is_object();
    });
    std::string pprefix = "rope_parameters.";
    if (per_layer) {
      const config_value* full = params->find("full_attention");
      p = full ? full : &pm.front().value;
      const std::string chosen = full ? "full_attention" : pm.front().key;
      pprefix += chosen + ".";
      for (const auto& m : pm)
        if (m.key != chosen)
          warnings.push_back("rope_parameters." + m.key +
                             ": per-layer-type RoPE is not modelled; using rope_parameters." + chosen +
                             " for every layer");
    }
    for (const auto& m : p->members()) {
      if (m.value.is_null()) continue;
      if (const config_value* prev = merged.find(m.key); prev && !prev->is_null()) {
        if (!(*prev == m.value))
          throw config_error(pprefix + m.key, "contradicts " + prefix + m.key + " (" + prev->to_text() + " vs " +
                                                  m.value.to_text() + ")");
        continue;
      }
      merged.set(m.key, m.value);
    }
    if (prefix.empty()) prefix = pprefix;
  }
  if (prefix.empty()) prefix = "rope_scaling.";
  return merged;
}

}  // namespace detail::hf

/// Reads the position-related keys of a Hugging Face config.json tree. Throws config_error naming
/// the key for a wrong type, a contradiction, or a missing required key; the returned rope_config
/// is complete but validated only when a schedule or encoder is built from it (rope/schedule.hpp).
[[nodiscard]] inline model_config load_hf_config(const config_value& root) {
  using detail::merge_same;
  namespace h = detail::hf;
  if (!root.is_object()) throw config_error("config", root.to_text(), "a JSON object");
  model_config out;
  out.format = "hf";
  const detail::key_reader top{&root, ""};
  out.model_type = top.string("model_type").value_or("");
  const std::string& mt = out.model_type;

  // Shapes and lengths (GPT-2-style n_*, T5-style d_model/num_heads are aliases).
  auto heads = merge_same(top.int32("num_attention_heads", 1), "num_attention_heads", top.int32("n_head", 1), "n_head");
  heads = merge_same(heads, "num_attention_heads", top.int32("num_heads", 1), "num_heads");
  heads = merge_same(heads, "num_attention_heads", top.int32("n_heads", 1), "n_heads");
  out.num_attention_heads = heads;
  out.num_key_value_heads = top.int32("num_key_value_heads", 1);
  const std::int64_t max_len = std::int64_t{1} << 53;
  out.max_position_embeddings =
      merge_same(top.integer("max_position_embeddings", 0, max_len), "max_position_embeddings",
                 top.integer("n_positions", 0, max_len), "n_positions");
  auto hidden = merge_same(top.int32("hidden_size", 1), "hidden_size", top.int32("n_embd", 1), "n_embd");
  hidden = merge_same(hidden, "hidden_size", top.int32("d_model", 1), "d_model");

  // ALiBi models.
  if (mt == "bloom") out.alibi = model_config::alibi_params{};
  if (const config_value* ac = top.get("attn_config"); ac && ac->is_object()) {
    const detail::key_reader a{ac, "attn_config."};
    if (a.boolean("alibi").value_or(false))
      out.alibi = model_config::alibi_params{a.number("alibi_bias_max").value_or(8.0)};
  }
  if (top.boolean("alibi").value_or(false)) out.alibi = model_config::alibi_params{};

  // T5 relative buckets.
  const bool t5_family = h::is_one_of(mt, {"t5", "mt5", "umt5", "longt5", "switch_transformers"});
  if (t5_family || top.has("relative_attention_num_buckets") || top.has("relative_attention_max_distance")) {
    model_config::t5_params t;
    t.num_buckets = top.int32("relative_attention_num_buckets").value_or(t.num_buckets);
    t.max_distance = top.int32("relative_attention_max_distance").value_or(t.max_distance);
    out.t5 = t;
  }

  // Unknown top-level keys that look rotary are reported, not ignored silently.
  for (const auto& m : root.members()) {
    const std::string& k = m.key;
    if (k.find("rope") == std::string::npos && k.find("rotary") == std::string::npos) continue;
    if (h::is_one_of(k, {"rope_theta", "rope_scaling", "rope_parameters", "rotary_pct", "rotary_emb_base", "rotary_dim",
                         "partial_rotary_factor", "qk_rope_head_dim", "rope_interleave", "rotary"}))
      continue;
    if (k == "rope_local_base_freq")
      out.warnings.push_back(k + ": per-layer RoPE base (sliding-window layers) is not modelled; rope_theta is used");
    else
      out.warnings.push_back(k + ": unknown rotary key; ignored");
  }

  const bool has_rope_key = top.has("rope_theta") || top.has("rope_scaling") || top.has("rope_parameters") ||
                            top.has("rotary_pct") || top.has("rotary_emb_base") || top.has("rotary_dim") ||
                            top.has("partial_rotary_factor") || top.has("qk_rope_head_dim");
  const bool uses_rope = (has_rope_key || h::rope_family(mt) || (mt == "falcon" && !out.alibi)) && !out.alibi;
  if (!uses_rope) {
    if (has_rope_key) out.warnings.push_back("rotary keys ignored: this model uses ALiBi");
    return out;
  }

  std::string prefix;
  const config_value scaling_obj =
      h::merged_scaling(top.get("rope_scaling"), top.get("rope_parameters"), prefix, out.warnings);
  const detail::key_reader sc{&scaling_obj, prefix};

  rope_config rc;

  // Base.
  auto theta = merge_same(top.number("rope_theta"), "rope_theta", sc.number("rope_theta"), prefix + "rope_theta");
  theta = merge_same(theta, "rope_theta", top.number("rotary_emb_base"), "rotary_emb_base");
  rc.theta = theta.value_or(10000.0);

  // Head and rotary dimensions.
  const auto head_dim = top.int32("head_dim");
  const auto qk_rope = top.int32("qk_rope_head_dim");
  const auto qk_nope = top.int32("qk_nope_head_dim");
  auto factor = merge_same(top.number("partial_rotary_factor"), "partial_rotary_factor",
                           sc.number("partial_rotary_factor"), prefix + "partial_rotary_factor");
  factor = merge_same(factor, "partial_rotary_factor", top.number("rotary_pct"), "rotary_pct");
  auto rotary_dim = top.int32("rotary_dim");
  if (qk_rope) {
    // DeepSeek MLA: each query head is [nope | rope]; RoPE acts on the rope slice with R = qk_rope_head_dim.
    // Both are in [0, 2^31); their sum is checked here, where the keys are known.
    const std::int64_t sum = std::int64_t{qk_nope.value_or(0)} + *qk_rope;
    if (sum > std::numeric_limits<int>::max())
      throw config_error("qk_nope_head_dim", detail::to_text(qk_nope.value_or(0)),
                         "qk_nope_head_dim + qk_rope_head_dim (= " + detail::to_text(sum) + ") <= 2147483647");
    rc.head_dim = static_cast<int>(sum);
    rc.rotary_dim = *qk_rope;
    rc.rotary_offset = qk_nope.value_or(0);
    if (head_dim && *head_dim != *qk_rope && *head_dim != rc.head_dim)
      out.warnings.push_back("head_dim = " + std::to_string(*head_dim) +
                             " ignored: the rotated slice is qk_rope_head_dim of qk_nope_head_dim + qk_rope_head_dim");
    if (factor || rotary_dim)
      out.warnings.push_back("partial_rotary_factor/rotary_dim ignored: qk_rope_head_dim gives the rotary dimension");
    factor.reset();
    rotary_dim.reset();
  } else if (head_dim) {
    rc.head_dim = *head_dim;
  } else if (hidden && heads) {
    if (*hidden % *heads != 0)
      throw config_error("hidden_size", detail::to_text(*hidden),
                         "a multiple of num_attention_heads = " + detail::to_text(*heads) + " (or give head_dim)");
    rc.head_dim = *hidden / *heads;
  } else {
    throw config_error("head_dim", "absent", "head_dim, or hidden_size and num_attention_heads");
  }
  if (rotary_dim && factor) {
    // Compared as doubles: a huge factor must not reach a float-to-integer conversion (UB).
    const double implied = std::floor(static_cast<double>(rc.head_dim) * *factor);
    if (implied != static_cast<double>(*rotary_dim))
      throw config_error("rotary_dim", "contradicts partial_rotary_factor (" + detail::to_text(*rotary_dim) + " vs " +
                                           detail::to_text(rc.head_dim) + " * " + detail::to_text(*factor) + ")");
    factor.reset();
  }
  if (rotary_dim) rc.rotary_dim = rotary_dim;
  rc.partial_rotary_factor = factor;

  // Pair layout: a property of the checkpoint, implied by the model class (docs/spec.md §7.2).
  // The architecture table knows the family's layout (config/architectures.hpp).
  const architecture* arch_row = find_hf_architecture(mt);
  bool interleaved = arch_row ? arch_row->hf_layout == kernels::pairing::interleaved : mt == "codegen";
  if (auto ri = top.boolean("rope_interleave")) interleaved = *ri;
  rc.layout = interleaved ? kernels::pairing::interleaved : kernels::pairing::half_split;

  // Scaling type.
  std::optional<std::string> type;
  const auto t_new = sc.string("rope_type");
  const auto t_old = sc.string("type");
  for (const auto* t : {&t_new, &t_old}) {
    if (!*t) continue;
    auto canon = h::canonical_rope_type(**t);
    if (!canon)
      throw config_error(prefix + (t == &t_new ? "rope_type" : "type"), "\"" + **t + "\"",
                         "one of default, linear, dynamic, yarn, deepseek_yarn, llama3, longrope, su, proportional, "
                         "mrope");
    if (type && *type != *canon)
      throw config_error(prefix + "type", "\"" + **t + "\" contradicts " + prefix + "rope_type \"" + *t_new + "\"");
    type = canon;
  }
  if (!type) {
    for (const auto& m : scaling_obj.members())
      if (!m.value.is_null() && !h::is_one_of(m.key, {"rope_theta", "partial_rotary_factor"}))
        throw config_error(prefix + "rope_type", "absent",
                           "a rope_type (or legacy type) when " + prefix + m.key + " is given");
    type = "default";
  }
  if (*type == "mrope") type = "default";
  if (*type == "dynamic" && sc.has("alpha")) type = "ntk";
  out.rope_type = *type;

  // Every key in the scaling object is either used by this type or reported.
  for (const auto& m : scaling_obj.members()) {
    if (m.value.is_null() || h::used_by(*type, m.key)) continue;
    if (m.key == "mrope_section" || m.key == "mrope_interleaved")
      out.warnings.push_back(prefix + m.key +
                             ": multimodal RoPE sections ignored (text tokens carry one position in every stream, "
                             "which is plain RoPE)");
    else if (h::known_scaling_key(m.key))
      out.warnings.push_back(prefix + m.key + ": not used by rope_type " + *type + "; ignored");
    else
      out.warnings.push_back(prefix + m.key + ": unknown rope key; ignored");
  }

  const auto max_pos = out.max_position_embeddings;
  const auto orig = merge_same(
      sc.integer("original_max_position_embeddings", 0, max_len), prefix + "original_max_position_embeddings",
      top.integer("original_max_position_embeddings", 0, max_len), "original_max_position_embeddings");
  auto require_factor = [&]() -> double {
    auto f = sc.number("factor");
    if (!f) throw config_error(prefix + "factor", "absent", "a scaling factor for rope_type " + *type);
    return *f;
  };

  if (*type == "default") {
    rc.scaling = default_scaling{};
  } else if (*type == "proportional") {
    rc.partial_mode = partial_rotary_mode::proportional;
    rc.scaling = default_scaling{};
  } else if (*type == "linear") {
    rc.scaling = linear_scaling{require_factor()};
  } else if (*type == "ntk") {
    if (auto f = sc.number("factor"); f && *f != 1.0)
      throw config_error(prefix + "factor", "contradicts " + prefix + "alpha (a static NTK alpha with factor " +
                                                detail::to_text(*f) + " != 1)");
    rc.scaling = ntk_scaling{*sc.number("alpha")};
  } else if (*type == "dynamic") {
    dynamic_ntk_scaling d;
    d.factor = require_factor();
    if (orig) {
      d.original_max_position = *orig;
      if (max_pos && *max_pos != *orig)
        out.warnings.push_back("dynamic: L0 = original_max_position_embeddings = " + std::to_string(*orig) +
                               " (Hugging Face uses max_position_embeddings = " + std::to_string(*max_pos) + ")");
    } else if (max_pos) {
      d.original_max_position = *max_pos;
    } else {
      throw config_error("max_position_embeddings", "absent", "a length for dynamic NTK's L0");
    }
    rc.scaling = d;
  } else if (*type == "yarn") {
    yarn_scaling y;
    if (orig) {
      y.original_max_position = *orig;
    } else if (max_pos) {
      y.original_max_position = *max_pos;
      out.warnings.push_back("yarn: original_max_position_embeddings absent; L0 = max_position_embeddings = " +
                             std::to_string(*max_pos));
    } else {
      throw config_error(prefix + "original_max_position_embeddings", "absent", "the pre-training context length L0");
    }
    if (auto f = sc.number("factor")) {
      y.factor = *f;  // never re-derived from the lengths (HF #38224)
    } else if (orig && max_pos) {
      if (*orig == 0)
        throw config_error(
            (sc.has("original_max_position_embeddings") ? prefix : std::string()) + "original_max_position_embeddings",
            "0", "> 0 (the YaRN factor is derived as max_position_embeddings / it)");
      y.factor = static_cast<double>(*max_pos) / static_cast<double>(*orig);
      out.warnings.push_back(
          "yarn: factor absent; derived as max_position_embeddings / original_max_position_embeddings = " +
          detail::to_text(y.factor));
    } else {
      throw config_error(prefix + "factor", "absent", "a scaling factor for rope_type yarn");
    }
    if (auto v = sc.number("beta_fast")) y.beta_fast = *v;
    if (auto v = sc.number("beta_slow")) y.beta_slow = *v;
    y.attention_factor = sc.number("attention_factor");
    y.mscale = sc.number("mscale");
    y.mscale_all_dim = sc.number("mscale_all_dim");
    if (auto v = sc.boolean("truncate")) y.truncate = *v;
    if (auto v = sc.number("extrapolation_factor")) y.extrapolation_factor = *v;
    rc.scaling = y;
  } else if (*type == "llama3") {
    llama3_scaling l;
    l.factor = require_factor();
    auto need = [&](std::string_view k) {
      auto v = sc.number(k);
      if (!v) throw config_error(prefix + std::string(k), "absent", "a value (required for rope_type llama3)");
      return *v;
    };
    l.low_freq_factor = need("low_freq_factor");
    l.high_freq_factor = need("high_freq_factor");
    if (!orig)
      throw config_error(prefix + "original_max_position_embeddings", "absent",
                         "a value (required for rope_type llama3)");
    l.original_max_position = *orig;
    rc.scaling = l;
  } else if (*type == "longrope") {
    longrope_scaling l;
    auto s = sc.numbers("short_factor");
    auto g = sc.numbers("long_factor");
    if (!s) throw config_error(prefix + "short_factor", "absent", "a list of rotary_dim/2 factors");
    if (!g) throw config_error(prefix + "long_factor", "absent", "a list of rotary_dim/2 factors");
    l.short_factor = std::move(*s);
    l.long_factor = std::move(*g);
    if (!orig)
      throw config_error("original_max_position_embeddings", "absent",
                         "the pre-training context length (top level, as Phi-3 has it, or in " + prefix + ")");
    l.original_max_position = *orig;
    l.factor = sc.number("factor");
    l.max_position = max_pos.value_or(0);
    l.attention_factor = sc.number("attention_factor");
    rc.scaling = std::move(l);
  }

  out.rope = std::move(rc);
  return out;
}

}  // namespace posenc::inline v0
