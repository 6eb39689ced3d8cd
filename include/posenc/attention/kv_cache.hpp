// posenc/attention/kv_cache.hpp — one layer's KV cache: keys stored AFTER the query/key transform,
// values, and the position of every cached token; append, attend, and keep the keys consistent.
//
// docs/spec.md §7.7, §8.4, §8.7: engines cache rotated keys, so a length-dependent RoPE schedule (dynamic
// NTK growth, LongRoPE short->long) makes them stale when it switches. The cache follows an explicit
// policy: re-rotate the cached keys by the angle difference (exact, default), drop the cache (the
// caller re-prefills), or keep the stale keys (reproduces HF). A StreamingLLM window shift keeps s
// sink tokens, evicts the middle and delta-rotates the rest to their new positions (K-shift). This
// is a reference: contiguous storage, growth by doubling, no paging, one common length per batch.
// A float cache may store keys and/or values as q8_0 blocks (ggml's 8-bit cache type, core/q8_0.hpp):
// quantised on append, read by the fused attention in its tiles; re-rotation and window shifts
// dequantise, rotate and requantise (docs/kv-cache.md states the drift over repeated shifts).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/encoder_paths.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/kernels/q8_0.hpp>
#include <posenc/rope/frequencies.hpp>

namespace posenc::inline v0 {

/// What a KV cache does when a length-dependent RoPE schedule switches frequencies (docs/spec.md §8.4, §8.7).
enum class rope_cache_policy : unsigned char {
  rerotate_cached_keys,  ///< exact: cached keys are re-rotated from the old to the new frequencies (default)
  drop_cache,            ///< the cache empties itself and reports `cache_event::dropped`; the caller re-prefills
  keep_stale,            ///< cached keys keep the rotation they were written with (HF / MLX behaviour)
};

/// What append() did about the schedule.
enum class cache_event : unsigned char {
  none,        ///< no switch
  rerotated,   ///< the schedule switched and the cached keys were re-rotated
  dropped,     ///< the schedule switched; the cache is now EMPTY and the new tokens were NOT appended
  kept_stale,  ///< the schedule switched; old keys were kept as written (keep_stale)
};

/// How a cache stores keys or values: as the cache's element type, or as q8_0 blocks (32 values in
/// 34 bytes: ggml's block_q8_0, llama.cpp's `q8_0` cache type; float caches only, dims % 32 == 0).
enum class kv_cache_type : unsigned char { native, q8_0 };

/// Shape and policy of one layer's cache.
struct kv_cache_config {
  std::ptrdiff_t batch = 1;                   ///< B: sequences decoded together (one common length)
  std::ptrdiff_t kv_heads = 0;                ///< Hkv (required, >= 1)
  std::ptrdiff_t head_dim = 0;                ///< D of the keys (required, >= 1)
  std::optional<std::ptrdiff_t> value_dim{};  ///< Dv; absent: head_dim
  std::ptrdiff_t capacity = 0;                ///< tokens to reserve up front (grows by doubling)
  rope_cache_policy policy = rope_cache_policy::rerotate_cached_keys;
  kv_cache_type key_type = kv_cache_type::native;    ///< q8_0: keys quantised (after the transform) on append
  kv_cache_type value_type = kv_cache_type::native;  ///< q8_0: values quantised on append
};

namespace detail {

/// A RoPE-like encoder the cache can steer: a schedule and rotation under explicit frequencies.
template <class E>
concept steerable_rope = qk_transform_encoding<E> &&
    requires(const E& e, tensor_view<float> xf, tensor_view<double> xd, std::span<const std::int64_t> p,
             const rope_frequencies& f) {
  { e.schedule().length_dependent() } -> std::convertible_to<bool>;
  { e.at(std::int64_t{}) } -> std::convertible_to<rope_frequencies>;
  e.rotate(xf, p, f);
  e.rotate(xd, p, f);
  e.rerotate(xf, p, f, f);
  e.rerotate(xd, p, f, f);
  e.rotate_delta(xf, p, f);
  e.rotate_delta(xd, p, f);
};

/// Number of steerable RoPE parts and of other query/key transforms inside E (through combined<>).
template <class E>
constexpr int rope_parts() {
  return count_leaves<E>([]<class L>() { return steerable_rope<L>; });
}
template <class E>
constexpr int other_qk_parts() {
  return count_leaves<E>([]<class L>() { return qk_transform_encoding<L> && !steerable_rope<L>; });
}

/// A cache's q8_0 rows [B, T, H, n / 32] (dim stride 1) dequantised into contiguous float [B, T, H, n].
inline std::vector<float> dequantize_rows(tensor_view<const block_q8_0> x) {
  const std::ptrdiff_t B = x.batch(), S = x.tokens(), H = x.heads(), n = x.dim() * block_q8_0::values;
  std::vector<float> out(static_cast<std::size_t>(B * S * H * n));
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t t = 0; t < S; ++t)
      for (std::ptrdiff_t h = 0; h < H; ++h)
        kernels::dequantize_row_q8_0(x.row(b, t, h), out.data() + ((b * S + t) * H + h) * n, n);
  return out;
}

/// The reverse: contiguous float rows [B, T, H, n] quantised into the cache's q8_0 rows y.
inline void quantize_rows(const float* x, tensor_view<block_q8_0> y) {
  const std::ptrdiff_t B = y.batch(), S = y.tokens(), H = y.heads(), n = y.dim() * block_q8_0::values;
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t t = 0; t < S; ++t)
      for (std::ptrdiff_t h = 0; h < H; ++h)
        kernels::quantize_row_q8_0(x + ((b * S + t) * H + h) * n, y.row(b, t, h), n);
}

