// posenc/attention/paged_kv_cache.hpp — one layer's KV cache kept in fixed-size blocks of tokens
// (vLLM's PagedAttention layout, attention/paged.hpp): a pool allocated once, a free list, and per
// sequence the list of its blocks. A sequence grows by taking free blocks, so nothing is ever
// reallocated or moved; a window shift frees whole blocks; attend reads the blocks in place.
//
// Token i of a sequence sits at position i (positions are implicit, as in an engine's paged
// cache): append stores the next tokens' keys after the encoder's key transform (hook 2) at
// positions length .. length + n - 1, attend takes each sequence's queries as its last Sq tokens.
// Keys and/or values may be stored as q8_0 blocks (quantised on append, ggml's block_q8_0).
// Results are bit-identical to kv_cache (attention/kv_cache.hpp) holding the same tokens at the same
// positions. Not here: explicit positions, padding masks and length-dependent RoPE schedules (dynamic
// NTK, LongRoPE: config_error; kv_cache steers them), window shifts that are not whole blocks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/paged.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/kernels/q8_0.hpp>

namespace posenc::inline v0 {

/// Shape of one layer's paged cache.
struct paged_kv_cache_config {
  std::ptrdiff_t kv_heads = 0;                       ///< Hkv (required, >= 1)
  std::ptrdiff_t head_dim = 0;                       ///< D of the keys (required, >= 1)
  std::optional<std::ptrdiff_t> value_dim{};         ///< Dv; absent: head_dim
  std::ptrdiff_t block_size = 16;                    ///< tokens per block (>= 1)
  std::ptrdiff_t num_blocks = 0;                     ///< blocks in the pool, allocated by the constructor (>= 1)
  kv_cache_type key_type = kv_cache_type::native;    ///< q8_0: keys quantised (after the transform) on append
  kv_cache_type value_type = kv_cache_type::native;  ///< q8_0: values quantised on append
};

/// A paged float KV cache (see the banner).
///
///   posenc::paged_kv_cache cache({.kv_heads = 8, .head_dim = 128, .block_size = 16, .num_blocks = 4096});
///   const auto s = cache.add_sequence();
///   cache.append(enc, s, k_new, v_new);                    // [n, Hkv, D] and [n, Hkv, Dv]
///   const std::ptrdiff_t seqs[] = {s};
///   cache.attend(enc, seqs, q, out, {.causal = true});     // q [1, Sq, Hq, D]: the last Sq tokens
///
/// Threads: as kv_cache (const members concurrently, each attend with its own out and workspace;
/// a non-const member needs the cache to itself).
class paged_kv_cache {
 public:
  explicit paged_kv_cache(paged_kv_cache_config c) : cfg_(c) {
    detail::require(c.kv_heads >= 1, "paged_kv_cache.kv_heads", c.kv_heads, ">= 1");
    detail::require(c.head_dim >= 1, "paged_kv_cache.head_dim", c.head_dim, ">= 1");
    dv_ = c.value_dim.value_or(c.head_dim);
    detail::require(dv_ >= 1, "paged_kv_cache.value_dim", dv_, ">= 1");
    detail::require(c.block_size >= 1, "paged_kv_cache.block_size", c.block_size, ">= 1");
    detail::require(c.num_blocks >= 1 && c.num_blocks <= std::numeric_limits<std::int32_t>::max(),
                    "paged_kv_cache.num_blocks", c.num_blocks, "[1, 2^31 - 1] (block ids are int32)");
    constexpr std::ptrdiff_t Q = block_q8_0::values;
    if (q8_keys())
      detail::require(c.head_dim % Q == 0, "paged_kv_cache.head_dim", c.head_dim,
                      "a multiple of 32 for q8_0 keys (blocks of 32 values)");
    if (q8_values()) detail::require(dv_ % Q == 0, "paged_kv_cache.value_dim", dv_, "a multiple of 32 for q8_0 values");
    const auto rows = [&](std::ptrdiff_t d) {
      return static_cast<std::size_t>(detail::checked_product(
          "paged_kv_cache.num_blocks",
          {{"num_blocks", c.num_blocks}, {"block_size", c.block_size}, {"kv_heads", c.kv_heads}, {"dim", d}},
          detail::max_elements<float>));
    };
    if (q8_keys())
      keys_q8_.resize(rows(c.head_dim / Q));
    else
      keys_.resize(rows(c.head_dim));
    if (q8_values())
      values_q8_.resize(rows(dv_ / Q));
    else
      values_.resize(rows(dv_));
    free_.reserve(static_cast<std::size_t>(c.num_blocks));
    for (std::ptrdiff_t b = c.num_blocks; b-- > 0;) free_.push_back(static_cast<std::int32_t>(b));  // low ids first
  }

