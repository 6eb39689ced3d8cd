// posenc/config/rules.hpp — the loaders' pipeline: a key_view (config/read_hf.hpp, config/read_gguf.hpp)
// through the rules (config/rules_rope.hpp, rules_layers.hpp, rules_attention.hpp) to a model_config
// or a layered_config. The same functions serve every format; what differs between Hugging Face and
// llama.cpp is decided inside the rules from the view's format and the family's row.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <posenc/config/architectures.hpp>
#include <posenc/config/layered_config.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/rules_attention.hpp>
#include <posenc/config/rules_layers.hpp>
#include <posenc/config/rules_rope.hpp>
#include <posenc/config/rules_vision.hpp>
#include <posenc/config/view.hpp>

namespace posenc::inline v0::detail::rules {

/// The row an unknown family is read with when the load is generic (the keys at face value).
inline const architecture& generic_row() {
  static constexpr architecture g{.family = "", .layers = layer_rule::period};
  return g;
}

/// The shapes model_config reports (read first: their errors come before the RoPE's).
inline model_config shapes_of(const context& c) {
  const auto& t = c.top();
  model_config m;
  m.format = c.v.format;
  m.model_type = c.v.reported_type;
  m.num_attention_heads = t.int32("num_attention_heads", 1);
  m.num_key_value_heads = t.int32("num_key_value_heads", 1);
  m.max_position_embeddings = t.integer("max_position_embeddings", 0, max_length);
  return m;
}

/// Everything model_config holds: shapes, the positional family's parameters, the full layers' RoPE.
inline model_config model_of(const context& c, const layer_ropes& ropes, bool rope) {
  model_config m = shapes_of(c);
  m.t5 = rule_t5(c);
  std::optional<int> hd;
  if (c.known && c.A.alibi_scaled) hd = head_width(c);
  m.alibi = rule_alibi(c, hd);
  m.learned_offset = rule_learned_offset(c);
  if (rope) {
    m.rope = ropes.full;
    m.rope_type = ropes.rope_type;
  }
  return m;
}

/// The family, its refusals, and whether the model rotates (shared by both loads). The view gets the
/// family's class defaults (architecture::defaults) for the keys the config leaves out.
struct prepared {
  const architecture* row;
  bool rope;
  key_view v;
};
inline prepared prepare(const key_view& in, const load_options& o, std::vector<std::string>& warnings) {
  const architecture* row = rule_family(in, o, warnings);
  key_view v = in;
  if (row && !v.gguf()) {
    const config_value spellings = pairs_object(row->spellings), defaults = pairs_object(row->defaults);
    for (const auto& m : spellings.members())  // the family's names of logical keys
      if (const config_value* e = v.keys.find(m.value.as_string()); e && !v.present(m.key))
        v.set(m.key, config_value(*e), v.prefix + m.value.as_string());
    // `rope_parameters.full_attention=rope_parameters.hybrid`: the family's name of a per-type RoPE entry (ZAYA)
    constexpr std::string_view per_type = "rope_parameters.";
    for (const auto& m : spellings.members()) {
      const std::string& spelled = m.value.as_string();
      if (m.key.rfind(per_type, 0) != 0 || spelled.rfind(per_type, 0) != 0) continue;
      const std::string logical = m.key.substr(per_type.size()), own = spelled.substr(per_type.size());
      const auto named = [&](const std::string& t) {
        return std::find_if(v.rope.begin(), v.rope.end(), [&](const rope_entry& e) { return e.layer_type == t; });
      };
      if (const auto it = named(own); it != v.rope.end() && named(logical) == v.rope.end()) it->layer_type = logical;
    }
    for (const auto& m : defaults.members())
      if (!v.present(m.key)) v.set(m.key, m.value, v.prefix + m.key + " (class default)");
    // class-default rope_parameters per layer type (`type.key=value`, Laguna) when the config gives none
    const config_value rp = pairs_object(row->default_rope_parameters);
    const auto members = rp.members();
    if (v.rope.empty() &&
        std::any_of(members.begin(), members.end(), [](const auto& m) { return m.key.find('.') != std::string::npos; }))
      for (const auto& m : members) {
        const auto dot = m.key.find('.');
        const std::string type = m.key.substr(0, dot);
        auto it = std::find_if(v.rope.begin(), v.rope.end(), [&](const rope_entry& e) { return e.layer_type == type; });
        if (it == v.rope.end())
          it = v.rope.insert(v.rope.end(),
                             rope_entry{type, config_value::object(), v.prefix + "rope_parameters." + type + ".", {}});
        it->params.set(m.key.substr(dot + 1), m.value);
      }
  }
  const context c{v, row ? *row : generic_row(), row != nullptr, warnings};
  rule_refused(c);
  if (v.gguf() && v.present("rope_finetuned") && !(row && row->nope == nope_rule::position_embedding_type))
    warnings.push_back(v.name("rope_finetuned") + ": not interpreted; ignored");
  bool alibi = !row && (v.read().boolean("alibi").value_or(false) || rule_alibi(c, std::nullopt).has_value());
  if (row && row->alibi_at_block_count) alibi = v.read().int32("num_hidden_layers", 1) == row->alibi_at_block_count;
  return {row, uses_rope(c) && !alibi, std::move(v)};
}

/// model_config holds the full-attention layers' RoPE: what the per-layer loaders add is reported.
inline void note_per_layer_keys(const context& c, const layer_ropes& ropes) {
  const std::string why =
      ": per-layer RoPE is given by load_hf_layered / load_gguf_layered; model_config holds the "
      "full-attention layers' RoPE";
  for (const auto& e : c.v.rope) {
    if (e.layer_type.empty() || e.layer_type == "full_attention") continue;
    const auto sp = e.spelling.find("rope_theta");
    c.warn((sp != e.spelling.end() ? sp->second : e.prefix.substr(0, e.prefix.size() - 1)) + why);
  }
  if (c.top().has("rope_local_base_freq") && ropes.sliding && ropes.sliding != ropes.full)
    c.warn(c.v.name("rope_local_base_freq") + why);
  const rope_entry* e = c.v.rope_for("");
  const bool in_entry = e && e->params.find("mrope_section");
  if (c.top().has("mrope_section") || in_entry)
    c.warn((in_entry ? detail::key_reader{&e->params, e->prefix, &e->spelling}.name("mrope_section")
                     : c.v.name("mrope_section")) +
           ": multimodal RoPE sections ignored here (text positions make them plain RoPE; the per-layer loaders "
           "give the sections)");
}

/// load_hf_config / load_gguf_config: the model-wide view (no layer count needed).
inline model_config load_model(const key_view& in, const load_options& o) {
  std::vector<std::string> warnings = in.warnings;
  const prepared p = prepare(in, o, warnings);
  const context c{p.v, p.row ? *p.row : generic_row(), p.row != nullptr, warnings};
  static_cast<void>(shapes_of(c));
  rule_unknown_rotary_keys(c);
  const layer_ropes ropes = rule_layer_ropes(c, p.rope, {});
  model_config m = model_of(c, ropes, p.rope);
  note_per_layer_keys(c, ropes);
  m.warnings = std::move(warnings);
  return m;
}

/// The per-layer head width: the RoPE's, else head_dim / key_length, T5's d_kv, hidden / heads.
inline std::ptrdiff_t layer_head_dim(const context& c, const model_config& m) {
  if (m.rope) return m.rope->head_dim;
  const auto& t = c.top();
  if (auto hd = t.int32("head_dim", 1)) return *hd;
  if (auto dkv = t.int32("d_kv", 1)) return *dkv;
  const auto hidden = t.int32("hidden_size", 1), heads = m.num_attention_heads;
  const std::int64_t f = c.known && !c.v.gguf() ? c.A.head_dim_hidden_factor : 1;  // Zamba: 2 hidden / heads
  if (hidden && heads && *heads > 0 && f * *hidden % *heads == 0) return f * *hidden / *heads;
  return 0;
}

/// One layer from its kind and the rules' results.
struct layer_inputs {
  const kinds_t& kinds;
  const std::vector<bool>& use_rope;
  const layer_ropes& ropes;
  const temperatures& temps;
  std::optional<std::int64_t> window, chunk;
};
inline layer_spec layer_of(const context& c, const layer_inputs& in, std::size_t i) {
  layer_spec s;
  s.attention = in.kinds[i];
  s.rope_source = "none";
  if (!is_softmax(s.attention)) return s;
  if (s.attention == layer_attention::sliding) {
    if (!in.window)
      throw config_error(c.v.name("sliding_window"), c.v.present("sliding_window") ? "null" : "absent",
                         "a window for the sliding layers");
    s.window = in.window;
  } else if (s.attention == layer_attention::chunked) {
    if (!in.chunk)
      throw config_error(c.v.name("attention_chunk_size"), "absent", "a chunk size for the chunked layers");
    s.chunk_size = in.chunk;
  }
  if (in.use_rope[i]) {
    const bool sl = s.attention == layer_attention::sliding, ch = s.attention == layer_attention::chunked;
    s.rope = sl ? in.ropes.sliding : ch ? in.ropes.chunked : in.ropes.full;
    s.rope_source = sl ? in.ropes.sliding_source : ch ? in.ropes.chunked_source : in.ropes.full_source;
  } else if (in.temps.nope) {
    s.temperature = in.temps.nope;
  }
  if (in.temps.every) s.temperature = in.temps.every;
  return s;
}

/// Encoders (BERT, T5's encoder, diffusion LMs) attend both ways; Gemma 3 does with use_bidirectional_attention.
inline bool rule_bidirectional(const context& c, positional_family p) {
  if (p == positional_family::t5_buckets) return true;  // the layers counted are T5's encoder layers
  if (c.v.gguf())
    if (const auto causal = c.top().boolean("causal")) return !*causal;  // llama.cpp attention.causal
  if (!c.known) return false;
  return c.A.bidirectional ||
         (c.A.reads_bidirectional_key && c.top().boolean("use_bidirectional_attention").value_or(false));
}

/// A bidirectional sliding window: transformers (sliding_window_bidirectional_overlay, W // 2 + 1 in the
/// config classes) and llama.cpp (LLAMA_SWA_TYPE_SYMMETRIC) allow |q - k| <= W / 2 of the config's W; posenc's
/// symmetric window allows |q - k| < its window, so it is W / 2 + 1.
inline std::optional<std::int64_t> symmetric_window(const context&, const std::optional<std::int64_t>& w) {
  if (!w) return w;
  return *w / 2 + 1;
}

/// GraniteSWA's per-layer bases (layer_rope_theta, 0 = NoPE; the config's base on every layer when absent,
/// an empty list); empty for other families.
inline std::vector<double> rule_layer_thetas(const context& c, bool rope, int n) {
  if (!c.known || !c.A.layer_rope_theta || !rope || c.v.gguf()) return {};
  const auto list = c.top().numbers("layer_rope_theta");
  if (!list) return {};
  detail::require(list->size() == static_cast<std::size_t>(n), c.v.name("layer_rope_theta"), list->size(),
                  c.v.name("num_hidden_layers") + " = " + std::to_string(n) + " entries");
  for (std::size_t i = 0; i < list->size(); ++i)
    if ((*list)[i] != 0 && !(std::isfinite((*list)[i]) && (*list)[i] > 1))  // a RoPE base is finite and > 1
      throw config_error(c.v.name("layer_rope_theta") + "[" + std::to_string(i) + "]", detail::to_text((*list)[i]),
                         "0 (NoPE) or a finite base > 1");
  return *list;
}

/// load_hf_layered / load_gguf_layered.
inline layered_config load_layered(const key_view& in, const load_options& o) {
  layered_config out;
  std::vector<std::string>& w = out.warnings;
  w = in.warnings;
  const prepared p = prepare(in, o, w);
  const key_view& v = p.v;
  const context c{v, p.row ? *p.row : generic_row(), p.row != nullptr, w};
  const int n = rule_layer_count(c);
  const auto window = rule_window(c, n);
  const bool window_zero = v.gguf() && c.top().integer("sliding_window", 0, max_length) == std::int64_t{0};
  const auto chunk = rule_chunk(c, window_zero);
  const std::vector<bool> rotating = rule_rotating(c, n, window_zero);
  const kinds_t kinds = rule_kinds(c, n, window, chunk, rotating);
  const std::vector<double> thetas = rule_layer_thetas(c, p.rope, n);
  std::vector<bool> use_rope = rule_nope(c, p.rope, kinds, rotating, window);
  for (std::size_t i = 0; i < thetas.size(); ++i) use_rope[i] = use_rope[i] && thetas[i] != 0;
  const layer_ropes ropes = rule_layer_ropes(c, p.rope, kinds);
  out.base = model_of(c, ropes, p.rope);
  out.family = std::string(c.A.family);
  out.positional = c.known && c.A.alibi_at_block_count && !p.rope
                       ? positional_family::alibi
                       : rule_positional(c, p.rope, out.base.alibi.has_value(), out.base.t5.has_value());
  // a RoPE family none of whose layers rotates (Granite 4.0-H without position_embedding_type) has no positions
  if (out.positional == positional_family::rope &&
      std::none_of(use_rope.begin(), use_rope.end(), [](bool r) { return r; }))
    out.positional = positional_family::none;
  if (out.positional == positional_family::alibi && !out.base.alibi) out.base.alibi = model_config::alibi_params{};
  out.head_dim = is_deberta(c) ? deberta_head_dim(c) : layer_head_dim(c, out.base);
  out.deberta = rule_deberta(c);
  out.vision = rule_vision(c);
  if (is_deberta(c) && !out.deberta)  // without relative_attention: the learned absolute positions, if any
    out.positional = out.base.learned_offset ? positional_family::learned : positional_family::none;
  out.mrope = rule_mrope(c, ropes.full);
  const temperatures temps = rule_temperature(c, out.head_dim, window_zero);
  const double scale = rule_scale(c, out.head_dim, n);
  const auto caps = rule_softcap(c);
  out.final_logit_softcap = caps.second;
  out.attention_sinks = c.known && c.A.sinks;
  rule_no_effect_keys(c);
  rule_unknown_rotary_keys(c);
  const bool bidirectional = rule_bidirectional(c, out.positional);
  const layer_inputs li{kinds, use_rope, ropes, temps, bidirectional ? symmetric_window(c, window) : window, chunk};
  // Layers share a handful of RoPE configs: each is validated and its multiplier computed once.
  std::vector<std::pair<rope_config, double>> multipliers;
  const auto multiplier = [&](const rope_config& r) {
    for (const auto& [seen, m] : multipliers)
      if (seen == r) return m;
    return multipliers.emplace_back(r, rope_schedule(r).base().softmax_scale_multiplier).second;
  };
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    layer_spec s = layer_of(c, li, i);
    if (s.rope && !thetas.empty()) {
      s.rope->theta = thetas[i];
      s.rope_source = "layer_rope_theta";
    }
    if (is_softmax(s.attention)) {
      s.base_scale = scale;
      s.softmax_scale = scale * (s.rope        ? multiplier(*s.rope)
                                 : out.deberta ? 1.0 / std::sqrt(1.0 + out.deberta->relative.cross_terms())
                                               : 1.0);
      s.logit_softcap = caps.first;
      s.sinks = out.attention_sinks && (!c.A.sinks_sliding_only || s.attention == layer_attention::sliding);
      s.alibi = out.positional == positional_family::alibi;
      s.causal = !bidirectional;
    }
    out.layers.push_back(std::move(s));
  }
  out.base.warnings = w;
  return out;
}

}  // namespace posenc::inline v0::detail::rules