/// sdpa on a view that may be q8_0 (dequantised first: the reference path of a q8_0 cache).
template <class K>
auto sdpa_operand(tensor_view<K> x, std::vector<float>& buf) {
  if constexpr (std::is_same_v<std::remove_const_t<K>, block_q8_0>) {
    buf = dequantize_rows(x);
    return tensor_view<const float>::bthd(buf.data(), x.batch(), x.tokens(), x.heads(), x.dim() * block_q8_0::values);
  } else {
    return x;
  }
}

/// The attention of a float cache / layer is the fused posenc::attention; double ones keep the
/// double-precision sdpa (posenc::attention computes in fp32 only), and so do encoders the fused
/// path cannot take (a relative_kv hook not in distance form) and calls that ask for the attention
/// weights (the fused kernel never forms them; the cache keeps offering them, through sdpa).
template <class T, class Q, class K, class V, class E>
void attend_fast_or_reference(tensor_view<Q> q, tensor_view<K> k, tensor_view<V> v, tensor_view<T> out, const E& enc,
                              const attention_options& o, const fast_attention_options& fast) {
  if constexpr (std::is_same_v<T, float> && detail::all_relative_kv_by_distance<E>()) {
    if (o.weights.empty()) return attention(q, k, v, out, enc, o, fast);
  }
  std::vector<float> kbuf, vbuf;
  sdpa(q, sdpa_operand(k, kbuf), sdpa_operand(v, vbuf), out, enc, o);
}

/// Calls f(rope part) when E has one.
template <class E, class F>
void with_rope(const E& e, F&& f) {
  if constexpr (steerable_rope<E>)
    f(e);
  else if constexpr (is_combined<E>::value) {
    with_rope(e.first(), f);
    with_rope(e.second(), f);
  }
}

/// Hook 2 of E on x, with the RoPE part rotated under `freq` when given (else its own rule).
template <class E, class T>
void apply_qk(const E& e, tensor_view<T> x, std::span<const std::int64_t> pos, bool query,
              const rope_frequencies* freq) {
  if constexpr (steerable_rope<E>) {
    if (freq)
      e.rotate(x, pos, *freq);
    else if (query)
      e.transform_q(x, pos);
    else
      e.transform_k(x, pos);
  } else if constexpr (is_combined<E>::value) {
    apply_qk(e.first(), x, pos, query, freq);
    apply_qk(e.second(), x, pos, query, freq);
  } else if constexpr (qk_transform_encoding<E>) {
    if (query)
      e.transform_q(x, pos);
    else
      e.transform_k(x, pos);
  }
}

}  // namespace detail

