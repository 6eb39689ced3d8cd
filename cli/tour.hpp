// cli/tour.hpp — `posenc tour`: every encoder through the reference attention on a built-in example.
//
// No files needed: a small model (4 heads x 32 dims, trained length 64) and a deterministic
// pseudo-random sequence are built in. For each encoder it reports the hook it uses, its parameters
// and a locality / extrapolation figure (attention mass within 16 tokens of the query, at the
// training length and at 4x it), checks RoPE's relative invariance numerically, and writes SVG plots
// into the output folder. It demonstrates the library; it is not a benchmark or a quality test.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <posenc/attention/sdpa.hpp>
#include <posenc/concepts.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/mrope_index.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "commands.hpp"

namespace posenc_cli {

namespace tour_detail {

/// Prints "posenc tour: <label> ..." on `err` if the step is still running after one second.
class progress {
 public:
  progress(std::ostream& err, std::string label) : err_(err), label_(std::move(label)), start_(clock::now()) {
    watcher_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(m_);
      if (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) {
        err_ << "posenc tour: " << label_ << " ..." << std::endl;
        announced_ = true;
      }
    });
  }
  ~progress() {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    watcher_.join();
    if (announced_) {
      const double s = std::chrono::duration<double>(clock::now() - start_).count();
      err_ << "posenc tour: " << label_ << " done (" << fmt(std::round(s * 10) / 10) << " s)" << std::endl;
    }
  }
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

 private:
  using clock = std::chrono::steady_clock;
  std::ostream& err_;
  std::string label_;
  clock::time_point start_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  bool announced_ = false;
  std::thread watcher_;
};

/// Deterministic values in [-1, 1) (splitmix64), so the tour prints the same numbers everywhere.
inline double noise(std::uint64_t i) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

constexpr std::ptrdiff_t heads = 4, head_dim = 32, d_model = heads * head_dim;
constexpr std::int64_t train_len = 64, window = 16;
constexpr double shared = 2.0;  ///< weight of the direction all tokens share

/// The built-in sequence: token embeddings x [n, d_model] and fixed projections.
struct example {
  std::vector<double> wq, wk, wv;  // [d_model, d_model]
  example() {
    const double s = 1.0 / std::sqrt(static_cast<double>(d_model));
    for (std::size_t i = 0; i < static_cast<std::size_t>(d_model * d_model); ++i) {
      wq.push_back(s * noise(1'000'000 + i));
      wk.push_back(s * noise(2'000'000 + i));
      wv.push_back(s * noise(3'000'000 + i));
    }
  }
  static std::vector<double> tokens(std::int64_t n) {
    std::vector<double> x(static_cast<std::size_t>(n * d_model));
    // Every token shares one direction (as real embeddings share a mean), so q.k has a content-
    // independent part whose decay with distance is the encoder's own doing.
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = noise(i) + shared * noise(9'000'000 + i % d_model);
    return x;
  }
  static std::vector<double> project(const std::vector<double>& x, const std::vector<double>& w, std::int64_t n) {
    std::vector<double> y(static_cast<std::size_t>(n * d_model), 0.0);
    for (std::int64_t t = 0; t < n; ++t)
      for (std::ptrdiff_t o = 0; o < d_model; ++o) {
        double acc = 0;
        for (std::ptrdiff_t c = 0; c < d_model; ++c)
          acc += x[static_cast<std::size_t>(t * d_model + c)] * w[static_cast<std::size_t>(c * d_model + o)];
        y[static_cast<std::size_t>(t * d_model + o)] = acc;
      }
    return y;
  }
};

