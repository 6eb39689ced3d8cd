// ALiBi: golden slopes (fp64 and fp32) and BLOOM rows, docs/spec.md §6.1, the bias forms and their
// equality under a causal softmax, tensor-parallel slicing, overrides, invalid inputs.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/alibi.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::error_of;
using posenc_test::flatten;

namespace {
// Causal softmax of row i: keys with pos_k > pos_q get weight 0.
std::vector<double> causal_softmax_row(const alibi& a, std::ptrdiff_t h, std::int64_t pq,
                                       const std::vector<std::int64_t>& pk, const std::vector<double>& logits) {
  std::vector<double> w(pk.size(), 0.0);
  double mx = -INFINITY, sum = 0;
  for (std::size_t j = 0; j < pk.size(); ++j)
    if (pk[j] <= pq) mx = std::max(mx, logits[j] + a.bias(h, pq, pk[j]));
  for (std::size_t j = 0; j < pk.size(); ++j)
    if (pk[j] <= pq) sum += (w[j] = std::exp(logits[j] + a.bias(h, pq, pk[j]) - mx));
  for (auto& x : w) x /= sum;
  return w;
}
}  // namespace

TEST_CASE("alibi: golden slopes (ofirpress fp64, BLOOM fp32) and BLOOM rows", "[alibi][golden]") {
  const auto file = posenc_test::load_golden("alibi_slopes.json");
  for (const auto& c : file.at("cases")) {
    INFO("case " << c.at("id").get<std::string>());
    const auto n = c.at("n_heads").get<std::int64_t>();
    const auto& e = c.at("expected");
    const auto s = alibi_slopes(n);
    POSENC_CHECK_CLOSE(s, flatten(e.at("slopes_fp64")), 0.0, 1e-14);
    const std::vector<float> s32(s.begin(), s.end());
    POSENC_CHECK_CLOSE(s32, flatten(e.at("slopes_fp32")), 0.0, 1e-6);
    // BLOOM: bias = slope_h * key_position (row shift), keys 0..7 (any query row).
    const alibi a({.num_heads = n, .mode = alibi_mode::causal_row_shift});
    const auto keys = flatten(e.at("bloom_alibi_key_positions"));
    std::vector<double> rows;
    for (std::ptrdiff_t h = 0; h < a.num_heads(); ++h)
      for (const double k : keys) rows.push_back(a.bias(h, 7, static_cast<std::int64_t>(k)));
    POSENC_CHECK_CLOSE(rows, flatten(e.at("bloom_alibi_row_fp32")), 1e-12, 1e-6);
  }
}

TEST_CASE("alibi: docs/spec.md §6.1 slopes", "[alibi]") {
  auto p2 = [](double e) { return std::exp2(e); };
  CHECK(alibi_slopes(1) == std::vector<double>{p2(-8)});
  CHECK(alibi_slopes(2) == std::vector<double>{p2(-4), p2(-8)});
  CHECK(alibi_slopes(3) == std::vector<double>{p2(-4), p2(-8), p2(-2)});
  CHECK(alibi_slopes(6) == std::vector<double>{p2(-2), p2(-4), p2(-6), p2(-8), p2(-1), p2(-3)});
  POSENC_CHECK_CLOSE(alibi_slopes(12),
                     (std::vector<double>{p2(-1), p2(-2), p2(-3), p2(-4), p2(-5), p2(-6), p2(-7), p2(-8), p2(-0.5),
                                          p2(-1.5), p2(-2.5), p2(-3.5)}),
                     0.0, 1e-15);
  // Every n in 1..128 against the closed form 2^(-b (h+1)/n) / 2^(-b (2t+1)/(2c)).
  for (const double b : {8.0, 16.0, 5.5}) {
    for (std::int64_t n = 1; n <= 128; ++n) {
      std::int64_t c = 1;
      while (c * 2 <= n) c *= 2;
      std::vector<double> want;
      for (std::int64_t h = 0; h < c; ++h) want.push_back(p2(-b * static_cast<double>(h + 1) / static_cast<double>(c)));
      for (std::int64_t t = 0; t < n - c; ++t)
        want.push_back(p2(-b * static_cast<double>(2 * t + 1) / static_cast<double>(2 * c)));
      INFO("n = " << n << ", max_bias = " << b);
      POSENC_CHECK_CLOSE(alibi_slopes(n, b), want, 0.0, 1e-14);
    }
  }
}

