// posenc/encoders/cope.hpp — Contextual Position Encoding (CoPE; Golovneva et al. 2024, eq. 3-5;
// docs/spec.md §15).
//
// Query i, visible key j, d = head_dim, E the position embeddings (npos rows of d):
//   g_ij = sigmoid(q_i . c_j / sqrt(d))          c = the keys (default) or the values
//   p_ij = min(sum over visible k >= j of g_ik, npos - 1)
//   t_ij = w (q_i . E[ceil p]) + (1 - w) (q_i . E[floor p]),   w = p - floor p
//   logit_ij = (q_i . k_j + t_ij) / sqrt(d)     (or q_i . k_j / sqrt(d) + t_ij: the authors' --cope-nodiv)
// Exactly the authors' ContextPosSelfAttn (facebookresearch/RAM, projects/cope), forward and
// gradients (tests/encoders/cope_test.cpp). Hook 6 (contextual_position_encoding): the attention
// computes the gates and the positions (attention/contextual_rows.hpp), this encoder the gate function,
// the interpolated term and their derivatives. E is [npos, d] row-major, the transpose of the authors'
// [d, npos] parameter (cope_table_from_reference converts), shared by all heads as theirs. The gate
// scale 1 / sqrt(d) is the authors' and independent of the attention's scale.
// Not modelled: a separate gate-key projection (--cope-sep-key), the "cope+rel" combination.
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

/// Configuration of cope. Defaults: the authors' (positions up to their block size, key gates, the
/// position term scaled with the content term).
struct cope_config {
  std::ptrdiff_t head_dim = 64;
  std::int64_t npos =
      513;  ///< rows of E, positions capped at npos - 1 (--cope-npos; else block_size + 1: 513 in the authors' runs)
  contextual_gate_source gate_source = contextual_gate_source::keys;  ///< values: --cope-val-gates
  bool scale_position_term = true;  ///< false: --cope-nodiv (t_ij added after the 1 / sqrt(d) scaling)
};

/// Throws config_error naming the first invalid field.
inline void validate(const cope_config& c) {
  detail::require(c.head_dim > 0, "cope.head_dim", c.head_dim, "> 0");
  detail::require(c.npos >= 1 && c.npos <= (std::int64_t{1} << 32), "cope.npos", c.npos, "[1, 2^32]");
}

/// The authors' parameter pos_emb [head_dim, npos] (row-major) as a cope table [npos, head_dim].
/// Throws config_error for a size other than head_dim * npos.
[[nodiscard]] inline std::vector<double> cope_table_from_reference(std::span<const double> pos_emb,
                                                                   std::ptrdiff_t head_dim, std::int64_t npos) {
  detail::require(head_dim > 0 && npos > 0 && static_cast<std::int64_t>(pos_emb.size()) == head_dim * npos,
                  "cope.pos_emb.size", pos_emb.size(), "head_dim * npos");
  std::vector<double> t(pos_emb.size());
  for (std::size_t src = 0; src < pos_emb.size(); ++src) {  // pos_emb[d][n] -> t[n][d]
    const auto d = static_cast<std::int64_t>(src) / npos, n = static_cast<std::int64_t>(src) % npos;
    t[static_cast<std::size_t>(n * head_dim + d)] = pos_emb[src];
  }
  return t;
}

