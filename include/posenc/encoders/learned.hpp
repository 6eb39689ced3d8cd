// posenc/encoders/learned.hpp — learned absolute position embeddings (GPT-2, BERT, OPT, RoBERTa).
//
// docs/spec.md §2: x_t += E[p + offset] with a caller-supplied table E [max_len, d_model]. The table is
// copied once (float or double input, stored in double) and shared between copies of the encoder.
// Positions outside the table are an error by default (HF raises IndexError); `clamp_to_last` and
// `zero` (tensor2tensor) are explicit opt-ins. This header does not train or load tables.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/core/assert.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// What a learned table does with a position whose row `p + offset` is >= max_len.
enum class out_of_range_policy : unsigned char {
  error,          ///< throw config_error naming the position and the table size (HF/CT2 behaviour)
  clamp_to_last,  ///< use the last row
  zero,           ///< add nothing (tensor2tensor zero-pads its table)
};

/// Configuration of learned_absolute. Reference defaults: GPT-2/BERT (offset 0, error).
struct learned_absolute_config {
  std::ptrdiff_t max_len = 0;    ///< rows of the table (required, >= 1): HF max_position_embeddings
  std::ptrdiff_t model_dim = 0;  ///< values per row, d_model (required, >= 1)
  /// Row = position + offset. GPT-2/BERT 0; OPT 2; fairseq/RoBERTa padding_idx + 1.
  std::int64_t offset = 0;
  out_of_range_policy out_of_range = out_of_range_policy::error;
};

