// posenc/core/tensor_view.hpp — a non-owning strided 4-D view [batch, token, head, dim].
//
// The view is how encoders and the attention read q, k, v and outputs from any engine's buffers
// without a copy: pointer + four extents + four strides in elements. Named factories cover the
// common orders ([B,T,H,D] as PyTorch/vLLM keep it, [B,H,T,D] as HF attention does) and ggml's byte
// strides. Kernels take raw pointers (kernels/rotate.hpp); this view never owns or allocates.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include <posenc/core/assert.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// Axis names in canonical order, outermost to innermost.
enum class axis : int { batch = 0, token = 1, head = 2, dim = 3 };

/// Non-owning strided view over [batch, token, head, dim]. `T` may be const-qualified.
/// Copying a view copies the pointer, never the data. Strides are in elements and may be negative.
/// A view of const elements may overlap itself (stride 0 broadcasts); a WRITABLE view may not:
/// every element must be its own memory, because encoders and the attention write through it in
/// place (a head stride of 0 would rotate one row once per head). The factories check the sizes
/// too: the element count and every offset must fit ptrdiff_t.
template <class T>
class tensor_view {
 public:
  using element_type = T;
  using extents_type = std::array<std::ptrdiff_t, 4>;

  tensor_view() = default;

  /// Most general form: explicit extents and element strides, in [batch, token, head, dim] order.
  /// Throws shape_error for negative extents, an element count or offset that does not fit
  /// ptrdiff_t ("tensor_view.size" / "tensor_view.strides"), and, for a writable view, strides
  /// under which two elements share memory ("tensor_view.strides": checked as nesting, i.e. each
  /// axis of extent > 1, taken by increasing |stride|, steps past every offset the smaller axes reach).
  static tensor_view strided(T* data, extents_type extents, extents_type strides) {
    static constexpr const char* names[4] = {"tensor_view.batch", "tensor_view.tokens", "tensor_view.heads",
                                             "tensor_view.dim"};
    for (int a = 0; a < 4; ++a) detail::require_shape(extents[a] >= 0, names[a], extents[a], ">= 0");
    const std::int64_t n = detail::checked_product<shape_error>(
        "tensor_view.size",
        {{"batch", extents[0]}, {"tokens", extents[1]}, {"heads", extents[2]}, {"dim", extents[3]}});
    detail::require_shape(data != nullptr || n == 0, "tensor_view.data", "null",
                          "a non-null pointer when the view is not empty");
    if (n > 0) check_strides(extents, strides);
    return tensor_view(data, extents, strides);
  }

  /// Contiguous [batch, token, head, dim] (PyTorch `(B, T, H, D)`, vLLM, ggml's ne[0..3] reversed).
  static tensor_view bthd(T* data, std::ptrdiff_t b, std::ptrdiff_t t, std::ptrdiff_t h, std::ptrdiff_t d) {
    const auto hd = contiguous_stride({{"heads", h}, {"dim", d}}),
               thd = contiguous_stride({{"tokens", t}, {"heads", h}, {"dim", d}});
    return strided(data, {b, t, h, d}, {thd, hd, d, 1});
  }

  /// Contiguous [batch, head, token, dim] (HF attention after transpose(1, 2), CTranslate2).
  static tensor_view bhtd(T* data, std::ptrdiff_t b, std::ptrdiff_t h, std::ptrdiff_t t, std::ptrdiff_t d) {
    const auto td = contiguous_stride({{"tokens", t}, {"dim", d}}),
               htd = contiguous_stride({{"heads", h}, {"tokens", t}, {"dim", d}});
    return strided(data, {b, t, h, d}, {htd, d, td, 1});
  }

  /// Contiguous [token, head, dim] with batch 1 (a flat token list, as vLLM passes it).
  static tensor_view thd(T* data, std::ptrdiff_t t, std::ptrdiff_t h, std::ptrdiff_t d) {
    return bthd(data, 1, t, h, d);
  }

