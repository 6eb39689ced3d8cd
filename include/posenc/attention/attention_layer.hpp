// posenc/attention/attention_layer.hpp — a multi-head attention layer (projections with Eigen) that
// runs every encoder family through one call: hook 1 on its input, hooks 2-4 through the attention
// (the fused posenc::attention for float layers, sdpa for double ones).
//
// y = softmax-attention(x' W_q^T + b_q, x' W_k^T + b_k, x' W_v^T + b_v) W_o^T + b_o with
// x'[t] = x[t] + PE(pos[t]) for additive encoders (learned, sinusoidal), per docs/design.md §3. A reference
// for comparing encodings inside one attention (no normalisation, dropout, MLP or fused kernels);
// one sequence per call (pack several with segment ids in the options).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <Eigen/Core>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/eigen_interop.hpp>
#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// Head layout of an attention_layer.
struct attention_layer_config {
  std::ptrdiff_t model_dim = 0;                  ///< d_model (required)
  std::ptrdiff_t num_heads = 0;                  ///< Hq (required)
  std::optional<std::ptrdiff_t> num_kv_heads{};  ///< Hkv (GQA/MQA); absent: num_heads
  std::ptrdiff_t head_dim = 0;                   ///< D (required)
  std::optional<std::ptrdiff_t> value_dim{};     ///< Dv; absent: head_dim
};

/// Projection weights in PyTorch nn.Linear layout, [out_features, in_features] (y = x W^T + b):
/// w_q [Hq D, d_model], w_k [Hkv D, d_model], w_v [Hkv Dv, d_model], w_o [d_model, Hq Dv].
/// A bias vector of size 0 means "no bias".
template <attention_element T>
struct attention_layer_weights {
  row_matrix<T> w_q, w_k, w_v, w_o;
  Eigen::Matrix<T, Eigen::Dynamic, 1> b_q{}, b_k{}, b_v{}, b_o{};
};

/// Multi-head attention over one sequence x [S, d_model] (one token per row).
///
///   posenc::attention_layer<double> layer({.model_dim = 64, .num_heads = 8, .head_dim = 8}, weights);
///   auto y = layer.forward(posenc::combine(rope, alibi), x, positions, {.causal = true});
template <attention_element T>
class attention_layer {
 public:
  using matrix = row_matrix<T>;

  /// Throws config_error / shape_error naming the field for any inconsistent size.
  attention_layer(attention_layer_config c, attention_layer_weights<T> w) : cfg_(c), w_(std::move(w)) {
    detail::require(c.model_dim >= 1, "attention_layer.model_dim", c.model_dim, ">= 1");
    detail::require(c.num_heads >= 1, "attention_layer.num_heads", c.num_heads, ">= 1");
    detail::require(c.head_dim >= 1, "attention_layer.head_dim", c.head_dim, ">= 1");
    hkv_ = c.num_kv_heads ? *c.num_kv_heads : c.num_heads;
    dv_ = c.value_dim ? *c.value_dim : c.head_dim;
    detail::require(hkv_ >= 1 && c.num_heads % hkv_ == 0, "attention_layer.num_kv_heads", hkv_,
                    "a divisor of num_heads = " + std::to_string(c.num_heads));
    detail::require(dv_ >= 1, "attention_layer.value_dim", dv_, ">= 1");
    check(w_.w_q, c.num_heads * c.head_dim, c.model_dim, "attention_layer.w_q");
    check(w_.w_k, hkv_ * c.head_dim, c.model_dim, "attention_layer.w_k");
    check(w_.w_v, hkv_ * dv_, c.model_dim, "attention_layer.w_v");
    check(w_.w_o, c.model_dim, c.num_heads * dv_, "attention_layer.w_o");
    check_bias(w_.b_q, w_.w_q.rows(), "attention_layer.b_q");
    check_bias(w_.b_k, w_.w_k.rows(), "attention_layer.b_k");
    check_bias(w_.b_v, w_.w_v.rows(), "attention_layer.b_v");
    check_bias(w_.b_o, w_.w_o.rows(), "attention_layer.b_o");
  }

  [[nodiscard]] const attention_layer_config& config() const noexcept { return cfg_; }
  [[nodiscard]] std::ptrdiff_t num_kv_heads() const noexcept { return hkv_; }
  [[nodiscard]] std::ptrdiff_t value_dim() const noexcept { return dv_; }
  /// A cache shaped for this layer.
  [[nodiscard]] kv_cache<T> make_cache(rope_cache_policy policy = rope_cache_policy::rerotate_cached_keys) const {
    return kv_cache<T>({.kv_heads = hkv_, .head_dim = cfg_.head_dim, .value_dim = dv_, .policy = policy});
  }

