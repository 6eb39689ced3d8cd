// posenc/config/rules_rope.hpp — the RoPE rules: what a layer type's rotary embedding is, read from
// a key_view (config/view.hpp) through its family's row (config/architecture.hpp), for every format.
//
// One function per rule: whether the family rotates at all, the head and rotated widths (the
// family's partial-rotary key, DeepSeek's [nope | rope] slice), the base, the pair layout, and the
// scaling — found by name among the scaling descriptors (rope/scaling/descriptor.hpp) after the
// family's renames, parsed by the descriptor, its unused keys reported. Class defaults come from the
// row. What Hugging Face's config classes derive (a YaRN L0 of max_position_embeddings) is derived
// the same way, with a warning; a value the config gives is never re-derived.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/config/architecture.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/value.hpp>
#include <posenc/config/view.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/rope/config.hpp>

namespace posenc::inline v0::detail::rules {

inline constexpr std::int64_t max_length = std::int64_t{1} << 53;

/// What the rules share: the view, the family's row, whether the row was found (else the keys are read
/// at face value), and the warnings of the load.
struct context {
  const key_view& v;
  const architecture& A;
  bool known;
  std::vector<std::string>& warnings;
  [[nodiscard]] detail::key_reader top() const { return v.read(); }
  void warn(std::string s) const { warnings.push_back(std::move(s)); }
  /// The family's display name for messages ("this model" when unknown).
  [[nodiscard]] std::string who() const { return known ? std::string(A.family) : std::string("this model"); }
};

/// An object from "key=value,key=value" (architecture::default_rope_parameters / defaults).
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
    else if (v == "true" || v == "false")
      o.set(key, config_value::boolean(v == "true"));
    else
      o.set(key, config_value::string(v));
    if (c == std::string_view::npos) break;
    list.remove_prefix(c + 1);
  }
  return o;
}

/// The descriptors' view of one RoPE entry (the Keys of rope/scaling/descriptor.hpp).
struct scaling_keys {
  const rope_entry& e;
  const context& c;
  [[nodiscard]] detail::key_reader r() const { return {&e.params, e.prefix, &e.spelling}; }
  [[nodiscard]] std::string name(std::string_view k) const {
    if (k == "max_position_embeddings" || (k == "original_max_position_embeddings" && !r().has(k) && c.top().has(k)))
      return c.v.name(k);
    return r().name(k);
  }
  [[nodiscard]] bool has(std::string_view k) const {
    return r().has(k) || (k == "original_max_position_embeddings" && c.top().has(k));
  }
  [[nodiscard]] std::optional<double> number(std::string_view k) const { return r().number(k); }
  [[nodiscard]] std::optional<bool> boolean(std::string_view k) const { return r().boolean(k); }
  [[nodiscard]] std::optional<std::vector<double>> numbers(std::string_view k) const { return r().numbers(k); }
  /// A length; original_max_position_embeddings may also sit at the top level (Phi-3), and must agree.
  [[nodiscard]] std::optional<std::int64_t> length(std::string_view k) const {
    const auto here = r().integer(k, 0, max_length);
    if (k != "original_max_position_embeddings") return here;
    return merge_same(here, name(k), c.top().integer(k, 0, max_length), c.v.name(k));
  }
  [[nodiscard]] std::optional<std::int64_t> max_position() const {
    return c.top().integer("max_position_embeddings", 0, max_length);
  }
  [[nodiscard]] bool gguf() const { return c.v.gguf(); }
  void warn(std::string s) const { c.warn(std::move(s)); }
};

/// True when the model rotates: its family says so, or (unknown family) it carries a rotary key.
inline bool uses_rope(const context& c) {
  const auto& t = c.top();
  const bool rope_keys = !c.v.rope.empty() || t.has("rope_theta") || t.has("rotary_dim") ||
                         t.has("partial_rotary_factor") || t.has("qk_rope_head_dim");
  if (c.known) {
    if (c.A.positional != positional_family::rope && rope_keys && !c.v.gguf())
      c.warn("rotary keys ignored: " + c.who() + " uses " + positional_name(c.A.positional) + " positions");
    return c.A.positional == positional_family::rope;
  }
  if (c.v.gguf()) return t.has("rope_theta") || t.has("rotary_dim");
  return rope_keys && !t.boolean("alibi").value_or(false);
}