/// CoPE (hook 6, with its backward and trainable table). Immutable; copies share the table.
class cope {
 public:
  /// `table`: [npos, head_dim] (every head), copied in. Throws config_error.
  cope(cope_config config, std::span<const double> table) : config_(config) { init(table); }
  cope(cope_config config, std::span<const float> table) : config_(config) { init(table); }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "cope"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return config_.head_dim; }
  [[nodiscard]] const cope_config& config() const noexcept { return config_; }
  [[nodiscard]] contextual_gate_source gate_source() const noexcept { return config_.gate_source; }
  [[nodiscard]] bool position_term_scaled() const noexcept { return config_.scale_position_term; }
  /// Positions are capped here (npos - 1).
  [[nodiscard]] double max_position() const noexcept { return static_cast<double>(config_.npos - 1); }

  /// g = sigmoid(x / sqrt(d)) for x = q . c.
  [[nodiscard]] double gate(double x) const noexcept {
    const double z = x / sqrt_d_;
    return z >= 0 ? 1.0 / (1.0 + std::exp(-z)) : std::exp(z) / (1.0 + std::exp(z));
  }
  /// The gate is sigmoid(gate_logit_scale() x): 1 / sqrt(d).
  [[nodiscard]] double gate_logit_scale() const noexcept { return 1.0 / sqrt_d_; }
  /// d gate / d x.
  [[nodiscard]] double gate_derivative(double x) const noexcept {
    const double g = gate(x);
    return g * (1.0 - g) / sqrt_d_;
  }

  /// t = w (q . E[ceil p]) + (1 - w) (q . E[floor p]), w = p - floor p, for head h (0 <= p <= npos - 1).
  [[nodiscard]] double position_logit(std::ptrdiff_t h, std::span<const double> q, double p) const noexcept {
    const auto [lo, hi, w] = split(p);
    return dot(h, lo, q) * (1.0 - w) + dot(h, hi, q) * w;  // the authors' ceil * w + floor * (1 - w)
  }
  /// d t / d p = q . E[ceil p] - q . E[floor p] (0 at an integer p, as the authors' autograd).
  [[nodiscard]] double position_logit_slope(std::ptrdiff_t h, std::span<const double> q, double p) const noexcept {
    const auto [lo, hi, w] = split(p);
    return lo == hi ? 0.0 : dot(h, hi, q) - dot(h, lo, q);
  }
  /// dq += w_grad e_h(p) (the interpolated embedding).
  void accumulate_position_query_gradient(std::ptrdiff_t h, double p, double w_grad,
                                          std::span<double> dq) const noexcept {
    const auto [lo, hi, w] = split(p);
    const double* a = row(h, lo);
    const double* b = row(h, hi);
    for (std::size_t d = 0; d < dq.size(); ++d) dq[d] += w_grad * (a[d] * (1.0 - w) + b[d] * w);
  }

  /// Trainable: the table, in the constructor's layout.
  [[nodiscard]] std::ptrdiff_t parameter_count() const noexcept { return static_cast<std::ptrdiff_t>(table_->size()); }
  /// grad[E floor p] += w_grad (1 - w) q, grad[E ceil p] += w_grad w q.
  void accumulate_position_gradient(std::ptrdiff_t h, double p, double w_grad, std::span<const double> q,
                                    std::span<double> grad) const noexcept {
    POSENC_ASSERT(static_cast<std::ptrdiff_t>(grad.size()) == parameter_count());
    const auto [lo, hi, w] = split(p);
    double* a = grad.data() + offset(h, lo);
    double* b = grad.data() + offset(h, hi);
    for (std::size_t d = 0; d < q.size(); ++d) {
      a[d] += w_grad * (1.0 - w) * q[d];
      b[d] += w_grad * w * q[d];
    }
  }

  /// Rows of E (npos), and row n (head_dim values; every head reads the same table): the fused
  /// attention's table form (contextual_position_table_encoding).
  [[nodiscard]] std::int64_t position_count() const noexcept { return config_.npos; }
  [[nodiscard]] std::span<const double> position_embedding(std::ptrdiff_t h, std::int64_t n) const noexcept {
    return {row(h, n), static_cast<std::size_t>(config_.head_dim)};
  }

  /// For a fused row: out[n] = q . E_h[n], n < npos (the authors' pos_logits_fixed), and the
  /// interpolation of such a row at p (position_logit(h, q, p) == interpolate(out, p)).
  void position_logits(std::ptrdiff_t h, std::span<const double> q, std::span<double> out) const noexcept {
    POSENC_ASSERT(static_cast<std::int64_t>(out.size()) == config_.npos);
    for (std::int64_t n = 0; n < config_.npos; ++n) out[static_cast<std::size_t>(n)] = dot(h, n, q);
  }
  [[nodiscard]] static double interpolate(std::span<const double> fixed, double p) noexcept {
    const auto [lo, hi, w] = split(p);
    return fixed[static_cast<std::size_t>(lo)] * (1.0 - w) + fixed[static_cast<std::size_t>(hi)] * w;
  }

 private:
  struct split_position {
    std::int64_t lo, hi;
    double w;
  };
  [[nodiscard]] static split_position split(double p) noexcept {
    POSENC_ASSERT(p >= 0);
    const double f = std::floor(p);
    return {static_cast<std::int64_t>(f), static_cast<std::int64_t>(std::ceil(p)), p - f};
  }
  [[nodiscard]] std::size_t offset(std::ptrdiff_t, std::int64_t n) const noexcept {
    POSENC_ASSERT(n >= 0 && n < config_.npos);
    return static_cast<std::size_t>(n * config_.head_dim);
  }
  [[nodiscard]] const double* row(std::ptrdiff_t h, std::int64_t n) const noexcept {
    return table_->data() + offset(h, n);
  }
  [[nodiscard]] double dot(std::ptrdiff_t h, std::int64_t n, std::span<const double> q) const noexcept {
    const double* e = row(h, n);
    double s = 0;
    for (std::size_t d = 0; d < q.size(); ++d) s += q[d] * e[d];
    return s;
  }

  template <class T>
  void init(std::span<const T> table) {
    validate(config_);
    const std::int64_t want = detail::checked_product(
        "cope.table.size", {{"npos", config_.npos}, {"head_dim", config_.head_dim}}, detail::max_elements<double>);
    detail::require(static_cast<std::int64_t>(table.size()) == want, "cope.table.size", table.size(),
                    "npos * head_dim = " + std::to_string(want));
    table_ = std::make_shared<const std::vector<double>>(table.begin(), table.end());
    sqrt_d_ = std::sqrt(static_cast<double>(config_.head_dim));
  }

  cope_config config_;
  double sqrt_d_ = 1;
  std::shared_ptr<const std::vector<double>> table_;
};

}  // namespace posenc::inline v0
