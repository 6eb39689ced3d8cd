// posenc/rope/xpos.hpp — xPos, the extrapolatable RoPE (Sun et al. 2022, §3.2; torchscale XPOS).
//
// Rotates like RoPE (theta^(-2k/D), interleaved pairs by default, as torchscale) and scales pair k
// of a query at position n by zeta_k^u and of a key by zeta_k^-u, with
// zeta_k = (2k + gamma*D) / ((1 + gamma) * D) and u = (n - c) / scale_base, so q.k carries
// zeta^((n - m)/scale_base) (docs/spec.md §9). Factors are evaluated in log space in double,
// exp(+-u * ln zeta_k); the float rows they land in still overflow for |n - c| beyond ~36 000
// (keys, zeta_0 = 0.2857, scale_base 512; ~4 500 for float16 storage): keep the centre c near the
// positions in use (center_policy). Not causal-masking, no KV-cache logic.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include <posenc/core/assert.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/kernels/angles.hpp>
#include <posenc/kernels/types.hpp>
#include <posenc/rope/frequencies.hpp>
#include <posenc/rope/rotate_view.hpp>
#include <posenc/rope/validate.hpp>

namespace posenc::inline v0 {

/// Where the scale exponent is centred (u = (n - c) / scale_base).
enum class xpos_center_policy : unsigned char {
  fixed,             ///< c = xpos_config::center (default 0)
  midpoint_of_call,  ///< torchscale: c = ceil(L / 2) with L = max(positions in the call) + 1
};

/// xPos parameters (torchscale defaults).
struct xpos_config {
  std::ptrdiff_t head_dim = 0;                              ///< D (required, even): every element is rotated
  double theta = 10000;                                     ///< RoPE base
  double gamma = 0.4;                                       ///< zeta_k = (2k + gamma D) / ((1 + gamma) D)
  double scale_base = 512;                                  ///< u = (n - c) / scale_base
  kernels::pairing layout = kernels::pairing::interleaved;  ///< torchscale rotate_every_two
  xpos_center_policy center_policy = xpos_center_policy::fixed;
  std::int64_t center = 0;  ///< c for center_policy::fixed
  friend bool operator==(const xpos_config&, const xpos_config&) = default;
};

/// Throws config_error unless `c` is valid (gamma > 0, scale_base > 0, theta > 1, D even > 0).
inline void validate(const xpos_config& c) {
  detail::require(c.head_dim > 0 && c.head_dim % 2 == 0 && c.head_dim <= detail::max_rope_head_dim, "xpos.head_dim",
                  c.head_dim, "an even number in [2, 2^20]");
  detail::require(std::isfinite(c.theta) && c.theta > 1, "xpos.theta", c.theta, "a finite number > 1");
  // (1 + gamma) D must be finite too, else zeta_k = (2k + gamma D) / ((1 + gamma) D) is inf / inf = NaN.
  detail::require(
      std::isfinite(c.gamma) && c.gamma > 0 && std::isfinite((1 + c.gamma) * static_cast<double>(c.head_dim)),
      "xpos.gamma", c.gamma, "a finite number > 0 with (1 + gamma) * head_dim finite");
  detail::require(std::isfinite(c.scale_base) && c.scale_base > 0, "xpos.scale_base", c.scale_base,
                  "a finite number > 0");
}

/// The xPos encoder. Models qk_transform_encoding (queries and keys are scaled inversely).
class xpos {
 public:
  explicit xpos(xpos_config c) : cfg_(c) {
    validate(cfg_);
    const auto P = static_cast<int>(cfg_.head_dim / 2);
    inv_freq_ = detail::default_inv_freq(cfg_.theta, 2 * P, P);
    log_zeta_.resize(static_cast<std::size_t>(P));
    const auto D = static_cast<double>(cfg_.head_dim);
    for (int k = 0; k < P; ++k)
      log_zeta_[static_cast<std::size_t>(k)] = std::log((2.0 * k + cfg_.gamma * D) / ((1 + cfg_.gamma) * D));
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "xpos"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return cfg_.head_dim; }
  [[nodiscard]] const xpos_config& config() const noexcept { return cfg_; }
  /// w_k (rad / position).
  [[nodiscard]] std::span<const double> inv_freq() const noexcept { return inv_freq_; }
  /// zeta_k.
  [[nodiscard]] double zeta(int k) const noexcept { return std::exp(log_zeta_[static_cast<std::size_t>(k)]); }

