// posenc/config/rules_layers.hpp — the layer rules: how many layers, which kind each is (full,
// sliding or chunked attention, or a hybrid model's mixer), its window or chunk, and whether it
// rotates, read from a key_view through the family's row, for every format.
//
// Hugging Face's precedence is followed: an explicit `layer_types` beats the pattern keys (which are
// then reported if they disagree), keys a family's modeling code never reads change nothing and are
// reported. Hybrids declare their attention layers in several ways (layer_types / layers_block_type
// names, attn_layer_indices, full_attn_idxs, attn_layer_period / offset, hybrid_override_pattern,
// full_attention_interval; GGUF: a KV head count of 0 per layer); each is one case of rule_kinds.
// GGUF files are read as llama.cpp runs them (built-in patterns, keys it does not read).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/config/architecture.hpp>
#include <posenc/config/rules_rope.hpp>
#include <posenc/config/view.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0::detail::rules {

using kinds_t = std::vector<layer_attention>;

/// Layer counts above this are refused: the deepest published models have a few hundred layers, and
/// one layer_spec per layer is built.
inline constexpr int max_layers = 1 << 16;

/// The layer count (num_hidden_layers or its aliases; GGUF block_count).
inline int rule_layer_count(const context& c) {
  const auto n = c.top().integer("num_hidden_layers", 1, max_layers);
  if (!n) throw config_error(c.v.name("num_hidden_layers"), "absent", "the layer count (>= 1)");
  return static_cast<int>(*n);
}

/// A period or interval key must fit the model.
inline void require_fits(const context& c, std::string_view key, std::int64_t v, int n) {
  detail::require(
      v <= n, c.v.name(key), v,
      "<= " + c.v.name("num_hidden_layers") + " = " + std::to_string(n) + " (a pattern longer than the model)");
}

/// The sliding window: the key (an explicit null means none; GGUF: 0 means none), else the class default
/// (GGUF: llama.cpp's built-in window where it applies its built-in pattern only at one layer count).
inline std::optional<std::int64_t> rule_window(const context& c, int n) {
  const std::string_view key = "sliding_window";
  const auto w = c.top().integer(key, c.v.gguf() ? 0 : 1, max_length);
  if (c.v.gguf()) {
    if (w && *w > 0 && c.known && c.A.gguf_fixed_window) return c.A.gguf_fixed_window;  // SmallThinker: 4096
    if (w) return *w > 0 ? w : std::nullopt;
    const bool builtin = c.known && c.A.gguf_period_block_count && n == c.A.gguf_period_block_count;
    return builtin ? c.A.default_window : std::nullopt;
  }
  if (w || c.v.present(key) || !c.known) return w;
  return c.A.default_window;
}

/// Sliding flags from a period: sliding iff (i + 1) % period != 0 (Gemma 3, llama.cpp set_swa_pattern).
/// With `first`, layer i is full iff i % period == 0 (ModernBERT, llama.cpp's dense_first).
inline kinds_t from_period(int n, std::int64_t period, bool first = false) {
  kinds_t k(static_cast<std::size_t>(n), layer_attention::full);
  for (int i = 0; i < n; ++i)
    if (period != 0 && (first ? i : i + 1) % period != 0) k[static_cast<std::size_t>(i)] = layer_attention::sliding;
  return k;
}

/// True for the families whose non-attention layers are a token mixer (the hybrid layer rules).
constexpr bool is_hybrid(layer_rule r) noexcept {
  return r >= layer_rule::hybrid_interval && r != layer_rule::parallel_hybrid && r != layer_rule::attention_types;
}

/// The kind a layer-type name stands for in this family: softmax attention, or the family's mixer.
inline layer_attention kind_of_name(const context& c, const std::string& name, const std::string& key) {
  if (name == "full_attention" || name == "attention" || name == "hybrid") return layer_attention::full;
  if (name == "sliding_attention" || name == "hybrid_sliding") return layer_attention::sliding;
  if (name == "chunked_attention") return layer_attention::chunked;
  if (name == "mlp") return layer_attention::mlp;
  if (name == "moe") return layer_attention::moe;
  const bool mixer = name == "linear_attention" || name == "mamba" || name == "conv";
  if (mixer && c.known && is_hybrid(c.A.layers)) return c.A.mixer;
  if (mixer && !c.known) {
    c.warn(key + " = \"" + name + "\": read as a non-attention mixer layer (nothing applied)");
    return name == "mamba" ? layer_attention::mamba : name == "conv" ? layer_attention::conv : layer_attention::linear;
  }
  throw config_error(
      key, "\"" + name + "\"",
      c.known && !is_hybrid(c.A.layers)
          ? "full_attention, sliding_attention or chunked_attention (" + c.who() + " has no mixer layers)"
          : "a layer-type name (full_attention, sliding_attention, chunked_attention, "
            "linear_attention, mamba, conv, attention, mlp, moe)");
}

