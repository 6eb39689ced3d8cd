// posenc/rope/schedule.hpp — the RoPE frequency schedule: a validated rope_config reduced to frequencies.
//
// Part 1 of docs/design.md §6 (pure math, no memory layout): every scaling of rope_scaling through its
// descriptor (rope/scaling/<name>.hpp: default, linear/PI, NTK, dynamic NTK, YaRN (+DeepSeek mscale),
// Llama 3, LongRoPE, per-pair factors, explicit frequencies; docs/spec.md §7-8). Length-dependent
// schedules (dynamic NTK with max_position_in_call, LongRoPE with per_call_max_position) answer
// `at(seq_len)`; the rest ignore the length.
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
#include <posenc/rope/validate.hpp>

namespace posenc::inline v0 {

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
    visit_scaling(cfg_.scaling, [&](auto d, const auto& s) {
      using D = decltype(d);
      length_dependent_ = D::length_dependent(s);
      base_length_ = D::base_length(s);
      switch_length_ = D::switch_length(s);
    });
    base_ = compute(base_length_);
    if (switch_length_) long_ = compute(*switch_length_);
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
  /// max_position_in_call; LongRoPE with per_call_max_position; ...: the descriptor says).
  [[nodiscard]] bool length_dependent() const noexcept { return length_dependent_; }

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
    if (!length_dependent_) return base_;
    if (switch_length_) return seq_len >= *switch_length_ ? long_ : base_;
    return seq_len <= base_length_ ? base_ : compute(seq_len);
  }

  /// The same as at(seq_len) without allocating: either a view of stored frequencies or of
  /// `scratch` (which must hold pairs() doubles) filled for this length (dynamic NTK).
  [[nodiscard]] detail::frequencies_view select(std::int64_t seq_len, std::span<double> scratch) const noexcept {
    if (!length_dependent_) return detail::view_of(base_);
    if (switch_length_) return detail::view_of(seq_len >= *switch_length_ ? long_ : base_);
    if (seq_len <= base_length_) return detail::view_of(base_);
    POSENC_ASSERT(static_cast<int>(scratch.size()) >= pairs());
    const auto all = scratch.first(static_cast<std::size_t>(pairs()));
    const auto rotated = all.first(static_cast<std::size_t>(dims_.rotated_pairs()));
    const scaling_context ctx = detail::scaling_context_of(cfg_);
    const scaling_magnitudes m = visit_scaling(
        cfg_.scaling, [&](auto d, const auto& s) { return decltype(d)::frequencies(s, ctx, seq_len, rotated); });
    std::fill(all.begin() + static_cast<std::ptrdiff_t>(rotated.size()), all.end(), 0.0);
    return {scratch.data(), pairs(), m.attention_scaling};
  }

 private:
  static constexpr double max_attention_scaling = 1024;
  void require_finite_result(const rope_frequencies& f) const {
    // The messages are built only on failure: a 2^20-wide head has 2^19 entries to check.
    const auto fail = [&](const std::string& expected) {
      throw config_error(
          "rope.scaling",
          std::string(posenc::scaling_name(cfg_.scaling)) + " scaling with theta = " + detail::to_text(cfg_.theta),
          expected);
    };
    // w <= 2^64 keeps every angle p * w finite for any int64 p, also as float32 products (reference_fp32).
    for (std::size_t k = 0; k < f.inv_freq.size(); ++k)
      if (!(std::isfinite(f.inv_freq[k]) && f.inv_freq[k] <= 0x1p64))
        fail("parameters whose frequencies are finite and at most 2^64 (w[" + std::to_string(k) +
             "] = " + detail::to_text(f.inv_freq[k]) + ")");
    // M multiplies every rotated value: real models have M < 2; above 1024 a unit-sized row would
    // leave float16's range, so it is refused rather than turned into inf rows.
    if (!(std::isfinite(f.attention_scaling) && f.attention_scaling <= max_attention_scaling))
      fail("parameters whose attention scaling M is at most 1024 (M = " + detail::to_text(f.attention_scaling) + ")");
    if (!std::isfinite(f.softmax_scale_multiplier)) fail("parameters whose softmax scale multiplier is finite");
  }

  // The frequencies at `seq_len` (the descriptor's), the proportional tail's pairs at frequency 0.
  [[nodiscard]] rope_frequencies compute(std::int64_t seq_len) const {
    rope_frequencies f;
    f.inv_freq.assign(static_cast<std::size_t>(dims_.kernel_pairs()), 0.0);
    const auto rotated = std::span<double>(f.inv_freq).first(static_cast<std::size_t>(dims_.rotated_pairs()));
    const scaling_context ctx = detail::scaling_context_of(cfg_);
    const scaling_magnitudes m = visit_scaling(
        cfg_.scaling, [&](auto d, const auto& s) { return decltype(d)::frequencies(s, ctx, seq_len, rotated); });
    f.attention_scaling = m.attention_scaling;
    f.softmax_scale_multiplier = m.softmax_scale_multiplier;
    return f;
  }

  rope_config cfg_;
  detail::rope_dims dims_{};
  rope_frequencies base_;
  rope_frequencies long_;                      // the second set of a two-set scaling (LongRoPE per call)
  bool length_dependent_ = false;              // the descriptor's length_dependent()
  std::int64_t base_length_ = 0;               // lengths up to this one use base_
  std::optional<std::int64_t> switch_length_;  // two-set scalings: lengths from this one use long_
};

}  // namespace posenc::inline v0