/// The RoPE entry a layer type reads: its own, else the one for every layer type, else the family's
/// class default rope_parameters (an empty entry when none).
inline rope_entry entry_for(const context& c, std::string_view layer_type) {
  if (const rope_entry* e = c.v.rope_for(layer_type)) return *e;
  rope_entry e{"", config_value::object(), c.v.prefix + "rope_parameters.", {}};
  if (c.known && !c.A.default_rope_parameters.empty() && c.v.rope.empty()) {
    e.params = pairs_object(c.A.default_rope_parameters);
    const auto top = c.top().number("rope_theta");
    const config_value* own = e.params.find("rope_theta");  // absent: the config's rope_theta is the base
    if (top && own && *top != own->as_number())
      c.warn(c.v.name("rope_theta") + " = " + detail::to_text(*top) + " ignored: without rope_parameters " +
             std::string(c.A.family) + " uses its class default rope_parameters (" +
             std::string(c.A.default_rope_parameters) + ")");
  }
  return e;
}

/// The base: the entry's rope_theta and the top-level one must agree (each may be absent); else the
/// class default (`fallback`).
inline double rule_theta(const context& c, const rope_entry& e, double fallback) {
  const scaling_keys k{e, c};
  const auto own = k.number("rope_theta");
  if (!e.layer_type.empty() || (c.known && !c.A.default_rope_parameters.empty() && own))
    return own.value_or(c.top().number("rope_theta").value_or(fallback));
  return merge_same(c.top().number("rope_theta"), c.v.name("rope_theta"), own, k.name("rope_theta")).value_or(fallback);
}

/// The head width D when the config gives it (head_dim, else hidden_size / num_attention_heads).
inline std::optional<int> head_width(const context& c) {
  const auto& t = c.top();
  if (auto hd = t.int32("head_dim")) return hd;
  if (c.known && c.A.default_head_dim && !c.v.gguf()) return c.A.default_head_dim;
  const auto hidden = t.int32("hidden_size", 1), heads = t.int32("num_attention_heads", 1);
  if (!hidden || !heads) return std::nullopt;
  const std::int64_t f = c.known && !c.v.gguf() ? c.A.head_dim_hidden_factor : 1;  // Zamba: 2 hidden / heads
  if (f * *hidden % *heads != 0)
    throw config_error(
        c.v.name("hidden_size"), detail::to_text(*hidden),
        "a multiple of " + c.v.name("num_attention_heads") + " = " + detail::to_text(*heads) + " (or give head_dim)");
  return static_cast<int>(f * *hidden / *heads);
}

/// DeepSeek MLA: each query head is [nope | rope]; RoPE acts on the rope slice, R = qk_rope_head_dim.
inline void rule_mla_dims(const context& c, rope_config& rc) {
  const auto& t = c.top();
  if (c.v.gguf()) {  // llama.cpp: key_length_mla (else key_length) wide heads, rope.dimension_count rotated at the end
    auto D = t.int32("key_length_mla", 0);
    if (!D) D = head_width(c);
    if (!D) throw config_error(c.v.name("head_dim"), "absent", "key_length, or embedding_length and head_count");
    rc.head_dim = *D;
    if (auto r = t.int32("rotary_dim", 0)) {
      rc.rotary_dim = *r;
      if (*r <= *D) rc.rotary_offset = *D - *r;
    }
    return;
  }
  const auto qk_rope = t.int32("qk_rope_head_dim"), qk_nope = t.int32("qk_nope_head_dim");
  if (!qk_rope) throw config_error(c.v.name("qk_rope_head_dim"), "absent", "the rotated slice of each head");
  const std::int64_t sum = std::int64_t{qk_nope.value_or(0)} + *qk_rope;
  if (sum > std::numeric_limits<int>::max())
    throw config_error(c.v.name("qk_nope_head_dim"), detail::to_text(qk_nope.value_or(0)),
                       "qk_nope_head_dim + qk_rope_head_dim (= " + detail::to_text(sum) + ") <= 2147483647");
  rc.head_dim = static_cast<int>(sum);
  rc.rotary_dim = *qk_rope;
  rc.rotary_offset = qk_nope.value_or(0);
  if (auto hd = t.int32("head_dim"); hd && *hd != *qk_rope && *hd != rc.head_dim)
    c.warn("head_dim = " + std::to_string(*hd) +
           " ignored: the rotated slice is qk_rope_head_dim of qk_nope_head_dim + qk_rope_head_dim");
  if (t.has("partial_rotary_factor") || t.has("rotary_dim"))
    c.warn("partial_rotary_factor/rotary_dim ignored: qk_rope_head_dim gives the rotary dimension");
}