/// One layer's KV cache over element type T (float or double).
///
///   posenc::kv_cache<float> cache({.kv_heads = 8, .head_dim = 128});
///   cache.append(enc, k_new, v_new, pos_new);          // keys transformed (rotated) here, once
///   cache.attend(enc, q_new, out, pos_new, {.causal = true});
///
/// The encoder passed to append/attend must be the same for the cache's lifetime. Positions are
/// stored per (sequence, token); masks in attend act on them (docs/spec.md §10).
///
/// Threads: like a standard container. The const members (attend, keys, values, positions,
/// token_mask, next_position, length, ...) may run concurrently with each other from any number of
/// threads, each attend with its own `out` and its own `fast.workspace` (or none: a workspace is
/// not for concurrent calls). Every non-const member (append, clear, truncate, reserve,
/// shift_window) needs the cache to itself: running one while another
/// thread runs any member, attend included, is a data race (the caller serialises, e.g. one
/// mutex per cache). Different caches are independent. tests/threads/kv_cache_threads_test.cpp.
template <attention_element T>
class kv_cache {
 public:
  explicit kv_cache(kv_cache_config c) : cfg_(c) {
    detail::require(c.batch >= 1, "kv_cache.batch", c.batch, ">= 1");
    detail::require(c.kv_heads >= 1, "kv_cache.kv_heads", c.kv_heads, ">= 1");
    detail::require(c.head_dim >= 1, "kv_cache.head_dim", c.head_dim, ">= 1");
    if (c.value_dim) detail::require(*c.value_dim >= 1, "kv_cache.value_dim", *c.value_dim, ">= 1");
    detail::require(c.capacity >= 0, "kv_cache.capacity", c.capacity, ">= 0");
    dv_ = c.value_dim ? *c.value_dim : c.head_dim;
    if (c.key_type == kv_cache_type::q8_0) {
      detail::require(std::is_same_v<T, float>, "kv_cache.key_type", "q8_0", "native for a double cache");
      detail::require(c.head_dim % block_q8_0::values == 0, "kv_cache.head_dim", c.head_dim,
                      "a multiple of 32 (q8_0 keys)");
    }
    if (c.value_type == kv_cache_type::q8_0) {
      detail::require(std::is_same_v<T, float>, "kv_cache.value_type", "q8_0", "native for a double cache");
      detail::require(dv_ % block_q8_0::values == 0, "kv_cache.value_dim", dv_, "a multiple of 32 (q8_0 values)");
    }
    // One token of every sequence must be addressable before any capacity is: batch * Hkv * D (Dv).
    (void)elements_for("kv_cache.head_dim", 1, cfg_.head_dim);
    (void)elements_for("kv_cache.value_dim", 1, dv_);
    reserve(c.capacity);
  }

  [[nodiscard]] const kv_cache_config& config() const noexcept { return cfg_; }
  [[nodiscard]] std::ptrdiff_t batch() const noexcept { return cfg_.batch; }
  /// Cached tokens per sequence.
  [[nodiscard]] std::ptrdiff_t length() const noexcept { return len_; }
  [[nodiscard]] std::ptrdiff_t capacity() const noexcept { return cap_; }
  [[nodiscard]] bool empty() const noexcept { return len_ == 0; }

  /// Cached (transformed) keys [B, length, Hkv, D] and values [B, length, Hkv, Dv]. Invalidated by
  /// any non-const call. Empty (no tokens) for a side stored as q8_0: read keys_q8_0() / values_q8_0().
  [[nodiscard]] tensor_view<const T> keys() const noexcept {
    return q8_keys() ? view_of(keys_, cfg_.head_dim, 0) : view_of(keys_, cfg_.head_dim);
  }
  [[nodiscard]] tensor_view<const T> values() const noexcept {
    return q8_values() ? view_of(values_, dv_, 0) : view_of(values_, dv_);
  }
  /// q8_0 keys [B, length, Hkv, D / 32] and values [B, length, Hkv, Dv / 32] in blocks (empty for a
  /// native side). Invalidated by any non-const call.
  [[nodiscard]] tensor_view<const block_q8_0> keys_q8_0() const noexcept {
    return q8_keys() ? view_of(keys_q8_, cfg_.head_dim / block_q8_0::values)
                     : view_of(keys_q8_, cfg_.head_dim / block_q8_0::values, 0);
  }
  [[nodiscard]] tensor_view<const block_q8_0> values_q8_0() const noexcept {
    return q8_values() ? view_of(values_q8_, dv_ / block_q8_0::values)
                       : view_of(values_q8_, dv_ / block_q8_0::values, 0);
  }
  /// Position of every cached token [B * length]; token mask (0 = padding) [B * length].
  [[nodiscard]] std::span<const std::int64_t> positions() const noexcept { return pos_; }
  [[nodiscard]] std::span<const std::uint8_t> token_mask() const noexcept { return mask_; }
  /// One past the largest real position of sequence b (the next decode position; 0 when empty).
  /// INT64_MAX when a cached position is INT64_MAX (one past it is not representable).
  [[nodiscard]] std::int64_t next_position(std::ptrdiff_t b) const noexcept {
    std::int64_t m = -1;
    for (std::ptrdiff_t t = 0; t < len_; ++t) {
      const auto i = static_cast<std::size_t>(b * len_ + t);
      if (mask_[i] != 0) m = std::max(m, pos_[i]);
    }
    return m == std::numeric_limits<std::int64_t>::max() ? m : m + 1;
  }
  /// The RoPE frequencies every cached key is rotated with (when a length-dependent schedule is
  /// steered by this cache, i.e. policy != keep_stale); empty otherwise.
  [[nodiscard]] const std::optional<rope_frequencies>& rotated_with() const noexcept { return freq_; }

