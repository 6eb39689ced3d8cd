// posenc/rope/vision_rope.hpp — 2D and 3D RoPE of vision towers: each rotation pair follows one grid
// coordinate of its patch (docs/spec.md §7.9).
//
// Head rows of D elements, P pairs; (t, h, w) the patch's frame, row and column (rope/vision_positions.hpp):
//   pixtral        half-split, P = D/2, w_j = theta^(-2j/D): pair k < ceil(P/2) turns by h w_{2k}, the
//                  others by w w_{2(k - ceil(P/2)) + 1} (HF PixtralRotaryEmbedding)
//   qwen_vl        half-split, P = D/2, w_j = theta^(-2j/(D/2)): pair k < P/2 by h w_k, the others by
//                  w w_{k - P/2} (HF VisionRotaryEmbedding of Qwen2-VL, Qwen2.5-VL, Qwen3-VL)
//   llama4         interleaved, P = D/2, w_j = theta^(-2j/(D/2)): pair k < P/2 by (w + 1) w_k, the others
//                  by (h + 1) w_{k - P/2}; the class token is not rotated (HF Llama4VisionRotaryEmbedding)
//   minimax_m3_vl  half-split over R = 3A of D (A = 2 floor(floor(2 floor(D/2) / 3) / 2)), the tail
//                  passes through; thirds of A/2 pairs follow t, h, w with w_j = theta^(-2j/A)
//                  (HF MiniMaxM3VL3DRotaryEmbedding: video as (t, h, w))
// Angles are exact in double (angle_mode::exact) or Hugging Face's float32 products (reference_fp32,
// with HF's float32 frequencies); the rotation is the kernels' (kernels/rotate.hpp), as for rope.
// Positions: the qk_transform concept has one int64 per token; vision_rope_bound (bind()) reads it as
// the token's index into a table of grid coordinates, so sdpa, posenc::attention and their backwards
// take it unchanged. Not here: the learned absolute embeddings some towers add (Qwen3-VL), the
// attention masks (vision_segments gives the frame / image / window segments).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/kernels/types.hpp>
#include <posenc/rope/angles.hpp>
#include <posenc/rope/cos_sin_table.hpp>
#include <posenc/rope/frequencies.hpp>
#include <posenc/rope/rotate_view.hpp>
#include <posenc/rope/vision_positions.hpp>

namespace posenc::inline v0 {

/// Which tower's pairing of frequencies and coordinates.
enum class vision_rope_convention : unsigned char { pixtral, qwen_vl, llama4, minimax_m3_vl };

/// Configuration of vision_rope. Defaults: the Qwen2-VL vision tower (head_dim 80, theta 10000).
struct vision_rope_config {
  std::ptrdiff_t head_dim = 80;
  double theta = 10000.0;
  vision_rope_convention convention = vision_rope_convention::qwen_vl;
  angle_mode angles = angle_mode::exact;

  [[nodiscard]] static vision_rope_config pixtral(std::ptrdiff_t head_dim = 64, double theta = 10000.0) {
    return {.head_dim = head_dim, .theta = theta, .convention = vision_rope_convention::pixtral};
  }
  [[nodiscard]] static vision_rope_config qwen_vl(std::ptrdiff_t head_dim = 80, double theta = 10000.0) {
    return {.head_dim = head_dim, .theta = theta, .convention = vision_rope_convention::qwen_vl};
  }
  [[nodiscard]] static vision_rope_config llama4(std::ptrdiff_t head_dim = 88, double theta = 10000.0) {
    return {.head_dim = head_dim, .theta = theta, .convention = vision_rope_convention::llama4};
  }
  [[nodiscard]] static vision_rope_config minimax_m3_vl(std::ptrdiff_t head_dim = 80, double theta = 10000.0) {
    return {.head_dim = head_dim, .theta = theta, .convention = vision_rope_convention::minimax_m3_vl};
  }
};

/// Throws config_error naming the first invalid field.
inline void validate(const vision_rope_config& c) {
  detail::require(c.head_dim >= 2 && c.head_dim <= 8192 && c.head_dim % 2 == 0, "vision_rope.head_dim", c.head_dim,
                  "an even number in [2, 8192]");
  if (c.convention == vision_rope_convention::qwen_vl || c.convention == vision_rope_convention::llama4)
    detail::require(c.head_dim % 4 == 0, "vision_rope.head_dim", c.head_dim,
                    "a multiple of 4 (h and w take half of the pairs each)");
  if (c.convention == vision_rope_convention::minimax_m3_vl)
    detail::require(c.head_dim >= 6, "vision_rope.head_dim", c.head_dim, ">= 6 (one pair per axis)");
  detail::require(std::isfinite(c.theta) && c.theta > 1, "vision_rope.theta", c.theta, "a finite number > 1");
}

class vision_rope_bound;

/// The vision RoPE encoder. Immutable after construction; copyable; const members are thread-safe.
class vision_rope {
 public:
  explicit vision_rope(vision_rope_config c) : c_(c) {
    validate(c_);
    build();
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "vision_rope"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return c_.head_dim; }
  [[nodiscard]] std::ptrdiff_t rotary_dim() const noexcept { return geo_.rotary_dim; }
  [[nodiscard]] int pairs() const noexcept { return geo_.pairs(); }
  [[nodiscard]] const vision_rope_config& config() const noexcept { return c_; }
  [[nodiscard]] const kernels::rope_geometry& geometry() const noexcept { return geo_; }
  /// The coordinate each pair follows (0 = t, 1 = h, 2 = w) and its frequency (rad per patch).
  [[nodiscard]] std::span<const unsigned char> pair_axes() const noexcept { return axis_; }
  [[nodiscard]] std::span<const double> inv_freq() const noexcept { return inv_freq_; }
  /// Added to every coordinate before it multiplies a frequency (Llama 4: 1).
  [[nodiscard]] std::int64_t position_offset() const noexcept { return offset_; }

