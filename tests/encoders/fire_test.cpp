// FIRE from the paper's equation: the encodings it contains (KERPLE-log exactly, T5's buckets exactly
// at integer distances, ALiBi as c -> 0), its progressive interpolation, gradients by finite
// differences (the bias itself and through sdpa_backward), invalid inputs. The paper released no code.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/fire.hpp>
#include <posenc/encoders/kerple.hpp>
#include <posenc/encoders/t5.hpp>

#include "support/check.hpp"
#include "support/gradient_check.hpp"

using posenc::fire;
using posenc::fire_config;
using posenc::fire_parameters;

namespace {

double psi(double c, double x) {
  return std::log1p(c * x);
}

/// f(u)_h = w2_h * u (one hidden unit passing u through): FIRE with a linear f.
fire linear_fire(double c, double L, const std::vector<double>& slopes, double eps = 1e-6) {
  const auto H = static_cast<std::ptrdiff_t>(slopes.size());
  return fire({.num_heads = H, .mlp_width = 1, .eps = eps},
              fire_parameters{.c = c,
                              .threshold = L,
                              .w1 = {1.0},
                              .b1 = {0.0},
                              .w2 = slopes,
                              .b2 = std::vector<double>(static_cast<std::size_t>(H), 0.0)});
}

}  // namespace

TEST_CASE("fire: with a linear f and queries below L it is KERPLE's logarithmic kernel", "[fire]") {
  const double c = 0.37, L = 64, eps = 1e-6;
  const std::vector<double> r1{0.5, 1.25, 2.0};
  const double N = psi(c, L) + eps;  // the constant normaliser below L
  std::vector<double> w2;
  for (double r : r1) w2.push_back(-r * N);
  const fire f = linear_fire(c, L, w2, eps);
  const posenc::kerple k({.num_heads = 3}, r1, std::vector<double>(3, c));
  for (std::ptrdiff_t h = 0; h < 3; ++h)
    for (std::int64_t i = 0; i <= 64; ++i)
      for (std::int64_t j = 0; j <= i; ++j) CHECK(f.bias(h, i, j) == Approx(k.bias(h, i, j)).margin(1e-13));
}

TEST_CASE("fire: as c -> 0 with a linear f it tends to ALiBi", "[fire]") {
  const double c = 1e-9, L = 4096;
  const std::vector<double> slopes = posenc::alibi_slopes(4);
  std::vector<double> w2;
  for (double m : slopes) w2.push_back(-m * (psi(c, L) + 1e-15) / c);
  const fire f = linear_fire(c, L, w2, 1e-15);
  const posenc::alibi al({.num_heads = 4});
  for (std::ptrdiff_t h = 0; h < 4; ++h)
    for (std::int64_t i = 0; i < 300; i += 7)
      for (std::int64_t j = 0; j <= i; j += 3)
        CHECK(f.bias(h, i, j) == Approx(al.bias(h, i, j)).epsilon(1e-6).margin(1e-9));  // relative c n / 2
}

TEST_CASE("fire: a ReLU f built from ramps reproduces T5's causal buckets exactly at integer distances", "[fire]") {
  // For queries below L, u(n) = psi(n) / N is strictly increasing in n. Each bucket boundary n_v (the
  // first distance of bucket v) gets the two units relu((u - u(n_v - 1)) / du) - relu((u - u(n_v)) / du):
  // 0 up to n_v - 1, 1 from n_v on. f = table[0] + sum_v (table[v] - table[v - 1]) * ramp_v.
  const posenc::t5_bias_config tc{.num_buckets = 16, .max_distance = 64, .bidirectional = false, .num_heads = 2};
  const auto table = posenc_test::random_values(static_cast<std::size_t>(16 * 2), 4);
  const posenc::t5_bias t5(tc, table);
  const double c = 0.1, L = 512, eps = 1e-6, N = psi(c, L) + eps;
  auto u = [&](std::int64_t n) { return psi(c, static_cast<double>(n)) / N; };
  fire_parameters p{.c = c, .threshold = L, .b2 = {table[0], table[1]}};
  std::vector<double> w2h0, w2h1;
  for (std::int64_t n = 1; n <= 200; ++n) {
    const int v = t5.buckets()(-n), prev = t5.buckets()(-(n - 1));  // causal: bucket of n = pos_q - pos_k
    if (v == prev) continue;
    const double a = u(n - 1), b = u(n), du = b - a;
    for (const double edge : {a, b}) {
      p.w1.push_back(1 / du);
      p.b1.push_back(-edge / du);
    }
    for (std::ptrdiff_t h = 0; h < 2; ++h) {
      const double step = table[static_cast<std::size_t>(v * 2 + h)] - table[static_cast<std::size_t>(prev * 2 + h)];
      (h == 0 ? w2h0 : w2h1).insert((h == 0 ? w2h0 : w2h1).end(), {step, -step});
    }
  }
  p.w2 = w2h0;
  p.w2.insert(p.w2.end(), w2h1.begin(), w2h1.end());
  const fire f({.num_heads = 2, .mlp_width = static_cast<std::ptrdiff_t>(p.w1.size()), .eps = eps}, p);
  for (std::ptrdiff_t h = 0; h < 2; ++h)
    for (std::int64_t i = 0; i < 200; i += 3)
      for (std::int64_t j = 0; j <= i; ++j) CHECK(f.bias(h, i, j) == Approx(t5.bias(h, i, j)).margin(1e-9));
}

