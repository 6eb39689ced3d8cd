// cli/lab.hpp — `posenc lab`: trains one tiny model per encoding (trainer/lab.hpp) at a
// training length L, evaluates bits per byte at L .. 16L on evaluation text, and writes the table
// (markdown) and a plot of bits per byte against evaluation length (SVG), with a progress bar on
// stderr while it trains (a line per tenth when stderr is not a terminal).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "args.hpp"
#include "svg.hpp"
#include "trainer/lab.hpp"

namespace posenc_cli {

/// Bits per byte against evaluation length (log2 x axis), one line per encoding (with several seeds:
/// the mean, in a band of ± one standard deviation), the training length marked: the columns of the
/// sliding-window evaluation when it ran, else those of the non-overlapping windows.
inline svg::doc lab_plot(const tiny::lab_result& r, int train_len) {
  const bool sliding = std::any_of(r.columns.begin(), r.columns.end(),
                                   [](const tiny::lab_column& c) { return c.eval == tiny::lab_eval::sliding; });
  std::vector<std::size_t> cols;  // the plotted columns, by length
  for (std::size_t k = 0; k < r.columns.size(); ++k)
    if ((r.columns[k].eval == tiny::lab_eval::sliding) == sliding) cols.push_back(k);
  const double W = 900, H = 560, L = 80, R = 200, T = 60, B = 70, pw = W - L - R, ph = H - T - B;
  svg::doc d(W, H);
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& l : r.lines)
    for (const std::size_t k : cols) {
      const double v = l.bits_per_byte[k], sd = l.spread.empty() ? 0.0 : l.spread[k];
      if (std::isfinite(v)) lo = std::min(lo, v - sd), hi = std::max(hi, v + sd);
    }
  if (!(lo <= hi)) lo = 0, hi = 8;
  lo = std::floor(lo * 2) / 2, hi = std::max(std::ceil(hi * 2) / 2, lo + 0.5);
  const auto n = static_cast<double>(std::max<std::size_t>(2, cols.size()));
  auto X = [&](std::size_t k) { return L + static_cast<double>(k) / (n - 1) * pw; };
  auto Y = [&](double v) { return T + ph - (std::min(v, hi) - lo) / (hi - lo) * ph; };
  d.text(W / 2, 30,
         "Bits per byte beyond the training length (L = " + std::to_string(train_len) + "; " +
             (sliding ? "sliding window" : "non-overlapping windows") + ")",
         17, "middle", " font-weight=\"bold\"");
  d.rect(L, T, pw, ph, "none", " stroke=\"#999\"");
  for (double v = lo; v <= hi + 1e-9; v += 0.5) {
    d.line(L, Y(v), L + pw, Y(v), "#e4e4e4");
    std::ostringstream s;
    s << std::fixed << std::setprecision(1) << v;
    d.text(L - 8, Y(v) + 4, s.str(), 11, "end");
  }
  for (std::size_t k = 0; k < cols.size(); ++k) {
    const tiny::lab_column& c = r.columns[cols[k]];
    d.line(X(k), T + ph, X(k), T + ph + 5, "#666");
    d.text(X(k), T + ph + 20,
           std::to_string(c.length) + (c.multiple == 1 ? " (L)" : " (" + std::to_string(c.multiple) + "L)"), 11,
           "middle");
  }
  d.text(L + pw / 2, H - 22, "evaluation length (bytes)", 13, "middle");
  d.text(22, T + ph / 2, "bits per byte (evaluation text)", 13, "middle",
         " transform=\"rotate(-90 22 " + svg::num(T + ph / 2) + ")\"");
  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                  "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  double ly = T + 10;
  for (std::size_t i = 0; i < r.lines.size(); ++i) {
    const auto& l = r.lines[i];
    const std::string c = colours[i % 10];
    const bool dashed = l.name.find("(eval)") != std::string::npos;
    std::vector<std::pair<double, double>> pts, band;
    for (std::size_t k = 0; k < cols.size(); ++k)
      if (std::isfinite(l.bits_per_byte[cols[k]])) pts.emplace_back(X(k), Y(l.bits_per_byte[cols[k]]));
    if (!l.spread.empty()) {  // the band: mean + sd left to right, then mean - sd right to left
      for (std::size_t k = 0; k < cols.size(); ++k)
        if (const std::size_t j = cols[k]; std::isfinite(l.bits_per_byte[j]))
          band.emplace_back(X(k), Y(l.bits_per_byte[j] + l.spread[j]));
      for (std::size_t k = cols.size(); k-- > 0;)
        if (const std::size_t j = cols[k]; std::isfinite(l.bits_per_byte[j]))
          band.emplace_back(X(k), Y(l.bits_per_byte[j] - l.spread[j]));
      d.polygon(band, c, 0.15);
    }
    d.polyline(pts, c, 2.2, dashed ? " stroke-dasharray=\"6,4\"" : "");
    for (const auto& [x, y] : pts) d.circle(x, y, 3, c);
    d.line(L + pw + 15, ly, L + pw + 45, ly, c, 2.2, dashed ? " stroke-dasharray=\"6,4\"" : "");
    d.text(L + pw + 51, ly + 4, l.name, 12);
    ly += 20;
  }
  return d;
}

