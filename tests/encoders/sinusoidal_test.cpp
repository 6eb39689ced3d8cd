// Sinusoidal encodings: the golden tables of the three conventions, the docs/spec.md §3.1 d=4 example,
// odd-d policies, caching, negative positions and invalid configurations.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/sinusoidal.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::error_of;
using posenc_test::flatten;

namespace {
template <class T = double>
std::vector<T> row_of(const sinusoidal& s, std::int64_t r) {
  std::vector<T> out(static_cast<std::size_t>(s.model_dim()), T(-7));
  s.encode_row(r, std::span<T>(out));
  return out;
}
template <class T = double>
std::vector<T> enc(const sinusoidal& s, std::int64_t p) {
  std::vector<T> out(static_cast<std::size_t>(s.model_dim()), T(-7));
  s.encode(p, std::span<T>(out));
  return out;
}
}  // namespace

TEST_CASE("sinusoidal: golden tables (interleaved, Marian, fairseq)", "[sinusoidal][golden]") {
  const auto file = posenc_test::load_golden("sinusoidal.json");
  for (const auto& c : file.at("cases")) {
    const std::string layout = c.at("layout");
    const auto d = c.at("d_model").get<std::ptrdiff_t>();
    INFO("case " << c.at("id").get<std::string>());
    sinusoidal_config cfg;
    const bool fairseq = layout == "concat_fairseq";
    if (layout == "interleaved_distilbert")
      cfg = sinusoidal_config::distilbert(d);
    else if (layout == "concat_marian")
      cfg = sinusoidal_config::marian(d);
    else if (fairseq)
      cfg = sinusoidal_config::fairseq(d, c.at("padding_idx").get<std::int64_t>());
    else
      FAIL("unknown layout " << layout);
    const sinusoidal s(cfg);
    const auto& rows = c.at("rows");
    const auto& t64 = c.at("expected").at("table_fp64");
    const auto& t32 = c.at("expected").at("table_fp32");
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const auto r = rows[k].get<std::int64_t>();
      INFO("row " << r);
      // Tolerance: README atol (1e-13; fairseq 1e-12) plus 2.5e-16 * row. The reference fp64 tables
      // round the angle p / 10000^(2k/d) to double (and numpy's pow/sin add an ulp): measured
      // 3.3e-13 = 1.6e-16 * row against RN(p / pow(...)) at row 2047, so 1e-13 alone is below the
      // reference's own rounding for rows > ~900. We form p * w exactly instead (docs/spec.md §1.3).
      const double tol64 = (fairseq ? 1e-12 : 1e-13) + 2.5e-16 * static_cast<double>(r);
      POSENC_CHECK_CLOSE(row_of<double>(s, r), flatten(t64[k]), tol64, 0.0);
      POSENC_CHECK_CLOSE(row_of<float>(s, r), flatten(t32[k]), fairseq ? 2e-6 + 1.2e-7 * static_cast<double>(r) : 1e-6,
                         0.0);
      // Token positions: row = position + origin (fairseq: token t -> row t + padding_idx + 1).
      const std::int64_t p = r - cfg.position_origin;
      if (p >= 0) POSENC_CHECK_CLOSE(enc<double>(s, p), flatten(t64[k]), tol64, 0.0);
    }
    if (fairseq) {
      const auto pad = c.at("padding_idx").get<std::int64_t>();
      CHECK(row_of(s, pad) == std::vector<double>(static_cast<std::size_t>(d), 0.0));
      CHECK(cfg.position_origin == pad + 1);
    }
  }
}