/// Attention weights [heads, n, n] of the causal self-attention of the built-in sequence of n
/// tokens under `enc` (additive encoders are added to the embeddings first, as models do).
template <class E>
std::vector<double> attention_weights(const example& ex, const E& enc, std::int64_t n, std::optional<double> scale) {
  std::vector<double> x = example::tokens(n);
  if constexpr (posenc::additive_encoding<E>) {
    for (std::int64_t t = 0; t < n; ++t)
      enc.add(t, std::span<double>(x.data() + t * d_model, static_cast<std::size_t>(d_model)));
  }
  const auto q = example::project(x, ex.wq, n), k = example::project(x, ex.wk, n), v = example::project(x, ex.wv, n);
  std::vector<double> out(q.size()), w(static_cast<std::size_t>(heads * n * n));
  using view = posenc::tensor_view<const double>;
  posenc::attention_options o{.scale = scale, .causal = true, .weights = w};
  auto attend = [&](const auto& e) {
    posenc::sdpa(view::thd(q.data(), n, heads, head_dim), view::thd(k.data(), n, heads, head_dim),
                 view::thd(v.data(), n, heads, head_dim),
                 posenc::tensor_view<double>::thd(out.data(), n, heads, head_dim), e, o);
  };
  if constexpr (posenc::additive_encoding<E>)
    attend(posenc::no_position{});
  else
    attend(enc);
  return w;
}

/// Mean attention mass on keys less than `window` tokens back, over heads and the later half of
/// the queries (where a window is a small part of the causal context).
inline double local_mass(const std::vector<double>& w, std::int64_t n) {
  double total = 0;
  std::int64_t rows = 0;
  for (std::ptrdiff_t h = 0; h < heads; ++h)
    for (std::int64_t i = n / 2; i < n; ++i) {
      double m = 0;
      for (std::int64_t j = std::max<std::int64_t>(0, i - window + 1); j <= i; ++j)
        m += w[static_cast<std::size_t>((h * n + i) * n + j)];
      total += m;
      ++rows;
    }
  return total / static_cast<double>(rows);
}

inline std::string hooks_text(unsigned h) {
  std::string s;
  auto add = [&](unsigned bit, const char* name) {
    if (h & bit) s += (s.empty() ? "" : "+") + std::string(name);
  };
  add(posenc::hook_additive, "additive");
  add(posenc::hook_qk_transform, "qk_transform");
  add(posenc::hook_score_bias, "score_bias");
  add(posenc::hook_relative_kv, "relative_kv");
  return s.empty() ? "none" : s;
}

inline std::string pct(double v) {
  char b[16];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * v);
  return b;
}

/// One row of the tour's table.
struct tour_row {
  std::string name, hook, params, at_l, at_4l;
};

