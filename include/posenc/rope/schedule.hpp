// posenc/rope/schedule.hpp — the RoPE frequency schedule: a validated rope_config reduced to frequencies.
//
// Part 1 of docs/design.md §6 (pure math, no memory layout): default, linear/PI, NTK (static alpha),
// dynamic NTK, YaRN (+DeepSeek mscale), Llama 3, LongRoPE, per-pair factors and explicit
// frequencies (docs/spec.md §7-8). Length-dependent schedules (dynamic NTK with max_position_in_call,
// LongRoPE with per_call_max_position) answer `at(seq_len)`; the rest ignore the length.
// This header does not rotate anything (rope/rope.hpp) and does not build tables (cos_sin_table.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <posenc/core/assert.hpp>
#include <posenc/kernels/types.hpp>
#include <posenc/rope/config.hpp>
#include <posenc/rope/frequencies.hpp>
#include <posenc/rope/scaling/llama3.hpp>
#include <posenc/rope/scaling/longrope.hpp>
#include <posenc/rope/scaling/ntk.hpp>
#include <posenc/rope/scaling/yarn.hpp>
#include <posenc/rope/validate.hpp>

namespace posenc::inline v0 {

namespace detail {

/// out[k] = theta^(-2k/denominator) for k < rotated, 0 for the rest of `out` (proportional tail).
inline void fill_default(double theta, int denominator, int rotated, std::span<double> out) noexcept {
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k] =
        static_cast<int>(k) < rotated
            ? 1.0 / std::pow(theta, static_cast<double>(2 * static_cast<int>(k)) / static_cast<double>(denominator))
            : 0.0;
}

}  // namespace detail

/// A validated RoPE configuration reduced to per-pair frequencies and magnitudes.
///
/// With angles = angle_mode::reference_fp32, the default and linear schedules compute inv_freq in
/// HF's float32 arithmetic (bit-identical to HF); the other scalings are computed in double and
/// rounded to float by the rows, which can differ from HF's fp32 inv_freq by ~3 ulp — for
/// bit-exact reproduction of those, pass the reference's fp32 inv_freq as explicit_frequencies.
///
/// inv_freq has one entry per kernel pair: R/2 for prefix rotary, (D - offset)/2 for proportional
/// rotary (whose pairs beyond R/2 have frequency 0). In proportional mode every formula's "R"
/// (the exponent denominator, YaRN's correction dims, NTK's R/(R-2)) is D - offset, as HF v5 does
/// it; per-pair factor lists still have R/2 entries (one per rotating pair).
class rope_schedule {
 public:
  /// Validates `c` (config_error for every docs/spec.md §12 case) and precomputes the static frequencies.
  explicit rope_schedule(rope_config c) : cfg_(std::move(c)) {
    validate(cfg_);
    dims_ = detail::dims_of(cfg_);
    base_ = compute(base_length());
    if (const auto* l = std::get_if<longrope_scaling>(&cfg_.scaling)) {
      // L0 + 1 (the first length using the long factors), saturating: L0 may be INT64_MAX.
      const std::int64_t first_long = l->original_max_position + (l->original_max_position < INT64_MAX ? 1 : 0);
      if (l->switch_policy == longrope_switch::per_call_max_position) long_ = compute(first_long);
    }
    // Parameters that are each valid can still combine to overflow (an NTK alpha of 1e-300 with
    // compression allowed makes the base 0 and w inf): refused here, not as inf/NaN rows later.
    require_finite_result(base_);
    require_finite_result(long_);
  }

  [[nodiscard]] const rope_config& config() const noexcept { return cfg_; }
  [[nodiscard]] const detail::rope_dims& dims() const noexcept { return dims_; }
  /// R (rotated elements).
  [[nodiscard]] std::ptrdiff_t rotary_dim() const noexcept { return dims_.rotary_dim; }
  /// Entries of inv_freq (kernel pairs).
  [[nodiscard]] int pairs() const noexcept { return dims_.kernel_pairs(); }

