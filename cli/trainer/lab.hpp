// cli/trainer/lab.hpp — the length-extrapolation lab behind `posenc lab`: one tiny_lm per
// encoding, trained at length L on a byte corpus, then evaluated (bits per byte) on evaluation text
// at E = L, 2L, 4L, 8L, 16L, in two ways (Press et al. 2022, appendix B): non-overlapping windows
// (inputs of E bytes at positions 0 .. E - 1, every position scored, so a byte sees 0 .. E - 1
// earlier ones), and the sliding window at stride 1 (one window per scored byte: the E bytes before
// it at positions 0 .. E - 1, only the last position scored, so every prediction attends to the
// E - 1 positions before its own). RoPE can also be evaluated with a scaling applied at evaluation
// time (PI: linear factor E / L; YaRN: factor E / L over original length L), on the model trained
// with plain RoPE. With `seeds` N every encoding is trained N times (seeds seed .. seed + N - 1: other initial
// weights and batches); a cell is then the mean and the sample standard deviation, and the columns
// at which the models' order differs between seeds are named. Models train side by side on
// `threads` threads; each is deterministic, so the table does not depend on the thread count. The
// default corpus is the license texts every Debian system ships in /usr/share/common-licenses
// (package base-files). Toy scale: see docs/lab.md for what it shows.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iterator>
#include <mutex>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/cope.hpp>
#include <posenc/encoders/deberta.hpp>
#include <posenc/encoders/fire.hpp>
#include <posenc/encoders/kerple.hpp>
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "tiny_lm.hpp"

