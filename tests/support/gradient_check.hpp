// tests/support/gradient_check.hpp — sdpa_backward against central finite differences of sdpa, for
// tests/attention/backward_test.cpp and the encoder tests.
//
// L = sum(dout * sdpa(q, k, v)) with a fixed random dout, so dL/dx is what sdpa_backward returns.
// Central differences with h = 1e-5 in double: truncation h^2 |L'''| / 6 and rounding eps |L| / h are
// both ~1e-11 on these O(1) inputs; every element must agree within 1e-7 * max(1, |g|).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>
#include <posenc/attention/sdpa_backward.hpp>

#include "attention/attention_support.hpp"

namespace posenc_test::fd {

inline constexpr double step = 1e-5;
inline constexpr double tol = 1e-7;

struct shape {
  std::ptrdiff_t B = 2, Sq = 5, Sk = 7, Hq = 4, Hkv = 2, D = 8, Dv = 6;
};

/// q, k, v, dout of a shape, deterministic; q scaled so the softmax is far from uniform.
struct problem {
  shape s;
  std::vector<double> q, k, v, dout;
  explicit problem(shape x, std::uint64_t seed = 1, double q_scale = 3) : s(x) {
    q = random_values(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.D), seed);
    k = random_values(static_cast<std::size_t>(s.B * s.Sk * s.Hkv * s.D), seed + 1);
    v = random_values(static_cast<std::size_t>(s.B * s.Sk * s.Hkv * s.Dv), seed + 2);
    dout = random_values(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.Dv), seed + 3);
    for (double& e : q) e *= q_scale;
  }
  [[nodiscard]] posenc::tensor_view<const double> vq() const {
    return posenc::tensor_view<const double>::bthd(q.data(), s.B, s.Sq, s.Hq, s.D);
  }
  [[nodiscard]] posenc::tensor_view<const double> vk() const {
    return posenc::tensor_view<const double>::bthd(k.data(), s.B, s.Sk, s.Hkv, s.D);
  }
  [[nodiscard]] posenc::tensor_view<const double> vv() const {
    return posenc::tensor_view<const double>::bthd(v.data(), s.B, s.Sk, s.Hkv, s.Dv);
  }
  [[nodiscard]] posenc::tensor_view<const double> vdo() const {
    return posenc::tensor_view<const double>::bthd(dout.data(), s.B, s.Sq, s.Hq, s.Dv);
  }
};

template <class E>
double loss(const problem& p, const E& enc, const posenc::attention_options& o) {
  std::vector<double> out(p.dout.size());
  posenc::sdpa(p.vq(), p.vk(), p.vv(), posenc::tensor_view<double>::bthd(out.data(), p.s.B, p.s.Sq, p.s.Hq, p.s.Dv),
               enc, o);
  double l = 0;
  for (std::size_t n = 0; n < out.size(); ++n) l += out[n] * p.dout[n];
  return l;
}

inline double central(const std::function<double(double)>& f, double x0) {
  return (f(x0 + step) - f(x0 - step)) / (2 * step);
}

inline void expect_close(const std::vector<double>& analytic, const std::vector<double>& numeric,
                         const std::string& what) {
  REQUIRE(analytic.size() == numeric.size());
  double worst = 0;
  std::size_t at = 0;
  bool any = false;
  for (std::size_t n = 0; n < analytic.size(); ++n) {
    const double e = std::fabs(analytic[n] - numeric[n]) / std::max(1.0, std::fabs(numeric[n]));
    if (e >= worst) worst = e, at = n;
    any = any || numeric[n] != 0;
  }
  INFO(what << ": worst relative error " << worst << " at " << at << " (analytic " << analytic[at] << ", numeric "
            << numeric[at] << ")");
  CHECK(worst <= tol);
  CHECK(any);  // the check means something: some gradient is nonzero
}

/// The analytic gradients of q, k, v (the encoder's parameters into `grad` and the sinks' into
/// `dsinks` when non-empty).
template <class E>
void backward(const problem& p, const E& enc, const posenc::attention_options& o, std::vector<double>& dq,
              std::vector<double>& dk, std::vector<double>& dv, std::span<double> grad = {},
              std::span<double> dsinks = {}) {
  const auto s = p.s;
  dq.assign(p.q.size(), 0);
  dk.assign(p.k.size(), 0);
  dv.assign(p.v.size(), 0);
  posenc::sdpa_backward(p.vq(), p.vk(), p.vv(), p.vdo(),
                        posenc::tensor_view<double>::bthd(dq.data(), s.B, s.Sq, s.Hq, s.D),
                        posenc::tensor_view<double>::bthd(dk.data(), s.B, s.Sk, s.Hkv, s.D),
                        posenc::tensor_view<double>::bthd(dv.data(), s.B, s.Sk, s.Hkv, s.Dv), enc, o,
                        posenc::attention_gradients{.encoder = grad, .sinks = dsinks});
}

/// Finite differences of every q, k, v element (and the sinks when o has them) against sdpa_backward.
template <class E>
void check_inputs(problem p, const E& enc, posenc::attention_options o) {
  std::vector<double> dq, dk, dv, dsinks(o.sinks.size(), 0.0);
  backward(p, enc, o, dq, dk, dv, {}, dsinks);
  auto numeric = [&](std::vector<double>& x) {
    std::vector<double> g(x.size());
    for (std::size_t n = 0; n < x.size(); ++n) {
      const double x0 = x[n];
      g[n] = central(
          [&](double t) {
            x[n] = t;
            return loss(p, enc, o);
          },
          x0);
      x[n] = x0;
    }
    return g;
  };
  expect_close(dq, numeric(p.q), "dq");
  expect_close(dk, numeric(p.k), "dk");
  expect_close(dv, numeric(p.v), "dv");
  if (!o.sinks.empty()) {
    std::vector<double> sinks(o.sinks.begin(), o.sinks.end());
    o.sinks = sinks;
    expect_close(dsinks, numeric(sinks), "dsinks");
  }
}

/// Finite differences of every parameter of a trainable encoder rebuilt by make(params).
template <class Make>
void check_parameters(const problem& p, std::vector<double> params, Make make, const posenc::attention_options& o) {
  const auto enc = make(params);
  REQUIRE(static_cast<std::size_t>(enc.parameter_count()) == params.size());
  std::vector<double> dq, dk, dv, grad(params.size(), 0.0);
  backward(p, enc, o, dq, dk, dv, grad);
  std::vector<double> numeric(params.size());
  for (std::size_t n = 0; n < params.size(); ++n) {
    const double x0 = params[n];
    numeric[n] = central(
        [&](double t) {
          params[n] = t;
          return loss(p, make(params), o);
        },
        x0);
    params[n] = x0;
  }
  expect_close(grad, numeric, "encoder parameters");
}

}  // namespace posenc_test::fd
