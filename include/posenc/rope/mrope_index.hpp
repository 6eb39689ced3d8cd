// posenc/rope/mrope_index.hpp — 3-stream mRoPE position ids for a multimodal token sequence, and the
// per-sequence delta decoding continues from (what Hugging Face's `get_rope_index` returns).
//
// docs/spec.md §7.8, §8.8; HF Qwen2VLModel / Qwen2_5_VLModel / Qwen3VLModel.get_rope_index. Per sequence
// (padding removed by the attention mask):
//   - text tokens take one position on all three streams, continuing at (max so far) + 1;
//   - a vision block (its first image/video token; the <|vision_start|> token before it is text)
//     of (t, h/m, w/m) merged tokens (m = spatial_merge_size), in t-major, row, column order,
//     starting at s gets (s + t_index, s + row, s + col), then the text resumes at max(block) + 1;
//   - t_index: the frame index for Qwen2-VL (images and videos) and Qwen3-VL images; 0 for Qwen3-VL
//     videos (split into single-frame blocks with timestamps as text in between); Qwen2.5-VL:
//     frame * trunc(second_per_grid_t) * tokens_per_second, with 0 seconds for images (HF casts the
//     seconds per grid to int64 first — 0.5 s gives 0 — where vLLM multiplies in float; we follow HF);
//   - padding entries get 1 on every stream (HF); delta = max position + 1 - padded row length.
// Without any image or video grid the ids are the (mask-aware) 1-D positions on all streams.
// Errors (config_error naming the input): grids missing or left over, a grid not divisible by the
// merge size, a vision block running past the sequence, sizes that disagree.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <posenc/core/errors.hpp>
#include <posenc/rope/mrope.hpp>