namespace tiny {

/// The encodings the lab trains, by name.
inline const std::vector<std::string>& lab_encoders() {
  static const std::vector<std::string> names = {"nope", "sinusoidal", "learned", "rope",         "alibi",   "t5",
                                                 "xpos", "fire",       "kerple",  "kerple-power", "deberta", "cope"};
  return names;
}
/// Evaluation-time RoPE scalings (lines on the plot without a model of their own).
inline const std::vector<std::string>& lab_rope_scalings() {
  static const std::vector<std::string> names = {"rope-pi", "rope-yarn"};
  return names;
}

/// How a length is evaluated: non-overlapping windows, or a sliding window at stride 1.
enum class lab_eval { windows, sliding };

/// A column of the result: an evaluation length and how it was evaluated.
struct lab_column {
  int length = 0;
  int multiple = 1;  ///< length / L
  lab_eval eval = lab_eval::windows;
};

/// "128 (2L) windows" / "128 (2L) sliding".
inline std::string column_name(const lab_column& c) {
  return std::to_string(c.length) + (c.multiple == 1 ? " (L) " : " (" + std::to_string(c.multiple) + "L) ") +
         (c.eval == lab_eval::windows ? "windows" : "sliding");
}

struct lab_options {
  std::vector<std::string> encoders = {"sinusoidal", "rope", "alibi", "nope"};
  std::vector<std::string> rope_scalings = {"rope-pi", "rope-yarn"};  ///< need "rope" in encoders
  int train_len = 64;                                                 ///< L
  int multiples = 5;  ///< evaluation at L * 2^0 .. L * 2^(multiples - 1)
  int steps = 1200;
  int batch = 16;
  int eval_tokens = 8192;                             ///< predicted bytes per evaluation length (whole windows)
  std::vector<lab_eval> evals = {lab_eval::windows};  ///< the evaluations, in column order
  int sliding_tokens = 256;                           ///< predicted bytes per length of the sliding-window evaluation
  int threads = 2;
  int seeds = 1;  ///< models per encoding (seeds model.seed .. model.seed + seeds - 1)
  lm_config model{};
  std::string corpus;  ///< a file or a directory (its regular files, sorted); empty: the default
};

struct lab_line {
  std::string name;
  std::vector<double> bits_per_byte;  ///< one per column (the mean over seeds)
  double final_train_loss = 0;        ///< nats per byte, mean of the last 50 steps (NaN for scalings)
  std::vector<double> spread{};       ///< the sample standard deviation over seeds (empty: one seed)
};
struct lab_result {
  std::vector<lab_column> columns;
  std::vector<lab_line> lines;
  int seeds = 1;
  std::vector<std::size_t> unstable_columns{};  ///< columns at which the models' order differs between seeds
  std::string corpus;
  std::size_t train_bytes = 0, heldout_bytes = 0;
  double seconds = 0;
};

/// The corpus bytes: `path` (a file, or a directory's regular files in name order); empty path:
/// /usr/share/common-licenses. Throws std::runtime_error when nothing can be read.
inline std::vector<std::uint8_t> read_corpus(std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) path = "/usr/share/common-licenses";
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else {
    files.emplace_back(path);
  }
  std::vector<std::uint8_t> out;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw std::runtime_error("lab: cannot read " + f.string());
    out.insert(out.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (out.size() < 4096) throw std::runtime_error("lab: the corpus " + path + " has fewer than 4096 bytes");
  return out;
}

namespace detail {

/// Mean bits per byte of the sliding-window evaluation: `tokens` bytes spread evenly over `text`
/// (from its byte E on), each predicted from the E bytes before it in a window of its own.
template <class M>
double sliding_bits_per_byte(M& m, std::span<const std::uint8_t> text, int E, int tokens) {
  const std::size_t need = static_cast<std::size_t>(E) + 1;
  if (text.size() < need) return std::nan("");
  const std::size_t n = static_cast<std::size_t>(tokens), span = text.size() - need;
  double nats = 0;
  for (std::size_t w = 0; w < n; ++w) {
    const std::size_t off = n == 1 ? 0 : span * w / (n - 1);
    nats += m.tail_loss(text.subspan(off, need), 1);
  }
  return nats / static_cast<double>(n) / std::log(2.0);
}

/// Mean bits per byte of `m` over whole windows of E + 1 bytes spread evenly over `text`.
template <class M>
double bits_per_byte(M& m, std::span<const std::uint8_t> text, int E, int tokens) {
  const std::size_t need = static_cast<std::size_t>(E) + 1;
  if (text.size() < need) return std::nan("");
  const std::size_t windows = std::max<std::size_t>(1, static_cast<std::size_t>(tokens / E));
  const std::size_t span = text.size() - need;
  double nats = 0;
  for (std::size_t w = 0; w < windows; ++w) {
    const std::size_t off = windows == 1 ? 0 : span * w / (windows - 1);
    nats += m.loss(text.subspan(off, need));
  }
  return nats / static_cast<double>(windows) / std::log(2.0);
}

inline posenc::rope plain_rope(int head_dim) {
  return posenc::rope(posenc::rope_config{.head_dim = head_dim, .theta = 10000});
}

}  // namespace detail

/// Checks the options; throws std::invalid_argument naming what is wrong.
inline void check_lab_options(const lab_options& o) {
  for (const auto& e : o.encoders)
    if (std::find(lab_encoders().begin(), lab_encoders().end(), e) == lab_encoders().end())
      throw std::invalid_argument("lab: unknown encoder '" + e + "'");
  for (const auto& s : o.rope_scalings) {
    if (std::find(lab_rope_scalings().begin(), lab_rope_scalings().end(), s) == lab_rope_scalings().end())
      throw std::invalid_argument("lab: unknown RoPE scaling '" + s + "'");
    if (std::find(o.encoders.begin(), o.encoders.end(), "rope") == o.encoders.end())
      throw std::invalid_argument("lab: '" + s + "' evaluates the RoPE model: add rope to the encoders");
  }
  if (o.train_len < 8 || o.multiples < 1 || o.steps < 1 || o.batch < 1 || o.threads < 1 || o.eval_tokens < 1 ||
      o.seeds < 1 || o.sliding_tokens < 1 || o.evals.empty())
    throw std::invalid_argument(
        "lab: train length >= 8, an evaluation, and positive steps, batch, threads, seeds and eval tokens");
}

namespace detail {

/// The state the training threads share: the data, the progress count and the result lines.
struct lab_session {
  const lab_options& o;
  const std::function<void(long, long, const std::string&)>& progress;
  std::vector<std::uint8_t> train, held;  // every tenth block of 4 KiB held out (both sample every document)
  std::vector<lab_column> columns;
  long total = 0;
  std::atomic<long> done{0};
  std::mutex mu;
  std::vector<lab_line> lines;                // [encoder * seeds + seed]
  std::vector<std::vector<lab_line>> scaled;  // [seed]: the RoPE model's evaluation-time scalings

