// posenc/encoders/deberta.hpp — DeBERTa's disentangled attention (He et al. 2021, eq. 2-4; docs/spec.md §14).
//
// With the table row c(i, j) = deberta_buckets::row(pos_q - pos_k) (encoders/deberta_buckets.hpp),
// projected relative tables K_r (content-to-position) and Q_r (position-to-content), n the number of
// cross terms present (pos_att_type) and d the head size:
//   logit_ij = (q_i . k_j + q_i . K_r[c(i, j)] + k_j . Q_r[c(i, j)]) / sqrt(d (1 + n))
// c2p is hook 4's key term (relative_key, no value term) and p2c hook 5 (relative_query): both scaled
// with the content term; the scale rule is softmax_scale_multiplier() = 1 / sqrt(1 + n), which the
// attention multiplies into its 1 / sqrt(d). Hugging Face gathers p2c at the row of -bucket(pos_k -
// pos_q), which is c(i, j) because buckets are odd. Equal to HF's DisentangledSelfAttention for
// v1 and v2/v3, shared or separate position projections (tests/encoders/deberta_test.cpp), on
// explicit positions (HF: 0 .. S - 1; v1's per-call span min(S, M) is the same clamp there).
// The tables are the caller's projections of the relative embeddings (shared keys: the layer's own
// key/query projections; else pos_key_proj / pos_query_proj; deberta_project_positions does
// either). Not modelled: v1's talking heads, the enhanced mask decoder's query_states, "p2p".
#pragma once

#include <cmath>
#include <concepts>
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
#include <posenc/encoders/deberta_buckets.hpp>

namespace posenc::inline v0 {

/// Configuration of deberta_relative (HF DebertaV2Config / DebertaConfig names).
/// Defaults: DeBERTa-v3-base (12 heads of 64, 256 buckets, 512 positions, c2p and p2c).
struct deberta_relative_config {
  std::ptrdiff_t head_dim = 64;
  std::ptrdiff_t num_heads = 12;
  std::int64_t position_buckets = 256;        ///< <= 0: no buckets (v1)
  std::int64_t max_relative_positions = 512;  ///< HF: < 1 means max_position_embeddings (the loader resolves it)
  bool c2p = true;                            ///< pos_att_type contains "c2p": the key table K_r is given
  bool p2c = true;                            ///< pos_att_type contains "p2c": the query table Q_r is given
  deberta_bucket_rule bucket_rule = deberta_bucket_rule::hugging_face;

  /// DeBERTa-v2/v3 (and mDeBERTa): log buckets, both cross terms.
  [[nodiscard]] static deberta_relative_config v3(std::ptrdiff_t num_heads, std::ptrdiff_t head_dim,
                                                  std::int64_t position_buckets = 256,
                                                  std::int64_t max_relative_positions = 512) {
    return {.head_dim = head_dim,
            .num_heads = num_heads,
            .position_buckets = position_buckets,
            .max_relative_positions = max_relative_positions};
  }
  /// DeBERTa v1: no buckets, distances clamped to [-M, M - 1], both cross terms.
  [[nodiscard]] static deberta_relative_config v1(std::ptrdiff_t num_heads, std::ptrdiff_t head_dim,
                                                  std::int64_t max_relative_positions = 512) {
    return {.head_dim = head_dim,
            .num_heads = num_heads,
            .position_buckets = 0,
            .max_relative_positions = max_relative_positions};
  }
  [[nodiscard]] deberta_bucket_config buckets() const noexcept {
    return {
        .position_buckets = position_buckets, .max_relative_positions = max_relative_positions, .rule = bucket_rule};
  }
  /// Rows of each table: 2 span (span = position_buckets, or max_relative_positions without buckets).
  [[nodiscard]] std::int64_t table_rows() const noexcept { return 2 * buckets().span(); }
  /// n in the scale rule 1 / sqrt(d (1 + n)).
  [[nodiscard]] int cross_terms() const noexcept { return (c2p ? 1 : 0) + (p2c ? 1 : 0); }
};

/// Throws config_error naming the first invalid field.
inline void validate(const deberta_relative_config& c) {
  detail::require(c.head_dim > 0, "deberta.head_dim", c.head_dim, "> 0");
  detail::require(c.num_heads > 0, "deberta.num_heads", c.num_heads, "> 0");
  validate(c.buckets());
}

/// HF's projection of the relative embeddings: out[r][o] = sum_c rel[r][c] weight[o][c] + bias[o]
/// (an nn.Linear: `weight` [out_features, hidden] row-major, `bias` [out_features] or empty), for
/// `rows` rows of `hidden` values. With out_features = num_heads * head_dim the result is a
/// deberta_relative table. Throws config_error for mismatched sizes.
[[nodiscard]] inline std::vector<double> deberta_project_positions(std::span<const double> rel_embeddings,
                                                                   std::ptrdiff_t rows, std::span<const double> weight,
                                                                   std::span<const double> bias,
                                                                   std::ptrdiff_t out_features) {
  detail::require(rows > 0 && out_features > 0, "deberta.projection.rows", rows, "> 0 with out_features > 0");
  const auto hidden = static_cast<std::ptrdiff_t>(rel_embeddings.size()) / rows;
  detail::require(hidden > 0 && hidden * rows == static_cast<std::ptrdiff_t>(rel_embeddings.size()),
                  "deberta.projection.rel_embeddings", rel_embeddings.size(), "rows * hidden values");
  detail::require(static_cast<std::ptrdiff_t>(weight.size()) == out_features * hidden, "deberta.projection.weight",
                  weight.size(), "out_features * hidden = " + std::to_string(out_features * hidden));
  detail::require(bias.empty() || static_cast<std::ptrdiff_t>(bias.size()) == out_features, "deberta.projection.bias",
                  bias.size(), "0 or out_features = " + std::to_string(out_features));
  std::vector<double> out(static_cast<std::size_t>(rows * out_features));
  for (std::ptrdiff_t r = 0; r < rows; ++r)
    for (std::ptrdiff_t o = 0; o < out_features; ++o) {
      double s = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(o)];
      for (std::ptrdiff_t c = 0; c < hidden; ++c)
        s +=
            rel_embeddings[static_cast<std::size_t>(r * hidden + c)] * weight[static_cast<std::size_t>(o * hidden + c)];
      out[static_cast<std::size_t>(r * out_features + o)] = s;
    }
  return out;
}

