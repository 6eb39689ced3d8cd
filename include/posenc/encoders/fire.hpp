// posenc/encoders/fire.hpp — FIRE, functional interpolation for relative positions (Li et al. 2023,
// "Functional Interpolation for Relative Positions Improves Long Context Transformers", §3;
// docs/spec.md §16).
//
// A learned function of the log-scaled distance, normalised by the query position:
//   b(h, i, j) = f(u)_h,   u = psi(|i - j|) / (psi(max(L, i)) + eps),   psi(x) = ln(1 + c x)
//   f(u)_h = sum_k W2[h][k] relu(W1[k] u + b1[k]) + b2[h]     (one hidden layer of `mlp_width` units)
// i = pos_q, j = pos_k; c and L enter as |c| and |L| (any real parameter is valid); eps keeps the
// normaliser positive as c -> 0. Hook 3 (score bias, added after scaling), trainable: parameters
// [c, L, W1 (width), b1 (width), W2 (num_heads x width), b2 (num_heads)]. The paper has no released
// code: this is its equation (progressive interpolation with the learnable threshold L, psi the
// log transform, an MLP shared by the heads with one output each); the special cases it contains
// (T5's buckets, ALiBi, KERPLE-log) and the gradients are tested in tests/encoders/fire_test.cpp.
// Not a distance form: the normaliser depends on pos_q once pos_q > L.
#pragma once

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

/// Configuration of fire. Defaults: the paper's MLP (32 hidden units), eps 1e-6.
struct fire_config {
  std::ptrdiff_t num_heads = 8;
  std::ptrdiff_t mlp_width = 32;
  double eps = 1e-6;  ///< added to the normaliser psi(max(L, i))

  /// Parameters: 2 (c, L) + width (W1) + width (b1) + heads * width (W2) + heads (b2).
  [[nodiscard]] std::ptrdiff_t parameter_count() const noexcept {
    return 2 + 2 * mlp_width + num_heads * mlp_width + num_heads;
  }
};

/// Throws config_error naming the first invalid field.
inline void validate(const fire_config& c) {
  detail::require(c.num_heads > 0 && c.num_heads <= (std::ptrdiff_t{1} << 20), "fire.num_heads", c.num_heads,
                  "[1, 2^20]");
  detail::require(c.mlp_width > 0 && c.mlp_width <= (std::ptrdiff_t{1} << 20), "fire.mlp_width", c.mlp_width,
                  "[1, 2^20]");
  detail::require(std::isfinite(c.eps) && c.eps >= 0, "fire.eps", c.eps, "a finite number >= 0");
}

/// The parameters of fire, by name (the layout of fire::parameter_count()).
struct fire_parameters {
  double c = 0.1;            ///< the log transform's scale (|c| is used)
  double threshold = 512;    ///< L: positions below it share one normaliser (|L| is used)
  std::vector<double> w1{};  ///< [width]: hidden weights (the input is one number)
  std::vector<double> b1{};  ///< [width]
  std::vector<double> w2{};  ///< [num_heads, width]
  std::vector<double> b2{};  ///< [num_heads]
};

/// FIRE (hook 3, trainable). Immutable; copies share the parameters.
class fire {
 public:
  /// From a flat parameter vector in the layout above (config.parameter_count() values).
  fire(fire_config config, std::span<const double> params) : config_(config) { init(params); }
  /// From named parameters. Throws config_error for a size mismatch or a non-finite value.
  fire(fire_config config, const fire_parameters& p) : config_(config) {
    validate(config_);
    const auto W = static_cast<std::size_t>(config_.mlp_width), H = static_cast<std::size_t>(config_.num_heads);
    detail::require(p.w1.size() == W, "fire.w1", p.w1.size(), "mlp_width = " + std::to_string(W));
    detail::require(p.b1.size() == W, "fire.b1", p.b1.size(), "mlp_width = " + std::to_string(W));
    detail::require(p.w2.size() == H * W, "fire.w2", p.w2.size(), "num_heads * mlp_width = " + std::to_string(H * W));
    detail::require(p.b2.size() == H, "fire.b2", p.b2.size(), "num_heads = " + std::to_string(H));
    std::vector<double> flat{p.c, p.threshold};
    for (const auto* v : {&p.w1, &p.b1, &p.w2, &p.b2}) flat.insert(flat.end(), v->begin(), v->end());
    init(flat);
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "fire"; }
  [[nodiscard]] std::ptrdiff_t num_heads() const noexcept { return config_.num_heads; }
  [[nodiscard]] const fire_config& config() const noexcept { return config_; }
  [[nodiscard]] std::span<const double> parameters() const noexcept { return *p_; }

