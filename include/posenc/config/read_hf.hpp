// posenc/config/read_hf.hpp — the Hugging Face config.json reader: a config_value tree -> key_view.
//
// Reads the text model (under `text_config` in multimodal configs, whose model_type then names the
// family), folds the aliases of config/view.hpp's catalogue onto their logical names (n_head,
// num_heads, d_model, rotary_pct, rotary_emb_base, ...; aliases that disagree are a config_error
// naming the second), and collects the RoPE parameters: legacy `rope_scaling`, transformers v5
// `rope_parameters` (one object, or one per layer type). The two are merged when both are given
// (equal values are fine, different ones a config_error); a `vision_config` is kept as written for the
// vision rule. It interprets nothing: what a key means
// for a family is decided by the rules (config/rules.hpp).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include <posenc/config/model_config.hpp>
#include <posenc/config/value.hpp>
#include <posenc/config/view.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

namespace detail::read {

/// Folds the aliases of one logical key onto it (the first spelling found names it).
inline void fold_aliases(key_view& v, const logical_key& lk) {
  const config_value* value = nullptr;
  std::string spelled;
  auto consider = [&](std::string_view name) {
    const config_value* e = v.keys.find(name);
    if (!e || e->is_null()) return;
    const std::string here = v.prefix + std::string(name);
    if (value && !(*value == *e))
      throw config_error(here, "contradicts " + spelled + " (" + value->to_text() + " vs " + e->to_text() + ")");
    if (!value) {
      value = e;
      spelled = here;
    }
  };
  consider(lk.name);
  std::string_view list = lk.hf_aliases;
  while (!list.empty()) {
    const auto c = list.find(',');
    consider(list.substr(0, c));
    if (c == std::string_view::npos) break;
    list.remove_prefix(c + 1);
  }
  if (value) v.set(lk.name, config_value(*value), spelled);
}

/// The members of a RoPE parameter object that are not null.
inline config_value non_null_members(const config_value& o) {
  config_value out = config_value::object();
  for (const auto& m : o.members())
    if (!m.value.is_null()) out.set(m.key, m.value);
  return out;
}

/// Adds `params` (spelled `prefix`) to the entry for every layer type, checking shared keys agree.
inline void merge_into_global(key_view& v, const config_value& params, const std::string& prefix) {
  auto it = std::find_if(v.rope.begin(), v.rope.end(), [](const rope_entry& e) { return e.layer_type.empty(); });
  if (it == v.rope.end()) {
    v.rope.insert(v.rope.begin(), rope_entry{"", non_null_members(params), prefix, {}});
    return;
  }
  for (const auto& m : params.members()) {
    if (m.value.is_null()) continue;
    if (const config_value* prev = it->params.find(m.key)) {
      if (!(*prev == m.value))
        throw config_error(prefix + m.key, "contradicts " + it->prefix + m.key + " (" + prev->to_text() + " vs " +
                                               m.value.to_text() + ")");
      continue;
    }
    it->params.set(m.key, m.value);
  }
}

/// rope_scaling (legacy) and rope_parameters (v5: one object, or one object per layer type).
inline void read_rope_parameters(key_view& v) {
  if (const config_value* s = v.keys.find("rope_scaling"); s && !s->is_null()) {
    if (!s->is_object()) throw config_error(v.prefix + "rope_scaling", s->to_text(), "an object or null");
    merge_into_global(v, *s, v.prefix + "rope_scaling.");
  }
  const config_value* p = v.keys.find("rope_parameters");
  if (!p || p->is_null()) return;
  if (!p->is_object()) throw config_error(v.prefix + "rope_parameters", p->to_text(), "an object or null");
  const auto pm = p->members();
  const bool per_type = !pm.empty() && std::all_of(pm.begin(), pm.end(), [](const config_value::member& m) {
    return m.value.is_object() || m.value.is_null();
  }) && std::any_of(pm.begin(), pm.end(), [](const config_value::member& m) { return m.value.is_object(); });
  if (!per_type) {
    merge_into_global(v, *p, v.prefix + "rope_parameters.");
    return;
  }
  for (const auto& m : pm)
    if (m.value.is_object())
      v.rope.push_back(rope_entry{m.key, non_null_members(m.value), v.prefix + "rope_parameters." + m.key + ".", {}});
}

}  // namespace detail::read

/// The key_view of a Hugging Face config.json tree (see the banner). Throws config_error for a root
/// that is not an object, aliases or RoPE objects that contradict each other, and malformed RoPE objects.
[[nodiscard]] inline key_view read_hf_view(const config_value& root) {
  if (!root.is_object()) throw config_error("config", root.to_text(), "a JSON object");
  key_view v;
  v.format = "hf";
  const detail::key_reader outer{&root, ""};
  v.reported_type = outer.string("model_type").value_or("");
  const config_value* tc = root.find("text_config");
  const bool nested = tc && tc->is_object();
  const config_value& text = nested ? *tc : root;
  v.prefix = nested ? "text_config." : "";
  std::string inner;
  if (nested) inner = detail::key_reader{&text, v.prefix}.string("model_type").value_or("");
  v.model_type = inner.empty() ? v.reported_type : inner;
  for (const auto& m : text.members()) v.set(m.key, m.value, v.prefix + m.key);
  for (const auto& lk : logical_keys) detail::read::fold_aliases(v, lk);
  detail::read::read_rope_parameters(v);
  if (const config_value* vc = root.find("vision_config"); vc && vc->is_object()) v.vision = *vc;
  return v;
}

}  // namespace posenc::inline v0