  [[nodiscard]] const paged_kv_cache_config& config() const noexcept { return cfg_; }
  /// Blocks not held by any sequence.
  [[nodiscard]] std::ptrdiff_t free_blocks() const noexcept { return static_cast<std::ptrdiff_t>(free_.size()); }

  /// A new, empty sequence; its id (a freed id is reused).
  [[nodiscard]] std::ptrdiff_t add_sequence() {
    for (std::size_t s = 0; s < seqs_.size(); ++s)
      if (!seqs_[s].live) {
        seqs_[s] = {.live = true, .length = 0, .blocks = {}};
        return static_cast<std::ptrdiff_t>(s);
      }
    seqs_.push_back({.live = true, .length = 0, .blocks = {}});
    return static_cast<std::ptrdiff_t>(seqs_.size()) - 1;
  }
  /// Gives sequence s's blocks back to the pool; s is no longer valid.
  void free_sequence(std::ptrdiff_t s) {
    sequence& q = at(s);
    free_.insert(free_.end(), q.blocks.rbegin(), q.blocks.rend());
    q = {};
  }
  /// Tokens of sequence s.
  [[nodiscard]] std::ptrdiff_t length(std::ptrdiff_t s) const { return at(s).length; }
  /// Sequence s's block ids, in token order (token i is slot i % block_size of block i / block_size).
  [[nodiscard]] std::span<const std::int32_t> blocks(std::ptrdiff_t s) const { return at(s).blocks; }
  /// The pools [num_blocks, block_size, Hkv, D] / [.., Dv] (native sides; empty views for q8_0 sides)
  /// and [num_blocks, block_size, Hkv, D / 32] / [.., Dv / 32] blocks (q8_0 sides).
  [[nodiscard]] tensor_view<const float> key_pool() const noexcept { return pool(keys_, cfg_.head_dim); }
  [[nodiscard]] tensor_view<const float> value_pool() const noexcept { return pool(values_, dv_); }
  [[nodiscard]] tensor_view<const block_q8_0> key_pool_q8_0() const noexcept {
    return pool(keys_q8_, cfg_.head_dim / block_q8_0::values);
  }
  [[nodiscard]] tensor_view<const block_q8_0> value_pool_q8_0() const noexcept {
    return pool(values_q8_, dv_ / block_q8_0::values);
  }

