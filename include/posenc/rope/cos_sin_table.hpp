// posenc/rope/cos_sin_table.hpp — cos/sin rows (positions x pairs) for a RoPE frequency set.
//
// Part 2 of docs/design.md §6. Rows hold M*cos(p*w_k) and M*sin(p*w_k) for positions [first, first+count).
// angle_mode::exact forms and range-reduces every angle in double (kernels::compute_angles) and
// rounds once to C, so float rows are within ~6e-8 of the exact value at any position (docs/spec.md
// §1.3); angle_mode::reference_fp32 reproduces Hugging Face's float32 arithmetic instead.
// A table is optional: the encoder computes rows on the fly for positions no table covers.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <posenc/core/assert.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/kernels/angles.hpp>
#include <posenc/kernels/types.hpp>
#include <posenc/rope/angles.hpp>
#include <posenc/rope/frequencies.hpp>

namespace posenc::inline v0 {

namespace detail {

/// Rows for `count` positions: row t at cos + t * stride, f.pairs values each, magnitude
/// `magnitude` folded in. exact: double angles via kernels::compute_angles (the SIMD entry).
/// reference_fp32: w_f = float(w); angle = float(float(p) * w_f); float cos/sin; then * float(M)
/// in float, as HF LlamaRotaryEmbedding does (the value is then widened to C if C is double).
template <class C>
void fill_angle_rows(const frequencies_view& f, angle_mode mode, const std::int64_t* positions, std::ptrdiff_t count,
                     double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  if (mode == angle_mode::exact) {
    kernels::compute_angles(f.inv_freq, f.pairs, positions, count, magnitude, cos, sin, stride);
    return;
  }
  const auto m = static_cast<float>(magnitude);
  for (std::ptrdiff_t t = 0; t < count; ++t) {
    for (int k = 0; k < f.pairs; ++k) {
      float s, c;
      sincos_reference_fp32(positions[t], static_cast<float>(f.inv_freq[k]), s, c);
      cos[t * stride + k] = static_cast<C>(c * m);
      sin[t * stride + k] = static_cast<C>(s * m);
    }
  }
}

}  // namespace detail

/// Where rope::rotate with a table takes each token's cos/sin row from. Both give the same bits:
/// the table's rows are made by the same function from the same frequencies, magnitude and mode.
enum class angle_source {
  automatic,   ///< table rows or on the fly, by choose_angle_source (the default)
  table,       ///< table rows where the table covers the position (on the fly elsewhere)
  on_the_fly,  ///< every row computed per call from the table's frequencies and angle mode
};

/// The rule angle_source::automatic applies to a token whose position the table covers: its row,
/// or on the fly. Measured (bench/rotate_bench rope/api/*, fp32, in place, Zen 4 AVX-512): reading
/// a row costs less than computing it at every working set, DRAM included, and most where the rows
/// are largest relative to the data: 32768 x 8 heads (16 MiB of rows) table 1.8-2.0x faster than
/// on the fly, 262144 x 1 head (rows as large as the head rows, 128 MiB each) 2.2-2.6x. A 64-pair
/// row costs ~160 ns to compute and 512 B to read, so on the fly wins only below ~3 GB/s of
/// memory bandwidth per core, which no CPU the library targets has (a Xeon at a
/// quarter of this EPYC's bandwidth, still has about twice that): the table is chosen wherever it covers the position,
/// and positions it does not cover are computed. `source` other than automatic is returned unchanged.
[[nodiscard]] constexpr angle_source choose_angle_source(angle_source source) noexcept {
  return source == angle_source::automatic ? angle_source::table : source;
}

/// A cos/sin table for positions [first, first + count): `pairs()` values per row, M folded in.
/// C is float (tables for float/bfloat16/float16 storage) or double (for double storage).
template <class C>
requires std::same_as<C, float> || std::same_as<C, double>
class cos_sin_table {
 public:
  /// Builds rows for positions [first, first + count) from `f` (magnitude f.attention_scaling).
  /// Throws config_error when count < 0, the last position first + count - 1 overflows (a table
  /// may end at INT64_MAX), or count * pairs is not a valid
  /// element count ("cos_sin_table.count"); std::bad_alloc when the memory is not there.
  /// `mode` is not taken from the rope the frequencies came from: a table for a reference_fp32
  /// rope must be given angle_mode::reference_fp32 here too (rope::rotate uses the table's rows).
  cos_sin_table(const rope_frequencies& f, std::int64_t first, std::int64_t count, angle_mode mode = angle_mode::exact)
      : inv_freq_(f.inv_freq), magnitude_(f.attention_scaling), mode_(mode), first_(first), count_(count) {
    detail::require(count >= 0, "cos_sin_table.count", count, ">= 0");
    detail::require(count == 0 || first <= INT64_MAX - (count - 1), "cos_sin_table.first", first,
                    "first + count - 1 <= INT64_MAX");
    const auto P = static_cast<std::size_t>(pairs());
    cos_.resize(static_cast<std::size_t>(detail::checked_product(
        "cos_sin_table.count", {{"count", count}, {"pairs", pairs()}}, detail::max_elements<C>)));
    sin_.resize(cos_.size());
    constexpr std::int64_t block = 256;
    std::int64_t pos[block];
    for (std::int64_t r0 = 0; r0 < count; r0 += block) {
      const std::int64_t n = std::min(block, count - r0);
      for (std::int64_t i = 0; i < n; ++i) pos[i] = first + r0 + i;
      const auto off = static_cast<std::size_t>(r0) * P;
      detail::fill_angle_rows(source_frequencies(), mode, pos, n, magnitude_, cos_.data() + off, sin_.data() + off,
                              static_cast<std::ptrdiff_t>(P));
    }
  }

