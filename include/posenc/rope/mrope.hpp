// posenc/rope/mrope.hpp — multimodal RoPE (mRoPE, Qwen2-VL / Qwen2.5-VL / Qwen3-VL): three position
// streams (temporal, height, width) per token, each rotation pair follows one stream.
//
// docs/spec.md §7.8. With mrope_section = [s_t, s_h, s_w] (s_t + s_h + s_w = P pairs), pair k rotates by
// pos[stream(k)] * w'_k, with w'_k the ordinary frequency over the full index k:
//   contiguous  (Qwen2-VL, Qwen2.5-VL; HF `mrope_section * 2` split): t for k < s_t, h for
//               s_t <= k < s_t + s_h, w after;
//   interleaved (Qwen3-VL; HF apply_interleaved_mrope, vLLM mrope_interleaved): h if k % 3 == 1 and
//               k < 3 s_h, w if k % 3 == 2 and k < 3 s_w, t otherwise (ggml's IMROPE sends the
//               remaining pairs to a 4th stream instead; we follow HF, docs/spec.md §8.8).
// A token whose three streams are equal (every text token) is rotated exactly as plain RoPE: the
// same schedule, the same angle rows and the same kernels (rope/rope.hpp, rope/rotate_view.hpp).
//
// How positions are passed (the qk_transform concept has one int64 per token):
//   - transform_q/k(x, positions): the plain concept entry; each position is used for all three
//     streams (text-only input). This is what makes mrope a drop-in qk_transform_encoding.
//   - transform_q/k(x, mrope_streams{t, h, w}): explicit 3-stream positions, each [B * S].
//   - bind(ids): an encoder (mrope_bound) whose one-int64 positions are CACHE positions (the token's
//     index in its sequence, what HF masks with) and whose streams come from a table of HF
//     position ids [3][B][L] plus the per-sequence decode delta (rope/mrope_index.hpp): cache
//     position c < L takes ids[s][b][c]; c >= L (decoding) takes c + delta[b] on every stream.
//     sdpa, the KV cache and the fast attention take it unchanged; masks act on cache positions.
//     The KV cache needs no change: it stores cache positions and calls transform_k once per key.
//     Its K-shift (shift_window) refuses mrope (config_error): moving keys needs per-stream deltas.
// Any static scaling of rope_config composes (Qwen2.5-VL's model card adds YaRN to mrope_section for long inputs);
// schedules whose frequencies depend on the call length (dynamic NTK per call, LongRoPE per call) are rejected, because
// one call's three streams would not agree on "the length". Not done here: ggml's 4-stream IMROPE and its VISION mode
// (frequency index restarting per section).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <posenc/core/assert.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/rope/cos_sin_table.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/rotate_view.hpp>