/// Head width, rotated width and offset (the family's partial-rotary rule and class defaults).
inline void rule_rotary_dims(const context& c, const rope_entry& e, rope_config& rc) {
  if (c.known && c.A.partial == partial_rule::qk_rope_head_dim) return rule_mla_dims(c, rc);
  if (!c.known && !c.v.gguf() && c.top().has("qk_rope_head_dim")) return rule_mla_dims(c, rc);
  const auto& t = c.top();
  const auto D = head_width(c);
  if (!D) throw config_error(c.v.name("head_dim"), "absent", "head_dim, or hidden_size and num_attention_heads");
  rc.head_dim = *D;
  const scaling_keys k{e, c};
  auto top_factor = t.number("partial_rotary_factor");
  if (c.known && c.A.partial_fixed && !c.v.gguf() && top_factor) {
    if (*top_factor != c.A.default_partial)
      c.warn(c.v.name("partial_rotary_factor") + ": " + c.who() + "'s config class replaces it by " +
             detail::to_text(c.A.default_partial) + "; ignored");
    top_factor = c.A.default_partial;
    if (k.number("partial_rotary_factor")) top_factor.reset();  // rope_parameters' own wins (setdefault)
  }
  auto factor = merge_same(top_factor, c.v.name("partial_rotary_factor"), k.number("partial_rotary_factor"),
                           k.name("partial_rotary_factor"));
  auto rotary_dim = t.int32("rotary_dim");
  const partial_rule rule = c.known ? c.A.partial : partial_rule::partial_rotary_factor;
  if (c.v.gguf()) {
    factor.reset();  // llama.cpp rotates rope.dimension_count dims (n_rot)
  } else if (rule == partial_rule::full) {
    if (factor && *factor != 1.0)
      c.warn(c.v.name("partial_rotary_factor") + ": " + c.who() +
             " rotates the whole head (its modeling code does not read the key); ignored");
    if (rotary_dim) c.warn(c.v.name("rotary_dim") + ": " + c.who() + " does not read it; ignored");
    factor.reset();
    rotary_dim.reset();
  } else if (c.known && !factor && !rotary_dim && c.A.default_partial != 1) {
    if (rule == partial_rule::rotary_dim)
      rotary_dim = static_cast<int>(c.A.default_partial);
    else
      factor = c.A.default_partial;
  }
  if (rotary_dim && factor) {
    // compared as doubles: a huge factor must not reach a float-to-integer conversion (UB)
    const double implied = std::floor(static_cast<double>(rc.head_dim) * *factor);
    if (implied != static_cast<double>(*rotary_dim))
      throw config_error(c.v.name("rotary_dim"), "contradicts partial_rotary_factor (" + detail::to_text(*rotary_dim) +
                                                     " vs " + detail::to_text(rc.head_dim) + " * " +
                                                     detail::to_text(*factor) + ")");
    factor.reset();
  }
  if (rotary_dim) rc.rotary_dim = rotary_dim;
  rc.partial_rotary_factor = factor;
}

/// The pair layout: the family's (GGUF: the one llama.cpp rotates); rope_interleave where the family's
/// modeling code reads it (DeepSeek-V3) or the family is unknown.
inline pairing rule_layout(const context& c) {
  if (c.v.gguf()) {
    if (c.known) return c.A.gguf_layout;
    c.warn("general.architecture = \"" + c.v.model_type +
           "\": pair layout unknown to this loader; assuming NeoX (half-split) pairs");
    return pairing::half_split;
  }
  const auto ri = c.top().boolean("rope_interleave");
  if (ri && (!c.known || c.A.reads_rope_interleave)) return *ri ? pairing::interleaved : pairing::half_split;
  if (ri)
    c.warn(c.v.name("rope_interleave") + ": " + c.who() + " does not read it (its pair layout is fixed); ignored");
  if (!c.known) return pairing::half_split;
  if (c.A.reads_rope_interleave) return pairing::interleaved;  // DeepSeek-V3's class default
  return c.A.hf_layout;
}

/// The written scaling name of an entry (rope_type, or legacy type; they must agree), "" when absent.
inline std::string written_type(const scaling_keys& k) {
  const auto r = k.r();
  const auto t_new = r.string("rope_type"), t_old = r.string("type");
  if (t_new && t_old && *t_new != *t_old) {
    bool same = false;  // aliases of one scaling ("su" and "longrope") agree
    for_each_scaling([&](auto d) {
      const auto& n = decltype(d)::hf_names;
      same = same ||
             (std::find(n.begin(), n.end(), *t_new) != n.end() && std::find(n.begin(), n.end(), *t_old) != n.end());
    });
    if (!same)
      throw config_error(k.name("type"),
                         "\"" + *t_old + "\" contradicts " + k.name("rope_type") + " \"" + *t_new + "\"");
  }
  return t_new ? *t_new : t_old.value_or("");
}

