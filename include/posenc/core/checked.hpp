// posenc/core/checked.hpp — integer arithmetic that cannot overflow silently: checked size
// products and sums (which throw naming the parameter) and exact position differences.
//
// Every size a caller can pass (tokens, heads, capacity, table rows) and every position (any int64,
// docs/spec.md §7.5) goes through these before it reaches an allocation, an index or a comparison:
// - checked_product / checked_sum: the exact result, or config_error / shape_error naming the
//   parameter, the factors and the limit (by default the largest element count a std::vector of
//   that element can hold); never a wrapped value.
// - saturating_difference: a - b clamped to [INT64_MIN, INT64_MAX]. Clamping is monotone, so every
//   comparison of the difference against an int64 bound (causal, windows, clipping, buckets that
//   saturate) gives the same answer as on the true difference.
// - difference_as_double: a - b correctly rounded to double (the true difference, not a wrapped one).
// - in_range: first <= p < first + count without computing p - first in a type that can overflow.
// Not here: floating-point overflow (configs are validated for finiteness where they are read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include <posenc/core/errors.hpp>

namespace posenc::inline v0::detail {

/// One named factor or term of a checked size computation.
struct named_size {
  std::string_view name;
  std::int64_t value;
};

/// The largest element count of a std::vector<T> we allow (PTRDIFF_MAX / sizeof(T)).
template <class T>
inline constexpr std::int64_t max_elements = std::numeric_limits<std::ptrdiff_t>::max() / sizeof(T);

inline std::string describe_terms(std::initializer_list<named_size> terms, const char* op) {
  std::string names, values;
  for (const auto& t : terms) {
    if (!names.empty()) {
      names.append(op);
      values.append(op);
    }
    names.append(t.name);
    values.append(std::to_string(t.value));
  }
  return names + " = " + values;
}

/// The product of non-negative `factors`, or Error(parameter, ...) when it exceeds `limit` (or
/// int64). A negative factor is a caller bug here: it is reported the same way.
template <class Error = config_error>
[[nodiscard]] std::int64_t checked_product(std::string_view parameter, std::initializer_list<named_size> factors,
                                           std::int64_t limit = std::numeric_limits<std::int64_t>::max()) {
  std::int64_t r = 1;
  bool ok = true;
  for (const auto& f : factors) {
    if (f.value < 0) ok = false;
    if (!ok) break;
    if (f.value == 0) {
      r = 0;
      continue;
    }
    if (r > limit / f.value)
      ok = false;  // r * f.value > limit, tested without forming it
    else
      r *= f.value;
  }
  // A zero factor makes the product 0 whatever the others are, but the others must still be >= 0.
  if (ok) return r;
  throw Error(parameter, describe_terms(factors, " * ") + " is negative or exceeds " + std::to_string(limit) +
                             " (the product must be a valid element count)");
}

/// The sum of non-negative `terms`, or Error(parameter, ...) when it exceeds `limit`.
template <class Error = config_error>
[[nodiscard]] std::int64_t checked_sum(std::string_view parameter, std::initializer_list<named_size> terms,
                                       std::int64_t limit = std::numeric_limits<std::int64_t>::max()) {
  std::int64_t r = 0;
  bool ok = true;
  for (const auto& t : terms) {
    if (t.value < 0 || t.value > limit - r) {
      ok = false;
      break;
    }
    r += t.value;
  }
  if (ok) return r;
  throw Error(parameter, describe_terms(terms, " + ") + " is negative or exceeds " + std::to_string(limit));
}

/// a - b clamped to [INT64_MIN, INT64_MAX]. Compare it with any int64 bound exactly as the true
/// difference would compare (clamping is monotone and the bound lies inside the range).
[[nodiscard]] constexpr std::int64_t saturating_difference(std::int64_t a, std::int64_t b) noexcept {
  constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  if (b < 0 && a > hi + b) return hi;  // a - b > hi
  if (b > 0 && a < lo + b) return lo;  // a - b < lo
  return a - b;
}

/// |a - b| exactly, as an unsigned 64-bit number (it always fits).
[[nodiscard]] constexpr std::uint64_t distance_magnitude(std::int64_t a, std::int64_t b) noexcept {
  return a >= b ? static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b)
                : static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
}

/// a - b correctly rounded to double (one rounding of the true difference, which may exceed int64).
[[nodiscard]] constexpr double difference_as_double(std::int64_t a, std::int64_t b) noexcept {
  const auto m = static_cast<double>(distance_magnitude(a, b));
  return a >= b ? m : -m;
}

/// first <= p < first + count (count >= 0), with no intermediate that can overflow.
[[nodiscard]] constexpr bool in_range(std::int64_t p, std::int64_t first, std::int64_t count) noexcept {
  return p >= first && distance_magnitude(p, first) < static_cast<std::uint64_t>(count);
}

}  // namespace posenc::inline v0::detail
