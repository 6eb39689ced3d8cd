// cli/args.hpp — the `posenc` command line, parsed into a plain struct without exiting or printing.
//
// parse_args() is a library function (tested and fuzzed directly): it validates every option and
// throws usage_error with a one-line message naming the problem; the caller prints it and exits 2.
// Sizes are capped so that no command line can make the tool allocate without bound.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace posenc_cli {

/// A bad command line. what() is one line naming the option and the problem.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class command { help, version, rope, alibi, t5, sinusoidal, tour, model };

inline constexpr std::size_t max_list = 65536;        ///< positions / relative range entries
inline constexpr std::int64_t max_heads = 4096;       ///< alibi --heads
inline constexpr std::int64_t max_d_model = 65536;    ///< sinusoidal --d-model
inline constexpr std::int64_t max_buckets = 1 << 20;  ///< t5 --buckets

struct arguments {
  command cmd = command::help;
  bool json = false;
  std::optional<std::string> plot;  ///< --plot FILE.svg

  // rope
  std::string config;                                  ///< --config FILE (config.json or .gguf)
  std::optional<std::int64_t> seq_len;                 ///< --seq-len N
  std::optional<std::vector<std::int64_t>> positions;  ///< --positions LIST (rope, sinusoidal)
  bool reference_fp32 = false;                         ///< --angle-mode reference_fp32
  std::optional<std::string> streams_plot;             ///< --streams-plot FILE.svg (mRoPE pair -> stream)

  // alibi
  std::int64_t heads = 0;  ///< --heads N
  double max_bias = 8;     ///< --max-bias B

  // t5
  int buckets = 32;                                               ///< --buckets N
  int max_distance = 128;                                         ///< --max-distance D
  bool causal = false;                                            ///< --causal
  std::optional<std::pair<std::int64_t, std::int64_t>> relative;  ///< --relative A:B

  // sinusoidal
  std::int64_t d_model = 0;            ///< --d-model D
  std::string layout = "interleaved";  ///< --layout interleaved|concat|fairseq

  // model
  bool supported_markdown = false;  ///< --supported-markdown

  // tour
  std::string out_dir = "posenc-tour";  ///< --out DIR
};

inline const char* usage_text() {
  return "usage: posenc <command> [options]\n"
         "\n"
         "  posenc rope --config FILE [--seq-len N] [--positions 0,1,4095] [--angle-mode exact|reference_fp32]\n"
         "              [--json] [--plot FILE.svg] [--streams-plot FILE.svg]\n"
         "      A model's RoPE schedule from a Hugging Face config.json or a .gguf file: per pair the\n"
         "      inverse frequency, wavelength and its ratio to the unscaled one; attention scaling;\n"
         "      softmax-scale multiplier; cos and sin at the positions (magnitude included).\n"
         "  posenc alibi --heads N [--max-bias B] [--json] [--plot FILE.svg]\n"
         "      ALiBi slopes per head.\n"
         "  posenc t5 [--buckets N] [--max-distance D] [--causal] [--relative A:B] [--json] [--plot FILE.svg]\n"
         "      T5 relative-position buckets for relative positions A..B (key minus query).\n"
         "  posenc sinusoidal --d-model D [--layout interleaved|concat|fairseq] [--positions LIST] [--json]\n"
         "                    [--plot FILE.svg]\n"
         "      Sinusoidal encodings, one row per position.\n"
         "  posenc model --config FILE [--json]\n"
         "      What posenc does in each layer of a model (config.json or .gguf): layer type, RoPE\n"
         "      (base, scaling, layout, rotary dim, magnitude), window or chunk, sinks, softmax scale,\n"
         "      soft-cap, temperature, ALiBi.\n"
         "  posenc model --supported-markdown\n"
         "      The supported-models table (markdown), generated from the architecture table.\n"
         "  posenc tour [--out DIR]\n"
         "      Every encoder through the reference attention on a built-in example; writes plots to DIR.\n"
         "\n"
         "LIST: comma-separated integers or inclusive ranges A:B, e.g. 0,1,8:15. Bad input prints one line\n"
         "on stderr and exits with status 2.\n";
}