  /// The memory shape the rotation kernels need for this config.
  [[nodiscard]] kernels::rope_geometry geometry() const noexcept {
    // Validated: head_dim <= max_rope_head_dim, so the kernels' int widths hold it.
    return {static_cast<int>(cfg_.head_dim), dims_.span, static_cast<int>(cfg_.rotary_offset), cfg_.layout};
  }

  /// True when the frequencies depend on the length of the call (dynamic NTK with
  /// max_position_in_call; LongRoPE with per_call_max_position).
  [[nodiscard]] bool length_dependent() const noexcept {
    if (const auto* d = std::get_if<dynamic_ntk_scaling>(&cfg_.scaling))
      return d->length_source == dynamic_length_source::max_position_in_call;
    if (const auto* l = std::get_if<longrope_scaling>(&cfg_.scaling))
      return l->switch_policy == longrope_switch::per_call_max_position;
    return false;
  }

  /// The length a call with these positions stands for: max(positions) + 1 (HF), 0 when empty.
  [[nodiscard]] static std::int64_t effective_length(std::span<const std::int64_t> positions) noexcept {
    if (positions.empty()) return 0;
    const std::int64_t m = *std::max_element(positions.begin(), positions.end());
    return m == std::numeric_limits<std::int64_t>::max() ? m : m + 1;
  }

  /// The static frequencies: for length-dependent schedules, those at lengths <= L0 (plain base
  /// for dynamic NTK; short factors for LongRoPE per_call_max_position).
  [[nodiscard]] const rope_frequencies& base() const noexcept { return base_; }

  /// Frequencies for a call of effective length `seq_len` (== base() unless length_dependent()).
  [[nodiscard]] rope_frequencies at(std::int64_t seq_len) const {
    if (!length_dependent()) return base_;
    if (const auto* l = std::get_if<longrope_scaling>(&cfg_.scaling))
      return longrope_uses_long(*l, seq_len) ? long_ : base_;
    return compute(seq_len);
  }

  /// The same as at(seq_len) without allocating: either a view of stored frequencies or of
  /// `scratch` (which must hold pairs() doubles) filled for this length (dynamic NTK).
  [[nodiscard]] detail::frequencies_view select(std::int64_t seq_len, std::span<double> scratch) const noexcept {
    if (!length_dependent()) return detail::view_of(base_);
    if (const auto* l = std::get_if<longrope_scaling>(&cfg_.scaling))
      return detail::view_of(longrope_uses_long(*l, seq_len) ? long_ : base_);
    const auto& d = std::get<dynamic_ntk_scaling>(cfg_.scaling);
    if (seq_len <= d.original_max_position) return detail::view_of(base_);
    POSENC_ASSERT(static_cast<int>(scratch.size()) >= pairs());
    const double theta = dynamic_ntk_theta(cfg_.theta, d.factor, d.original_max_position, seq_len, dims_.denominator);
    detail::fill_default(theta, dims_.denominator, dims_.rotated_pairs(),
                         scratch.first(static_cast<std::size_t>(pairs())));
    return {scratch.data(), pairs(), 1.0};
  }

 private:
  // The length base() stands for.
  [[nodiscard]] std::int64_t base_length() const noexcept {
    if (const auto* d = std::get_if<dynamic_ntk_scaling>(&cfg_.scaling)) {
      if (d->length_source == dynamic_length_source::fixed_max) {  // vLLM: L = L0 * s, once
        const double L = static_cast<double>(d->original_max_position) * d->factor;
        return L >= 9.2e18 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(L);
      }
      return d->original_max_position;
    }
    if (const auto* l = std::get_if<longrope_scaling>(&cfg_.scaling)) return l->original_max_position;
    return 0;
  }