TEST_CASE("sinusoidal: docs/spec.md §3.1 worked example d = 4", "[sinusoidal]") {
  for (const std::int64_t p : {std::int64_t{0}, std::int64_t{3}, std::int64_t{1000}, std::int64_t{1000000}}) {
    INFO("p = " << p);
    const double x = static_cast<double>(p);
    const auto paper = enc(sinusoidal(sinusoidal_config::distilbert(4)), p);
    POSENC_CHECK_CLOSE(paper, (std::vector<double>{std::sin(x), std::cos(x), std::sin(0.01 * x), std::cos(0.01 * x)}),
                       1e-12, 0.0);
    const auto marian = enc(sinusoidal(sinusoidal_config::marian(4)), p);
    POSENC_CHECK_CLOSE(marian, (std::vector<double>{std::sin(x), std::sin(0.01 * x), std::cos(x), std::cos(0.01 * x)}),
                       1e-12, 0.0);
    // t2t: [sin p, sin 1e-4 p, cos p, cos 1e-4 p]; fairseq the same at row p (encode_row).
    const auto t2t = enc(sinusoidal({.d_model = 4,
                                     .layout = sinusoidal_layout::concatenated,
                                     .spacing = sinusoidal_spacing::endpoint,
                                     .odd_d = odd_d_policy::zero_pad}),
                         p);
    const std::vector<double> t2t_expected{std::sin(x), std::sin(1e-4 * x), std::cos(x), std::cos(1e-4 * x)};
    POSENC_CHECK_CLOSE(t2t, t2t_expected, 1e-12, 0.0);
    POSENC_CHECK_CLOSE(row_of(sinusoidal(sinusoidal_config::fairseq(4)), p), t2t_expected, 1e-12, 0.0);
  }
  const sinusoidal t2t(
      {.d_model = 4, .layout = sinusoidal_layout::concatenated, .spacing = sinusoidal_spacing::endpoint});
  CHECK(t2t.inv_freq()[0] == 1.0);
  CHECK(t2t.inv_freq()[1] == Approx(1e-4).epsilon(1e-15));
}

TEST_CASE("sinusoidal: odd d policies", "[sinusoidal]") {
  const std::int64_t p = 7;
  const double x = 7.0;
  const double w1 = std::pow(1e4, -2.0 / 5.0), w2 = std::pow(1e4, -4.0 / 5.0);
  const double s0 = std::sin(x), c0 = std::cos(x), s1 = std::sin(w1 * x), c1 = std::cos(w1 * x), s2 = std::sin(w2 * x);
  // DistilBERT odd d: column d-1 = sin(p w_h) (extra_sin, the default).
  POSENC_CHECK_CLOSE(enc(sinusoidal(sinusoidal_config::distilbert(5)), p), (std::vector<double>{s0, c0, s1, c1, s2}),
                     1e-14, 0.0);
  // Marian odd d: sine block of ceil(d/2) columns.
  POSENC_CHECK_CLOSE(enc(sinusoidal(sinusoidal_config::marian(5)), p), (std::vector<double>{s0, s1, s2, c0, c1}), 1e-14,
                     0.0);
  // zero_pad: interleaved and concatenated get a zero last column.
  POSENC_CHECK_CLOSE(enc(sinusoidal({.d_model = 5, .odd_d = odd_d_policy::zero_pad}), p),
                     (std::vector<double>{s0, c0, s1, c1, 0.0}), 1e-14, 0.0);
  // fairseq d = 5: h = 2, endpoint spacing w = {1, 1e-4}, zero last column.
  const double e1 = 1e-4 * x;
  POSENC_CHECK_CLOSE(row_of(sinusoidal(sinusoidal_config::fairseq(5)), p),
                     (std::vector<double>{s0, std::sin(e1), c0, std::cos(e1), 0.0}), 1e-14, 0.0);
  // fairseq divides by h - 1 = 0 for d = 2, 3; we guard with max(h - 1, 1) as t2t does.
  POSENC_CHECK_CLOSE(row_of(sinusoidal(sinusoidal_config::fairseq(3)), p), (std::vector<double>{s0, c0, 0.0}), 1e-15,
                     0.0);
  POSENC_CHECK_CLOSE(row_of(sinusoidal(sinusoidal_config::fairseq(2)), p), (std::vector<double>{s0, c0}), 1e-15, 0.0);
  // d = 1 only with extra_sin.
  POSENC_CHECK_CLOSE(enc(sinusoidal({.d_model = 1}), p), (std::vector<double>{s0}), 1e-15, 0.0);
  const std::string msg = error_of([] { sinusoidal({.d_model = 5, .odd_d = odd_d_policy::error}); });
  CHECK(msg.find("sinusoidal.d_model = 5") != std::string::npos);
  CHECK_NOTHROW(sinusoidal({.d_model = 6, .odd_d = odd_d_policy::error}));
}