/// The kinds an explicit list of layer-type names gives (layer_types, layers_block_type).
inline kinds_t from_names(const context& c, std::string_view key, int n) {
  const config_value* lt = c.top().get(key);
  if (!lt->is_list()) throw config_error(c.v.name(key), lt->to_text(), "a list of layer-type names");
  detail::require(lt->items().size() == static_cast<std::size_t>(n), c.v.name(key), lt->items().size(),
                  c.v.name("num_hidden_layers") + " = " + std::to_string(n) + " entries");
  kinds_t k;
  for (std::size_t i = 0; i < lt->items().size(); ++i) {
    const auto& e = lt->items()[i];
    const std::string name = c.v.name(key) + "[" + std::to_string(i) + "]";
    if (!e.is_string()) throw config_error(name, e.to_text(), "a layer-type name");
    k.push_back(kind_of_name(c, e.as_string(), name));
  }
  return k;
}

/// Indices of attention layers (Bamba attn_layer_indices, LFM2 full_attn_idxs); the rest the mixer.
inline kinds_t from_indices(const context& c, std::string_view key, int n, bool default_all) {
  kinds_t k(static_cast<std::size_t>(n), default_all ? layer_attention::full : c.A.mixer);
  const config_value* v = c.top().get(key);
  if (!v) return k;
  if (!v->is_list()) throw config_error(c.v.name(key), v->to_text(), "a list of layer indices");
  std::fill(k.begin(), k.end(), c.A.mixer);
  for (std::size_t i = 0; i < v->items().size(); ++i) {
    const auto& e = v->items()[i];
    if (!e.is_integer() || e.as_integer() < 0 || e.as_integer() >= n)
      throw config_error(c.v.name(key) + "[" + std::to_string(i) + "]", e.to_text(),
                         "a layer index in [0, " + std::to_string(n) + ")");
    k[static_cast<std::size_t>(e.as_integer())] = layer_attention::full;
  }
  return k;
}

/// Nemotron-H's hybrid_override_pattern: M the mixer, * attention, - MLP only, E MoE only.
inline kinds_t from_letters(const context& c, std::string_view key, int n) {
  const auto p = c.top().string(key);
  if (!p) throw config_error(c.v.name(key), "absent", "one letter per layer (M, *, -, E)");
  detail::require(p->size() == static_cast<std::size_t>(n), c.v.name(key), p->size(),
                  c.v.name("num_hidden_layers") + " = " + std::to_string(n) + " letters");
  kinds_t k;
  for (char ch : *p) {
    if (ch == 'M')
      k.push_back(c.A.mixer);
    else if (ch == '*')
      k.push_back(layer_attention::full);
    else if (ch == '-')
      k.push_back(layer_attention::mlp);
    else if (ch == 'E')
      k.push_back(layer_attention::moe);
    else
      throw config_error(c.v.name(key), "\"" + *p + "\"", "letters M (mixer), * (attention), - (MLP), E (MoE)");
  }
  return k;
}

/// DeciLM / Nemotron-NAS block_configs: a layer whose attention is a no-op or replaced by a linear map
/// mixes no tokens (the family's mixer kind); without the key every layer attends.
inline kinds_t from_block_configs(const context& c, int n) {
  kinds_t k(static_cast<std::size_t>(n), layer_attention::full);
  const config_value* b = c.top().get("block_configs");
  if (!b) return k;
  if (!b->is_list() || b->items().size() != k.size())
    throw config_error(c.v.name("block_configs"), b->to_text(), "one block configuration per layer");
  for (std::size_t i = 0; i < k.size(); ++i) {
    const std::string at = c.v.name("block_configs") + "[" + std::to_string(i) + "].attention.";
    const config_value* a = b->items()[i].is_object() ? b->items()[i].find("attention") : nullptr;
    const detail::key_reader r{a, at};
    if (r.boolean("no_op").value_or(false) || r.boolean("replace_with_linear").value_or(false)) k[i] = c.A.mixer;
  }
  return k;
}

