// posenc/encoders/t5.hpp — T5 relative position bucket bias (Raffel et al. 2020 §2.1; docs/spec.md §5).
//
// bucket(r), r = key position - query position: exact buckets for small |r|, log-spaced buckets up
// to max_distance, then saturation. Hugging Face evaluates the log in float32; t5_buckets finds, once
// per (num_buckets, max_distance, bidirectional), the exact integer thresholds at which that float32
// formula changes bucket, so the hot path compares integers only and agrees with HF bit for bit at
// every distance. t5_bias gathers a learned [num_buckets, num_heads] table (HF layout). No 1/sqrt(d)
// scaling is implied here: that is T5's attention, not its bias.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/concepts.hpp>
#include <posenc/core/assert.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// Configuration of the T5 bucket function and bias. Defaults: HF T5 (`relative_attention_num_buckets`
/// 32, `relative_attention_max_distance` 128, t5-small's 8 heads); the encoder is bidirectional, the
/// decoder self-attention is not.
struct t5_bias_config {
  std::ptrdiff_t num_buckets = 32;  ///< HF relative_attention_num_buckets; GGUF {arch}.attention.relative_buckets_count
  std::ptrdiff_t max_distance = 128;  ///< HF relative_attention_max_distance (llama.cpp hard-codes 128)
  bool bidirectional = true;
  std::ptrdiff_t num_heads = 8;  ///< used by t5_bias only
};

namespace detail {

/// (buckets per direction N', max_exact E) of a configuration (num_buckets <= 2^20 once validated).
inline constexpr int t5_half(const t5_bias_config& c) noexcept {
  return static_cast<int>(c.bidirectional ? c.num_buckets / 2 : c.num_buckets);
}
inline constexpr int t5_max_exact(const t5_bias_config& c) noexcept {
  return t5_half(c) / 2;
}

/// The float32 arithmetic of HF `T5Attention._relative_position_bucket` for a distance magnitude
/// n >= E: trunc(float(log(float(n) / E)) / float(log(M / E)) * (N' - E)), then E + that, capped.
inline int t5_log_bucket_fp32(std::int64_t n, int half, int max_exact, float log_ratio) noexcept {
  const float x = static_cast<float>(n) / static_cast<float>(max_exact);  // relative_position.float() / max_exact
  const float l = std::log(x);                                            // torch.log, float32
  const float y = l / log_ratio * static_cast<float>(half - max_exact);   // / math.log(M/E) * (N - E), float32
  const auto t = static_cast<std::int64_t>(y);                            // .to(torch.long) truncates
  return static_cast<int>(std::min<std::int64_t>(max_exact + t, half - 1));
}

}  // namespace detail

/// Validates the bucket parameters (and num_heads if `with_heads`); throws config_error.
inline void validate(const t5_bias_config& c, bool with_heads = true) {
  detail::require(c.num_buckets >= (c.bidirectional ? 4 : 2) && c.num_buckets <= (1 << 20), "t5.num_buckets",
                  c.num_buckets,
                  c.bidirectional ? "[4, 2^20] for a bidirectional bias (max_exact = num_buckets / 4 must be >= 1)"
                                  : "[2, 2^20] for a causal bias (max_exact = num_buckets / 2 must be >= 1)");
  const int e = detail::t5_max_exact(c);
  detail::require(c.max_distance > e, "t5.max_distance", c.max_distance,
                  "> max_exact = " + std::to_string(e) + " (num_buckets " + std::to_string(c.num_buckets) +
                      (c.bidirectional ? ", bidirectional)" : ", causal)"));
  if (with_heads) detail::require(c.num_heads > 0, "t5.num_heads", c.num_heads, "> 0");
}