  lab_session(const lab_options& opts, const std::function<void(long, long, const std::string&)>& p,
              const std::vector<std::uint8_t>& all)
      : o(opts),
        progress(p),
        lines(opts.encoders.size() * static_cast<std::size_t>(opts.seeds)),
        scaled(static_cast<std::size_t>(opts.seeds)) {
    for (std::size_t i = 0; i < all.size(); i += 4096) {
      const auto end = all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), i + 4096));
      auto& dst = (i / 4096) % 10 == 9 ? held : train;
      dst.insert(dst.end(), all.begin() + static_cast<std::ptrdiff_t>(i), end);
    }
    for (const lab_eval e : o.evals)
      for (int k = 0; k < o.multiples; ++k) columns.push_back({o.train_len << k, 1 << k, e});
    total = static_cast<long>(o.steps) * static_cast<long>(lines.size());
  }

  /// Trains m for o.steps steps, reporting each; returns the mean loss of the last 50.
  template <class E>
  double train_model(tiny_lm<E>& m, const std::string& name) {
    double tail = 0;
    int tail_n = 0;
    for (int s = 0; s < o.steps; ++s) {
      const double l = m.train_step(train, o.batch, o.train_len);
      if (s >= o.steps - 50) tail += l, ++tail_n;
      const long n = ++done;
      if (progress) {
        std::ostringstream msg;
        msg << name << " step " << s + 1 << "/" << o.steps << " loss " << std::fixed << std::setprecision(3)
            << l / std::log(2.0) << " bits/byte";
        const std::lock_guard<std::mutex> g(mu);
        progress(n, total, msg.str());
      }
    }
    return tail / std::max(1, tail_n);
  }

  /// Bits per byte of m in column c.
  template <class M>
  double evaluate(M& m, const lab_column& c) {
    return c.eval == lab_eval::windows ? bits_per_byte(m, held, c.length, o.eval_tokens)
                                       : sliding_bits_per_byte(m, held, c.length, o.sliding_tokens);
  }

  /// The RoPE model evaluated at each length with each scaling applied at evaluation time (PI:
  /// linear factor E / L; YaRN: factor E / L over original length L).
  void evaluate_scalings(tiny_lm<posenc::rope>& m, std::size_t seed) {
    const int L = o.train_len, hd = o.model.d_model / o.model.heads;
    for (const auto& sname : o.rope_scalings) {
      lab_line sl{sname + " (eval)", {}, std::nan("")};
      for (const lab_column& c : columns) {
        const double f = static_cast<double>(c.length) / L;
        posenc::rope_config rc{.head_dim = hd, .theta = 10000};
        if (f > 1) {
          if (sname == "rope-pi")
            rc.scaling = posenc::linear_scaling{.factor = f};
          else
            rc.scaling = posenc::yarn_scaling{.factor = f, .original_max_position = L};
        }
        m.set_encoder(posenc::rope(rc));
        sl.bits_per_byte.push_back(evaluate(m, c));
      }
      const std::lock_guard<std::mutex> g(mu);
      scaled[seed].push_back(std::move(sl));
    }
  }

  /// Line `job` (encoder job / seeds, seed job % seeds): its model trained with encoder enc and
  /// evaluated at every length.
  template <class E>
  void train_eval(std::size_t job, E enc) {
    const auto seeds = static_cast<std::size_t>(o.seeds), seed = job % seeds;
    lm_config cfg = o.model;
    cfg.steps = o.steps;
    cfg.seed = o.model.seed + seed;
    tiny_lm<E> m(cfg, std::move(enc));
    const std::string& name = o.encoders[job / seeds];
    lab_line out{name, {}, train_model(m, seeds > 1 ? name + " seed " + std::to_string(cfg.seed) : name)};
    for (const lab_column& c : columns) out.bits_per_byte.push_back(evaluate(m, c));
    if constexpr (std::same_as<E, posenc::rope>) evaluate_scalings(m, seed);
    lines[job] = std::move(out);
  }

  /// FIRE at the paper's shape (an MLP of 32 hidden units shared by the heads), c = 0.1, the
  /// threshold L at the training length, random hidden weights (seeded) and a zero output layer.
  [[nodiscard]] posenc::fire initial_fire(std::uint64_t seed) const {
    const posenc::fire_config fc{.num_heads = o.model.heads, .mlp_width = 32};
    rng g{seed ^ 0xF1E5ull};
    posenc::fire_parameters p{.c = 0.1, .threshold = static_cast<double>(o.train_len)};
    for (std::ptrdiff_t k = 0; k < fc.mlp_width; ++k) p.w1.push_back(g.normal()), p.b1.push_back(0.1 * g.normal());
    p.w2.assign(static_cast<std::size_t>(fc.num_heads * fc.mlp_width), 0.0);
    p.b2.assign(static_cast<std::size_t>(fc.num_heads), 0.0);
    return posenc::fire(fc, p);
  }
  /// KERPLE with its authors' initial values: r1 uniform in [0, 2), r2 uniform in [0, 1) (seeded).
  [[nodiscard]] posenc::kerple initial_kerple(posenc::kerple_kernel k, std::uint64_t seed) const {
    rng g{seed ^ 0x6E6E1ull};
    std::vector<double> r1, r2;
    for (int h = 0; h < o.model.heads; ++h) r1.push_back(2 * g.uniform());
    for (int h = 0; h < o.model.heads; ++h) r2.push_back(g.uniform());
    return posenc::kerple({.kernel = k, .num_heads = o.model.heads}, r1, r2);
  }

  /// DeBERTa-v3's proportions scaled to L: position_buckets L / 2 and max_relative_positions L
  /// (v3: 256 and 512 for its 512 tokens), so distances up to L / 4 have a bucket each and L / 4 ..
  /// L - 1 share log buckets; c2p and p2c. The tables here only size the encoder: tiny_lm projects
  /// its own relative embeddings.
  [[nodiscard]] posenc::deberta_relative initial_deberta() const {
    const auto c = posenc::deberta_relative_config::v3(o.model.heads, o.model.d_model / o.model.heads, o.train_len / 2,
                                                       o.train_len);
    const std::vector<double> zeros(static_cast<std::size_t>(c.table_rows() * o.model.d_model));
    return posenc::deberta_relative(c, zeros, zeros);
  }

  /// Line `job` with the encoder its name says.
  void run_line(std::size_t job) {
    const std::string& e = o.encoders[job / static_cast<std::size_t>(o.seeds)];
    const std::uint64_t seed = o.model.seed + job % static_cast<std::size_t>(o.seeds);
    const std::size_t idx = job;
    const int d = o.model.d_model, hd = d / o.model.heads, H = o.model.heads, L = o.train_len;
    if (e == "nope")
      train_eval(idx, posenc::no_position{});
    else if (e == "sinusoidal")
      train_eval(idx, posenc::sinusoidal(posenc::sinusoidal_config{.d_model = d}));
    else if (e == "learned")
      train_eval(idx, posenc::learned_absolute(
                          {.max_len = L, .model_dim = d, .out_of_range = posenc::out_of_range_policy::clamp_to_last},
                          std::vector<float>(static_cast<std::size_t>(L * d))));
    else if (e == "rope")
      train_eval(idx, plain_rope(hd));
    else if (e == "alibi")
      train_eval(idx, posenc::alibi({.num_heads = H}));
    else if (e == "t5")
      train_eval(idx, posenc::t5_bias({.num_buckets = 32, .max_distance = 128, .bidirectional = false, .num_heads = H},
                                      std::vector<float>(static_cast<std::size_t>(32 * H))));
    else if (e == "fire")
      train_eval(idx, initial_fire(seed));
    else if (e == "kerple")
      train_eval(idx, initial_kerple(posenc::kerple_kernel::logarithmic, seed));
    else if (e == "kerple-power")
      train_eval(idx, initial_kerple(posenc::kerple_kernel::power, seed));
    else if (e == "deberta")
      train_eval(idx, initial_deberta());
    else if (e == "cope")
      train_eval(idx,
                 posenc::cope({.head_dim = hd, .npos = L + 1},
                              std::vector<double>(static_cast<std::size_t>((L + 1) * static_cast<std::int64_t>(hd)))));
    else
      train_eval(idx, posenc::xpos({.head_dim = hd}));
  }
};

