// cli/model.hpp — `posenc model`: what posenc does in each layer of a model, and the
// supported-models table generated from the architecture table (config/architectures.hpp).
//
// --json prints one object: model_type, positional, head_dim, final_logit_softcap, deberta (DeBERTa's
// relative attention or null), vision (the rotary vision tower or null), and `layers` (the text side),
// one entry per layer with exactly the keys index, layer_type, rope, theta, rope_type, factor,
// layout, rotary_dim, attention_scaling, window, chunk_size, sinks, softmax_scale, logit_softcap,
// temperature, alibi (a contract: tests/cli checks it). --supported-markdown prints the markdown
// table README.md and docs/configs.md carry between their supported-models markers
// (scripts/supported-models rewrites them). Errors are thrown; run() prints one line, exit 2.
#pragma once

#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <variant>

#include <posenc/config/architectures.hpp>
#include <posenc/config/gguf.hpp>
#include <posenc/config/json.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/rope/schedule.hpp>

#include "args.hpp"
#include "commands.hpp"

namespace posenc_cli {

/// Loads the per-layer description of a config.json or .gguf (recognised by its magic bytes).
inline posenc::layered_config load_layered_model(const std::string& path, bool generic) {
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw posenc::config_error(path, "cannot open file");
  char magic[4] = {};
  probe.read(magic, 4);
  const posenc::load_options o{.generic = generic};
  if (probe.gcount() == 4 && std::string_view(magic, 4) == "GGUF") {
    std::ifstream in(path, std::ios::binary);
    const auto c = posenc::read_gguf(in, path);
    return posenc::load_gguf_layered(c.metadata, &c.tensors, o);
  }
  return posenc::load_hf_layered(posenc::parse_config_json(posenc::read_text_file(path), path), o);
}

inline std::string opt_num(const std::optional<double>& v, bool json) {
  return v ? fmt(*v, json) : (json ? "null" : "-");
}
inline std::string opt_int(const std::optional<std::int64_t>& v, bool json) {
  return v ? std::to_string(*v) : (json ? "null" : "-");
}

/// What the layer's RoPE gives the report: rotary dim, magnitude M (validates the config).
struct rope_facts {
  int rotary_dim = 0;
  double attention_scaling = 1;
};
inline rope_facts facts_of(const posenc::layer_spec& l) {
  if (!l.rope) return {};
  const posenc::rope_schedule s(*l.rope);
  return {2 * s.pairs(), s.base().attention_scaling};
}

/// DeBERTa's relative attention: the terms, the table and how the caller builds it.
inline std::string deberta_text(const posenc::deberta_spec& d, bool json) {
  const auto& r = d.relative;
  const auto b = [json](bool v) { return std::string(v ? (json ? "true" : "yes") : (json ? "false" : "no")); };
  if (json)
    return std::string("{\"c2p\": ") + b(r.c2p) + ", \"p2c\": " + b(r.p2c) +
           ", \"position_buckets\": " + std::to_string(r.position_buckets) +
           ", \"max_relative_positions\": " + std::to_string(r.max_relative_positions) +
           ", \"buckets\": " + jstr(r.position_buckets > 0 ? "log" : "clamp") +
           ", \"table_rows\": " + std::to_string(r.table_rows()) + ", \"share_att_key\": " + b(d.share_att_key) +
           ", \"norm_rel_ebd\": " + b(d.norm_rel_ebd) + ", \"position_biased_input\": " + b(d.position_biased_input) +
           "}";
  std::string terms = r.c2p && r.p2c ? "c2p + p2c" : r.c2p ? "c2p" : r.p2c ? "p2c" : "no cross terms";
  return terms + ", " +
         (r.position_buckets > 0 ? "log buckets " + std::to_string(r.position_buckets) + " over "
                                 : std::string("distances clamped to ")) +
         std::to_string(r.max_relative_positions) + " positions, table " + std::to_string(r.table_rows()) + " rows, " +
         (d.share_att_key ? "shared q/k projections" : "separate position projections") +
         (d.norm_rel_ebd ? ", rel_embeddings layer-normed" : "") +
         ", absolute positions in the embeddings: " + b(d.position_biased_input);
}

/// The rotary vision tower: its vision_rope configuration and the shapes its positions come from.
inline std::string vision_text(const posenc::vision_spec& v, bool json) {
  using posenc::vision_rope_convention;
  const auto& r = v.rope;
  const char* conv = r.convention == vision_rope_convention::pixtral         ? "pixtral"
                     : r.convention == vision_rope_convention::llama4        ? "llama4"
                     : r.convention == vision_rope_convention::minimax_m3_vl ? "minimax_m3_vl"
                                                                             : "qwen_vl";
  std::string full;
  for (int i : v.fullatt_block_indexes) full += (full.empty() ? "" : ", ") + std::to_string(i);
  if (json)
    return "{\"tower\": " + jstr(v.tower) + ", \"convention\": " + jstr(conv) +
           ", \"head_dim\": " + std::to_string(r.head_dim) + ", \"theta\": " + fmt(r.theta, true) +
           ", \"depth\": " + std::to_string(v.depth) + ", \"num_heads\": " + std::to_string(v.num_heads) +
           ", \"patch_size\": " + std::to_string(v.patch_size) +
           ", \"patches_per_side\": " + std::to_string(v.patches_per_side) +
           ", \"spatial_merge_size\": " + std::to_string(v.spatial_merge_size) +
           ", \"temporal_patch_size\": " + std::to_string(v.temporal_patch_size) +
           ", \"window_size\": " + std::to_string(v.window_size) + ", \"fullatt_block_indexes\": [" + full +
           "], \"learned_positions\": " + std::to_string(v.learned_positions) +
           ", \"softmax_scale\": " + fmt(v.softmax_scale, true) + "}";
  std::string t = v.tower + ": vision_rope " + conv + ", head_dim " + std::to_string(r.head_dim) + ", theta " +
                  fmt(r.theta) + ", " + std::to_string(v.depth) + " layers x " + std::to_string(v.num_heads) +
                  " heads, patch " + std::to_string(v.patch_size) + ", softmax_scale " + fmt(v.softmax_scale);
  if (v.patches_per_side) t += ", " + std::to_string(v.patches_per_side) + " patches per side";
  if (v.spatial_merge_size > 1 || v.temporal_patch_size > 1)
    t +=
        ", merge " + std::to_string(v.spatial_merge_size) + ", temporal patch " + std::to_string(v.temporal_patch_size);
  if (v.window_size) t += ", windows of " + std::to_string(v.window_size) + " px, full attention at layers " + full;
  if (v.learned_positions) t += ", plus " + std::to_string(v.learned_positions) + " learned positions";
  return t;
}

inline void run_model(const arguments& a, std::ostream& out);

/// The supported-models markdown table, one row per architecture-table row.
inline std::string supported_markdown();

// ------------------------------------------------------------------------------------------------

inline void run_model(const arguments& a, std::ostream& out) {
  using namespace posenc;
  if (a.supported_markdown) {
    out << supported_markdown();
    return;
  }
  const layered_config lc = load_layered_model(a.config, a.generic);
  std::vector<rope_facts> facts;
  for (const auto& l : lc.layers) facts.push_back(facts_of(l));
  const std::string mt = lc.base.model_type;
  if (a.json) {
    out << "{\n  \"model_type\": " << jstr(mt) << ",\n  \"family\": " << jstr(lc.family)
        << ",\n  \"format\": " << jstr(lc.base.format)
        << ",\n  \"positional\": " << jstr(positional_name(lc.positional)) << ",\n  \"head_dim\": " << lc.head_dim
        << ",\n  \"final_logit_softcap\": " << opt_num(lc.final_logit_softcap, true)
        << ",\n  \"deberta\": " << (lc.deberta ? deberta_text(*lc.deberta, true) : "null")
        << ",\n  \"vision\": " << (lc.vision ? vision_text(*lc.vision, true) : "null")
        << ",\n  \"warnings\": " << jlist(lc.warnings) << ",\n  \"layers\": [";
    for (std::size_t i = 0; i < lc.layers.size(); ++i) {
      const layer_spec& l = lc.layers[i];
      const rope_facts& f = facts[i];
      out << (i ? ",\n    " : "\n    ") << "{\"index\": " << i
          << ", \"layer_type\": " << jstr(layer_type_name(l.attention)) << ", \"rope\": " << (l.rope ? "true" : "false")
          << ", \"theta\": " << (l.rope ? fmt(l.rope->theta, true) : "null")
          << ", \"rope_type\": " << (l.rope ? jstr(scaling_type_name(l.rope->scaling)) : "null")
          << ", \"factor\": " << (l.rope ? opt_num(posenc::scaling_factor(l.rope->scaling), true) : "null")
          << ", \"layout\": " << (l.rope ? jstr(layout_name(l.rope->layout)) : "null")
          << ", \"rotary_dim\": " << f.rotary_dim << ", \"attention_scaling\": " << fmt(f.attention_scaling, true)
          << ", \"window\": " << opt_int(l.window, true) << ", \"chunk_size\": " << opt_int(l.chunk_size, true)
          << ", \"sinks\": " << (l.sinks ? "true" : "false") << ", \"softmax_scale\": " << fmt(l.softmax_scale, true)
          << ", \"logit_softcap\": " << opt_num(l.logit_softcap, true)
          << ", \"temperature\": " << (l.temperature ? temperature_text(*l.temperature, true) : "null")
          << ", \"alibi\": " << (l.alibi ? "true" : "false") << "}";
    }
    out << "\n  ]\n}\n";
    return;
  }
  out << "posenc model — " << a.config << " (" << lc.base.format << (mt.empty() ? "" : ", " + mt)
      << (lc.family.empty() ? "" : ", " + lc.family) << ")\n"
      << "  positional           " << positional_name(lc.positional)
      << (lc.base.learned_offset ? " (position 0 at row " + std::to_string(*lc.base.learned_offset) + ")" : "") << "\n"
      << "  head_dim             " << lc.head_dim << "\n"
      << "  final_logit_softcap  " << opt_num(lc.final_logit_softcap, false) << "\n";
  if (lc.mrope)
    out << "  mRoPE                " << (lc.mrope->layout == mrope_layout::interleaved ? "interleaved" : "contiguous")
        << " sections [t " << lc.mrope->section[0] << ", h " << lc.mrope->section[1] << ", w " << lc.mrope->section[2]
        << "]\n";
  if (lc.deberta) out << "  deberta              " << deberta_text(*lc.deberta, false) << "\n";
  if (lc.vision) out << "  vision               " << vision_text(*lc.vision, false) << "\n";
  for (const auto& w : lc.warnings) out << "  warning: " << w << "\n";
  out << "\n"
      << std::right << pad("layer", 6) << "  " << std::left << std::setw(18) << "type" << std::setw(46) << "rope"
      << std::setw(12) << "window" << std::setw(24) << "softmax_scale" << std::setw(9) << "softcap" << std::setw(6)
      << "sinks" << std::setw(6) << "alibi"
      << "temperature\n";
  for (std::size_t i = 0; i < lc.layers.size(); ++i) {
    const layer_spec& l = lc.layers[i];
    std::string r = "-";
    if (l.rope) {
      r = "theta " + fmt(l.rope->theta) + " " + scaling_type_name(l.rope->scaling);
      if (auto f = posenc::scaling_factor(l.rope->scaling)) r += " x" + fmt(*f);
      r += " " + layout_name(l.rope->layout) + " R " + std::to_string(facts[i].rotary_dim);
      if (facts[i].attention_scaling != 1) r += " M " + fmt(facts[i].attention_scaling);
    }
    const std::string win = l.window       ? std::to_string(*l.window)
                            : l.chunk_size ? "chunk " + std::to_string(*l.chunk_size)
                                           : "-";
    out << std::right << pad(std::to_string(i), 6) << "  " << std::left << std::setw(18) << layer_type_name(l.attention)
        << std::setw(46) << r << std::setw(12) << win << std::setw(24)
        << (is_softmax(l.attention) ? fmt(l.softmax_scale) : "-") << std::setw(9) << opt_num(l.logit_softcap, false)
        << std::setw(6) << (l.sinks ? "yes" : "-") << std::setw(6) << (l.alibi ? "yes" : "-")
        << (l.temperature ? temperature_text(*l.temperature, false) : "-") << "\n";
  }
  out << std::right;
}

namespace detail {

/// The parts of a row's "Applied" text, joined with "; ".
struct applied_parts {
  std::string s;
  void add(const std::string& t) { s += (s.empty() ? "" : "; ") + t; }
};

/// The base a config without RoPE keys gets: default_theta, or the class's rope_parameters (their base,
/// scaling and rotated fraction; one entry, or one per layer type).
inline std::string default_rope_text(const posenc::architecture& a) {
  using posenc::config_value;
  const config_value p = posenc::detail::rules::pairs_object(a.default_rope_parameters);
  std::vector<std::string> types{""};  // "" : the entry for every layer type
  for (const auto& m : p.members())
    if (const auto dot = m.key.find('.'); dot != std::string::npos)
      if (std::find(types.begin(), types.end(), m.key.substr(0, dot)) == types.end())
        types.push_back(m.key.substr(0, dot));
  if (types.size() > 1) types.erase(types.begin());
  std::string out;
  for (const auto& t : types) {
    const std::string k = t.empty() ? "" : t + ".";
    const config_value* theta = p.find(k + "rope_theta");
    const config_value* type = p.find(k + "rope_type");
    const config_value* part = p.find(k + "partial_rotary_factor");
    std::string e = "theta " + fmt(theta ? theta->as_number() : a.default_theta);
    if (type && type->as_string() != "default") e += " " + type->as_string();
    if (part && part->as_number() != 1) e += " on " + fmt(part->as_number()) + " of the dims";
    out += (out.empty() ? "" : ", ") + e + (t.empty() ? "" : " (" + t + ")");
  }
  return out + " by default";
}

/// The positional family and the rotated width.
inline void applied_positional(const posenc::architecture& a, applied_parts& p) {
  using namespace posenc;
  auto add = [&](const std::string& t) { p.add(t); };
  if (a.positional == positional_family::rope) {
    const auto lay = [](pairing x) { return x == pairing::interleaved ? "interleaved" : "half_split"; };
    std::string r = std::string("RoPE ") + lay(a.hf_layout);
    if (a.reads_rope_interleave) r += " while rope_interleave (default true), else half_split";
    if (!a.gguf_arch.empty() && a.gguf_layout != a.hf_layout) r += std::string(" (GGUF ") + lay(a.gguf_layout) + ")";
    r += ", " + default_rope_text(a);
    add(r);
    switch (a.partial) {
      case partial_rule::partial_rotary_factor:
        add("partial_rotary_factor" +
            (a.default_partial != 1 ? " (default " + fmt(a.default_partial) + ")" : std::string()));
        break;
      case partial_rule::rotary_pct:
        add("rotary_pct (default " + fmt(a.default_partial) + ")");
        break;
      case partial_rule::rotary_dim:
        add("rotary_dim (default " + fmt(a.default_partial) + ")");
        break;
      case partial_rule::qk_rope_head_dim:
        add("qk_rope_head_dim slice of [nope, rope]");
        break;
      case partial_rule::full:
        break;
    }
  } else if (a.positional == positional_family::alibi) {
    add("ALiBi on every layer");
  } else if (a.positional == positional_family::t5_buckets) {
    add(a.per_layer_bias ? "T5 relative buckets (a bias table per layer)"
                         : "T5 relative buckets (layer 0's table, shared)");
  } else if (a.positional == positional_family::deberta) {
    add(std::string("DeBERTa c2p / p2c relative terms with relative_attention (") +
        (a.deberta_v2_rules ? "log buckets when position_buckets > 0, share_att_key" : "distances clamped") +
        "); learned positions with position_biased_input");
  } else if (a.positional == positional_family::none) {
    add("no positions in the attention");
  } else {
    add(std::string(positional_name(a.positional)) + " positions (in the embeddings; nothing in attention)");
  }
}

/// Layer kinds, NoPE layers, chunks and the sliding layers' RoPE.
inline void applied_layers(const posenc::architecture& a, applied_parts& p) {
  using namespace posenc;
  auto add = [&](const std::string& t) { p.add(t); };
  const std::string win = a.default_window ? " (default " + std::to_string(*a.default_window) + ")" : std::string();
  const std::string mixer = layer_type_name(a.mixer);
  switch (a.layers) {
    case layer_rule::uniform:
      break;
    case layer_rule::sliding_all:
      add("sliding_window on every layer" + win +
          (a.gguf_reads_window || a.gguf_arch.empty() ? std::string() : " (GGUF: full attention, as llama.cpp)"));
      break;
    case layer_rule::max_window_layers:
      add("use_sliding_window: layers >= max_window_layers (default " + std::to_string(a.default_max_window_layers) +
          ") slide" + win);
      break;
    case layer_rule::window_max_window_layers:
      add("sliding_window: layers >= max_window_layers (default " + std::to_string(a.default_max_window_layers) +
          ") slide" + win);
      break;
    case layer_rule::alternate_below_max_window_layers:
      add("use_sliding_window: even layers below max_window_layers (default " +
          std::to_string(a.default_max_window_layers) + ") slide" + win);
      break;
    case layer_rule::use_sliding_window_all:
      add("use_sliding_window: every layer slides" + win);
      break;
    case layer_rule::period:
      add("sliding_window_pattern (default " + std::to_string(a.default_period) + ")" + win);
      break;
    case layer_rule::nope_interval:
      add("no_rope_layers (default NoPE every " + std::to_string(a.default_period) + "th layer)");
      break;
    case layer_rule::hybrid_interval:
      add(mixer + " layers (full attention every " + std::to_string(a.default_period) + "th)");
      break;
    case layer_rule::hybrid_alternate:
      add(mixer + " on odd layers");
      break;
    case layer_rule::hybrid_period_offset:
      add(mixer + " layers; attention where i % attn_layer_period (default " + std::to_string(a.default_period) +
          ") == attn_layer_offset (default " + std::to_string(a.default_offset) + ")");
      break;
    case layer_rule::hybrid_indices:
      add(mixer + " layers; attention at the listed layer indices");
      break;
    case layer_rule::hybrid_pattern:
      add(mixer + " / attention / MLP layers from hybrid_override_pattern");
      break;
    case layer_rule::hybrid_block_types:
      add(mixer + " / attention layers from layer_types");
      break;
    case layer_rule::zamba_block_types:
      add(mixer + " / hybrid (shared attention, then the mixer) layers from layers_block_type");
      break;
    case layer_rule::block_types_cycle:
      add(mixer + " / local attention layers from block_types, cycled" + win);
      break;
    case layer_rule::cross_attention_indices:
      add(mixer + " layers at cross_attention_layers, self-attention elsewhere");
      break;
    case layer_rule::parallel_hybrid:
      add("attention and a " + mixer + " mixer side by side in every layer");
      break;
    case layer_rule::block_configs:
      add("block_configs: no-op / linear attention layers are " + mixer);
      break;
    case layer_rule::attention_types:
      add("attention_types: global / local layers" + win);
      break;
  }
  if (a.period_first) add("full layers where i % period == 0");
  if (a.first_layer_full) add("layer 0 full");
  switch (a.nope) {
    case nope_rule::none:
    case nope_rule::no_rope_layers:
      break;
    case nope_rule::non_sliding:
      add("full layers NoPE");
      break;
    case nope_rule::non_sliding_if_window:
      add("full layers NoPE when sliding");
      break;
    case nope_rule::non_sliding_or_dense_prefix:
      add("full layers NoPE but the dense-MLP prefix's");
      break;
    case nope_rule::null_theta:
      add("NoPE when rope_theta is null");
      break;
    case nope_rule::all:
      add("attention layers NoPE");
      break;
    case nope_rule::position_embedding_type:
      add("RoPE iff position_embedding_type is rope (default NoPE)");
      break;
    case nope_rule::use_mem_rope:
      add("RoPE iff use_mem_rope (default NoPE)");
      break;
  }
  if (a.chunked) add("chunked_attention on RoPE layers (default " + std::to_string(a.default_chunk.value_or(0)) + ")");
  switch (a.local_rope) {
    case local_rope_rule::same:
      break;
    case local_rope_rule::local_base:
      add("rope_local_base_freq on sliding layers (default " + fmt(a.default_local_theta) + ")");
      break;
    case local_rope_rule::unscaled_sliding:
      add("sliding layers unscaled");
      break;
  }
}

/// The softmax scale.
inline void applied_scale(const posenc::architecture& a, applied_parts& p) {
  using namespace posenc;
  auto add = [&](const std::string& t) { p.add(t); };
  switch (a.scale) {
    case scale_rule::head_dim:
      break;
    case scale_rule::query_pre_attn_scalar:
      add("scale query_pre_attn_scalar^-0.5 (default " + fmt(a.default_scale_param) + ")");
      break;
    case scale_rule::attention_multiplier:
      add("scale attention_multiplier (default " +
          (a.default_scale_param != 0 ? fmt(a.default_scale_param) : std::string("head_dim^-0.5")) + ")");
      break;
    case scale_rule::qk_head_dim:
      add(std::string("scale qk_head_dim^-0.5") + (a.mscale2_hf     ? " x YaRN mscale^2"
                                                   : a.mscale2_gguf ? " (GGUF: x YaRN mscale^2, as llama.cpp)"
                                                                    : ""));
      break;
    case scale_rule::mpt_softmax_scale:
      add("attn_config.softmax_scale");
      break;
    case scale_rule::unscaled:
      add("unscaled q.k");
      break;
    case scale_rule::one:
      add("scale 1");
      break;
    case scale_rule::key_multiplier:
      add("scale head_dim^-0.5 x key_multiplier x attention_in_multiplier^2");
      break;
    case scale_rule::inv_head_dim:
      add("scale head_dim^-1");
      break;
    case scale_rule::half_head_dim:
      add("head_dim 2 hidden_size / heads; scale (head_dim / 2)^-0.5");
      break;
    case scale_rule::deberta_cross_terms:
      add("scale (head_dim (1 + n))^-0.5, n = c2p / p2c in pos_att_type");
      break;
  }
  if (a.reads_scale_attn_weights) add("scale_attn_weights false: unscaled q.k");
}

inline std::string applied_text(const posenc::architecture& a) {
  using namespace posenc;
  applied_parts p;
  applied_positional(a, p);
  applied_layers(a, p);
  applied_scale(a, p);
  auto add = [&](const std::string& t) { p.add(t); };
  if (a.softcap) {
    std::string c = "attn/final_logit_softcapping";
    if (a.default_attn_softcap)
      c += " (default " + fmt(*a.default_attn_softcap) + " / " + fmt(*a.default_final_softcap) + ")";
    add(c);
  }
  if (a.sinks) add(a.sinks_sliding_only ? "attention sinks on sliding layers" : "attention sinks");
  if (a.layer_rope_theta) add("layer_rope_theta: one base per layer (0 = NoPE)");
  if (a.alibi_at_block_count) add("ALiBi instead of RoPE at " + std::to_string(a.alibi_at_block_count) + " layers");
  if (a.alibi_scaled) add("slopes x head_dim^-0.5");
  if (a.positional == positional_family::learned)
    add(a.learned_offset_from_pad ? "position 0 at row pad_token_id + 1"
                                  : "position 0 at row " + std::to_string(a.learned_offset));
  if (a.bidirectional) add("bidirectional");
  if (a.reads_bidirectional_key) add("use_bidirectional_attention");
  if (a.gguf_ignores_rope_keys) add("GGUF: base 10000, unscaled, as llama.cpp");
  if (a.llama4_temperature) add("query temperature on NoPE layers");
  if (a.mrope) add(std::string("mRoPE sections (") + (a.mrope_interleaved ? "interleaved" : "contiguous") + ")");
  return p.s;
}

}  // namespace detail

inline std::string supported_markdown() {
  std::ostringstream o;
  o << "| Family | HF model_type | GGUF arch | Positional | Applied | Refused |\n"
    << "| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& a : posenc::architectures()) {
    std::string hf = a.hf_model_type.empty() ? "-" : "`" + std::string(a.hf_model_type) + "`";
    if (!a.hf_aliases.empty()) {
      std::string al(a.hf_aliases);
      std::string list;
      std::size_t start = 0;
      while (start <= al.size()) {
        const auto c = al.find(',', start);
        list += ", `" + al.substr(start, c == std::string::npos ? std::string::npos : c - start) + "`";
        if (c == std::string::npos) break;
        start = c + 1;
      }
      hf += list;
    }
    std::string gg = a.gguf_arch.empty() ? "-" : "`" + std::string(a.gguf_arch) + "`";
    if (!a.gguf_aliases.empty()) gg += ", `" + std::string(a.gguf_aliases) + "`";  // one alias per row so far
    o << "| " << a.family << " | " << hf << " | " << gg << " | " << posenc::positional_name(a.positional) << " | "
      << detail::applied_text(a) << " | " << (a.refused.empty() ? "-" : std::string(a.refused)) << " |\n";
  }
  return o.str();
}

}  // namespace posenc_cli
