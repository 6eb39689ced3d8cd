// Shaw relative positions: the golden index matrices (t2t alignment), the golden attention case
// through a small local double loop, BERT's unclipped variant, per-head tables, invalid inputs.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/shaw.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::error_of;
using posenc_test::flatten;

namespace {
std::vector<double> iota_table(std::size_t n) {
  std::vector<double> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<double>(i);
  return t;
}
}  // namespace

TEST_CASE("shaw: golden index matrices (queries are the last Sq keys)", "[shaw][golden]") {
  const auto file = posenc_test::load_golden("shaw.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "index_matrix") continue;
    ++n;
    INFO("case " << c.at("id").get<std::string>());
    const auto k_max = c.at("max_relative_position").get<std::int64_t>();
    const auto sq = c.at("length_q").get<std::int64_t>(), sk = c.at("length_k").get<std::int64_t>();
    const auto cfg = shaw_relative_config::symmetric(k_max, 2);
    const auto t = iota_table(static_cast<std::size_t>(cfg.table_rows() * 2));
    const shaw_relative s(cfg, t, t);
    const auto expected = flatten(c.at("expected").at("index"));
    std::vector<double> got;
    if (c.at("cache").get<bool>()) {
      for (std::int64_t j = 0; j < sk; ++j) got.push_back(static_cast<double>(s.index(sk - 1, j)));
    } else {
      for (std::int64_t i = 0; i < sq; ++i)
        for (std::int64_t j = 0; j < sk; ++j) got.push_back(static_cast<double>(s.index(i + (sk - sq), j)));
    }
    CHECK(got == expected);
    // relative_key / relative_value return the indexed rows.
    const auto r = s.index(sk - sq, 0);
    CHECK(s.relative_key(0, sk - sq, 0)[0] == static_cast<double>(2 * r));
    CHECK(s.relative_value(3, sk - sq, 0)[1] == static_cast<double>(2 * r + 1));
  }
  CHECK(n == 3);
}

TEST_CASE("shaw: golden attention case through a local double loop", "[shaw][golden]") {
  const auto file = posenc_test::load_golden("shaw.json");
  const auto& c = posenc_test::golden_case(file, "shaw_attention_kmax2");
  const auto H = c.at("heads").get<std::size_t>(), L = c.at("length").get<std::size_t>(),
             D = c.at("depth").get<std::size_t>();
  const double scale = c.at("scale").get<double>();
  const auto q = flatten(c.at("inputs").at("q")), k = flatten(c.at("inputs").at("k")),
             v = flatten(c.at("inputs").at("v"));
  const auto tk = flatten(c.at("inputs").at("rel_keys_table")), tv = flatten(c.at("inputs").at("rel_values_table"));
  const shaw_relative s(shaw_relative_config::symmetric(c.at("max_relative_position").get<std::int64_t>(),
                                                        static_cast<std::ptrdiff_t>(D)),
                        tk, tv);
  std::vector<double> logits, weights, out, index;
  for (std::size_t h = 0; h < H; ++h) {
    for (std::size_t i = 0; i < L; ++i) {
      const auto pi = static_cast<std::int64_t>(i);
      std::vector<double> row(L);
      for (std::size_t j = 0; j < L; ++j) {
        const auto pj = static_cast<std::int64_t>(j);
        const auto ak = s.relative_key(static_cast<std::ptrdiff_t>(h), pi, pj);
        REQUIRE(ak.size() == D);
        double dot = 0;
        for (std::size_t e = 0; e < D; ++e) dot += q[(h * L + i) * D + e] * (k[(h * L + j) * D + e] + ak[e]);
        row[j] = scale * dot;
        if (h == 0) index.push_back(static_cast<double>(s.index(pi, pj)));
      }
      double mx = -INFINITY, sum = 0;
      for (double x : row) mx = std::max(mx, x);
      std::vector<double> w(L);
      for (std::size_t j = 0; j < L; ++j) sum += (w[j] = std::exp(row[j] - mx));
      for (auto& x : w) x /= sum;
      logits.insert(logits.end(), row.begin(), row.end());
      weights.insert(weights.end(), w.begin(), w.end());
      for (std::size_t e = 0; e < D; ++e) {
        double o = 0;
        for (std::size_t j = 0; j < L; ++j) {
          const auto av = s.relative_value(static_cast<std::ptrdiff_t>(h), pi, static_cast<std::int64_t>(j));
          o += w[j] * (v[(h * L + j) * D + e] + av[e]);
        }
        out.push_back(o);
      }
    }
  }
  CHECK(index == flatten(c.at("expected").at("index")));
  POSENC_CHECK_CLOSE(logits, flatten(c.at("expected").at("logits_fp64")), 1e-12, 0.0);
  POSENC_CHECK_CLOSE(weights, flatten(c.at("expected").at("weights_fp64")), 1e-12, 0.0);
  POSENC_CHECK_CLOSE(out, flatten(c.at("expected").at("out_fp64")), 1e-12, 0.0);
}