  /// Self-attention of x [S, d_model] with one position per token ([S]); returns [S, d_model].
  /// `options` carries the masks (causal, window, padding, packing), scale and sinks; its
  /// positions are the `positions` argument. Throws shape_error for mismatched sizes.
  template <positional_encoding E>
  [[nodiscard]] matrix forward(const E& enc, const Eigen::Ref<const matrix>& x, std::span<const std::int64_t> positions,
                               attention_options options = {}, const fast_attention_options& fast = {}) const {
    const auto S = static_cast<std::ptrdiff_t>(x.rows());
    project p = projections(enc, x, positions);
    matrix out(S, cfg_.num_heads * dv_);
    options.query_positions = positions;
    options.key_positions = positions;
    detail::attend_fast_or_reference(as_heads(p.q, cfg_.num_heads, cfg_.head_dim), as_heads(p.k, hkv_, cfg_.head_dim),
                                     as_heads(p.v, hkv_, dv_), as_heads(out, cfg_.num_heads, dv_), enc, options, fast);
    return output(out);
  }

  /// The same with a KV cache: the new tokens x [n, d_model] at `positions` [n] are appended to
  /// `cache` (keys after hook 2) and attend to everything cached. Decoding token by token gives the
  /// rows of forward() on the whole sequence. Returns [n, d_model], or an empty matrix when the
  /// cache reported cache_event::dropped (re-run the whole context; see kv_cache).
  template <positional_encoding E>
  [[nodiscard]] matrix forward(const E& enc, const Eigen::Ref<const matrix>& x, std::span<const std::int64_t> positions,
                               kv_cache<T>& cache, attention_options options = {},
                               const fast_attention_options& fast = {}) const {
    const auto S = static_cast<std::ptrdiff_t>(x.rows());
    project p = projections(enc, x, positions);
    if (cache.append(enc, as_heads(p.k, hkv_, cfg_.head_dim), as_heads(p.v, hkv_, dv_), positions) ==
        cache_event::dropped)
      return matrix(0, cfg_.model_dim);
    matrix out(S, cfg_.num_heads * dv_);
    cache.attend(enc, as_heads(p.q, cfg_.num_heads, cfg_.head_dim), as_heads(out, cfg_.num_heads, dv_), positions,
                 options, fast);
    return output(out);
  }

 private:
  struct project {
    matrix q, k, v;
  };

  template <positional_encoding E>
  project projections(const E& enc, const Eigen::Ref<const matrix>& x, std::span<const std::int64_t> positions) const {
    detail::require_shape(static_cast<std::ptrdiff_t>(x.cols()) == cfg_.model_dim, "x.cols",
                          static_cast<std::ptrdiff_t>(x.cols()), "model_dim = " + std::to_string(cfg_.model_dim));
    detail::require_shape(static_cast<std::ptrdiff_t>(positions.size()) == static_cast<std::ptrdiff_t>(x.rows()),
                          "positions.size", positions.size(), "x.rows = " + std::to_string(x.rows()));
    matrix xp = x;
    if constexpr (additive_encoding<E>) {  // hook 1: x[t] += PE(pos[t]) before the projections
      detail::require_shape(static_cast<std::ptrdiff_t>(enc.model_dim()) == cfg_.model_dim, "encoder.model_dim",
                            static_cast<std::ptrdiff_t>(enc.model_dim()),
                            "model_dim = " + std::to_string(cfg_.model_dim));
      for (Eigen::Index t = 0; t < xp.rows(); ++t)
        enc.add(positions[static_cast<std::size_t>(t)],
                std::span<T>(xp.row(t).data(), static_cast<std::size_t>(cfg_.model_dim)));
    }
    return {linear(xp, w_.w_q, w_.b_q), linear(xp, w_.w_k, w_.b_k), linear(xp, w_.w_v, w_.b_v)};
  }

  [[nodiscard]] matrix output(const matrix& heads) const { return linear(heads, w_.w_o, w_.b_o); }

  static matrix linear(const matrix& x, const matrix& w, const Eigen::Matrix<T, Eigen::Dynamic, 1>& b) {
    matrix y = x * w.transpose();
    if (b.size() != 0) y.rowwise() += b.transpose();
    return y;
  }
  static void check(const matrix& w, std::ptrdiff_t rows, std::ptrdiff_t cols, const char* name) {
    detail::require_shape(w.rows() == rows && w.cols() == cols, name,
                          std::to_string(w.rows()) + "x" + std::to_string(w.cols()),
                          std::to_string(rows) + "x" + std::to_string(cols) + " ([out_features, in_features])");
  }
  static void check_bias(const Eigen::Matrix<T, Eigen::Dynamic, 1>& b, Eigen::Index n, const char* name) {
    detail::require_shape(b.size() == 0 || b.size() == n, name, static_cast<std::ptrdiff_t>(b.size()),
                          "0 (no bias) or " + std::to_string(n));
  }

  attention_layer_config cfg_;
  attention_layer_weights<T> w_;
  std::ptrdiff_t hkv_ = 0, dv_ = 0;
};

}  // namespace posenc::inline v0
