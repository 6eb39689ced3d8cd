// posenc/encoders/shaw.hpp — Shaw-style relative position representations for keys and values.
//
// Shaw, Uszkoreit & Vaswani 2018, eq. 3-4 (docs/spec.md §4): logit_ij += q_i . A_K[c(i,j)] (scaled with
// q.k) and out_i += sum_j a_ij A_V[c(i,j)], with the clipped distance c = clip(pos_j - pos_i,
// -k_left, k_right) (tensor2tensor/CT2; HF BERT's unclipped `relative_key` with the opposite sign
// is a configuration). Positions are explicit, so cached decoding uses true positions. The tables
// are caller-supplied (learned weights); BERT's `relative_key_query` key-side term is not modelled.
#pragma once

#include <algorithm>
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

namespace posenc::inline v0 {

/// Which distance indexes the tables.
enum class shaw_sign : unsigned char {
  key_minus_query,  ///< pos_k - pos_q (Shaw et al., tensor2tensor, CTranslate2)
  query_minus_key,  ///< pos_q - pos_k (HF BERT `relative_key`)
};

/// Configuration of shaw_relative. Defaults: tensor2tensor `transformer_relative`
/// (max_relative_position 20, key and value terms, one table pair shared by all heads).
struct shaw_relative_config {
  std::ptrdiff_t head_dim = 64;
  std::int64_t k_left = 20;   ///< most negative distance kept (table row 0 = distance -k_left)
  std::int64_t k_right = 20;  ///< most positive distance kept (last row = distance +k_right)
  shaw_sign sign = shaw_sign::key_minus_query;
  /// true: distances are clipped into [-k_left, k_right]. false (HF BERT): a distance outside it is
  /// a precondition violation: debug builds assert; release builds clamp (memory stays safe); call
  /// shaw_relative::check_positions() once per batch for a config_error instead.
  bool clip = true;
  bool use_value_term = true;       ///< false: relative_value() returns an empty span
  bool shared_across_heads = true;  ///< false: one table pair per head, [num_heads, rows, head_dim]
  std::ptrdiff_t num_heads = 1;     ///< heads covered by per-head tables (ignored when shared)

  /// Shaw et al. / tensor2tensor with `max_relative_position = k_max`.
  [[nodiscard]] static shaw_relative_config symmetric(std::int64_t k_max, std::ptrdiff_t head_dim) {
    return {.head_dim = head_dim, .k_left = k_max, .k_right = k_max};
  }
  /// HF BERT `position_embedding_type = "relative_key"`: distance pos_q - pos_k indexes a table of
  /// 2 * max_position_embeddings - 1 rows, no clipping, no value term.
  [[nodiscard]] static shaw_relative_config bert_relative_key(std::int64_t max_position_embeddings,
                                                              std::ptrdiff_t head_dim) {
    return {.head_dim = head_dim,
            .k_left = max_position_embeddings - 1,
            .k_right = max_position_embeddings - 1,
            .sign = shaw_sign::query_minus_key,
            .clip = false,
            .use_value_term = false};
  }
  /// Rows of each table: k_left + k_right + 1.
  [[nodiscard]] std::int64_t table_rows() const noexcept { return k_left + k_right + 1; }
};

/// Validates every field; throws config_error naming the first bad one.
inline void validate(const shaw_relative_config& c) {
  detail::require(c.head_dim > 0, "shaw.head_dim", c.head_dim, "> 0");
  constexpr std::int64_t lim = std::int64_t{1} << 40;
  detail::require(c.k_left >= 0 && c.k_left <= lim, "shaw.k_left", c.k_left, "[0, 2^40]");
  detail::require(c.k_right >= 0 && c.k_right <= lim, "shaw.k_right", c.k_right, "[0, 2^40]");
  detail::require(c.k_left + c.k_right > 0, "shaw.k_right", c.k_right,
                  "> 0 when k_left = 0 (max_relative_position = 0 leaves one row for every distance)");
  detail::require(c.num_heads > 0, "shaw.num_heads", c.num_heads, "> 0");
}

/// Shaw relative position representations (hook: relative_kv). Immutable; copies share the tables.
class shaw_relative {
 public:
  /// `key_table`, `value_table`: row-major [rows, head_dim] (shared) or [num_heads, rows,
  /// head_dim] (per head), rows = k_left + k_right + 1, copied in. `value_table` must be empty when
  /// use_value_term is false. Throws config_error for an invalid config or a size mismatch.
  shaw_relative(shaw_relative_config config, std::span<const double> key_table, std::span<const double> value_table)
      : config_(config) {
    init(key_table, value_table);
  }
  shaw_relative(shaw_relative_config config, std::span<const float> key_table, std::span<const float> value_table)
      : config_(config) {
    init(key_table, value_table);
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "shaw_relative"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return config_.head_dim; }
  [[nodiscard]] const shaw_relative_config& config() const noexcept { return config_; }