/// GPT-Neo attention_types [[["global", "local"], n], ...]: the list repeated n times, in order.
inline kinds_t from_attention_types(const context& c, int n) {
  const config_value* t = c.top().get("attention_types");
  kinds_t k;
  if (!t) {  // GPTNeoConfig's default: [[["global", "local"], num_layers / 2]]
    for (int i = 0; i < n; ++i) k.push_back(i % 2 == 0 ? layer_attention::full : layer_attention::sliding);
    return k;
  }
  const std::string key = c.v.name("attention_types");
  if (!t->is_list()) throw config_error(key, t->to_text(), "a list of [[kinds...], repeat] pairs");
  for (const auto& item : t->items()) {
    const bool pair = item.is_list() && item.items().size() == 2 && item.items()[0].is_list() &&
                      item.items()[1].is_integer() && item.items()[1].as_integer() >= 0 &&
                      item.items()[1].as_integer() <= n;
    if (!pair) throw config_error(key, t->to_text(), "a list of [[kinds...], repeat] pairs");
    for (std::int64_t r = 0; r < item.items()[1].as_integer(); ++r)
      for (const auto& kind : item.items()[0].items()) {
        if (!kind.is_string() || (kind.as_string() != "global" && kind.as_string() != "local"))
          throw config_error(key, kind.to_text(), "\"global\" or \"local\"");
        k.push_back(kind.as_string() == "global" ? layer_attention::full : layer_attention::sliding);
      }
  }
  detail::require(k.size() == static_cast<std::size_t>(n), key, k.size(),
                  c.v.name("num_hidden_layers") + " = " + std::to_string(n) + " layers in all");
  return k;
}

/// Zamba / Zamba2 without layers_block_type: the config class's default list.
inline kinds_t zamba_default_kinds(const context& c, int n) {
  kinds_t k(static_cast<std::size_t>(n), c.A.mixer);
  if (c.A.default_period == 0) {  // Zamba2Config: ["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ... (54 layers)
    if (n != 54)
      throw config_error(
          c.v.name("layers_block_type"), "absent",
          "a list of " + c.v.name("num_hidden_layers") + " = " + std::to_string(n) +
              " layer types (the class default has 54 entries, and the model builds its layers from it)");
    for (int i : {6, 12, 18, 24, 30, 36, 42, 47, 51}) k[static_cast<std::size_t>(i)] = layer_attention::full;
    return k;
  }
  // ZambaConfig: ["mamba", "mamba", "hybrid"] + ["hybrid" if i % period == offset else "mamba" for i < n - 3]
  const auto& t = c.top();
  const auto period = t.int32("attn_layer_period", 1).value_or(c.A.default_period);
  const auto offset = t.int32("attn_layer_offset", 0).value_or(c.A.default_offset);
  for (int i = 0; i < n; ++i)
    if (i == 2 || (i >= 3 && (i - 3) % period == offset)) k[static_cast<std::size_t>(i)] = layer_attention::full;
  return k;
}

/// RecurrentGemma block_types cycled over the layers: "recurrent" the mixer, "attention" local attention.
inline kinds_t from_block_types(const context& c, int n, const std::optional<std::int64_t>& window) {
  const config_value* b = c.top().get("block_types");
  const std::string key = c.v.name("block_types");
  std::vector<std::string> names{"recurrent", "recurrent", "attention"};  // the class default
  if (b) {
    if (!b->is_list() || b->items().empty()) throw config_error(key, b->to_text(), "a list of block types");
    names.clear();
    for (const auto& e : b->items()) {
      if (!e.is_string() || (e.as_string() != "recurrent" && e.as_string() != "attention"))
        throw config_error(key, b->to_text(), "a list of \"recurrent\" / \"attention\"");
      names.push_back(e.as_string());
    }
  }
  kinds_t k(static_cast<std::size_t>(n), c.A.mixer);
  const layer_attention attn = window ? layer_attention::sliding : layer_attention::full;
  for (std::size_t i = 0; i < k.size(); ++i)
    if (names[i % names.size()] == "attention") k[i] = attn;
  return k;
}