/// Runs job(i) for every i < n on up to `threads` threads; the first exception is rethrown.
template <class F>
void run_on_threads(std::size_t n, int threads, F&& job) {
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::exception_ptr err;
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min<int>(threads, static_cast<int>(n)); ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < n;) try {
          job(i);
        } catch (...) {
          const std::lock_guard<std::mutex> g(mu);
          if (!err) err = std::current_exception();
        }
    });
  for (auto& t : pool) t.join();
  if (err) std::rethrow_exception(err);
}

}  // namespace detail

namespace detail {

/// Every line's mean over seeds, with the sample standard deviation when there are several.
inline std::vector<lab_line> mean_over_seeds(const std::vector<std::vector<lab_line>>& per_seed) {
  std::vector<lab_line> out = per_seed.front();
  const auto n = static_cast<double>(per_seed.size());
  if (per_seed.size() < 2) return out;
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& l = out[i];
    l.spread.assign(l.bits_per_byte.size(), 0.0);
    double loss = 0;
    for (const auto& seed : per_seed) loss += seed[i].final_train_loss / n;
    l.final_train_loss = loss;
    for (std::size_t k = 0; k < l.bits_per_byte.size(); ++k) {
      double mean = 0, var = 0;
      for (const auto& seed : per_seed) mean += seed[i].bits_per_byte[k] / n;
      for (const auto& seed : per_seed) var += (seed[i].bits_per_byte[k] - mean) * (seed[i].bits_per_byte[k] - mean);
      l.bits_per_byte[k] = mean;
      l.spread[k] = std::sqrt(var / (n - 1));
    }
  }
  return out;
}

