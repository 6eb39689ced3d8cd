// KERPLE against the authors' code (tests/golden/kerple.json, gen_kerple.py: chijames/KERPLE's
// ParallelKerpleLog / ParallelKerplePower), its limits and special cases, gradients, invalid inputs.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/kerple.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"
#include "support/gradient_check.hpp"

using posenc::kerple;
using posenc::kerple_kernel;

TEST_CASE(
    "kerple: biases equal the authors' ParallelKerpleLog / ParallelKerplePower (parameters projected "
    "as theirs)",
    "[kerple][golden]") {
  const auto file = posenc_test::load_golden("kerple.json");
  for (const auto& c : file.at("cases")) {
    INFO(c.at("id").get<std::string>());
    const bool log = c.at("kind") == "log";
    const auto a = c.at("a").get<std::vector<double>>(), p = c.at("p").get<std::vector<double>>();
    const auto H = static_cast<std::ptrdiff_t>(a.size());
    // log: -p ln(1 + a n) -> r1 = p, r2 = a; power: -a n^p -> r1 = a, r2 = p
    const kerple enc({.kernel = log ? kerple_kernel::logarithmic : kerple_kernel::power, .num_heads = H}, log ? p : a,
                     log ? a : p);
    const auto a_used = c.at("a_used").get<std::vector<double>>(), p_used = c.at("p_used").get<std::vector<double>>();
    for (std::ptrdiff_t h = 0; h < H; ++h) {
      CHECK(enc.parameters()[static_cast<std::size_t>(h)] == (log ? p_used : a_used)[static_cast<std::size_t>(h)]);
      CHECK(enc.parameters()[static_cast<std::size_t>(H + h)] == (log ? a_used : p_used)[static_cast<std::size_t>(h)]);
    }
    const std::int64_t S = c.at("seq");
    const bool decode = c.at("decode");
    std::vector<double> got;
    for (std::ptrdiff_t h = 0; h < H; ++h)
      for (std::int64_t i = decode ? S - 1 : 0; i < S; ++i)
        for (std::int64_t j = 0; j < S; ++j) got.push_back(j <= i ? enc.bias(h, i, j) : 0.0);  // authors: 0 for j > i
    POSENC_CHECK_CLOSE(got, posenc_test::flatten(c.at("expected").at("bias_fp64")), 1e-12, 1e-13);
    // the float32 run within float rounding of the bias
    POSENC_CHECK_CLOSE(got, posenc_test::flatten(c.at("expected").at("bias_fp32")), 1e-5, 1e-6);
  }
}

TEST_CASE("kerple: special cases and limits", "[kerple]") {
  const std::vector<double> r1{0.5, 1.5, 0.25}, r2{1.0, 0.3, 2.0};
  SECTION("power with exponent 1 is ALiBi with slopes r1 (symmetric form)") {
    const kerple pw({.kernel = kerple_kernel::power, .num_heads = 3}, r1, std::vector<double>{1, 1, 1});
    const posenc::alibi al({.num_heads = 3, .slopes = r1});
    for (std::ptrdiff_t h = 0; h < 3; ++h)
      for (std::int64_t i = -5; i < 40; i += 3)
        for (std::int64_t j = -9; j < 50; j += 4) CHECK(pw.bias(h, i, j) == Approx(al.bias(h, i, j)).margin(1e-12));
  }
  SECTION("log kernel: 0 at distance 0, decreasing, ~ -r1 r2 n for small r2 n, ~ -r1 ln(r2 n) for large") {
    const kerple lg({.num_heads = 3}, r1, r2);
    for (std::ptrdiff_t h = 0; h < 3; ++h) {
      CHECK(lg.bias(h, 7, 7) == 0.0);
      for (std::int64_t n = 1; n < 200; ++n) CHECK(lg.bias(h, n, 0) < lg.bias(h, n - 1, 0));
    }
    const kerple tiny({.num_heads = 1, .min_parameter = 1e-12}, std::vector<double>{2.0}, std::vector<double>{1e-9});
    CHECK(tiny.bias(0, 100, 0) == Approx(-2.0 * 1e-9 * 100).epsilon(1e-6));
    CHECK(lg.bias(1, std::int64_t{1} << 40, 0) == Approx(-1.5 * std::log(0.3 * std::ldexp(1.0, 40))).epsilon(1e-9));
  }
  SECTION("symmetric in the distance; the distance form agrees; any int64 positions") {
    const kerple lg({.num_heads = 3}, r1, r2);
    for (std::int64_t d = -30; d <= 30; ++d) {
      CHECK(lg.bias(1, 10, 10 + d) == lg.bias(1, 10 + d, 10));
      CHECK(lg.bias_at_distance(2, d) == lg.bias(2, 10, 10 + d));
    }
    CHECK(std::isfinite(lg.bias(0, INT64_MIN, INT64_MAX)));
  }
  SECTION("projection: values below the floor are raised, exponents capped at 2") {
    std::vector<double> x{0.001, 3.0, -1.0, 5.0};
    posenc::kerple_project({.kernel = kerple_kernel::power, .num_heads = 2}, x);
    CHECK(x == std::vector<double>{0.01, 3.0, 0.01, 2.0});
  }
}

TEST_CASE("kerple: gradients pass finite differences (bias, and through sdpa_backward)", "[kerple][backward]") {
  using namespace posenc_test::fd;
  for (const auto kernel : {kerple_kernel::logarithmic, kerple_kernel::power}) {
    const posenc::kerple_config cfg{.kernel = kernel, .num_heads = 4};
    const std::vector<double> params{0.7, 1.3, 0.2, 2.2, 0.4, 0.9, 1.6, 0.05};
    auto make = [&](const std::vector<double>& x) {
      return kerple(cfg, std::span<const double>(x).first(4), std::span<const double>(x).subspan(4));
    };
    SECTION(kernel == kerple_kernel::power ? "power" : "log") {
      const std::vector<std::int64_t> pq{0, 3, 4, 9, 20, 2, 3, 4, 5, 6}, pk{0, 1, 2, 3, 4, 5, 6, 0, 2, 4, 6, 8, 10, 12};
      check_parameters(problem({}), params, make, {.causal = true, .query_positions = pq, .key_positions = pk});
      check_inputs(problem({}), make(params), {});
    }
  }
}

TEST_CASE("kerple: invalid configurations are refused by name", "[kerple][invalid]") {
  using posenc_test::error_of;
  const std::vector<double> two{1, 1};
  error_of([&] { kerple({.num_heads = 3}, two, two); }, "kerple.r1");
  error_of([&] { kerple({.num_heads = 2}, two, std::vector<double>{1}); }, "kerple.r2");
  error_of([&] { kerple({.num_heads = 2}, std::vector<double>{1, NAN}, two); }, "kerple.r1");
  error_of([&] { kerple({.num_heads = 0}, two, two); }, "kerple.num_heads");
  error_of([&] { kerple({.num_heads = 2, .min_parameter = 0}, two, two); }, "kerple.min_parameter");
  error_of([&] { kerple({.kernel = kerple_kernel::power, .num_heads = 2, .max_exponent = 3}, two, two); },
           "kerple.max_exponent");
}
