// posenc/encoders/temperature.hpp — attention temperature: a position-dependent query scale.
//
// docs/spec.md §8.8. Two rules ship in real models (both multiply every element of the query at position
// p by a factor >= 1; keys are untouched):
//   llama4       (HF Llama4TextAttention, attn_temperature_tuning; NoPE layers only):
//                q *= log(floor((p + 1) / floor_scale) + 1) * attn_scale + 1
//   llama4_beta  (HF ministral3 / Mistral 3, rope_parameters.llama_4_scaling_beta; every layer, after
//                RoPE): q *= 1 + beta * ln(1 + floor(p / original_max_position))  — no "+ 1" on p.
// The two differ at p = k * L0 - 1. Positions are int64 and the floor is an integer division, so
// positions above 2^24 are exact (HF's fp32 reference rounds them). Compose with combined<>:
// combine(rope, temperature) on Ministral 3, temperature alone on Llama 4's NoPE layers. A negative
// position whose floor is negative would take the log of a value <= 0; the factor is 1 there (no
// reference produces negative cache positions). Models qk_transform_encoding (transform_k is the
// identity), so sdpa, the KV cache (queries scaled at their positions) and the fast attention take it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <posenc/core/assert.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0 {

/// Which temperature formula.
enum class temperature_rule : unsigned char {
  llama4,       ///< log(floor((p + 1) / floor_scale) + 1) * attn_scale + 1
  llama4_beta,  ///< 1 + beta * ln(1 + floor(p / original_max_position))
};

/// Parameters. For llama4: floor_scale (HF `floor_scale`, 8192 in Llama 4) and scale = attn_scale
/// (0.1). For llama4_beta: floor_scale = original_max_position_embeddings (L0) and scale = beta.
struct attention_temperature_config {
  std::ptrdiff_t head_dim = 0;  ///< D of the query rows (required, >= 1)
  temperature_rule rule = temperature_rule::llama4;
  double floor_scale = 8192;  ///< > 0, finite
  double scale = 0.1;         ///< >= 0, finite
  friend bool operator==(const attention_temperature_config&, const attention_temperature_config&) = default;
};

/// The temperature encoder. Immutable; copyable.
class attention_temperature {
 public:
  /// config_error naming "attention_temperature.head_dim", ".floor_scale" (llama4) or
  /// ".original_max_position" (llama4_beta), ".attn_scale" (llama4) or ".beta" (llama4_beta).
  explicit attention_temperature(attention_temperature_config c) : cfg_(c) {
    const bool l4 = c.rule == temperature_rule::llama4;
    detail::require(c.head_dim >= 1, "attention_temperature.head_dim", c.head_dim, ">= 1");
    detail::require(std::isfinite(c.floor_scale) && c.floor_scale > 0,
                    l4 ? "attention_temperature.floor_scale" : "attention_temperature.original_max_position",
                    c.floor_scale, "a finite number > 0");
    detail::require(std::isfinite(c.scale) && c.scale >= 0,
                    l4 ? "attention_temperature.attn_scale" : "attention_temperature.beta", c.scale,
                    "a finite number >= 0");
    integral_ = c.floor_scale == std::floor(c.floor_scale) && c.floor_scale < 9.0e18;
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "temperature"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return cfg_.head_dim; }
  [[nodiscard]] const attention_temperature_config& config() const noexcept { return cfg_; }

  /// The factor the query at position p is multiplied by.
  [[nodiscard]] double factor(std::int64_t p) const noexcept {
    // llama4 floors (p + 1) / floor_scale; llama4_beta floors p / L0.
    const bool l4 = cfg_.rule == temperature_rule::llama4;
    const std::int64_t n = l4 ? (p == INT64_MAX ? p : p + 1) : p;
    double q = 0;
    if (integral_) {
      const auto d = static_cast<std::int64_t>(cfg_.floor_scale);
      std::int64_t v = n / d;
      if ((n % d != 0) && ((n < 0) != (d < 0))) --v;  // floor, not truncation
      q = static_cast<double>(v);
    } else {
      q = std::floor(static_cast<double>(n) / cfg_.floor_scale);
    }
    if (q < 0) return 1.0;
    return 1.0 + cfg_.scale * std::log1p(q);
  }

  /// Scales every element of q at its position.
  template <storage_type T>
  void transform_q(tensor_view<T> q, std::span<const std::int64_t> positions) const {
    detail::require_shape(static_cast<std::ptrdiff_t>(positions.size()) == q.batch() * q.tokens(), "positions",
                          positions.size(), "q.batch * q.tokens (one position per token)");
    detail::require_shape(q.dim() == cfg_.head_dim || q.empty(), "q.dim", q.dim(), "the encoder's head_dim");
    for (std::ptrdiff_t b = 0; b < q.batch(); ++b)
      for (std::ptrdiff_t t = 0; t < q.tokens(); ++t) {
        const double f = factor(positions[static_cast<std::size_t>(b * q.tokens() + t)]);
        if (f == 1.0) continue;
        using C = compute_t<T>;
        const auto fc = static_cast<C>(f);
        for (std::ptrdiff_t h = 0; h < q.heads(); ++h) {
          T* r = q.row(b, t, h);
          const std::ptrdiff_t s = q.stride(axis::dim);
          for (std::ptrdiff_t d = 0; d < q.dim(); ++d) r[d * s] = static_cast<T>(static_cast<C>(r[d * s]) * fc);
        }
      }
  }
  /// Keys are not scaled.
  template <storage_type T>
  void transform_k(tensor_view<T>, std::span<const std::int64_t>) const noexcept {}

  /// Backward (qk_transform_backward_encoding): the scale is its own transpose, so the gradient
  /// w.r.t. the unscaled query is the incoming one times the same factor; keys pass through.
  template <storage_type T>
  void transform_q_backward(tensor_view<T> dq, std::span<const std::int64_t> positions) const {
    transform_q(dq, positions);
  }
  template <storage_type T>
  void transform_k_backward(tensor_view<T>, std::span<const std::int64_t>) const noexcept {}

 private:
  attention_temperature_config cfg_;
  bool integral_ = false;
};

}  // namespace posenc::inline v0
