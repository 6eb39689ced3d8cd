// xPos: torchscale golden rows (both centre semantics), log-space factors at 10^6, validation.
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/rope/xpos.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::flatten;

namespace {

/// Runs one golden case through a [length] buffer (stored rows filled, the rest zero) so that
/// midpoint_of_call sees the same L = length + offset as torchscale. Returns the stored rows.
template <class T>
std::vector<double> run_case(const nlohmann::json& c, xpos_center_policy policy) {
  const int D = c.at("head_dim").get<int>();
  const auto length = c.at("length").get<std::int64_t>();
  const auto offset = c.at("offset").get<std::int64_t>();
  const auto rows = c.at("rows").get<std::vector<std::int64_t>>();
  const auto xin = flatten(c.at("inputs").at("x_rows"));
  xpos_config cfg{.head_dim = D, .scale_base = c.at("scale_base").get<double>(), .center_policy = policy};
  if (policy == xpos_center_policy::fixed) {  // the same centre torchscale uses, given explicitly
    const std::int64_t L = length + offset;
    cfg.center = (L + 1) / 2;
  }
  const xpos enc(cfg);
  std::vector<T> x(static_cast<std::size_t>(length * D), T(0.0f));
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (int d = 0; d < D; ++d)
      x[static_cast<std::size_t>(rows[r] * D + d)] =
          static_cast<T>(xin[r * static_cast<std::size_t>(D) + static_cast<std::size_t>(d)]);
  std::vector<std::int64_t> pos(static_cast<std::size_t>(length));
  for (std::int64_t i = 0; i < length; ++i) pos[static_cast<std::size_t>(i)] = offset + i;
  auto view = tensor_view<T>::bthd(x.data(), 1, length, 1, D);
  if (c.at("downscale").get<bool>())
    enc.transform_k(view, pos);
  else
    enc.transform_q(view, pos);
  // the exponent positions the golden file states must be ours
  const auto expo = c.at("scale_exponent_positions").get<std::vector<std::int64_t>>();
  for (std::size_t r = 0; r < rows.size(); ++r) CHECK(offset + rows[r] - enc.center_of(pos) == expo[r]);
  std::vector<double> out;
  for (auto r : rows)
    for (int d = 0; d < D; ++d) out.push_back(static_cast<double>(x[static_cast<std::size_t>(r * D + d)]));
  return out;
}

}  // namespace

TEST_CASE("xpos golden cases (torchscale), double and float, both centre policies", "[rope][xpos][golden]") {
  const auto file = posenc_test::load_golden("xpos.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    ++n;
    INFO("case " << c.at("id").get<std::string>());
    const auto want64 = flatten(c.at("expected").at("out_fp64"));
    for (auto policy : {xpos_center_policy::midpoint_of_call, xpos_center_policy::fixed}) {
      POSENC_CHECK_CLOSE(run_case<double>(c, policy), want64, 1e-10, 0.0);
      POSENC_CHECK_CLOSE(run_case<float>(c, policy), want64, 5e-4, 0.0);
    }
  }
  CHECK(n >= 6);
}

TEST_CASE("xpos zeta and the score's relative decay", "[rope][xpos]") {
  const xpos enc(xpos_config{.head_dim = 64});
  CHECK(enc.zeta(0) == Approx(0.4 / 1.4).epsilon(1e-15));
  CHECK(enc.zeta(31) == Approx((62 + 0.4 * 64) / (1.4 * 64)).epsilon(1e-15));
  // q at n, k at m: q.k = sum_k zeta_k^((n - m)/512) * (RoPE score of pair k); check one pair alone.
  const std::int64_t n0 = 700, m0 = 300;
  std::vector<double> q(64, 0.0), k(64, 0.0);
  q[0] = 1;  // pair 0 (interleaved): elements 0, 1
  k[0] = 1;
  const std::vector<std::int64_t> pn{n0}, pm{m0};
  enc.transform_q(tensor_view<double>::bthd(q.data(), 1, 1, 1, 64), pn);
  enc.transform_k(tensor_view<double>::bthd(k.data(), 1, 1, 1, 64), pm);
  const double dot = q[0] * k[0] + q[1] * k[1];
  CHECK(dot ==
        Approx(std::pow(enc.zeta(0), (n0 - m0) / 512.0) * std::cos(static_cast<double>(n0 - m0))).epsilon(1e-12));
}