/// "seed 1", or "seeds 1 to 3" for a multi-seed run.
inline std::string seed_words(const tiny::lab_options& o) {
  if (o.seeds == 1) return "seed " + std::to_string(o.model.seed);
  return "seeds " + std::to_string(o.model.seed) + " to " +
         std::to_string(o.model.seed + static_cast<std::uint64_t>(o.seeds) - 1);
}

/// What the columns' two evaluations are.
inline std::string eval_words(const tiny::lab_options& o) {
  std::string s;
  for (const tiny::lab_eval e : o.evals) {
    if (!s.empty()) s += "; ";
    if (e == tiny::lab_eval::windows)
      s += "windows: non-overlapping windows of E bytes, every position scored, " + std::to_string(o.eval_tokens) +
           " bytes per length";
    else
      s += "sliding: a window of the E bytes before each scored byte (stride 1, it attends to E - 1 earlier "
           "positions), " +
           std::to_string(o.sliding_tokens) + " bytes per length";
  }
  return s;
}

/// Runs the lab; writes DIR/lab.md and DIR/lab.svg; prints the table. Returns the exit status.
inline int run_lab(const arguments& a, std::ostream& out, std::ostream& err) {
  tiny::lab_options o;
  o.encoders = a.lab_encoders, o.rope_scalings = a.lab_scalings;
  o.train_len = static_cast<int>(a.train_len), o.steps = static_cast<int>(a.steps);
  o.batch = static_cast<int>(a.batch), o.threads = static_cast<int>(a.threads);
  o.eval_tokens = static_cast<int>(a.eval_tokens), o.corpus = a.corpus;
  o.sliding_tokens = static_cast<int>(a.sliding_tokens);
  o.evals.clear();
  if (a.lab_eval != "sliding") o.evals.push_back(tiny::lab_eval::windows);
  if (a.lab_eval != "windows") o.evals.push_back(tiny::lab_eval::sliding);
  o.model.seed = static_cast<std::uint64_t>(a.seed);
  o.seeds = static_cast<int>(a.seeds);
  const std::string& out_dir = a.lab_out;
  const bool tty = isatty(fileno(stderr)) != 0;
  auto last = std::chrono::steady_clock::now();
  int last_decile = -1;
  auto progress = [&](long done, long total, const std::string& line) {
    const auto now = std::chrono::steady_clock::now();
    const int pct = static_cast<int>(100 * done / total);
    if (tty) {
      if (done != total && now - last < std::chrono::milliseconds(200)) return;
      last = now;
      const int w = 30, fill = static_cast<int>(w * done / total);
      err << "\r[" << std::string(static_cast<std::size_t>(fill), '#')
          << std::string(static_cast<std::size_t>(w - fill), '.') << "] " << std::setw(3) << pct << "%  " << line
          << "\033[K" << std::flush;
      if (done == total) err << "\n";
    } else if (pct / 10 != last_decile) {  // a log: one line per tenth
      last_decile = pct / 10;
      err << "lab: " << std::setw(3) << pct << "%  " << line << "\n" << std::flush;
    }
  };
  const tiny::lab_result r = tiny::run_lab(o, progress);
  std::ostringstream md;
  md << "Corpus: " << r.corpus << " (" << r.train_bytes << " bytes for training, " << r.heldout_bytes
     << " kept for evaluation). Training length L = " << o.train_len << ", " << o.steps << " steps of " << o.batch
     << " sequences; model: " << o.model.layers << " layers, d_model " << o.model.d_model << ", " << o.model.heads
     << " heads; " << seed_words(o) << ". Bits per byte on evaluation text (lower is better); " << eval_words(o) << "; "
     << std::fixed << std::setprecision(0) << r.seconds << " s on " << o.threads << " thread"
     << (o.threads > 1 ? "s" : "") << ".\n\n"
     << tiny::lab_table(r);
  out << md.str();
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  const std::string table = out_dir + "/lab.md", plot = out_dir + "/lab.svg";
  std::ofstream(table) << md.str();
  if (!lab_plot(r, o.train_len).save(plot)) {
    err << "posenc lab: cannot write " << plot << "\n";
    return 1;
  }
  out << "\nwritten: " << table << ", " << plot << "\n";
  return 0;
}

}  // namespace posenc_cli
