// DeBERTa's disentangled attention: buckets and whole attention layers against the reference code's
// own outputs (tests/golden/deberta.json, gen_deberta.py: HF DisentangledSelfAttention of v1 and
// v2, microsoft/DeBERTa's buckets), the distance forms, the gradients and the invalid inputs.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/deberta.hpp>

#include "encoders/deberta_layers.hpp"
#include "support/check.hpp"
#include "support/golden.hpp"
#include "support/gradient_check.hpp"

using posenc::deberta_relative;
using posenc::deberta_relative_config;
using posenc::tensor_view;
using posenc_test::flatten;
using namespace posenc_test::deberta_golden;

namespace {

/// out [B, S, H, d] and the weights [B, H, S, S] of sdpa on the layer, in T.
template <class T>
void run(const layer& L, std::vector<double>& out, std::vector<double>& weights) {
  const deberta_relative enc(L.config, L.key_table, L.query_table);
  const std::vector<T> q(L.q.begin(), L.q.end()), k(L.k.begin(), L.k.end()), v(L.v.begin(), L.v.end());
  std::vector<T> o(q.size());
  weights.assign(static_cast<std::size_t>(L.B * L.H * L.S * L.S), 0.0);
  posenc::sdpa(tensor_view<const T>::bthd(q.data(), L.B, L.S, L.H, L.d),
               tensor_view<const T>::bthd(k.data(), L.B, L.S, L.H, L.d),
               tensor_view<const T>::bthd(v.data(), L.B, L.S, L.H, L.d),
               tensor_view<T>::bthd(o.data(), L.B, L.S, L.H, L.d), enc, {.key_lengths = L.lengths, .weights = weights});
  out.assign(o.begin(), o.end());
}

std::vector<double> valid_weights(const std::vector<double>& w, const layer& L) {
  std::vector<double> r;
  for (std::ptrdiff_t b = 0; b < L.B; ++b)
    for (std::ptrdiff_t h = 0; h < L.H; ++h)
      for (std::ptrdiff_t i = 0; i < L.lengths[static_cast<std::size_t>(b)]; ++i) {
        const auto at = w.begin() + ((b * L.H + h) * L.S + i) * L.S;
        r.insert(r.end(), at, at + L.S);
      }
  return r;
}

}  // namespace

TEST_CASE("deberta: buckets equal HF make_log_bucket_position (and microsoft/DeBERTa's) at every distance",
          "[deberta][golden]") {
  int cases = 0;
  for (const auto& c : golden().at("cases")) {
    if (c.at("kind") != "buckets") continue;
    ++cases;
    const std::int64_t nb = c.at("position_buckets"), M = c.at("max_relative_positions");
    const std::int64_t first = c.at("relative_position_first");
    INFO(c.at("id").get<std::string>());
    for (const auto rule : {posenc::deberta_bucket_rule::hugging_face, posenc::deberta_bucket_rule::microsoft}) {
      const bool hf = rule == posenc::deberta_bucket_rule::hugging_face;
      const posenc::deberta_buckets buckets({.position_buckets = nb, .max_relative_positions = M, .rule = rule});
      const auto expected = c.at("expected").at(hf ? "hf" : "microsoft").get<std::vector<std::int64_t>>();
      std::int64_t bad = 0, first_bad = 0;
      for (std::size_t n = 0; n < expected.size(); ++n) {
        const std::int64_t r = first + static_cast<std::int64_t>(n);
        if (buckets(r) != expected[n] && bad++ == 0) first_bad = r;
      }
      INFO((hf ? "HF" : "microsoft") << ": first mismatch at r = " << first_bad);
      CHECK(bad == 0);
      // the table row stops changing where saturation() says (for HF: at the first and last rows,
      // and not before)
      const auto sat = buckets.saturation();
      const std::int64_t top = 2 * buckets.span() - 1, far = std::int64_t{1} << 50;
      CHECK(buckets.row(sat.hi) == buckets.row(far));
      CHECK(buckets.row(INT64_MIN) == buckets.row(-far));
      if (sat.lo != INT64_MIN) CHECK(buckets.row(sat.lo) == buckets.row(-far));
      if (hf) {
        CHECK(buckets.row(sat.hi) == top);
        CHECK(buckets.row(sat.hi - 1) < top);
        REQUIRE(sat.lo != INT64_MIN);
        CHECK(buckets.row(sat.lo) == 0);
        CHECK(buckets.row(sat.lo + 1) > 0);
      }
    }
  }
  CHECK(cases == 8);
}

