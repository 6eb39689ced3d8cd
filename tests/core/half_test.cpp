// Exhaustive tests of the 16-bit storage types: every bit pattern, and rounding at every midpoint.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <catch2/catch.hpp>

#include <posenc/core/half.hpp>

using posenc::bfloat16;
using posenc::float16;

namespace {

bool is_nan16(std::uint16_t b, int exp_bits) {
  const int mant_bits = 15 - exp_bits;
  const std::uint16_t exp_mask = static_cast<std::uint16_t>(((1u << exp_bits) - 1u) << mant_bits);
  return (b & exp_mask) == exp_mask && (b & ((1u << mant_bits) - 1u)) != 0;
}

// Exact value of a binary16 pattern, computed independently of the code under test.
double f16_value(std::uint16_t b) {
  const int e = (b >> 10) & 0x1f, m = b & 0x3ff;
  const double s = (b & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : s * INFINITY;
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, e - 25);
}

}  // namespace

TEST_CASE("float16 to float is exact for all 65536 patterns", "[half]") {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = float16::from_bits(static_cast<std::uint16_t>(b));
    const float f = static_cast<float>(h);
    const double expect = f16_value(static_cast<std::uint16_t>(b));
    if (std::isnan(expect)) {
      REQUIRE(std::isnan(f));
    } else {
      REQUIRE(static_cast<double>(f) == expect);
      REQUIRE(std::signbit(f) == ((b & 0x8000) != 0));  // -0 stays -0
    }
    // round trip
    const float16 back(f);
    if (is_nan16(static_cast<std::uint16_t>(b), 5))
      REQUIRE(is_nan16(back.bits, 5));
    else
      REQUIRE(back.bits == b);
  }
}

TEST_CASE("float16 from float rounds to nearest even at every midpoint", "[half]") {
  // For each pair of adjacent finite non-negative halves, the float midpoint rounds to the even one,
  // and the floats just below/above the midpoint round down/up.
  for (std::uint32_t b = 0; b < 0x7bff; ++b) {
    const double lo = f16_value(static_cast<std::uint16_t>(b)), hi = f16_value(static_cast<std::uint16_t>(b + 1));
    const auto mid = static_cast<float>((lo + hi) / 2);  // exact: representable in float
    REQUIRE(static_cast<double>(mid) == (lo + hi) / 2);
    const std::uint16_t even = (b % 2 == 0) ? static_cast<std::uint16_t>(b) : static_cast<std::uint16_t>(b + 1);
    REQUIRE(float16(mid).bits == even);
    REQUIRE(float16(std::nextafter(mid, 0.0f)).bits == b);
    REQUIRE(float16(std::nextafter(mid, INFINITY)).bits == b + 1);
    REQUIRE(float16(-mid).bits == (even | 0x8000u));
  }
  CHECK(float16(65504.0f).bits == 0x7bff);
  CHECK(float16(65519.99f).bits == 0x7bff);
  CHECK(float16(65520.0f).bits == 0x7c00);  // the midpoint to 2^16 rounds to even, i.e. infinity
  CHECK(float16(INFINITY).bits == 0x7c00);
  CHECK(float16(-INFINITY).bits == 0xfc00);
  CHECK(is_nan16(float16(std::numeric_limits<float>::quiet_NaN()).bits, 5));
  CHECK(is_nan16(float16(std::bit_cast<float>(0x7f800001u)).bits, 5));  // signalling NaN with low payload
  CHECK(float16(std::ldexp(1.0f, -25)).bits == 0);                      // half of the smallest subnormal: tie to 0
  CHECK(float16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)).bits == 1);
  CHECK(float16(1e-30f).bits == 0);
}

TEST_CASE("bfloat16 to float is exact and round-trips for all 65536 patterns", "[half]") {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = bfloat16::from_bits(static_cast<std::uint16_t>(b));
    const float f = static_cast<float>(h);
    REQUIRE(std::bit_cast<std::uint32_t>(f) == (b << 16));
    const bfloat16 back(f);
    if (is_nan16(static_cast<std::uint16_t>(b), 8))
      REQUIRE(is_nan16(back.bits, 8));
    else
      REQUIRE(back.bits == b);
  }
}

TEST_CASE("bfloat16 from float rounds to nearest even at every midpoint", "[half]") {
  for (std::uint32_t b = 0; b < 0x7f7f; ++b) {
    const std::uint32_t mid_bits = (b << 16) | 0x8000u;  // exactly halfway to b + 1
    const float mid = std::bit_cast<float>(mid_bits);
    const std::uint16_t even = (b % 2 == 0) ? static_cast<std::uint16_t>(b) : static_cast<std::uint16_t>(b + 1);
    REQUIRE(bfloat16(mid).bits == even);
    REQUIRE(bfloat16(std::bit_cast<float>(mid_bits - 1)).bits == b);
    REQUIRE(bfloat16(std::bit_cast<float>(mid_bits + 1)).bits == b + 1);
    REQUIRE(bfloat16(-mid).bits == (even | 0x8000u));
  }
  CHECK(bfloat16(std::numeric_limits<float>::max()).bits == 0x7f80);  // rounds up to infinity
  CHECK(is_nan16(bfloat16(std::numeric_limits<float>::quiet_NaN()).bits, 8));
  CHECK(is_nan16(bfloat16(std::bit_cast<float>(0x7f800001u)).bits, 8));  // would round to inf if not special-cased
}
