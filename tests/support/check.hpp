// tests/support/check.hpp — comparison helpers that report the worst element, not just "false".
#pragma once

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace posenc_test {

/// Largest |a[i] - b[i]| - (atol + rtol*|b[i]|) over i, with its index; <= 0 means all within.
struct worst {
  double excess = -1;
  double diff = 0;
  std::size_t index = 0;
};

template <class A, class B>
worst compare(const A& a, const B& b, double atol, double rtol = 0) {
  REQUIRE(a.size() == b.size());
  worst w;
  w.excess = -INFINITY;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    const double d = std::fabs(x - y);
    const double e = (std::isnan(x) != std::isnan(y)) ? INFINITY : d - (atol + rtol * std::fabs(y));
    if (e > w.excess) w = {e, d, i};
  }
  return w;
}

/// CHECKs that every element is within atol + rtol*|expected|; on failure reports the worst one.
#define POSENC_CHECK_CLOSE(actual, expected, atol, rtol)                                                            \
  do {                                                                                                              \
    const auto posenc_w_ = ::posenc_test::compare((actual), (expected), (atol), (rtol));                            \
    INFO("worst element " << posenc_w_.index << ": |diff| = " << posenc_w_.diff << " (atol " << (atol) << ", rtol " \
                          << (rtol) << ")");                                                                        \
    CHECK(posenc_w_.excess <= 0);                                                                                   \
  } while (0)

}  // namespace posenc_test

#include <posenc/core/errors.hpp>

namespace posenc_test {

/// The message of the config_error that `f()` throws, or "(no config_error)".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const posenc::config_error& e) {
    return e.what();
  }
  return "(no config_error)";
}

/// Like error_of, and CHECKs that the error names `param` (config_error::parameter()).
template <class F>
std::string error_of(F&& f, const std::string& param) {
  try {
    f();
  } catch (const posenc::config_error& e) {
    INFO(e.what());
    CHECK(e.parameter() == param);
    return e.what();
  }
  FAIL("expected config_error naming " << param);
  return {};
}

/// CHECKs that f() throws Err (config_error, shape_error) naming `param` (Err::parameter()).
template <class Err, class F>
void refused(F&& f, const std::string& param) {
  try {
    f();
  } catch (const Err& e) {
    INFO(e.what());
    CHECK(e.parameter() == param);
    return;
  }
  FAIL("expected an error naming " << param);
}

}  // namespace posenc_test