namespace posenc::inline v0 {

/// How mrope_section assigns pairs to streams.
enum class mrope_layout : unsigned char {
  contiguous,   ///< Qwen2-VL / Qwen2.5-VL: [t ... | h ... | w ...]
  interleaved,  ///< Qwen3-VL: t h w t h w ... (HF / vLLM rule; remaining pairs follow t)
};

/// Everything that defines an mRoPE encoder.
struct mrope_config {
  rope_config rope;                     ///< head_dim, theta, scaling, pairing, angle mode (as for rope)
  std::array<int, 3> section{0, 0, 0};  ///< pairs per stream (t, h, w); must sum to the pair count
  mrope_layout layout = mrope_layout::contiguous;
  friend bool operator==(const mrope_config&, const mrope_config&) = default;
};

/// Stream (0 = t, 1 = h, 2 = w) of every pair, for `pairs` pairs. Validates the section
/// (config_error "mrope.section" naming the sum or the negative entry).
[[nodiscard]] inline std::vector<unsigned char> mrope_pair_streams(const std::array<int, 3>& section,
                                                                   mrope_layout layout, int pairs) {
  for (int s : section) detail::require(s >= 0, "mrope.section", s, "entries >= 0");
  const long long sum = static_cast<long long>(section[0]) + section[1] + section[2];
  detail::require(sum == pairs, "mrope.section",
                  "[" + std::to_string(section[0]) + ", " + std::to_string(section[1]) + ", " +
                      std::to_string(section[2]) + "] (sum " + std::to_string(sum) + ")",
                  "entries summing to the rotary pair count " + std::to_string(pairs));
  std::vector<unsigned char> st(static_cast<std::size_t>(pairs), 0);
  for (int k = 0; k < pairs; ++k) {
    unsigned char s = 0;
    if (layout == mrope_layout::contiguous)
      s = k < section[0] ? 0 : (k < section[0] + section[1] ? 1 : 2);
    else if (k % 3 == 1 && k < 3 * section[1])
      s = 1;
    else if (k % 3 == 2 && k < 3 * section[2])
      s = 2;
    st[static_cast<std::size_t>(k)] = s;
  }
  return st;
}

/// Explicit 3-stream positions of a call: t, h, w, each one entry per (batch, token), row-major.
struct mrope_streams {
  std::span<const std::int64_t> t, h, w;
};

/// Hugging Face mRoPE position ids of B sequences of L tokens and the decode deltas
/// (get_rope_index's two results, rope/mrope_index.hpp builds them).
struct mrope_position_ids {
  std::ptrdiff_t batch = 0;
  std::ptrdiff_t length = 0;
  std::vector<std::int64_t> ids;    ///< [3][batch][length]: stream s, sequence b, token c at (s*batch + b)*length + c
  std::vector<std::int64_t> delta;  ///< [batch]: decoding continues every stream at cache position + delta[b]

  /// Stream s of sequence b at cache position c (c >= length: c + delta[b], the HF decode rule).
  [[nodiscard]] std::int64_t at(int s, std::ptrdiff_t b, std::int64_t c) const noexcept {
    POSENC_ASSERT(b >= 0 && b < batch && c >= 0);
    if (c < length) return ids[static_cast<std::size_t>((s * batch + b) * length + c)];
    return c + delta[static_cast<std::size_t>(b)];
  }
  /// config_error unless the sizes agree.
  void validate() const {
    detail::require(batch >= 0 && length >= 0, "mrope_position_ids.batch", batch, ">= 0 with length >= 0");
    detail::require(ids.size() == static_cast<std::size_t>(3 * batch * length), "mrope_position_ids.ids", ids.size(),
                    "3 * batch * length = " + std::to_string(3 * batch * length));
    detail::require(delta.size() == static_cast<std::size_t>(batch), "mrope_position_ids.delta", delta.size(),
                    "batch = " + std::to_string(batch));
  }
};

class mrope_bound;

/// The mRoPE encoder. Immutable after construction; copyable; const members are thread-safe.
class mrope {
 public:
  /// Validates `c`: the rope part as rope does, "mrope.section" (entries >= 0, sum == pairs) and
  /// "mrope.scaling" (no length-dependent schedule).
  explicit mrope(mrope_config c)
      : rope_(c.rope), streams_(mrope_pair_streams(c.section, c.layout, rope_.schedule().pairs())), cfg_(std::move(c)) {
    detail::require(!rope_.schedule().length_dependent(), "mrope.scaling", "a length-dependent schedule",
                    "a schedule that does not depend on the call length (dynamic NTK / LongRoPE switching per "
                    "call cannot be shared by three position streams)");
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "mrope"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return rope_.head_dim(); }
  [[nodiscard]] std::ptrdiff_t rotary_dim() const noexcept { return rope_.rotary_dim(); }
  [[nodiscard]] int pairs() const noexcept { return rope_.schedule().pairs(); }
  [[nodiscard]] const mrope_config& config() const noexcept { return cfg_; }
  /// The plain RoPE encoder with the same schedule (what text-only tokens get).
  [[nodiscard]] const rope& text_rope() const noexcept { return rope_; }
  [[nodiscard]] const rope_frequencies& base_frequencies() const noexcept { return rope_.base_frequencies(); }
  [[nodiscard]] double softmax_scale_multiplier() const noexcept { return rope_.softmax_scale_multiplier(); }
  /// Stream (0 t, 1 h, 2 w) of every pair.
  [[nodiscard]] std::span<const unsigned char> pair_streams() const noexcept { return streams_; }