TEST_CASE("fire: progressive interpolation maps the keys of every query into the unit interval", "[fire]") {
  const fire_config cfg{.num_heads = 2, .mlp_width = 5};
  auto p = posenc_test::random_values(static_cast<std::size_t>(cfg.parameter_count()), 17);
  p[0] = 0.2;  // c
  p[1] = 100;  // L
  const fire f(cfg, p);
  for (const std::int64_t i :
       {std::int64_t{0}, std::int64_t{99}, std::int64_t{100}, std::int64_t{5000}, std::int64_t{1} << 40}) {
    for (const std::int64_t j : {std::int64_t{0}, i / 3, i / 2, i}) {
      const double u = f.normalized_distance(i, j);
      CHECK(u >= 0);
      CHECK(u < 1);
    }
  }
  // past L the farthest key always reads f near u = 1, whatever the length: the trained range
  for (const std::int64_t i : {std::int64_t{100}, std::int64_t{1000}, std::int64_t{1} << 30})
    CHECK(f.normalized_distance(i, 0) == Approx(1.0).margin(1e-5));
  // below L the normaliser is fixed: a pure function of the distance
  CHECK(f.bias(1, 10, 3) == f.bias(1, 57, 50));
  CHECK(f.bias(1, 400, 393) != f.bias(1, 600, 593));
  CHECK(f.bias(0, 5, 8) == f.bias(0, 8, 5));  // |i - j|
}

TEST_CASE("fire: gradients of every parameter (the bias itself, and through sdpa_backward)", "[fire][backward]") {
  const fire_config cfg{.num_heads = 4, .mlp_width = 6};
  auto params = posenc_test::random_values(static_cast<std::size_t>(cfg.parameter_count()), 29);
  params[0] = -0.35;  // c (|c| is used: the sign's derivative too)
  params[1] = 6.5;    // L: queries on both sides of it below
  SECTION("d bias / d parameters") {
    for (const auto& ij : {std::pair<std::int64_t, std::int64_t>{3, 0}, {6, 2}, {9, 1}, {14, 14}, {40, 7}})
      for (std::ptrdiff_t h = 0; h < 4; ++h) {
        const std::int64_t i = ij.first, j = ij.second;  // named copies: Clang 14 lambdas cannot capture bindings
        std::vector<double> grad(params.size(), 0.0), numeric(params.size());
        fire(cfg, params).accumulate_bias_gradient(h, i, j, 1.0, grad);
        for (std::size_t n = 0; n < params.size(); ++n) {
          auto x = params;
          numeric[n] = posenc_test::fd::central(
              [&](double t) {
                x[n] = t;
                return fire(cfg, x).bias(h, i, j);
              },
              params[n]);
        }
        posenc_test::fd::expect_close(grad, numeric, "fire bias");
      }
  }
  SECTION("through sdpa_backward, causal, explicit positions across L") {
    using namespace posenc_test::fd;
    const std::vector<std::int64_t> pq{2, 5, 7, 9, 12, 0, 1, 3, 8, 30}, pk{0, 1, 2, 4, 6, 9, 12, 0, 1, 2, 3, 8, 20, 30};
    auto make = [&](const std::vector<double>& x) { return fire(cfg, x); };
    check_parameters(problem({}), params, make, {.causal = true, .query_positions = pq, .key_positions = pk});
    check_inputs(problem({}), make(params), {.causal = true});
  }
}

TEST_CASE("fire: invalid configurations and parameters are refused by name", "[fire][invalid]") {
  using posenc_test::error_of;
  const fire_config cfg{.num_heads = 2, .mlp_width = 3};
  const std::vector<double> ok(static_cast<std::size_t>(cfg.parameter_count()), 0.5);
  error_of([&] { fire(cfg, std::vector<double>(ok.size() - 1)); }, "fire.parameters");
  auto bad = ok;
  bad[3] = INFINITY;
  error_of([&] { fire(cfg, bad); }, "fire.parameters");
  error_of([&] { fire({.num_heads = 0, .mlp_width = 3}, ok); }, "fire.num_heads");
  error_of([&] { fire({.num_heads = 2, .mlp_width = 0}, ok); }, "fire.mlp_width");
  error_of([&] { fire({.num_heads = 2, .mlp_width = 3, .eps = -1}, ok); }, "fire.eps");
  auto zero_c = ok;
  zero_c[0] = 0;
  error_of([&] { fire({.num_heads = 2, .mlp_width = 3, .eps = 0}, zero_c); }, "fire.eps");
  error_of([&] { fire(cfg, fire_parameters{.w1 = {1, 2}}); }, "fire.w1");
}