/// Mllama cross_attention_layers: the listed layers are the mixer (cross-attention), the rest full attention.
/// The model tests `layer_idx in cross_attention_layers`: an index outside the layers selects none (reported).
inline kinds_t from_cross_indices(const context& c, int n) {
  kinds_t k(static_cast<std::size_t>(n), layer_attention::full);
  const std::string key = c.v.name("cross_attention_layers");
  auto mark = [&](std::int64_t i, const std::string& at, const std::string& text) {
    if (i >= 0 && i < n)
      k[static_cast<std::size_t>(i)] = c.A.mixer;
    else
      c.warn(at + " = " + text + ": no such layer (" + c.v.name("num_hidden_layers") + " = " + std::to_string(n) +
             "); the model selects none there");
  };
  const config_value* v = c.top().get("cross_attention_layers");
  if (v && !v->is_null()) {
    if (!v->is_list()) throw config_error(key, v->to_text(), "a list of layer indices");
    for (std::size_t i = 0; i < v->items().size(); ++i) {
      const auto& e = v->items()[i];
      const std::string at = key + "[" + std::to_string(i) + "]";
      if (!e.is_integer()) throw config_error(at, e.to_text(), "a layer index");
      mark(e.as_integer(), at, e.to_text());
    }
    return k;
  }
  for (int i = 0; i < n; ++i)  // the config class's default; its entries beyond the layers select none
    if (detail::arch::in_list(c.A.default_layer_indices, std::to_string(i))) k[static_cast<std::size_t>(i)] = c.A.mixer;
  return k;
}

/// Hybrid families without an explicit list: the family's own declaration of its attention layers.
inline kinds_t hybrid_kinds(const context& c, int n, const std::optional<std::int64_t>& window) {
  const auto& t = c.top();
  kinds_t k(static_cast<std::size_t>(n), layer_attention::full);
  switch (c.A.layers) {
    case layer_rule::hybrid_interval: {
      const auto iv = t.int32("full_attention_interval", 1).value_or(c.A.default_period);
      require_fits(c, "full_attention_interval", iv, n);
      for (int i = 0; i < n; ++i)
        if ((i + 1) % iv != 0) k[static_cast<std::size_t>(i)] = c.A.mixer;
      return k;
    }
    case layer_rule::hybrid_alternate:
      if (t.has("attn_type_list"))
        throw config_error(c.v.name("attn_type_list"), "given without layer_types",
                           "layer_types (transformers does not read attn_type_list: it alternates full and linear "
                           "attention)");
      for (int i = 0; i < n; ++i)  // MiniMaxAttention passes config.sliding_window to every softmax layer
        k[static_cast<std::size_t>(i)] = (i + 1) % 2 == 0 ? c.A.mixer
                                         : window         ? layer_attention::sliding
                                                          : layer_attention::full;
      return k;
    case layer_rule::hybrid_period_offset: {
      const auto period = t.int32("attn_layer_period", 1).value_or(c.A.default_period);
      const auto offset = t.int32("attn_layer_offset", 0).value_or(c.A.default_offset);
      if (offset >= period)
        throw config_error(c.v.name("attn_layer_offset"), std::to_string(offset),
                           "< attn_layer_period = " + std::to_string(period));
      for (int i = 0; i < n; ++i)
        if (i % period != offset) k[static_cast<std::size_t>(i)] = c.A.mixer;
      return k;
    }
    case layer_rule::hybrid_indices:
      return from_indices(c, t.has("full_attn_idxs") ? "full_attn_idxs" : "attn_layer_indices", n,
                          c.A.indices_default_attention);
    case layer_rule::hybrid_pattern:
      return from_letters(c, "hybrid_override_pattern", n);
    case layer_rule::hybrid_block_types:
      std::fill(k.begin(), k.end(), c.A.mixer);
      return k;
    case layer_rule::zamba_block_types:
      return zamba_default_kinds(c, n);
    case layer_rule::block_types_cycle:
      return from_block_types(c, n, window);
    case layer_rule::cross_attention_indices:
      return from_cross_indices(c, n);
    case layer_rule::block_configs:
      return from_block_configs(c, n);
    default:
      return k;
  }
}

