// cli/commands.hpp — the `posenc` subcommands (rope, alibi, t5, sinusoidal) as functions on streams.
//
// Each command takes parsed arguments and writes a human-readable report, or one JSON object with
// --json (field names are a contract: rope_type, rotary_dim, inv_freq, attention_scaling,
// softmax_scale_multiplier, positions, cos, sin; slopes; buckets; table). Numbers are printed as the
// shortest text that reads back as the same double. Errors are thrown (config_error, usage_error);
// run() in cli/run.hpp turns them into one line on stderr and exit status 2.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <numbers>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <posenc/config/gguf.hpp>
#include <posenc/config/json.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/kernels/angles.hpp>
#include <posenc/rope/angles.hpp>
#include <posenc/rope/schedule.hpp>

#include "args.hpp"
#include "svg.hpp"

namespace posenc_cli {

/// Shortest round-trip text of a double (std::to_chars: the fewest significant digits that read back
/// as the same double); "null" for non-finite values in JSON, "inf"/"nan" in text. JSON output does
/// not go through nlohmann-json's dump, whose Grisu2 is not always shortest (docs/cli.md).
inline std::string fmt(double v, bool json = false) {
  if (!std::isfinite(v)) return json ? "null" : (std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
  // JSON readers take a number without '.' or exponent for an integer: "-0" would read back as +0.
  if (json && v == 0 && std::signbit(v)) return "-0.0";
  char b[40];
  const auto r = std::to_chars(b, b + sizeof b, v);
  return std::string(b, r.ptr);
}

/// JSON string literal.
inline std::string jstr(std::string_view s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

template <class T>
std::string jlist(const std::vector<T>& v) {
  std::string o = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) o += ", ";
    if constexpr (std::is_floating_point_v<T>)
      o += fmt(v[i], true);
    else if constexpr (std::is_same_v<T, std::string>)
      o += jstr(v[i]);
    else
      o += std::to_string(v[i]);
  }
  return o + "]";
}

inline std::string jrows(const std::vector<std::vector<double>>& rows) {
  std::string o = "[";
  for (std::size_t i = 0; i < rows.size(); ++i) o += (i ? ",\n    " : "\n    ") + jlist(rows[i]);
  return o + (rows.empty() ? "]" : "\n  ]");
}

/// Pads `s` on the left to width `w`.
inline std::string pad(const std::string& s, std::size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

inline void save_plot(const svg::doc& d, const std::string& path) {
  if (!d.save(path)) throw posenc::config_error("--plot", path + ": cannot write file");
}

// ---------------------------------------------------------------------------------------------- rope

/// Loads a config.json or a .gguf (recognised by its magic bytes); `generic` reads an unknown family's
/// keys at face value instead of refusing it.
inline posenc::model_config load_model(const std::string& path, bool generic) {
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw posenc::config_error(path, "cannot open file");
  char magic[4] = {};
  probe.read(magic, 4);
  const posenc::load_options o{.generic = generic};
  if (probe.gcount() == 4 && std::string_view(magic, 4) == "GGUF") return posenc::load_gguf_file(path, o);
  return posenc::load_hf_config(posenc::parse_config_json(posenc::read_text_file(path), path), o);
}

inline std::string layout_name(posenc::kernels::pairing p) {
  return p == posenc::kernels::pairing::interleaved ? "interleaved" : "half_split";
}

/// The scaling's parameters in words, for the report (the scaling's descriptor says).
inline std::string describe(const posenc::rope_scaling& s) {
  return posenc::describe_scaling(s);
}

/// Lengths worth marking on the wavelength plot: the pre-training context and the extended one.
inline std::optional<std::int64_t> original_length(const posenc::rope_scaling& s) {
  return posenc::scaling_original_length(s);
}

/// The per-layer description of the model at `path`; absent when the config does not say how many
/// layers it has (then there is nothing per layer to report). Malformed per-layer keys throw.
inline std::optional<posenc::layered_config> load_layers(const std::string& path, bool generic) {
  std::ifstream probe(path, std::ios::binary);
  char magic[4] = {};
  probe.read(magic, 4);
  const bool gguf = probe.gcount() == 4 && std::string_view(magic, 4) == "GGUF";
  const posenc::load_options o{.generic = generic};
  try {
    if (gguf) {
      std::ifstream in(path, std::ios::binary);
      const auto c = posenc::read_gguf(in, path);
      return posenc::load_gguf_layered(c.metadata, &c.tensors, o);
    }
    return posenc::load_hf_layered(posenc::parse_config_json(posenc::read_text_file(path), path), o);
  } catch (const posenc::config_error& e) {
    const std::string p = e.parameter();
    if (p == "num_hidden_layers" || p == "text_config.num_hidden_layers" ||
        (p.size() > 12 && p.compare(p.size() - 12, 12, ".block_count") == 0))
      return std::nullopt;
    throw;
  }
}

inline std::string temperature_text(const posenc::attention_temperature_config& t, bool json) {
  const bool l4 = t.rule == posenc::temperature_rule::llama4;
  if (json)
    return std::string("{\"rule\": ") + (l4 ? "\"llama4\"" : "\"llama4_beta\"") +
           ", \"floor_scale\": " + fmt(t.floor_scale, true) + ", \"scale\": " + fmt(t.scale, true) + "}";
  return l4 ? "log(floor((p+1)/" + fmt(t.floor_scale) + ")+1)*" + fmt(t.scale) + "+1"
            : "1+" + fmt(t.scale) + "*ln(1+floor(p/" + fmt(t.floor_scale) + "))";
}

/// Per-layer schedule: text table or JSON fields ("layers", "mrope", "attention_sinks").
inline void print_layers(const posenc::layered_config& lc, const std::vector<int>& streams, bool json,
                         std::ostream& out) {
  using namespace posenc;
  if (json) {
    out << ",\n  \"attention_sinks\": " << (lc.attention_sinks ? "true" : "false") << ",\n  \"mrope\": ";
    if (lc.mrope) {
      out << "{\"section\": [" << lc.mrope->section[0] << ", " << lc.mrope->section[1] << ", " << lc.mrope->section[2]
          << "], \"layout\": " << jstr(lc.mrope->layout == mrope_layout::interleaved ? "interleaved" : "contiguous")
          << ", \"pair_stream\": " << jlist(streams) << "}";
    } else {
      out << "null";
    }
    out << ",\n  \"layers\": [";
    for (std::size_t i = 0; i < lc.layers.size(); ++i) {
      const layer_spec& l = lc.layers[i];
      out << (i ? ",\n    " : "\n    ") << "{\"index\": " << i
          << ", \"layer_type\": " << jstr(layer_type_name(l.attention))
          << ", \"window\": " << (l.window ? std::to_string(*l.window) : "null")
          << ", \"chunk_size\": " << (l.chunk_size ? std::to_string(*l.chunk_size) : "null")
          << ", \"rope\": " << (l.rope ? "true" : "false") << ", \"rope_source\": " << jstr(l.rope_source);
      if (l.rope)
        out << ", \"theta\": " << fmt(l.rope->theta, true)
            << ", \"rope_type\": " << jstr(scaling_type_name(l.rope->scaling));
      out << ", \"temperature\": " << (l.temperature ? temperature_text(*l.temperature, true) : "null") << "}";
    }
    out << "\n  ]";
    return;
  }
  out << "\nper-layer schedule (" << lc.layers.size() << " layers" << (lc.attention_sinks ? ", attention sinks" : "")
      << ")\n";
  out << std::right;
  if (lc.mrope) {
    out << "  mRoPE " << (lc.mrope->layout == mrope_layout::interleaved ? "interleaved" : "contiguous")
        << " sections [t " << lc.mrope->section[0] << ", h " << lc.mrope->section[1] << ", w " << lc.mrope->section[2]
        << "]; pair streams ";
    for (int s : streams) out << "thw"[s];
    out << "\n";
  }
  out << pad("layer", 7) << pad("attention", 19) << pad("window", 9) << "  " << std::left << std::setw(40) << "rope"
      << "temperature\n";
  for (std::size_t i = 0; i < lc.layers.size(); ++i) {
    const layer_spec& l = lc.layers[i];
    std::string r = "NoPE";
    if (l.rope) r = l.rope_source + ": theta " + fmt(l.rope->theta) + " " + scaling_type_name(l.rope->scaling);
    out << pad(std::to_string(i), 7) << pad(layer_type_name(l.attention), 19)
        << pad(l.window ? std::to_string(*l.window) : (l.chunk_size ? "c" + std::to_string(*l.chunk_size) : "-"), 9)
        << "  " << std::left << std::setw(40) << r << std::right
        << (l.temperature ? temperature_text(*l.temperature, false) : "-") << "\n";
  }
}

/// What `posenc rope` reports of a config: its RoPE, the frequencies at the asked length (against the
/// unscaled ones), the angles at the asked positions and the per-layer schedule.
struct rope_report {
  posenc::model_config m;                        // the layered loader's base when it applies
  std::optional<posenc::layered_config> layers;  // the per-layer schedule, where the config has one
  std::optional<std::int64_t> L;                 // the length the frequencies are taken at
  bool length_dependent = false;
  posenc::rope_frequencies f;
  std::vector<double> inv_freq, w0, wavelength, unscaled, ratio;
  std::vector<std::int64_t> positions;
  std::vector<std::vector<double>> cos, sin;  // [position][pair], M included
  std::vector<int> streams;                   // mRoPE pair streams (empty without)
  [[nodiscard]] int rotary_dim() const { return static_cast<int>(2 * inv_freq.size()); }
  [[nodiscard]] const posenc::rope_config& rc() const { return *m.rope; }
  [[nodiscard]] const std::vector<std::string>& warnings() const { return layers ? layers->warnings : m.warnings; }
};

/// The config's RoPE, checked (config_error when it has none or it is invalid), and its schedule.
inline rope_report load_rope_report(const arguments& a) {
  using namespace posenc;
  rope_report r;
  const model_config m0 = load_model(a.config, a.generic);
  r.layers = load_layers(a.config, a.generic);
  r.m = r.layers ? r.layers->base : m0;  // the layered loader knows Llama 4's pair layout
  if (!r.m.rope) {
    std::string why = r.m.alibi ? "it uses ALiBi (try: posenc alibi)"
                      : r.m.t5  ? "it uses T5 relative buckets (try: posenc t5)"
                                : "no rotary keys found";
    throw config_error(a.config, "this model has no rotary position embedding: " + why);
  }
  if (r.m.rope->head_dim > 65536)  // the inspector prints every pair; no real head is this wide
    throw config_error("head_dim", std::to_string(r.m.rope->head_dim), "at most 65536 for posenc rope");
  rope_config cfg = *r.m.rope;
  if (a.reference_fp32()) cfg.angles = angle_mode::reference_fp32;  // HF's float32 inv_freq where it is defined
  const rope_schedule sched(cfg);                                   // validates (config_error naming the parameter)
  rope_config plain_cfg = *r.m.rope;
  plain_cfg.scaling = default_scaling{};
  const rope_schedule plain(plain_cfg);
  r.L = a.seq_len;
  if (!r.L && a.positions && sched.length_dependent()) r.L = rope_schedule::effective_length(*a.positions);
  r.length_dependent = sched.length_dependent();
  r.f = r.L ? sched.at(*r.L) : sched.base();
  r.w0 = plain.base().inv_freq;
  r.inv_freq = r.f.inv_freq;
  if (a.reference_fp32())
    for (double& w : r.inv_freq) w = static_cast<double>(static_cast<float>(w));
  const std::size_t P = r.inv_freq.size();
  r.wavelength.resize(P), r.unscaled.resize(P), r.ratio.resize(P);
  for (std::size_t k = 0; k < P; ++k) {
    r.wavelength[k] = 2 * std::numbers::pi / r.inv_freq[k];
    r.unscaled[k] = 2 * std::numbers::pi / r.w0[k];
    r.ratio[k] = r.w0[k] > 0 ? r.w0[k] / r.inv_freq[k] : std::nan("");
  }
  if (r.layers && r.layers->mrope)
    for (auto st : mrope_pair_streams(r.layers->mrope->section, r.layers->mrope->layout, static_cast<int>(P)))
      r.streams.push_back(st);
  return r;
}

/// The angles (cos, sin with M) at the asked positions (default 0, 1 and seq_len - 1).
inline void rope_angles(const arguments& a, rope_report& r) {
  using namespace posenc;
  const std::size_t P = r.inv_freq.size();
  r.positions = a.positions.value_or(std::vector<std::int64_t>{0, 1});
  if (!a.positions && a.seq_len && *a.seq_len > 2) r.positions.push_back(*a.seq_len - 1);
  r.cos.assign(r.positions.size(), std::vector<double>(P));
  r.sin = r.cos;
  for (std::size_t t = 0; t < r.positions.size(); ++t) {
    if (a.reference_fp32()) {
      const auto M = static_cast<float>(r.f.attention_scaling);
      for (std::size_t k = 0; k < P; ++k) {
        float sv = 0, cv = 0;
        posenc::detail::sincos_reference_fp32(r.positions[t], static_cast<float>(r.inv_freq[k]), sv, cv);
        r.cos[t][k] = static_cast<double>(cv * M);
        r.sin[t][k] = static_cast<double>(sv * M);
      }
    } else {
      kernels::compute_angles<double>(r.inv_freq.data(), static_cast<int>(P), &r.positions[t], 1, r.f.attention_scaling,
                                      r.cos[t].data(), r.sin[t].data(), static_cast<std::ptrdiff_t>(P));
    }
  }
}

inline void print_rope_json(const arguments& a, const rope_report& r, std::ostream& out) {
  using namespace posenc;
  out << "{\n  \"source\": " << jstr(a.config) << ",\n  \"format\": " << jstr(r.m.format)
      << ",\n  \"model_type\": " << jstr(r.m.model_type) << ",\n  \"rope_type\": " << jstr(r.m.rope_type)
      << ",\n  \"head_dim\": " << r.rc().head_dim << ",\n  \"rotary_dim\": " << r.rotary_dim()
      << ",\n  \"rotary_offset\": " << r.rc().rotary_offset << ",\n  \"layout\": " << jstr(layout_name(r.rc().layout))
      << ",\n  \"partial_mode\": "
      << jstr(r.rc().partial_mode == partial_rotary_mode::prefix ? "prefix" : "proportional")
      << ",\n  \"theta\": " << fmt(r.rc().theta, true)
      << ",\n  \"angle_mode\": " << jstr(a.reference_fp32() ? "reference_fp32" : "exact")
      << ",\n  \"seq_len\": " << (r.L ? std::to_string(*r.L) : "null")
      << ",\n  \"length_dependent\": " << (r.length_dependent ? "true" : "false")
      << ",\n  \"inv_freq\": " << jlist(r.inv_freq) << ",\n  \"inv_freq_unscaled\": " << jlist(r.w0)
      << ",\n  \"wavelength\": " << jlist(r.wavelength) << ",\n  \"wavelength_ratio\": " << jlist(r.ratio)
      << ",\n  \"attention_scaling\": " << fmt(r.f.attention_scaling, true)
      << ",\n  \"softmax_scale_multiplier\": " << fmt(r.f.softmax_scale_multiplier, true)
      << ",\n  \"positions\": " << jlist(r.positions) << ",\n  \"cos\": " << jrows(r.cos)
      << ",\n  \"sin\": " << jrows(r.sin) << ",\n  \"warnings\": " << jlist(r.warnings());
  if (r.layers) print_layers(*r.layers, r.streams, true, out);
  out << "\n}\n";
}

inline void print_rope_text(const arguments& a, const rope_report& r, std::ostream& out) {
  using namespace posenc;
  const std::size_t P = r.inv_freq.size();
  out << "posenc rope — " << a.config << " (" << r.m.format << (r.m.model_type.empty() ? "" : ", " + r.m.model_type)
      << ")\n";
  out << "  rope_type                 " << r.m.rope_type;
  if (const auto d = describe(r.rc().scaling); !d.empty()) out << " (" << d << ")";
  out << "\n  head_dim                  " << r.rc().head_dim << "\n  rotary_dim                " << r.rotary_dim()
      << (r.rc().partial_mode == partial_rotary_mode::proportional ? " (proportional)" : "")
      << (r.rc().rotary_offset ? ", offset " + std::to_string(r.rc().rotary_offset) : "")
      << "\n  layout                    " << layout_name(r.rc().layout) << "\n  theta                     "
      << fmt(r.rc().theta) << "\n  seq_len                   "
      << (r.L ? std::to_string(*r.L) : std::string(r.length_dependent ? "(base: lengths <= L0)" : "(any)"))
      << (r.length_dependent ? "  [frequencies depend on the length]" : "") << "\n  attention_scaling         "
      << fmt(r.f.attention_scaling) << "   (magnitude M on cos and sin)"
      << "\n  softmax_scale_multiplier  " << fmt(r.f.softmax_scale_multiplier) << "\n  angle_mode                "
      << (a.reference_fp32() ? "reference_fp32" : "exact") << "\n";
  for (const auto& w : r.warnings()) out << "  warning: " << w << "\n";
  out << "\n"
      << pad("pair", 5) << pad("inv_freq", 26) << pad("wavelength", 26) << pad("unscaled wavelength", 26)
      << pad("ratio", 24) << "\n";
  for (std::size_t k = 0; k < P; ++k)
    out << pad(std::to_string(k), 5) << pad(fmt(r.inv_freq[k]), 26) << pad(fmt(r.wavelength[k]), 26)
        << pad(fmt(r.unscaled[k]), 26) << pad(fmt(r.ratio[k]), 24) << "\n";
  for (std::size_t t = 0; t < r.positions.size(); ++t) {
    out << "\nposition " << r.positions[t] << " (M included)\n"
        << pad("pair", 5) << pad("cos", 26) << pad("sin", 26) << "\n";
    for (std::size_t k = 0; k < P; ++k)
      out << pad(std::to_string(k), 5) << pad(fmt(r.cos[t][k]), 26) << pad(fmt(r.sin[t][k]), 26) << "\n";
  }
  if (r.layers) print_layers(*r.layers, r.streams, false, out);
}

/// The plots `posenc rope` was asked for: mRoPE pair streams, wavelengths against the unscaled ones.
inline void save_rope_plots(const arguments& a, const rope_report& r) {
  using namespace posenc;
  if (a.streams_plot) {
    const std::string name = r.m.model_type.empty() ? a.config : r.m.model_type;
    const auto& ms = *r.layers->mrope;
    save_plot(svg::pair_streams("mRoPE pair streams — " + name,
                                std::string(ms.layout == mrope_layout::interleaved ? "interleaved" : "contiguous") +
                                    " sections [t " + std::to_string(ms.section[0]) + ", h " +
                                    std::to_string(ms.section[1]) + ", w " + std::to_string(ms.section[2]) +
                                    "], rotary_dim " + std::to_string(r.rotary_dim()),
                                r.streams, r.wavelength),
              *a.streams_plot);
  }

  if (a.plot) {
    std::vector<svg::hline> refs;
    if (auto l0 = original_length(r.rc().scaling))
      refs.push_back({"original context L0 = " + std::to_string(*l0), static_cast<double>(*l0), "#c0392b"});
    if (r.m.max_position_embeddings)
      refs.push_back({"max_position_embeddings = " + std::to_string(*r.m.max_position_embeddings),
                      static_cast<double>(*r.m.max_position_embeddings), "#7f8c8d"});
    if (r.L) refs.push_back({"seq_len = " + std::to_string(*r.L), static_cast<double>(*r.L), "#8e44ad"});
    const std::string name = r.m.model_type.empty() ? a.config : r.m.model_type;
    save_plot(svg::log_line_chart("RoPE wavelength per pair — " + name + " (" + r.m.rope_type + ")",
                                  "pair index k (rotary_dim = " + std::to_string(r.rotary_dim()) + ")",
                                  "wavelength 2π / w_k (positions, log scale)",
                                  {{"unscaled theta^(-2k/R)", r.unscaled, "#95a5a6", true},
                                   {"scaled (" + r.m.rope_type + ")", r.wavelength, "#2471a3", false}},
                                  refs),
              *a.plot);
  }
}

inline void run_rope(const arguments& a, std::ostream& out) {
  rope_report r = load_rope_report(a);
  rope_angles(a, r);
  if (a.streams_plot && r.streams.empty())
    throw posenc::config_error("--streams-plot", a.config,
                               "a model with mRoPE sections (mrope_section / rope.dimension_sections)");
  if (a.json)
    print_rope_json(a, r, out);
  else
    print_rope_text(a, r, out);
  save_rope_plots(a, r);
}

// --------------------------------------------------------------------------------------------- alibi

inline void run_alibi(const arguments& a, std::ostream& out) {
  const posenc::alibi enc(posenc::alibi_config{.num_heads = a.heads, .max_bias = a.max_bias});
  const std::vector<double> slopes(enc.slopes().begin(), enc.slopes().end());
  if (a.json) {
    out << "{\n  \"heads\": " << a.heads << ",\n  \"max_bias\": " << fmt(a.max_bias, true)
        << ",\n  \"slopes\": " << jlist(slopes) << "\n}\n";
  } else {
    out << "posenc alibi — " << a.heads << " heads, max_bias " << fmt(a.max_bias)
        << "\n  bias(h, i, j) = -slope_h * |pos_i - pos_j|\n\n"
        << pad("head", 5) << pad("slope", 26) << pad("log2(slope)", 24) << "\n";
    for (std::size_t h = 0; h < slopes.size(); ++h)
      out << pad(std::to_string(h), 5) << pad(fmt(slopes[h]), 26) << pad(fmt(std::log2(slopes[h])), 24) << "\n";
  }
  if (a.plot) {
    // Each head on its own scale (slopes span orders of magnitude): colour = bias / (m_h * (n - 1)).
    const std::size_t n = 24, shown = std::min<std::size_t>(slopes.size(), 64);
    std::vector<svg::panel> ps;
    for (std::size_t h = 0; h < shown; ++h) {
      svg::panel p{"h" + std::to_string(h) + ": m = " + svg::tick(slopes[h]), n, n, {}};
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
          p.v.push_back(
              enc.bias(static_cast<std::ptrdiff_t>(h), static_cast<std::int64_t>(i), static_cast<std::int64_t>(j)) /
              (slopes[h] * static_cast<double>(n - 1)));
      ps.push_back(std::move(p));
    }
    save_plot(
        svg::heatmaps("ALiBi bias per head (" + std::to_string(a.heads) + " heads, max_bias " + fmt(a.max_bias) + ")",
                      "bias = -m_h |i - j|, query i (rows) x key j (columns) in 0.." + std::to_string(n - 1) +
                          "; colour = bias / (m_h * " + std::to_string(n - 1) + ")" +
                          (shown < slopes.size() ? "; first 64 heads" : ""),
                      ps, -1, 0, false, "key position j", "query position i", 4),
        *a.plot);
  }
}

// ------------------------------------------------------------------------------------------------ t5

inline void run_t5(const arguments& a, std::ostream& out) {
  const posenc::t5_buckets b(posenc::t5_bias_config{
      .num_buckets = a.buckets, .max_distance = a.max_distance, .bidirectional = !a.causal, .num_heads = 1});
  // Default range: +-max_distance, capped like an explicit --relative so the output stays bounded.
  const std::int64_t half = std::min<std::int64_t>(a.max_distance, static_cast<std::int64_t>(max_list / 2) - 1);
  const auto [lo, hi] = a.relative.value_or(std::pair<std::int64_t, std::int64_t>{-half, half});
  std::vector<std::int64_t> rel, buckets;
  for (std::int64_t r = lo;; ++r) {
    rel.push_back(r);
    buckets.push_back(b(r));
    if (r == hi) break;
  }
  if (a.json) {
    out << "{\n  \"num_buckets\": " << a.buckets << ",\n  \"max_distance\": " << a.max_distance
        << ",\n  \"bidirectional\": " << (a.causal ? "false" : "true") << ",\n  \"relative\": [" << lo << ", " << hi
        << "],\n  \"buckets\": " << jlist(buckets) << "\n}\n";
  } else {
    out << "posenc t5 — " << a.buckets << " buckets, max_distance " << a.max_distance << ", "
        << (a.causal ? "causal (decoder)" : "bidirectional (encoder)") << ", max_exact " << b.max_exact()
        << "\n  relative position = key position - query position\n\n"
        << pad("relative", 10) << pad("bucket", 8) << "\n";
    // Runs of equal buckets are printed as ranges.
    for (std::size_t i = 0; i < rel.size();) {
      std::size_t j = i;
      while (j + 1 < rel.size() && buckets[j + 1] == buckets[i]) ++j;
      const std::string r = i == j ? std::to_string(rel[i]) : std::to_string(rel[i]) + ".." + std::to_string(rel[j]);
      out << pad(r, 16) << pad(std::to_string(buckets[i]), 8) << "\n";
      i = j + 1;
    }
  }
  if (a.plot) {
    // Bucket map: bucket(j - i) for queries i (rows) and keys j (columns) over a window.
    const std::int64_t n = std::min<std::int64_t>(96, 2 * a.max_distance + 1);
    svg::panel p{"bucket(j - i)", static_cast<std::size_t>(n), static_cast<std::size_t>(n), {}};
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) p.v.push_back(b(j - i));
    save_plot(svg::heatmaps("T5 relative-position buckets (" + std::to_string(a.buckets) + " buckets, max_distance " +
                                std::to_string(a.max_distance) + ", " + (a.causal ? "causal" : "bidirectional") + ")",
                            "bucket of key j relative to query i (colour = bucket index); exact buckets near the "
                            "diagonal, log-spaced beyond max_exact = " +
                                std::to_string(b.max_exact()),
                            {p}, 0, a.buckets - 1, false, "key position j", "query position i", 1,
                            520.0 / static_cast<double>(n)),
              *a.plot);
  }
}

// ---------------------------------------------------------------------------------------- sinusoidal

inline void run_sinusoidal(const arguments& a, std::ostream& out) {
  using namespace posenc;
  const sinusoidal_config cfg = a.layout == "concat"    ? sinusoidal_config::marian(a.d_model)
                                : a.layout == "fairseq" ? sinusoidal_config::fairseq(a.d_model)
                                                        : sinusoidal_config::distilbert(a.d_model);
  const sinusoidal enc(cfg);
  std::vector<std::int64_t> positions;
  if (a.positions) {
    positions = *a.positions;
  } else {
    for (std::int64_t p = 0; p < 16; ++p) positions.push_back(p);
  }
  if (static_cast<double>(positions.size()) * static_cast<double>(a.d_model) > double(1 << 22))
    throw config_error("--positions", std::to_string(positions.size()) + " rows x d_model " + std::to_string(a.d_model),
                       "a table of at most 2^22 values");
  std::vector<std::vector<double>> table(positions.size(), std::vector<double>(static_cast<std::size_t>(a.d_model)));
  // A position is a row of the table (fairseq: its own position numbers, 1 = padding row, tokens from 2).
  for (std::size_t t = 0; t < positions.size(); ++t) enc.encode_row(positions[t], std::span<double>(table[t]));
  if (a.json) {
    out << "{\n  \"d_model\": " << a.d_model << ",\n  \"layout\": " << jstr(a.layout)
        << ",\n  \"positions\": " << jlist(positions) << ",\n  \"table\": " << jrows(table) << "\n}\n";
  } else {
    out << "posenc sinusoidal — d_model " << a.d_model << ", layout " << a.layout
        << (a.layout == "interleaved" ? " [sin w0, cos w0, sin w1, ...], w_k = 10000^(-2k/d)"
            : a.layout == "concat"    ? " [sin w_0..h-1 | cos w_0..h-1], w_k = 10000^(-2k/d)"
                                      : " [sin | cos], w_k = 10000^(-k/(h-1)); row 1 = padding (zeros)")
        << "\n";
    for (std::size_t t = 0; t < positions.size(); ++t) {
      out << "position " << positions[t] << ":";
      for (double v : table[t]) out << ' ' << fmt(v);
      out << "\n";
    }
  }
  if (a.plot) {
    const std::size_t rows = std::min<std::size_t>(positions.size(), 512);
    const std::size_t cols = std::min<std::size_t>(static_cast<std::size_t>(a.d_model), 512);
    svg::panel p{"", rows, cols, {}};
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) p.v.push_back(table[r][c]);
    const double cell = std::clamp(520.0 / static_cast<double>(std::max(rows, cols)), 1.0, 24.0);
    save_plot(svg::heatmaps("Sinusoidal encoding (" + a.layout + ", d_model " + std::to_string(a.d_model) + ")",
                            "rows: positions " + std::to_string(positions.front()) + ".." +
                                std::to_string(positions[rows - 1]) + "; columns: dimensions",
                            {p}, -1, 1, true, "dimension", "position", 1, cell),
              *a.plot);
  }
}

}  // namespace posenc_cli