namespace posenc::inline v0 {

/// Which model's get_rope_index.
enum class mrope_index_model : unsigned char { qwen2_vl, qwen2_5_vl, qwen3_vl };

/// Token ids and vision geometry (Qwen2-VL / 2.5-VL / 3-VL published values as defaults).
struct mrope_index_config {
  mrope_index_model model = mrope_index_model::qwen2_vl;
  int spatial_merge_size = 2;
  std::int64_t image_token_id = 151655;
  std::int64_t video_token_id = 151656;
  std::int64_t vision_start_token_id = 151652;
  double tokens_per_second = 2;  ///< Qwen2.5-VL only (vision_config.tokens_per_second)
};

/// Inputs of one call: input_ids [batch][seq] row-major, optional attention mask [batch][seq]
/// (1 = token, 0 = padding), grids [n][3] = (t, h, w) in patches before the merge, consumed in
/// order across the batch, optional seconds per video grid [n_videos] (Qwen2.5-VL; absent: 1.0).
struct mrope_index_inputs {
  std::ptrdiff_t batch = 1;
  std::ptrdiff_t seq = 0;
  std::span<const std::int64_t> input_ids;
  std::span<const std::int64_t> attention_mask{};
  std::span<const std::array<std::int64_t, 3>> image_grid_thw{};
  std::span<const std::array<std::int64_t, 3>> video_grid_thw{};
  std::span<const double> second_per_grid_ts{};
};

/// HF get_rope_index: position ids [3][batch][seq] and deltas [batch] (see the header banner).
[[nodiscard]] inline mrope_position_ids mrope_rope_index(const mrope_index_config& cfg, const mrope_index_inputs& in) {
  const std::ptrdiff_t B = in.batch, S = in.seq;
  detail::require(B >= 0 && S >= 0, "mrope_index.batch", B, ">= 0 (and seq >= 0)");
  detail::require(in.input_ids.size() == static_cast<std::size_t>(B * S), "mrope_index.input_ids", in.input_ids.size(),
                  "batch * seq = " + std::to_string(B * S));
  detail::require(in.attention_mask.empty() || in.attention_mask.size() == in.input_ids.size(),
                  "mrope_index.attention_mask", in.attention_mask.size(), "empty or batch * seq");
  detail::require(cfg.spatial_merge_size >= 1, "mrope_index.spatial_merge_size", cfg.spatial_merge_size, ">= 1");
  detail::require(in.second_per_grid_ts.empty() || in.second_per_grid_ts.size() == in.video_grid_thw.size(),
                  "mrope_index.second_per_grid_ts", in.second_per_grid_ts.size(),
                  "empty or one per video grid (" + std::to_string(in.video_grid_thw.size()) + ")");
  const auto m = static_cast<std::int64_t>(cfg.spatial_merge_size);
  auto check_grid = [&](const std::array<std::int64_t, 3>& g, const char* what) {
    detail::require(g[0] >= 1 && g[1] >= 1 && g[2] >= 1 && g[1] % m == 0 && g[2] % m == 0, what,
                    std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]),
                    "t, h, w >= 1 with h and w multiples of spatial_merge_size " + std::to_string(m));
  };
  for (const auto& g : in.image_grid_thw) check_grid(g, "mrope_index.image_grid_thw");
  for (const auto& g : in.video_grid_thw) check_grid(g, "mrope_index.video_grid_thw");

  // Qwen3-VL: every video is t single-frame blocks (HF repeat_interleave over t, then t = 1).
  std::vector<std::array<std::int64_t, 3>> videos(in.video_grid_thw.begin(), in.video_grid_thw.end());
  std::vector<double> seconds;
  for (std::size_t v = 0; v < in.video_grid_thw.size(); ++v)
    seconds.push_back(in.second_per_grid_ts.empty() ? 1.0 : in.second_per_grid_ts[v]);
  if (cfg.model == mrope_index_model::qwen3_vl) {
    videos.clear();
    seconds.clear();
    for (const auto& g : in.video_grid_thw)
      for (std::int64_t f = 0; f < g[0]; ++f) {
        videos.push_back({1, g[1], g[2]});
        seconds.push_back(1.0);
      }
  }

  mrope_position_ids out;
  out.batch = B;
  out.length = S;
  out.ids.assign(static_cast<std::size_t>(3 * B * S), 1);
  out.delta.assign(static_cast<std::size_t>(B), 0);
  auto at = [&](int s, std::ptrdiff_t b, std::ptrdiff_t c) -> std::int64_t& {
    return out.ids[static_cast<std::size_t>((s * B + b) * S + c)];
  };
  auto real = [&](std::ptrdiff_t b, std::ptrdiff_t c) {
    return in.attention_mask.empty() || in.attention_mask[static_cast<std::size_t>(b * S + c)] != 0;
  };

  if (in.image_grid_thw.empty() && in.video_grid_thw.empty()) {
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      std::int64_t next = 0, mx = -1;
      for (std::ptrdiff_t c = 0; c < S; ++c) {
        if (!real(b, c)) {
          mx = std::max<std::int64_t>(mx, 1);  // HF: pads hold 1 and count in the max
          continue;
        }
        for (int s = 0; s < 3; ++s) at(s, b, c) = next;
        mx = std::max(mx, next);
        ++next;
      }
      out.delta[static_cast<std::size_t>(b)] = in.attention_mask.empty() ? 0 : mx + 1 - S;
    }
    return out;
  }

  std::size_t image_index = 0, video_index = 0;
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    std::vector<std::int64_t> tok;  // the unpadded row
    std::vector<std::ptrdiff_t> col;
    for (std::ptrdiff_t c = 0; c < S; ++c)
      if (real(b, c)) {
        tok.push_back(in.input_ids[static_cast<std::size_t>(b * S + c)]);
        col.push_back(c);
      }
    const auto L = static_cast<std::ptrdiff_t>(tok.size());
    std::ptrdiff_t images = 0, vids = 0;
    for (std::ptrdiff_t i = 0; i + 1 < L; ++i) {
      if (tok[static_cast<std::size_t>(i)] != cfg.vision_start_token_id) continue;
      images += tok[static_cast<std::size_t>(i + 1)] == cfg.image_token_id;
      vids += tok[static_cast<std::size_t>(i + 1)] == cfg.video_token_id;
    }
    std::array<std::vector<std::int64_t>, 3> pos;
    std::int64_t mx = -1;  // max position so far (HF: llm_pos_ids_list[-1].max())
    auto push = [&](std::int64_t t, std::int64_t h, std::int64_t w) {
      pos[0].push_back(t);
      pos[1].push_back(h);
      pos[2].push_back(w);
      mx = std::max({mx, t, h, w});
    };
    auto text = [&](std::ptrdiff_t n) {
      const std::int64_t st = mx + 1;
      for (std::ptrdiff_t i = 0; i < n; ++i) push(st + i, st + i, st + i);
    };
    auto find = [&](std::int64_t id, std::ptrdiff_t from) {
      const auto it = std::find(tok.begin() + from, tok.end(), id);
      return it == tok.end() ? L + 1 : static_cast<std::ptrdiff_t>(it - tok.begin());
    };
    std::ptrdiff_t st = 0, remain_images = images, remain_videos = vids;
    for (std::ptrdiff_t n = 0; n < images + vids; ++n) {
      const std::ptrdiff_t ed_image = remain_images > 0 ? find(cfg.image_token_id, st) : L + 1;
      const std::ptrdiff_t ed_video = remain_videos > 0 ? find(cfg.video_token_id, st) : L + 1;
      std::array<std::int64_t, 3> g{};
      double sec = 0;
      std::ptrdiff_t ed = 0;
      bool is_video = false;
      if (ed_image < ed_video) {
        detail::require(image_index < in.image_grid_thw.size(), "mrope_index.image_grid_thw", in.image_grid_thw.size(),
                        "one grid per image block (more image blocks than grids)");
        g = in.image_grid_thw[image_index++];
        --remain_images;
        ed = ed_image;
      } else {
        detail::require(video_index < videos.size(), "mrope_index.video_grid_thw", in.video_grid_thw.size(),
                        "one grid per video block (more video blocks than grids)");
        sec = seconds[video_index];
        g = videos[video_index++];
        --remain_videos;
        ed = ed_video;
        is_video = true;
      }
      detail::require(ed <= L, "mrope_index.input_ids", "a vision start without its image/video token",
                      "a vision token after every vision start");
      const std::int64_t gt = g[0], gh = g[1] / m, gw = g[2] / m;
      text(ed - st);
      const std::int64_t base = mx + 1;
      for (std::int64_t t = 0; t < gt; ++t) {
        std::int64_t ti = t;
        if (cfg.model == mrope_index_model::qwen2_5_vl)  // HF: int64 seconds (0 for images), * tps, .long()
          ti = static_cast<std::int64_t>(static_cast<double>(t * static_cast<std::int64_t>(sec)) *
                                         cfg.tokens_per_second);
        else if (is_video && cfg.model == mrope_index_model::qwen3_vl)
          ti = 0;
        for (std::int64_t r = 0; r < gh; ++r)
          for (std::int64_t c = 0; c < gw; ++c) push(base + ti, base + r, base + c);
      }
      st = ed + static_cast<std::ptrdiff_t>(gt * gh * gw);
      detail::require(st <= L, "mrope_index.input_ids",
                      "a vision block of " + std::to_string(gt * gh * gw) + " tokens starting at " + std::to_string(ed),
                      "the block inside the sequence of " + std::to_string(L) + " tokens");
    }
    if (st < L) text(L - st);
    for (std::ptrdiff_t i = 0; i < L; ++i)
      for (int s = 0; s < 3; ++s)
        at(s, b, col[static_cast<std::size_t>(i)]) = pos[static_cast<std::size_t>(s)][static_cast<std::size_t>(i)];
    out.delta[static_cast<std::size_t>(b)] = mx + 1 - S;
  }
  detail::require(image_index == in.image_grid_thw.size(), "mrope_index.image_grid_thw", in.image_grid_thw.size(),
                  std::to_string(image_index) + " grids (one per image block in input_ids)");
  detail::require(video_index == videos.size(), "mrope_index.video_grid_thw", in.video_grid_thw.size(),
                  "one grid per video block in input_ids (" + std::to_string(video_index) + " blocks)");
  return out;
}

}  // namespace posenc::inline v0