/// The HF class rule of the sliding families when the config has no layer_types.
inline kinds_t sliding_kinds(const context& c, int n, const std::optional<std::int64_t>& window) {
  const auto& t = c.top();
  kinds_t k(static_cast<std::size_t>(n), layer_attention::full);
  const bool use = t.boolean("use_sliding_window").value_or(false) && window.has_value();
  const int mwl = t.int32("max_window_layers", 0).value_or(c.A.default_max_window_layers);
  for (int i = 0; i < n; ++i) {
    bool s = false;
    switch (c.A.layers) {
      case layer_rule::sliding_all:
        s = window.has_value();
        break;
      case layer_rule::max_window_layers:
        s = use && i >= mwl;
        break;
      case layer_rule::window_max_window_layers:  // no use_sliding_window key: the window alone decides
        s = window.has_value() && i >= mwl;
        break;
      case layer_rule::alternate_below_max_window_layers:
        s = use && i < mwl && i % 2 == 0;
        break;
      case layer_rule::use_sliding_window_all:
        s = use;
        break;
      default:
        break;
    }
    if (s) k[static_cast<std::size_t>(i)] = layer_attention::sliding;
  }
  return k;
}

/// The period families (Gemma 2/3, Cohere2, gpt-oss, EXAONE 4): sliding_window_pattern, an integer
/// period or EXAONE 4's letters ("LLLG": L sliding, G full, repeated), else the class default.
inline std::optional<kinds_t> period_kinds(const context& c, int n, const std::optional<std::int64_t>& window) {
  const std::string_view pk = "sliding_window_pattern";
  const bool first = c.known && c.A.period_first;
  const config_value* p = c.top().get(pk);
  if (p && p->is_string()) {
    const std::string& s = p->as_string();
    if (s.empty() || s.find_first_not_of("LG") != std::string::npos)
      throw config_error(c.v.name(pk), p->to_text(),
                         "an integer period or a string of L (sliding) and G (full) letters");
    require_fits(c, pk, static_cast<std::int64_t>(s.size()), n);
    kinds_t k(static_cast<std::size_t>(n), layer_attention::full);
    for (std::size_t i = 0; i < k.size(); ++i)
      if (s[i % s.size()] == 'L') k[i] = layer_attention::sliding;
    return k;
  }
  if (p) {
    const auto period = *c.top().int32(pk, 0);
    require_fits(c, pk, period, n);
    return from_period(n, period, first);
  }
  if (!c.known || !c.A.default_period) return std::nullopt;
  if (c.A.nope == nope_rule::non_sliding_if_window && !window)
    return kinds_t(static_cast<std::size_t>(n), layer_attention::full);
  kinds_t k = from_period(n, c.A.default_period, first);
  if (c.A.first_layer_full && !k.empty()) k[0] = layer_attention::full;
  return k;
}

