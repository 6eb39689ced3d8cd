#include <array>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/core/tensor_view.hpp>

using posenc::axis;
using posenc::shape_error;
using posenc::tensor_view;

TEST_CASE("bthd and bhtd factories address the same logical element", "[tensor_view]") {
  const std::ptrdiff_t B = 2, T = 3, H = 4, D = 5;
  std::vector<float> a(B * T * H * D), b(a.size());
  auto va = tensor_view<float>::bthd(a.data(), B, T, H, D);
  auto vb = tensor_view<float>::bhtd(b.data(), B, H, T, D);
  float n = 0;
  for (std::ptrdiff_t i = 0; i < B; ++i)
    for (std::ptrdiff_t t = 0; t < T; ++t)
      for (std::ptrdiff_t h = 0; h < H; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d) va(i, t, h, d) = vb(i, t, h, d) = n++;
  // [B,T,H,D] memory is the visiting order; [B,H,T,D] memory is transposed.
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == static_cast<float>(i));
  CHECK(b[static_cast<std::size_t>(((1 * H + 2) * T + 1) * D + 3)] == va(1, 1, 2, 3));
  CHECK(va.row(1, 2, 3) == &va(1, 2, 3, 0));
  CHECK(va.size() == B * T * H * D);
  CHECK(va.dim_contiguous());
}

TEST_CASE("byte strides (ggml nb[]) convert to element strides and must divide", "[tensor_view]") {
  std::vector<float> x(2 * 3 * 4);
  auto v = tensor_view<float>::from_byte_strides(x.data(), {1, 2, 3, 4}, {96, 48, 16, 4});
  CHECK(v.stride(axis::token) == 12);
  CHECK(v.stride(axis::head) == 4);
  CHECK(&v(0, 1, 2, 3) == &x[1 * 12 + 2 * 4 + 3]);
  CHECK_THROWS_AS(tensor_view<float>::from_byte_strides(x.data(), {1, 2, 3, 4}, {96, 48, 18, 4}), shape_error);
  try {
    (void)tensor_view<float>::from_byte_strides(x.data(), {1, 2, 3, 4}, {96, 48, 18, 4});
  } catch (const shape_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("byte_stride[2]") && Catch::Contains("18"));
  }
}

TEST_CASE("invalid extents and null data are rejected with shape_error", "[tensor_view]") {
  float x[4];
  CHECK_THROWS_AS(tensor_view<float>::bthd(x, 1, -1, 1, 4), shape_error);
  CHECK_THROWS_WITH(tensor_view<float>::bthd(nullptr, 1, 1, 1, 4), Catch::Contains("tensor_view.data"));
  CHECK_NOTHROW(tensor_view<float>::bthd(nullptr, 0, 1, 1, 4));                     // empty views may be null
  CHECK_THROWS_AS(tensor_view<float>::bthd(x, 1, 1, 1, -4), posenc::config_error);  // shape_error is a config_error
}

TEST_CASE("slices and const conversion keep strides", "[tensor_view]") {
  std::vector<double> x(2 * 5 * 3 * 8);
  std::iota(x.begin(), x.end(), 0.0);
  auto v = tensor_view<double>::bthd(x.data(), 2, 5, 3, 8);
  auto s = v.token_slice(2, 3).head_slice(1, 2).dim_slice(4, 4);
  CHECK(s.tokens() == 3);
  CHECK(s.heads() == 2);
  CHECK(s.dim() == 4);
  CHECK(s(1, 0, 1, 2) == v(1, 2, 2, 6));
  tensor_view<const double> c = s;
  CHECK(c(1, 2, 0, 3) == v(1, 4, 1, 7));
}