/// HF's bucket of relative position r = key - query, evaluated with HF's float32 arithmetic (one
/// log per call; a reference for tests and one-off use). Throws config_error for invalid
/// parameters. For many pairs use t5_buckets, which is exact and log-free.
[[nodiscard]] inline int t5_bucket_reference_fp32(std::int64_t relative_position, bool bidirectional,
                                                  std::ptrdiff_t num_buckets, std::ptrdiff_t max_distance) {
  const t5_bias_config c{.num_buckets = num_buckets, .max_distance = max_distance, .bidirectional = bidirectional};
  validate(c, false);
  const int half = detail::t5_half(c), e = detail::t5_max_exact(c);
  int offset = 0;
  std::int64_t n = 0;
  if (bidirectional) {
    offset = relative_position > 0 ? half : 0;
    n = relative_position < 0 ? -std::max(relative_position, -INT64_MAX) : relative_position;
  } else {
    n = relative_position < 0 ? -std::max(relative_position, -INT64_MAX) : 0;
  }
  if (n < e) return offset + static_cast<int>(n);  // references evaluate log(0) and discard it; we don't
  const auto log_ratio = static_cast<float>(std::log(static_cast<double>(max_distance) / e));
  return offset + detail::t5_log_bucket_fp32(n, half, e, log_ratio);
}

/// The T5 bucket function with precomputed integer thresholds (hot path: integer comparisons).
class t5_buckets {
 public:
  /// Uses num_buckets, max_distance, bidirectional of `config`. Throws config_error.
  explicit t5_buckets(t5_bias_config config) : config_(config) {
    validate(config_, false);
    half_ = detail::t5_half(config_);
    max_exact_ = detail::t5_max_exact(config_);
    const auto log_ratio = static_cast<float>(std::log(static_cast<double>(config_.max_distance) / max_exact_));
    auto th = std::make_shared<std::vector<std::int64_t>>();
    // thresholds[v - E - 1] = smallest n with bucket(n) >= v, for v = E + 1 .. N' - 1. The float32
    // formula is non-decreasing in n (every step is a monotone rounding), so binary search applies.
    std::int64_t lo = max_exact_;
    for (int v = max_exact_ + 1; v < half_; ++v) {
      std::int64_t a = lo, b = std::int64_t{1} << 62;  // bucket(a) < v <= bucket(b) (b saturates)
      while (b - a > 1) {
        const std::int64_t m = a + (b - a) / 2;
        (detail::t5_log_bucket_fp32(m, half_, max_exact_, log_ratio) >= v ? b : a) = m;
      }
      th->push_back(b);
      lo = b - 1;
    }
    thresholds_ = std::move(th);
  }

  /// HF's bucket of r = key position - query position, in [0, num_buckets).
  [[nodiscard]] int operator()(std::int64_t relative_position) const noexcept {
    int offset = 0;
    std::int64_t n = 0;
    if (config_.bidirectional) {
      offset = relative_position > 0 ? half_ : 0;
      n = relative_position < 0 ? -std::max(relative_position, -INT64_MAX) : relative_position;
    } else {
      n = relative_position < 0 ? -std::max(relative_position, -INT64_MAX) : 0;
    }
    if (n < max_exact_) return offset + static_cast<int>(n);
    const auto& t = *thresholds_;
    return offset + max_exact_ + static_cast<int>(std::upper_bound(t.begin(), t.end(), n) - t.begin());
  }

  [[nodiscard]] std::ptrdiff_t num_buckets() const noexcept { return config_.num_buckets; }
  [[nodiscard]] std::ptrdiff_t max_distance() const noexcept { return config_.max_distance; }
  [[nodiscard]] bool bidirectional() const noexcept { return config_.bidirectional; }
  [[nodiscard]] int max_exact() const noexcept { return max_exact_; }
  /// Smallest distance magnitude of each log bucket E + 1 .. N' - 1 (N' = num_buckets, halved when
  /// bidirectional); the last one is where saturation starts.
  [[nodiscard]] std::span<const std::int64_t> thresholds() const noexcept { return *thresholds_; }

 private:
  t5_bias_config config_;
  int half_ = 0, max_exact_ = 0;
  std::shared_ptr<const std::vector<std::int64_t>> thresholds_;
};

/// HF's bucket of relative position r = key - query (bit-exact with T5Attention for any r).
/// Builds thresholds per call; hold a t5_buckets for repeated use. Throws config_error.
[[nodiscard]] inline int t5_bucket(std::int64_t relative_position, bool bidirectional, std::ptrdiff_t num_buckets,
                                   std::ptrdiff_t max_distance) {
  return t5_buckets({.num_buckets = num_buckets, .max_distance = max_distance, .bidirectional = bidirectional})(
      relative_position);
}

