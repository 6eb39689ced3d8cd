// posenc/attention/eigen_interop.hpp — zero-copy bridges between Eigen matrices and tensor_view.
//
// A row-major Eigen matrix [tokens, heads * dim] (the output of a projection x W^T) is a
// [1, tokens, heads, dim] view; one head of a view is an Eigen::Map [tokens, dim] with the view's
// strides. Nothing is copied or owned. Together with attention_layer.hpp the only place that
// includes Eigen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <Eigen/Core>

#include <posenc/core/checked.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0 {

/// Row-major dynamic Eigen matrix: one token per row (the layout the attention layer uses).
template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The rows of `m` [tokens, heads * dim] (row-major, any outer stride) as a view [1, tokens, heads,
/// dim]. Throws shape_error unless m.cols() == heads * dim.
template <class Derived>
requires(static_cast<bool>(std::remove_cvref_t<Derived>::IsRowMajor))
    [[nodiscard]] auto as_heads(Derived&& m, std::ptrdiff_t heads, std::ptrdiff_t dim) {
  using scalar = std::remove_pointer_t<decltype(m.data())>;
  detail::require_shape(heads >= 1 && dim >= 1 &&
                            static_cast<std::int64_t>(m.cols()) ==
                                detail::checked_product<shape_error>("matrix.cols", {{"heads", heads}, {"dim", dim}}),
                        "matrix.cols", static_cast<std::ptrdiff_t>(m.cols()),
                        "heads * dim = " + std::to_string(heads) + " * " + std::to_string(dim));
  const auto rows = static_cast<std::ptrdiff_t>(m.rows());
  const auto ld = static_cast<std::ptrdiff_t>(m.outerStride());
  return tensor_view<scalar>::strided(m.data(), {1, rows, heads, dim}, {rows * ld, ld, dim, 1});
}

/// Head h of sequence b of a view as an Eigen::Map [tokens, dim] carrying the view's strides.
template <class T>
[[nodiscard]] auto head_map(tensor_view<T> v, std::ptrdiff_t b, std::ptrdiff_t h) noexcept {
  using scalar = std::remove_const_t<T>;
  using mat = std::conditional_t<std::is_const_v<T>, const row_matrix<scalar>, row_matrix<scalar>>;
  using stride = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
  return Eigen::Map<mat, Eigen::Unaligned, stride>(v.data() + b * v.stride(axis::batch) + h * v.stride(axis::head),
                                                   v.tokens(), v.dim(),
                                                   stride(v.stride(axis::token), v.stride(axis::dim)));
}

}  // namespace posenc::inline v0
