// T5 buckets: golden cases exact, docs/spec.md §5.3 tables, the threshold path against the float32
// reference over [-10^6, 10^6], monotonicity, the bias gather, invalid inputs.
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/t5.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::error_of;
using posenc_test::flatten;

TEST_CASE("t5: golden buckets are exact", "[t5][golden]") {
  const auto file = posenc_test::load_golden("t5_buckets.json");
  for (const auto& c : file.at("cases")) {
    INFO("case " << c.at("id").get<std::string>());
    const bool bi = c.at("bidirectional");
    const int nb = c.at("num_buckets"), md = c.at("max_distance");
    const t5_buckets b({.num_buckets = nb, .max_distance = md, .bidirectional = bi});
    const auto& r = c.at("relative_position");
    const auto& e = c.at("expected").at("bucket");
    REQUIRE(r.size() == e.size());
    int mismatches = 0;
    for (std::size_t k = 0; k < r.size(); ++k) {
      const auto rp = r[k].get<std::int64_t>();
      const int want = e[k].get<int>();
      if (b(rp) != want || t5_bucket_reference_fp32(rp, bi, nb, md) != want || t5_bucket(rp, bi, nb, md) != want) {
        ++mismatches;
        UNSCOPED_INFO("r = " << rp << ": thresholds " << b(rp) << ", fp32 " << t5_bucket_reference_fp32(rp, bi, nb, md)
                             << ", expected " << want);
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("t5: docs/spec.md §5.3 tables", "[t5]") {
  // Bidirectional N=32, M=128: first |r| of each log bucket 8..15 (add 16 for r > 0).
  const t5_buckets bi({});
  CHECK(std::vector<std::int64_t>(bi.thresholds().begin(), bi.thresholds().end()) ==
        std::vector<std::int64_t>{12, 16, 23, 32, 46, 64, 91});
  for (int n = 0; n < 8; ++n) CHECK(bi(-n) == n);
  CHECK(bi(-8) == 8);
  CHECK(bi(-11) == 8);
  CHECK(bi(11) == 24);
  CHECK(bi(-90) == 14);
  CHECK(bi(-91) == 15);
  CHECK(bi(1000000) == 31);
  CHECK(bi(0) == 0);
  CHECK(bi(1) == 17);
  // Causal N=32, M=128: n = max(-r, 0).
  const t5_buckets causal({.bidirectional = false});
  CHECK(std::vector<std::int64_t>(causal.thresholds().begin(), causal.thresholds().end()) ==
        std::vector<std::int64_t>{19, 21, 24, 27, 31, 35, 40, 46, 52, 59, 67, 77, 87, 99, 113});
  CHECK(causal(5) == 0);  // future keys collapse into bucket 0
  CHECK(causal(-15) == 15);
  CHECK(causal(-16) == 16);
  CHECK(causal(-112) == 30);
  CHECK(causal(-113) == 31);
}

TEST_CASE("t5: thresholds equal the float32 formula over [-1e6, 1e6], monotone in |r|", "[t5][sweep]") {
  const std::vector<t5_bias_config> configs{
      {.num_buckets = 32, .max_distance = 128, .bidirectional = true},
      {.num_buckets = 32, .max_distance = 128, .bidirectional = false},
      {.num_buckets = 64, .max_distance = 256, .bidirectional = true},
      {.num_buckets = 64, .max_distance = 128, .bidirectional = false},
      {.num_buckets = 32, .max_distance = 256, .bidirectional = true},
      {.num_buckets = 4, .max_distance = 2, .bidirectional = true},
      {.num_buckets = 2, .max_distance = 2, .bidirectional = false},
      {.num_buckets = 33, .max_distance = 9, .bidirectional = true},
      {.num_buckets = 128, .max_distance = 4096, .bidirectional = false},
      {.num_buckets = 320, .max_distance = 1000, .bidirectional = true},
      {.num_buckets = 1024, .max_distance = 100000, .bidirectional = true},
  };
  for (const auto& c : configs) {
    INFO("N = " << c.num_buckets << ", M = " << c.max_distance << ", bidirectional = " << c.bidirectional);
    const t5_buckets b(c);
    const std::int64_t exhaustive = 4 * static_cast<std::int64_t>(c.max_distance);
    std::int64_t mismatches = 0, checked = 0;
    int prev_neg = -1, prev_pos = -1, not_monotone = 0;
    auto visit = [&](std::int64_t n) {
      for (const std::int64_t r : {-n, n}) {
        const int got = b(r);
        ++checked;
        if (got != t5_bucket_reference_fp32(r, c.bidirectional, c.num_buckets, c.max_distance)) ++mismatches;
        if (got < 0 || got >= c.num_buckets) ++mismatches;
      }
      // Monotone in |r| on each side.
      const int bn = b(-n), bp = b(n);
      if (bn < prev_neg || bp < prev_pos) ++not_monotone;
      prev_neg = bn;
      prev_pos = bp;
    };
    for (std::int64_t n = 0; n <= exhaustive; ++n) visit(n);
    // Strided beyond, plus both sides of every threshold.
    for (std::int64_t n = exhaustive + 1; n <= 1000000; n += 97) visit(n);
    for (const auto t : b.thresholds())
      for (const std::int64_t n : {t - 1, t, t + 1})
        for (const std::int64_t r : {-n, n})
          if (b(r) != t5_bucket_reference_fp32(r, c.bidirectional, c.num_buckets, c.max_distance)) ++mismatches;
    for (const std::int64_t n : {std::int64_t{1000000}, std::int64_t{1} << 40, INT64_MAX})
      for (const std::int64_t r : {-n, n})
        if (b(r) != t5_bucket_reference_fp32(r, c.bidirectional, c.num_buckets, c.max_distance)) ++mismatches;
    CHECK(mismatches == 0);
    CHECK(not_monotone == 0);
    CHECK(checked > 2 * exhaustive);
    // Saturation: the largest bucket is reached at max_distance at the latest (up to fp32 rounding).
    CHECK(b(-c.max_distance - 1) == (c.bidirectional ? c.num_buckets / 2 - 1 : c.num_buckets - 1));
  }
}

TEST_CASE("t5: bias gathers table[bucket(j - i), h] (attention_e2e T5 case)", "[t5][golden]") {
  const auto file = posenc_test::load_golden("attention_e2e.json");
  const auto& c = posenc_test::golden_case(file, "e2e_t5_seed0");
  const auto& p = c.at("params");
  const auto table = flatten(c.at("inputs").at("t5_bias_table"));
  const t5_bias bias({.num_buckets = p.at("num_buckets"),
                      .max_distance = p.at("max_distance"),
                      .bidirectional = p.at("bidirectional"),
                      .num_heads = c.at("heads")},
                     table);
  const auto S = c.at("seq_len").get<std::int64_t>();
  const auto buckets = flatten(p.at("bucket"));
  std::vector<double> got, got_buckets;
  for (std::ptrdiff_t h = 0; h < bias.num_heads(); ++h)
    for (std::int64_t i = 0; i < S; ++i)
      for (std::int64_t j = 0; j < S; ++j) {
        got.push_back(bias.bias(h, i, j));
        if (h == 0) got_buckets.push_back(bias.buckets()(j - i));
      }
  CHECK(got_buckets == buckets);
  POSENC_CHECK_CLOSE(got, flatten(c.at("expected").at("bias")), 0.0, 0.0);
  // Only the difference matters: shifting both positions leaves the bias unchanged.
  CHECK(bias.bias(2, 1000 + 7, 1000 + 3) == bias.bias(2, 7, 3));
  // float tables give the same biases.
  const std::vector<float> tf(table.begin(), table.end());
  const t5_bias fb(bias.config(), std::span<const float>(tf));
  CHECK(fb.bias(3, 8, 0) == bias.bias(3, 8, 0));
}

TEST_CASE("t5: invalid configuration names the parameter", "[t5][invalid]") {
  CHECK(error_of([] { t5_buckets({.num_buckets = 3, .bidirectional = true}); }).find("t5.num_buckets = 3") !=
        std::string::npos);
  CHECK(error_of([] { t5_buckets({.num_buckets = 1, .bidirectional = false}); }).find("t5.num_buckets = 1") !=
        std::string::npos);
  CHECK(error_of([] { t5_buckets({.num_buckets = 0}); }).find("t5.num_buckets = 0") != std::string::npos);
  CHECK(error_of([] { t5_buckets({.num_buckets = 32, .max_distance = 8}); }).find("t5.max_distance = 8") !=
        std::string::npos);
  CHECK(error_of([] {
          t5_buckets({.num_buckets = 32, .max_distance = 16, .bidirectional = false});
        }).find("t5.max_distance = 16") != std::string::npos);
  CHECK_NOTHROW(t5_buckets({.num_buckets = 32, .max_distance = 9}));
  CHECK(error_of([] { (void)t5_bucket(5, true, 2, 128); }).find("t5.num_buckets = 2") != std::string::npos);
  CHECK(error_of([] { (void)t5_bucket_reference_fp32(5, true, 32, 0); }).find("t5.max_distance = 0") !=
        std::string::npos);
  const std::vector<double> table(32 * 8, 0.0);
  CHECK(error_of([&] {
          t5_bias({.num_heads = 0}, std::span<const double>(table).first(0));
        }).find("t5.num_heads = 0") != std::string::npos);
  CHECK(error_of([&] { t5_bias({.num_heads = 4}, table); }).find("t5.table.size = 256") != std::string::npos);
  CHECK_NOTHROW(t5_bias({}, table));
}
