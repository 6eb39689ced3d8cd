// posenc/kernels/types.hpp — the vocabulary shared by every rotation kernel (scalar and SIMD).
//
// A kernel knows memory and arithmetic only: which elements of a head row form a pair, where the
// cos/sin of each token are, and where to write. It knows nothing about frequency schedules; the
// magnitude M and the direction are already folded into the cos/sin values it is given.
//
//   head row of D elements, rotary slice [o, o + R), P = R / 2 pairs, tail passes through:
//
//     interleaved (GPT-J, ggml NORMAL):  | o: x0 x1 | x2 x3 | ... | x(R-2) x(R-1) | tail...
//                                          pair 0    pair 1         pair P-1
//     half_split (NeoX, HF rotate_half): | o: x0 x1 ... x(P-1) | xP ... x(R-1) | tail...
//                                          pair k = (x[k], x[k + P])
//
//   x'[i0] = x[i0] * cos_k - x[i1] * sin_k,   x'[i1] = x[i0] * sin_k + x[i1] * cos_k
#pragma once

#include <cstddef>
#include <cstdint>

#include <posenc/core/element.hpp>
#include <posenc/core/pairing.hpp>
#include <posenc/core/platform.hpp>

namespace posenc::inline v0::kernels {

/// Shape of one head row. Preconditions (checked by POSENC_ASSERT): rotary_dim even and >= 2,
/// offset >= 0, offset + rotary_dim <= head_dim.
struct rope_geometry {
  int head_dim = 0;    ///< D: elements per head row
  int rotary_dim = 0;  ///< R: rotated elements
  int offset = 0;      ///< o: first rotated element
  pairing layout = pairing::half_split;
  [[nodiscard]] POSENC_FORCE_INLINE constexpr int pairs() const noexcept { return rotary_dim / 2; }
};

/// [tokens, heads, head_dim] rows with element strides; elements of a row are contiguous.
template <class T>
struct head_rows {
  T* data = nullptr;
  std::ptrdiff_t tokens = 0;
  std::ptrdiff_t heads = 0;
  std::ptrdiff_t token_stride = 0;  ///< elements between token t and t + 1
  std::ptrdiff_t head_stride = 0;   ///< elements between head h and h + 1
  [[nodiscard]] POSENC_FORCE_INLINE T* row(std::ptrdiff_t t, std::ptrdiff_t h) const noexcept {
    return data + t * token_stride + h * head_stride;
  }
};

/// Per-token cos and sin (P values each, M already applied). Token t reads row `t`, or row
/// `row_of[t]` when a gather index is given (a table indexed by position).
template <class C>
struct angle_rows {
  const C* cos = nullptr;
  const C* sin = nullptr;
  std::ptrdiff_t stride = 0;             ///< elements between consecutive rows
  const std::int64_t* row_of = nullptr;  ///< optional: token t uses row row_of[t]
  [[nodiscard]] POSENC_FORCE_INLINE std::ptrdiff_t index(std::ptrdiff_t t) const noexcept {
    return (row_of ? static_cast<std::ptrdiff_t>(row_of[t]) : t) * stride;
  }
};

/// forward: rotate by +angle; inverse: rotate by -angle (sin negated), undoing forward when M = 1.
enum class rotation : unsigned char { forward, inverse };

/// How the SIMD kernels evaluate a*c - b*s and a*s + b*c. exact (the default): two rounded products
/// and a rounded sum, bit-exact with kernels::scalar on every ISA and compiler. fused: one product
/// rounded, the other folded into an FMA (a*c - round(b*s)); per element within
/// 3 * 2^-24 * (|a*c| + |b*s|) of exact in float (2^-53 in double), plus one rounding of a 16-bit
/// storage type. The scalar kernel is always exact.
enum class arithmetic : unsigned char { exact, fused };

}  // namespace posenc::inline v0::kernels