  /// u: the normalised distance the MLP reads (in [0, 1) whenever 0 <= pos_k <= pos_q).
  [[nodiscard]] double normalized_distance(std::int64_t pos_q, std::int64_t pos_k) const noexcept {
    return psi(std::fabs(detail::difference_as_double(pos_q, pos_k))) / normaliser(pos_q);
  }
  /// The MLP's output for head h at u.
  [[nodiscard]] double mlp(std::ptrdiff_t h, double u) const noexcept {
    POSENC_ASSERT(h >= 0 && h < config_.num_heads);
    const std::ptrdiff_t W = config_.mlp_width;
    const double* w2 = w2_ptr() + h * W;
    double s = b2_ptr()[h];
    for (std::ptrdiff_t k = 0; k < W; ++k) {
      const double z = w1_ptr()[k] * u + b1_ptr()[k];
      if (z > 0) s += w2[k] * z;
    }
    return s;
  }
  [[nodiscard]] double bias(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k) const noexcept {
    return mlp(h, normalized_distance(pos_q, pos_k));
  }

  /// Trainable (trainable_score_bias_encoding).
  [[nodiscard]] std::ptrdiff_t parameter_count() const noexcept { return config_.parameter_count(); }
  /// grad += d * d bias(h, pos_q, pos_k) / d parameters (at |L| == pos_q the threshold gets none).
  void accumulate_bias_gradient(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k, double d,
                                std::span<double> grad) const noexcept;

 private:
  [[nodiscard]] double c() const noexcept { return std::fabs((*p_)[0]); }
  [[nodiscard]] double threshold() const noexcept { return std::fabs((*p_)[1]); }
  [[nodiscard]] const double* w1_ptr() const noexcept { return p_->data() + 2; }
  [[nodiscard]] const double* b1_ptr() const noexcept { return w1_ptr() + config_.mlp_width; }
  [[nodiscard]] const double* w2_ptr() const noexcept { return b1_ptr() + config_.mlp_width; }
  [[nodiscard]] const double* b2_ptr() const noexcept { return w2_ptr() + config_.num_heads * config_.mlp_width; }
  [[nodiscard]] double psi(double x) const noexcept { return std::log1p(c() * x); }
  // max(|L|, pos_q), as a double
  [[nodiscard]] double normaliser_position(std::int64_t pos_q) const noexcept {
    return std::fmax(threshold(), static_cast<double>(pos_q));
  }
  [[nodiscard]] double normaliser(std::int64_t pos_q) const noexcept {
    return psi(normaliser_position(pos_q)) + config_.eps;
  }

  void init(std::span<const double> params) {
    validate(config_);
    detail::require(static_cast<std::ptrdiff_t>(params.size()) == config_.parameter_count(), "fire.parameters",
                    params.size(),
                    "2 + 2 * mlp_width + num_heads * (mlp_width + 1) = " + std::to_string(config_.parameter_count()));
    for (double x : params) detail::require(std::isfinite(x), "fire.parameters", x, "finite values");
    p_ = std::make_shared<const std::vector<double>>(params.begin(), params.end());
    detail::require(normaliser(0) > 0, "fire.eps", config_.eps,
                    "> 0 when c = 0 or L = 0 (the normaliser psi(max(L, i)) + eps would be 0)");
  }

  fire_config config_;
  std::shared_ptr<const std::vector<double>> p_;
};

inline void fire::accumulate_bias_gradient(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k, double d,
                                           std::span<double> grad) const noexcept {
  POSENC_ASSERT(h >= 0 && h < config_.num_heads && static_cast<std::ptrdiff_t>(grad.size()) == parameter_count());
  const std::ptrdiff_t W = config_.mlp_width, H = config_.num_heads;
  const double n = std::fabs(detail::difference_as_double(pos_q, pos_k));
  const double m = normaliser_position(pos_q), N = normaliser(pos_q), top = psi(n), u = top / N;
  double* g = grad.data();
  double* gw1 = g + 2;
  double* gb1 = gw1 + W;
  double* gw2 = gb1 + W + h * W;
  g[2 + 2 * W + H * W + h] += d;  // b2[h]
  double du = 0;
  for (std::ptrdiff_t k = 0; k < W; ++k) {
    const double z = w1_ptr()[k] * u + b1_ptr()[k];
    if (z <= 0) continue;  // relu'(0) = 0, as torch
    gw2[k] += d * z;
    const double dz = d * w2_ptr()[h * W + k];
    gw1[k] += dz * u;
    gb1[k] += dz;
    du += dz * w1_ptr()[k];
  }
  // u = psi(n) / (psi(m) + eps), psi(x) = ln(1 + |c| x), m = max(|L|, pos_q)
  const double cc = c();
  const double dc = (n / (1 + cc * n)) / N - top / (N * N) * (m / (1 + cc * m));
  const double craw = (*p_)[0], lraw = (*p_)[1];
  g[0] += du * dc * (craw > 0 ? 1.0 : craw < 0 ? -1.0 : 0.0);
  if (threshold() > static_cast<double>(pos_q)) {
    const double dm = -top / (N * N) * (cc / (1 + cc * m));
    g[1] += du * dm * (lraw > 0 ? 1.0 : lraw < 0 ? -1.0 : 0.0);
  }
}

}  // namespace posenc::inline v0