TEST_CASE("sinusoidal: add, scale, cache and float rows agree", "[sinusoidal]") {
  const sinusoidal plain({.d_model = 10, .scale = 0.5});
  const sinusoidal cached({.d_model = 10, .scale = 0.5, .cached_positions = 16});
  const sinusoidal copy = cached;
  for (std::int64_t p : {0, 1, 15, 16, 100000}) {
    const auto a = enc(plain, p);
    CHECK(a == enc(cached, p));
    CHECK(a == enc(copy, p));
    std::vector<double> row(10, 1.0);
    cached.add(p, std::span<double>(row));
    for (std::size_t c = 0; c < 10; ++c) CHECK(row[c] == 1.0 + a[c]);
    std::vector<float> rowf(10, 0.0f);
    plain.add(p, std::span<float>(rowf));
    CHECK(rowf == enc<float>(plain, p));
  }
  CHECK(enc(plain, 3)[0] == Approx(0.5 * std::sin(3.0)).epsilon(1e-15));
  // Large positions stay accurate (angles reduced in double): sin(2^30 * w_k) to ~1e-15 for every k
  // (glibc's sin of an exactly representable angle is the reference here).
  const std::int64_t big = std::int64_t{1} << 30;
  const auto row = enc(plain, big);
  for (std::size_t k = 0; k < 5; ++k) {
    const double a = std::ldexp(plain.inv_freq()[k], 30);  // exact: w * 2^30
    CHECK(std::fabs(row[2 * k] - 0.5 * std::sin(a)) < 1e-15);
    CHECK(std::fabs(row[2 * k + 1] - 0.5 * std::cos(a)) < 1e-15);
  }
}

TEST_CASE("sinusoidal: negative positions and the padding row", "[sinusoidal]") {
  const sinusoidal s(sinusoidal_config::distilbert(4));
  std::vector<double> out(4);
  CHECK(error_of([&] { s.encode(-1, std::span<double>(out)); }).find("position = -1") != std::string::npos);
  CHECK(error_of([&] { s.add(-3, std::span<double>(out)); }).find("allow_negative") != std::string::npos);
  auto cfg = sinusoidal_config::distilbert(4);
  cfg.allow_negative = true;
  const sinusoidal n(cfg);
  const auto neg = enc(n, -5), pos = enc(n, 5);
  CHECK(neg[0] == -pos[0]);
  CHECK(neg[1] == pos[1]);
  // fairseq: token position -1 lands on the padding row (zeros) when negatives are allowed.
  auto fs = sinusoidal_config::fairseq(4);
  fs.allow_negative = true;
  CHECK(enc(sinusoidal(fs), -1) == std::vector<double>(4, 0.0));
  std::vector<double> row{1, 2, 3, 4};
  sinusoidal(fs).add(-1, std::span<double>(row));
  CHECK(row == std::vector<double>{1, 2, 3, 4});
}

TEST_CASE("sinusoidal: invalid configuration names the parameter", "[sinusoidal][invalid]") {
  CHECK(error_of([] { sinusoidal({.d_model = 0}); }).find("sinusoidal.d_model = 0") != std::string::npos);
  CHECK(error_of([] { sinusoidal({.d_model = 1, .odd_d = odd_d_policy::zero_pad}); }).find("sinusoidal.d_model = 1") !=
        std::string::npos);
  CHECK(error_of([] { sinusoidal({.min_timescale = 0}); }).find("sinusoidal.min_timescale = 0") != std::string::npos);
  CHECK(error_of([] { sinusoidal({.max_timescale = -1}); }).find("sinusoidal.max_timescale = -1") != std::string::npos);
  CHECK(error_of([] { sinusoidal({.max_timescale = NAN}); }).find("sinusoidal.max_timescale") != std::string::npos);
  CHECK(error_of([] { sinusoidal({.scale = INFINITY}); }).find("sinusoidal.scale") != std::string::npos);
  CHECK(error_of([] { sinusoidal({.padding_idx = -1}); }).find("sinusoidal.padding_idx = -1") != std::string::npos);
  CHECK(error_of([] { sinusoidal({.cached_positions = -2}); }).find("sinusoidal.cached_positions = -2") !=
        std::string::npos);
  CHECK_NOTHROW(sinusoidal({.padding_idx = 0}));  // explicit 0 is a real index
}
