// posenc/encoders/sinusoidal.hpp — fixed sinusoidal absolute position encodings, in the three
// conventions found in released models (docs/spec.md §3).
//
// Vaswani et al. 2017 §3.5: PE(p, 2k) = sin(p w_k), PE(p, 2k+1) = cos(p w_k). The conventions differ
// in column layout (interleaved vs [sin | cos]), frequency spacing (paper exponent 2k/d vs t2t/fairseq
// endpoint exponent k/(h-1)), position origin and odd-d handling; all are parameters here. Angles
// are formed and range-reduced in double (rope/angles.hpp), so rows are accurate at any position.
// Rows are computed on demand (no maximum length); an optional cache holds rows [0, n).
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/core/assert.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/rope/angles.hpp>

namespace posenc::inline v0 {

/// Column layout of the d-vector (h = floor(d/2) frequencies).
enum class sinusoidal_layout : unsigned char {
  interleaved,   ///< [sin w0, cos w0, sin w1, cos w1, ...]  (paper, XLM, DistilBERT)
  concatenated,  ///< [sin w0..w_{h-1} | cos w0..w_{h-1}]    (Marian, t2t, fairseq, CT2)
};

/// How the frequencies w_k = min_timescale * (max_timescale / min_timescale)^(-e_k) are spaced.
enum class sinusoidal_spacing : unsigned char {
  paper,     ///< e_k = 2k / d (w_k = 10000^(-2k/d) with the default timescales)
  endpoint,  ///< e_k = k / max(h - 1, 1): w_0 = 1 and w_{h-1} = 1e-4 exactly (t2t, fairseq)
};

/// What an odd d does with its last column.
enum class odd_d_policy : unsigned char {
  zero_pad,   ///< last column is 0 (t2t, fairseq)
  extra_sin,  ///< one more sine column with the next frequency w_h (DistilBERT/XLM column d-1,
              ///< Marian's sin block of ceil(d/2) columns)
  error,      ///< odd d is a config_error (MLX)
};

/// Configuration of `sinusoidal`. Defaults: the paper / HF DistilBERT convention.
struct sinusoidal_config {
  std::ptrdiff_t d_model = 512;
  sinusoidal_layout layout = sinusoidal_layout::interleaved;
  sinusoidal_spacing spacing = sinusoidal_spacing::paper;
  double min_timescale = 1.0;  ///< multiplies every frequency, as t2t does (> 0)
  double max_timescale = 1e4;  ///< > 0
  /// Token position p uses angle position ("row") p + position_origin. fairseq: padding_idx + 1;
  /// CT2: 1.
  std::int64_t position_origin = 0;
  /// Row whose encoding is all zero (fairseq's padding row); nullopt = none. 0 is a valid index.
  std::optional<std::int64_t> padding_idx = std::nullopt;
  odd_d_policy odd_d = odd_d_policy::extra_sin;
  double scale = 1.0;                 ///< multiplies every value (MLX uses sqrt(2/d))
  bool allow_negative = false;        ///< accept negative token positions (else config_error)
  std::int64_t cached_positions = 0;  ///< precompute token positions [0, n) (0 = compute on demand)