/// Every encoder through the reference attention on the built-in example: its table row and its
/// weight map (head 0).
inline void encoder_rows(std::ostream& err, std::vector<tour_row>& rows, std::vector<svg::panel>& panels) {
  using namespace posenc;
  const example ex;
  const std::int64_t L = train_len, L4 = 4 * train_len;
  auto run = [&](const std::string& name, const auto& enc, const std::string& params, std::optional<double> scale) {
    using E = std::decay_t<decltype(enc)>;
    progress p(err, "attention with " + name);
    tour_row r{name, hooks_text(hooks_of<E>), params, "", ""};
    const auto w = attention_weights(ex, enc, L, scale);
    r.at_l = pct(local_mass(w, L));
    try {
      r.at_4l = pct(local_mass(attention_weights(ex, enc, L4, scale), L4));
    } catch (const config_error& e) {
      r.at_4l = "n/a (beyond table)";
    }
    svg::panel pn{name, static_cast<std::size_t>(L), static_cast<std::size_t>(L), {}};
    pn.v.assign(w.begin(), w.begin() + L * L);  // head 0
    for (double& v : pn.v) v = std::sqrt(v);    // sqrt: small weights stay visible
    panels.push_back(std::move(pn));
    rows.push_back(std::move(r));
  };
  run("none (NoPE)", no_position{}, "-", std::nullopt);
  const sinusoidal sin_enc(sinusoidal_config::distilbert(d_model));
  run("sinusoidal", sin_enc, "d_model 128, interleaved, base 10000", std::nullopt);
  std::vector<double> table(static_cast<std::size_t>(L * d_model));
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = 0.5 * noise(4'000'000 + i);
  const learned_absolute learned({.max_len = L, .model_dim = d_model}, std::span<const double>(table));
  run("learned absolute", learned, "table 64 x 128 (random), error beyond it", std::nullopt);
  const rope rope_plain(rope_config{.head_dim = head_dim, .theta = 10000});
  run("RoPE", rope_plain, "theta 10000, half-split, R = 32", std::nullopt);
  const rope rope_yarn(rope_config{
      .head_dim = head_dim, .theta = 10000, .scaling = yarn_scaling{.factor = 4, .original_max_position = L}});
  run("RoPE + YaRN", rope_yarn, "factor 4, L0 64, beta 32/1, M " + fmt(rope_yarn.base_frequencies().attention_scaling),
      std::nullopt);
  const xpos xpos_enc(xpos_config{.head_dim = head_dim});
  run("xPos", xpos_enc, "gamma 0.4, scale_base 512, interleaved, centre 0", std::nullopt);
  const alibi alibi_enc(alibi_config{.num_heads = heads});
  run("ALiBi", alibi_enc, "slopes 1/4 1/16 1/64 1/256, symmetric", std::nullopt);
  run("RoPE + ALiBi", combine(rope_plain, alibi_enc), "combined<rope, alibi>", std::nullopt);
  std::vector<double> t5_table(static_cast<std::size_t>(32 * heads));
  for (std::size_t b = 0; b < 32; ++b)
    for (std::size_t h = 0; h < static_cast<std::size_t>(heads); ++h)
      t5_table[b * heads + h] = -0.12 * static_cast<double>(b) * static_cast<double>(h + 1);
  const t5_bias t5_enc(
      t5_bias_config{.num_buckets = 32, .max_distance = 128, .bidirectional = false, .num_heads = heads}, t5_table);
  run("T5 bias", t5_enc, "32 buckets, max_distance 128, causal, table -0.12*b*(h+1), scale 1", 1.0);
  const auto shaw_cfg = shaw_relative_config::symmetric(16, head_dim);
  std::vector<double> rk(static_cast<std::size_t>(33 * head_dim)), rv(rk.size());
  for (std::size_t i = 0; i < rk.size(); ++i) {
    rk[i] = 0.3 * noise(5'000'000 + i);
    rv[i] = 0.3 * noise(6'000'000 + i);
  }
  const shaw_relative shaw(shaw_cfg, rk, rv);
  run("Shaw relative", shaw, "k_max 16, random tables, shared heads", std::nullopt);
}