/// DeBERTa's relative terms (hooks 4 and 5: c2p as relative_key, p2c as relative_query). Immutable;
/// copies share the tables.
class deberta_relative {
 public:
  /// `key_table` (K_r, c2p) and `query_table` (Q_r, p2c): [table_rows, num_heads, head_dim] row-major
  /// (HF's projection output [2 span, num_heads * head_dim]), copied in; empty for a term the config
  /// leaves out. Throws config_error for an invalid config or a size mismatch.
  deberta_relative(deberta_relative_config config, std::span<const double> key_table,
                   std::span<const double> query_table)
      : config_(config), buckets_((validate(config), config.buckets())) {
    init(key_table, query_table);
  }
  deberta_relative(deberta_relative_config config, std::span<const float> key_table, std::span<const float> query_table)
      : config_(config), buckets_((validate(config), config.buckets())) {
    init(key_table, query_table);
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "deberta"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return config_.head_dim; }
  [[nodiscard]] std::ptrdiff_t num_heads() const noexcept { return config_.num_heads; }
  [[nodiscard]] const deberta_relative_config& config() const noexcept { return config_; }
  [[nodiscard]] const deberta_buckets& buckets() const noexcept { return buckets_; }
  /// The scale rule: the attention's 1 / sqrt(d) times 1 / sqrt(1 + cross terms).
  [[nodiscard]] double softmax_scale_multiplier() const noexcept {
    return 1.0 / std::sqrt(1.0 + config_.cross_terms());
  }
  /// The table row of a query at pos_q and a key at pos_k (any int64 positions).
  [[nodiscard]] std::int64_t row(std::int64_t pos_q, std::int64_t pos_k) const noexcept {
    return buckets_.row(detail::saturating_difference(pos_q, pos_k));
  }

  /// K_r row of head h for the pair (c2p), head_dim values; zeros without c2p.
  [[nodiscard]] std::span<const double> relative_key(std::ptrdiff_t h, std::int64_t pos_q,
                                                     std::int64_t pos_k) const noexcept {
    return table_row(tables_->key, h, row(pos_q, pos_k));
  }
  /// DeBERTa has no value term.
  [[nodiscard]] static std::span<const double> relative_value(std::ptrdiff_t, std::int64_t, std::int64_t) noexcept {
    return {};
  }
  /// Q_r row of head h for the pair (p2c: it meets k_j), head_dim values; zeros without p2c.
  [[nodiscard]] std::span<const double> relative_query(std::ptrdiff_t h, std::int64_t pos_q,
                                                       std::int64_t pos_k) const noexcept {
    return table_row(tables_->query, h, row(pos_q, pos_k));
  }

  /// Distance forms (distance_relative_kv_encoding, distance_relative_query_encoding), d = pos_k - pos_q.
  [[nodiscard]] std::span<const double> relative_key_at_distance(std::ptrdiff_t h, std::int64_t d) const noexcept {
    return table_row(tables_->key, h, row_at_distance(d));
  }
  [[nodiscard]] static std::span<const double> relative_value_at_distance(std::ptrdiff_t, std::int64_t) noexcept {
    return {};
  }
  [[nodiscard]] std::span<const double> relative_query_at_distance(std::ptrdiff_t h, std::int64_t d) const noexcept {
    return table_row(tables_->query, h, row_at_distance(d));
  }
  /// Both tables' rows stop changing outside this range of pos_k - pos_q.
  [[nodiscard]] distance_range relative_distance_range() const noexcept {
    const distance_range r = buckets_.saturation();  // of pos_q - pos_k
    return {-r.hi, r.lo == INT64_MIN ? INT64_MAX : -r.lo};
  }

