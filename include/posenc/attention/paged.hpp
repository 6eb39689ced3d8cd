// posenc/attention/paged.hpp — posenc::attention over a paged K/V cache: a pool of fixed-size
// blocks and, per sequence, the list of blocks holding its tokens (vLLM's block_tables and
// seq_lens), read where they are: no gather into a contiguous cache.
//
// Layout: k_blocks [num_blocks, block_size, Hkv, D] and v_blocks [num_blocks, block_size, Hkv, Dv]
// as tensor views (batch axis = block, token axis = slot in the block; token-major blocks are the
// fast case, any strides work). Token j of sequence b is slot j % block_size of block
// block_table[b * blocks_per_sequence + j / block_size]; the sequence has lengths[b] tokens. Its
// queries are q[b] (Sq rows), the last Sq tokens of the sequence (positions lengths[b] - Sq + i):
// a decode step (Sq = 1) or a prefill chunk. The result is bit-identical to posenc::attention on a
// contiguous cache holding the same tokens, one call per sequence, for any thread count.
// Decode tiles (64 keys) are read in place, block by block when they span blocks of a multiple of
// 4 tokens; other block sizes copy a spanning tile into the work item's scratch first
// (fast/forward.hpp: decode_item; fast/call.hpp: decode_tile). Blocks that follow each other in the pool (ids x,
// x + 1 of a pool stored back to back) are read as one run, as a contiguous cache is. Not here:
// key transforms (the cache holds rotated keys: transform_keys = true with a transforming encoder
// is a config_error) and per-call masks.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/sequences.hpp>
#include <posenc/core/element.hpp>
#include <posenc/encoders/no_position.hpp>

namespace posenc::inline v0 {

/// A paged K/V cache (see the banner): block pools, block table, sequence lengths.
template <class TK, class TV = TK>
struct paged_kv {
  tensor_view<const TK> k_blocks;             // [num_blocks, block_size, Hkv, D]
  tensor_view<const TV> v_blocks;             // [num_blocks, block_size, Hkv, Dv]
  std::span<const std::int32_t> block_table;  // [sequences * blocks_per_sequence], row-major
  std::ptrdiff_t blocks_per_sequence = 0;     // row length of block_table
  std::span<const std::int32_t> lengths;      // [sequences]: tokens of each sequence
};

namespace detail {

template <kv_element TK, kv_element TV, positional_encoding E>
void paged_attention(tensor_view<const float> q, const paged_kv<TK, TV>& kv, tensor_view<float> out, const E& enc,
                     const attention_options& o, const fast_attention_options& f) {
  static_assert(all_relative_kv_by_distance<E>(),
                "posenc::attention needs relative_kv encoders in distance form (distance_relative_kv_encoding)");
  const std::ptrdiff_t B = q.batch(), Sq = q.tokens(), nb = kv.k_blocks.batch(), bs = kv.k_blocks.tokens();
  require_no_per_call_masks(o, "a paged cache");
  if constexpr (qk_transform_encoding<E>)
    detail::require(!o.transform_keys, "attention.transform_keys", "true",
                    "false for a paged cache (it holds keys already transformed)");
  detail::require_shape(
      kv.v_blocks.batch() == nb && kv.v_blocks.tokens() == bs && kv.v_blocks.heads() == kv.k_blocks.heads(),
      "paged.v_blocks", "a pool of another shape", "as many blocks, slots and heads as k_blocks");
  detail::require_shape(bs >= 1 || nb == 0, "paged.k_blocks", bs, "blocks of >= 1 token");
  detail::require_shape(static_cast<std::ptrdiff_t>(kv.lengths.size()) == B, "paged.lengths", kv.lengths.size(),
                        "q.batch = " + std::to_string(B) + " sequences");
  detail::require_shape(
      kv.blocks_per_sequence >= 0 && static_cast<std::ptrdiff_t>(kv.block_table.size()) == B * kv.blocks_per_sequence,
      "paged.block_table", kv.block_table.size(),
      "q.batch x blocks_per_sequence = " + std::to_string(B * kv.blocks_per_sequence));
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    const std::int32_t len = kv.lengths[static_cast<std::size_t>(b)];
    if (len < 0 || len > kv.blocks_per_sequence * bs)
      detail::require_shape(false, "paged.lengths", len,
                            "[0, blocks_per_sequence x block_size = " + std::to_string(kv.blocks_per_sequence * bs) +
                                "] (too few blocks for sequence " + std::to_string(b) + ")");
    for (std::ptrdiff_t x = 0; x < (len + bs - 1) / std::max<std::ptrdiff_t>(bs, 1); ++x) {
      const std::int32_t id = kv.block_table[static_cast<std::size_t>(b * kv.blocks_per_sequence + x)];
      if (id < 0 || id >= nb)
        detail::require(false, "paged.block_table", id,
                        "block ids in [0, " + std::to_string(nb) + ") (sequence " + std::to_string(b) + ")");
    }
  }
  detail::require_shape(!overlaps(out, kv.k_blocks), "out", "a view overlapping the k blocks",
                        "memory disjoint from the cache");
  detail::require_shape(!overlaps(out, kv.v_blocks), "out", "a view overlapping the v blocks",
                        "memory disjoint from the cache");
  // The shape checks of posenc::attention on the pools seen as B sequences of one block each.
  const auto one_block = [&](const auto& pool) {
    using T = std::remove_cvref_t<decltype(pool)>;
    return T::strided(pool.data(), {B, bs, pool.heads(), pool.dim()},
                      {0, pool.stride(axis::token), pool.stride(axis::head), pool.stride(axis::dim)});
  };
  validate_call(q, one_block(kv.k_blocks), one_block(kv.v_blocks), out, enc, o, f);
  if (B == 0 || Sq == 0 || q.heads() == 0 || out.dim() == 0) return;