/// RoPE relative invariance: <R(a)q, R(b)k> depends on b - a only, checked up to position 1e9.
inline void rope_invariance(std::ostream& out, std::ostream& err) {
  using namespace posenc;
  progress p(err, "RoPE relative-invariance check");
  const std::ptrdiff_t D = 128;
  const rope r(rope_config{.head_dim = static_cast<int>(D), .theta = 500000});
  std::vector<double> q0(D), k0(D);
  for (std::ptrdiff_t i = 0; i < D; ++i) {
    q0[static_cast<std::size_t>(i)] = noise(7'000'000 + static_cast<std::uint64_t>(i));
    k0[static_cast<std::size_t>(i)] = noise(8'000'000 + static_cast<std::uint64_t>(i));
  }
  auto score = [&](std::int64_t pq, std::int64_t pk) {
    std::vector<double> q = q0, k = k0;
    const std::int64_t pa[] = {pq}, pb[] = {pk};
    r.transform_q(tensor_view<double>::thd(q.data(), 1, 1, D), pa);
    r.transform_k(tensor_view<double>::thd(k.data(), 1, 1, D), pb);
    double s = 0;
    for (std::ptrdiff_t i = 0; i < D; ++i) s += q[static_cast<std::size_t>(i)] * k[static_cast<std::size_t>(i)];
    return s;
  };
  double worst = 0, scale = 0;
  std::int64_t worst_pos = 0;
  int n = 0;
  for (std::int64_t p0 : {0LL, 7LL, 100LL, 4095LL})
    for (std::int64_t d : {0LL, 1LL, 13LL, 500LL})
      for (std::int64_t t : {1LL, 1000LL, 65536LL, 1000000LL, 1000000000LL}) {
        const double s0 = score(p0, p0 + d), s1 = score(p0 + t, p0 + d + t);
        scale = std::max(scale, std::fabs(s0));
        if (std::fabs(s1 - s0) > worst) worst = std::fabs(s1 - s0), worst_pos = p0 + d + t;
        ++n;
      }
  out << "\nRoPE relative invariance (head_dim 128, theta 5e5, exact angles): max |<R(a)q,R(b)k> - "
         "<R(a+t)q,R(b+t)k>| = "
      << svg::tick(worst) << " over " << n << " (a, b, t) with positions up to 1e9 (|q.k| up to " << svg::tick(scale)
      << "; worst at position " << worst_pos << ")\n";
}

/// Today's models: multimodal positions, per-layer schedules, attention temperature.
inline void todays_models(std::ostream& out, std::ostream& err) {
  using namespace posenc;
  progress p(err, "today's models");
  constexpr std::int64_t VS = 151652, IM = 151655, VE = 151653;
  const std::vector<std::int64_t> ids = {1, 2, VS, IM, IM, IM, IM, IM, IM, VE, 3, 4};
  const std::vector<std::array<std::int64_t, 3>> grid = {{1, 4, 6}};
  const auto pid = mrope_rope_index(
      {}, {.batch = 1, .seq = static_cast<std::ptrdiff_t>(ids.size()), .input_ids = ids, .image_grid_thw = grid});
  out << "\nmRoPE position ids (Qwen2-VL get_rope_index) for text, a 1x4x6-patch image (2x3 merged tokens), text:\n";
  const char* names[] = {"  t", "  h", "  w"};
  for (int st = 0; st < 3; ++st) {
    out << names[st] << ":";
    for (std::size_t c = 0; c < ids.size(); ++c) out << ' ' << pid.ids[st * ids.size() + c];
    out << "\n";
  }
  out << "  decoding continues every stream at cache position + delta (delta = " << pid.delta[0] << ")\n";
  const attention_temperature l4({.head_dim = 128});
  const attention_temperature m3({.head_dim = 128, .rule = temperature_rule::llama4_beta, .floor_scale = 16384});
  out << "attention temperature (query scale) at positions 0, 8191, 16383, 65535: Llama 4 NoPE layers";
  for (std::int64_t q : {0, 8191, 16383, 65535}) out << ' ' << svg::tick(l4.factor(q));
  out << "; Mistral 3 (beta 0.1, L0 16384)";
  for (std::int64_t q : {0, 8191, 16383, 65535}) out << ' ' << svg::tick(m3.factor(q));
  out << "\n(`posenc rope --config` prints the per-layer schedule of Gemma 3, Llama 4, gpt-oss and Qwen-VL "
         "configs)\n";
}

/// Writes `text` to `path` (a config the tour plots from); config_error naming --out when it cannot.
inline void write_config(const std::string& path, const char* text) {
  std::ofstream f(path);
  f << text;
  if (!f) throw posenc::config_error("--out", path + ": cannot write file");
}