  /// Appends n tokens to sequence s: `k` [n, Hkv, D] (a [1, n, Hkv, D] view) goes through the
  /// encoder's key transform at positions length(s) .. length(s) + n - 1 and is stored with `v`
  /// [1, n, Hkv, Dv], taking free blocks as needed. Throws config_error naming
  /// "paged_kv_cache.num_blocks", and changes nothing, when the pool has too few free blocks.
  template <positional_encoding E, maybe_const<float> K, maybe_const<float> V>
  void append(const E& enc, std::ptrdiff_t s, tensor_view<K> k, tensor_view<V> v) {
    sequence& q = at(s);
    const std::ptrdiff_t n = k.tokens(), H = cfg_.kv_heads, D = cfg_.head_dim, bs = cfg_.block_size;
    detail::require_shape(k.batch() == 1 && v.batch() == 1, "k.batch", k.batch(), "1 (one sequence)");
    detail::require_shape(k.heads() == H, "k.heads", k.heads(), "paged_kv_cache.kv_heads = " + std::to_string(H));
    detail::require_shape(k.dim() == D, "k.dim", k.dim(), "paged_kv_cache.head_dim = " + std::to_string(D));
    detail::require_shape(v.tokens() == n && v.heads() == H, "v.extents",
                          std::to_string(v.tokens()) + "x" + std::to_string(v.heads()), "the tokens and heads of k");
    detail::require_shape(v.dim() == dv_, "v.dim", v.dim(), "paged_kv_cache.value_dim = " + std::to_string(dv_));
    if constexpr (qk_transform_encoding<E>)
      detail::require_shape(static_cast<std::ptrdiff_t>(enc.head_dim()) == D, "encoder.head_dim",
                            static_cast<std::ptrdiff_t>(enc.head_dim()),
                            "paged_kv_cache.head_dim = " + std::to_string(D));
    static_assert(detail::rope_parts<E>() <= 1, "paged_kv_cache: at most one RoPE part per encoder");
    detail::with_rope(enc, [&](const auto& r) {
      if (r.schedule().length_dependent())
        throw config_error("paged_kv_cache.encoder",
                           "a length-dependent RoPE schedule (its cached keys would go stale as the sequence grows; "
                           "posenc::kv_cache re-rotates them)");
    });
    const std::ptrdiff_t len = detail::checked_sum("paged_kv_cache.length", {{"length", q.length}, {"new tokens", n}});
    const std::ptrdiff_t need = (len + bs - 1) / bs - static_cast<std::ptrdiff_t>(q.blocks.size());
    if (need > free_blocks())
      throw config_error("paged_kv_cache.num_blocks", std::to_string(cfg_.num_blocks),
                         "a pool with " + std::to_string(need) + " free blocks for " + std::to_string(n) +
                             " more tokens (" + std::to_string(free_blocks()) + " free)");
    if (n == 0) return;

    std::vector<float> kbuf = detail::contiguous_copy(tensor_view<const float>(k));
    const auto kview = tensor_view<float>::bthd(kbuf.data(), 1, n, H, D);
    std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
    for (std::ptrdiff_t t = 0; t < n; ++t) pos[static_cast<std::size_t>(t)] = q.length + t;
    detail::apply_qk(enc, kview, std::span<const std::int64_t>(pos), false, nullptr);
    for (std::ptrdiff_t x = 0; x < need; ++x) q.blocks.push_back(free_.back()), free_.pop_back();

    constexpr std::ptrdiff_t Q = block_q8_0::values;
    std::vector<float> vrow(static_cast<std::size_t>(dv_));
    for (std::ptrdiff_t t = 0; t < n; ++t) {
      const std::ptrdiff_t i = q.length + t, slot = q.blocks[static_cast<std::size_t>(i / bs)] * bs + i % bs;
      for (std::ptrdiff_t h = 0; h < H; ++h) {
        const std::ptrdiff_t row = slot * H + h;
        if (q8_keys())
          kernels::quantize_row_q8_0(kview.row(0, t, h), keys_q8_.data() + row * (D / Q), D);
        else
          std::copy_n(kview.row(0, t, h), D, keys_.data() + row * D);
        for (std::ptrdiff_t d = 0; d < dv_; ++d) vrow[static_cast<std::size_t>(d)] = v(0, t, h, d);
        if (q8_values())
          kernels::quantize_row_q8_0(vrow.data(), values_q8_.data() + row * (dv_ / Q), dv_);
        else
          std::copy(vrow.begin(), vrow.end(), values_.data() + row * dv_);
      }
    }
    q.length = len;
  }

