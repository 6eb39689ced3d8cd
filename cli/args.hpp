// cli/args.hpp — the `posenc` command line on CLI11, parsed into a plain struct without exiting or
// printing.
//
// Every subcommand and option is declared once, in parse_args() and the add_*_options() it
// calls: name, help text, default and validator together, so `posenc <command> --help` is
// generated from the same declaration that parses. parse_args() is a library function (tested and
// fuzzed directly): it throws usage_error with a one-line message naming the problem; the caller
// prints it and exits 2. Sizes are capped so that no command line can make the tool allocate
// without bound. Syntax and messages: docs/cli.md. It does not run commands or read files
// (cli/run.hpp and cli/commands.hpp do).
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <posenc/version.hpp>

namespace posenc_cli {

/// A bad command line. what() is one line naming the option and the problem.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class command { help, version, rope, alibi, t5, sinusoidal, tour, model, lab };

inline constexpr std::size_t max_list = 65536;                       ///< positions / relative range entries
inline constexpr std::int64_t max_heads = 4096;                      ///< alibi --heads
inline constexpr std::int64_t max_d_model = 65536;                   ///< sinusoidal --d-model
inline constexpr std::int64_t max_buckets = 1 << 20;                 ///< t5 --buckets
inline constexpr std::int64_t max_position = std::int64_t{1} << 62;  ///< |entry| of a LIST or A:B

struct arguments {
  command cmd = command::help;
  std::string text;  ///< the help or version text, for command::help and command::version
  bool json = false;
  std::optional<std::string> plot;  ///< --plot FILE.svg

  // rope
  std::string config;                                  ///< --config FILE (config.json or .gguf)
  std::optional<std::int64_t> seq_len;                 ///< --seq-len N
  std::optional<std::vector<std::int64_t>> positions;  ///< --positions LIST (rope, sinusoidal)
  std::string angle_mode = "exact";                    ///< --angle-mode exact|reference_fp32
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
  bool generic = false;             ///< --generic (rope, model): read an unknown family's keys at face value

  // tour
  std::string out_dir = "posenc-tour";  ///< --out DIR

  // lab (names are checked by the lab itself)
  std::vector<std::string> lab_encoders = {"sinusoidal", "rope", "alibi", "nope"};  ///< --encoders NAMES
  std::vector<std::string> lab_scalings = {"rope-pi", "rope-yarn"};                 ///< --rope-scalings NAMES
  std::int64_t train_len = 64;                                                      ///< --train-len N
  std::int64_t steps = 1200;                                                        ///< --steps N
  std::int64_t batch = 16;                                                          ///< --batch N
  std::int64_t threads = 2;                                                         ///< --threads N
  std::int64_t eval_tokens = 8192;                                                  ///< --eval-tokens N
  std::string lab_eval = "windows";                                                 ///< --eval windows|sliding|both
  std::int64_t sliding_tokens = 256;                                                ///< --sliding-tokens N
  std::int64_t seed = 1;                                                            ///< --seed N
  std::int64_t seeds = 1;                                                           ///< --seeds N
  std::string corpus;                                                               ///< --corpus PATH
  std::string lab_out = "posenc-lab";                                               ///< --out DIR

  [[nodiscard]] bool reference_fp32() const { return angle_mode == "reference_fp32"; }
};

// ------------------------------------------------------------------------------------- value syntax
// Each parser returns an empty string on success, else the problem in words (CLI11 prefixes the
// option name). They back the validators below and are usable on their own.

namespace detail {

/// A base-10 integer with an optional sign, nothing else (no spaces, no 0x, no octal).
inline std::string parse_int(std::string_view s, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (!s.empty() && *b == '+') ++b;
  const auto [p, ec] = std::from_chars(b, e, out);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && p == e && (out < lo || out > hi)))
    return std::string(s) + ": out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (ec != std::errc{} || p != e || s.empty()) return std::string(s) + ": not an integer";
  return {};
}

