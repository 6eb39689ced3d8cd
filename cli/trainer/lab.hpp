// cli/trainer/lab.hpp — the length-extrapolation lab behind `posenc lab`: one tiny_lm per
// encoding, trained at length L on a byte corpus, then evaluated (bits per byte) on evaluation text
// at L, 2L, 4L, 8L, 16L. RoPE can also be evaluated with a scaling applied at evaluation time (PI:
// linear factor E / L; YaRN: factor E / L over original length L), on the model trained with plain
// RoPE. Models train side by side on `threads` threads; each is deterministic, so the table does
// not depend on the thread count. The default corpus is the license texts every Debian system ships
// in /usr/share/common-licenses (package base-files). Toy scale: see docs/lab.md for what it shows.
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
  static const std::vector<std::string> names = {"nope", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos"};
  return names;
}
/// Evaluation-time RoPE scalings (lines on the plot without a model of their own).
inline const std::vector<std::string>& lab_rope_scalings() {
  static const std::vector<std::string> names = {"rope-pi", "rope-yarn"};
  return names;
}

struct lab_options {
  std::vector<std::string> encoders = {"sinusoidal", "rope", "alibi", "nope"};
  std::vector<std::string> rope_scalings = {"rope-pi", "rope-yarn"};  ///< need "rope" in encoders
  int train_len = 64;                                                 ///< L
  int multiples = 5;  ///< evaluation at L * 2^0 .. L * 2^(multiples - 1)
  int steps = 1200;
  int batch = 16;
  int eval_tokens = 8192;  ///< predicted bytes per evaluation length (whole windows)
  int threads = 2;
  lm_config model{};
  std::string corpus;  ///< a file or a directory (its regular files, sorted); empty: the default
};

struct lab_line {
  std::string name;
  std::vector<double> bits_per_byte;  ///< one per evaluation length
  double final_train_loss = 0;        ///< nats per byte, mean of the last 50 steps (NaN for scalings)
};
struct lab_result {
  std::vector<int> lengths;
  std::vector<lab_line> lines;
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
  if (o.train_len < 8 || o.multiples < 1 || o.steps < 1 || o.batch < 1 || o.threads < 1 || o.eval_tokens < 1)
    throw std::invalid_argument("lab: train length >= 8 and positive steps, batch, threads and eval tokens");
}

namespace detail {

/// The state the training threads share: the data, the progress count and the result lines.
struct lab_session {
  const lab_options& o;
  const std::function<void(long, long, const std::string&)>& progress;
  std::vector<std::uint8_t> train, held;  // every tenth block of 4 KiB held out (both sample every document)
  std::vector<int> lengths;
  long total = 0;
  std::atomic<long> done{0};
  std::mutex mu;
  std::vector<lab_line> lines, scaled;

  lab_session(const lab_options& opts, const std::function<void(long, long, const std::string&)>& p,
              const std::vector<std::uint8_t>& all)
      : o(opts), progress(p), lines(opts.encoders.size()) {
    for (std::size_t i = 0; i < all.size(); i += 4096) {
      const auto end = all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), i + 4096));
      auto& dst = (i / 4096) % 10 == 9 ? held : train;
      dst.insert(dst.end(), all.begin() + static_cast<std::ptrdiff_t>(i), end);
    }
    for (int k = 0; k < o.multiples; ++k) lengths.push_back(o.train_len << k);
    total = static_cast<long>(o.steps) * static_cast<long>(o.encoders.size());
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

  /// The RoPE model evaluated at each length with each scaling applied at evaluation time (PI:
  /// linear factor E / L; YaRN: factor E / L over original length L).
  void evaluate_scalings(tiny_lm<posenc::rope>& m) {
    const int L = o.train_len, hd = o.model.d_model / o.model.heads;
    for (const auto& sname : o.rope_scalings) {
      lab_line sl{sname + " (eval)", {}, std::nan("")};
      for (int E : lengths) {
        const double f = static_cast<double>(E) / L;
        posenc::rope_config rc{.head_dim = hd, .theta = 10000};
        if (f > 1) {
          if (sname == "rope-pi")
            rc.scaling = posenc::linear_scaling{.factor = f};
          else
            rc.scaling = posenc::yarn_scaling{.factor = f, .original_max_position = L};
        }
        m.set_encoder(posenc::rope(rc));
        sl.bits_per_byte.push_back(bits_per_byte(m, held, E, o.eval_tokens));
      }
      const std::lock_guard<std::mutex> g(mu);
      scaled.push_back(std::move(sl));
    }
  }

  /// Line idx: its model trained with encoder enc and evaluated at every length.
  template <class E>
  void train_eval(std::size_t idx, E enc) {
    lm_config cfg = o.model;
    cfg.steps = o.steps;
    tiny_lm<E> m(cfg, std::move(enc));
    const std::string& name = o.encoders[idx];
    lab_line out{name, {}, train_model(m, name)};
    for (int len : lengths) out.bits_per_byte.push_back(bits_per_byte(m, held, len, o.eval_tokens));
    if constexpr (std::same_as<E, posenc::rope>) evaluate_scalings(m);
    lines[idx] = std::move(out);
  }

  /// Line idx with the encoder its name says.
  void run_line(std::size_t idx) {
    const std::string& e = o.encoders[idx];
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
  r.lengths = run.lengths;
  detail::run_on_threads(o.encoders.size(), o.threads, [&](std::size_t i) { run.run_line(i); });
  r.lines = std::move(run.lines);
  std::sort(run.scaled.begin(), run.scaled.end(), [](const lab_line& a, const lab_line& b) { return a.name < b.name; });
  for (auto& s : run.scaled) r.lines.push_back(std::move(s));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

/// The result as a markdown table: one row per line, bits per byte at each length.
inline std::string lab_table(const lab_result& r) {
  std::ostringstream o;
  o << "| encoding |";
  for (std::size_t k = 0; k < r.lengths.size(); ++k)
    o << " " << r.lengths[k] << (k == 0 ? " (L)" : " (" + std::to_string(1 << k) + "L)") << " |";
  o << "\n|---|";
  for (std::size_t k = 0; k < r.lengths.size(); ++k) o << "---|";
  o << "\n";
  for (const auto& l : r.lines) {
    o << "| " << l.name << " |";
    for (double v : l.bits_per_byte) o << " " << std::fixed << std::setprecision(3) << v << " |";
    o << "\n";
  }
  return o.str();
}

}  // namespace tiny
