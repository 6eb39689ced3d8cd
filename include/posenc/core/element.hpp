// posenc/core/element.hpp — element types the library stores, and the type it computes them in.
//
// Storage types are float, double, bfloat16 and float16. Arithmetic for the 16-bit types is done
// in float (compute_t<T>); float and double compute in themselves. load/store convert one element.
#pragma once

#include <concepts>
#include <type_traits>

#include <posenc/core/half.hpp>

namespace posenc::inline v0 {

/// The element types every kernel and encoder accepts.
template <class T>
concept storage_type = std::same_as < std::remove_const_t<T>,
float > || std::same_as<std::remove_const_t<T>, double> || std::same_as<std::remove_const_t<T>, bfloat16> ||
    std::same_as<std::remove_const_t<T>, float16>;

/// float for the 16-bit types, the type itself otherwise.
template <storage_type T>
using compute_t = std::conditional_t<std::is_same_v<std::remove_const_t<T>, double>, double, float>;

template <storage_type T>
[[nodiscard]] inline compute_t<T> load(T v) noexcept {
  return static_cast<compute_t<T>>(v);
}

template <storage_type T>
inline void store(T& dst, compute_t<T> v) noexcept {
  dst = T(v);
}

}  // namespace posenc::inline v0
