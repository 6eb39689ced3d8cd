// posenc/rope/rope.hpp — the RoPE encoder (Su et al. 2021, eq. 34): rotates q and k by position.
//
// Ties a rope_schedule (frequencies, rope/schedule.hpp) to the rotation kernels (kernels/rotate.hpp)
// and applies it in place to [batch, token, head, head_dim] views with one int64 position per
// (batch, token). Models qk_transform_encoding and has_softmax_scale_multiplier. It does not own a
// KV cache; it offers what one needs: rotate/inverse with explicit frequencies, rotate_delta
// (K-shift) and rerotate (schedule switch). Pairings inside one head row (o = rotary_offset):
//
//   half_split (NeoX, HF):  [ o ... | x0 x1 .. x(P-1) | xP .. x(R-1) | tail (pass-through) ]
//                                     pair k = (x[o+k], x[o+k+P])
//   interleaved (GPT-J):    [ o ... | x0 x1 | x2 x3 | .. | x(R-2) x(R-1) | tail ]
//                                     pair k = (x[o+2k], x[o+2k+1])
//   proportional partial:   half_split over all D-o elements, pairs k >= R/2 have w = 0
//
//   x'[i0] = M (x[i0] cos(p w_k) - x[i1] sin(p w_k)),  x'[i1] = M (x[i0] sin(p w_k) + x[i1] cos(p w_k))
//
// Allocation: none per call for R <= 4096 (cos/sin for a chunk of tokens live on the stack, see
// rope/rotate_view.hpp); positions beyond any table are computed on the fly, so there is no
// maximum length. Length-dependent schedules pick their frequencies from max(positions) + 1 of
// the call (HF); note that HF additionally keeps the largest length seen, which differs only when
// a later call is shorter but still > L0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <posenc/core/assert.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/kernels/angles.hpp>
#include <posenc/kernels/types.hpp>
#include <posenc/rope/angles.hpp>
#include <posenc/rope/config.hpp>
#include <posenc/rope/cos_sin_table.hpp>
#include <posenc/rope/frequencies.hpp>
#include <posenc/rope/rotate_view.hpp>
#include <posenc/rope/schedule.hpp>