/// "A:B" with A <= B and at most `max_list` values in it.
inline std::string parse_range(std::string_view s, std::int64_t& lo, std::int64_t& hi) {
  const auto colon = s.find(':', 1);  // from 1: "-3:4" starts with a sign, not a separator
  if (colon == std::string_view::npos) return std::string(s) + ": expected A:B";
  if (auto e = parse_int(s.substr(0, colon), -max_position, max_position, lo); !e.empty()) return e;
  if (auto e = parse_int(s.substr(colon + 1), -max_position, max_position, hi); !e.empty()) return e;
  if (hi < lo) return std::string(s) + ": B is less than A";
  if (static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) >= max_list)
    return std::string(s) + ": more than " + std::to_string(max_list) + " entries";
  return {};
}

/// "0,1,8:15" -> {0, 1, 8, ..., 15}: integers and inclusive ranges, at most `max_list` entries.
inline std::string parse_list(std::string_view s, std::vector<std::int64_t>& out) {
  out.clear();
  if (s.empty()) return "empty list";
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = s.find(',', start);
    const std::string_view item =
        s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) return std::string(s) + ": empty list item";
    std::int64_t a = 0, b = 0;
    if (item.find(':', 1) == std::string_view::npos) {
      if (auto e = parse_int(item, -max_position, max_position, a); !e.empty()) return e;
      b = a;
    } else {
      if (auto e = parse_range(item, a, b); !e.empty())
        return e.find("B is less than A") != std::string::npos ? std::string(item) + ": range end before its start" : e;
    }
    // a <= b here; the count is computed unsigned so that no subtraction can overflow.
    if (static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a) >= max_list - out.size())
      return "more than " + std::to_string(max_list) + " entries";
    for (std::int64_t v = a;; ++v) {
      out.push_back(v);
      if (v == b) break;
    }
    if (comma == std::string_view::npos) return {};
    start = comma + 1;
  }
}

/// A finite number of magnitude at most 1e300, in the C++ from_chars syntax (no hex, no spaces).
inline std::string parse_number(std::string_view s, double& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty() || !(out == out) || out > 1e300 || out < -1e300)
    return std::string(s) + ": not a finite number";
  return {};
}

}  // namespace detail

// ---------------------------------------------------------------------------------------- validators
// CLI11 Validators (transforms): they check the text and, where CLI11's own conversion would read
// it differently, rewrite it to a form that converts to exactly the checked value.

/// Integer in [lo, hi]. Rewritten to plain decimal: CLI11 converts with strtoll base 0, which would
/// read "010" as octal 8 and accept " 5" or "0x10".
inline CLI::Validator integer(std::int64_t lo, std::int64_t hi) {
  return {[lo, hi](std::string& s) {
            std::int64_t v = 0;
            auto e = detail::parse_int(s, lo, hi, v);
            if (e.empty()) s = std::to_string(v);
            return e;
          },
          hi >= max_position ? ">=" + std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi), "integer"};
}

/// Finite number, |x| <= 1e300. Rewritten to hexadecimal floating point: CLI11 converts with strtold
/// and then casts to double, two roundings that can differ from the one correct rounding; a hex
/// float is exact in both steps.
inline CLI::Validator finite_number() {
  return {[](std::string& s) {
            double v = 0;
            auto e = detail::parse_number(s, v);
            if (e.empty()) {
              char b[64];
              const auto r = std::to_chars(b, b + sizeof b, v, std::chars_format::hex);
              const bool neg = std::signbit(v);  // to_chars writes the '-', before which "0x" goes
              s = (neg ? "-0x" : "0x") + std::string(neg ? b + 1 : b, r.ptr);
            }
            return e;
          },
          "", "number"};
}

/// LIST: comma-separated integers or inclusive ranges A:B, e.g. 0,1,8:15; at most max_list entries.
/// The text is left as given; list_values() expands it once validated.
inline CLI::Validator int_list() {
  return {[](std::string& s) {
            std::vector<std::int64_t> v;
            return detail::parse_list(s, v);
          },
          "", "list"};
}