  /// Rotates x ([B, S, H, D]) in place, token (b, s) by p's entry b * S + s (p.size() == B * S).
  template <storage_type T>
  void transform_q(tensor_view<T> q, const vision_positions& p) const {
    rotate(q, p, kernels::rotation::forward);
  }
  template <storage_type T>
  void transform_k(tensor_view<T> k, const vision_positions& p) const {
    rotate(k, p, kernels::rotation::forward);
  }
  /// The transposes (the backward): each token's rotation by the negated angles.
  template <storage_type T>
  void transform_q_backward(tensor_view<T> dq, const vision_positions& p) const {
    rotate(dq, p, kernels::rotation::inverse);
  }
  template <storage_type T>
  void transform_k_backward(tensor_view<T> dk, const vision_positions& p) const {
    rotate(dk, p, kernels::rotation::inverse);
  }
  template <storage_type T>
  void rotate(tensor_view<T> x, const vision_positions& p, kernels::rotation dir) const {
    p.validate();
    detail::require_rotation_sizes(x, static_cast<std::size_t>(p.size()), head_dim(), "vision_positions");
    rotate_with(
        x, [&](std::ptrdiff_t i) { return static_cast<std::size_t>(i); }, p, dir);
  }

  /// An encoder whose one int64 position per token indexes `p` (see the banner).
  [[nodiscard]] vision_rope_bound bind(vision_positions p) const;

  /// Rotates x with token i (= b * S + s) taking the coordinates of p entry index(i).
  template <storage_type T, class Index>
  void rotate_with(tensor_view<T> x, Index&& index, const vision_positions& p, kernels::rotation dir) const {
    using C = compute_t<T>;
    const int P = geo_.pairs();
    const std::ptrdiff_t chunk = std::max<std::ptrdiff_t>(1, detail::kRowBuffer / P);
    detail::scratch<std::int64_t, detail::kRowBuffer> coord(chunk);
    detail::rotate_view(
        geo_, x, P,
        [&](std::ptrdiff_t i0, std::ptrdiff_t n, C* cos, C* sin) {
          for (const auto& s : segments_) {  // pairs [k0, k1) follow one axis
            const std::vector<std::int64_t>& src = s.axis == 0 ? p.t : (s.axis == 1 ? p.h : p.w);
            for (std::ptrdiff_t t = 0; t < n; ++t) coord.data()[t] = src[index(i0 + t)] + offset_;
            const detail::frequencies_view f{inv_freq_.data() + s.k0, s.k1 - s.k0, 1.0};
            detail::fill_angle_rows(f, c_.angles, coord.data(), n, 1.0, cos + s.k0, sin + s.k0, P);
          }
          if (p.unrotated.empty()) return;
          for (std::ptrdiff_t t = 0; t < n; ++t)
            if (p.unrotated[index(i0 + t)]) {
              std::fill(cos + t * P, cos + (t + 1) * P, C(1));
              std::fill(sin + t * P, sin + (t + 1) * P, C(0));
            }
        },
        dir);
  }

 private:
  struct segment {
    unsigned char axis;
    int k0, k1;
  };

