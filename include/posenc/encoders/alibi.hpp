// posenc/encoders/alibi.hpp — ALiBi, attention with linear biases (Press et al. 2022; docs/spec.md §6).
//
// Head h adds -m_h * distance to its already scaled logits. Slopes follow the reference `get_slopes`
// (ofirpress/attention_with_linear_biases) for any head count, in double; three bias forms are
// offered (symmetric, causal true distance, BLOOM's causal row shift), all computed from explicit
// per-token positions so left padding and packing are right. Masking is the attention's job.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/concepts.hpp>
#include <posenc/core/assert.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// Which bias form; they give identical attention only where stated.
enum class alibi_mode : unsigned char {
  /// -m * |pos_q - pos_k|: exact for bidirectional and causal attention (MPT full, MLX, llama.cpp,
  /// FlashAttention non-causal). Default.
  symmetric,
  /// -m * (pos_q - pos_k) for every pair: the paper's causal bias for pos_k <= pos_q; for a future
  /// key it continues the same line (+m * (pos_k - pos_q)), which a causal mask removes.
  causal_true_distance,
  /// +m * pos_k (ofirpress reference, HF BLOOM, CT2 positive positions): differs from the true
  /// distance by the per-row constant m * pos_q, so it is equal only under a causal softmax.
  causal_row_shift,
};

/// Configuration of `alibi`. Defaults: the paper (max_bias 8), symmetric form.
struct alibi_config {
  std::ptrdiff_t num_heads = 8;  ///< total heads of the model (slopes depend on it)
  double max_bias = 8.0;         ///< MPT attn_config.alibi_bias_max; GGUF {arch}.attention.max_alibi_bias
  alibi_mode mode = alibi_mode::symmetric;
  /// Tensor parallelism: this encoder serves global heads [head_start, head_start + local_heads).
  std::ptrdiff_t head_start = 0;
  std::optional<std::ptrdiff_t> local_heads = std::nullopt;  ///< nullopt = num_heads - head_start
  /// Per-head slope override (num_heads finite values, global head order); empty = the formula.
  std::vector<double> slopes = {};
};

namespace detail {
// start * start^i for i = first, first + step, ..., count values: the reference's
// `get_slopes_power_of_2(p)` (start = 2^(-max_bias / p)), in the same double operations.
inline void alibi_pow2_slopes(std::int64_t p, double max_bias, std::int64_t first, std::int64_t step,
                              std::int64_t count, std::vector<double>& out) {
  const double start = std::pow(2.0, -max_bias / static_cast<double>(p));  // Python 2**x
  for (std::int64_t k = 0, i = first; k < count; ++k, i += step)
    out.push_back(start * std::pow(start, static_cast<double>(i)));
}
}  // namespace detail

/// ALiBi slopes for `num_heads` heads: 2^(-max_bias (h+1) / n) when n is a power of two; otherwise,
/// with c = 2^floor(log2 n), the c slopes of c heads followed by the even-indexed slopes of 2c heads
/// (ofirpress `get_slopes`, HF BLOOM, vLLM, ggml, CT2, MLX all agree). Throws config_error for
/// num_heads <= 0 or max_bias not finite and > 0.
[[nodiscard]] inline std::vector<double> alibi_slopes(std::ptrdiff_t num_heads, double max_bias = 8.0) {
  detail::require(num_heads > 0 && num_heads <= (std::ptrdiff_t{1} << 24), "alibi.num_heads", num_heads, "[1, 2^24]");
  detail::require(std::isfinite(max_bias) && max_bias > 0, "alibi.max_bias", max_bias,
                  "a finite number > 0 (0 means ALiBi off: do not build the encoder)");
  std::ptrdiff_t c = 1;
  while (c * 2 <= num_heads) c *= 2;
  std::vector<double> s;
  s.reserve(static_cast<std::size_t>(num_heads));
  detail::alibi_pow2_slopes(c, max_bias, 0, 1, c, s);
  if (c != num_heads) detail::alibi_pow2_slopes(2 * c, max_bias, 0, 2, num_heads - c, s);
  return s;
}