/// A:B, A <= B, at most max_list values.
inline CLI::Validator int_range() {
  return {[](std::string& s) {
            std::int64_t a = 0, b = 0;
            return detail::parse_range(s, a, b);
          },
          "", "range"};
}

/// A file or directory name: anything but the empty string.
inline CLI::Validator non_empty(std::string what) {
  return {[what](std::string& s) { return s.empty() ? "empty " + what : std::string(); }, "", "non_empty"};
}

/// The values of a LIST that int_list() accepted.
inline std::vector<std::int64_t> list_values(std::string_view s) {
  std::vector<std::int64_t> v;
  if (auto e = detail::parse_list(s, v); !e.empty()) throw usage_error(e);
  return v;
}

// ------------------------------------------------------------------------------------------- parser

inline std::string version_text() {
  return "posenc " + std::to_string(POSENC_VERSION_MAJOR) + "." + std::to_string(POSENC_VERSION_MINOR) + "." +
         std::to_string(POSENC_VERSION_PATCH);
}

namespace detail {

/// An option stored into a std::optional (CLI11 2.1 binds plain variables only).
template <class T>
CLI::Option* add_optional(CLI::App& app, const std::string& name, std::optional<T>& dst, const std::string& help) {
  return app.add_option_function<T>(
      name, [&dst](const T& v) { dst = v; }, help);
}

/// The one-line message for a command line CLI11 refused. CLI11's own text is kept except where
/// it misleads: extra arguments (CLI11 lists them in reverse order), a missing or unknown command,
/// and an option given twice ("At Most 1 required but received 2").
inline std::string message(const CLI::ParseError& e, const CLI::App& app, const CLI::App* sub,
                           std::span<const std::string_view> args) {
  if (!sub) {
    if (args.empty()) return "no command given (try: posenc --help)";
    const std::string first(args[0]);
    if (first.empty() || first[0] != '-')
      return "unknown command '" + first + "' (commands: rope, alibi, t5, sinusoidal, model, tour, lab)";
    if (!app.remaining().empty() || dynamic_cast<const CLI::RequiredError*>(&e))
      return "unknown option " + first + " (try: posenc --help)";
    return std::string(e.what()) + " (try: posenc --help)";
  }
  const std::string prog = "posenc " + sub->get_name();
  // Extra arguments are the subcommand's, or after "--" its parent's.
  const auto extras = sub->remaining().empty() ? app.remaining() : sub->remaining();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) && !extras.empty()) {
    const std::string x = extras.front();
    if (!x.empty() && x[0] == '-') return prog + ": unknown option " + x + " (see " + prog + " --help)";
    return prog + ": unexpected argument '" + x + "'";
  }
  std::string m = e.what();
  if (const auto at = m.find(": At Most 1 required but received"); at != std::string::npos)
    m = m.substr(0, at) + " given more than once";
  return prog + ": " + m;
}

/// The subcommands, added to `app` after its footer and option defaults (they inherit both).
struct subcommand_apps {
  CLI::App *rope, *alibi, *t5, *sinusoidal, *model, *tour, *lab;
};

inline subcommand_apps add_subcommands(CLI::App& app) {
  CLI::App* rope = app.add_subcommand(
      "rope",
      "A model's RoPE schedule from a Hugging Face config.json or a .gguf file: per pair the inverse frequency, "
      "wavelength and its ratio to the unscaled one; attention scaling; softmax-scale multiplier; cos and sin at "
      "the positions (magnitude included); for per-layer models each layer's schedule.");
  CLI::App* alibi = app.add_subcommand("alibi", "ALiBi slopes per head.");
  CLI::App* t5 =
      app.add_subcommand("t5", "T5 relative-position buckets for relative positions A..B (key minus query).");
  CLI::App* sinusoidal = app.add_subcommand("sinusoidal", "Sinusoidal encodings, one row per position.");
  CLI::App* model = app.add_subcommand(
      "model",
      "What posenc does in each layer of a model (config.json or .gguf): layer type, RoPE (base, scaling, layout, "
      "rotary dim, magnitude), window or chunk, sinks, softmax scale, soft-cap, temperature, ALiBi; or, with "
      "--supported-markdown, the supported-models table generated from the architecture table.");
  CLI::App* tour = app.add_subcommand(
      "tour", "Every encoder through the reference attention on a built-in example; writes SVG plots to DIR.");
  CLI::App* lab = app.add_subcommand(
      "lab",
      "Trains one tiny byte-level transformer per encoding at length L and evaluates bits per byte at L, 2L, 4L, "
      "8L and 16L on evaluation text; writes DIR/lab.md and DIR/lab.svg (docs/lab.md).");
  return {rope, alibi, t5, sinusoidal, model, tour, lab};
}