namespace detail {

inline std::int64_t to_int(std::string_view opt, std::string_view s, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (!s.empty() && *b == '+') ++b;
  const auto [p, ec] = std::from_chars(b, e, v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && p == e && (v < lo || v > hi)))
    throw usage_error(std::string(opt) + " " + std::string(s) + ": out of range [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
  if (ec != std::errc{} || p != e || s.empty())
    throw usage_error(std::string(opt) + " " + std::string(s) + ": not an integer");
  return v;
}

inline double to_double(std::string_view opt, std::string_view s) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty() || !(v == v) || v > 1e300 || v < -1e300)
    throw usage_error(std::string(opt) + " " + std::string(s) + ": not a finite number");
  return v;
}

/// "0,1,8:15" -> {0, 1, 8, ..., 15}.
inline std::vector<std::int64_t> to_list(std::string_view opt, std::string_view s) {
  constexpr std::int64_t big = std::int64_t{1} << 62;
  std::vector<std::int64_t> out;
  if (s.empty()) throw usage_error(std::string(opt) + ": empty list");
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t comma = s.find(',', start);
    const std::string_view item =
        s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) throw usage_error(std::string(opt) + " " + std::string(s) + ": empty list item");
    const std::size_t colon = item.find(':', 1);
    if (colon == std::string_view::npos) {
      out.push_back(to_int(opt, item, -big, big));
    } else {
      const std::int64_t a = to_int(opt, item.substr(0, colon), -big, big);
      const std::int64_t b = to_int(opt, item.substr(colon + 1), -big, big);
      if (b < a) throw usage_error(std::string(opt) + " " + std::string(item) + ": range end before its start");
      if (static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a) >= max_list - out.size())
        throw usage_error(std::string(opt) + ": more than " + std::to_string(max_list) + " entries");
      for (std::int64_t v = a; v <= b; ++v) out.push_back(v);
    }
    if (out.size() > max_list)
      throw usage_error(std::string(opt) + ": more than " + std::to_string(max_list) + " entries");
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace detail