  /// Table row for a query at pos_q and a key at pos_k: the (clipped) distance plus k_left, in
  /// [0, k_left + k_right]. noexcept; see shaw_relative_config::clip for unclipped distances out of range.
  [[nodiscard]] std::int64_t index(std::int64_t pos_q, std::int64_t pos_k) const noexcept {
    // Saturated: clamping into [-k_left, k_right] gives the same row as the true distance would.
    const std::int64_t d = config_.sign == shaw_sign::key_minus_query ? detail::saturating_difference(pos_k, pos_q)
                                                                      : detail::saturating_difference(pos_q, pos_k);
    POSENC_ASSERT(config_.clip || (d >= -config_.k_left && d <= config_.k_right));
    return std::clamp(d, -config_.k_left, config_.k_right) + config_.k_left;
  }

  /// A_K row for head h (0 <= h < num_heads when per-head; any h when shared), head_dim values.
  [[nodiscard]] std::span<const double> relative_key(std::ptrdiff_t h, std::int64_t pos_q,
                                                     std::int64_t pos_k) const noexcept {
    return row(tables_->key, h, index(pos_q, pos_k));
  }

  /// A_V row for head h, head_dim values; empty when use_value_term is false.
  [[nodiscard]] std::span<const double> relative_value(std::ptrdiff_t h, std::int64_t pos_q,
                                                       std::int64_t pos_k) const noexcept {
    if (!config_.use_value_term) return {};
    return row(tables_->value, h, index(pos_q, pos_k));
  }

  /// Trainable (trainable_relative_kv_encoding): the key table, then the value table (absent
  /// without the value term), each laid out as given to the constructor.
  [[nodiscard]] std::ptrdiff_t parameter_count() const noexcept {
    return static_cast<std::ptrdiff_t>(tables_->key.size() + tables_->value.size());
  }
  /// grad[A_K row of (h, pos_q, pos_k)] += w * x (x: head_dim values): the backward of relative_key().
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void accumulate_relative_key_gradient(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k, double w,
                                        std::span<const T> x, std::span<double> grad) const noexcept {
    accumulate_row(0, h, index(pos_q, pos_k), w, x, grad);
  }
  /// grad[A_V row of (h, pos_q, pos_k)] += w * x; nothing without the value term.
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void accumulate_relative_value_gradient(std::ptrdiff_t h, std::int64_t pos_q, std::int64_t pos_k, double w,
                                          std::span<const T> x, std::span<double> grad) const noexcept {
    if (config_.use_value_term) accumulate_row(tables_->key.size(), h, index(pos_q, pos_k), w, x, grad);
  }
  /// The same two for a distance d = pos_k - pos_q (the distance form of the fused backward).
  template <class T>
  void accumulate_relative_key_gradient_at_distance(std::ptrdiff_t h, std::int64_t d, double w, std::span<const T> x,
                                                    std::span<double> grad) const noexcept {
    accumulate_row(0, h, index_of_distance(d), w, x, grad);
  }
  template <class T>
  void accumulate_relative_value_gradient_at_distance(std::ptrdiff_t h, std::int64_t d, double w, std::span<const T> x,
                                                      std::span<double> grad) const noexcept {
    if (config_.use_value_term) accumulate_row(tables_->key.size(), h, index_of_distance(d), w, x, grad);
  }

  /// Distance form (distance_relative_kv_encoding), d = pos_k - pos_q.
  [[nodiscard]] std::span<const double> relative_key_at_distance(std::ptrdiff_t h, std::int64_t d) const noexcept {
    return row(tables_->key, h, index_of_distance(d));
  }
  [[nodiscard]] std::span<const double> relative_value_at_distance(std::ptrdiff_t h, std::int64_t d) const noexcept {
    if (!config_.use_value_term) return {};
    return row(tables_->value, h, index_of_distance(d));
  }
  /// The tables clip (or, unclipped, are only defined) outside this range of pos_k - pos_q.
  [[nodiscard]] distance_range relative_distance_range() const noexcept {
    return config_.sign == shaw_sign::key_minus_query ? distance_range{-config_.k_left, config_.k_right}
                                                      : distance_range{-config_.k_right, config_.k_left};
  }