/// Whether each layer's RoPE survives the NoPE-layer keys (no_rope_layers: 1 rotates, 0 NoPE;
/// no_rope_layer_interval: every interval-th layer NoPE; GGUF: llama.cpp's built-in every 4th).
inline std::vector<bool> rule_rotating(const context& c, int n, bool gguf_window_zero) {
  const auto nz = static_cast<std::size_t>(n);
  std::vector<bool> r(nz, true);
  const auto& t = c.top();
  if (c.v.gguf()) {
    if (c.known && c.A.layers == layer_rule::nope_interval && !(c.A.chunked && gguf_window_zero)) {
      for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = (i + 1) % c.A.default_period != 0;
      c.warn(c.v.model_type + ": NoPE every " + std::to_string(c.A.default_period) +
             "th layer is llama.cpp's built-in rule");
    }
    return r;
  }
  const bool has_list = t.has("no_rope_layers"), has_iv = t.has("no_rope_layer_interval");
  const bool reads = c.known ? c.A.nope == nope_rule::no_rope_layers : (has_list || has_iv);
  if (!reads) {
    if (has_list || has_iv) c.warn(c.v.name("no_rope_layers") + ": " + c.who() + " does not read it; ignored");
    return r;
  }
  if (!has_list) {
    const auto iv = t.int32("no_rope_layer_interval", 1).value_or(c.A.default_period ? c.A.default_period : 4);
    require_fits(c, "no_rope_layer_interval", iv, n);
    for (int i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = (i + 1) % iv != 0;
    return r;
  }
  const config_value* v = t.get("no_rope_layers");
  if (!v->is_list()) throw config_error(c.v.name("no_rope_layers"), v->to_text(), "a list of 0/1 per layer");
  detail::require(v->items().size() == nz, c.v.name("no_rope_layers"), v->items().size(),
                  c.v.name("num_hidden_layers") + " = " + std::to_string(n) + " entries");
  for (std::size_t i = 0; i < nz; ++i) {
    const auto& e = v->items()[i];
    if (!e.is_integer() || (e.as_integer() != 0 && e.as_integer() != 1))
      throw config_error(c.v.name("no_rope_layers") + "[" + std::to_string(i) + "]", e.to_text(),
                         "0 (NoPE) or 1 (the layer uses RoPE)");
    r[i] = e.as_integer() == 1;
  }
  if (has_iv) {
    const auto iv = *t.int32("no_rope_layer_interval", 1);
    for (int i = 0; i < n; ++i)
      if (((i + 1) % iv != 0) != r[static_cast<std::size_t>(i)])
        throw config_error(c.v.name("no_rope_layer_interval"),
                           "contradicts no_rope_layers at layer " + std::to_string(i));
  }
  return r;
}

/// The chunk of the chunked layers (Llama 4 attention_chunk_size; GGUF: llama.cpp's built-in 8192).
inline std::optional<std::int64_t> rule_chunk(const context& c, bool gguf_window_zero) {
  if (c.v.gguf()) return c.known && c.A.chunked && !gguf_window_zero ? c.A.default_chunk : std::nullopt;
  const auto ch = c.top().integer("attention_chunk_size", 1, max_length);
  if (ch || c.v.present("attention_chunk_size") || !c.known || !c.A.chunked) return ch;
  return c.A.default_chunk;
}

/// GGUF hybrids: llama.cpp marks a mixer layer by a KV head count of 0 (an MLP-only layer of Nemotron-H
/// also has no KV heads, but a feed-forward width); without the per-layer array, every layer is the mixer.
inline kinds_t gguf_mixer_layers(const context& c, int n) {
  kinds_t k(static_cast<std::size_t>(n), c.A.mixer);
  const config_value* kv = c.top().get("num_key_value_heads_per_layer");
  if (!kv) return k;
  detail::require(kv->items().size() == k.size(), c.v.name("num_key_value_heads_per_layer"), kv->items().size(),
                  "block_count = " + std::to_string(n) + " entries");
  const config_value* ff = c.top().get("intermediate_size_per_layer");
  for (std::size_t i = 0; i < k.size(); ++i) {
    const bool mlp = ff && ff->is_list() && i < ff->items().size() && ff->items()[i].as_integer() != 0;
    k[i] = kv->items()[i].as_integer() != 0                  ? layer_attention::full
           : mlp && c.A.layers == layer_rule::hybrid_pattern ? layer_attention::mlp
                                                             : c.A.mixer;
  }
  return k;
}

/// GGUF: the layer kinds llama.cpp runs (a per-layer pattern, a period, its built-in patterns, a KV
/// head count of 0 for the mixer layers, full_attention_interval), and the window keys it ignores.
inline kinds_t gguf_kinds(const context& c, int n, const std::optional<std::int64_t>& window,
                          const std::optional<std::int64_t>& chunk, const std::vector<bool>& rotating) {
  const auto& t = c.top();
  const bool builtin_here = !c.known || !c.A.gguf_period_block_count || n == c.A.gguf_period_block_count;
  const bool first = c.known && c.A.period_first;
  if (t.has("layer_types") && !(c.known && c.A.gguf_pattern_array_ignored)) return from_names(c, "layer_types", n);
  if (t.has("sliding_window_pattern")) {
    const auto period = *t.int32("sliding_window_pattern", 1);
    require_fits(c, "sliding_window_pattern", period, n);
    return from_period(n, period, first);
  }
  if (c.known && is_hybrid(c.A.layers)) {
    if (c.A.layers == layer_rule::hybrid_interval) return hybrid_kinds(c, n, window);
    return gguf_mixer_layers(c, n);
  }
  if (c.known && c.A.layers == layer_rule::period && c.A.default_period && builtin_here &&
      !(c.A.nope == nope_rule::non_sliding_if_window && !window)) {
    c.warn(c.v.name("sliding_window_pattern") + " absent: llama.cpp's built-in pattern for " + c.v.model_type +
           " (every " + std::to_string(c.A.default_period) + "th layer full) is used");
    return from_period(n, c.A.default_period, first);
  }
  if (c.known && c.A.layers == layer_rule::nope_interval && c.A.chunked && chunk) {
    kinds_t k(static_cast<std::size_t>(n), layer_attention::full);
    for (std::size_t i = 0; i < k.size(); ++i)
      if (rotating[i]) k[i] = layer_attention::chunked;  // llama.cpp llama4: the RoPE layers are chunked
    return k;
  }
  if (c.known && c.A.layers == layer_rule::sliding_all && c.A.gguf_reads_window && window)
    return kinds_t(static_cast<std::size_t>(n), layer_attention::sliding);
  if (window && c.known && (c.A.layers != layer_rule::period || !c.A.gguf_reads_window || !builtin_here))
    c.warn(c.v.name("sliding_window") + ": llama.cpp attends fully on every " + c.v.model_type +
           " layer (it does not read the key for this architecture); ignored");
  return kinds_t(static_cast<std::size_t>(n), layer_attention::full);
}

/// The layer kinds (see the banner): explicit names, else the family's pattern or hybrid declaration.
inline kinds_t rule_kinds(const context& c, int n, const std::optional<std::int64_t>& window,
                          const std::optional<std::int64_t>& chunk, const std::vector<bool>& rotating) {
  if (c.v.gguf()) return gguf_kinds(c, n, window, chunk, rotating);
  const auto& t = c.top();
  const bool reads_names = !(c.known && c.A.layers == layer_rule::use_sliding_window_all);
  std::optional<kinds_t> named;
  for (const char* key : {"layer_types", "layers_block_type"}) {
    if (!t.has(key) || named) continue;
    if (reads_names)
      named = from_names(c, key, n);
    else
      c.warn(c.v.name(key) + ": " + c.who() + " does not read it; ignored");
  }
  const bool reads_pattern = !c.known || c.A.layers == layer_rule::period;
  std::optional<kinds_t> pattern;
  if (reads_pattern)
    pattern = period_kinds(c, n, window);
  else if (t.has("sliding_window_pattern"))
    c.warn(c.v.name("sliding_window_pattern") + ": " + c.who() + " does not read it; ignored");
  if (named) {
    if (pattern && t.has("sliding_window_pattern") && *pattern != *named)
      c.warn(c.v.name("sliding_window_pattern") +
             ": disagrees with layer_types; layer_types is used (as Hugging Face does)");
    return *named;
  }
  if (pattern) return *pattern;
  kinds_t k(static_cast<std::size_t>(n), layer_attention::full);
  if (!c.known) {
    if (chunk && (t.has("no_rope_layers") || t.has("no_rope_layer_interval")))
      for (std::size_t i = 0; i < k.size(); ++i) k[i] = rotating[i] ? layer_attention::chunked : layer_attention::full;
    return k;
  }
  if (is_hybrid(c.A.layers)) return hybrid_kinds(c, n, window);
  if (c.A.layers == layer_rule::attention_types) return from_attention_types(c, n);
  if (c.A.layers == layer_rule::nope_interval) {
    const bool smol_slides = !c.A.chunked && t.boolean("use_sliding_window").value_or(false) && window;
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (c.A.chunked && chunk && rotating[i]) k[i] = layer_attention::chunked;
      if (smol_slides && !rotating[i]) k[i] = layer_attention::sliding;  // SmolLM3: the NoPE layers slide
    }
    return k;
  }
  if (c.A.layers == layer_rule::uniform) {
    if (window && t.has("sliding_window"))
      c.warn(c.v.name("sliding_window") + ": " + c.who() +
             " attends fully on every layer (its modeling code does not read the key); ignored");
    return k;
  }
  return sliding_kinds(c, n, window);
}

