// cli/svg.hpp — a tiny self-contained SVG writer and the four chart kinds the CLI draws.
//
// Self-contained: no scripts, fonts or external references, so the file renders anywhere (browser,
// image viewer, GitHub). Charts: line chart on a log-y axis (RoPE wavelengths), heatmap grids
// (ALiBi per head, T5 bucket map, sinusoidal table) with a colour bar. Not a plotting library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace posenc_cli::svg {

/// Text-escaped for XML.
inline std::string esc(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

inline std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

/// Short label for an axis tick.
inline std::string tick(double v) {
  char b[32];
  if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-3))
    std::snprintf(b, sizeof b, "%.0e", v);
  else
    std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

struct rgb {
  int r, g, b;
};
inline std::string hex(rgb c) {
  char b[8];
  std::snprintf(b, sizeof b, "#%02x%02x%02x", std::clamp(c.r, 0, 255), std::clamp(c.g, 0, 255),
                std::clamp(c.b, 0, 255));
  return b;
}
inline rgb lerp(rgb a, rgb b, double t) {
  return {static_cast<int>(a.r + (b.r - a.r) * t), static_cast<int>(a.g + (b.g - a.g) * t),
          static_cast<int>(a.b + (b.b - a.b) * t)};
}
/// Sequential map (viridis-like), t in [0, 1].
inline rgb sequential(double t) {
  static const rgb stops[] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(t));
  return lerp(stops[i], stops[i + 1], t - i);
}
/// Diverging map (blue - white - red), t in [-1, 1].
inline rgb diverging(double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, -1.0, 1.0);
  return t < 0 ? lerp({247, 247, 247}, {33, 102, 172}, -t) : lerp({247, 247, 247}, {178, 24, 43}, t);
}

/// Accumulates SVG elements; str() gives the document.
class doc {
 public:
  doc(double w, double h) : w_(w), h_(h) {}
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "") {
    body_ << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\"" << num(h)
          << "\" fill=\"" << fill << "\"" << extra << "/>\n";
  }
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& extra = "") {
    body_ << "<line x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2) << "\" y2=\"" << num(y2)
          << "\" stroke=\"" << stroke << "\" stroke-width=\"" << num(width) << "\"" << extra << "/>\n";
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double width,
                const std::string& extra = "") {
    if (pts.empty()) return;
    body_ << "<polyline fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\"" << num(width) << "\"" << extra
          << " points=\"";
    for (const auto& [x, y] : pts) body_ << num(x) << ',' << num(y) << ' ';
    body_ << "\"/>\n";
  }
  /// A filled, unstroked polygon (a band around a line).
  void polygon(const std::vector<std::pair<double, double>>& pts, const std::string& fill, double opacity) {
    if (pts.empty()) return;
    body_ << "<polygon fill=\"" << fill << "\" fill-opacity=\"" << num(opacity) << "\" stroke=\"none\" points=\"";
    for (const auto& [x, y] : pts) body_ << num(x) << ',' << num(y) << ' ';
    body_ << "\"/>\n";
  }
  void circle(double x, double y, double r, const std::string& fill) {
    body_ << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"" << num(r) << "\" fill=\"" << fill
          << "\"/>\n";
  }
  void text(double x, double y, std::string_view s, double size = 12, const std::string& anchor = "start",
            const std::string& extra = "") {
    body_ << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << num(size) << "\" text-anchor=\""
          << anchor << "\"" << extra << ">" << esc(s) << "</text>\n";
  }
  /// Raw markup (group open/close tags).
  void raw(std::string_view markup) { body_ << markup << "\n"; }
  [[nodiscard]] std::string str() const {
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(w_) << "\" height=\"" << num(h_)
      << "\" viewBox=\"0 0 " << num(w_) << ' ' << num(h_)
      << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << body_.str() << "</svg>\n";
    return o.str();
  }
  /// Writes the document; returns false when the file cannot be written.
  [[nodiscard]] bool save(const std::string& path) const {
    std::ofstream f(path, std::ios::binary);
    if (!f) return false;
    f << str();
    return static_cast<bool>(f.flush());
  }

 private:
  double w_, h_;
  std::ostringstream body_;
};

/// One series of a line chart.
struct series {
  std::string label;
  std::vector<double> y;  ///< one value per x = 0, 1, ...; non-finite or <= 0 values are skipped on a log axis
  std::string colour;
  bool dashed = false;
};
/// A horizontal reference line.
struct hline {
  std::string label;
  double y;
  std::string colour;
};