/// Learned absolute position embedding (hook: additive). Immutable; copies share the table.
class learned_absolute {
 public:
  /// `table`: row-major [max_len, model_dim] (size must be max_len * model_dim). Throws config_error
  /// for max_len <= 0, model_dim <= 0, a size mismatch or an offset outside [0, max_len).
  learned_absolute(learned_absolute_config config, std::span<const float> table)
      : learned_absolute(adopt{}, config, {table.begin(), table.end()}) {}
  learned_absolute(learned_absolute_config config, std::span<const double> table)
      : learned_absolute(adopt{}, config, {table.begin(), table.end()}) {}

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "learned_absolute"; }
  [[nodiscard]] std::ptrdiff_t model_dim() const noexcept { return d_; }
  [[nodiscard]] std::ptrdiff_t max_len() const noexcept { return max_len_; }
  [[nodiscard]] const learned_absolute_config& config() const noexcept { return config_; }

  /// Raw table row `r` (not offset), d_model values. Throws config_error unless 0 <= r < max_len.
  [[nodiscard]] std::span<const double> row(std::int64_t r) const {
    detail::require(r >= 0 && r < max_len_, "learned_absolute.row", r,
                    "a row in [0, max_len = " + std::to_string(max_len_) + ")");
    return row_unchecked(r);
  }

  /// The table row used for position `p` (after offset and policy); empty span for policy `zero`
  /// beyond the table. Throws config_error for a negative position, or beyond the table under
  /// policy `error`.
  [[nodiscard]] std::span<const double> lookup(std::int64_t p) const {
    detail::require(p >= 0, "position", p, "a non-negative position");
    // 0 <= offset < max_len: compare p with max_len - offset before forming p + offset, which
    // would overflow for p near INT64_MAX.
    if (p < max_len_ - config_.offset) return row_unchecked(p + config_.offset);
    switch (config_.out_of_range) {
      case out_of_range_policy::clamp_to_last:
        return row_unchecked(max_len_ - 1);
      case out_of_range_policy::zero:
        return {};
      case out_of_range_policy::error:
        break;
    }
    throw config_error("position", detail::to_text(p),
                       "a position in [0, " + std::to_string(max_len_ - config_.offset) +
                           ") for a table of max_len = " + std::to_string(max_len_) + " rows with offset " +
                           std::to_string(config_.offset) + " (or out_of_range = clamp_to_last / zero)");
  }

  /// row += E[p + offset] (d_model values). Throws as lookup().
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void add(std::int64_t p, std::span<T> row_out) const {
    detail::require_shape(static_cast<std::ptrdiff_t>(row_out.size()) == d_, "row.size", row_out.size(),
                          "d_model = " + std::to_string(d_));
    const auto e = lookup(p);
    for (std::size_t c = 0; c < e.size(); ++c) row_out[c] += static_cast<T>(e[c]);
  }

  /// Trainable (trainable_additive_encoding): the table, [max_len, d_model] row-major.
  [[nodiscard]] std::ptrdiff_t parameter_count() const noexcept { return static_cast<std::ptrdiff_t>(max_len_) * d_; }

  /// The backward of add(): grad[row of p] += d_row (d_model values), the row lookup(p) reads
  /// (nothing under policy `zero` beyond the table). Throws as lookup(), and shape_error naming
  /// "d_row.size" / "grad.size" for wrong sizes.
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void accumulate_add_gradient(std::int64_t p, std::span<const T> d_row, std::span<double> grad) const {
    detail::require_shape(static_cast<std::ptrdiff_t>(d_row.size()) == d_, "d_row.size", d_row.size(),
                          "d_model = " + std::to_string(d_));
    detail::require_shape(static_cast<std::ptrdiff_t>(grad.size()) == parameter_count(), "grad.size", grad.size(),
                          "max_len * d_model = " + std::to_string(parameter_count()));
    const auto e = lookup(p);
    if (e.empty()) return;
    double* g = grad.data() + (e.data() - table_->data());  // the row lookup() chose, in grad's layout
    for (std::size_t c = 0; c < d_row.size(); ++c) g[c] += static_cast<double>(d_row[c]);
  }

  /// Scatter-add of a batch: grad[row of positions[t]] += dx[t * d_model, (t + 1) * d_model) for
  /// every t (dx holds positions.size() rows of d_model values). Throws as accumulate_add_gradient.
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void accumulate_gradient(std::span<const std::int64_t> positions, std::span<const T> dx,
                           std::span<double> grad) const {
    detail::require_shape(dx.size() == positions.size() * static_cast<std::size_t>(d_), "dx.size", dx.size(),
                          "positions.size() * d_model");
    for (std::size_t t = 0; t < positions.size(); ++t)
      accumulate_add_gradient(positions[t], dx.subspan(t * static_cast<std::size_t>(d_), static_cast<std::size_t>(d_)),
                              grad);
  }

  /// row = E[p + offset] (zeros under policy `zero` beyond the table). Throws as lookup().
  template <class T>
  requires std::same_as<T, float> || std::same_as<T, double>
  void encode(std::int64_t p, std::span<T> row_out) const {
    detail::require_shape(static_cast<std::ptrdiff_t>(row_out.size()) == d_, "row.size", row_out.size(),
                          "d_model = " + std::to_string(d_));
    const auto e = lookup(p);
    for (std::size_t c = 0; c < row_out.size(); ++c) row_out[c] = e.empty() ? T(0) : static_cast<T>(e[c]);
  }

 private:
  struct adopt {};
  learned_absolute(adopt, learned_absolute_config config, std::vector<double> table)
      : max_len_(config.max_len), d_(config.model_dim), config_(config) {
    const std::ptrdiff_t max_len = config.max_len, d = config.model_dim;
    detail::require(max_len > 0, "learned_absolute.max_len", max_len, "> 0");
    detail::require(d > 0, "learned_absolute.model_dim", d, "> 0");
    detail::require(
        static_cast<std::ptrdiff_t>(table.size()) / d == max_len && static_cast<std::ptrdiff_t>(table.size()) % d == 0,
        "learned_absolute.table.size", table.size(),
        "max_len * model_dim = " + std::to_string(max_len) + " * " + std::to_string(d));
    detail::require(config.offset >= 0 && config.offset < max_len, "learned_absolute.offset", config.offset,
                    "[0, max_len = " + std::to_string(max_len) + ")");
    table_ = std::make_shared<const std::vector<double>>(std::move(table));
  }

  [[nodiscard]] std::span<const double> row_unchecked(std::int64_t r) const noexcept {
    return std::span<const double>(*table_).subspan(static_cast<std::size_t>(r * d_), static_cast<std::size_t>(d_));
  }

  std::shared_ptr<const std::vector<double>> table_;
  std::ptrdiff_t max_len_;
  std::ptrdiff_t d_;
  learned_absolute_config config_;
};

}  // namespace posenc::inline v0