/// Cohere2-MoE's force_rope layers: those whose MLP is dense (mlp_layer_types; absent, the first
/// first_k_dense_replace) when prefix_dense_sliding_window_pattern is 1. Its config class builds the default
/// layer_types with a pattern of its own over that prefix; a prefix without layer_types is refused.
inline std::vector<bool> dense_prefix_layers(const context& c, int n) {
  const auto& t = c.top();
  const auto first = t.int32("first_k_dense_replace", 0).value_or(0);
  detail::require(first >= 0 && first <= n, c.v.name("first_k_dense_replace"), first,
                  "in [0, " + c.v.name("num_hidden_layers") + "]");
  if (first > 0 && !t.has("layer_types"))
    throw config_error(c.v.name("first_k_dense_replace"), std::to_string(first),
                       "0 unless layer_types is given: " + c.who() +
                           "'s config class patterns the dense prefix's layers by "
                           "prefix_dense_sliding_window_pattern, which posenc does not model");
  std::vector<bool> dense(static_cast<std::size_t>(n), false);
  if (t.int32("prefix_dense_sliding_window_pattern", 1).value_or(1) != 1) return dense;
  const config_value* m = t.get("mlp_layer_types");
  if (!m) {
    std::fill_n(dense.begin(), first, true);
    return dense;
  }
  if (!m->is_list() || m->items().size() != static_cast<std::size_t>(n))
    throw config_error(
        c.v.name("mlp_layer_types"), m->to_text(),
        "a list of " + c.v.name("num_hidden_layers") + " = " + std::to_string(n) + " names (\"dense\" or \"sparse\")");
  for (std::size_t i = 0; i < dense.size(); ++i) {
    const auto& e = m->items()[i];
    if (!e.is_string() || (e.as_string() != "dense" && e.as_string() != "sparse"))
      throw config_error(c.v.name("mlp_layer_types") + "[" + std::to_string(i) + "]", e.to_text(),
                         "\"dense\" or \"sparse\"");
    dense[i] = e.as_string() == "dense";
  }
  return dense;
}