TEST_CASE("deberta: HF and microsoft/DeBERTa differ only beyond max_relative_positions - 1 (v3 config)",
          "[deberta][golden]") {
  const auto& c = posenc_test::golden_case(golden(), "buckets_256_512");
  const auto hf = c.at("expected").at("hf").get<std::vector<std::int64_t>>();
  const auto ms = c.at("expected").at("microsoft").get<std::vector<std::int64_t>>();
  const std::int64_t first = c.at("relative_position_first");
  for (std::size_t n = 0; n < hf.size(); ++n) {
    const std::int64_t r = first + static_cast<std::int64_t>(n);
    if (std::abs(r) <= 511) CHECK(hf[n] == ms[n]);
  }
  const posenc::deberta_buckets h({}), m({.rule = posenc::deberta_bucket_rule::microsoft});
  CHECK(h(-600) < -256);  // HF keeps bucketing: its row clamps to 0 ...
  CHECK(h.row(-600) == 0);
  CHECK(m(-600) == -255);  // ... microsoft clamps the distance first: row 1
  CHECK(m.row(-600) == 1);
  CHECK(h.row(600) == 511);
  CHECK(m.row(600) == 511);
}

TEST_CASE(
    "deberta: attention layers equal HF DisentangledSelfAttention (v1, v2, shared and separate keys, "
    "every pos_att_type, padding)",
    "[deberta][golden]") {
  int cases = 0;
  for (const auto& c : golden().at("cases")) {
    if (c.at("kind") != "layer") continue;
    ++cases;
    INFO(c.at("id").get<std::string>());
    const layer L = build(c);
    const auto& e = c.at("expected");
    std::vector<double> out, weights;
    run<double>(L, out, weights);
    const std::ptrdiff_t row = L.H * L.d;
    POSENC_CHECK_CLOSE(valid_rows(out, L, row), valid_rows(flatten(e.at("context_fp64full")), L, row), 1e-13, 1e-12);
    POSENC_CHECK_CLOSE(valid_weights(weights, L), valid_weights(flatten(e.at("probs_fp64full")), L), 1e-14, 1e-12);
    run<float>(L, out, weights);  // float inputs vs the reference's float32 run
    POSENC_CHECK_CLOSE(valid_rows(out, L, row), valid_rows(flatten(e.at("context_fp32")), L, row), 2e-6, 0);
    if (c.at("version") == "v2") {  // the rows HF gathers, from its own relative_pos
      const deberta_relative enc(L.config, L.key_table, L.query_table);
      const auto rel = c.at("expected").at("relative_pos").get<std::vector<std::vector<std::int64_t>>>();
      for (std::int64_t i = 0; i < L.S; ++i)
        for (std::int64_t j = 0; j < L.S; ++j) {
          const std::int64_t span = L.config.buckets().span();
          CHECK(enc.row(i, j) == std::clamp(rel[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] + span,
                                            std::int64_t{0}, 2 * span - 1));
        }
    }
  }
  CHECK(cases == 13);
}

TEST_CASE("deberta: the scale rule and the terms each pos_att_type subset keeps", "[deberta]") {
  const auto rows = 2 * 4 * 2 * 2;  // table_rows 8 x heads 2 x head_dim 2
  const std::vector<double> t = posenc_test::random_values(static_cast<std::size_t>(rows), 3);
  const std::vector<double> none;
  auto cfg = deberta_relative_config::v3(2, 2, 4, 8);
  CHECK(deberta_relative(cfg, t, t).softmax_scale_multiplier() == Approx(1 / std::sqrt(3.0)).epsilon(1e-15));
  cfg.p2c = false;
  const deberta_relative c2p(cfg, t, none);
  CHECK(c2p.softmax_scale_multiplier() == Approx(1 / std::sqrt(2.0)).epsilon(1e-15));
  CHECK(c2p.relative_query(1, 3, 0)[0] == 0.0);  // no p2c: zeros
  CHECK(c2p.relative_key(1, 3, 0)[0] != 0.0);
  cfg.c2p = false;
  const deberta_relative neither(cfg, none, none);
  CHECK(neither.softmax_scale_multiplier() == 1.0);
  CHECK(neither.parameter_count() == 0);
  CHECK(neither.relative_value(0, 0, 0).empty());
}

TEST_CASE("deberta: the distance forms equal the pair forms, constant outside relative_distance_range()", "[deberta]") {
  for (const std::int64_t nb : {0, 4, 8}) {
    auto cfg = deberta_relative_config::v3(2, 3, nb, 12);
    const auto n = static_cast<std::size_t>(cfg.table_rows() * 2 * 3);
    const deberta_relative enc(cfg, posenc_test::random_values(n, 5), posenc_test::random_values(n, 6));
    const auto range = enc.relative_distance_range();
    INFO("position_buckets " << nb << ", range [" << range.lo << ", " << range.hi << "]");
    for (std::int64_t pq = -3; pq < 40; pq += 7)
      for (std::int64_t pk = -50; pk < 60; ++pk)
        for (std::ptrdiff_t h = 0; h < 2; ++h) {
          const std::int64_t d = pk - pq;
          CHECK(enc.relative_key(h, pq, pk).data() == enc.relative_key_at_distance(h, d).data());
          CHECK(enc.relative_query(h, pq, pk).data() == enc.relative_query_at_distance(h, d).data());
          const std::int64_t clamped = std::clamp(d, range.lo, range.hi);
          CHECK(enc.relative_key_at_distance(h, d).data() == enc.relative_key_at_distance(h, clamped).data());
        }
    CHECK(enc.row(0, INT64_MIN) == enc.row(0, -1000000));  // saturated int64 differences
    CHECK(enc.row(INT64_MAX, INT64_MIN) == 2 * cfg.buckets().span() - 1);
  }
}