  const float scale = static_cast<float>(detail::softmax_scale(enc, o, q.dim()));
  std::deque<attention_mask> masks;
  for (std::ptrdiff_t b = 0; b < B; ++b) masks.emplace_back(o, 1, Sq, kv.lengths[static_cast<std::size_t>(b)]);
  for (const attention_mask& m : masks) check_relative_sizes(enc, m, q.dim(), out.dim());

  attention_workspace local;
  attention_workspace& ws = f.workspace ? *f.workspace : local;
  const tensor_view<const float> qall =
      kernel_queries(q, out_overlaps_queries(q, out), no_position{}, o, masks.front(), ws);
  std::vector<forward_operands<TK, TV>> seqs;
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    const std::ptrdiff_t sk = kv.lengths[static_cast<std::size_t>(b)];
    const tensor_view<float> ob = batch_of(out, b);
    if (sk == 0) {  // an empty sequence: zeros, with or without sinks (as a call over an empty cache)
      zero_view(ob);
      continue;
    }
    const std::int32_t* blocks = kv.block_table.data() + b * kv.blocks_per_sequence;
    const auto& m = masks[static_cast<std::size_t>(b)];
    seqs.push_back({kernel_queries(batch_of(qall, b), out_overlaps_queries(batch_of(qall, b), ob), enc, o, m,
                                   ws.sequence(seqs.size())),
                    {.view = kv.k_blocks, .blocks = blocks, .block_size = bs, .nblocks = (sk + bs - 1) / bs},
                    {.view = kv.v_blocks, .blocks = blocks, .block_size = bs, .nblocks = (sk + bs - 1) / bs},
                    ob,
                    sk,
                    &m});
  }
  run_sequences<E, TK, TV>(seqs, enc, o, f, ws, scale);
}

}  // namespace detail

/// posenc::attention over a paged cache: `q` [B, Sq, Hq, D] float (sequence b's queries at q[b]),
/// `kv` the pools (float, bfloat16, float16 or q8_0 blocks, whose dim axis counts blocks), table and
/// lengths of B sequences, `out`
/// [B, Sq, Hq, Dv]. Throws what posenc::attention throws, plus shape_error for tables or lengths of
/// the wrong size or needing more blocks than the table holds ("paged.block_table",
/// "paged.lengths"), config_error for block ids outside the pool ("paged.block_table").
///
///   posenc::paged_kv<posenc::bfloat16> kv{.k_blocks = kp, .v_blocks = vp, .block_table = ids,
///                                         .blocks_per_sequence = 64, .lengths = lens};
///   posenc::attention(q, kv, out, enc, {.causal = true});
template <maybe_const<float> Q, kv_element TK, kv_element TV, positional_encoding E>
void attention(tensor_view<Q> q, const paged_kv<TK, TV>& kv, tensor_view<float> out, const E& encoder,
               const attention_options& options = {}, const fast_attention_options& fast = {}) {
  detail::require_serving_encoder<E>();
  detail::paged_attention<TK, TV>(tensor_view<const float>(q), kv, out, encoder, options, fast);
}

}  // namespace posenc::inline v0
