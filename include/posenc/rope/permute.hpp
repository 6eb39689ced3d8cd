// posenc/rope/permute.hpp — the q/k weight-row permutation between interleaved and half-split RoPE.
//
// Within each head, interleaved row 2k + c (c in {0, 1}) becomes half-split row c * P + k, for the
// R rotated rows only (docs/spec.md §7.3; HF convert_llama_weights_to_hf `permute`). Applying it to
// the rows (and biases) of W_q with the query head count and of W_k with the KEY/VALUE head count
// makes half-split rotation give the scores interleaved rotation gave. W_v and W_o are untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <posenc/core/assert.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

namespace detail {

inline std::vector<std::int64_t> pair_row_permutation(int head_dim, int rotary_dim, int num_heads, int rotary_offset,
                                                      bool to_half_split) {
  require(head_dim > 0, "permute.head_dim", head_dim, "> 0");
  require(num_heads > 0, "permute.num_heads", num_heads, "> 0 (pass Hq for W_q and Hkv for W_k)");
  require(rotary_offset >= 0 && rotary_offset < head_dim, "permute.rotary_offset", rotary_offset,
          "in [0, head_dim = " + std::to_string(head_dim) + ")");
  require(rotary_dim >= 2 && rotary_dim % 2 == 0 && rotary_dim <= head_dim - rotary_offset, "permute.rotary_dim",
          rotary_dim,
          "an even number in [2, head_dim - rotary_offset = " + std::to_string(head_dim - rotary_offset) + "]");
  const int P = rotary_dim / 2;
  std::vector<std::int64_t> perm(static_cast<std::size_t>(head_dim) * static_cast<std::size_t>(num_heads));
  for (int h = 0; h < num_heads; ++h) {
    const std::int64_t base = static_cast<std::int64_t>(h) * head_dim;
    for (int i = 0; i < head_dim; ++i) perm[static_cast<std::size_t>(base + i)] = base + i;
    for (int k = 0; k < P; ++k) {
      for (int c = 0; c < 2; ++c) {
        const std::int64_t half = base + rotary_offset + c * P + k;   // half-split row
        const std::int64_t inter = base + rotary_offset + 2 * k + c;  // interleaved row
        if (to_half_split)
          perm[static_cast<std::size_t>(half)] = inter;
        else
          perm[static_cast<std::size_t>(inter)] = half;
      }
    }
  }
  return perm;
}

}  // namespace detail

/// Gather map from an interleaved checkpoint to a half-split one: new row i = old row perm[i], for
/// num_heads heads of head_dim rows each (size num_heads * head_dim). Only rows
/// [offset, offset + rotary_dim) of each head move. Throws config_error for invalid sizes.
[[nodiscard]] inline std::vector<std::int64_t> interleaved_to_half_split_rows(int head_dim, int rotary_dim,
                                                                              int num_heads, int rotary_offset = 0) {
  return detail::pair_row_permutation(head_dim, rotary_dim, num_heads, rotary_offset, true);
}

/// The inverse gather map (half-split checkpoint -> interleaved, as llama.cpp's converter does).
[[nodiscard]] inline std::vector<std::int64_t> half_split_to_interleaved_rows(int head_dim, int rotary_dim,
                                                                              int num_heads, int rotary_offset = 0) {
  return detail::pair_row_permutation(head_dim, rotary_dim, num_heads, rotary_offset, false);
}

/// dst row i = src row perm[i] for a row-major matrix with `cols` columns (a bias is cols = 1).
/// src and dst must not overlap; both hold perm.size() * cols elements.
template <class T>
void permute_rows(std::span<const T> src, std::span<T> dst, std::span<const std::int64_t> perm, std::size_t cols) {
  // perm.size() * cols is compared without forming a product that could wrap.
  const bool fits = cols == 0 ? src.empty() : perm.size() <= SIZE_MAX / cols && src.size() == perm.size() * cols;
  detail::require_shape(
      fits && dst.size() == src.size(), "permute_rows.size", src.size(),
      "perm.size() * cols = " + std::to_string(perm.size()) + " * " + std::to_string(cols) + " for src and dst");
  for (const std::int64_t from : perm)  // a gather index outside the matrix would read past src
    detail::require_shape(from >= 0 && static_cast<std::uint64_t>(from) < perm.size(), "permute_rows.perm", from,
                          "a row in [0, perm.size() = " + std::to_string(perm.size()) + ")");
  for (std::size_t i = 0; i < perm.size(); ++i) {
    const auto from = static_cast<std::size_t>(perm[i]);
    for (std::size_t c = 0; c < cols; ++c) dst[i * cols + c] = src[from * cols + c];
  }
}

}  // namespace posenc::inline v0