TEST_CASE("alibi: bias forms", "[alibi]") {
  const alibi sym({.num_heads = 2});
  const alibi tru({.num_heads = 2, .mode = alibi_mode::causal_true_distance});
  const alibi row({.num_heads = 2, .mode = alibi_mode::causal_row_shift});
  const double m0 = std::exp2(-4.0);
  CHECK(sym.bias(0, 10, 7) == -3 * m0);
  CHECK(sym.bias(0, 7, 10) == -3 * m0);
  CHECK(tru.bias(0, 10, 7) == -3 * m0);
  CHECK(tru.bias(0, 7, 10) == 3 * m0);  // future key: same line, masked by the attention
  CHECK(row.bias(0, 10, 7) == 7 * m0);
  CHECK(row.bias(1, 10, 7) == 7 * std::exp2(-8.0));
  CHECK(sym.bias(1, 5, 5) == 0.0);
  // attention_e2e ALiBi case: bias[h,i,j] = slope_h * (j - i) (before masking) = causal_true_distance.
  const auto file = posenc_test::load_golden("attention_e2e.json");
  const auto& c = posenc_test::golden_case(file, "e2e_alibi_seed0");
  const auto slopes = flatten(c.at("params").at("slopes"));
  const auto H = c.at("heads").get<std::int64_t>(), S = c.at("seq_len").get<std::int64_t>();
  CHECK(alibi_slopes(H) == slopes);
  const alibi e2e({.num_heads = H, .mode = alibi_mode::causal_true_distance});
  std::vector<double> got;
  for (std::ptrdiff_t h = 0; h < H; ++h)
    for (std::int64_t i = 0; i < S; ++i)
      for (std::int64_t j = 0; j < S; ++j) got.push_back(e2e.bias(h, i, j));
  POSENC_CHECK_CLOSE(got, flatten(c.at("expected").at("bias")), 0.0, 0.0);
}

TEST_CASE("alibi: row shift == true distance == symmetric under a causal softmax", "[alibi]") {
  // Left-padded row: real tokens at positions 0..6 after 3 pads (pads excluded by the caller); the
  // positions are explicit, with a gap to model packing/cache offsets.
  const std::vector<std::int64_t> pk{0, 1, 2, 3, 4, 5, 6, 40, 41, 42};
  const alibi sym({.num_heads = 5});
  const alibi tru({.num_heads = 5, .mode = alibi_mode::causal_true_distance});
  const alibi row({.num_heads = 5, .mode = alibi_mode::causal_row_shift});
  std::vector<double> logits(pk.size());
  for (std::size_t j = 0; j < pk.size(); ++j) logits[j] = std::sin(0.7 * static_cast<double>(j) + 0.3);
  for (std::ptrdiff_t h = 0; h < 5; ++h) {
    for (const std::int64_t pq : pk) {
      INFO("head " << h << ", query position " << pq);
      const auto a = causal_softmax_row(tru, h, pq, pk, logits);
      POSENC_CHECK_CLOSE(causal_softmax_row(row, h, pq, pk, logits), a, 1e-14, 0.0);
      POSENC_CHECK_CLOSE(causal_softmax_row(sym, h, pq, pk, logits), a, 1e-14, 0.0);
    }
  }
  // ... and not without the mask (the row shift is not a distance).
  CHECK(row.bias(0, 6, 42) != tru.bias(0, 6, 42));
  CHECK(sym.bias(0, 6, 42) != tru.bias(0, 6, 42));
}

TEST_CASE("alibi: tensor-parallel slicing and slope override", "[alibi]") {
  const auto all = alibi_slopes(12);
  const alibi shard({.num_heads = 12, .head_start = 4, .local_heads = 4});
  REQUIRE(shard.num_heads() == 4);
  CHECK(shard.total_heads() == 12);
  for (std::ptrdiff_t h = 0; h < 4; ++h) CHECK(shard.slopes()[static_cast<std::size_t>(h)] == all[4 + h]);
  CHECK(shard.bias(3, 9, 0) == -9 * all[7]);
  const alibi tail({.num_heads = 12, .head_start = 8});
  CHECK(tail.num_heads() == 4);
  CHECK(tail.slopes()[0] == all[8]);
  const alibi over({.num_heads = 2, .slopes = {0.5, 0.125}});
  CHECK(over.bias(1, 8, 0) == -1.0);
  const alibi big({.num_heads = 4, .max_bias = 16});
  CHECK(big.slopes()[0] == std::exp2(-4.0));
  const alibi copy = shard;
  CHECK(copy.slopes().data() == shard.slopes().data());
}

TEST_CASE("alibi: invalid configuration names the parameter", "[alibi][invalid]") {
  CHECK(error_of([] { alibi({.num_heads = 0}); }).find("alibi.num_heads = 0") != std::string::npos);
  CHECK(error_of([] { (void)alibi_slopes(-3); }).find("alibi.num_heads = -3") != std::string::npos);
  CHECK(error_of([] { alibi({.max_bias = 0}); }).find("alibi.max_bias = 0") != std::string::npos);
  CHECK(error_of([] { alibi({.max_bias = -8}); }).find("alibi.max_bias = -8") != std::string::npos);
  CHECK(error_of([] { alibi({.max_bias = NAN}); }).find("alibi.max_bias") != std::string::npos);
  CHECK(error_of([] { alibi({.num_heads = 4, .slopes = {1, 2}}); }).find("alibi.slopes.size = 2") != std::string::npos);
  CHECK(error_of([] { alibi({.num_heads = 2, .slopes = {1, INFINITY}}); }).find("alibi.slopes") != std::string::npos);
  CHECK(error_of([] { alibi({.num_heads = 4, .head_start = 4}); }).find("alibi.head_start = 4") != std::string::npos);
  CHECK(error_of([] { alibi({.num_heads = 4, .head_start = -1}); }).find("alibi.head_start = -1") != std::string::npos);
  CHECK(error_of([] { alibi({.num_heads = 4, .head_start = 2, .local_heads = 3}); }).find("alibi.local_heads = 3") !=
        std::string::npos);
  CHECK(error_of([] { alibi({.num_heads = 4, .local_heads = 0}); }).find("alibi.local_heads = 0") != std::string::npos);
}