TEST_CASE("deberta: sdpa_backward gradients of q, k, v and both tables pass finite differences",
          "[deberta][backward]") {
  using namespace posenc_test::fd;
  const shape s{.B = 2, .Sq = 6, .Sk = 6, .Hq = 2, .Hkv = 2, .D = 4, .Dv = 4};
  for (const std::int64_t nb : {0, 4}) {
    const auto cfg = deberta_relative_config::v3(2, 4, nb, 6);
    const auto n = static_cast<std::size_t>(cfg.table_rows() * 2 * 4);
    std::vector<double> both = posenc_test::random_values(2 * n, 21);
    auto make = [&](const std::vector<double>& x) {
      return deberta_relative(cfg, std::span<const double>(x).first(n), std::span<const double>(x).subspan(n));
    };
    SECTION("buckets " + std::to_string(nb) + ": inputs, padding") {
      const std::vector<std::int64_t> lengths{6, 4};
      check_inputs(problem(s), make(both), {.key_lengths = lengths});
    }
    SECTION("buckets " + std::to_string(nb) + ": tables, explicit positions, soft-cap") {
      const std::vector<std::int64_t> pos{0, 1, 2, 5, 9, 30, 3, 4, 5, 6, 7, 8};
      check_parameters(problem(s), both, make, {.logit_softcap = 2.0, .query_positions = pos, .key_positions = pos});
    }
  }
  SECTION("p2c only, with ALiBi, causal") {
    auto cfg = deberta_relative_config::v3(2, 4, 4, 6);
    cfg.c2p = false;
    const auto n = static_cast<std::size_t>(cfg.table_rows() * 2 * 4);
    auto make = [&](const std::vector<double>& x) {
      return posenc::combine(posenc::alibi({.num_heads = 2}), deberta_relative(cfg, std::span<const double>{}, x));
    };
    const auto t = posenc_test::random_values(n, 23);
    check_parameters(problem(s), t, make, {.causal = true});
    check_inputs(problem(s), make(t), {.causal = true});
  }
}

TEST_CASE("deberta: invalid configurations and tables are refused by name", "[deberta][invalid]") {
  using posenc_test::error_of;
  const std::vector<double> none;
  auto cfg = deberta_relative_config::v3(2, 4, 4, 8);
  const std::vector<double> ok(static_cast<std::size_t>(cfg.table_rows() * 2 * 4), 0.0);
  error_of([&] { deberta_relative(cfg, none, ok); }, "deberta.key_table.size");
  error_of([&] { deberta_relative(cfg, ok, std::vector<double>(3)); }, "deberta.query_table.size");
  cfg.c2p = false;
  error_of([&] { deberta_relative(cfg, ok, ok); }, "deberta.key_table.size");
  error_of([&] { deberta_relative(deberta_relative_config::v3(2, 4, 1, 8), ok, ok); }, "deberta.position_buckets");
  error_of([&] { deberta_relative(deberta_relative_config::v3(2, 4, 8, 5), ok, ok); },
           "deberta.max_relative_positions");
  error_of([&] { deberta_relative(deberta_relative_config::v1(2, 4, 0), ok, ok); }, "deberta.max_relative_positions");
  error_of([&] { deberta_relative(deberta_relative_config::v3(0, 4, 4, 8), ok, ok); }, "deberta.num_heads");
  error_of([&] { deberta_relative(deberta_relative_config::v3(2, 0, 4, 8), ok, ok); }, "deberta.head_dim");
  error_of([&] { (void)posenc::deberta_project_positions(ok, 8, std::vector<double>(5), {}, 8); },
           "deberta.projection.weight");
  // tables of 2 heads: sdpa on 3 heads and a combination with a 3-head bias are refused
  const deberta_relative enc(deberta_relative_config::v3(2, 4, 4, 8), ok, ok);
  std::vector<double> x(2 * 3 * 4, 0.5), out(x.size());
  const auto view = tensor_view<const double>::bthd(x.data(), 1, 2, 3, 4);
  posenc_test::refused<posenc::shape_error>(
      [&] { posenc::sdpa(view, view, view, tensor_view<double>::bthd(out.data(), 1, 2, 3, 4), enc); },
      "encoder.num_heads");
  error_of([&] { (void)posenc::combine(posenc::alibi({.num_heads = 3}), enc); }, "combined.num_heads");
}