  /// The centre c a call with these positions uses.
  [[nodiscard]] std::int64_t center_of(std::span<const std::int64_t> positions) const noexcept {
    if (cfg_.center_policy == xpos_center_policy::fixed || positions.empty()) return cfg_.center;
    std::int64_t m = positions[0];
    for (auto p : positions) m = p > m ? p : m;
    if (m >= 0) return m / 2 + 1;  // ceil((m + 1) / 2), without forming m + 1 (m may be INT64_MAX)
    const std::int64_t L = m + 1;
    return -((-L) / 2);  // ceil(L / 2) for L <= 0
  }

  /// Rotates queries and multiplies pair k by zeta_k^u(n).
  template <storage_type T>
  void transform_q(tensor_view<T> q, std::span<const std::int64_t> positions) const {
    apply(q, positions, +1.0);
  }
  /// Rotates keys and multiplies pair k by zeta_k^-u(n).
  template <storage_type T>
  void transform_k(tensor_view<T> k, std::span<const std::int64_t> positions) const {
    apply(k, positions, -1.0);
  }

  /// Backward of transform_q / transform_k (qk_transform_backward_encoding): each pair of the
  /// forward is f R(n w) with f = zeta_k^(+-u(n)), so the gradient w.r.t. the rows before it is
  /// f R(-n w) applied to the incoming one (the same scale, the inverse rotation), in place.
  template <storage_type T>
  void transform_q_backward(tensor_view<T> dq, std::span<const std::int64_t> positions) const {
    apply(dq, positions, +1.0, kernels::rotation::inverse);
  }
  template <storage_type T>
  void transform_k_backward(tensor_view<T> dk, std::span<const std::int64_t> positions) const {
    apply(dk, positions, -1.0, kernels::rotation::inverse);
  }

 private:
  template <storage_type T>
  void apply(tensor_view<T> x, std::span<const std::int64_t> positions, double sign,
             kernels::rotation dir = kernels::rotation::forward) const {
    using C = compute_t<T>;
    // Wrong sizes would read past positions or the head rows: checked in every build (O(1)).
    detail::require_rotation_sizes(x, positions.size(), cfg_.head_dim);
    const auto P = static_cast<int>(cfg_.head_dim / 2);
    const double c = static_cast<double>(center_of(positions));
    const kernels::rope_geometry g{2 * P, 2 * P, 0, cfg_.layout};
    detail::rotate_view(
        g, x, P,
        [&](std::ptrdiff_t i0, std::ptrdiff_t n, C* cos, C* sin) {
          kernels::compute_angles(inv_freq_.data(), P, positions.data() + i0, n, 1.0, cos, sin, P);
          for (std::ptrdiff_t t = 0; t < n; ++t) {
            const double u = (static_cast<double>(positions[static_cast<std::size_t>(i0 + t)]) - c) / cfg_.scale_base;
            for (int k = 0; k < P; ++k) {
              // zeta_k rounded to 1 (huge gamma) has factor 1 at any u, also u = +-inf (tiny scale_base): not 0 * inf.
              const double lz = log_zeta_[static_cast<std::size_t>(k)];
              const double f = lz == 0 ? 1.0 : std::exp(sign * u * lz);
              cos[t * P + k] = narrow<C>(static_cast<double>(cos[t * P + k]) * f);
              sin[t * P + k] = narrow<C>(static_cast<double>(sin[t * P + k]) * f);
            }
          }
        },
        dir);
  }

  // double -> C with an explicit overflow to +-inf (out-of-range float conversion is undefined).
  template <class C>
  static C narrow(double v) noexcept {
    if constexpr (std::is_same_v<C, float>) {
      if (v > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
      if (v < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::infinity();
    }
    return static_cast<C>(v);
  }

  xpos_config cfg_;
  std::vector<double> inv_freq_;
  std::vector<double> log_zeta_;
};

}  // namespace posenc::inline v0