  /// Trainable: K_r (when c2p), then Q_r (when p2c), each in the constructor's layout.
  [[nodiscard]] std::ptrdiff_t parameter_count() const noexcept {
    return static_cast<std::ptrdiff_t>(tables_->key.size() + tables_->query.size());
  }
  /// grad[K_r row of (h, pos_q, pos_k)] += w * x: the backward of relative_key() (nothing without c2p).
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void accumulate_relative_key_gradient(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k, double w,
                                        std::span<const T> x, std::span<double> grad) const noexcept {
    if (config_.c2p) accumulate_row(0, h, row(pos_q, pos_k), w, x, grad);
  }
  /// No value term: nothing to accumulate.
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  static void accumulate_relative_value_gradient(std::ptrdiff_t, std::int64_t, std::int64_t, double, std::span<const T>,
                                                 std::span<double>) noexcept {}
  /// grad[Q_r row of (h, pos_q, pos_k)] += w * x: the backward of relative_query() (nothing without p2c).
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void accumulate_relative_query_gradient(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k, double w,
                                          std::span<const T> x, std::span<double> grad) const noexcept {
    if (config_.p2c) accumulate_row(tables_->key.size(), h, row(pos_q, pos_k), w, x, grad);
  }
  /// The same at a distance d = pos_k - pos_q (the distance form of a fused backward).
  template <class T>
  void accumulate_relative_key_gradient_at_distance(std::ptrdiff_t h, std::int64_t d, double w, std::span<const T> x,
                                                    std::span<double> grad) const noexcept {
    if (config_.c2p) accumulate_row(0, h, row_at_distance(d), w, x, grad);
  }
  template <class T>
  static void accumulate_relative_value_gradient_at_distance(std::ptrdiff_t, std::int64_t, double, std::span<const T>,
                                                             std::span<double>) noexcept {}
  template <class T>
  void accumulate_relative_query_gradient_at_distance(std::ptrdiff_t h, std::int64_t d, double w, std::span<const T> x,
                                                      std::span<double> grad) const noexcept {
    if (config_.p2c) accumulate_row(tables_->key.size(), h, row_at_distance(d), w, x, grad);
  }

 private:
  struct tables {
    std::vector<double> key, query, zeros;
  };

  template <class T>
  void init(std::span<const T> key_table, std::span<const T> query_table) {
    const std::int64_t want = detail::checked_product(
        "deberta.key_table.size",
        {{"table_rows", config_.table_rows()}, {"num_heads", config_.num_heads}, {"head_dim", config_.head_dim}},
        detail::max_elements<double>);
    const std::string shape = std::to_string(config_.table_rows()) + " * " + std::to_string(config_.num_heads) + " * " +
                              std::to_string(config_.head_dim) + " ([2 span, num_heads, head_dim])";
    detail::require(static_cast<std::int64_t>(key_table.size()) == (config_.c2p ? want : 0), "deberta.key_table.size",
                    key_table.size(), config_.c2p ? shape : "0 without c2p");
    detail::require(static_cast<std::int64_t>(query_table.size()) == (config_.p2c ? want : 0),
                    "deberta.query_table.size", query_table.size(), config_.p2c ? shape : "0 without p2c");
    auto t = std::make_shared<tables>();
    t->key.assign(key_table.begin(), key_table.end());
    t->query.assign(query_table.begin(), query_table.end());
    t->zeros.assign(static_cast<std::size_t>(config_.head_dim), 0.0);
    tables_ = std::move(t);
  }

  [[nodiscard]] std::int64_t row_at_distance(std::int64_t d) const noexcept {
    return buckets_.row(d == INT64_MIN ? INT64_MAX : -d);  // r = pos_q - pos_k = -d (saturated)
  }

  [[nodiscard]] std::span<const double> table_row(const std::vector<double>& table, std::ptrdiff_t h,
                                                  std::int64_t r) const noexcept {
    if (table.empty()) return tables_->zeros;
    POSENC_ASSERT(h >= 0 && h < config_.num_heads);
    const auto offset = static_cast<std::size_t>((r * config_.num_heads + h) * config_.head_dim);
    return std::span<const double>(table).subspan(offset, static_cast<std::size_t>(config_.head_dim));
  }

  // grad[base + (r, h) row] += w * x (base 0: K_r; the size of K_r: Q_r).
  template <class T>
  void accumulate_row(std::size_t base, std::ptrdiff_t h, std::int64_t r, double w, std::span<const T> x,
                      std::span<double> grad) const noexcept {
    POSENC_ASSERT(h >= 0 && h < config_.num_heads && static_cast<std::ptrdiff_t>(x.size()) == config_.head_dim &&
                  static_cast<std::ptrdiff_t>(grad.size()) == parameter_count());
    double* g = grad.data() + base + static_cast<std::size_t>((r * config_.num_heads + h) * config_.head_dim);
    for (std::size_t d = 0; d < x.size(); ++d) g[d] += w * static_cast<double>(x[d]);
  }

  deberta_relative_config config_;
  deberta_buckets buckets_;
  std::shared_ptr<const tables> tables_;
};

}  // namespace posenc::inline v0
