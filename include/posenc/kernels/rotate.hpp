// posenc/kernels/rotate.hpp — the public entry point of the rotation kernels.
//
// `kernels::rotate` rotates [tokens, heads, head_dim] rows by per-token cos/sin rows with the best
// kernel for this CPU. Engines call it on their own row ranges from their own thread pools; it
// never allocates or throws. See kernels/types.hpp for the memory contract.
#pragma once

#include <posenc/kernels/scalar/rotate.hpp>
#include <posenc/kernels/types.hpp>

namespace posenc::inline v0::kernels {

/// dst = R(angles) src for every head row (dst may equal src; partial overlap is not allowed).
/// C is compute_t<T>: float tables for float/bfloat16/float16 storage, double for double.
template <storage_type T, class C>
  requires std::same_as<C, compute_t<T>>
inline void rotate(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                   rotation dir = rotation::forward) noexcept {
  scalar::rotate(g, src, dst, angles, dir);
}

/// In-place convenience overload.
template <storage_type T, class C>
  requires std::same_as<C, compute_t<T>>
inline void rotate(const rope_geometry& g, head_rows<T> x, angle_rows<C> angles,
                   rotation dir = rotation::forward) noexcept {
  rotate(g, head_rows<const T>{x.data, x.tokens, x.heads, x.token_stride, x.head_stride}, x, angles, dir);
}

}  // namespace posenc::inline v0::kernels
