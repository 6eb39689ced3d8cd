// posenc/rope/rotate_view.hpp — drives the rotation kernels over a strided tensor_view, chunk by chunk.
//
// Tokens are processed in chunks whose cos/sin rows fit a fixed stack buffer (kRowBuffer values
// per table), so a call allocates nothing unless one row alone is larger (pairs > kRowBuffer, i.e.
// R > 4096). A caller-supplied `fill` writes the rows of each chunk (exact angles, HF fp32 angles,
// xPos factors, angle differences, ...). Views whose dim axis is contiguous go straight to
// kernels::rotate with head_rows; other views are gathered row by row into a small buffer.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <posenc/core/assert.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/kernels/rotate.hpp>
#include <posenc/kernels/types.hpp>

namespace posenc::inline v0::detail {

/// The checks of every public rotation entry (O(1), every build): one position per (batch, token)
/// and rows of head_dim elements, else shape_error naming `positions` / `x.dim` (a wrong size would
/// read past the positions or the rows).
template <class T>
void require_rotation_sizes(const tensor_view<T>& x, std::size_t positions, std::ptrdiff_t head_dim,
                            std::string_view positions_name = "positions") {
  detail::require_shape(static_cast<std::ptrdiff_t>(positions) == x.batch() * x.tokens(), positions_name, positions,
                        "x.batch * x.tokens (one position per token)");
  detail::require_shape(x.dim() == head_dim || x.empty(), "x.dim", x.dim(), "the encoder's head_dim");
}

/// cos/sin values per chunk held on the stack (per table): 2 x 8 KiB for float, 2 x 16 KiB for double.
inline constexpr std::ptrdiff_t kRowBuffer = 2048;
/// Head rows up to this many elements are gathered on the stack when the dim axis is strided.
inline constexpr std::ptrdiff_t kGatherBuffer = 1024;

/// A buffer of n elements: on the stack when n <= N, else on the heap (documented slow path).
template <class E, std::ptrdiff_t N>
class scratch {
 public:
  explicit scratch(std::ptrdiff_t n) {
    if (n > N) {
      heap_.resize(static_cast<std::size_t>(n));
      p_ = heap_.data();
    }
  }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  [[nodiscard]] E* data() noexcept { return p_; }

 private:
  std::array<E, static_cast<std::size_t>(N)> stack_;
  std::vector<E> heap_;
  E* p_ = stack_.data();
};

/// Rotates every head row of `x` ([batch, token, head, head_dim]) in place. Token (b, t) is item
/// i = b * tokens + t; `fill(i0, n, cos, sin)` must write rows for items [i0, i0 + n) (row j at
/// cos + j * pairs, `pairs` values each). `dir` is passed to the kernel unchanged.
template <storage_type T, class Fill>
void rotate_view(const kernels::rope_geometry& g, tensor_view<T> x, int pairs, Fill&& fill,
                 kernels::rotation dir = kernels::rotation::forward) {
  using C = compute_t<T>;
  const std::ptrdiff_t B = x.batch(), Tn = x.tokens(), H = x.heads();
  if (B == 0 || Tn == 0 || H == 0 || pairs == 0) return;
  POSENC_ASSERT(x.dim() == g.head_dim && pairs == g.pairs());
  const std::ptrdiff_t P = pairs;
  const std::ptrdiff_t chunk = std::max<std::ptrdiff_t>(1, kRowBuffer / P);
  scratch<C, kRowBuffer> cos(chunk * P), sin(chunk * P);
  const bool contiguous = x.dim_contiguous();
  scratch<T, kGatherBuffer> row(contiguous ? 0 : g.head_dim);
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    for (std::ptrdiff_t t0 = 0; t0 < Tn; t0 += chunk) {
      const std::ptrdiff_t n = std::min(chunk, Tn - t0);
      fill(b * Tn + t0, n, cos.data(), sin.data());
      const kernels::angle_rows<C> angles{cos.data(), sin.data(), P, nullptr};
      if (contiguous) {
        kernels::head_rows<T> rows{x.row(b, t0, 0), n, H, x.stride(axis::token), x.stride(axis::head)};
        kernels::rotate(g, rows, angles, dir);
        continue;
      }
      for (std::ptrdiff_t t = 0; t < n; ++t) {
        const kernels::angle_rows<C> one{cos.data() + t * P, sin.data() + t * P, P, nullptr};
        for (std::ptrdiff_t h = 0; h < H; ++h) {
          T* r = x.row(b, t0 + t, h);
          const std::ptrdiff_t s = x.stride(axis::dim);
          for (std::ptrdiff_t d = 0; d < g.head_dim; ++d) row.data()[d] = r[d * s];
          kernels::rotate(g, kernels::head_rows<T>{row.data(), 1, 1, 0, 0}, one, dir);
          for (std::ptrdiff_t d = 0; d < g.head_dim; ++d) r[d * s] = row.data()[d];
        }
      }
    }
  }
}

}  // namespace posenc::inline v0::detail
