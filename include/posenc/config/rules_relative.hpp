// posenc/config/rules_relative.hpp — the rule of DeBERTa's disentangled attention (He et al. 2021): which
// cross terms pos_att_type names, the span and buckets of the relative table, shared or separate
// position projections, and the scale 1 / sqrt(d (1 + n)) that Hugging Face applies with or without
// relative_attention. Reads the row's deberta_v2_rules column: v2/v3 (position_buckets, share_att_key,
// attention_head_size, c2p / p2c counted in the scale) or v1 (clamped distances, talking_head, every
// pos_att_type entry counted). Not modelled, refused: v1's talking heads and pos_att_type entries v1
// counts in its scale without computing a term ("p2p").
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <posenc/config/architecture.hpp>
#include <posenc/config/layered_config.hpp>
#include <posenc/config/rules_rope.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/encoders/deberta.hpp>

namespace posenc::inline v0::detail::rules {

/// True for a DeBERTa row.
inline bool is_deberta(const context& c) {
  return c.known && c.A.positional == positional_family::deberta;
}

/// pos_att_type as HF's config classes read it: a list, or a "p2c|c2p" string split on '|', lower-cased and
/// stripped. Returns {c2p, p2c}. v1 counts every entry in its scale, so an entry other than c2p / p2c or a
/// repeated one is refused there; v2 counts c2p and p2c only and ignores the others (reported).
inline std::pair<bool, bool> deberta_terms(const context& c, bool report = true) {
  const config_value* v = c.top().get("pos_att_type");
  if (!v) return {false, false};
  std::vector<std::string> entries;
  const std::string key = c.v.name("pos_att_type");
  auto add = [&](std::string e) {
    for (auto& ch : e) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto b = e.find_first_not_of(" \t"), l = e.find_last_not_of(" \t");
    entries.push_back(b == std::string::npos ? std::string() : e.substr(b, l - b + 1));
  };
  if (v->is_string()) {
    std::string s = v->as_string();
    for (std::size_t start = 0;;) {
      const auto bar = s.find('|', start);
      add(s.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
  } else if (v->is_list()) {
    for (const auto& e : v->items()) {
      if (!e.is_string()) throw config_error(key, v->to_text(), "a list of \"c2p\" / \"p2c\", or a \"c2p|p2c\" string");
      add(e.as_string());
    }
  } else {
    throw config_error(key, v->to_text(), "a list of \"c2p\" / \"p2c\", or a \"c2p|p2c\" string");
  }
  bool c2p = false, p2c = false;
  for (const auto& e : entries) {
    const bool known_term = e == "c2p" || e == "p2c";
    const bool repeated = (e == "c2p" && c2p) || (e == "p2c" && p2c);
    if (!c.A.deberta_v2_rules && (!known_term || repeated))
      throw config_error(key, v->to_text(),
                         "distinct entries among c2p and p2c (DeBERTa v1 divides by sqrt(d (1 + len(pos_att_type))) "
                         "but computes no term for \"" +
                             e + "\"; posenc does not model that scale)");
    if (!known_term && report)
      c.warn(key + ": entry \"" + e + "\" is not read by " + c.who() + "'s attention; ignored");
    c2p = c2p || e == "c2p";
    p2c = p2c || e == "p2c";
  }
  return {c2p, p2c};
}

/// n in the scale rule 1 / sqrt(d (1 + n)).
inline int deberta_cross_terms(const context& c) {
  const auto [c2p, p2c] = deberta_terms(c, false);
  return (c2p ? 1 : 0) + (p2c ? 1 : 0);
}

/// The head size: v2 reads attention_head_size (spelled head_dim in the view), both require hidden_size to be a
/// multiple of num_attention_heads (their attention refuses it otherwise).
inline int deberta_head_dim(const context& c) {
  const auto& t = c.top();
  const int hidden = t.int32("hidden_size", 1).value_or(0), heads = t.int32("num_attention_heads", 1).value_or(0);
  if (hidden <= 0 || heads <= 0 || hidden % heads != 0)
    throw config_error(c.v.name("hidden_size"), detail::to_text(hidden),
                       "a multiple of " + c.v.name("num_attention_heads") + " = " + detail::to_text(heads));
  if (c.A.deberta_v2_rules)
    if (const auto hd = t.int32("head_dim", 1)) return *hd;
  return hidden / heads;
}

/// Keys one DeBERTa version reads and the other does not, and v1's talking heads (refused).
inline void deberta_version_keys(const context& c) {
  const auto& t = c.top();
  if (c.A.deberta_v2_rules) return;
  if (t.boolean("talking_head").value_or(false))
    throw config_error(c.v.name("talking_head"), "true",
                       "false or absent (DeBERTa v1's talking heads mix the heads' logits and probabilities, which "
                       "posenc does not model)");
  for (const char* k : {"position_buckets", "share_att_key", "attention_head_size", "norm_rel_ebd"})
    if (t.has(k)) c.warn(c.v.name(k) + ": " + c.who() + "'s modeling code does not read it (DeBERTa-v2 does); ignored");
}

/// DeBERTa's relative attention when relative_attention is true (nullopt otherwise, or for other families).
inline std::optional<deberta_spec> rule_deberta(const context& c) {
  if (!is_deberta(c)) return std::nullopt;
  deberta_version_keys(c);
  const auto& t = c.top();
  const auto [c2p, p2c] = deberta_terms(c);
  const int head_dim = deberta_head_dim(c);
  if (t.has("conv_kernel_size") && c.A.deberta_v2_rules && *t.integer("conv_kernel_size", 0, max_length) > 0)
    c.warn(c.v.name("conv_kernel_size") +
           ": a convolution on the first layer's output, outside the attention; not applied by posenc");
  if (!t.boolean("relative_attention").value_or(false)) return std::nullopt;
  deberta_spec s;
  auto& r = s.relative;
  r.head_dim = head_dim;
  r.num_heads = *t.int32("num_attention_heads", 1);
  r.c2p = c2p;
  r.p2c = p2c;
  r.bucket_rule = deberta_bucket_rule::hugging_face;
  r.max_relative_positions = t.integer("max_relative_positions", -max_length, max_length).value_or(-1);
  if (r.max_relative_positions < 1)
    r.max_relative_positions = t.integer("max_position_embeddings", 1, max_length).value_or(512);
  r.position_buckets = 0;
  if (c.A.deberta_v2_rules) {
    r.position_buckets = std::max<std::int64_t>(0, t.integer("position_buckets", -max_length, max_length).value_or(-1));
    s.share_att_key = t.boolean("share_att_key").value_or(false);
    if (const auto n = t.string("norm_rel_ebd")) s.norm_rel_ebd = n->find("layer_norm") != std::string::npos;
  }
  s.position_biased_input = t.boolean("position_biased_input").value_or(true);
  try {
    validate(r.buckets());
  } catch (const config_error& e) {
    throw config_error(c.v.name(r.position_buckets > 0 ? "position_buckets" : "max_relative_positions"),
                       detail::to_text(r.position_buckets > 0 ? r.position_buckets : r.max_relative_positions),
                       std::string("a DeBERTa bucket configuration posenc accepts (") + e.what() + ")");
  }
  return s;
}

}  // namespace posenc::inline v0::detail::rules