/// Line chart with a log-10 y axis: x = index, one polyline per series, labelled reference lines.
inline doc log_line_chart(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                          const std::vector<series>& ss, const std::vector<hline>& refs) {
  const double W = 900, H = 560, L = 90, R = 30, T = 60, B = 70;
  doc d(W, H);
  double lo = INFINITY, hi = -INFINITY;
  std::size_t n = 1;
  for (const auto& s : ss) {
    n = std::max(n, s.y.size());
    for (double v : s.y)
      if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  for (const auto& r : refs)
    if (std::isfinite(r.y) && r.y > 0) lo = std::min(lo, r.y), hi = std::max(hi, r.y);
  if (!(lo <= hi)) lo = 1, hi = 10;
  const double l0 = std::floor(std::log10(lo)), l1 = std::max(std::ceil(std::log10(hi)), l0 + 1);
  const double pw = W - L - R, ph = H - T - B;
  auto X = [&](double i) { return L + (n > 1 ? i / static_cast<double>(n - 1) : 0.5) * pw; };
  auto Y = [&](double v) { return T + ph - (std::log10(v) - l0) / (l1 - l0) * ph; };
  d.text(W / 2, 30, title, 17, "middle", " font-weight=\"bold\"");
  d.rect(L, T, pw, ph, "none", " stroke=\"#999\"");
  const int step = static_cast<int>(std::ceil((l1 - l0) / 12));
  for (double e = l0; e <= l1; e += step) {
    const double y = Y(std::pow(10.0, e));
    d.line(L, y, L + pw, y, "#e4e4e4");
    d.text(L - 8, y + 4, "1e" + std::to_string(static_cast<int>(e)), 11, "end");
  }
  const std::size_t xt = std::max<std::size_t>(1, (n - 1) / 8 + 1);
  for (std::size_t i = 0; i < n; i += xt) {
    d.line(X(static_cast<double>(i)), T + ph, X(static_cast<double>(i)), T + ph + 5, "#666");
    d.text(X(static_cast<double>(i)), T + ph + 20, std::to_string(i), 11, "middle");
  }
  d.text(L + pw / 2, H - 22, xlabel, 13, "middle");
  d.text(22, T + ph / 2, ylabel, 13, "middle", " transform=\"rotate(-90 22 " + num(T + ph / 2) + ")\"");
  for (const auto& r : refs) {
    if (!(std::isfinite(r.y) && r.y > 0)) continue;
    d.line(L, Y(r.y), L + pw, Y(r.y), r.colour, 1.2, " stroke-dasharray=\"2,4\"");
    d.text(L + 6, Y(r.y) - 5, r.label, 11, "start", " fill=\"" + r.colour + "\"");
  }
  double ly = T + 18;
  for (const auto& s : ss) {
    std::vector<std::pair<double, double>> pts;
    for (std::size_t i = 0; i < s.y.size(); ++i)
      if (std::isfinite(s.y[i]) && s.y[i] > 0) pts.emplace_back(X(static_cast<double>(i)), Y(s.y[i]));
    d.polyline(pts, s.colour, 2.2, s.dashed ? " stroke-dasharray=\"6,4\"" : "");
    d.line(L + pw - 230, ly - 4, L + pw - 200, ly - 4, s.colour, 2.2, s.dashed ? " stroke-dasharray=\"6,4\"" : "");
    d.text(L + pw - 194, ly, s.label, 12);
    ly += 18;
  }
  return d;
}

/// One heatmap panel: rows x cols values.
struct panel {
  std::string title;
  std::size_t rows = 0, cols = 0;
  std::vector<double> v;  ///< row-major
};

/// Grid of heatmap panels sharing one colour scale [lo, hi]; `diverge` uses blue-white-red around 0.
inline doc heatmaps(const std::string& title, const std::string& subtitle, const std::vector<panel>& ps, double lo,
                    double hi, bool diverge, const std::string& xlabel, const std::string& ylabel,
                    std::size_t per_row = 8, double cell_px = 0) {
  const std::size_t np = std::max<std::size_t>(1, ps.size());
  const std::size_t ncol = std::min(per_row, np), nrow = (np + ncol - 1) / ncol;
  std::size_t maxr = 1, maxc = 1;
  for (const auto& p : ps) maxr = std::max(maxr, p.rows), maxc = std::max(maxc, p.cols);
  const double pw_target = ncol == 1 ? 520.0 : 740.0 / static_cast<double>(ncol) - 30;
  const double cell = cell_px > 0 ? cell_px : std::max(1.0, pw_target / static_cast<double>(std::max(maxr, maxc)));
  const double pw = cell * static_cast<double>(maxc), ph = cell * static_cast<double>(maxr);
  const double L = 60, T = 70, gap = 30;
  const double W = std::max(560.0, L + static_cast<double>(ncol) * (pw + gap) + 90);
  const double H = T + static_cast<double>(nrow) * (ph + gap + 14) + 50;
  doc d(W, H);
  d.text(W / 2, 28, title, 17, "middle", " font-weight=\"bold\"");
  d.text(W / 2, 48, subtitle, 12, "middle", " fill=\"#555\"");
  auto colour = [&](double v) {
    if (diverge) {
      const double m = std::max(std::fabs(lo), std::fabs(hi));
      return hex(diverging(m > 0 ? v / m : 0));
    }
    return hex(sequential(hi > lo ? (v - lo) / (hi - lo) : 0.5));
  };
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const auto& p = ps[i];
    const double x0 = L + static_cast<double>(i % ncol) * (pw + gap);
    const double y0 = T + static_cast<double>(i / ncol) * (ph + gap + 14) + 14;
    d.text(x0 + pw / 2, y0 - 4, p.title, 11, "middle");
    d.raw("<g shape-rendering=\"crispEdges\">");
    for (std::size_t r = 0; r < p.rows; ++r)
      for (std::size_t c = 0; c < p.cols; ++c)
        d.rect(x0 + static_cast<double>(c) * cell, y0 + static_cast<double>(r) * cell, cell + 0.3, cell + 0.3,
               colour(p.v[r * p.cols + c]));
    d.raw("</g>");
    d.rect(x0, y0, cell * static_cast<double>(p.cols), cell * static_cast<double>(p.rows), "none",
           " stroke=\"#888\" stroke-width=\"0.5\"");
  }
  // Axis words once, colour bar on the right.
  d.text(L + (pw + gap) * static_cast<double>(ncol) / 2, H - 18, xlabel, 12, "middle");
  d.text(18, T + ph / 2 + 14, ylabel, 12, "middle", " transform=\"rotate(-90 18 " + num(T + ph / 2 + 14) + ")\"");
  const double bx = W - 60, by = T + 14, bh = std::min(260.0, H - T - 80);
  for (int s = 0; s < 64; ++s) {
    const double t = 1.0 - s / 63.0;
    d.rect(bx, by + bh * s / 64.0, 14, bh / 64.0 + 0.5, colour(lo + (hi - lo) * t));
  }
  d.rect(bx, by, 14, bh, "none", " stroke=\"#888\" stroke-width=\"0.5\"");
  d.text(bx + 18, by + 8, tick(hi), 10);
  d.text(bx + 18, by + bh, tick(lo), 10);
  return d;
}