/// T5 relative position bias (hook: score_bias): bias(h, i, j) = table[bucket(pos_j - pos_i), h].
/// Immutable; copies share the table and thresholds.
class t5_bias {
 public:
  /// `table`: row-major [num_buckets, num_heads] (HF `relative_attention_bias.weight`), copied in.
  t5_bias(t5_bias_config config, std::span<const double> table) : t5_bias(config, table.begin(), table.size()) {}
  t5_bias(t5_bias_config config, std::span<const float> table) : t5_bias(config, table.begin(), table.size()) {}

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "t5"; }
  [[nodiscard]] std::ptrdiff_t num_heads() const noexcept { return config_.num_heads; }
  [[nodiscard]] const t5_bias_config& config() const noexcept { return config_; }
  [[nodiscard]] const t5_buckets& buckets() const noexcept { return buckets_; }

  /// Bias for head h (0 <= h < num_heads) of a query at pos_q and a key at pos_k. Any int64
  /// positions: the distance saturates at the int64 range, where every bucket has long saturated.
  [[nodiscard]] double bias(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k) const noexcept {
    POSENC_ASSERT(h >= 0 && h < config_.num_heads);
    const auto b = static_cast<std::ptrdiff_t>(buckets_(detail::saturating_difference(pos_k, pos_q)));
    return (*table_)[static_cast<std::size_t>(b * config_.num_heads + h)];
  }

  /// Trainable (trainable_score_bias_encoding): the table, [num_buckets, num_heads] row-major.
  [[nodiscard]] std::ptrdiff_t parameter_count() const noexcept {
    return static_cast<std::ptrdiff_t>(config_.num_buckets) * config_.num_heads;
  }
  /// grad[bucket(pos_k - pos_q), h] += d: the backward of bias() (d = the gradient of that logit).
  void accumulate_bias_gradient(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k, double d,
                                std::span<double> grad) const noexcept {
    accumulate_bias_gradient_at_distance(h, detail::saturating_difference(pos_k, pos_q), d, grad);
  }
  /// The same for a distance d = pos_k - pos_q (the distance form of the fused backward).
  void accumulate_bias_gradient_at_distance(std::ptrdiff_t h, std::int64_t dist, double d,
                                            std::span<double> grad) const noexcept {
    POSENC_ASSERT(h >= 0 && h < config_.num_heads && static_cast<std::ptrdiff_t>(grad.size()) == parameter_count());
    const auto b = static_cast<std::ptrdiff_t>(buckets_(dist));
    grad[static_cast<std::size_t>(b * config_.num_heads + h)] += d;
  }

  /// Distance form (distance_bias_encoding): bias(h, q, k) = bias_at_distance(h, k - q).
  [[nodiscard]] double bias_at_distance(std::ptrdiff_t h, std::int64_t d) const noexcept {
    const auto b = static_cast<std::ptrdiff_t>(buckets_(d));
    return (*table_)[static_cast<std::size_t>(b * config_.num_heads + h)];
  }
  [[nodiscard]] static constexpr double query_bias(std::ptrdiff_t, std::int64_t) noexcept { return 0.0; }
  /// Buckets saturate at the last threshold (bidirectional: both signs; causal: every d >= 0 is bucket 0).
  [[nodiscard]] distance_range bias_distance_range() const noexcept {
    const auto t = buckets_.thresholds();
    const std::int64_t sat = t.empty() ? buckets_.max_exact() : t.back();
    return {-sat, config_.bidirectional ? sat : 0};
  }

 private:
  template <class It>
  t5_bias(t5_bias_config config, It first, std::size_t size) : config_(config), buckets_((validate(config), config)) {
    detail::require(
        size == static_cast<std::size_t>(config.num_buckets) * static_cast<std::size_t>(config.num_heads),
        "t5.table.size", size,
        "num_buckets * num_heads = " + std::to_string(config.num_buckets) + " * " + std::to_string(config.num_heads));
    table_ = std::make_shared<const std::vector<double>>(first, first + static_cast<std::ptrdiff_t>(size));
  }

  t5_bias_config config_;
  t5_buckets buckets_;
  std::shared_ptr<const std::vector<double>> table_;
};

}  // namespace posenc::inline v0
