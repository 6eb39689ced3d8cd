// posenc/rope/vision_positions.hpp — the (t, h, w) patch coordinates of vision tokens, in the order
// each vision tower feeds them to its attention (docs/spec.md §7.9), for rope/vision_rope.hpp.
//
// Grids are (t, h, w) in patches (HF `grid_thw`: frames, rows, columns), one per image or video,
// tokens of consecutive grids following each other:
//   raster   frame by frame, row by row (Pixtral's position_ids_in_meshgrid; Llama 4's tile, whose
//            class token comes last and is not rotated: llama4_vision_positions);
//   merged   frame by frame, the m x m merge blocks row by row, each block row by row (HF
//            get_vision_position_ids: Qwen2-VL, Qwen2.5-VL, Qwen3-VL, MiniMax-M3-VL);
//   windows  Qwen2.5-VL's regrouping of the merge units by attention window (HF
//            get_vision_window_index): the unit permutation and the window boundaries.
// Segment ids (frames, images or windows) turn boundaries into the block-diagonal mask of
// attention_options::query_segments / key_segments. Errors are config_error naming the input.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// The grid coordinates of every vision token of a call, in sequence order.
struct vision_positions {
  std::vector<std::int64_t> t, h, w;     ///< frame, row, column of each token
  std::vector<unsigned char> unrotated;  ///< empty, or one per token: 1 = not rotated (a class token)

  [[nodiscard]] std::ptrdiff_t size() const noexcept { return static_cast<std::ptrdiff_t>(t.size()); }
  /// config_error unless the arrays have one entry per token.
  void validate() const {
    detail::require(h.size() == t.size() && w.size() == t.size(), "vision_positions", h.size(),
                    "t, h and w of equal sizes (t has " + std::to_string(t.size()) + ")");
    detail::require(unrotated.empty() || unrotated.size() == t.size(), "vision_positions.unrotated", unrotated.size(),
                    "0 or one flag per token (" + std::to_string(t.size()) + ")");
  }
  void push(std::int64_t tt, std::int64_t hh, std::int64_t ww) {
    t.push_back(tt);
    h.push_back(hh);
    w.push_back(ww);
  }
};

using vision_grid_thw = std::array<std::int64_t, 3>;

namespace detail {
inline void require_grid(const vision_grid_thw& g, std::int64_t merge, const char* name) {
  for (std::int64_t x : g) detail::require(x >= 1 && x <= (std::int64_t{1} << 24), name, x, "extents in [1, 2^24]");
  detail::require(g[1] % merge == 0 && g[2] % merge == 0, name, std::to_string(g[1]) + " x " + std::to_string(g[2]),
                  "rows and columns divisible by the spatial merge size " + std::to_string(merge));
}
inline void require_merge(std::int64_t merge) {
  detail::require(merge >= 1 && merge <= 64, "vision.spatial_merge_size", merge, "[1, 64]");
}
}  // namespace detail

/// Raster order (Pixtral): frame by frame, row by row.
[[nodiscard]] inline vision_positions vision_raster_positions(std::span<const vision_grid_thw> grids) {
  vision_positions p;
  for (const auto& g : grids) {
    detail::require_grid(g, 1, "vision.grid_thw");
    for (std::int64_t f = 0; f < g[0]; ++f)
      for (std::int64_t r = 0; r < g[1]; ++r)
        for (std::int64_t c = 0; c < g[2]; ++c) p.push(f, r, c);
  }
  return p;
}

/// Merge-block order (HF get_vision_position_ids; `merge_size` = spatial_merge_size, 1 = raster).
[[nodiscard]] inline vision_positions vision_merged_positions(std::span<const vision_grid_thw> grids,
                                                              std::int64_t merge_size) {
  detail::require_merge(merge_size);
  vision_positions p;
  for (const auto& g : grids) {
    detail::require_grid(g, merge_size, "vision.grid_thw");
    for (std::int64_t f = 0; f < g[0]; ++f)
      for (std::int64_t br = 0; br < g[1] / merge_size; ++br)
        for (std::int64_t bc = 0; bc < g[2] / merge_size; ++bc)
          for (std::int64_t ir = 0; ir < merge_size; ++ir)
            for (std::int64_t ic = 0; ic < merge_size; ++ic) p.push(f, br * merge_size + ir, bc * merge_size + ic);
  }
  return p;
}

/// Llama 4's vision tile: (side x side) patches in raster order, then the class token (unrotated).
[[nodiscard]] inline vision_positions llama4_vision_positions(std::int64_t patches_per_side) {
  detail::require(patches_per_side >= 1 && patches_per_side <= 4096, "vision.patches_per_side", patches_per_side,
                  "[1, 4096] (image_size / patch_size)");
  const vision_grid_thw g{1, patches_per_side, patches_per_side};
  vision_positions p = vision_raster_positions(std::span<const vision_grid_thw>(&g, 1));
  p.push(0, 0, 0);
  p.unrotated.assign(p.t.size(), 0);
  p.unrotated.back() = 1;
  return p;
}