/// The options several subcommands share (one declaration each, added where they apply). Returns
/// the --config options of rope and model.
inline std::pair<CLI::Option*, CLI::Option*> add_shared_options(const subcommand_apps& sc, arguments& a) {
  CLI::App *rope = sc.rope, *alibi = sc.alibi, *t5 = sc.t5, *sinusoidal = sc.sinusoidal, *model = sc.model;
  for (CLI::App* s : {rope, alibi, t5, sinusoidal, model})
    s->add_flag("--json", a.json, "Print one JSON object instead of the text report")->multi_option_policy();
  for (CLI::App* s : {rope, alibi, t5, sinusoidal})
    detail::add_optional(*s, "--plot", a.plot, "Write an SVG plot to FILE")
        ->type_name("FILE.svg")
        ->check(non_empty("file name"));
  CLI::Option* rope_config = nullptr;
  CLI::Option* model_config = nullptr;
  for (CLI::App* s : {rope, model}) {
    (s == rope ? rope_config : model_config) =
        s->add_option("--config", a.config, "The model: a Hugging Face config.json or a .gguf file")
            ->type_name("FILE")
            ->check(non_empty("file name"));
    s->add_flag("--generic", a.generic,
                "Read a model type posenc does not know at face value (every guess listed as a warning) instead "
                "of refusing it");
  }
  for (CLI::App* s : {rope, sinusoidal})
    s->add_option_function<std::string>(
         "--positions", [&a](const std::string& v) { a.positions = list_values(v); },
         s == rope ? "Positions to print cos and sin at [default: 0, 1 and seq_len - 1]"
                   : "Positions (table rows) to print [default: 0:15]")
        ->type_name("LIST")
        ->check(int_list());
  return {rope_config, model_config};
}

inline void add_rope_options(CLI::App* rope, CLI::Option* rope_config, arguments& a) {
  rope_config->required();
  detail::add_optional(*rope, "--seq-len", a.seq_len,
                       "Sequence length for length-dependent scalings (dynamic NTK, LongRoPE) [default: from the "
                       "positions]")
      ->type_name("N")
      ->transform(integer(1, max_position));
  rope->add_option("--angle-mode", a.angle_mode,
                   "exact: double-precision angles; reference_fp32: the reference's float32 inverse frequencies, "
                   "angles and cos/sin")
      ->capture_default_str()
      ->check(CLI::IsMember({"exact", "reference_fp32"}));
  detail::add_optional(*rope, "--streams-plot", a.streams_plot,
                       "Write an SVG of which mRoPE stream (t, h, w) each pair follows")
      ->type_name("FILE.svg")
      ->check(non_empty("file name"));
}

inline void add_alibi_t5_options(CLI::App* alibi, CLI::App* t5, arguments& a) {
  alibi->add_option("--heads", a.heads, "Number of attention heads")
      ->required()
      ->type_name("N")
      ->transform(integer(1, max_heads));
  alibi->add_option("--max-bias", a.max_bias, "The slopes' max_bias (8 in the ALiBi paper)")
      ->capture_default_str()
      ->type_name("B")
      ->transform(finite_number());

  // -- t5
  t5->add_option("--buckets", a.buckets, "num_buckets")
      ->capture_default_str()
      ->type_name("N")
      ->transform(integer(1, max_buckets));
  t5->add_option("--max-distance", a.max_distance, "max_distance")
      ->capture_default_str()
      ->type_name("D")
      ->transform(integer(1, std::int64_t{1} << 30));
  t5->add_flag("--causal", a.causal, "Unidirectional (decoder) buckets; the default is bidirectional (encoder)")
      ->multi_option_policy();
  t5->add_option_function<std::string>(
        "--relative",
        [&a](const std::string& v) {
          std::int64_t lo = 0, hi = 0;
          (void)detail::parse_range(v, lo, hi);  // int_range() has accepted v
          a.relative = std::pair{lo, hi};
        },
        "Relative positions A..B to print [default: -max_distance:max_distance, at most 65536 values]")
      ->type_name("A:B")
      ->check(int_range());
}