  /// Forgets every token (capacity is kept).
  void clear() noexcept {
    len_ = 0;
    pos_.clear();
    mask_.clear();
    freq_.reset();
  }

  /// Keeps the first `n` tokens of every sequence (rewind after a rejected speculation).
  void truncate(std::ptrdiff_t n) {
    detail::require(n >= 0 && n <= len_, "kv_cache.truncate", n, "[0, length = " + std::to_string(len_) + "]");
    std::vector<std::int64_t> p;
    std::vector<std::uint8_t> m;
    for (std::ptrdiff_t b = 0; b < cfg_.batch; ++b)
      for (std::ptrdiff_t t = 0; t < n; ++t) {
        p.push_back(pos_[static_cast<std::size_t>(b * len_ + t)]);
        m.push_back(mask_[static_cast<std::size_t>(b * len_ + t)]);
      }
    pos_ = std::move(p);
    mask_ = std::move(m);
    len_ = n;
  }

  /// Grows storage to hold `tokens` per sequence without reallocating.
  /// Throws config_error naming kv_cache.capacity when batch * tokens * kv_heads * head_dim (or
  /// value_dim) is not a valid element count; std::bad_alloc when the memory is not there.
  void reserve(std::ptrdiff_t tokens) {
    if (tokens <= cap_) return;
    const std::ptrdiff_t H = cfg_.kv_heads;
    // the element counts are checked in values (a q8_0 row takes fewer bytes than a float one)
    (void)elements_for("kv_cache.capacity", tokens, cfg_.head_dim);
    (void)elements_for("kv_cache.capacity", tokens, dv_);
    auto grow = [&](auto& old, std::ptrdiff_t row) {  // row: elements per (token, head)
      std::remove_reference_t<decltype(old)> n(static_cast<std::size_t>(cfg_.batch * tokens * H * row));
      for (std::ptrdiff_t b = 0; b < cfg_.batch; ++b)
        std::copy_n(old.data() + b * cap_ * H * row, len_ * H * row, n.data() + b * tokens * H * row);
      old = std::move(n);
    };
    if (q8_keys())
      grow(keys_q8_, cfg_.head_dim / block_q8_0::values);
    else
      grow(keys_, cfg_.head_dim);
    if (q8_values())
      grow(values_q8_, dv_ / block_q8_0::values);
    else
      grow(values_, dv_);
    cap_ = tokens;
  }

  /// Appends n tokens per sequence: `k` [B, n, Hkv, D] goes through the encoder's key transform
  /// (hook 2) and is stored with `v` [B, n, Hkv, Dv] and `positions` [B * n]; `token_mask` [B * n]
  /// (optional, 0 = padding token, never attended). Inputs are not modified.
  ///
  /// With a length-dependent RoPE schedule (in `enc`, or a part of a combined<>), and a policy other
  /// than keep_stale, the cache picks the frequencies for max(all cached and new positions) + 1;
  /// if they differ from those of the cached keys it re-rotates them (rerotate_cached_keys) or
  /// empties itself and returns `cache_event::dropped` without appending (drop_cache: re-prefill
  /// the whole context). keep_stale rotates new keys under the encoder's own per-call rule (HF).
  template <positional_encoding E, maybe_const<T> K, maybe_const<T> V>
  [[nodiscard]] cache_event append(const E& enc, tensor_view<K> k, tensor_view<V> v,
                                   std::span<const std::int64_t> positions,
                                   std::span<const std::uint8_t> token_mask = {}) {
    check_append(enc, tensor_view<const T>(k), tensor_view<const T>(v), positions, token_mask);
    static_assert(detail::rope_parts<E>() <= 1, "kv_cache: at most one RoPE part per encoder");
    const auto [event, steered] = steer_rope(enc, positions);
    if (event == cache_event::dropped) {
      clear();
      return event;
    }
    // Transform a copy of the new keys, then store keys, values, positions and mask.
    const std::ptrdiff_t B = cfg_.batch, n = k.tokens();
    std::vector<T> kbuf = detail::contiguous_copy(tensor_view<const T>(k));
    const auto kview = tensor_view<T>::bthd(kbuf.data(), B, n, cfg_.kv_heads, cfg_.head_dim);
    detail::apply_qk(enc, kview, positions, false, steered ? &*freq_ : nullptr);
    const std::ptrdiff_t need = detail::checked_sum("kv_cache.length", {{"length", len_}, {"new tokens", n}});
    // Doubling saturates at the largest valid capacity; reserve() then checks the element count.
    if (need > cap_) reserve(std::max(need, cap_ > PTRDIFF_MAX / 2 ? PTRDIFF_MAX : 2 * cap_));
    store_rows(kview, tensor_view<const T>(v));
    store_positions(positions, token_mask, n);
    len_ += n;
    return event;
  }