  /// Plain concept entry: every position stands for all three streams (text tokens) — exactly rope.
  template <storage_type T>
  void transform_q(tensor_view<T> q, std::span<const std::int64_t> positions) const {
    rope_.transform_q(q, positions);
  }
  template <storage_type T>
  void transform_k(tensor_view<T> k, std::span<const std::int64_t> positions) const {
    rope_.transform_k(k, positions);
  }

  /// Backward of the plain entries (qk_transform_backward_encoding): rope's transpose.
  template <storage_type T>
  void transform_q_backward(tensor_view<T> dq, std::span<const std::int64_t> positions) const {
    rope_.transform_q_backward(dq, positions);
  }
  template <storage_type T>
  void transform_k_backward(tensor_view<T> dk, std::span<const std::int64_t> positions) const {
    rope_.transform_k_backward(dk, positions);
  }
  /// Explicit streams: t, h, w each hold batch * tokens positions.
  template <storage_type T>
  void transform_q(tensor_view<T> q, const mrope_streams& s) const {
    rotate_streams(q, s);
  }
  template <storage_type T>
  void transform_k(tensor_view<T> k, const mrope_streams& s) const {
    rotate_streams(k, s);
  }
  /// Backward of the explicit-stream entries: the transpose M R(-angle) of each pair's rotation.
  template <storage_type T>
  void transform_q_backward(tensor_view<T> dq, const mrope_streams& s) const {
    rotate_streams(dq, s, kernels::rotation::inverse);
  }
  template <storage_type T>
  void transform_k_backward(tensor_view<T> dk, const mrope_streams& s) const {
    rotate_streams(dk, s, kernels::rotation::inverse);
  }
  /// `dir` inverse: the transpose of the forward (angles negated, magnitude M kept), the backward.
  template <storage_type T>
  void rotate_streams(tensor_view<T> x, const mrope_streams& s,
                      kernels::rotation dir = kernels::rotation::forward) const {
    detail::require_rotation_sizes(x, s.t.size(), head_dim(), "streams.t");
    detail::require_shape(s.h.size() == s.t.size(), "streams.h", s.h.size(), "streams.t.size()");
    detail::require_shape(s.w.size() == s.t.size(), "streams.w", s.w.size(), "streams.t.size()");
    rotate_with(
        x,
        [&](std::ptrdiff_t i) {
          const auto u = static_cast<std::size_t>(i);
          return std::array<std::int64_t, 3>{s.t[u], s.h[u], s.w[u]};
        },
        dir);
  }

  /// An encoder whose positions are cache positions mapped through `ids` (see the header banner).
  /// config_error when the table's sizes disagree.
  [[nodiscard]] mrope_bound bind(mrope_position_ids ids) const;

  /// Rotates x ([B, S, H, D]) with streams(i) -> {t, h, w} for item i = b * S + s. Tokens with three
  /// equal streams get bit-for-bit the rows plain rope computes. `dir` inverse with the same rows
  /// (magnitude M kept) is the transpose, the backward.
  template <storage_type T, class Streams>
  void rotate_with(tensor_view<T> x, Streams&& streams,
                   kernels::rotation dir = kernels::rotation::forward) const noexcept {
    using C = compute_t<T>;
    const auto f = detail::view_of(rope_.base_frequencies());
    const int P = f.pairs;
    if (P == 0) return;
    const angle_mode mode = cfg_.rope.angles;
    const std::ptrdiff_t chunk = std::max<std::ptrdiff_t>(1, detail::kRowBuffer / P);
    detail::scratch<std::int64_t, detail::kRowBuffer> pt(chunk), ph(chunk), pw(chunk);
    detail::scratch<C, detail::kRowBuffer> oc(chunk * P), os(chunk * P);
    detail::rotate_view(
        rope_.schedule().geometry(), x, P,
        [&](std::ptrdiff_t i0, std::ptrdiff_t n, C* cos, C* sin) {
          bool mixed = false;
          for (std::ptrdiff_t t = 0; t < n; ++t) {
            const auto p = streams(i0 + t);
            pt.data()[t] = p[0];
            ph.data()[t] = p[1];
            pw.data()[t] = p[2];
            mixed = mixed || p[1] != p[0] || p[2] != p[0];
          }
          // Stream t for every pair, with the same call rope makes; then overwrite h / w pairs of the
          // tokens whose h / w position differs.
          detail::fill_angle_rows(f, mode, pt.data(), n, f.magnitude, cos, sin, P);
          if (!mixed) return;
          for (int s = 1; s < 3; ++s) {
            const std::int64_t* ps = s == 1 ? ph.data() : pw.data();
            detail::fill_angle_rows(f, mode, ps, n, f.magnitude, oc.data(), os.data(), P);
            for (std::ptrdiff_t t = 0; t < n; ++t) {
              if (ps[t] == pt.data()[t]) continue;
              for (int k = 0; k < P; ++k) {
                if (streams_[static_cast<std::size_t>(k)] != s) continue;
                cos[t * P + k] = oc.data()[t * P + k];
                sin[t * P + k] = os.data()[t * P + k];
              }
            }
          }
        },
        dir);
  }

