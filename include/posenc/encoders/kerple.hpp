// posenc/encoders/kerple.hpp — KERPLE, kernelized relative position biases (Chi et al. 2022, eq. 5-6;
// docs/spec.md §17).
//
// With n = |pos_q - pos_k| and per-head parameters r1, r2 > 0:
//   logarithmic  b(h, i, j) = -r1_h ln(1 + r2_h n)
//   power        b(h, i, j) = -r1_h n^r2_h,   0 < r2_h <= 2
// added to the scaled logits (hook 3), trainable. Equal to the authors' ParallelKerpleLog and
// ParallelKerplePower (chijames/KERPLE; "log": p = r1, a = r2; "power_ap": a = r1, p = r2) on their
// causal pairs (tests/encoders/kerple_test.cpp). The authors clamp the parameters into their
// feasible set at every forward (>= 0.01; the power exponent <= 2): the constructor does the same
// (parameters() returns the values used) and kerple_project applies it to a training step's values.
// Their distance matrix is tril(i - j), 0 for future keys, which their causal mask removes; here the
// bias uses |i - j|, the same under a causal mask and symmetric without one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/concepts.hpp>
#include <posenc/core/assert.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// Which kernel of the paper.
enum class kerple_kernel : unsigned char {
  logarithmic,  ///< -r1 ln(1 + r2 n)  (the authors' "kerple_log")
  power,        ///< -r1 n^r2          (the authors' "kerple_power_ap_")
};

/// Configuration of kerple. Defaults: the logarithmic kernel, the authors' parameter floor.
struct kerple_config {
  kerple_kernel kernel = kerple_kernel::logarithmic;
  std::ptrdiff_t num_heads = 8;
  double min_parameter = 0.01;  ///< the authors' eps: r1 and r2 are raised to it
  double max_exponent = 2.0;    ///< power kernel: r2 is capped at it (conditional positive definiteness)
};

/// Throws config_error naming the first invalid field.
inline void validate(const kerple_config& c) {
  detail::require(c.num_heads > 0 && c.num_heads <= (std::ptrdiff_t{1} << 24), "kerple.num_heads", c.num_heads,
                  "[1, 2^24]");
  detail::require(std::isfinite(c.min_parameter) && c.min_parameter > 0, "kerple.min_parameter", c.min_parameter,
                  "a finite number > 0 (the kernels need r1, r2 > 0)");
  detail::require(c.max_exponent > 0 && c.max_exponent <= 2, "kerple.max_exponent", c.max_exponent,
                  "(0, 2] (the power kernel is conditionally positive definite for exponents <= 2)");
}

/// The authors' projection of a parameter vector [r1 (num_heads), r2 (num_heads)]: every value raised
/// to min_parameter, the power kernel's r2 capped at max_exponent. In place; throws config_error for
/// a wrong size or a non-finite value (naming it).
inline void kerple_project(const kerple_config& c, std::span<double> params) {
  validate(c);
  detail::require(static_cast<std::ptrdiff_t>(params.size()) == 2 * c.num_heads, "kerple.parameters", params.size(),
                  "2 * num_heads = " + std::to_string(2 * c.num_heads));
  for (std::size_t n = 0; n < params.size(); ++n) {
    detail::require(std::isfinite(params[n]), n < params.size() / 2 ? "kerple.r1" : "kerple.r2", params[n],
                    "a finite number");
    params[n] = std::max(params[n], c.min_parameter);
    if (c.kernel == kerple_kernel::power && n >= params.size() / 2) params[n] = std::min(params[n], c.max_exponent);
  }
}

