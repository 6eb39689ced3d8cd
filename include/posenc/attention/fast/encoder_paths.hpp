// posenc/attention/fast/encoder_paths.hpp — which path each part of an encoder takes inside the
// fused attention, and the per-call tables of the distance path.
//
// A combined<A, B> is taken apart (recursively) into its leaves:
//   - distance_bias_encoding leaves (ALiBi all modes, T5): one float table per head over the
//     distances the call can see, clipped to where the biases stop changing, built once per call;
//   - other score_bias_encoding leaves: the general path, bias(h, pos_q, pos_k) per visible score,
//     inlined (no virtual call), once per tile element;
//   - the distance_relative_kv_encoding leaf (Shaw, DeBERTa's c2p): its aK / aV rows over the
//     distances of the call, in float, for the per-row q . aK products and the per-distance
//     probability sums;
//   - the distance_relative_query_encoding leaf (DeBERTa's p2c): its aQ rows over the same
//     distances, for the per-key-tile k . aQ products gathered by distance.
//   - the contextual_position_table_encoding leaf (CoPE): its embedding rows, for the per-item
//     q . e(n) products, the gates and positions formed per key tile (key tiles last to first).
// qk transforms and the softmax multiplier are taken from the whole encoder (combined applies both).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>

#include <posenc/concepts.hpp>
#include <posenc/encoders/combined.hpp>

namespace posenc::inline v0::detail {

template <class E>
struct is_combined : std::false_type {};
template <class A, class B>
struct is_combined<combined<A, B>> : std::true_type {};

/// Calls f(leaf) for every non-combined part of e, first to last.
template <class E, class F>
void for_each_leaf(const E& e, F&& f) {
  if constexpr (is_combined<E>::value) {
    for_each_leaf(e.first(), f);
    for_each_leaf(e.second(), f);
  } else {
    f(e);
  }
}

/// The number of leaves L of E (its non-combined parts, through combined<>) for which pred<L>() holds.
template <class E, class P>
constexpr int count_leaves(P pred) {
  if constexpr (is_combined<E>::value)
    return count_leaves<std::remove_cvref_t<decltype(std::declval<const E&>().first())>>(pred) +
           count_leaves<std::remove_cvref_t<decltype(std::declval<const E&>().second())>>(pred);
  else
    return pred.template operator()<E>() ? 1 : 0;
}

template <class E>
constexpr bool any_leaf_distance_bias() {
  return count_leaves<E>([]<class L>() { return distance_bias_encoding<L>; }) > 0;
}

template <class E>
constexpr bool any_leaf_relative_kv() {
  return count_leaves<E>([]<class L>() { return relative_kv_encoding<L>; }) > 0;
}

template <class E>
constexpr bool all_relative_kv_by_distance() {
  return count_leaves<E>([]<class L>() { return relative_kv_encoding<L> && !distance_relative_kv_encoding<L>; }) == 0;
}

template <class E>
constexpr bool any_leaf_relative_query() {
  return count_leaves<E>([]<class L>() { return relative_query_encoding<L>; }) > 0;
}

template <class E>
constexpr bool all_relative_query_by_distance() {
  return count_leaves<E>(
             []<class L>() { return relative_query_encoding<L> && !distance_relative_query_encoding<L>; }) == 0;
}

/// What the plan needs to know of an encoder's hooks (fast/plan.hpp), and the distances
/// pos_k - pos_q the call can see.
struct hook_facts {
  bool distance_bias = false;  // distance_bias_encoding leaves, over the union of their ranges
  distance_range bias_range{};
  bool relative_kv = false;  // a distance_relative_kv_encoding leaf (Shaw): its range, a value term
  distance_range kv_range{};
  bool kv_value = false;
  bool relative_query = false;  // a distance_relative_query_encoding leaf (DeBERTa's p2c): its range
  distance_range query_range{};
  bool contextual = false;  // a contextual_position_table_encoding leaf (CoPE): its table rows, gates
  bool contextual_values = false, contextual_scaled = true;
  std::int64_t contextual_rows = 0;
  distance_range call_range{};
};

/// The hook facts of encoder e for a call whose distances span call_range.
template <class E>
[[nodiscard]] hook_facts hook_facts_of(const E& e, distance_range call_range) {
  hook_facts h;
  h.call_range = call_range;
  if constexpr (any_leaf_distance_bias<E>()) {
    h.distance_bias = true;
    h.bias_range = {INT64_MAX, INT64_MIN};
    for_each_leaf(e, [&](const auto& leaf) {
      if constexpr (distance_bias_encoding<std::remove_cvref_t<decltype(leaf)>>) {
        const distance_range x = leaf.bias_distance_range();
        h.bias_range = {std::min(h.bias_range.lo, x.lo), std::max(h.bias_range.hi, x.hi)};
      }
    });
  }
  if constexpr (any_leaf_relative_kv<E>()) {
    for_each_leaf(e, [&](const auto& leaf) {
      if constexpr (distance_relative_kv_encoding<std::remove_cvref_t<decltype(leaf)>>) {
        h.relative_kv = true;
        h.kv_range = leaf.relative_distance_range();
        h.kv_value = !leaf.relative_value_at_distance(0, 0).empty();
      }
    });
  }
  if constexpr (any_leaf_relative_query<E>()) {
    for_each_leaf(e, [&](const auto& leaf) {
      if constexpr (distance_relative_query_encoding<std::remove_cvref_t<decltype(leaf)>>) {
        h.relative_query = true;
        h.query_range = leaf.relative_distance_range();
      }
    });
  }
  if constexpr (contextual_position_encoding<E>) {
    h.contextual = true;
    h.contextual_values = e.gate_source() == contextual_gate_source::values;
    h.contextual_scaled = e.position_term_scaled();
    if constexpr (contextual_position_table_encoding<E>) h.contextual_rows = e.position_count();
  }
  return h;
}

}  // namespace posenc::inline v0::detail