/// The tour's plots, written into dir; returns their paths.
inline std::vector<std::string> write_plots(const std::string& dir, const std::vector<svg::panel>& panels,
                                            std::ostream& err) {
  progress p(err, "writing plots");
  std::vector<std::string> written;
  std::ostringstream sink;
  arguments r;
  r.cmd = command::rope;
  r.config = dir + "llama3_1_8b_config.json";
  write_config(r.config,
               R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
 "max_position_embeddings": 131072, "rope_theta": 500000.0,
 "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192}}
)");
  r.plot = dir + "rope_wavelengths.svg";
  run_rope(r, sink);
  written.push_back(*r.plot);
  arguments vl;
  vl.cmd = command::rope;
  vl.config = dir + "qwen2_5_vl_config.json";
  write_config(vl.config,
               R"({"model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
 "num_hidden_layers": 28, "max_position_embeddings": 128000, "rope_theta": 1000000.0,
 "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
)");
  vl.streams_plot = dir + "mrope_streams.svg";
  run_rope(vl, sink);
  written.push_back(*vl.streams_plot);
  arguments al;
  al.heads = 8;
  al.plot = dir + "alibi_heads.svg";
  run_alibi(al, sink);
  written.push_back(*al.plot);
  arguments t5;
  t5.plot = dir + "t5_buckets.svg";
  t5.relative = std::pair<std::int64_t, std::int64_t>{-16, 16};
  run_t5(t5, sink);
  written.push_back(*t5.plot);
  arguments s;
  s.d_model = 128;
  std::vector<std::int64_t> pos;
  for (std::int64_t i = 0; i < 128; ++i) pos.push_back(i);
  s.positions = pos;
  s.plot = dir + "sinusoidal.svg";
  run_sinusoidal(s, sink);
  written.push_back(*s.plot);
  const std::string att = dir + "attention.svg";
  save_plot(
      svg::heatmaps("Causal attention weights, head 0, built-in sequence of " + std::to_string(train_len) + " tokens",
                    "sqrt(weight) per query (rows) and key (columns); locality shows as mass near the diagonal", panels,
                    0, 1, false, "key position", "query position", 4),
      att);
  written.push_back(att);
  return written;
}

}  // namespace tour_detail

/// The README demo. Writes the report to `out`, progress to `err`, plots into a.out_dir.
inline void run_tour(const arguments& a, std::ostream& out, std::ostream& err) {
  namespace td = tour_detail;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(a.out_dir, ec);
  if (ec || !fs::is_directory(a.out_dir)) throw posenc::config_error("--out", a.out_dir + ": cannot create directory");

  out << "posenc tour — every encoder through the reference attention\n"
      << "  built-in model: " << td::heads << " heads x " << td::head_dim << " dims (d_model " << td::d_model
      << "), causal, trained length L = " << td::train_len << "; pseudo-random tokens and projections\n"
      << "  local = mean attention mass on the " << td::window
      << " most recent keys (later half of the queries); uniform attention gives about "
      << td::pct(static_cast<double>(td::window) / (0.75 * static_cast<double>(td::train_len))) << " at L and "
      << td::pct(static_cast<double>(td::window) / (3.0 * static_cast<double>(td::train_len))) << " at 4L\n\n";
  std::vector<td::tour_row> rows;
  std::vector<svg::panel> panels;
  td::encoder_rows(err, rows, panels);
  out << pad("encoder", 18) << "  " << std::string("hook") << std::string(22, ' ')
      << "local@L    local@4L                 parameters\n";
  for (const auto& r : rows) {
    std::string hook = r.hook;
    hook.resize(std::max<std::size_t>(hook.size(), 25), ' ');
    std::string at4 = r.at_4l;
    at4.resize(std::max<std::size_t>(at4.size(), 24), ' ');
    out << pad(r.name, 18) << "  " << hook << " " << pad(r.at_l, 7) << "    " << at4 << " " << r.params << "\n";
  }
  td::rope_invariance(out, err);
  td::todays_models(out, err);
  out << "\nplots written:\n";
  for (const auto& w : td::write_plots(a.out_dir + "/", panels, err)) out << "  " << w << "\n";
}

}  // namespace posenc_cli