namespace posenc::inline v0 {

/// The rotary position embedding encoder. Immutable after construction; copyable; every member
/// function is const and safe to call from several threads at once. The rotating entries check
/// their sizes in every build, O(1) per call (positions.size() == batch * tokens, x.dim() ==
/// head_dim(), frequency and table sizes == pairs): a mismatch throws shape_error naming the
/// argument instead of reading past a row.
class rope {
 public:
  /// Validates `c` (config_error naming the parameter for every docs/spec.md §12 case).
  explicit rope(rope_config c) : sched_(std::move(c)) {}

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "rope"; }
  /// D: elements per head row the views must have.
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return sched_.config().head_dim; }
  /// R: rotated elements per head row.
  [[nodiscard]] std::ptrdiff_t rotary_dim() const noexcept { return sched_.rotary_dim(); }
  [[nodiscard]] const rope_config& config() const noexcept { return sched_.config(); }
  [[nodiscard]] const rope_schedule& schedule() const noexcept { return sched_; }
  /// The BASE frequencies (schedule().base()): for a length-dependent schedule (dynamic NTK,
  /// LongRoPE) those at lengths <= L0, which is not what a longer call rotates with; see
  /// effective_frequencies().
  [[nodiscard]] const rope_frequencies& base_frequencies() const noexcept { return sched_.base(); }
  /// The EFFECTIVE frequencies of a call with these positions: at(effective_length(positions)),
  /// exactly what transform_q / transform_k use for them. Allocates.
  [[nodiscard]] rope_frequencies effective_frequencies(std::span<const std::int64_t> positions) const {
    return sched_.at(rope_schedule::effective_length(positions));
  }
  /// Multiplier for the attention's softmax scale (DeepSeek YaRN get_mscale(s, mscale_all_dim)^2; else 1).
  [[nodiscard]] double softmax_scale_multiplier() const noexcept { return sched_.base().softmax_scale_multiplier; }
  /// max(positions) + 1: the length a call stands for (what length-dependent schedules key on).
  [[nodiscard]] std::int64_t effective_length(std::span<const std::int64_t> positions) const noexcept {
    return rope_schedule::effective_length(positions);
  }
  /// The frequencies a call of effective length `len` uses (a KV cache compares these to detect switches).
  [[nodiscard]] rope_frequencies at(std::int64_t len) const { return sched_.at(len); }

  /// Rotates queries forward by their positions (positions.size() == batch * tokens).
  template <storage_type T>
  void transform_q(tensor_view<T> q, std::span<const std::int64_t> positions) const {
    apply_schedule(q, positions);
  }
  /// Rotates keys forward by their positions (the same rotation as queries).
  template <storage_type T>
  void transform_k(tensor_view<T> k, std::span<const std::int64_t> positions) const {
    apply_schedule(k, positions);
  }

  /// Backward of transform_q / transform_k (qk_transform_backward_encoding): dx, the gradient
  /// w.r.t. the rotated rows, becomes in place the gradient w.r.t. the rows before rotation. The
  /// forward multiplies each pair by M R(p w); its transpose is M R(-p w), the inverse rotation
  /// with the magnitude kept (not 1/M). Same frequencies as the forward call with these positions
  /// (length-dependent schedules pick them from max(positions) + 1 again); the tail passes through.
  template <storage_type T>
  void transform_q_backward(tensor_view<T> dq, std::span<const std::int64_t> positions) const {
    apply_schedule(dq, positions, true);
  }
  template <storage_type T>
  void transform_k_backward(tensor_view<T> dk, std::span<const std::int64_t> positions) const {
    apply_schedule(dk, positions, true);
  }

  /// Rotates x by explicit frequencies `f`. forward: R(p w) with magnitude M; inverse: the exact
  /// inverse of forward (angle negated, magnitude 1/M). Uses config().angles.
  template <storage_type T>
  void rotate(tensor_view<T> x, std::span<const std::int64_t> positions, const rope_frequencies& f,
              kernels::rotation dir = kernels::rotation::forward) const {
    expect_pairs(f.inv_freq.size(), "f.inv_freq");
    apply(x, positions, detail::view_of(f), dir);
  }

  /// Rotates x with rows from `table` where it covers the position and on the fly elsewhere (same
  /// frequencies and angle mode as the table). inverse negates sin (exact inverse only when M = 1).
  /// `source` picks table rows or on-the-fly rows (automatic: the measured rule of
  /// choose_angle_source); every source gives the same bits. Table rows are read in place (no copy) when the table
  /// covers every position and the dim axis is contiguous (consecutive positions per batch, as decode and prefill
  /// have: one kernel call per batch, rows at a stride).
  template <storage_type T>
  POSENC_FORCE_INLINE void rotate(tensor_view<T> x, std::span<const std::int64_t> positions,
                                  const cos_sin_table<compute_t<T>>& table,
                                  kernels::rotation dir = kernels::rotation::forward,
                                  angle_source source = angle_source::automatic) const {
    expect_pairs(static_cast<std::size_t>(table.pairs()), "table.pairs");
    expect_sizes(x, positions.size());
    // Decode and prefill (consecutive positions inside the table) inline in the caller: a decode
    // step is two calls of ~100-200 ns, and a call frame costs ~5 ns of it.
    if (choose_angle_source(source) == angle_source::table && x.dim_contiguous() && table.pairs() > 0 &&
        rotate_consecutive(x, positions, table, dir))
      return;
    rotate_general(x, positions, table, dir, choose_angle_source(source));
  }

 private:
  template <storage_type T>
  [[gnu::noinline]] void rotate_general(tensor_view<T> x, std::span<const std::int64_t> positions,
                                        const cos_sin_table<compute_t<T>>& table, kernels::rotation dir,
                                        angle_source source) const noexcept {
    using C = compute_t<T>;
    const auto f = table.source_frequencies();
    if (source == angle_source::on_the_fly) {
      detail::rotate_view(
          sched_.geometry(), x, f.pairs,
          [&](std::ptrdiff_t i0, std::ptrdiff_t n, C* cos, C* sin) {
            detail::fill_angle_rows(f, table.mode(), positions.data() + i0, n, f.magnitude, cos, sin, f.pairs);
          },
          dir);
      return;
    }
    if (x.dim_contiguous() && f.pairs > 0) {
      if (std::all_of(positions.begin(), positions.end(), [&](std::int64_t p) { return table.contains(p); })) {
        rotate_from_table(x, positions, table, dir);
        return;
      }
    }
    detail::rotate_view(
        sched_.geometry(), x, f.pairs,
        [&](std::ptrdiff_t i0, std::ptrdiff_t n, C* cos, C* sin) {
          for (std::ptrdiff_t t = 0; t < n; ++t) {
            const std::int64_t p = positions[static_cast<std::size_t>(i0 + t)];
            C* c = cos + t * f.pairs;
            C* s = sin + t * f.pairs;
            if (table.contains(p)) {
              std::copy_n(table.cos_row(p), f.pairs, c);
              std::copy_n(table.sin_row(p), f.pairs, s);
            } else {
              detail::fill_angle_rows(f, table.mode(), &p, 1, f.magnitude, c, s, f.pairs);
            }
          }
        },
        dir);
  }

 public:
  /// K-shift: rotates x (already rotated keys) by `delta_per_token` more positions under `f`
  /// (llama.cpp context shift, HF SinkCache). The magnitude is NOT re-applied. Exact angles.
  template <storage_type T>
  void rotate_delta(tensor_view<T> x, std::span<const std::int64_t> delta_per_token, const rope_frequencies& f) const {
    using C = compute_t<T>;
    expect_pairs(f.inv_freq.size(), "f.inv_freq");
    detail::require_rotation_sizes(x, delta_per_token.size(), head_dim(), "delta_per_token");
    const int P = sched_.pairs();
    detail::rotate_view(sched_.geometry(), x, P, [&](std::ptrdiff_t i0, std::ptrdiff_t n, C* cos, C* sin) {
      kernels::compute_angles(f.inv_freq.data(), P, delta_per_token.data() + i0, n, 1.0, cos, sin, P);
    });
  }

  /// Schedule switch: keys rotated at `positions` under `from` become keys rotated under `to`
  /// (angle p * (w_to - w_from), each product range-reduced in double; magnitude M_to / M_from),
  /// in one rounding of the stored values. Exact angles regardless of config().angles.
  template <storage_type T>
  void rerotate(tensor_view<T> k, std::span<const std::int64_t> positions, const rope_frequencies& from,
                const rope_frequencies& to) const {
    using C = compute_t<T>;
    const int P = sched_.pairs();
    expect_pairs(from.inv_freq.size(), "from.inv_freq");
    expect_pairs(to.inv_freq.size(), "to.inv_freq");
    expect_sizes(k, positions.size());
    const double m = to.attention_scaling / from.attention_scaling;
    detail::rotate_view(sched_.geometry(), k, P, [&](std::ptrdiff_t i0, std::ptrdiff_t n, C* cos, C* sin) {
      for (std::ptrdiff_t t = 0; t < n; ++t) {
        const std::int64_t p = positions[static_cast<std::size_t>(i0 + t)];
        for (int j = 0; j < P; ++j) {
          const auto u = static_cast<std::size_t>(j);
          const double phi = detail::reduced_angle(p, to.inv_freq[u]) - detail::reduced_angle(p, from.inv_freq[u]);
          cos[t * P + j] = static_cast<C>(m * std::cos(phi));
          sin[t * P + j] = static_cast<C>(m * std::sin(phi));
        }
      }
    });
  }

 private:
  // transpose: the backward's M R(-p w) (inverse direction, magnitude M) instead of M R(p w).
  template <storage_type T>
  void apply_schedule(tensor_view<T> x, std::span<const std::int64_t> positions, bool transpose = false) const {
    const auto dir = transpose ? kernels::rotation::inverse : kernels::rotation::forward;
    if (!sched_.length_dependent()) {
      apply(x, positions, detail::view_of(sched_.base()), dir, transpose);
      return;
    }
    detail::scratch<double, 512> buf(sched_.pairs());
    const auto f = sched_.select(rope_schedule::effective_length(positions),
                                 std::span<double>(buf.data(), static_cast<std::size_t>(sched_.pairs())));
    apply(x, positions, f, dir, transpose);
  }

  template <storage_type T>
  void apply(tensor_view<T> x, std::span<const std::int64_t> positions, const detail::frequencies_view& f,
             kernels::rotation dir, bool transpose = false) const {
    using C = compute_t<T>;
    expect_sizes(x, positions.size());
    POSENC_ASSERT(f.pairs == sched_.pairs());  // every caller checked its frequencies
    const double m = dir == kernels::rotation::forward || transpose ? f.magnitude : 1.0 / f.magnitude;
    const angle_mode mode = sched_.config().angles;
    detail::rotate_view(
        sched_.geometry(), x, f.pairs,
        [&](std::ptrdiff_t i0, std::ptrdiff_t n, C* cos, C* sin) {
          detail::fill_angle_rows(f, mode, positions.data() + i0, n, m, cos, sin, f.pairs);
        },
        dir);
  }

  // Each batch's positions consecutive and inside the table (decode's one token, prefill), dim axis
  // contiguous: the kernels read the table's rows in place, one call per batch, rows at a stride
  // (no row index to build, no per-token lookup). False, having rotated nothing, otherwise.
  template <storage_type T>
  POSENC_FORCE_INLINE bool rotate_consecutive(tensor_view<T> x, std::span<const std::int64_t> positions,
                                              const cos_sin_table<compute_t<T>>& table,
                                              kernels::rotation dir) const noexcept {
    const std::ptrdiff_t B = x.batch(), Tn = x.tokens(), H = x.heads();
    if (H == 0 || Tn == 0) return true;  // nothing to rotate
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      const std::int64_t* p = positions.data() + b * Tn;
      if (!table.contains(p[0]) || !table.contains(p[Tn - 1]) || p[Tn - 1] - p[0] != Tn - 1) return false;
      for (std::ptrdiff_t t = 1; t + 1 < Tn; ++t) {
        if (p[t] != p[0] + t) return false;
      }
    }
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      const std::int64_t p0 = positions[static_cast<std::size_t>(b * Tn)];
      if (Tn == 1) {  // decode
        kernels::rotate_token(sched_.geometry(), x.row(b, 0, 0), H, x.stride(axis::head), table.cos_row(p0),
                              table.sin_row(p0), dir);
        continue;
      }
      const kernels::head_rows<T> rows{x.row(b, 0, 0), Tn, H, x.stride(axis::token), x.stride(axis::head)};
      kernels::rotate(sched_.geometry(), rows,
                      kernels::angle_rows<compute_t<T>>{table.cos_row(p0), table.sin_row(p0), table.pairs()}, dir);
    }
    return true;
  }

  // Every position inside the table, dim axis contiguous: the kernels read the table's rows in
  // place through a row index (no copy), chunk by chunk of tokens.
  template <storage_type T>
  void rotate_from_table(tensor_view<T> x, std::span<const std::int64_t> positions,
                         const cos_sin_table<compute_t<T>>& table, kernels::rotation dir) const noexcept {
    constexpr std::ptrdiff_t chunk = 512;
    std::int64_t row_of[chunk];
    const std::ptrdiff_t B = x.batch(), Tn = x.tokens(), H = x.heads();
    if (H == 0) return;
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      for (std::ptrdiff_t t0 = 0; t0 < Tn; t0 += chunk) {
        const std::ptrdiff_t n = std::min(chunk, Tn - t0);
        for (std::ptrdiff_t t = 0; t < n; ++t)
          row_of[t] = static_cast<std::int64_t>(
              detail::distance_magnitude(positions[static_cast<std::size_t>(b * Tn + t0 + t)], table.first()));
        const kernels::head_rows<T> rows{x.row(b, t0, 0), n, H, x.stride(axis::token), x.stride(axis::head)};
        kernels::rotate(sched_.geometry(), rows, table.rows(row_of), dir);
      }
    }
  }

  // One position per (batch, token) and rows of head_dim() elements: a wrong size would read past
  // the positions or the rows, so it is checked in every build (O(1) per call; shape_error).
  template <class T>
  void expect_sizes(const tensor_view<T>& x, std::size_t positions) const {
    detail::require_rotation_sizes(x, positions, head_dim());
  }
  // Explicit frequencies (or a table) for exactly this rope's pairs.
  void expect_pairs(std::size_t pairs, std::string_view name) const {
    detail::require_shape(static_cast<std::ptrdiff_t>(pairs) == sched_.pairs(), name, pairs,
                          "the rope's pairs (rotary_dim / 2)");
  }

  rope_schedule sched_;
};

}  // namespace posenc::inline v0