  /// ggml-style byte strides (`nb[]`), given in [batch, token, head, dim] order. Each stride must be
  /// a multiple of sizeof(T); otherwise shape_error.
  static tensor_view from_byte_strides(T* data, extents_type extents, extents_type byte_strides) {
    extents_type s{};
    constexpr auto es = static_cast<std::ptrdiff_t>(sizeof(T));
    for (int a = 0; a < 4; ++a) {
      detail::require_shape(byte_strides[a] % es == 0, "tensor_view.byte_stride[" + std::to_string(a) + "]",
                            byte_strides[a], "a multiple of the element size " + std::to_string(es));
      s[a] = byte_strides[a] / es;
    }
    return strided(data, extents, s);
  }

  /// A view of const elements over the same memory.
  operator tensor_view<const T>() const noexcept  // NOLINT(google-explicit-constructor)
      requires(!std::is_const_v<T>) {
    return tensor_view<const T>::unchecked(data_, extents_, strides_);
  }

  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::ptrdiff_t extent(axis a) const noexcept { return extents_[static_cast<int>(a)]; }
  [[nodiscard]] std::ptrdiff_t stride(axis a) const noexcept { return strides_[static_cast<int>(a)]; }
  [[nodiscard]] const extents_type& extents() const noexcept { return extents_; }
  [[nodiscard]] const extents_type& strides() const noexcept { return strides_; }
  [[nodiscard]] std::ptrdiff_t batch() const noexcept { return extents_[0]; }
  [[nodiscard]] std::ptrdiff_t tokens() const noexcept { return extents_[1]; }
  [[nodiscard]] std::ptrdiff_t heads() const noexcept { return extents_[2]; }
  [[nodiscard]] std::ptrdiff_t dim() const noexcept { return extents_[3]; }
  [[nodiscard]] std::ptrdiff_t size() const noexcept { return size_of(extents_); }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  /// True when the dim axis is unit-stride (the layout SIMD kernels want).
  [[nodiscard]] bool dim_contiguous() const noexcept { return strides_[3] == 1; }

  /// Element (b, t, h, d). Bounds are checked by POSENC_ASSERT only.
  [[nodiscard]] T& operator()(std::ptrdiff_t b, std::ptrdiff_t t, std::ptrdiff_t h, std::ptrdiff_t d) const noexcept {
    POSENC_ASSERT(b >= 0 && b < extents_[0] && t >= 0 && t < extents_[1]);
    POSENC_ASSERT(h >= 0 && h < extents_[2] && d >= 0 && d < extents_[3]);
    return data_[b * strides_[0] + t * strides_[1] + h * strides_[2] + d * strides_[3]];
  }

  /// Pointer to element (b, t, h, 0): the start of one head row.
  [[nodiscard]] T* row(std::ptrdiff_t b, std::ptrdiff_t t, std::ptrdiff_t h) const noexcept {
    POSENC_ASSERT(b >= 0 && b < extents_[0] && t >= 0 && t < extents_[1] && h >= 0 && h < extents_[2]);
    return data_ + b * strides_[0] + t * strides_[1] + h * strides_[2];
  }

  /// The sub-view of tokens [first, first + count) (all batches and heads).
  [[nodiscard]] tensor_view token_slice(std::ptrdiff_t first, std::ptrdiff_t count) const noexcept {
    POSENC_ASSERT(first >= 0 && count >= 0 && first + count <= extents_[1]);
    extents_type e = extents_;
    e[1] = count;
    return unchecked(count == 0 ? data_ : data_ + first * strides_[1], e, strides_);
  }

  /// The sub-view of heads [first, first + count).
  [[nodiscard]] tensor_view head_slice(std::ptrdiff_t first, std::ptrdiff_t count) const noexcept {
    POSENC_ASSERT(first >= 0 && count >= 0 && first + count <= extents_[2]);
    extents_type e = extents_;
    e[2] = count;
    return unchecked(count == 0 ? data_ : data_ + first * strides_[2], e, strides_);
  }

  /// The sub-view of elements [first, first + count) of every head row (e.g. DeepSeek's rope slice).
  [[nodiscard]] tensor_view dim_slice(std::ptrdiff_t first, std::ptrdiff_t count) const noexcept {
    POSENC_ASSERT(first >= 0 && count >= 0 && first + count <= extents_[3]);
    extents_type e = extents_;
    e[3] = count;
    return unchecked(count == 0 ? data_ : data_ + first * strides_[3], e, strides_);
  }