/// OLMo Hybrid: the base written as null (top level or in rope_parameters) and given nowhere (the rope entries
/// hold the non-null members only).
inline bool written_null_theta(const context& c) {
  const bool given = c.top().has("rope_theta") ||
                     std::any_of(c.v.rope.begin(), c.v.rope.end(),
                                 [](const rope_entry& e) { return e.params.find("rope_theta") != nullptr; });
  const config_value* rp = c.v.keys.find("rope_parameters");
  const config_value* own = rp && rp->is_object() ? rp->find("rope_theta") : nullptr;
  return !given && (c.v.present("rope_theta") || (own && own->is_null()));
}

/// Whether each layer rotates: a RoPE model's softmax layers, minus the family's NoPE layers.
inline std::vector<bool> rule_nope(const context& c, bool rope, const kinds_t& kinds, std::vector<bool> rotating,
                                   const std::optional<std::int64_t>& window) {
  const bool any_sliding = std::find(kinds.begin(), kinds.end(), layer_attention::sliding) != kinds.end();
  const nope_rule rule = c.known ? c.A.nope : nope_rule::none;
  // Granite 4.0-H: position_embedding_type (HF); llama.cpp rotates iff rope.scaling.finetuned, which the converter
  // sets for Bamba and for models without Mamba layers
  const bool pet_rope = c.v.gguf() ? c.top().boolean("rope_finetuned").value_or(false)
                                   : c.top().string("position_embedding_type").value_or("") == "rope";
  const std::vector<bool> forced = rule == nope_rule::non_sliding_or_dense_prefix && !c.v.gguf()
                                       ? dense_prefix_layers(c, static_cast<int>(kinds.size()))
                                       : std::vector<bool>(kinds.size(), false);
  const bool theta_null = rule == nope_rule::null_theta && written_null_theta(c);
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const bool sliding = kinds[i] == layer_attention::sliding;
    bool r = rope && is_softmax(kinds[i]) && rotating[i] && !theta_null;
    if (rule == nope_rule::non_sliding && !sliding) r = false;
    if (rule == nope_rule::non_sliding_or_dense_prefix && !sliding && !forced[i]) r = false;
    // EXAONE 4: with a sliding window (llama.cpp: with a sliding layer), only sliding layers rotate
    if (rule == nope_rule::non_sliding_if_window && (c.v.gguf() ? any_sliding : window.has_value()) && !sliding)
      r = false;
    if (rule == nope_rule::all) r = false;
    if (rule == nope_rule::position_embedding_type && !pet_rope) r = false;
    if (rule == nope_rule::use_mem_rope && !c.top().boolean("use_mem_rope").value_or(false)) r = false;
    rotating[i] = r;
  }
  return rotating;
}

}  // namespace posenc::inline v0::detail::rules
