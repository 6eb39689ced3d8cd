// tests/rope/public_checks_test.cpp — the public rotation and encoder entries throw shape_error
// naming the argument on a wrong size (positions, streams, frequencies, tables, output rows), in
// every build, and leave their input untouched; nothing aborts.
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/xpos.hpp>

TEST_CASE("xpos, mrope, temperature, sinusoidal: wrong sizes throw shape_error", "[rope][errors]") {
  std::vector<float> x(32, 1.0f);
  const auto v = posenc::tensor_view<float>::bthd(x.data(), 1, 2, 2, 8);
  const std::vector<std::int64_t> two{0, 1}, three{0, 1, 2};
  const posenc::xpos xp({.head_dim = 8});
  CHECK_THROWS_AS(xp.transform_q(v, three), posenc::shape_error);
  CHECK_THROWS_AS(xp.transform_k(posenc::tensor_view<float>::bthd(x.data(), 1, 2, 4, 4), two), posenc::shape_error);
  const posenc::mrope mr({.rope = {.head_dim = 8}, .section = {2, 1, 1}});
  CHECK_THROWS_AS(mr.transform_q(v, three), posenc::shape_error);
  CHECK_THROWS_AS(mr.transform_k(v, posenc::mrope_streams{two, three, two}), posenc::shape_error);
  CHECK_THROWS_AS(mr.transform_q(v, posenc::mrope_streams{three, three, three}), posenc::shape_error);
  const posenc::attention_temperature temp({.head_dim = 8});
  CHECK_THROWS_AS(temp.transform_q(v, three), posenc::shape_error);
  CHECK_THROWS_AS(temp.transform_q(posenc::tensor_view<float>::bthd(x.data(), 1, 2, 4, 4), two), posenc::shape_error);
  for (const float e : x) CHECK(e == 1.0f);
  const posenc::sinusoidal s({.d_model = 8});
  std::vector<float> row(7);
  CHECK_THROWS_AS(s.encode_row(3, std::span<float>(row)), posenc::shape_error);
  xp.transform_q(v, two);  // the right sizes still work
  mr.transform_q(v, two);
}