TEST_CASE("shaw: asymmetric clipping, sign, per-head tables", "[shaw]") {
  // CT2-style asymmetric window: distances -3..1 -> rows 0..4.
  const shaw_relative_config cfg{.head_dim = 1, .k_left = 3, .k_right = 1};
  const auto t = iota_table(5);
  const shaw_relative s(cfg, t, t);
  CHECK(s.index(10, 0) == 0);   // distance -10 clipped to -3
  CHECK(s.index(10, 9) == 2);   // distance -1
  CHECK(s.index(10, 10) == 3);  // 0
  CHECK(s.index(10, 50) == 4);  // +40 clipped to +1
  CHECK(s.index(-100, -98) == 4);
  auto flipped = cfg;
  flipped.sign = shaw_sign::query_minus_key;
  const shaw_relative f(flipped, t, t);
  CHECK(f.index(10, 9) == 4);  // q - k = +1
  CHECK(f.index(9, 10) == 2);  // -1

  // Per-head tables: head h row r holds 100 h + r.
  const shaw_relative_config ph{.head_dim = 1, .k_left = 1, .k_right = 1, .shared_across_heads = false, .num_heads = 3};
  std::vector<double> kt;
  for (int h = 0; h < 3; ++h)
    for (int r = 0; r < 3; ++r) kt.push_back(100.0 * h + r);
  const shaw_relative p(ph, kt, kt);
  CHECK(p.relative_key(2, 5, 6)[0] == 202.0);
  CHECK(p.relative_value(1, 5, 0)[0] == 100.0);
  const shaw_relative copy = p;
  CHECK(copy.relative_key(0, 0, 0).data() == p.relative_key(0, 0, 0).data());  // tables shared
}

TEST_CASE("shaw: HF BERT relative_key (unclipped, no value term)", "[shaw]") {
  const auto cfg = shaw_relative_config::bert_relative_key(4, 2);  // 7 rows, distance q - k + 3
  CHECK(cfg.table_rows() == 7);
  const auto t = iota_table(14);
  const std::vector<float> tf(t.begin(), t.end());
  const shaw_relative b(cfg, std::span<const float>(tf), std::span<const float>());
  CHECK(b.index(3, 0) == 6);
  CHECK(b.index(0, 3) == 0);
  CHECK(b.relative_key(0, 3, 0)[1] == 13.0);
  CHECK(b.relative_value(0, 3, 0).empty());
  const std::vector<std::int64_t> ok{0, 1, 2, 3}, bad{0, 4};
  CHECK_NOTHROW(b.check_positions(ok, ok));
  const std::string msg = error_of([&] { b.check_positions(bad, ok); });
  CHECK(msg.find("shaw.relative_distance = 4") != std::string::npos);
  CHECK(error_of([&] { b.check_positions(ok, bad); }).find("shaw.relative_distance = -4") != std::string::npos);
}

TEST_CASE("shaw: invalid configuration names the parameter", "[shaw][invalid]") {
  const auto t = iota_table(5 * 2);
  auto make = [&](shaw_relative_config c, std::size_t nk, std::size_t nv) {
    return shaw_relative(c, std::span<const double>(t).first(nk), std::span<const double>(t).first(nv));
  };
  CHECK(error_of([&] { make(shaw_relative_config::symmetric(0, 2), 2, 2); }).find("shaw.k_right = 0") !=
        std::string::npos);
  CHECK(error_of([&] { make({.head_dim = 2, .k_left = -1, .k_right = 2}, 4, 4); }).find("shaw.k_left = -1") !=
        std::string::npos);
  CHECK(error_of([&] { make({.head_dim = 0, .k_left = 2, .k_right = 2}, 0, 0); }).find("shaw.head_dim = 0") !=
        std::string::npos);
  CHECK(error_of([&] { make(shaw_relative_config::symmetric(2, 2), 9, 10); }).find("shaw.key_table.size = 9") !=
        std::string::npos);
  CHECK(error_of([&] { make(shaw_relative_config::symmetric(2, 2), 10, 8); }).find("shaw.value_table.size = 8") !=
        std::string::npos);
  CHECK(error_of([&] {
          make({.head_dim = 2, .k_left = 2, .k_right = 2, .use_value_term = false}, 10, 10);
        }).find("shaw.value_table.size = 10") != std::string::npos);
  CHECK(error_of([&] {
          make({.head_dim = 1, .k_left = 2, .k_right = 2, .shared_across_heads = false, .num_heads = 0}, 0, 0);
        }).find("shaw.num_heads = 0") != std::string::npos);
  CHECK(error_of([&] {
          make({.head_dim = 1, .k_left = 2, .k_right = 2, .shared_across_heads = false, .num_heads = 2}, 5, 5);
        }).find("shaw.key_table.size = 5") != std::string::npos);
}
