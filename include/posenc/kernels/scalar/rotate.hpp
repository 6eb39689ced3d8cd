// posenc/kernels/scalar/rotate.hpp — the portable reference rotation kernel.
//
// The documented oracle every SIMD kernel is tested against. Arithmetic is in compute_t<T>
// (float for float/bfloat16/float16 storage, double for double), one rounding per product and
// per sum, in exactly this order: a*c - b*s and a*s + b*c. SIMD kernels keep this order (no FMA)
// and are bit-exact with it. Each product passes through an empty asm barrier so that no compiler
// contracts it into an FMA (GCC does by default on AArch64 and with -mfma), whatever the flags.
#pragma once

#include <cstddef>

#include <posenc/core/assert.hpp>
#include <posenc/kernels/angle_math.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/kernels/types.hpp>

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace scalar {

using kernels::rounded;  // kernels/angle_math.hpp: a product the compiler may not fuse

/// Rotates pairs [k0, k1) of one head row's rotary slice, pair k by cos[k - k0] and sin[k - k0];
/// nothing else of the row is touched. rotate_row is this over every pair; the on-the-fly entries
/// use it for rows with more pairs than their per-token angle buffer holds.
template <storage_type T, class C>
inline void rotate_pairs(const rope_geometry& g, const T* src, T* dst, const C* cos, const C* sin, rotation dir, int k0,
                         int k1) noexcept {
  using F = compute_t<T>;
  const int P = g.pairs();
  const int step = g.layout == pairing::interleaved ? 2 : 1;
  const int second = g.layout == pairing::interleaved ? 1 : P;
  const T* s = src + g.offset;
  T* d = dst + g.offset;
  for (int k = k0; k < k1; ++k) {
    const int i0 = k * step;
    const int i1 = i0 + second;
    const F a = posenc::load(s[i0]);  // the element conversions of core/element.hpp, not the scalar ops
    const F b = posenc::load(s[i1]);
    const F c = static_cast<F>(cos[k - k0]);
    const F sn = dir == rotation::forward ? static_cast<F>(sin[k - k0]) : -static_cast<F>(sin[k - k0]);
    const F ac = rounded(a * c), bs = rounded(b * sn), as = rounded(a * sn), bc = rounded(b * c);
    posenc::store(d[i0], ac - bs);
    posenc::store(d[i1], as + bc);
  }
}

/// Copies the elements outside the rotary slice (out-of-place rotation; nothing when src == dst).
template <storage_type T>
inline void copy_pass_through(const rope_geometry& g, const T* src, T* dst) noexcept {
  if (src == dst) return;
  for (int i = 0; i < g.offset; ++i) dst[i] = src[i];
  for (int i = g.offset + g.rotary_dim; i < g.head_dim; ++i) dst[i] = src[i];
}

/// Rotates one head row: dst = R(angles) src over the rotary slice; when dst != src the elements
/// outside the slice are copied. src and dst must be equal or not overlap. `stream` is a hint
/// (non-temporal stores) that the scalar kernel ignores.
template <storage_type T, class C>
inline void rotate_row(const rope_geometry& g, const T* src, T* dst, const C* cos, const C* sin, rotation dir,
                       bool stream = false) noexcept {
  static_cast<void>(stream);
  scalar::rotate_pairs(g, src, dst, cos, sin, dir, 0, g.pairs());
  scalar::copy_pass_through(g, src, dst);
}

/// Rotates rows [row_begin, row_end) of the token-major row order (row r = token r / heads, head
/// r % heads). Token t uses angle row `angles.index(t)`.
template <storage_type T, class C>
inline void rotate_rows(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                        rotation dir, std::ptrdiff_t row_begin, std::ptrdiff_t row_end, bool stream = false) noexcept {
  if (src.heads <= 0) return;
  for (std::ptrdiff_t r = row_begin; r < row_end; ++r) {
    const std::ptrdiff_t t = r / src.heads, h = r % src.heads, a = angles.index(t);
    scalar::rotate_row(g, src.row(t, h), dst.row(t, h), angles.cos + a, angles.sin + a, dir, stream);
  }
}

/// Rotates every head row of `src` into `dst` (same shape; may be the same memory). Token t of
/// every head uses angle row `angles.index(t)`.
template <storage_type T, class C>
inline void rotate(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                   rotation dir) noexcept {
  POSENC_ASSERT(g.rotary_dim >= 2 && g.rotary_dim % 2 == 0 && g.offset >= 0 && g.offset + g.rotary_dim <= g.head_dim);
  POSENC_ASSERT(src.tokens == dst.tokens && src.heads == dst.heads);
  scalar::rotate_rows(g, src, dst, angles, dir, 0, src.tokens * src.heads);
}

/// n rows of one token in place (rotary slice of row i at x + i * stride, P pairs): the decode
/// entry's oracle (kernels::rotate_token).
template <storage_type T, class C>
inline void rotate_token_rows(pairing layout, rotation dir, int P, T* x, std::ptrdiff_t n, std::ptrdiff_t stride,
                              const C* cos, const C* sin) noexcept {
  const rope_geometry g{2 * P, 2 * P, 0, layout};
  for (std::ptrdiff_t i = 0; i < n; ++i) rotate_pairs(g, x + i * stride, x + i * stride, cos, sin, dir, 0, P);
}

}  // namespace scalar
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