/// mRoPE: which position stream (t, h, w) each rotation pair follows, as a strip of coloured cells
/// over the pair index, above a strip of the pairs' wavelengths (log colour scale), so one sees which
/// frequencies each stream gets (contiguous sections vs Qwen3-VL's interleaving).
inline doc pair_streams(const std::string& title, const std::string& subtitle, const std::vector<int>& stream,
                        const std::vector<double>& wavelength) {
  const std::size_t P = stream.size();
  const double cell = std::clamp(900.0 / static_cast<double>(std::max<std::size_t>(P, 1)), 4.0, 24.0);
  const double L = 110, T = 80, strip = 34;
  const double W = std::max(620.0, L + cell * static_cast<double>(P) + 40), H = T + 2 * strip + 110;
  doc d(W, H);
  d.text(W / 2, 28, title, 17, "middle", " font-weight=\"bold\"");
  d.text(W / 2, 48, subtitle, 12, "middle", " fill=\"#555\"");
  const char* colours[] = {"#c0392b", "#27ae60", "#2471a3"};
  const char* names[] = {"t (temporal)", "h (height)", "w (width)"};
  double lo = INFINITY, hi = -INFINITY;
  for (double w : wavelength)
    if (std::isfinite(w) && w > 0) lo = std::min(lo, std::log10(w)), hi = std::max(hi, std::log10(w));
  d.raw("<g shape-rendering=\"crispEdges\">");
  for (std::size_t k = 0; k < P; ++k) {
    const double x = L + cell * static_cast<double>(k);
    d.rect(x, T, cell, strip, colours[std::clamp(stream[k], 0, 2)], " stroke=\"white\" stroke-width=\"0.5\"");
    const double w = k < wavelength.size() ? wavelength[k] : NAN;
    const double t = (std::isfinite(w) && w > 0 && hi > lo) ? (std::log10(w) - lo) / (hi - lo) : 0.5;
    d.rect(x, T + strip + 8, cell, strip, hex(sequential(t)));
  }
  d.raw("</g>");
  d.text(L - 8, T + strip / 2 + 4, "stream", 12, "end");
  d.text(L - 8, T + 1.5 * strip + 12, "wavelength", 12, "end");
  for (std::size_t k = 0; k < P; k += 8) {
    const double x = L + cell * (static_cast<double>(k) + 0.5);
    d.line(x, T + 2 * strip + 8, x, T + 2 * strip + 13, "#555");
    d.text(x, T + 2 * strip + 25, std::to_string(k), 10, "middle");
  }
  d.text(L + cell * static_cast<double>(P) / 2, T + 2 * strip + 42, "pair index k (short wavelengths left)", 12,
         "middle");
  for (int s = 0; s < 3; ++s) {
    const double x = L + 150.0 * s;
    d.rect(x, H - 34, 14, 14, colours[s]);
    d.text(x + 20, H - 22, names[s], 12);
  }
  if (hi >= lo) d.text(W - 20, H - 22, "wavelength 10^" + tick(lo) + " .. 10^" + tick(hi) + " positions", 11, "end");
  return d;
}

}  // namespace posenc_cli::svg