  /// Attention of sequences `seqs` (q.batch of them): q [B, Sq, Hq, D] holds each sequence's last Sq
  /// tokens (positions length - Sq + i; Sq <= length), out [B, Sq, Hq, Dv]. `options` as
  /// posenc::attention over a paged cache takes them (scale, causal, sliding_window,
  /// attention_chunk, logit_softcap, sinks; no per-call positions or masks); the queries get the
  /// encoder's transform, the cached keys are used as stored. `fast`: executor, workspace, tiles.
  template <positional_encoding E, maybe_const<float> Q>
  void attend(const E& enc, std::span<const std::ptrdiff_t> seqs, tensor_view<Q> q, tensor_view<float> out,
              attention_options options = {}, const fast_attention_options& fast = {}) const {
    const std::ptrdiff_t B = q.batch();
    detail::require_shape(static_cast<std::ptrdiff_t>(seqs.size()) == B, "q.batch", B,
                          "the number of sequences given = " + std::to_string(seqs.size()));
    std::ptrdiff_t width = 0;
    for (const std::ptrdiff_t s : seqs) {
      const sequence& x = at(s);
      detail::require_shape(q.tokens() <= x.length, "q.tokens", q.tokens(),
                            "<= the length of sequence " + std::to_string(s) + " = " + std::to_string(x.length));
      width = std::max(width, static_cast<std::ptrdiff_t>(x.blocks.size()));
    }
    std::vector<std::int32_t> table(static_cast<std::size_t>(B * width), 0), lengths(static_cast<std::size_t>(B));
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      const sequence& x = at(seqs[static_cast<std::size_t>(b)]);
      std::copy(x.blocks.begin(), x.blocks.end(), table.begin() + b * width);
      lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(x.length);
    }
    options.transform_keys = false;
    const auto run = [&](auto kp, auto vp) {
      using TK = std::remove_const_t<typename decltype(kp)::element_type>;
      using TV = std::remove_const_t<typename decltype(vp)::element_type>;
      const paged_kv<TK, TV> kv{
          .k_blocks = kp, .v_blocks = vp, .block_table = table, .blocks_per_sequence = width, .lengths = lengths};
      attention(q, kv, out, enc, options, fast);
    };
    if (q8_keys() && q8_values()) return run(key_pool_q8_0(), value_pool_q8_0());
    if (q8_keys()) return run(key_pool_q8_0(), value_pool());
    if (q8_values()) return run(key_pool(), value_pool_q8_0());
    run(key_pool(), value_pool());
  }