/// The family's rename of a written type ("dynamic+alpha=dynamic_alpha": HunYuan's dynamic with alpha; Phi-3's
/// "yarn" is LongRoPE). Config classes rename; a GGUF's rope.scaling.type is what llama.cpp runs.
inline std::string renamed_type(const context& c, const scaling_keys& k, const std::string& type) {
  if (!c.known || c.v.gguf()) return type;
  std::string_view list = c.A.scaling_renames;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    const auto eq = item.find('='), plus = item.find('+');
    const std::string_view from = item.substr(0, std::min(eq, plus));
    const bool key_ok = plus == std::string_view::npos || k.has(item.substr(plus + 1, eq - plus - 1));
    if (from == type && key_ok) return std::string(item.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return type;
}

/// Keys of an entry read by rules other than the scaling's (RoPE base and width, mRoPE, temperature).
inline bool read_elsewhere(const context& c, std::string_view key) {
  static constexpr std::string_view always[] = {
      "rope_type", "type", "rope_theta", "partial_rotary_factor", "llama_4_scaling_beta", "llama_4_scaling_length"};
  for (auto a : always)
    if (a == key) return true;
  if ((key == "mrope_section" || key == "mrope_interleaved") && (!c.known || c.A.mrope)) return true;
  return (key == "short_mscale" || key == "long_mscale") && c.known && c.A.longrope_mscale;
}

/// Every key of the entry is read by the scaling `used` or another rule, or reported.
template <class D>
void report_unused(const context& c, const scaling_keys& k, std::string_view shown) {
  for (const auto& m : k.e.params.members()) {
    if (read_elsewhere(c, m.key) || std::find(D::keys.begin(), D::keys.end(), m.key) != D::keys.end()) continue;
    bool other = m.key == "mrope_section" || m.key == "mrope_interleaved";
    for_each_scaling([&](auto d) {
      for (auto key : decltype(d)::keys) other = other || key == m.key;
    });
    if (m.key == "mrope_section" || m.key == "mrope_interleaved")
      c.warn(k.name(m.key) + ": multimodal RoPE sections ignored (" + c.who() + " has no mRoPE)");
    else
      c.warn(k.name(m.key) +
             (other ? ": not used by rope_type " + std::string(shown) + "; ignored" : ": unknown rope key; ignored"));
  }
}

/// The scaling of an entry, by its written type among the descriptors' names; "" and "default" mean none
/// (with no scaling key given). Sets rc.scaling (and the proportional partial mode); returns the name.
inline std::string rule_scaling(const context& c, const rope_entry& e, rope_config& rc) {
  const scaling_keys k{e, c};
  const std::string written = written_type(k);
  if (written.empty())
    for (const auto& m : e.params.members())
      if (!read_elsewhere(c, m.key) && m.key != "short_mscale" && m.key != "long_mscale")
        throw config_error(k.name("rope_type"), "absent",
                           "a rope_type (or legacy type) when " + k.name(m.key) + " is given");
  const std::string type = renamed_type(c, k, written.empty() ? "default" : written);
  std::string found, known_names;
  for_each_scaling([&](auto d) {
    using D = decltype(d);
    const bool by_name = c.v.gguf() ? D::name == type : (type != written && D::name == type);
    bool match = by_name;
    for (auto n : D::hf_names) {
      if (!c.v.gguf()) match = match || n == type;
      known_names += (known_names.empty() ? "" : ", ") + std::string(n);
    }
    if (!match || !found.empty()) return;
    found = D::name;
    rc.scaling = D::parse(k);
    report_unused<D>(c, k, found);
  });
  if (found.empty())
    throw config_error(k.name(e.params.find("rope_type") ? "rope_type" : "type"), "\"" + written + "\"",
                       "one of " + known_names);
  if (type == "proportional") {
    rc.partial_mode = partial_rotary_mode::proportional;
    return "proportional";
  }
  return found;
}

/// The rotary embedding of a layer type ("" for the model's): absent when the model does not rotate.
/// `theta_fallback` is the base when neither the entry nor the top level gives one.
inline std::optional<rope_config> rule_rope(const context& c, const rope_entry& e, double theta_fallback,
                                            std::string* type_out = nullptr) {
  rope_config rc;
  rc.theta = rule_theta(c, e, theta_fallback);
  rule_rotary_dims(c, e, rc);
  rc.layout = rule_layout(c);
  std::string type = rule_scaling(c, e, rc);
  if (c.v.gguf() && c.known && c.A.gguf_ignores_rope_keys && (rc.theta != 10000 || type != "default")) {
    c.warn(c.v.model_type + ": llama.cpp rotates with base 10000 and no scaling whatever the rope keys say");
    rc.theta = 10000;
    rc.scaling = default_scaling{};
    type = "default";
  }
  if (type_out) *type_out = type;
  return rc;
}

}  // namespace posenc::inline v0::detail::rules