/// Parses argv[1..] (the program name excluded). Throws usage_error for anything it cannot accept.
[[nodiscard]] inline arguments parse_args(std::span<const std::string_view> args) {
  arguments a;
  if (args.empty()) throw usage_error("no command given (try: posenc --help)");
  const std::string_view cmd = args[0];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") return a;
  if (cmd == "--version" || cmd == "version") {
    a.cmd = command::version;
    return a;
  }
  if (cmd == "rope")
    a.cmd = command::rope;
  else if (cmd == "alibi")
    a.cmd = command::alibi;
  else if (cmd == "t5")
    a.cmd = command::t5;
  else if (cmd == "sinusoidal")
    a.cmd = command::sinusoidal;
  else if (cmd == "tour")
    a.cmd = command::tour;
  else if (cmd == "model")
    a.cmd = command::model;
  else
    throw usage_error("unknown command '" + std::string(cmd) +
                      "' (commands: rope, alibi, t5, sinusoidal, model, tour)");

  const std::string prog = "posenc " + std::string(cmd);
  struct spec {
    std::string_view name;
    bool takes_value;
    bool allowed;
  };
  const bool rope = a.cmd == command::rope, alibi = a.cmd == command::alibi, t5 = a.cmd == command::t5,
             sin = a.cmd == command::sinusoidal, tour = a.cmd == command::tour, model = a.cmd == command::model;
  const spec specs[] = {
      {"--json", false, !tour},
      {"--plot", true, !tour && !model},
      {"--config", true, rope || model},
      {"--supported-markdown", false, model},
      {"--seq-len", true, rope},
      {"--positions", true, rope || sin},
      {"--angle-mode", true, rope},
      {"--streams-plot", true, rope},
      {"--heads", true, alibi},
      {"--max-bias", true, alibi},
      {"--buckets", true, t5},
      {"--max-distance", true, t5},
      {"--causal", false, t5},
      {"--relative", true, t5},
      {"--d-model", true, sin},
      {"--layout", true, sin},
      {"--out", true, tour},
  };
  std::vector<std::string_view> seen;
  bool have_heads = false, have_d_model = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    std::string_view opt = args[i];
    std::optional<std::string_view> value;
    if (opt == "-h" || opt == "--help") {
      a.cmd = command::help;
      return a;
    }
    if (const auto eq = opt.find('='); opt.substr(0, 2) == "--" && eq != std::string_view::npos) {
      value = opt.substr(eq + 1);
      opt = opt.substr(0, eq);
    }
    const spec* s = nullptr;
    for (const auto& c : specs)
      if (c.name == opt) s = &c;
    if (!s || !s->allowed) {
      if (opt.substr(0, 1) != "-") throw usage_error(prog + ": unexpected argument '" + std::string(opt) + "'");
      throw usage_error(prog + ": unknown option " + std::string(opt) + " (see posenc --help)");
    }
    for (auto v : seen)
      if (v == opt) throw usage_error(prog + ": option " + std::string(opt) + " given twice");
    seen.push_back(opt);
    if (s->takes_value && !value) {
      if (i + 1 >= args.size()) throw usage_error(prog + ": option " + std::string(opt) + " needs a value");
      value = args[++i];
    } else if (!s->takes_value && value) {
      throw usage_error(prog + ": option " + std::string(opt) + " takes no value");
    }
    const std::string o(opt);
    const std::string_view v = value.value_or("");
    if (opt == "--json")
      a.json = true;
    else if (opt == "--supported-markdown")
      a.supported_markdown = true;
    else if (opt == "--plot") {
      if (v.empty()) throw usage_error(o + ": empty file name");
      a.plot = std::string(v);
    } else if (opt == "--streams-plot") {
      if (v.empty()) throw usage_error(o + ": empty file name");
      a.streams_plot = std::string(v);
    } else if (opt == "--config") {
      if (v.empty()) throw usage_error(o + ": empty file name");
      a.config = std::string(v);
    } else if (opt == "--seq-len")
      a.seq_len = detail::to_int(o, v, 1, std::int64_t{1} << 62);
    else if (opt == "--positions")
      a.positions = detail::to_list(o, v);
    else if (opt == "--angle-mode") {
      if (v == "exact")
        a.reference_fp32 = false;
      else if (v == "reference_fp32")
        a.reference_fp32 = true;
      else
        throw usage_error(o + " " + std::string(v) + ": expected exact or reference_fp32");
    } else if (opt == "--heads") {
      a.heads = detail::to_int(o, v, 1, max_heads);
      have_heads = true;
    } else if (opt == "--max-bias")
      a.max_bias = detail::to_double(o, v);
    else if (opt == "--buckets")
      a.buckets = static_cast<int>(detail::to_int(o, v, 1, max_buckets));
    else if (opt == "--max-distance")
      a.max_distance = static_cast<int>(detail::to_int(o, v, 1, 1 << 30));
    else if (opt == "--causal")
      a.causal = true;
    else if (opt == "--relative") {
      const auto colon = v.find(':', 1);
      if (colon == std::string_view::npos) throw usage_error(o + " " + std::string(v) + ": expected A:B");
      constexpr std::int64_t big = std::int64_t{1} << 62;
      const auto lo = detail::to_int(o, v.substr(0, colon), -big, big);
      const auto hi = detail::to_int(o, v.substr(colon + 1), -big, big);
      if (hi < lo) throw usage_error(o + " " + std::string(v) + ": B is less than A");
      if (static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) >= max_list)
        throw usage_error(o + " " + std::string(v) + ": more than " + std::to_string(max_list) + " entries");
      a.relative = std::pair{lo, hi};
    } else if (opt == "--d-model") {
      a.d_model = detail::to_int(o, v, 1, max_d_model);
      have_d_model = true;
    } else if (opt == "--layout") {
      if (v != "interleaved" && v != "concat" && v != "fairseq")
        throw usage_error(o + " " + std::string(v) + ": expected interleaved, concat or fairseq");
      a.layout = std::string(v);
    } else if (opt == "--out") {
      if (v.empty()) throw usage_error(o + ": empty directory name");
      a.out_dir = std::string(v);
    }
  }
  if (rope && a.config.empty()) throw usage_error(prog + ": --config FILE is required");
  if (model && a.config.empty() && !a.supported_markdown)
    throw usage_error(prog + ": --config FILE (or --supported-markdown) is required");
  if (model && !a.config.empty() && a.supported_markdown)
    throw usage_error(prog + ": --supported-markdown takes no --config");
  if (alibi && !have_heads) throw usage_error(prog + ": --heads N is required");
  if (sin && !have_d_model) throw usage_error(prog + ": --d-model D is required");
  return a;
}

}  // namespace posenc_cli