  /// Attention of `q` [B, Sq, Hq, D] at `q_positions` [B * Sq] over every cached token, into `out`
  /// [B, Sq, Hq, Dv]. `options` may set scale, causal, sliding_window, attention_chunk,
  /// logit_softcap, sinks, weights (passed through to the attention as given); the key
  /// fields (positions, mask, lengths, segments) come from the cache and must be left empty.
  /// Queries get the encoder's transform (under the cache's frequencies when it steers a
  /// length-dependent RoPE); cached keys are used as stored. A float cache runs the fused
  /// posenc::attention (`fast`: executor, workspace) unless `weights` are asked for; a double cache
  /// and a call with `weights` run sdpa.
  template <positional_encoding E, maybe_const<T> Q>
  void attend(const E& enc, tensor_view<Q> q, tensor_view<T> out, std::span<const std::int64_t> q_positions,
              attention_options options = {}, const fast_attention_options& fast = {}) const {
    detail::require(options.key_positions.empty() && options.query_positions.empty(), "attention.key_positions",
                    "given", "empty: the kv_cache supplies key positions (pass q_positions separately)");
    detail::require(options.key_mask.empty() && options.key_lengths.empty(), "attention.key_mask", "given",
                    "empty: the kv_cache supplies its token mask");
    detail::require(options.query_segments.empty() && options.key_segments.empty(), "attention.key_segments", "given",
                    "empty: packing is not supported through a kv_cache");
    detail::require_shape(q.batch() == cfg_.batch, "q.batch", q.batch(),
                          "kv_cache.batch = " + std::to_string(cfg_.batch));
    options.query_positions = q_positions;
    options.key_positions = pos_;
    options.key_mask = mask_;
    options.transform_keys = false;
    const bool steered = freq_.has_value() && detail::rope_parts<E>() > 0;
    if (!steered) {
      with_kv([&](auto k, auto v) { detail::attend_fast_or_reference(q, k, v, out, enc, options, fast); });
      return;
    }
    detail::require_shape(static_cast<std::ptrdiff_t>(q_positions.size()) == q.batch() * q.tokens(),
                          "attention.query_positions", q_positions.size(),
                          "batch * query tokens = " + std::to_string(q.batch() * q.tokens()));
    auto qbuf = detail::contiguous_copy(tensor_view<const T>(q));
    const auto qview = tensor_view<T>::bthd(qbuf.data(), q.batch(), q.tokens(), q.heads(), q.dim());
    if constexpr (qk_transform_encoding<E>) detail::apply_qk(enc, qview, q_positions, true, &*freq_);
    options.transform_queries = false;
    with_kv([&](auto k, auto v) { detail::attend_fast_or_reference(qview, k, v, out, enc, options, fast); });
  }