 private:
  rope rope_;
  std::vector<unsigned char> streams_;
  mrope_config cfg_;
};

/// mrope with its 3-stream table bound: a qk_transform_encoding whose positions are cache positions
/// (0-based token index in the sequence; decoding continues past the table with the HF delta).
/// Copies share the table. Cache positions must be >= 0 and the view's batch must equal the table's.
class mrope_bound {
 public:
  mrope_bound(mrope enc, std::shared_ptr<const mrope_position_ids> ids) : enc_(std::move(enc)), ids_(std::move(ids)) {
    detail::require(ids_ != nullptr, "mrope_position_ids", "null", "a table");
    ids_->validate();
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "mrope"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return enc_.head_dim(); }
  [[nodiscard]] const mrope& encoder() const noexcept { return enc_; }
  [[nodiscard]] const mrope_position_ids& ids() const noexcept { return *ids_; }
  [[nodiscard]] double softmax_scale_multiplier() const noexcept { return enc_.softmax_scale_multiplier(); }

  template <storage_type T>
  void transform_q(tensor_view<T> q, std::span<const std::int64_t> cache_positions) const {
    apply(q, cache_positions);
  }
  template <storage_type T>
  void transform_k(tensor_view<T> k, std::span<const std::int64_t> cache_positions) const {
    apply(k, cache_positions);
  }
  /// Backward (qk_transform_backward_encoding): the transpose of each token's rotation, in place.
  template <storage_type T>
  void transform_q_backward(tensor_view<T> dq, std::span<const std::int64_t> cache_positions) const {
    apply(dq, cache_positions, kernels::rotation::inverse);
  }
  template <storage_type T>
  void transform_k_backward(tensor_view<T> dk, std::span<const std::int64_t> cache_positions) const {
    apply(dk, cache_positions, kernels::rotation::inverse);
  }

 private:
  template <storage_type T>
  void apply(tensor_view<T> x, std::span<const std::int64_t> cache_positions,
             kernels::rotation dir = kernels::rotation::forward) const {
    detail::require_shape(x.batch() == ids_->batch, "x.batch", x.batch(), "the position ids' batch");
    detail::require_rotation_sizes(x, cache_positions.size(), head_dim(), "cache_positions");
    const std::ptrdiff_t S = x.tokens();
    enc_.rotate_with(
        x,
        [&](std::ptrdiff_t i) {
          const std::ptrdiff_t b = S == 0 ? 0 : i / S;
          const std::int64_t c = cache_positions[static_cast<std::size_t>(i)];
          return std::array<std::int64_t, 3>{ids_->at(0, b, c), ids_->at(1, b, c), ids_->at(2, b, c)};
        },
        dir);
  }

  mrope enc_;
  std::shared_ptr<const mrope_position_ids> ids_;
};

inline mrope_bound mrope::bind(mrope_position_ids ids) const {
  return mrope_bound(*this, std::make_shared<const mrope_position_ids>(std::move(ids)));
}

}  // namespace posenc::inline v0
