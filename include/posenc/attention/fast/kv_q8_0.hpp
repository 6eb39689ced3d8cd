// posenc/attention/fast/kv_q8_0.hpp — what the attention driver needs to take q8_0 K/V views beside
// the element types: a q8_0 view is a tensor_view<const block_q8_0> whose dim axis counts BLOCKS
// (head dim / 32; strides in blocks), so the driver asks these helpers for the head dim in values,
// the bytes of a row, one value by index, and the shape-only view the shared checks read.
// The tile kernels that read such rows are in fast/q8_0-inl.hpp; the format in core/q8_0.hpp.
#pragma once

#include <cstddef>
#include <type_traits>

#include <posenc/core/half.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0::detail {

template <class T>
inline constexpr bool is_q8_0 = std::is_same_v<std::remove_const_t<T>, block_q8_0>;

/// Values per stored element: 32 for q8_0 blocks, 1 otherwise.
template <class T>
inline constexpr std::ptrdiff_t values_per_element = is_q8_0<T> ? block_q8_0::values : 1;

/// The head dim of a K/V view in values.
template <class T>
[[nodiscard]] std::ptrdiff_t kv_dim(const tensor_view<T>& x) noexcept {
  return x.dim() * values_per_element<T>;
}

/// Bytes of n values of one row (n % 32 == 0 for q8_0).
template <class T>
[[nodiscard]] constexpr std::ptrdiff_t kv_row_bytes(std::ptrdiff_t n) noexcept {
  return n / values_per_element<T> * static_cast<std::ptrdiff_t>(sizeof(T));
}

/// Value d of the row at `row` whose elements are `ds` apart (blocks for q8_0), as float.
template <class T>
[[nodiscard]] float kv_value(const T* row, std::ptrdiff_t d, std::ptrdiff_t ds) noexcept {
  if constexpr (is_q8_0<T>)
    return row[d / block_q8_0::values * ds].value(static_cast<int>(d % block_q8_0::values));
  else
    return static_cast<float>(row[d * ds]);
}

/// True when one of the n values of a q8_0 row (n % 32 == 0) is Inf or NaN: a block scale is.
[[nodiscard]] inline bool any_nonfinite(const block_q8_0* p, std::ptrdiff_t n) noexcept {
  bool r = false;
  for (std::ptrdiff_t b = 0; b < n / block_q8_0::values; ++b) r = r || p[b].nonfinite();
  return r;
}

/// The view itself, or for q8_0 a data-less float view of its extents in values (the shape checks
/// shared with sdpa read extents only; overlap checks use the real view).
template <class T>
[[nodiscard]] auto shape_view(const tensor_view<const T>& x) noexcept {
  if constexpr (is_q8_0<T>) {
    auto e = x.extents();
    e[3] *= block_q8_0::values;
    return tensor_view<const float>::unchecked(nullptr, e, x.strides());
  } else {
    return x;
  }
}

}  // namespace posenc::inline v0::detail
