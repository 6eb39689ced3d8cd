// posenc/core/element.hpp — element types the library stores, and the type it computes them in.
//
// Storage types are float, double, bfloat16 and float16. Arithmetic for the 16-bit types is done
// in float (compute_t<T>); float and double compute in themselves. load/store convert one element.
// Also the concepts that public signatures name their element types with (one_of, maybe_const,
// kv_element), so a signature reads `template <maybe_const<float> Q, kv_element K, ...>`.
#pragma once

#include <concepts>
#include <type_traits>

#include <posenc/core/half.hpp>
#include <posenc/core/q8_0.hpp>

namespace posenc::inline v0 {

/// T is one of the types U...
template <class T, class... U>
concept one_of = (std::same_as<T, U> || ...);

/// U is T or const T: the element type of a view that a function only reads, as in
/// `template <maybe_const<float> Q> void f(tensor_view<Q> q)` (q may be a view of float or of const float).
template <class U, class T>
concept maybe_const = std::same_as<std::remove_const_t<U>, T>;

/// The element types every kernel and encoder accepts (const or not).
template <class T>
concept storage_type = (one_of<std::remove_const_t<T>, float, double, bfloat16, float16>);

/// What K/V views of posenc::attention may hold (const or not): float, bfloat16, float16, or q8_0
/// blocks (core/q8_0.hpp; such a view's dim axis counts blocks).
template <class T>
concept kv_element = (one_of<std::remove_const_t<T>, float, bfloat16, float16, block_q8_0>);

/// float for the 16-bit types, the type itself otherwise.
template <storage_type T>
using compute_t = std::conditional_t<std::is_same_v<std::remove_const_t<T>, double>, double, float>;

/// C is the type storage T computes in (compute_t<T>): the angle type of the rotation kernels.
template <class C, class T>
concept compute_type_of = std::same_as<C, compute_t<T>>;

template <storage_type T>
[[nodiscard]] inline compute_t<T> load(T v) noexcept {
  return static_cast<compute_t<T>>(v);
}

template <storage_type T>
inline void store(T& dst, compute_t<T> v) noexcept {
  dst = T(v);
}

}  // namespace posenc::inline v0