/// KERPLE (hook 3, distance form, trainable). Immutable; copies share the parameters.
class kerple {
 public:
  /// `r1`, `r2`: num_heads values each (projected as the authors do, see kerple_project). Throws
  /// config_error for an invalid config, a size mismatch or a non-finite value.
  kerple(kerple_config config, std::span<const double> r1, std::span<const double> r2) : config_(config) {
    validate(config_);
    const auto H = static_cast<std::size_t>(config_.num_heads);
    detail::require(r1.size() == H, "kerple.r1", r1.size(), "num_heads = " + std::to_string(H) + " values");
    detail::require(r2.size() == H, "kerple.r2", r2.size(), "num_heads = " + std::to_string(H) + " values");
    std::vector<double> p(r1.begin(), r1.end());
    p.insert(p.end(), r2.begin(), r2.end());
    kerple_project(config_, p);
    params_ = std::make_shared<const std::vector<double>>(std::move(p));
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "kerple"; }
  [[nodiscard]] std::ptrdiff_t num_heads() const noexcept { return config_.num_heads; }
  [[nodiscard]] const kerple_config& config() const noexcept { return config_; }
  /// The values the bias uses: [r1 (num_heads), r2 (num_heads)], after the projection.
  [[nodiscard]] std::span<const double> parameters() const noexcept { return *params_; }

  [[nodiscard]] double bias(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k) const noexcept {
    return at(h, std::fabs(detail::difference_as_double(pos_q, pos_k)));
  }
  /// Distance form (distance_bias_encoding): the bias depends on |pos_k - pos_q| only, never saturates.
  [[nodiscard]] double bias_at_distance(std::ptrdiff_t h, std::int64_t d) const noexcept {
    return at(h, std::fabs(static_cast<double>(d)));
  }
  [[nodiscard]] static constexpr double query_bias(std::ptrdiff_t, std::int64_t) noexcept { return 0.0; }
  [[nodiscard]] static constexpr distance_range bias_distance_range() noexcept { return {INT64_MIN, INT64_MAX}; }

  /// Trainable: [r1 (num_heads), r2 (num_heads)].
  [[nodiscard]] std::ptrdiff_t parameter_count() const noexcept { return 2 * config_.num_heads; }
  /// grad[r1_h] += d db/dr1, grad[r2_h] += d db/dr2 (the derivative at the projected values).
  void accumulate_bias_gradient(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k, double d,
                                std::span<double> grad) const noexcept {
    accumulate(h, std::fabs(detail::difference_as_double(pos_q, pos_k)), d, grad);
  }
  void accumulate_bias_gradient_at_distance(std::ptrdiff_t h, std::int64_t dist, double d,
                                            std::span<double> grad) const noexcept {
    accumulate(h, std::fabs(static_cast<double>(dist)), d, grad);
  }

 private:
  [[nodiscard]] double r1(std::ptrdiff_t h) const noexcept { return (*params_)[static_cast<std::size_t>(h)]; }
  [[nodiscard]] double r2(std::ptrdiff_t h) const noexcept {
    return (*params_)[static_cast<std::size_t>(config_.num_heads + h)];
  }
  [[nodiscard]] double at(std::ptrdiff_t h, double n) const noexcept {
    POSENC_ASSERT(h >= 0 && h < config_.num_heads);
    return config_.kernel == kerple_kernel::logarithmic ? -r1(h) * std::log1p(r2(h) * n) : -r1(h) * std::pow(n, r2(h));
  }
  void accumulate(std::ptrdiff_t h, double n, double d, std::span<double> grad) const noexcept {
    POSENC_ASSERT(h >= 0 && h < config_.num_heads && static_cast<std::ptrdiff_t>(grad.size()) == parameter_count());
    double& g1 = grad[static_cast<std::size_t>(h)];
    double& g2 = grad[static_cast<std::size_t>(config_.num_heads + h)];
    if (config_.kernel == kerple_kernel::logarithmic) {
      g1 -= d * std::log1p(r2(h) * n);
      g2 -= d * r1(h) * n / (1.0 + r2(h) * n);
    } else {
      const double pw = std::pow(n, r2(h));
      g1 -= d * pw;
      if (n > 0) g2 -= d * r1(h) * pw * std::log(n);  // n^r2 ln n -> 0 at n = 0
    }
  }

  kerple_config config_;
  std::shared_ptr<const std::vector<double>> params_;
};

}  // namespace posenc::inline v0