  // Frequencies w_j = theta^(-2j / den), j < count, in double or as HF's float32.
  [[nodiscard]] std::vector<double> base(int den, int count) const {
    return c_.angles == angle_mode::reference_fp32 ? detail::hf_fp32_inv_freq(c_.theta, den, count)
                                                   : detail::default_inv_freq(c_.theta, den, count);
  }
  void add(unsigned char axis, std::span<const double> w) {
    segments_.push_back({axis, static_cast<int>(inv_freq_.size()), static_cast<int>(inv_freq_.size() + w.size())});
    inv_freq_.insert(inv_freq_.end(), w.begin(), w.end());
    axis_.insert(axis_.end(), w.size(), axis);
  }

  void build() {
    const int D = static_cast<int>(c_.head_dim);
    geo_ = {.head_dim = D, .rotary_dim = D, .offset = 0, .layout = pairing::half_split};
    switch (c_.convention) {
      case vision_rope_convention::pixtral: {
        const std::vector<double> f = base(D, D / 2);
        std::vector<double> even, odd;
        for (std::size_t j = 0; j < f.size(); ++j) (j % 2 == 0 ? even : odd).push_back(f[j]);
        add(1, even);
        add(2, odd);
        break;
      }
      case vision_rope_convention::qwen_vl: {
        const std::vector<double> f = base(D / 2, D / 4);
        add(1, f);
        add(2, f);
        break;
      }
      case vision_rope_convention::llama4: {
        const std::vector<double> f = base(D / 2, D / 4);
        geo_.layout = pairing::interleaved;
        offset_ = 1;
        add(2, f);  // the column (x) first
        add(1, f);
        break;
      }
      case vision_rope_convention::minimax_m3_vl: {
        const int A = 2 * ((2 * (D / 2) / 3) / 2);
        const std::vector<double> f = base(A, A / 2);
        geo_.rotary_dim = 3 * A;
        for (unsigned char a = 0; a < 3; ++a) add(a, f);
        break;
      }
    }
  }

  vision_rope_config c_;
  kernels::rope_geometry geo_{};
  std::int64_t offset_ = 0;
  std::vector<double> inv_freq_;
  std::vector<unsigned char> axis_;
  std::vector<segment> segments_;
};

/// vision_rope with its coordinate table bound: a qk_transform_encoding (with backward) whose
/// position of a token is its index into the table (0 <= position < size; every batch row reads the
/// same table). Copies share the table.
class vision_rope_bound {
 public:
  vision_rope_bound(vision_rope enc, std::shared_ptr<const vision_positions> p)
      : enc_(std::move(enc)), p_(std::move(p)) {
    detail::require(p_ != nullptr, "vision_positions", "null", "a table");
    p_->validate();
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "vision_rope"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return enc_.head_dim(); }
  [[nodiscard]] const vision_rope& encoder() const noexcept { return enc_; }
  [[nodiscard]] const vision_positions& positions() const noexcept { return *p_; }

  template <storage_type T>
  void transform_q(tensor_view<T> q, std::span<const std::int64_t> index) const {
    apply(q, index, kernels::rotation::forward);
  }
  template <storage_type T>
  void transform_k(tensor_view<T> k, std::span<const std::int64_t> index) const {
    apply(k, index, kernels::rotation::forward);
  }
  template <storage_type T>
  void transform_q_backward(tensor_view<T> dq, std::span<const std::int64_t> index) const {
    apply(dq, index, kernels::rotation::inverse);
  }
  template <storage_type T>
  void transform_k_backward(tensor_view<T> dk, std::span<const std::int64_t> index) const {
    apply(dk, index, kernels::rotation::inverse);
  }

 private:
  template <storage_type T>
  void apply(tensor_view<T> x, std::span<const std::int64_t> index, kernels::rotation dir) const {
    detail::require_rotation_sizes(x, index.size(), head_dim(), "positions");
    for (std::int64_t i : index)
      detail::require(i >= 0 && i < p_->size(), "vision_rope.position", i,
                      "a token index into the bound table of " + std::to_string(p_->size()) + " coordinates");
    enc_.rotate_with(
        x, [&](std::ptrdiff_t i) { return static_cast<std::size_t>(index[static_cast<std::size_t>(i)]); }, *p_, dir);
  }

  vision_rope enc_;
  std::shared_ptr<const vision_positions> p_;
};

inline vision_rope_bound vision_rope::bind(vision_positions p) const {
  return vision_rope_bound(*this, std::make_shared<const vision_positions>(std::move(p)));
}

}  // namespace posenc::inline v0
