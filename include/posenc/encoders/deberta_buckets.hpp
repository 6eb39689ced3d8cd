// posenc/encoders/deberta_buckets.hpp — DeBERTa's relative distances and the table row each one reads
// (He et al. 2021 §3, with the log buckets of DeBERTa-v2/v3; docs/spec.md §14.1).
//
// r = pos_q - pos_k (DeBERTa's sign), mid = position_buckets / 2, M = max_relative_positions:
//   bucket(r) = r                                                            |r| <= mid
//             = sign(r) (mid + ceil(ln(|r| / mid) / ln((M - 1) / mid) (mid - 1)))   otherwise
// in Hugging Face's float32 arithmetic (`make_log_bucket_position`), bit for bit; v1 (position_buckets
// <= 0) has no buckets: bucket(r) = r. The attention reads table row clamp(bucket(r) + span, 0,
// 2 span - 1), span = position_buckets (v1: max_relative_positions). HF buckets every distance
// (past |r| = M - 1 the buckets keep growing and the row saturates); microsoft/DeBERTa clamps r into
// [-(M - 1), M - 1] first and takes ln((M - 1) / mid) in double: deberta_bucket_rule::microsoft.
// Integer thresholds, found once at construction, make the hot path log-free up to the saturation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <posenc/concepts.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// Whose bucket arithmetic (they differ beyond |r| = max_relative_positions - 1, and at a few bucket
/// boundaries where the two float32 evaluations of the log ratio round differently).
enum class deberta_bucket_rule : unsigned char {
  hugging_face,  ///< transformers' DebertaV2 (every HF config): no clamp, float32 ln((M - 1) / mid)
  microsoft,     ///< microsoft/DeBERTa da_utils: |r| clamped to M - 1, ln((M - 1) / mid) in double
};

/// The bucket parameters (HF config.json names). Defaults: DeBERTa-v3 (256 buckets, 512 positions).
struct deberta_bucket_config {
  std::int64_t position_buckets = 256;        ///< <= 0: no buckets (DeBERTa v1, or a v2 config without them)
  std::int64_t max_relative_positions = 512;  ///< M (HF: < 1 means max_position_embeddings; resolved by the loader)
  deberta_bucket_rule rule = deberta_bucket_rule::hugging_face;
  /// Rows per direction of the position tables: position_buckets, or M without buckets.
  [[nodiscard]] std::int64_t span() const noexcept {
    return position_buckets > 0 ? position_buckets : max_relative_positions;
  }
};

/// Throws config_error naming the first invalid field.
inline void validate(const deberta_bucket_config& c) {
  constexpr std::int64_t lim = std::int64_t{1} << 40;
  detail::require(c.max_relative_positions >= 1 && c.max_relative_positions <= lim, "deberta.max_relative_positions",
                  c.max_relative_positions, "[1, 2^40] (resolve HF's -1 to max_position_embeddings first)");
  if (c.position_buckets <= 0) return;
  detail::require(c.position_buckets >= 2 && c.position_buckets <= (std::int64_t{1} << 20), "deberta.position_buckets",
                  c.position_buckets, "<= 0 (no buckets) or [2, 2^20]");
  const std::int64_t mid = c.position_buckets / 2;
  detail::require(c.max_relative_positions - 1 > mid, "deberta.max_relative_positions", c.max_relative_positions,
                  "> position_buckets / 2 + 1 = " + std::to_string(mid + 1) +
                      " (the log buckets divide by ln((max_relative_positions - 1) / (position_buckets / 2)))");
}

namespace detail {

/// HF's log bucket of a distance magnitude n > mid, in its float32 operations:
/// ceil(float(ln(float(n) / mid)) / log_den * (mid - 1)) + mid.
inline std::int64_t deberta_log_bucket_fp32(std::int64_t n, std::int64_t mid, float log_den) noexcept {
  const float x = static_cast<float>(n) / static_cast<float>(mid);  // abs_pos / mid (true division, float32)
  const float y = std::log(x) / log_den * static_cast<float>(mid - 1);
  return static_cast<std::int64_t>(std::ceil(y)) + mid;
}

/// ln((M - 1) / mid) as each rule forms it: HF a float32 log of the float32 ratio, microsoft a double
/// log rounded to float32 (the divisor of a float32 tensor).
inline float deberta_log_denominator(const deberta_bucket_config& c) noexcept {
  const double ratio = static_cast<double>(c.max_relative_positions - 1) / static_cast<double>(c.position_buckets / 2);
  return c.rule == deberta_bucket_rule::hugging_face ? std::log(static_cast<float>(ratio))
                                                     : static_cast<float>(std::log(ratio));
}

}  // namespace detail