/// Qwen2.5-VL's window attention: `unit_order[u]` is the merge unit placed u-th (HF window_index),
/// `offsets` the token offsets of the windows, starting at 0 (HF cu_window_seqlens, repeated
/// entries of empty windows removed).
struct vision_windows {
  std::vector<std::int64_t> unit_order;
  std::vector<std::int64_t> offsets;
};

/// HF get_vision_window_index: windows of window_size / merge_size / patch_size merge units per side.
[[nodiscard]] inline vision_windows vision_window_index(std::span<const vision_grid_thw> grids, std::int64_t merge_size,
                                                        std::int64_t window_size, std::int64_t patch_size) {
  detail::require_merge(merge_size);
  detail::require(patch_size >= 1, "vision.patch_size", patch_size, ">= 1");
  const std::int64_t side = window_size / merge_size / patch_size;
  detail::require(side >= 1, "vision.window_size", window_size,
                  ">= spatial_merge_size * patch_size = " + std::to_string(merge_size * patch_size));
  vision_windows out;
  out.offsets.push_back(0);
  std::int64_t base = 0;
  for (const auto& g : grids) {
    detail::require_grid(g, merge_size, "vision.grid_thw");
    const std::int64_t lh = g[1] / merge_size, lw = g[2] / merge_size;
    const std::int64_t nwh = (lh + side - lh % side) / side,
                       nww = (lw + side - lw % side) / side;  // HF pads a full window
    for (std::int64_t f = 0; f < g[0]; ++f)
      for (std::int64_t wy = 0; wy < nwh; ++wy)
        for (std::int64_t wx = 0; wx < nww; ++wx) {
          std::int64_t n = 0;
          for (std::int64_t y = wy * side; y < (wy + 1) * side && y < lh; ++y)
            for (std::int64_t x = wx * side; x < (wx + 1) * side && x < lw; ++x, ++n)
              out.unit_order.push_back(base + (f * lh + y) * lw + x);
          if (n > 0) out.offsets.push_back(out.offsets.back() + n * merge_size * merge_size);
        }
    base += g[0] * lh * lw;
  }
  return out;
}

/// The tokens of `p` (in merge-block order) regrouped by merge unit as `unit_order` says (Qwen2.5-VL).
[[nodiscard]] inline vision_positions permute_merge_units(const vision_positions& p,
                                                          std::span<const std::int64_t> unit_order,
                                                          std::int64_t merge_size) {
  p.validate();
  detail::require_merge(merge_size);
  const std::int64_t unit = merge_size * merge_size, n = p.size();
  detail::require(static_cast<std::int64_t>(unit_order.size()) * unit == n, "vision.unit_order", unit_order.size(),
                  "tokens / merge_size^2 = " + std::to_string(n / unit));
  vision_positions out;
  for (std::int64_t u : unit_order) {
    detail::require(u >= 0 && u * unit < n, "vision.unit_order", u, "a merge unit below " + std::to_string(n / unit));
    for (std::int64_t k = u * unit; k < (u + 1) * unit; ++k) {
      const auto s = static_cast<std::size_t>(k);
      out.push(p.t[s], p.h[s], p.w[s]);
      if (!p.unrotated.empty()) out.unrotated.push_back(p.unrotated[s]);
    }
  }
  return out;
}

/// Segment ids from boundaries (offsets[0] = 0, increasing): token k of [offsets[s], offsets[s+1])
/// gets s. For attention_options::query_segments / key_segments.
[[nodiscard]] inline std::vector<std::int32_t> vision_segments(std::span<const std::int64_t> offsets) {
  detail::require(!offsets.empty() && offsets.front() == 0, "vision.offsets", offsets.empty() ? -1 : offsets.front(),
                  "a list starting at 0");
  std::vector<std::int32_t> seg;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    detail::require(offsets[s + 1] >= offsets[s], "vision.offsets", offsets[s + 1], "non-decreasing offsets");
    seg.insert(seg.end(), static_cast<std::size_t>(offsets[s + 1] - offsets[s]), static_cast<std::int32_t>(s));
  }
  return seg;
}

/// The offsets of every frame of every grid (HF get_vision_cu_seqlens: each frame attends to itself).
[[nodiscard]] inline std::vector<std::int64_t> vision_frame_offsets(std::span<const vision_grid_thw> grids) {
  std::vector<std::int64_t> off{0};
  for (const auto& g : grids) {
    detail::require_grid(g, 1, "vision.grid_thw");
    for (std::int64_t f = 0; f < g[0]; ++f) off.push_back(off.back() + g[1] * g[2]);
  }
  return off;
}

}  // namespace posenc::inline v0