/// sinusoidal, model and tour.
inline void add_table_options(const subcommand_apps& sc, CLI::Option* model_config, arguments& a) {
  CLI::App *sinusoidal = sc.sinusoidal, *model = sc.model, *tour = sc.tour;
  sinusoidal->add_option("--d-model", a.d_model, "Model width d_model")
      ->required()
      ->type_name("D")
      ->transform(integer(1, max_d_model));
  sinusoidal
      ->add_option("--layout", a.layout,
                   "interleaved: [sin, cos] per frequency (DistilBERT); concat: all sin then all cos (Marian); "
                   "fairseq: concat with fairseq's frequencies and padding row")
      ->capture_default_str()
      ->check(CLI::IsMember({"interleaved", "concat", "fairseq"}));

  // -- model
  model
      ->add_flag("--supported-markdown", a.supported_markdown,
                 "Print the supported-models table (markdown) instead of a model's report")
      ->multi_option_policy()
      ->excludes(model_config);

  // -- tour
  tour->add_option("--out", a.out_dir, "Directory for the SVG plots")
      ->capture_default_str()
      ->type_name("DIR")
      ->check(non_empty("directory name"));
}

inline void add_lab_options(CLI::App* lab, arguments& a) {
  const auto names = [](std::vector<std::string>& dst) {
    return [&dst](const std::string& v) {
      dst.clear();
      std::size_t at = 0;
      while (at <= v.size()) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        if (comma > at) dst.push_back(v.substr(at, comma - at));
        at = comma + 1;
      }
      if (dst.size() == 1 && dst[0] == "none") dst.clear();
    };
  };
  lab->add_option_function<std::string>("--encoders", names(a.lab_encoders),
                                        "Encodings to train, comma-separated: nope, sinusoidal, learned, rope, "
                                        "alibi, t5, xpos, fire, kerple, kerple-power, deberta, cope "
                                        "[default: sinusoidal,rope,alibi,nope]")
      ->type_name("NAMES")
      ->check(non_empty("list"));
  lab->add_option_function<std::string>("--rope-scalings", names(a.lab_scalings),
                                        "RoPE scalings applied at evaluation to the RoPE model: rope-pi, rope-yarn, "
                                        "or none [default: rope-pi,rope-yarn]")
      ->type_name("NAMES")
      ->check(non_empty("list"));
  lab->add_option("--train-len", a.train_len, "Training length L (bytes)")
      ->capture_default_str()
      ->type_name("N")
      ->transform(integer(8, 4096));
  lab->add_option("--steps", a.steps, "Optimiser steps per model")
      ->capture_default_str()
      ->type_name("N")
      ->transform(integer(1, 1000000));
  lab->add_option("--batch", a.batch, "Sequences per step")
      ->capture_default_str()
      ->type_name("N")
      ->transform(integer(1, 4096));
  lab->add_option("--threads", a.threads, "Models trained side by side")
      ->capture_default_str()
      ->type_name("N")
      ->transform(integer(1, 256));
  lab->add_option("--eval-tokens", a.eval_tokens, "Predicted bytes per evaluation length")
      ->capture_default_str()
      ->type_name("N")
      ->transform(integer(1, 1 << 24));
  lab->add_option("--eval", a.lab_eval,
                  "windows: non-overlapping windows of E bytes, every position scored; sliding: the ALiBi paper's "
                  "sliding window at stride 1, each scored byte predicted from the E bytes before it; or both")
      ->capture_default_str()
      ->check(CLI::IsMember({"windows", "sliding", "both"}));
  lab->add_option("--sliding-tokens", a.sliding_tokens,
                  "Predicted bytes per evaluation length in the sliding-window evaluation (a forward pass each)")
      ->capture_default_str()
      ->type_name("N")
      ->transform(integer(1, 1 << 20));
  lab->add_option("--seed", a.seed, "Seed of every random choice")
      ->capture_default_str()
      ->type_name("N")
      ->transform(integer(0, std::numeric_limits<std::int64_t>::max()));
  lab->add_option("--seeds", a.seeds,
                  "Models per encoding (seeds --seed, --seed + 1, ...): the table gives mean and spread")
      ->capture_default_str()
      ->type_name("N")
      ->transform(integer(1, 64));
  lab->add_option("--corpus", a.corpus, "A text file or a directory of them [default: /usr/share/common-licenses]")
      ->type_name("PATH")
      ->check(non_empty("path"));
  lab->add_option("--out", a.lab_out, "Directory for lab.md and lab.svg")
      ->capture_default_str()
      ->type_name("DIR")
      ->check(non_empty("directory name"));
}

}  // namespace detail

