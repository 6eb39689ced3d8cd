// posenc/core/positions.hpp — making explicit per-token positions for the common batch shapes.
//
// Every encoder takes one int64 position per token (docs/spec.md §7.5): that is what makes left padding,
// packing and KV-cache offsets correct. These helpers build such vectors from an offset, from an
// attention mask (left or right padding), from packing segment ids and from cu_seqlens. They
// allocate (setup-time helpers, not hot paths).
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// The position that padding tokens get from the helpers below unless told otherwise. Hugging Face
/// `generate` fills pads with 1; we follow it so pads index a valid row of any table.
inline constexpr std::int64_t default_pad_position = 1;

/// `offset, offset + 1, ..., offset + count - 1` (decode at cache length `offset`).
[[nodiscard]] inline std::vector<std::int64_t> arange_positions(std::ptrdiff_t count, std::int64_t offset = 0) {
  detail::require(count >= 0, "count", count, ">= 0");
  detail::require(count == 0 || offset <= INT64_MAX - (count - 1), "offset", offset,
                  "offset + count - 1 <= INT64_MAX (positions are int64)");
  std::vector<std::int64_t> p(static_cast<std::size_t>(count));
  // In uint64 (modular, exact after the check above): GCC's loop analysis otherwise "proves" that a
  // signed add at offset INT64_MAX overflows on an iteration the check already rules out.
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(offset) + i);
  return p;
}

/// Positions from an attention mask [batch, seq] (row-major, non-zero = real token): each real
/// token gets the number of real tokens before it in its row (plus `offset`), so left-padded and
/// unpadded sequences get identical positions; pads get `pad_position`.
template <class M>
requires std::integral<M> || std::floating_point<M>
[[nodiscard]] std::vector<std::int64_t> positions_from_attention_mask(
    std::span<const M> mask, std::ptrdiff_t batch, std::ptrdiff_t seq, std::int64_t offset = 0,
    std::int64_t pad_position = default_pad_position) {
  detail::require_shape(
      batch >= 0 && seq >= 0 &&
          static_cast<std::ptrdiff_t>(mask.size()) ==
              detail::checked_product<shape_error>("attention_mask.size", {{"batch", batch}, {"seq", seq}}),
      "attention_mask.size", mask.size(), "batch * seq = " + std::to_string(batch) + " * " + std::to_string(seq));
  std::vector<std::int64_t> p(mask.size());
  for (std::ptrdiff_t b = 0; b < batch; ++b) {
    std::int64_t next = offset;
    bool full = false;  // next would pass INT64_MAX
    for (std::ptrdiff_t s = 0; s < seq; ++s) {
      const auto i = static_cast<std::size_t>(b * seq + s);
      if (mask[i] == M{}) {
        p[i] = pad_position;
        continue;
      }
      detail::require(!full, "offset", offset, "offset + real tokens - 1 <= INT64_MAX (positions are int64)");
      p[i] = next;
      if (next == INT64_MAX)
        full = true;
      else
        ++next;
    }
  }
  return p;
}

/// Positions for packed sequences from segment ids [batch, seq]: the position restarts at 0
/// whenever the id changes along a row (HF DataCollatorWithFlattening). Negative ids mark padding
/// and get `pad_position`.
template <std::integral I>
[[nodiscard]] std::vector<std::int64_t> positions_from_segment_ids(std::span<const I> segment_ids, std::ptrdiff_t batch,
                                                                   std::ptrdiff_t seq,
                                                                   std::int64_t pad_position = default_pad_position) {
  detail::require_shape(
      batch >= 0 && seq >= 0 &&
          static_cast<std::ptrdiff_t>(segment_ids.size()) ==
              detail::checked_product<shape_error>("segment_ids.size", {{"batch", batch}, {"seq", seq}}),
      "segment_ids.size", segment_ids.size(), "batch * seq = " + std::to_string(batch) + " * " + std::to_string(seq));
  std::vector<std::int64_t> p(segment_ids.size());
  for (std::ptrdiff_t b = 0; b < batch; ++b) {
    std::int64_t next = 0;
    for (std::ptrdiff_t s = 0; s < seq; ++s) {
      const auto i = static_cast<std::size_t>(b * seq + s);
      if (segment_ids[i] < 0) {
        p[i] = pad_position;
        continue;
      }
      if (s > 0 && segment_ids[i] != segment_ids[i - 1]) next = 0;
      p[i] = next++;
    }
  }
  return p;
}

/// Positions for a flat packed token list from cumulative sequence lengths (FlashAttention varlen
/// `cu_seqlens`: `[0, len0, len0 + len1, ...]`, non-decreasing, starting at 0).
template <std::integral I>
[[nodiscard]] std::vector<std::int64_t> positions_from_cu_seqlens(std::span<const I> cu_seqlens) {
  detail::require_shape(!cu_seqlens.empty() && cu_seqlens[0] == 0, "cu_seqlens[0]",
                        cu_seqlens.empty() ? std::string("(empty)") : detail::to_text(cu_seqlens[0]), "0");
  std::vector<std::int64_t> p;
  for (std::size_t i = 1; i < cu_seqlens.size(); ++i) {
    detail::require_shape(cu_seqlens[i] >= cu_seqlens[i - 1], "cu_seqlens[" + std::to_string(i) + "]", cu_seqlens[i],
                          ">= the previous entry");
    for (I j = 0; j < cu_seqlens[i] - cu_seqlens[i - 1]; ++j) p.push_back(static_cast<std::int64_t>(j));
  }
  return p;
}

/// Segment ids (0, 1, 2, ...) for a flat packed token list from cu_seqlens; pairs with the packing
/// mask of the attention (tokens attend only within their segment).
template <std::integral I>
[[nodiscard]] std::vector<std::int32_t> segment_ids_from_cu_seqlens(std::span<const I> cu_seqlens) {
  const auto pos = positions_from_cu_seqlens(cu_seqlens);  // validates
  std::vector<std::int32_t> seg;
  seg.reserve(pos.size());
  for (std::size_t i = 1; i < cu_seqlens.size(); ++i)
    seg.insert(seg.end(), static_cast<std::size_t>(cu_seqlens[i] - cu_seqlens[i - 1]),
               static_cast<std::int32_t>(i - 1));
  return seg;
}

}  // namespace posenc::inline v0