  /// StreamingLLM / context shift: keeps the first `sink_tokens` of every sequence, evicts the next
  /// `evict` and moves the rest down; their positions decrease by `evict` and, when the encoder has
  /// a RoPE part, their keys are delta-rotated by -evict positions under the frequencies they were
  /// rotated with (K-shift, magnitude untouched). Any other query/key transform (e.g. xPos) cannot be
  /// shifted: config_error. Position-free and bias encoders only need the positions updated.
  template <positional_encoding E>
  void shift_window(const E& enc, std::ptrdiff_t sink_tokens, std::ptrdiff_t evict) {
    detail::require(sink_tokens >= 0 && sink_tokens <= len_, "kv_cache.sink_tokens", sink_tokens,
                    "[0, length = " + std::to_string(len_) + "]");
    detail::require(evict >= 0 && sink_tokens + evict <= len_, "kv_cache.evict", evict,
                    "[0, length - sink_tokens = " + std::to_string(len_ - sink_tokens) + "]");
    if constexpr (detail::other_qk_parts<E>() > 0)
      throw config_error("kv_cache.shift_window",
                         std::string("the encoder's query/key transform '") + std::string(enc.name()) +
                             "' is not a rotation; its cached keys cannot be moved to new positions");
    const std::ptrdiff_t B = cfg_.batch, H = cfg_.kv_heads, D = cfg_.head_dim, kept = len_ - sink_tokens - evict;
    if (evict == 0 || kept < 0) return;
    for (std::ptrdiff_t b = 0; b < B; ++b)  // moved positions decrease by evict: none may pass INT64_MIN
      for (std::ptrdiff_t t = sink_tokens + evict; t < len_; ++t)
        detail::require(
            pos_[static_cast<std::size_t>(b * len_ + t)] >= std::numeric_limits<std::int64_t>::min() + evict,
            "kv_cache.evict", evict, "a shift that keeps every moved position >= INT64_MIN");
    // the kept rows move down whole (q8_0 rows as blocks: moving them changes no value)
    auto move_rows = [&](auto& s, std::ptrdiff_t row) {
      for (std::ptrdiff_t b = 0; b < B; ++b)
        std::copy_n(s.data() + (b * cap_ + sink_tokens + evict) * H * row, kept * H * row,
                    s.data() + (b * cap_ + sink_tokens) * H * row);
    };
    if (q8_keys())
      move_rows(keys_q8_, D / block_q8_0::values);
    else
      move_rows(keys_, D);
    if (q8_values())
      move_rows(values_q8_, dv_ / block_q8_0::values);
    else
      move_rows(values_, dv_);
    std::vector<std::int64_t> p;
    std::vector<std::uint8_t> m;
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t t = 0; t < len_; ++t) {
        if (t >= sink_tokens && t < sink_tokens + evict) continue;
        const auto i = static_cast<std::size_t>(b * len_ + t);
        p.push_back(t >= sink_tokens ? pos_[i] - evict : pos_[i]);
        m.push_back(mask_[i]);
      }
    pos_ = std::move(p);
    mask_ = std::move(m);
    len_ -= evict;
    detail::with_rope(enc, [&](const auto& r) {
      const rope_frequencies f = freq_ ? *freq_ : r.at(r.effective_length(std::span<const std::int64_t>(pos_)));
      const std::vector<std::int64_t> delta(static_cast<std::size_t>(B * kept), -evict);
      if (q8_keys()) {  // dequantise the moved rows, rotate, requantise (docs/kv-cache.md: drift per shift)
        constexpr std::ptrdiff_t Q = block_q8_0::values;
        const auto window =
            tensor_view<block_q8_0>::unchecked(keys_q8_.data() + sink_tokens * H * (D / Q), {B, kept, H, D / Q},
                                               {cap_ * H * (D / Q), H * (D / Q), D / Q, 1});
        auto x = detail::dequantize_rows(window);
        r.rotate_delta(tensor_view<float>::bthd(x.data(), B, kept, H, D), std::span<const std::int64_t>(delta), f);
        detail::quantize_rows(x.data(), window);
        return;
      }
      const auto window =
          tensor_view<T>::strided(keys_.data() + sink_tokens * H * D, {B, kept, H, D}, {cap_ * H * D, H * D, D, 1});
      r.rotate_delta(window, std::span<const std::int64_t>(delta), f);
    });
  }

 private:
  /// The checks of append(), before anything changes.
  template <positional_encoding E>
  void check_append(const E& enc, tensor_view<const T> k, tensor_view<const T> v,
                    std::span<const std::int64_t> positions, std::span<const std::uint8_t> token_mask) const {
    const std::ptrdiff_t B = cfg_.batch, n = k.tokens();
    detail::require_shape(k.batch() == B, "k.batch", k.batch(), "kv_cache.batch = " + std::to_string(B));
    detail::require_shape(k.heads() == cfg_.kv_heads, "k.heads", k.heads(),
                          "kv_cache.kv_heads = " + std::to_string(cfg_.kv_heads));
    detail::require_shape(k.dim() == cfg_.head_dim, "k.dim", k.dim(),
                          "kv_cache.head_dim = " + std::to_string(cfg_.head_dim));
    detail::require_shape(
        v.batch() == B && v.tokens() == n && v.heads() == cfg_.kv_heads, "v.extents",
        std::to_string(v.batch()) + "x" + std::to_string(v.tokens()) + "x" + std::to_string(v.heads()),
        "the batch, tokens and heads of k");
    detail::require_shape(v.dim() == dv_, "v.dim", v.dim(), "kv_cache.value_dim = " + std::to_string(dv_));
    detail::require_shape(static_cast<std::ptrdiff_t>(positions.size()) == B * n, "kv_cache.positions",
                          positions.size(), "batch * new tokens = " + std::to_string(B * n));
    if (!token_mask.empty())
      detail::require_shape(static_cast<std::ptrdiff_t>(token_mask.size()) == B * n, "kv_cache.token_mask",
                            token_mask.size(), "batch * new tokens = " + std::to_string(B * n));
    if constexpr (qk_transform_encoding<E>)
      detail::require_shape(static_cast<std::ptrdiff_t>(enc.head_dim()) == cfg_.head_dim, "encoder.head_dim",
                            static_cast<std::ptrdiff_t>(enc.head_dim()),
                            "kv_cache.head_dim = " + std::to_string(cfg_.head_dim));
  }

  /// The frequencies of a length-dependent RoPE schedule for this append (see append()): reports a
  /// switch under keep_stale; else picks the frequencies for the longest position and re-rotates the
  /// cached keys to them (rerotate_cached_keys) or asks for the cache to be dropped (drop_cache).
  /// Returns the event and whether the new keys rotate with the cache's frequencies (freq_).
  template <positional_encoding E>
  std::pair<cache_event, bool> steer_rope(const E& enc, std::span<const std::int64_t> positions) {
    cache_event event = cache_event::none;
    std::optional<rope_frequencies> target;
    detail::with_rope(enc, [&](const auto& r) {
      if (!r.schedule().length_dependent()) return;
      if (cfg_.policy == rope_cache_policy::keep_stale) {
        // Report (not fix) a switch: the frequencies of this call vs those of the previous one.
        rope_frequencies now = r.at(r.effective_length(positions));
        if (freq_stale_ && len_ > 0 && *freq_stale_ != now) event = cache_event::kept_stale;
        freq_stale_ = std::move(now);
        return;
      }
      std::int64_t max_pos = std::numeric_limits<std::int64_t>::min();
      for (auto p : pos_) max_pos = std::max(max_pos, p);
      for (auto p : positions) max_pos = std::max(max_pos, p);
      const std::int64_t one[1] = {max_pos};
      target = r.at(r.effective_length(std::span<const std::int64_t>(one, 1)));
      if (len_ > 0 && freq_ && *freq_ != *target) {
        if (cfg_.policy == rope_cache_policy::drop_cache) {
          event = cache_event::dropped;
          return;
        }
        if (q8_keys()) {  // dequantise, re-rotate, requantise (docs/kv-cache.md: one requantisation)
          auto f = detail::dequantize_rows(keys_q8_0());
          r.rerotate(tensor_view<float>::bthd(f.data(), cfg_.batch, len_, cfg_.kv_heads, cfg_.head_dim),
                     std::span<const std::int64_t>(pos_), *freq_, *target);
          detail::quantize_rows(f.data(), view_of(keys_q8_, cfg_.head_dim / block_q8_0::values, len_));
        } else {
          r.rerotate(mutable_keys(), std::span<const std::int64_t>(pos_), *freq_, *target);
        }
        event = cache_event::rerotated;
      }
    });
    const bool steered = event != cache_event::dropped && target.has_value();
    if (steered) freq_ = std::move(target);
    return {event, steered};
  }

  /// Stores the new tokens' transformed keys and values after the cached ones (capacity reserved).
  void store_rows(tensor_view<const T> kview, tensor_view<const T> v) {
    const std::ptrdiff_t B = cfg_.batch, n = kview.tokens();
    const auto kd = view_of(keys_, cfg_.head_dim, len_ + n), vd = view_of(values_, dv_, len_ + n);
    const auto kq = view_of(keys_q8_, cfg_.head_dim / block_q8_0::values, len_ + n),
               vq = view_of(values_q8_, dv_ / block_q8_0::values, len_ + n);
    std::vector<T> vrow(q8_values() ? static_cast<std::size_t>(dv_) : 0);
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t t = 0; t < n; ++t)
        for (std::ptrdiff_t h = 0; h < cfg_.kv_heads; ++h) {
          if constexpr (std::is_same_v<T, float>) {
            if (q8_keys()) kernels::quantize_row_q8_0(kview.row(b, t, h), kq.row(b, len_ + t, h), cfg_.head_dim);
            if (q8_values()) {
              for (std::ptrdiff_t d = 0; d < dv_; ++d) vrow[static_cast<std::size_t>(d)] = v(b, t, h, d);
              kernels::quantize_row_q8_0(vrow.data(), vq.row(b, len_ + t, h), dv_);
            }
          }
          if (!q8_keys())
            for (std::ptrdiff_t d = 0; d < cfg_.head_dim; ++d) kd(b, len_ + t, h, d) = kview(b, t, h, d);
          if (!q8_values())
            for (std::ptrdiff_t d = 0; d < dv_; ++d) vd(b, len_ + t, h, d) = v(b, t, h, d);
        }
  }

  /// The positions and the token mask, cached ones first then the n new ones, sequence by sequence.
  void store_positions(std::span<const std::int64_t> positions, std::span<const std::uint8_t> token_mask,
                       std::ptrdiff_t n) {
    const std::ptrdiff_t B = cfg_.batch;
    std::vector<std::int64_t> p;
    std::vector<std::uint8_t> m;
    p.reserve(static_cast<std::size_t>(B * (len_ + n)));
    m.reserve(p.capacity());
    for (std::ptrdiff_t b = 0; b < B; ++b) {
      for (std::ptrdiff_t t = 0; t < len_; ++t) {
        p.push_back(pos_[static_cast<std::size_t>(b * len_ + t)]);
        m.push_back(mask_[static_cast<std::size_t>(b * len_ + t)]);
      }
      for (std::ptrdiff_t t = 0; t < n; ++t) {
        p.push_back(positions[static_cast<std::size_t>(b * n + t)]);
        m.push_back(token_mask.empty() ? std::uint8_t{1}
                                       : std::uint8_t(token_mask[static_cast<std::size_t>(b * n + t)] != 0));
      }
    }
    pos_ = std::move(p);
    mask_ = std::move(m);
  }

  [[nodiscard]] bool q8_keys() const noexcept { return cfg_.key_type == kv_cache_type::q8_0; }
  [[nodiscard]] bool q8_values() const noexcept { return cfg_.value_type == kv_cache_type::q8_0; }

  // Rows of d elements (values, or blocks for q8_0 storage) of every cached token, or of `len` tokens.
  template <class U>
  [[nodiscard]] tensor_view<const U> view_of(const std::vector<U>& s, std::ptrdiff_t d) const noexcept {
    return view_of(s, d, len_);
  }
  template <class U>
  [[nodiscard]] tensor_view<const U> view_of(const std::vector<U>& s, std::ptrdiff_t d,
                                             std::ptrdiff_t len) const noexcept {
    return tensor_view<const U>::unchecked(s.data(), {cfg_.batch, len, cfg_.kv_heads, d},
                                           {cap_ * cfg_.kv_heads * d, cfg_.kv_heads * d, d, 1});
  }
  template <class U>
  [[nodiscard]] tensor_view<U> view_of(std::vector<U>& s, std::ptrdiff_t d, std::ptrdiff_t len) noexcept {
    return tensor_view<U>::unchecked(s.data(), {cfg_.batch, len, cfg_.kv_heads, d},
                                     {cap_ * cfg_.kv_heads * d, cfg_.kv_heads * d, d, 1});
  }

  // f(keys, values) with the views of the cache's storage types (q8_0 only in a float cache).
  template <class F>
  void with_kv(F&& f) const {
    if constexpr (std::is_same_v<T, float>) {
      if (q8_keys() && q8_values()) return f(keys_q8_0(), values_q8_0());
      if (q8_keys()) return f(keys_q8_0(), values());
      if (q8_values()) return f(keys(), values_q8_0());
    }
    f(keys(), values());
  }
  [[nodiscard]] tensor_view<T> mutable_keys() noexcept { return view_of(keys_, cfg_.head_dim, len_); }

  /// batch * tokens * kv_heads * d, checked: config_error naming `parameter` when it is not a valid
  /// element count of a std::vector<T> (no wrapped size ever reaches an allocation or an index).
  [[nodiscard]] std::int64_t elements_for(std::string_view parameter, std::ptrdiff_t tokens, std::ptrdiff_t d) const {
    return detail::checked_product(parameter,
                                   {{"batch", cfg_.batch}, {"tokens", tokens}, {"kv_heads", cfg_.kv_heads}, {"dim", d}},
                                   detail::max_elements<T>);
  }

  kv_cache_config cfg_;
  std::ptrdiff_t dv_ = 0, len_ = 0, cap_ = 0;
  std::vector<T> keys_, values_;                 // [B][cap][Hkv][D] and [B][cap][Hkv][Dv] (native sides)
  std::vector<block_q8_0> keys_q8_, values_q8_;  // [B][cap][Hkv][D / 32] and [B][cap][Hkv][Dv / 32] (q8_0 sides)
  std::vector<std::int64_t> pos_;                // [B][len]
  std::vector<std::uint8_t> mask_;               // [B][len]
  std::optional<rope_frequencies> freq_;         // frequencies of every cached key (steered schedules)
  std::optional<rope_frequencies> freq_stale_;   // keep_stale: frequencies of the previous append
};

}  // namespace posenc::inline v0
