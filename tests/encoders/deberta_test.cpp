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

#include "support/check.hpp"
#include "support/golden.hpp"
#include "support/gradient_check.hpp"

using posenc::deberta_relative;
using posenc::deberta_relative_config;
using posenc::tensor_view;
using posenc_test::flatten;

namespace {

const nlohmann::json& golden() {
  static const nlohmann::json g = posenc_test::load_golden("deberta.json");
  return g;
}

/// x [rows, in] times W^T [out, in] plus b [out] (empty: none): an nn.Linear in double.
std::vector<double> linear(const std::vector<double>& x, std::ptrdiff_t in, const std::vector<double>& w,
                           const std::vector<double>& b) {
  const auto rows = static_cast<std::ptrdiff_t>(x.size()) / in;
  const auto out = static_cast<std::ptrdiff_t>(w.size()) / in;
  std::vector<double> y(static_cast<std::size_t>(rows * out));
  for (std::ptrdiff_t r = 0; r < rows; ++r)
    for (std::ptrdiff_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[static_cast<std::size_t>(o)];
      for (std::ptrdiff_t c = 0; c < in; ++c)
        s += x[static_cast<std::size_t>(r * in + c)] * w[static_cast<std::size_t>(o * in + c)];
      y[static_cast<std::size_t>(r * out + o)] = s;
    }
  return y;
}

std::vector<double> param(const nlohmann::json& c, const std::string& name) {
  const auto& p = c.at("parameters");
  return p.contains(name) ? flatten(p.at(name)) : std::vector<double>{};
}

/// The layer's q, k, v ([B, S, H, d] row-major), its tables and its encoder, as HF computes them.
struct layer {
  std::ptrdiff_t B = 0, S = 0, H = 0, d = 0;
  std::vector<double> q, k, v;
  std::vector<std::int64_t> lengths;
  deberta_relative_config config;
  std::vector<double> key_table, query_table;
};

layer build(const nlohmann::json& c) {
  const auto& cfg = c.at("config");
  layer L;
  L.B = c.at("batch");
  L.S = c.at("seq");
  L.H = cfg.at("num_attention_heads");
  const std::ptrdiff_t hs = cfg.at("hidden_size");
  L.d = hs / L.H;
  L.lengths = c.at("lengths").get<std::vector<std::int64_t>>();
  const auto x = flatten(c.at("hidden_states"));
  const auto rel = flatten(c.at("rel_embeddings"));
  bool c2p = false, p2c = false;
  for (const auto& t : cfg.at("pos_att_type")) (t == "c2p" ? c2p : p2c) = true;
  L.config = {.head_dim = L.d,
              .num_heads = L.H,
              .position_buckets = 0,
              .max_relative_positions = cfg.at("max_relative_positions"),
              .c2p = c2p,
              .p2c = p2c};
  const auto rows = static_cast<std::ptrdiff_t>(rel.size()) / hs;
  if (c.at("version") == "v2") {
    L.config.position_buckets = std::max<std::int64_t>(cfg.at("position_buckets").get<std::int64_t>(), 0);
    L.q = linear(x, hs, param(c, "query_proj.weight"), param(c, "query_proj.bias"));
    L.k = linear(x, hs, param(c, "key_proj.weight"), param(c, "key_proj.bias"));
    L.v = linear(x, hs, param(c, "value_proj.weight"), param(c, "value_proj.bias"));
    const bool shared = cfg.at("share_att_key");
    const std::string kp = shared ? "key_proj" : "pos_key_proj", qp = shared ? "query_proj" : "pos_query_proj";
    if (c2p)
      L.key_table = posenc::deberta_project_positions(rel, rows, param(c, kp + ".weight"), param(c, kp + ".bias"), hs);
    if (p2c)
      L.query_table =
          posenc::deberta_project_positions(rel, rows, param(c, qp + ".weight"), param(c, qp + ".bias"), hs);
  } else {  // v1: in_proj rows per head are [q (d), k (d), v (d)]; q_bias, v_bias added after
    const auto y = linear(x, hs, param(c, "in_proj.weight"), {});
    const auto qb = param(c, "q_bias"), vb = param(c, "v_bias");
    for (std::ptrdiff_t t = 0; t < L.B * L.S; ++t)
      for (std::ptrdiff_t h = 0; h < L.H; ++h)
        for (std::ptrdiff_t e = 0; e < L.d; ++e) {
          const double* r = y.data() + t * 3 * hs + h * 3 * L.d;
          L.q.push_back(r[e] + qb[static_cast<std::size_t>(h * L.d + e)]);
          L.k.push_back(r[L.d + e]);
          L.v.push_back(r[2 * L.d + e] + vb[static_cast<std::size_t>(h * L.d + e)]);
        }
    if (c2p) L.key_table = posenc::deberta_project_positions(rel, rows, param(c, "pos_proj.weight"), {}, hs);
    if (p2c)
      L.query_table =
          posenc::deberta_project_positions(rel, rows, param(c, "pos_q_proj.weight"), param(c, "pos_q_proj.bias"), hs);
  }
  return L;
}

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

/// The elements of [B, S, ...] (row size `row`) whose token is not padding (HF's padded query rows
/// attend uniformly to every key under its finfo.min mask; posenc's see the valid keys).
std::vector<double> valid_rows(const std::vector<double>& x, const layer& L, std::ptrdiff_t row) {
  std::vector<double> r;
  for (std::ptrdiff_t b = 0; b < L.B; ++b)
    for (std::ptrdiff_t i = 0; i < L.lengths[static_cast<std::size_t>(b)]; ++i)
      r.insert(r.end(), x.begin() + (b * L.S + i) * row, x.begin() + (b * L.S + i + 1) * row);
  return r;
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
