// posenc/attention/mask.hpp — the mask of one attention call, resolved from attention_options:
// causal, sliding window and attention chunks on positions, padding, packing (segment ids),
// bottom-right alignment.
//
// Masks act on token POSITIONS, not indices, so left padding, packing and KV-cache
// offsets need no special cases. This is a predicate evaluated per (batch, query, key); nothing of
// size Sq x Sk is materialised unless materialize() is asked for.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <posenc/attention/options.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// The resolved mask and positions of one attention call over [B, Sq] queries and [B, Sk] keys.
/// Construction validates every mask/position field of the options (shape_error / config_error
/// naming "attention.<field>") and fills the bottom-right default positions when none are given.
/// Borrows the data behind the option spans: keep it alive while the mask is used.
class attention_mask {
 public:
  attention_mask(const attention_options& o, std::ptrdiff_t batch, std::ptrdiff_t sq, std::ptrdiff_t sk)
      : o_(o), b_(batch), sq_(sq), sk_(sk) {
    if (batch < 0 || sq < 0 || sk < 0)  // the message is built on failure only: this runs on every call
      throw shape_error("attention.extents",
                        std::to_string(batch) + "x" + std::to_string(sq) + "x" + std::to_string(sk), ">= 0");
    const auto nq = static_cast<std::size_t>(detail::checked_product<shape_error>(
                   "attention.query_positions", {{"batch", batch}, {"query tokens", sq}})),
               nk = static_cast<std::size_t>(detail::checked_product<shape_error>(
                   "attention.key_positions", {{"batch", batch}, {"key tokens", sk}}));
    // An empty span is the given positions of zero tokens too (attention over an empty KV cache).
    detail::require(
        o.query_positions.empty() == o.key_positions.empty() || (o.query_positions.empty() ? nq == 0 : nk == 0),
        "attention.query_positions", o.query_positions.empty() ? "absent" : "given",
        "given together with attention.key_positions, or both absent");
    if (o.query_positions.empty()) {
      // Bottom-right alignment: the queries are the last Sq keys.
      q_storage_.resize(nq);
      k_storage_.resize(nk);
      for (std::ptrdiff_t b = 0; b < batch; ++b) {
        for (std::ptrdiff_t i = 0; i < sq; ++i) q_storage_[static_cast<std::size_t>(b * sq + i)] = sk - sq + i;
        for (std::ptrdiff_t j = 0; j < sk; ++j) k_storage_[static_cast<std::size_t>(b * sk + j)] = j;
      }
      pq_ = q_storage_;
      pk_ = k_storage_;
    } else {
      require_size(o.query_positions.size(), nq, "attention.query_positions", "batch * query tokens");
      require_size(o.key_positions.size(), nk, "attention.key_positions", "batch * key tokens");
      pq_ = o.query_positions;
      pk_ = o.key_positions;
    }
    if (!o.key_lengths.empty()) {
      require_size(o.key_lengths.size(), static_cast<std::size_t>(batch), "attention.key_lengths", "batch");
      for (std::size_t b = 0; b < o.key_lengths.size(); ++b)
        detail::require_shape(o.key_lengths[b] >= 0 && o.key_lengths[b] <= sk,
                              "attention.key_lengths[" + std::to_string(b) + "]", o.key_lengths[b],
                              "[0, key tokens = " + std::to_string(sk) + "]");
    }
    if (!o.key_mask.empty()) require_size(o.key_mask.size(), nk, "attention.key_mask", "batch * key tokens");
    detail::require(o.query_segments.empty() == o.key_segments.empty(), "attention.query_segments",
                    o.query_segments.empty() ? "absent" : "given",
                    "given together with attention.key_segments, or both absent");
    if (!o.query_segments.empty()) {
      require_size(o.query_segments.size(), nq, "attention.query_segments", "batch * query tokens");
      require_size(o.key_segments.size(), nk, "attention.key_segments", "batch * key tokens");
    }
    if (o.sliding_window)
      detail::require(*o.sliding_window >= 1, "attention.sliding_window", *o.sliding_window, ">= 1");
    if (o.attention_chunk)
      detail::require(*o.attention_chunk >= 1, "attention.attention_chunk", *o.attention_chunk, ">= 1");
    // Not a mask field, but validated with them so that sdpa and posenc::attention both check it.
    if (o.logit_softcap)
      detail::require(std::isfinite(*o.logit_softcap) && *o.logit_softcap > 0, "attention.logit_softcap",
                      *o.logit_softcap, "a finite number > 0");
  }