/// The columns at which ranking the lines by bits per byte gives another order for some seed.
inline std::vector<std::size_t> columns_where_order_differs(const std::vector<std::vector<lab_line>>& per_seed) {
  std::vector<std::size_t> out;
  const std::size_t columns = per_seed.front().empty() ? 0 : per_seed.front().front().bits_per_byte.size();
  for (std::size_t k = 0; k < columns; ++k) {
    std::vector<std::vector<std::size_t>> orders;
    for (const auto& seed : per_seed) {
      std::vector<std::size_t> idx(seed.size());
      for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        return seed[a].bits_per_byte[k] < seed[b].bits_per_byte[k];
      });
      orders.push_back(std::move(idx));
    }
    if (std::any_of(orders.begin(), orders.end(), [&](const auto& x) { return x != orders.front(); })) out.push_back(k);
  }
  return out;
}

}  // namespace detail

/// Trains and evaluates every requested model. `progress(done, total, line)` is called from the
/// training threads (serialised) after every step.
inline lab_result run_lab(const lab_options& o,
                          const std::function<void(long, long, const std::string&)>& progress = {}) {
  check_lab_options(o);
  const auto t0 = std::chrono::steady_clock::now();
  lab_result r;
  r.corpus = o.corpus;
  detail::lab_session run(o, progress, read_corpus(r.corpus));
  r.train_bytes = run.train.size(), r.heldout_bytes = run.held.size();
  r.columns = run.columns;
  // CoPE's models start first (their backward adds a pass over the keys): the others fill in.
  std::vector<std::size_t> order(run.lines.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(),
                        [&](std::size_t i) { return o.encoders[i / static_cast<std::size_t>(o.seeds)] == "cope"; });
  detail::run_on_threads(order.size(), o.threads, [&](std::size_t i) { run.run_line(order[i]); });
  const auto seeds = static_cast<std::size_t>(o.seeds);
  std::vector<std::vector<lab_line>> per_seed(seeds);  // each seed's lines: the encodings, then the scalings
  for (std::size_t s = 0; s < seeds; ++s) {
    for (std::size_t e = 0; e < o.encoders.size(); ++e) per_seed[s].push_back(std::move(run.lines[e * seeds + s]));
    auto& sc = run.scaled[s];
    std::sort(sc.begin(), sc.end(), [](const lab_line& a, const lab_line& b) { return a.name < b.name; });
    for (auto& l : sc) per_seed[s].push_back(std::move(l));
  }
  r.seeds = o.seeds;
  r.lines = detail::mean_over_seeds(per_seed);
  r.unstable_columns = detail::columns_where_order_differs(per_seed);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

/// The result as a markdown table: one row per line, bits per byte in each column (length and
/// evaluation; with several seeds: mean ± standard deviation, then the columns at which the order
/// differs between seeds).
inline std::string lab_table(const lab_result& r) {
  std::ostringstream o;
  o << "| encoding |";
  for (const auto& c : r.columns) o << " " << column_name(c) << " |";
  o << "\n|---|";
  for (std::size_t k = 0; k < r.columns.size(); ++k) o << "---|";
  o << "\n";
  for (const auto& l : r.lines) {
    o << "| " << l.name << " |";
    for (std::size_t k = 0; k < l.bits_per_byte.size(); ++k) {
      o << " " << std::fixed << std::setprecision(3) << l.bits_per_byte[k];
      if (!l.spread.empty()) o << " ± " << l.spread[k];
      o << " |";
    }
    o << "\n";
  }
  if (r.seeds > 1) {
    o << "\nMean ± sample standard deviation over " << r.seeds << " seeds. ";
    if (r.unstable_columns.empty()) {
      o << "Every seed orders the encodings the same way in every column.\n";
    } else {
      o << "The order of the encodings differs between seeds at ";
      for (std::size_t k = 0; k < r.unstable_columns.size(); ++k)
        o << (k == 0 ? "" : ", ") << column_name(r.columns[r.unstable_columns[k]]);
      o << ": there, differences within the spread do not rank them.\n";
    }
  }
  return o.str();
}

}  // namespace tiny