  /// For clip = false: throws config_error unless every (query, key) pair of these positions has
  /// a distance inside [-k_left, k_right]. Always passes when clip = true.
  void check_positions(std::span<const std::int64_t> q_pos, std::span<const std::int64_t> k_pos) const {
    if (config_.clip || q_pos.empty() || k_pos.empty()) return;
    const auto [qmin, qmax] = std::minmax_element(q_pos.begin(), q_pos.end());
    const auto [kmin, kmax] = std::minmax_element(k_pos.begin(), k_pos.end());
    const bool kq = config_.sign == shaw_sign::key_minus_query;
    // Saturated differences: the comparisons below are exact; a reported value beyond the int64
    // range shows as INT64_MIN / INT64_MAX.
    const std::int64_t lo =
        kq ? detail::saturating_difference(*kmin, *qmax) : detail::saturating_difference(*qmin, *kmax);
    const std::int64_t hi =
        kq ? detail::saturating_difference(*kmax, *qmin) : detail::saturating_difference(*qmax, *kmin);
    const std::string range = "[-" + std::to_string(config_.k_left) + ", " + std::to_string(config_.k_right) +
                              "] (unclipped table of " + std::to_string(config_.table_rows()) + " rows)";
    detail::require(lo >= -config_.k_left, "shaw.relative_distance", lo, range);
    detail::require(hi <= config_.k_right, "shaw.relative_distance", hi, range);
  }

 private:
  struct tables {
    std::vector<double> key, value;
  };

  template <class T>
  void init(std::span<const T> key_table, std::span<const T> value_table) {
    validate(config_);
    const std::int64_t heads = config_.shared_across_heads ? 1 : config_.num_heads;
    const std::int64_t want = detail::checked_product(
        "shaw.key_table.size",
        {{"heads", heads}, {"k_left + k_right + 1", config_.table_rows()}, {"head_dim", config_.head_dim}},
        detail::max_elements<double>);
    const std::string shape = (config_.shared_across_heads ? "" : std::to_string(heads) + " * ") +
                              std::to_string(config_.table_rows()) + " * " + std::to_string(config_.head_dim) + " ([" +
                              (config_.shared_across_heads ? "" : "num_heads, ") + "k_left + k_right + 1, head_dim])";
    detail::require(static_cast<std::int64_t>(key_table.size()) == want, "shaw.key_table.size", key_table.size(),
                    shape);
    if (config_.use_value_term)
      detail::require(static_cast<std::int64_t>(value_table.size()) == want, "shaw.value_table.size",
                      value_table.size(), shape);
    else
      detail::require(value_table.empty(), "shaw.value_table.size", value_table.size(),
                      "0 when use_value_term = false");
    auto t = std::make_shared<tables>();
    t->key.assign(key_table.begin(), key_table.end());
    t->value.assign(value_table.begin(), value_table.end());
    tables_ = std::move(t);
  }

  [[nodiscard]] std::int64_t index_of_distance(std::int64_t d) const noexcept {
    const std::int64_t s = config_.sign == shaw_sign::key_minus_query ? d : (d == INT64_MIN ? INT64_MAX : -d);
    return std::clamp(s, -config_.k_left, config_.k_right) + config_.k_left;
  }

  [[nodiscard]] std::span<const double> row(const std::vector<double>& table, std::ptrdiff_t h,
                                            std::int64_t r) const noexcept {
    POSENC_ASSERT(h >= 0 && (config_.shared_across_heads || h < config_.num_heads));
    const std::int64_t head = config_.shared_across_heads ? 0 : h;
    const auto offset = static_cast<std::size_t>((head * config_.table_rows() + r) * config_.head_dim);
    return std::span<const double>(table).subspan(offset, static_cast<std::size_t>(config_.head_dim));
  }

  // grad[base + row (h, r)] += w * x, the layout of row() shifted by base (0: keys, key size: values).
  template <class T>
  void accumulate_row(std::size_t base, std::ptrdiff_t h, std::int64_t r, double w, std::span<const T> x,
                      std::span<double> grad) const noexcept {
    POSENC_ASSERT(static_cast<std::ptrdiff_t>(x.size()) == config_.head_dim &&
                  static_cast<std::ptrdiff_t>(grad.size()) == parameter_count());
    const std::int64_t head = config_.shared_across_heads ? 0 : h;
    double* g = grad.data() + base + static_cast<std::size_t>((head * config_.table_rows() + r) * config_.head_dim);
    for (std::size_t d = 0; d < x.size(); ++d) g[d] += w * static_cast<double>(x[d]);
  }

  shaw_relative_config config_;
  std::shared_ptr<const tables> tables_;
};

}  // namespace posenc::inline v0