  /// Builds a view without validation (used internally by slicing and conversion).
  static tensor_view unchecked(T* data, extents_type extents, extents_type strides) noexcept {
    return tensor_view(data, extents, strides);
  }

 private:
  tensor_view(T* data, extents_type e, extents_type s) noexcept : data_(data), extents_(e), strides_(s) {}
  static std::ptrdiff_t size_of(const extents_type& e) noexcept { return e[0] * e[1] * e[2] * e[3]; }

  // A stride of a contiguous factory: the product of the inner extents, checked (negative extents
  // are reported by strided() with their own name, so they count as 0 here).
  static std::ptrdiff_t contiguous_stride(std::initializer_list<detail::named_size> inner) {
    for (const auto& f : inner)
      if (f.value < 0) return 0;
    return detail::checked_product<shape_error>("tensor_view.size", inner);
  }

  // Offsets reachable from data() must fit ptrdiff_t; a writable view must not overlap itself.
  static void check_strides(const extents_type& e, const extents_type& s) {
    std::array<int, 4> order{0, 1, 2, 3};
    const auto mag = [&](int a) { return s[a] < 0 ? detail::distance_magnitude(0, s[a]) : std::uint64_t(s[a]); };
    std::sort(order.begin(), order.end(), [&](int a, int b) { return mag(a) < mag(b); });
    constexpr auto lim = static_cast<std::uint64_t>(std::numeric_limits<std::ptrdiff_t>::max());
    std::uint64_t reach = 0;  // the largest |offset| the axes seen so far reach
    for (const int a : order) {
      if (e[a] <= 1) continue;
      const std::uint64_t m = mag(a), steps = static_cast<std::uint64_t>(e[a] - 1);
      if constexpr (!std::is_const_v<T>)
        detail::require_shape(
            m > reach, "tensor_view.strides",
            std::to_string(s[0]) + "," + std::to_string(s[1]) + "," + std::to_string(s[2]) + "," + std::to_string(s[3]),
            "strides under which no two elements of a writable view share memory (a stride of 0 "
            "or overlapping axes is allowed for views of const only)");
      detail::require_shape(m == 0 || (steps <= lim / m && reach <= lim - steps * m), "tensor_view.strides",
                            std::to_string(s[a]) + " on axis " + std::to_string(a),
                            "offsets that fit ptrdiff_t (extent - 1) * |stride| summed over the axes");
      reach += steps * m;
    }
  }

  T* data_ = nullptr;
  extents_type extents_{};
  extents_type strides_{};
};

/// True when the memory spans of two non-empty views intersect (the span of a view runs from its
/// lowest to its highest element; interleaved views that share no element may still report true).
template <class A, class B>
[[nodiscard]] bool overlaps(const tensor_view<A>& a, const tensor_view<B>& b) noexcept {
  if (a.empty() || b.empty()) return false;
  const auto span = [](const auto& v, std::size_t elem) {
    auto lo = reinterpret_cast<std::uintptr_t>(v.data()), hi = lo;
    for (int ax = 0; ax < 4; ++ax) {
      // The factories checked that (extent - 1) * |stride| summed over the axes fits ptrdiff_t.
      const std::ptrdiff_t reach = (v.extents()[ax] - 1) * v.strides()[ax];
      const auto bytes = static_cast<std::uintptr_t>(reach < 0 ? -reach : reach) * elem;
      (reach < 0 ? lo : hi) += reach < 0 ? std::uintptr_t(0) - bytes : bytes;
    }
    return std::pair{lo, hi + elem};
  };
  const auto [alo, ahi] = span(a, sizeof(A));
  const auto [blo, bhi] = span(b, sizeof(B));
  return alo < bhi && blo < ahi;
}

/// Throws shape_error unless `a` and `b` have the same extent along `ax`; `what` names the check.
template <class A, class B>
void require_same_extent(const tensor_view<A>& a, const tensor_view<B>& b, axis ax, const char* what) {
  detail::require_shape(a.extent(ax) == b.extent(ax), what,
                        std::to_string(a.extent(ax)) + " vs " + std::to_string(b.extent(ax)), "equal extents");
}

}  // namespace posenc::inline v0