  static constexpr double max_attention_scaling = 1024;
  void require_finite_result(const rope_frequencies& f) const {
    const std::string what = std::string(scaling_name()) + " scaling with theta = " + detail::to_text(cfg_.theta);
    // w <= 2^64 keeps every angle p * w finite for any int64 p, also as float32 products (reference_fp32).
    for (std::size_t k = 0; k < f.inv_freq.size(); ++k)
      detail::require(std::isfinite(f.inv_freq[k]) && f.inv_freq[k] <= 0x1p64, "rope.scaling", what,
                      "parameters whose frequencies are finite and at most 2^64 (w[" + std::to_string(k) +
                          "] = " + detail::to_text(f.inv_freq[k]) + ")");
    // M multiplies every rotated value: real models have M < 2; above 1024 a unit-sized row would
    // leave float16's range, so it is refused rather than turned into inf rows.
    detail::require(
        std::isfinite(f.attention_scaling) && f.attention_scaling <= max_attention_scaling, "rope.scaling", what,
        "parameters whose attention scaling M is at most 1024 (M = " + detail::to_text(f.attention_scaling) + ")");
    detail::require(std::isfinite(f.softmax_scale_multiplier), "rope.scaling", what,
                    "parameters whose softmax scale multiplier is finite");
  }
  [[nodiscard]] const char* scaling_name() const noexcept {
    constexpr const char* names[] = {"default",           "linear",  "ntk", "dynamic", "yarn", "llama3", "longrope",
                                     "frequency_factors", "explicit"};
    static_assert(std::variant_size_v<rope_scaling> == sizeof(names) / sizeof(names[0]));
    return names[cfg_.scaling.index()];
  }

  [[nodiscard]] rope_frequencies compute(std::int64_t seq_len) const {
    const int P = dims_.kernel_pairs(), A = dims_.rotated_pairs(), den = dims_.denominator;
    rope_frequencies f;
    f.inv_freq.assign(static_cast<std::size_t>(P), 0.0);
    std::vector<double> w = detail::default_inv_freq(cfg_.theta, den, A);
    std::visit(
        [&](const auto& s) {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, default_scaling>) {
            if (cfg_.angles == angle_mode::reference_fp32) w = detail::hf_fp32_inv_freq(cfg_.theta, den, A);
          } else if constexpr (std::is_same_v<S, linear_scaling>) {
            if (cfg_.angles == angle_mode::reference_fp32) {  // HF: inv_freq /= factor, in float32
              w = detail::hf_fp32_inv_freq(cfg_.theta, den, A);
              for (double& x : w) x = static_cast<double>(static_cast<float>(x) / static_cast<float>(s.factor));
            } else {
              for (double& x : w) x /= s.factor;
            }
          } else if constexpr (std::is_same_v<S, ntk_scaling>) {
            w = detail::default_inv_freq(ntk_static_theta(cfg_.theta, s.alpha, den), den, A);
          } else if constexpr (std::is_same_v<S, dynamic_ntk_scaling>) {
            w = detail::default_inv_freq(dynamic_ntk_theta(cfg_.theta, s.factor, s.original_max_position, seq_len, den),
                                         den, A);
          } else if constexpr (std::is_same_v<S, yarn_scaling>) {
            detail::apply_yarn(w, s, den, cfg_.theta);
            f.attention_scaling = yarn_attention_factor(s);
            f.softmax_scale_multiplier = yarn_softmax_scale_multiplier(s);
          } else if constexpr (std::is_same_v<S, llama3_scaling>) {
            detail::apply_llama3(w, s);
          } else if constexpr (std::is_same_v<S, longrope_scaling>) {
            const auto& ff = longrope_uses_long(s, seq_len) ? s.long_factor : s.short_factor;
            // HF: 1 / (f_k * theta^(2k/R)).
            for (std::size_t k = 0; k < w.size(); ++k)
              w[k] = 1.0 / (ff[k] * std::pow(cfg_.theta, static_cast<double>(2 * k) / static_cast<double>(den)));
            f.attention_scaling = longrope_attention_factor(s);
          } else if constexpr (std::is_same_v<S, frequency_factors>) {
            for (std::size_t k = 0; k < w.size(); ++k) w[k] /= s.factors[k];
            f.attention_scaling = s.attention_factor;
          } else if constexpr (std::is_same_v<S, explicit_frequencies>) {
            w = s.inv_freq;
            f.attention_scaling = s.attention_factor;
          }
        },
        cfg_.scaling);
    std::copy(w.begin(), w.end(), f.inv_freq.begin());
    return f;
  }

  rope_config cfg_;
  detail::rope_dims dims_{};
  rope_frequencies base_;
  rope_frequencies long_;  // LongRoPE per_call_max_position: the long set
};

}  // namespace posenc::inline v0