/// ALiBi (hook: score_bias). Immutable; copies share the slopes.
class alibi {
 public:
  /// Throws config_error for any invalid field.
  explicit alibi(alibi_config config = {}) : mode_(config.mode), head_start_(config.head_start) {
    std::vector<double> all;
    if (config.slopes.empty()) {
      all = alibi_slopes(config.num_heads, config.max_bias);
    } else {
      detail::require(config.num_heads > 0, "alibi.num_heads", config.num_heads, "> 0");
      detail::require(static_cast<std::ptrdiff_t>(config.slopes.size()) == config.num_heads, "alibi.slopes.size",
                      config.slopes.size(), "num_heads = " + std::to_string(config.num_heads));
      for (const double m : config.slopes)  // |m| <= 2^960: m times any int64 distance (< 2^64) stays finite
        detail::require(std::isfinite(m) && std::fabs(m) <= 0x1p960, "alibi.slopes", m, "finite values, |m| <= 2^960");
      all = config.slopes;
    }
    detail::require(config.head_start >= 0 && config.head_start < config.num_heads, "alibi.head_start",
                    config.head_start, "[0, num_heads = " + std::to_string(config.num_heads) + ")");
    const std::ptrdiff_t local = config.local_heads.value_or(config.num_heads - config.head_start);
    detail::require(local > 0 && local <= config.num_heads - config.head_start, "alibi.local_heads", local,
                    "[1, num_heads - head_start = " + std::to_string(config.num_heads - config.head_start) + "]");
    local_heads_ = local;
    total_heads_ = config.num_heads;
    slopes_ = std::make_shared<const std::vector<double>>(all.begin() + head_start_, all.begin() + head_start_ + local);
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "alibi"; }
  /// Heads served by this encoder (local_heads).
  [[nodiscard]] std::ptrdiff_t num_heads() const noexcept { return local_heads_; }
  [[nodiscard]] std::ptrdiff_t total_heads() const noexcept { return total_heads_; }
  [[nodiscard]] std::ptrdiff_t head_start() const noexcept { return head_start_; }
  [[nodiscard]] alibi_mode mode() const noexcept { return mode_; }
  /// The slopes of the served heads (local head h = global head head_start + h).
  [[nodiscard]] std::span<const double> slopes() const noexcept { return *slopes_; }

  /// Bias added to the scaled logit of local head h for a query at pos_q and a key at pos_k. Any
  /// int64 positions: the distance is formed exactly and rounded once to double.
  [[nodiscard]] double bias(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k) const noexcept {
    POSENC_ASSERT(h >= 0 && h < local_heads_);
    const double m = (*slopes_)[static_cast<std::size_t>(h)];
    switch (mode_) {
      case alibi_mode::symmetric:  // the true distance, rounded once (never a wrapped int64)
        return -m * static_cast<double>(detail::distance_magnitude(pos_q, pos_k));
      case alibi_mode::causal_true_distance:
        return m * detail::difference_as_double(pos_k, pos_q);
      case alibi_mode::causal_row_shift:
        return m * static_cast<double>(pos_k);
    }
    return 0.0;
  }

  /// Distance form (distance_bias_encoding): bias(h, q, k) = query_bias(h, q) + bias_at_distance(h, k - q).
  /// BLOOM's row shift m * pos_k splits into m * d plus the per-row constant m * pos_q.
  [[nodiscard]] double bias_at_distance(std::ptrdiff_t h, std::int64_t d) const noexcept {
    POSENC_ASSERT(h >= 0 && h < local_heads_);
    const double m = (*slopes_)[static_cast<std::size_t>(h)];
    return mode_ == alibi_mode::symmetric ? -m * std::fabs(static_cast<double>(d)) : m * static_cast<double>(d);
  }
  [[nodiscard]] double query_bias(std::ptrdiff_t h, std::int64_t pos_q) const noexcept {
    return mode_ == alibi_mode::causal_row_shift ? (*slopes_)[static_cast<std::size_t>(h)] * static_cast<double>(pos_q)
                                                 : 0.0;
  }
  /// Linear in the distance: never constant.
  [[nodiscard]] static constexpr distance_range bias_distance_range() noexcept { return {INT64_MIN, INT64_MAX}; }

 private:
  alibi_mode mode_;
  std::ptrdiff_t head_start_ = 0, local_heads_ = 0, total_heads_ = 0;
  std::shared_ptr<const std::vector<double>> slopes_;
};

}  // namespace posenc::inline v0