  /// HF DistilBERT / XLM `create_sinusoidal_embeddings` (and the paper).
  [[nodiscard]] static sinusoidal_config distilbert(std::ptrdiff_t d) { return {.d_model = d}; }
  /// HF Marian `MarianSinusoidalPositionalEmbedding`: [sin | cos], paper frequencies, odd d puts
  /// ceil(d/2) columns in the sine block.
  [[nodiscard]] static sinusoidal_config marian(std::ptrdiff_t d) {
    return {.d_model = d, .layout = sinusoidal_layout::concatenated};
  }
  /// fairseq `SinusoidalPositionalEmbedding` (and HF Speech2Text/M2M100 ports): [sin | cos],
  /// endpoint spacing, token t at row t + padding_idx + 1, row padding_idx zero, odd d zero-padded.
  [[nodiscard]] static sinusoidal_config fairseq(std::ptrdiff_t d, std::int64_t padding_idx = 1) {
    return {.d_model = d,
            .layout = sinusoidal_layout::concatenated,
            .spacing = sinusoidal_spacing::endpoint,
            .position_origin = padding_idx + 1,
            .padding_idx = padding_idx,
            .odd_d = odd_d_policy::zero_pad};
  }
};

/// Validates every field; throws config_error naming the first bad one.
inline void validate(const sinusoidal_config& c) {
  const bool extra = c.odd_d == odd_d_policy::extra_sin;
  detail::require(c.d_model >= (extra ? 1 : 2), "sinusoidal.d_model", c.d_model,
                  extra ? ">= 1" : ">= 2 (d_model = 1 without extra_sin has no sin/cos column)");
  detail::require(c.d_model % 2 == 0 || c.odd_d != odd_d_policy::error, "sinusoidal.d_model", c.d_model,
                  "an even number (odd_d_policy = error)");
  detail::require(std::isfinite(c.min_timescale) && c.min_timescale > 0, "sinusoidal.min_timescale", c.min_timescale,
                  "a finite number > 0");
  detail::require(std::isfinite(c.max_timescale) && c.max_timescale > 0, "sinusoidal.max_timescale", c.max_timescale,
                  "a finite number > 0");
  // Every value is at most |scale|: within float range, a float row cannot overflow to inf.
  detail::require(std::isfinite(c.scale) && std::fabs(c.scale) <= std::numeric_limits<float>::max(), "sinusoidal.scale",
                  c.scale, "a finite number with |scale| <= FLT_MAX");
  detail::require(c.position_origin >= -(std::int64_t{1} << 62) && c.position_origin <= (std::int64_t{1} << 62),
                  "sinusoidal.position_origin", c.position_origin, "[-2^62, 2^62]");
  if (c.padding_idx)
    detail::require(*c.padding_idx >= 0, "sinusoidal.padding_idx", *c.padding_idx, ">= 0 (or nullopt for none)");
  detail::require(c.cached_positions >= 0 && c.cached_positions <= (std::int64_t{1} << 40) / c.d_model,
                  "sinusoidal.cached_positions", c.cached_positions, "[0, 2^40 / d_model]");
}

/// Sinusoidal absolute position encoding (hook: additive). Immutable; copies share the
/// frequencies and the cache.
class sinusoidal {
 public:
  explicit sinusoidal(sinusoidal_config config = {}) : config_(config) {
    validate(config_);
    auto s = std::make_shared<shared>();
    const std::ptrdiff_t d = config_.d_model, h = d / 2;
    const bool extra = (d % 2 == 1) && config_.odd_d == odd_d_policy::extra_sin;
    const std::ptrdiff_t n_freq = h + (extra ? 1 : 0);
    const double log_ratio = std::log(config_.max_timescale / config_.min_timescale);
    detail::require(std::isfinite(log_ratio), "sinusoidal.max_timescale", config_.max_timescale,
                    "a ratio to min_timescale = " + detail::to_text(config_.min_timescale) +
                        " that is finite and nonzero in double");
    s->inv_freq.resize(static_cast<std::size_t>(n_freq));
    for (std::ptrdiff_t k = 0; k < n_freq; ++k) {
      double w = 0;
      if (config_.spacing == sinusoidal_spacing::paper) {
        // As the references: p / ratio^(2k/d), with the exponent 2k/d rounded once.
        const double e = static_cast<double>(2 * k) / static_cast<double>(d);
        w = config_.min_timescale / std::pow(config_.max_timescale / config_.min_timescale, e);
      } else {
        // t2t/fairseq: exp(k * -ln(max/min) / max(h-1, 1)); the guard avoids fairseq's 0/0 at d = 2, 3.
        const double inc = log_ratio / static_cast<double>(h > 1 ? h - 1 : 1);
        w = config_.min_timescale * std::exp(static_cast<double>(k) * -inc);
      }
      // Each timescale may be finite and the frequencies still overflow (a ratio 1e308 / 1e-300), or
      // the angle p * w at |p| <= 2^63 (w near 1e308): refused, not NaN rows.
      detail::require(std::isfinite(w * 0x1p63), k == 0 ? "sinusoidal.min_timescale" : "sinusoidal.max_timescale",
                      k == 0 ? config_.min_timescale : config_.max_timescale,
                      "timescales whose frequencies w times any int64 position are finite (w[" + std::to_string(k) +
                          "] = " + detail::to_text(w) + ")");
      s->inv_freq[static_cast<std::size_t>(k)] = w;
    }
    shared_ = s;
    if (config_.cached_positions > 0) {
      s->cache.resize(static_cast<std::size_t>(config_.cached_positions * d));
      for (std::int64_t p = 0; p < config_.cached_positions; ++p)
        compute_row(p + config_.position_origin,
                    std::span<double>(s->cache).subspan(static_cast<std::size_t>(p * d), static_cast<std::size_t>(d)));
    }
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "sinusoidal"; }
  [[nodiscard]] std::ptrdiff_t model_dim() const noexcept { return config_.d_model; }
  [[nodiscard]] const sinusoidal_config& config() const noexcept { return config_; }
  /// The angular frequencies w_k in radians per position (ceil(d/2) with extra_sin and odd d, else
  /// floor(d/2)).
  [[nodiscard]] std::span<const double> inv_freq() const noexcept { return shared_->inv_freq; }