/// DeBERTa's bucket function and table rows. Immutable; copies share the thresholds.
class deberta_buckets {
 public:
  /// Throws config_error for an invalid configuration.
  explicit deberta_buckets(deberta_bucket_config c) : c_(c) {
    validate(c_);
    span_ = c_.span();
    if (c_.position_buckets <= 0) return;
    mid_ = c_.position_buckets / 2;
    log_den_ = detail::deberta_log_denominator(c_);
    // thresholds[v - mid - 1] = smallest n with bucket(n) >= v, for v = mid + 1 .. span: enough to
    // find every row below the saturation. The float32 formula is non-decreasing in n.
    auto th = std::make_shared<std::vector<std::int64_t>>();
    std::int64_t lo = mid_;  // bucket(lo) = mid < v
    for (std::int64_t v = mid_ + 1; v <= span_; ++v) {
      std::int64_t a = lo, b = std::int64_t{1} << 62;
      if (detail::deberta_log_bucket_fp32(b, mid_, log_den_) < v) break;  // never reached (huge M)
      while (b - a > 1) {
        const std::int64_t m = a + (b - a) / 2;
        (detail::deberta_log_bucket_fp32(m, mid_, log_den_) >= v ? b : a) = m;
      }
      th->push_back(b);
      lo = b - 1;
    }
    thresholds_ = std::move(th);
  }

  [[nodiscard]] const deberta_bucket_config& config() const noexcept { return c_; }
  /// Rows per direction (the tables have 2 span() rows).
  [[nodiscard]] std::int64_t span() const noexcept { return span_; }

  /// The bucket of r = pos_q - pos_k, as the configured rule computes it (any int64 r).
  [[nodiscard]] std::int64_t operator()(std::int64_t r) const noexcept {
    if (c_.rule == deberta_bucket_rule::microsoft)
      r = std::clamp(r, -(c_.max_relative_positions - 1), c_.max_relative_positions - 1);
    if (c_.position_buckets <= 0) return r;
    const std::int64_t n = r < 0 ? -std::max(r, -INT64_MAX) : r;
    if (n <= mid_) return r;
    const std::int64_t b = magnitude_bucket(n);
    return r < 0 ? -b : b;
  }

  /// The table row of r = pos_q - pos_k: clamp(bucket(r) + span, 0, 2 span - 1).
  [[nodiscard]] std::int64_t row(std::int64_t r) const noexcept {
    const std::int64_t b = std::clamp((*this)(r), -span_, span_);  // any int64 bucket, no overflow
    return std::clamp(b + span_, std::int64_t{0}, 2 * span_ - 1);
  }

  /// The row stops changing at r >= hi and at r <= lo (r = pos_q - pos_k): HF's rows saturate at
  /// 2 span - 1 and 0; microsoft's at the rows of +-(M - 1) (row 0 is never read). lo = INT64_MIN
  /// when no int64 distance reaches the last row.
  [[nodiscard]] distance_range saturation() const noexcept {
    std::int64_t hi = first_at_least(span_ - 1), lo = -first_at_least(span_);
    if (lo == -INT64_MAX) lo = INT64_MIN;
    if (c_.rule == deberta_bucket_rule::microsoft) {
      hi = std::min(hi, c_.max_relative_positions - 1);
      lo = std::max(lo, -(c_.max_relative_positions - 1));
    }
    return {lo, hi};
  }

 private:
  // bucket(n) for n > mid: through the thresholds below the saturation, else the formula itself.
  [[nodiscard]] std::int64_t magnitude_bucket(std::int64_t n) const noexcept {
    const auto& t = *thresholds_;
    if (t.empty() || n >= t.back()) return detail::deberta_log_bucket_fp32(n, mid_, log_den_);
    return mid_ + static_cast<std::int64_t>(std::upper_bound(t.begin(), t.end(), n) - t.begin());
  }

  // The smallest r >= 0 with bucket(r) >= v (v >= 0); INT64_MAX when no int64 distance reaches it.
  [[nodiscard]] std::int64_t first_at_least(std::int64_t v) const noexcept {
    if (c_.position_buckets <= 0 || v <= mid_) return v;
    const auto& t = *thresholds_;
    const auto k = static_cast<std::size_t>(v - mid_ - 1);
    return k < t.size() ? t[k] : INT64_MAX;
  }

  deberta_bucket_config c_;
  std::int64_t span_ = 0, mid_ = 0;
  float log_den_ = 1;
  std::shared_ptr<const std::vector<std::int64_t>> thresholds_ = std::make_shared<const std::vector<std::int64_t>>();
};

}  // namespace posenc::inline v0