  /// StreamingLLM / context shift on sequence s, in whole blocks: keeps the first `sink_tokens`,
  /// evicts the next `evict` (both multiples of block_size; their blocks go back to the pool) and
  /// the rest move down by `evict` positions: with a RoPE part their keys are delta-rotated by
  /// -evict in place (q8_0 keys: dequantised, rotated, requantised, as kv_cache). Any other
  /// query/key transform (e.g. xPos) cannot be shifted: config_error.
  template <positional_encoding E>
  void shift_window(const E& enc, std::ptrdiff_t s, std::ptrdiff_t sink_tokens, std::ptrdiff_t evict) {
    sequence& q = at(s);
    const std::ptrdiff_t bs = cfg_.block_size, H = cfg_.kv_heads, D = cfg_.head_dim;
    detail::require(sink_tokens >= 0 && sink_tokens <= q.length && sink_tokens % bs == 0, "paged_kv_cache.sink_tokens",
                    sink_tokens,
                    "a multiple of block_size = " + std::to_string(bs) +
                        " in [0, length = " + std::to_string(q.length) + "] (whole blocks are kept and freed)");
    detail::require(evict >= 0 && evict <= q.length - sink_tokens && evict % bs == 0, "paged_kv_cache.evict", evict,
                    "a multiple of block_size = " + std::to_string(bs) +
                        " in [0, length - sink_tokens = " + std::to_string(q.length - sink_tokens) + "]");
    if constexpr (detail::other_qk_parts<E>() > 0)
      throw config_error("paged_kv_cache.shift_window",
                         std::string("the encoder's query/key transform '") + std::string(enc.name()) +
                             "' is not a rotation; its cached keys cannot be moved to new positions");
    if (evict == 0) return;
    const auto first = q.blocks.begin() + sink_tokens / bs, last = first + evict / bs;
    free_.insert(free_.end(), std::make_reverse_iterator(last), std::make_reverse_iterator(first));
    q.blocks.erase(first, last);
    q.length -= evict;
    const std::ptrdiff_t kept = q.length - sink_tokens;
    if (kept == 0) return;
    detail::with_rope(enc, [&](const auto& r) {
      std::vector<std::int64_t> pos(static_cast<std::size_t>(q.length));
      for (std::ptrdiff_t t = 0; t < q.length; ++t) pos[static_cast<std::size_t>(t)] = t;
      const rope_frequencies f = r.at(r.effective_length(std::span<const std::int64_t>(pos)));
      const std::vector<std::int64_t> delta(static_cast<std::size_t>(bs), -evict);
      constexpr std::ptrdiff_t Q = block_q8_0::values;
      for (std::ptrdiff_t x = sink_tokens / bs; x < static_cast<std::ptrdiff_t>(q.blocks.size()); ++x) {
        const std::ptrdiff_t id = q.blocks[static_cast<std::size_t>(x)],
                             n = std::min(bs, q.length - x * bs);  // the last block may be partly filled
        const auto d = std::span<const std::int64_t>(delta).first(static_cast<std::size_t>(n));
        if (q8_keys()) {
          const auto rows = tensor_view<block_q8_0>::bthd(keys_q8_.data() + id * bs * H * (D / Q), 1, n, H, D / Q);
          auto xf = detail::dequantize_rows(rows);
          r.rotate_delta(tensor_view<float>::bthd(xf.data(), 1, n, H, D), d, f);
          detail::quantize_rows(xf.data(), rows);
        } else {
          r.rotate_delta(tensor_view<float>::bthd(keys_.data() + id * bs * H * D, 1, n, H, D), d, f);
        }
      }
    });
  }

 private:
  struct sequence {
    bool live = false;
    std::ptrdiff_t length = 0;
    std::vector<std::int32_t> blocks;
  };

  [[nodiscard]] const sequence& at(std::ptrdiff_t s) const {
    detail::require(s >= 0 && s < static_cast<std::ptrdiff_t>(seqs_.size()) && seqs_[static_cast<std::size_t>(s)].live,
                    "paged_kv_cache.sequence", s, "an id returned by add_sequence and not freed");
    return seqs_[static_cast<std::size_t>(s)];
  }
  [[nodiscard]] sequence& at(std::ptrdiff_t s) {
    return const_cast<sequence&>(static_cast<const paged_kv_cache&>(*this).at(s));
  }
  [[nodiscard]] bool q8_keys() const noexcept { return cfg_.key_type == kv_cache_type::q8_0; }
  [[nodiscard]] bool q8_values() const noexcept { return cfg_.value_type == kv_cache_type::q8_0; }
  template <class U>
  [[nodiscard]] tensor_view<const U> pool(const std::vector<U>& x, std::ptrdiff_t d) const noexcept {
    const std::ptrdiff_t nb = x.empty() ? 0 : cfg_.num_blocks;
    return tensor_view<const U>::unchecked(x.data(), {nb, cfg_.block_size, cfg_.kv_heads, d},
                                           {cfg_.block_size * cfg_.kv_heads * d, cfg_.kv_heads * d, d, 1});
  }

  paged_kv_cache_config cfg_;
  std::ptrdiff_t dv_ = 0;
  std::vector<float> keys_, values_;             // [num_blocks][block_size][Hkv][D] / [..][Dv] (native sides)
  std::vector<block_q8_0> keys_q8_, values_q8_;  // [num_blocks][block_size][Hkv][D / 32] / [..][Dv / 32] (q8_0)
  std::vector<std::int32_t> free_;               // free block ids, the next one taken at the back
  std::vector<sequence> seqs_;
};

}  // namespace posenc::inline v0