  /// out = PE of token position p (row p + position_origin), d_model values. Throws config_error
  /// for a negative p unless allow_negative.
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void encode(std::int64_t p, std::span<T> out) const {
    detail::require_shape(static_cast<std::ptrdiff_t>(out.size()) == config_.d_model, "row.size", out.size(),
                          "d_model = " + std::to_string(config_.d_model));
    check_position(p);
    if (p >= 0 && p < config_.cached_positions) {
      const auto d = static_cast<std::size_t>(config_.d_model);
      const double* src = shared_->cache.data() + static_cast<std::size_t>(p) * d;
      for (std::size_t c = 0; c < d; ++c) out[c] = static_cast<T>(src[c]);
      return;
    }
    compute_row(p + config_.position_origin, out);
  }

  /// out = the raw table row r (angle position r, no origin; zeros if r == padding_idx): what
  /// fairseq's `weights[r]` holds. Any r is accepted.
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void encode_row(std::int64_t r, std::span<T> out) const {
    detail::require_shape(static_cast<std::ptrdiff_t>(out.size()) == config_.d_model, "out.size", out.size(),
                          "d_model");
    compute_row(r, out);
  }

  /// row += PE(p). Throws as encode().
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void add(std::int64_t p, std::span<T> row) const {
    detail::require_shape(static_cast<std::ptrdiff_t>(row.size()) == config_.d_model, "row.size", row.size(),
                          "d_model = " + std::to_string(config_.d_model));
    check_position(p);
    const auto d = static_cast<std::size_t>(config_.d_model);
    if (p >= 0 && p < config_.cached_positions) {
      const double* src = shared_->cache.data() + static_cast<std::size_t>(p) * d;
      for (std::size_t c = 0; c < d; ++c) row[c] += static_cast<T>(src[c]);
      return;
    }
    // Computed column by column into the row: no scratch allocation.
    const std::int64_t r = p + config_.position_origin;
    if (config_.padding_idx && r == *config_.padding_idx) return;
    for_each_column(r, [&](std::size_t c, double v) { row[c] += static_cast<T>(v); });
  }

 private:
  struct shared {
    std::vector<double> inv_freq;
    std::vector<double> cache;  // [cached_positions, d_model]
  };

  void check_position(std::int64_t p) const {
    if (p < 0) detail::require(config_.allow_negative, "position", p, ">= 0 (set allow_negative to accept it)");
    constexpr std::int64_t lim = std::int64_t{1} << 62;
    detail::require(p >= -lim && p <= lim, "position", p, "[-2^62, 2^62]");
    // Both p and position_origin lie in [-2^62, 2^62]; only their sum at +2^63 is not an int64.
    const std::int64_t o = config_.position_origin;
    detail::require(o <= 0 || p <= INT64_MAX - o, "position", p, "p + position_origin <= INT64_MAX");
  }

  // Calls f(column, value) for every column of row r (padding row not handled here).
  template <class F>
  void for_each_column(std::int64_t r, F&& f) const noexcept {
    const auto d = static_cast<std::size_t>(config_.d_model);
    const std::size_t h = d / 2;
    const bool odd = d % 2 == 1;
    const bool extra = odd && config_.odd_d == odd_d_policy::extra_sin;
    const double sc = config_.scale;
    const bool inter = config_.layout == sinusoidal_layout::interleaved;
    const std::size_t n_sin = h + (extra ? 1 : 0);
    for (std::size_t k = 0; k < h; ++k) {
      double s = 0, c = 0;
      sincos(r, k, s, c);
      f(inter ? 2 * k : k, sc * s);
      f(inter ? 2 * k + 1 : n_sin + k, sc * c);
    }
    if (odd) {
      double s = 0, c = 0;
      if (extra) sincos(r, h, s, c);
      // interleaved: column d-1; concatenated: sine column h (extra_sin) or the trailing column.
      f(inter || !extra ? d - 1 : h, sc * s);
    }
  }

  void sincos(std::int64_t r, std::size_t k, double& s, double& c) const noexcept {
    detail::sincos_exact(r, shared_->inv_freq[k], s, c);
  }

  template <class T>
  void compute_row(std::int64_t r, std::span<T> out) const noexcept {
    if (config_.padding_idx && r == *config_.padding_idx) {
      for (auto& v : out) v = T(0);
      return;
    }
    for_each_column(r, [&](std::size_t c, double v) { out[c] = static_cast<T>(v); });
  }

  sinusoidal_config config_;
  std::shared_ptr<const shared> shared_;
};

}  // namespace posenc::inline v0