TEST_CASE("xpos near 10^6 positions stays finite in float with a centre near them", "[rope][xpos]") {
  const std::int64_t c = 1'000'000;
  const xpos enc(xpos_config{.head_dim = 64, .center = c});
  std::vector<std::int64_t> pos;
  for (std::int64_t p = c - 20000; p <= c + 20000; p += 4000) pos.push_back(p);
  const auto T = static_cast<std::ptrdiff_t>(pos.size());
  std::vector<float> qf(static_cast<std::size_t>(T * 64)), kf(qf.size());
  std::vector<double> qd(qf.size()), kd(qf.size());
  for (std::size_t i = 0; i < qf.size(); ++i) {
    qf[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.1));
    kf[i] = static_cast<float>(std::cos(0.23 * static_cast<double>(i) + 0.3));
    qd[i] = qf[i];
    kd[i] = kf[i];
  }
  enc.transform_q(tensor_view<float>::bthd(qf.data(), 1, T, 1, 64), pos);
  enc.transform_k(tensor_view<float>::bthd(kf.data(), 1, T, 1, 64), pos);
  enc.transform_q(tensor_view<double>::bthd(qd.data(), 1, T, 1, 64), pos);
  enc.transform_k(tensor_view<double>::bthd(kd.data(), 1, T, 1, 64), pos);
  // float rounding is relative to the pair's magnitude (a*c - b*s may cancel), interleaved pairs (2j, 2j+1)
  for (std::size_t i = 0; i < qf.size(); ++i) {
    REQUIRE(std::isfinite(qf[i]));
    REQUIRE(std::isfinite(kf[i]));
    const std::size_t j = i & ~std::size_t{1};
    CHECK(std::fabs(qf[i] - qd[i]) <= 2e-6 * std::hypot(qd[j], qd[j + 1]));
    CHECK(std::fabs(kf[i] - kd[i]) <= 2e-6 * std::hypot(kd[j], kd[j + 1]));
  }
  // centred at 0 instead, the same positions overflow float keys (the documented limit)
  const xpos far(xpos_config{.head_dim = 64});
  std::vector<float> k2(64, 1.0f);
  const std::vector<std::int64_t> p1{c};
  far.transform_k(tensor_view<float>::bthd(k2.data(), 1, 1, 1, 64), p1);
  CHECK_FALSE(std::isfinite(k2[0]));
  // but the double factor for |n - c| = 36 000 is still finite and exact in log space
  std::vector<double> k3(64, 1.0);
  const std::vector<std::int64_t> p2{36000};
  far.transform_k(tensor_view<double>::bthd(k3.data(), 1, 1, 1, 64), p2);
  const double f = std::exp(-(36000.0 / 512) * std::log(far.zeta(0)));
  CHECK(std::hypot(k3[0], k3[1]) == Approx(f * std::sqrt(2.0)).epsilon(1e-12));
}

TEST_CASE("xpos invalid configs name the parameter", "[rope][xpos][validation]") {
  auto throws = [](xpos_config c, const char* param) {
    INFO(param);
    try {
      xpos e(c);
      FAIL("no exception");
    } catch (const config_error& e) {
      CHECK(e.parameter() == param);
      CHECK(std::string(e.what()).find(param) != std::string::npos);
    }
  };
  throws({.head_dim = 64, .gamma = 0}, "xpos.gamma");
  throws({.head_dim = 64, .gamma = -0.4}, "xpos.gamma");
  throws({.head_dim = 64, .scale_base = 0}, "xpos.scale_base");
  throws({.head_dim = 64, .scale_base = -512}, "xpos.scale_base");
  throws({.head_dim = 64, .scale_base = NAN}, "xpos.scale_base");
  throws({.head_dim = 63}, "xpos.head_dim");
  throws({.head_dim = 0}, "xpos.head_dim");
  throws({.head_dim = 64, .theta = 1}, "xpos.theta");
  CHECK_THROWS_AS(xpos(xpos_config{.head_dim = 64, .gamma = 0}), config_error);
}