  [[nodiscard]] std::int64_t first() const noexcept { return first_; }
  [[nodiscard]] std::int64_t count() const noexcept { return count_; }
  [[nodiscard]] int pairs() const noexcept { return static_cast<int>(inv_freq_.size()); }
  [[nodiscard]] angle_mode mode() const noexcept { return mode_; }
  [[nodiscard]] double magnitude() const noexcept { return magnitude_; }
  /// first() <= p < first() + count(), exactly at any p (no wrapped difference).
  [[nodiscard]] bool contains(std::int64_t p) const noexcept { return detail::in_range(p, first_, count_); }

  /// Row of position p: pairs() cos values, then use sin_row for sines. contains(p) is required
  /// and checked in every build (O(1)); a position outside the table aborts, never reads elsewhere.
  [[nodiscard]] const C* cos_row(std::int64_t p) const noexcept { return cos_.data() + offset_of(p); }
  [[nodiscard]] const C* sin_row(std::int64_t p) const noexcept { return sin_.data() + offset_of(p); }

  /// Kernel view of the whole table: token t reads row row_of[t] (= position - first()).
  [[nodiscard]] kernels::angle_rows<C> rows(const std::int64_t* row_of = nullptr) const noexcept {
    return {cos_.data(), sin_.data(), pairs(), row_of};
  }

  /// The frequencies the table was built from (for positions outside it).
  [[nodiscard]] detail::frequencies_view source_frequencies() const noexcept {
    return {inv_freq_.data(), pairs(), magnitude_};
  }

 private:
  [[nodiscard]] std::size_t offset_of(std::int64_t p) const noexcept {
    POSENC_EXPECTS(contains(p));
    return static_cast<std::size_t>(detail::distance_magnitude(p, first_)) * static_cast<std::size_t>(pairs());
  }

  std::vector<double> inv_freq_;
  double magnitude_;
  angle_mode mode_;
  std::int64_t first_, count_;
  std::vector<C> cos_, sin_;
};

}  // namespace posenc::inline v0