/// Parses argv[1..] (the program name excluded). Throws usage_error for anything it cannot accept;
/// --help and --version return command::help / command::version with the text to print.
[[nodiscard]] inline arguments parse_args(std::span<const std::string_view> args) {
  arguments a;
  CLI::App app(
      "posenc — inspect what positional encodings compute (RoPE and its scalings, ALiBi, T5, "
      "sinusoidal) and what posenc does in each layer of a model.",
      "posenc");
  // Set before the subcommands are added: they inherit both.
  app.footer(
      "LIST: comma-separated integers or inclusive ranges A:B, e.g. 0,1,8:15 (at most 65536 entries).\n"
      "Options also take the --name=value form. Bad input prints one line on stderr and exits with\n"
      "status 2. More: docs/cli.md.");
  // An option given twice is an error (flags are set to Throw one by one: add_flag makes them TakeLast).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app.set_version_flag("--version", version_text(), "Print the version and exit");
  app.require_subcommand(1);

  const detail::subcommand_apps sc = detail::add_subcommands(app);
  const auto [rope_config, model_config] = detail::add_shared_options(sc, a);
  detail::add_rope_options(sc.rope, rope_config, a);
  detail::add_alibi_t5_options(sc.alibi, sc.t5, a);
  detail::add_table_options(sc, model_config, a);
  detail::add_lab_options(sc.lab, a);
  const std::pair<CLI::App*, command> subcommands[] = {{sc.rope, command::rope},   {sc.alibi, command::alibi},
                                                       {sc.t5, command::t5},       {sc.sinusoidal, command::sinusoidal},
                                                       {sc.model, command::model}, {sc.tour, command::tour},
                                                       {sc.lab, command::lab}};

  const auto selected = [&]() -> const std::pair<CLI::App*, command>* {
    for (const auto& s : subcommands)
      if (s.first->parsed()) return &s;
    return nullptr;
  };

  // CLI11 takes the arguments in reverse order.
  std::vector<std::string> argv(args.rbegin(), args.rend());
  try {
    app.parse(argv);
  } catch (const CLI::CallForHelp&) {
    a.cmd = command::help;
    a.text = app.help();  // the selected subcommand's help, if any
    return a;
  } catch (const CLI::CallForVersion&) {
    a.cmd = command::version;
    a.text = version_text() + "\n";
    return a;
  } catch (const CLI::ParseError& e) {
    throw usage_error(detail::message(e, app, selected() ? selected()->first : nullptr, args));
  }
  const auto* s = selected();
  if (!s) throw usage_error("no command given (try: posenc --help)");  // require_subcommand(1) makes this unreachable
  a.cmd = s->second;
  if (a.cmd == command::model && a.config.empty() && !a.supported_markdown)
    throw usage_error("posenc model: --config FILE (or --supported-markdown) is required");
  return a;
}

}  // namespace posenc_cli
