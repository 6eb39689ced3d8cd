// posenc/encoders/combined.hpp — composition of two encoders: combined<A, B> models the union of
// their hooks.
//
// Additive encodings add up, score biases add up, q/k transforms are applied A then B. Two
// relative key/value encoders cannot be combined (their value terms would need a defined order of
// weighting), nor two relative-query (hook 5) or two contextual-position (hook 6) encoders; that is
// rejected at compile time. Example: RoPE on q/k plus ALiBi on the scores.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include <posenc/concepts.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

namespace detail {
/// A part without a q/k transform needs no backward for it; one with a transform must have one.
template <class X>
inline constexpr bool qk_backward_ok = !qk_transform_encoding<X> || qk_transform_backward_encoding<X>;
/// Encoders with a head count (score biases; per-head tables of other hooks, e.g. DeBERTa's).
template <class X>
concept has_num_heads = requires(const X& x) {
  { x.num_heads() } -> std::convertible_to<std::ptrdiff_t>;
};
/// The hooks that act on head rows, whose encoders have a head_dim().
template <class X>
inline constexpr bool has_head_dim = qk_transform_encoding<X> || relative_kv_encoding<X> ||
                                     relative_query_encoding<X> || contextual_position_encoding<X>;
}  // namespace detail

template <positional_encoding A, positional_encoding B>
requires(!(relative_kv_encoding<A> &&
           relative_kv_encoding<B>)&&!(relative_query_encoding<A> &&
                                       relative_query_encoding<B>)&&!(contextual_position_encoding<A> &&
                                                                      contextual_position_encoding<B>)) class combined {
 public:
  combined(A a, B b) : a_(std::move(a)), b_(std::move(b)) {
    if constexpr (additive_encoding<A> && additive_encoding<B>)
      detail::require(a_.model_dim() == b_.model_dim(), "combined.model_dim", b_.model_dim(),
                      "the first encoder's model_dim " + std::to_string(a_.model_dim()));
    if constexpr (detail::has_head_dim<A> && detail::has_head_dim<B>)
      detail::require(a_.head_dim() == b_.head_dim(), "combined.head_dim", b_.head_dim(),
                      "the first encoder's head_dim " + std::to_string(a_.head_dim()));
    if constexpr (detail::has_num_heads<A> && detail::has_num_heads<B>)
      detail::require(a_.num_heads() == b_.num_heads(), "combined.num_heads", b_.num_heads(),
                      "the first encoder's num_heads " + std::to_string(a_.num_heads()));
  }

  [[nodiscard]] std::string name() const { return std::string(a_.name()) + "+" + std::string(b_.name()); }
  [[nodiscard]] const A& first() const noexcept { return a_; }
  [[nodiscard]] const B& second() const noexcept { return b_; }

  // Hook 1
  [[nodiscard]] std::ptrdiff_t model_dim() const requires additive_encoding<A> || additive_encoding<B> {
    if constexpr (additive_encoding<A>)
      return a_.model_dim();
    else
      return b_.model_dim();
  }
  template <class T>
  void add(std::int64_t p, std::span<T> row) const requires additive_encoding<A> || additive_encoding<B> {
    if constexpr (additive_encoding<A>) a_.add(p, row);
    if constexpr (additive_encoding<B>) b_.add(p, row);
  }

  // Hooks 2, 4, 5 and 6 share head_dim
  [[nodiscard]] std::ptrdiff_t head_dim() const requires detail::has_head_dim<A> || detail::has_head_dim<B> {
    if constexpr (detail::has_head_dim<A>)
      return a_.head_dim();
    else
      return b_.head_dim();
  }
  template <class T>
  void transform_q(tensor_view<T> q, std::span<const std::int64_t> pos) const requires qk_transform_encoding<A> ||
      qk_transform_encoding<B> {
    if constexpr (qk_transform_encoding<A>) a_.transform_q(q, pos);
    if constexpr (qk_transform_encoding<B>) b_.transform_q(q, pos);
  }
  template <class T>
  void transform_k(tensor_view<T> k, std::span<const std::int64_t> pos) const requires qk_transform_encoding<A> ||
      qk_transform_encoding<B> {
    if constexpr (qk_transform_encoding<A>) a_.transform_k(k, pos);
    if constexpr (qk_transform_encoding<B>) b_.transform_k(k, pos);
  }

  // Hook 3
  [[nodiscard]] std::ptrdiff_t num_heads() const requires detail::has_num_heads<A> || detail::has_num_heads<B> {
    if constexpr (detail::has_num_heads<A>)
      return a_.num_heads();
    else
      return b_.num_heads();
  }
  [[nodiscard]] double bias(std::ptrdiff_t h, std::int64_t i,
                            std::int64_t j) const requires score_bias_encoding<A> || score_bias_encoding<B> {
    double s = 0;
    if constexpr (score_bias_encoding<A>) s += a_.bias(h, i, j);
    if constexpr (score_bias_encoding<B>) s += b_.bias(h, i, j);
    return s;
  }

  // Hook 4
  [[nodiscard]] std::span<const double> relative_key(std::ptrdiff_t h, std::int64_t i, std::int64_t j) const requires
      relative_kv_encoding<A> || relative_kv_encoding<B> {
    if constexpr (relative_kv_encoding<A>)
      return a_.relative_key(h, i, j);
    else
      return b_.relative_key(h, i, j);
  }
  [[nodiscard]] std::span<const double> relative_value(std::ptrdiff_t h, std::int64_t i, std::int64_t j) const requires
      relative_kv_encoding<A> || relative_kv_encoding<B> {
    if constexpr (relative_kv_encoding<A>)
      return a_.relative_value(h, i, j);
    else
      return b_.relative_value(h, i, j);
  }

  // Hook 5
  [[nodiscard]] std::span<const double> relative_query(std::ptrdiff_t h, std::int64_t i, std::int64_t j) const requires
      relative_query_encoding<A> || relative_query_encoding<B> {
    return part<relative_query_tag>().relative_query(h, i, j);
  }

  // Hook 6 and its backward
  [[nodiscard]] contextual_gate_source gate_source() const requires contextual_position_encoding<A> ||
      contextual_position_encoding<B> {
    return part<contextual_tag>().gate_source();
  }
  [[nodiscard]] double gate(double x) const requires contextual_position_encoding<A> ||
      contextual_position_encoding<B> {
    return part<contextual_tag>().gate(x);
  }
  [[nodiscard]] double max_position() const requires contextual_position_encoding<A> ||
      contextual_position_encoding<B> {
    return part<contextual_tag>().max_position();
  }
  [[nodiscard]] double position_logit(std::ptrdiff_t h, std::span<const double> q, double p) const requires
      contextual_position_encoding<A> || contextual_position_encoding<B> {
    return part<contextual_tag>().position_logit(h, q, p);
  }
  [[nodiscard]] bool position_term_scaled() const requires contextual_position_encoding<A> ||
      contextual_position_encoding<B> {
    return part<contextual_tag>().position_term_scaled();
  }
  [[nodiscard]] double gate_logit_scale() const requires contextual_position_table_encoding<A> ||
      contextual_position_table_encoding<B> {
    return part<contextual_tag>().gate_logit_scale();
  }
  [[nodiscard]] std::int64_t position_count() const requires contextual_position_table_encoding<A> ||
      contextual_position_table_encoding<B> {
    return part<contextual_tag>().position_count();
  }
  [[nodiscard]] std::span<const double> position_embedding(std::ptrdiff_t h, std::int64_t n) const requires
      contextual_position_table_encoding<A> || contextual_position_table_encoding<B> {
    return part<contextual_tag>().position_embedding(h, n);
  }
  [[nodiscard]] double gate_derivative(double x) const requires contextual_position_backward_encoding<A> ||
      contextual_position_backward_encoding<B> {
    return part<contextual_tag>().gate_derivative(x);
  }
  [[nodiscard]] double position_logit_slope(std::ptrdiff_t h, std::span<const double> q, double p) const requires
      contextual_position_backward_encoding<A> || contextual_position_backward_encoding<B> {
    return part<contextual_tag>().position_logit_slope(h, q, p);
  }
  void accumulate_position_query_gradient(std::ptrdiff_t h, double p, double w, std::span<double> dq) const requires
      contextual_position_backward_encoding<A> || contextual_position_backward_encoding<B> {
    part<contextual_tag>().accumulate_position_query_gradient(h, p, w, dq);
  }

  // Training (docs/training.md): A's parameters, then B's; backward transforms run B's then A's.
  [[nodiscard]] std::ptrdiff_t parameter_count() const requires trainable_encoding<A> || trainable_encoding<B> {
    return count_of(a_) + count_of(b_);
  }
  template <class T>
      void transform_q_backward(tensor_view<T> dq, std::span<const std::int64_t> pos) const
      requires(qk_transform_encoding<A> || qk_transform_encoding<B>) &&
      detail::qk_backward_ok<A>&& detail::qk_backward_ok<B> {
    if constexpr (qk_transform_encoding<B>) b_.transform_q_backward(dq, pos);
    if constexpr (qk_transform_encoding<A>) a_.transform_q_backward(dq, pos);
  }
  template <class T>
      void transform_k_backward(tensor_view<T> dk, std::span<const std::int64_t> pos) const
      requires(qk_transform_encoding<A> || qk_transform_encoding<B>) &&
      detail::qk_backward_ok<A>&& detail::qk_backward_ok<B> {
    if constexpr (qk_transform_encoding<B>) b_.transform_k_backward(dk, pos);
    if constexpr (qk_transform_encoding<A>) a_.transform_k_backward(dk, pos);
  }
  template <class T>
  void accumulate_add_gradient(std::int64_t p, std::span<const T> d_row, std::span<double> grad) const requires
      trainable_additive_encoding<A> || trainable_additive_encoding<B> {
    if constexpr (trainable_additive_encoding<A>) a_.accumulate_add_gradient(p, d_row, first_part(grad));
    if constexpr (trainable_additive_encoding<B>) b_.accumulate_add_gradient(p, d_row, second_part(grad));
  }
  void accumulate_bias_gradient(std::ptrdiff_t h, std::int64_t i, std::int64_t j, double d, std::span<double> grad)
      const requires trainable_score_bias_encoding<A> || trainable_score_bias_encoding<B> {
    if constexpr (trainable_score_bias_encoding<A>) a_.accumulate_bias_gradient(h, i, j, d, first_part(grad));
    if constexpr (trainable_score_bias_encoding<B>) b_.accumulate_bias_gradient(h, i, j, d, second_part(grad));
  }
  template <class T>
  void accumulate_relative_key_gradient(std::ptrdiff_t h, std::int64_t i, std::int64_t j, double w,
                                        std::span<const T> x, std::span<double> grad) const requires
      trainable_relative_kv_encoding<A> || trainable_relative_kv_encoding<B> {
    if constexpr (trainable_relative_kv_encoding<A>)
      a_.accumulate_relative_key_gradient(h, i, j, w, x, first_part(grad));
    else
      b_.accumulate_relative_key_gradient(h, i, j, w, x, second_part(grad));
  }
  template <class T>
  void accumulate_relative_value_gradient(std::ptrdiff_t h, std::int64_t i, std::int64_t j, double w,
                                          std::span<const T> x, std::span<double> grad) const requires
      trainable_relative_kv_encoding<A> || trainable_relative_kv_encoding<B> {
    if constexpr (trainable_relative_kv_encoding<A>)
      a_.accumulate_relative_value_gradient(h, i, j, w, x, first_part(grad));
    else
      b_.accumulate_relative_value_gradient(h, i, j, w, x, second_part(grad));
  }

  template <class T>
  void accumulate_relative_query_gradient(std::ptrdiff_t h, std::int64_t i, std::int64_t j, double w,
                                          std::span<const T> x, std::span<double> grad) const requires
      trainable_relative_query_encoding<A> || trainable_relative_query_encoding<B> {
    if constexpr (trainable_relative_query_encoding<A>)
      a_.accumulate_relative_query_gradient(h, i, j, w, x, first_part(grad));
    else
      b_.accumulate_relative_query_gradient(h, i, j, w, x, second_part(grad));
  }
  void accumulate_position_gradient(std::ptrdiff_t h, double p, double w, std::span<const double> q,
                                    std::span<double> grad) const requires trainable_contextual_position_encoding<A> ||
      trainable_contextual_position_encoding<B> {
    if constexpr (trainable_contextual_position_encoding<A>)
      a_.accumulate_position_gradient(h, p, w, q, first_part(grad));
    else
      b_.accumulate_position_gradient(h, p, w, q, second_part(grad));
  }

  // Softmax-scale correction of either part (DeepSeek YaRN, DeBERTa's 1 / sqrt(1 + cross terms))
  [[nodiscard]] double softmax_scale_multiplier() const requires has_softmax_scale_multiplier<A> ||
      has_softmax_scale_multiplier<B> {
    double m = 1;
    if constexpr (has_softmax_scale_multiplier<A>) m *= a_.softmax_scale_multiplier();
    if constexpr (has_softmax_scale_multiplier<B>) m *= b_.softmax_scale_multiplier();
    return m;
  }

 private:
  struct relative_query_tag {};
  struct contextual_tag {};
  // The part that models hook 5 (relative_query_tag) or hook 6 (contextual_tag): at most one does.
  template <class Tag>
  [[nodiscard]] const auto& part() const noexcept {
    constexpr bool in_a =
        std::is_same_v<Tag, relative_query_tag> ? relative_query_encoding<A> : contextual_position_encoding<A>;
    if constexpr (in_a)
      return a_;
    else
      return b_;
  }

  template <class X>
  static std::ptrdiff_t count_of(const X& x) {
    if constexpr (trainable_encoding<X>)
      return static_cast<std::ptrdiff_t>(x.parameter_count());
    else
      return 0;
  }
  [[nodiscard]] std::span<double> first_part(std::span<double> g) const {
    return g.first(static_cast<std::size_t>(count_of(a_)));
  }
  [[nodiscard]] std::span<double> second_part(std::span<double> g) const {
    return g.subspan(static_cast<std::size_t>(count_of(a_)));
  }

  A a_;
  B b_;
};

/// combine(rope, alibi): an encoder that applies both.
template <positional_encoding A, positional_encoding B>
[[nodiscard]] combined<A, B> combine(A a, B b) {
  return combined<A, B>(std::move(a), std::move(b));
}

}  // namespace posenc::inline v0
