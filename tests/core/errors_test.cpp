#include <stdexcept>

#include <catch2/catch.hpp>

#include <posenc/core/errors.hpp>
#include <posenc/version.hpp>

TEST_CASE("config_error names the parameter, the value and the range", "[errors]") {
  try {
    posenc::detail::require(false, "rope.rotary_dim", 7, "an even number in [2, 64]");
    FAIL("no throw");
  } catch (const std::invalid_argument& e) {  // config_error is an invalid_argument
    CHECK(std::string(e.what()) == "posenc: rope.rotary_dim = 7 is invalid (expected an even number in [2, 64])");
  }
  const posenc::config_error e("yarn.beta_fast", "must be greater than beta_slow (1)");
  CHECK(e.parameter() == "yarn.beta_fast");
  CHECK(posenc::detail::to_text(0.1) == "0.1");
  CHECK(posenc::detail::to_text(true) == "true");
}

TEST_CASE("version macros agree with the constant", "[version]") {
  CHECK(posenc::version.major == POSENC_VERSION_MAJOR);
  CHECK(POSENC_VERSION == POSENC_VERSION_MAJOR * 10000 + POSENC_VERSION_MINOR * 100 + POSENC_VERSION_PATCH);
}