  attention_mask(const attention_mask&) = delete;  // the spans may point into this object
  attention_mask& operator=(const attention_mask&) = delete;

  /// True iff query i of sequence b may attend to key j.
  [[nodiscard]] bool allowed(std::ptrdiff_t b, std::ptrdiff_t i, std::ptrdiff_t j) const noexcept {
    const auto qi = static_cast<std::size_t>(b * sq_ + i), kj = static_cast<std::size_t>(b * sk_ + j);
    if (!o_.key_lengths.empty() && j >= o_.key_lengths[static_cast<std::size_t>(b)]) return false;
    if (!o_.key_mask.empty() && o_.key_mask[kj] == 0) return false;
    if (!o_.query_segments.empty()) {
      const std::int32_t sqid = o_.query_segments[qi], skid = o_.key_segments[kj];
      if (sqid < 0 || skid < 0 || sqid != skid) return false;
    }
    // How far the key lies in the query's past, saturated: compared with 0 and the window (an
    // int64 >= 1) it answers as the true difference does, for any two int64 positions.
    const std::int64_t d = detail::saturating_difference(pq_[qi], pk_[kj]);
    if (o_.causal && d < 0) return false;
    if (o_.sliding_window && (d >= *o_.sliding_window || (!o_.causal && d <= -*o_.sliding_window))) return false;
    if (o_.attention_chunk && chunk_of(pq_[qi], *o_.attention_chunk) != chunk_of(pk_[kj], *o_.attention_chunk))
      return false;
    return true;
  }

  /// floor(p / c) for c >= 1, exact for every int64 p (truncating division rounded down when the
  /// remainder is nonzero; the quotient is then > INT64_MIN, so the decrement cannot overflow).
  [[nodiscard]] static constexpr std::int64_t chunk_of(std::int64_t p, std::int64_t c) noexcept {
    const std::int64_t q = p / c;
    return p % c != 0 && p < 0 ? q - 1 : q;
  }

  /// Query positions [B * Sq] and key positions [B * Sk] in effect (given or bottom-right default).
  [[nodiscard]] std::span<const std::int64_t> query_positions() const noexcept { return pq_; }
  [[nodiscard]] std::span<const std::int64_t> key_positions() const noexcept { return pk_; }

  /// The whole mask as [B, Sq, Sk] bytes (1 = allowed), for inspection and tests.
  /// Throws config_error naming attention.mask when B * Sq * Sk is not a valid element count.
  [[nodiscard]] std::vector<std::uint8_t> materialize() const {
    std::vector<std::uint8_t> m(static_cast<std::size_t>(
        detail::checked_product("attention.mask", {{"batch", b_}, {"query tokens", sq_}, {"key tokens", sk_}},
                                detail::max_elements<std::uint8_t>)));
    std::size_t n = 0;
    for (std::ptrdiff_t b = 0; b < b_; ++b)
      for (std::ptrdiff_t i = 0; i < sq_; ++i)
        for (std::ptrdiff_t j = 0; j < sk_; ++j) m[n++] = allowed(b, i, j) ? 1 : 0;
    return m;
  }

 private:
  static void require_size(std::size_t got, std::size_t want, const char* name, const char* what) {
    detail::require_shape(got == want, name, got, std::string(what) + " = " + std::to_string(want));
  }

  attention_options o_;  // a copy: spans and flags only, cheap
  std::ptrdiff_t b_, sq_, sk_;
  std::vector<std::int64_t> q_storage_, k_storage_;
  std::span<const std::int64_t> pq_, pk_;
};

}  // namespace posenc::inline v0
