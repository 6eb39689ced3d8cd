// tests/attention/backward_fast_test.cpp — posenc::attention_backward (fused, fp32) against the
// sdpa_backward oracle (double) on the same float inputs, for every encoder and mask option; the
// forward's log-sum-exp output; bit-identical results for 1, 2 and 3 threads.
//
// Tolerance: every gradient tensor within 1e-6 (1 + A) max|oracle| of the oracle, A = max |logit|
// of the call. Why: the weights are recomputed in fp32 from the forward's fp32 log-sum-exp (each
// p_ij within ~5e-7 (1 + A) relative: the forward's bound, attention.hpp), and each gradient
// element is an fp32 sum of D, Dv, Sq or Sk products (here <= 200 terms: 200 * 2^-24 = 1.2e-5
// relative to the sum of magnitudes, and the sums of magnitudes stay within a small factor of
// max|oracle| on these random inputs). The measured worst case is reported by the failing check.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/attention_backward.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "attention_support.hpp"

using posenc::attention_gradients;
using posenc::attention_options;
using posenc::tensor_view;

namespace {

constexpr double fused_tol = 1e-6;

struct fused_shape {
  std::ptrdiff_t B = 2, Sq = 150, Sk = 150, Hq = 4, Hkv = 2, D = 32, Dv = 24;
};

std::vector<float> floats(std::size_t n, std::uint64_t seed, double scale = 1) {
  const auto d = posenc_test::random_values(n, seed);
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = static_cast<float>(d[i] * scale);
  return f;
}

struct data {
  fused_shape s;
  std::vector<float> q, k, v, dout;
  explicit data(fused_shape x) : s(x) {
    q = floats(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.D), 1, 1.5);
    k = floats(static_cast<std::size_t>(s.B * s.Sk * s.Hkv * s.D), 2, 1.5);
    v = floats(static_cast<std::size_t>(s.B * s.Sk * s.Hkv * s.Dv), 3);
    dout = floats(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.Dv), 4);
  }
};

struct result {
  std::vector<float> dq, dk, dv, lse;
  std::vector<double> enc, sinks;
};

template <class E>
result run_fused(const data& x, const E& enc, const attention_options& o, std::size_t n_params,
                 posenc::fast_attention_options f = {}) {
  const auto s = x.s;
  const auto q = tensor_view<const float>::bthd(x.q.data(), s.B, s.Sq, s.Hq, s.D);
  const auto k = tensor_view<const float>::bthd(x.k.data(), s.B, s.Sk, s.Hkv, s.D);
  const auto v = tensor_view<const float>::bthd(x.v.data(), s.B, s.Sk, s.Hkv, s.Dv);
  std::vector<float> out(x.dout.size());
  result r;
  r.lse.resize(static_cast<std::size_t>(s.B * s.Hq * s.Sq));
  f.log_sum_exp = r.lse;
  const auto ov = tensor_view<float>::bthd(out.data(), s.B, s.Sq, s.Hq, s.Dv);
  posenc::attention(q, k, v, ov, enc, o, f);
  f.log_sum_exp = {};
  r.dq.resize(x.q.size());
  r.dk.resize(x.k.size());
  r.dv.resize(x.v.size());
  r.enc.assign(n_params, 0.0);
  r.sinks.assign(o.sinks.size(), 0.0);
  posenc::attention_backward(q, k, v, tensor_view<const float>(ov), std::span<const float>(r.lse),
                             tensor_view<const float>::bthd(x.dout.data(), s.B, s.Sq, s.Hq, s.Dv),
                             tensor_view<float>::bthd(r.dq.data(), s.B, s.Sq, s.Hq, s.D),
                             tensor_view<float>::bthd(r.dk.data(), s.B, s.Sk, s.Hkv, s.D),
                             tensor_view<float>::bthd(r.dv.data(), s.B, s.Sk, s.Hkv, s.Dv), enc, o,
                             attention_gradients{.encoder = r.enc, .sinks = r.sinks}, f);
  return r;
}

template <class E>
result run_oracle(const data& x, const E& enc, const attention_options& o, std::size_t n_params) {
  const auto s = x.s;
  const std::vector<double> q(x.q.begin(), x.q.end()), k(x.k.begin(), x.k.end()), v(x.v.begin(), x.v.end()),
      dout(x.dout.begin(), x.dout.end());
  std::vector<double> dq(q.size()), dk(k.size()), dv(v.size());
  result r;
  r.enc.assign(n_params, 0.0);
  r.sinks.assign(o.sinks.size(), 0.0);
  posenc::sdpa_backward(tensor_view<const double>::bthd(q.data(), s.B, s.Sq, s.Hq, s.D),
                        tensor_view<const double>::bthd(k.data(), s.B, s.Sk, s.Hkv, s.D),
                        tensor_view<const double>::bthd(v.data(), s.B, s.Sk, s.Hkv, s.Dv),
                        tensor_view<const double>::bthd(dout.data(), s.B, s.Sq, s.Hq, s.Dv),
                        tensor_view<double>::bthd(dq.data(), s.B, s.Sq, s.Hq, s.D),
                        tensor_view<double>::bthd(dk.data(), s.B, s.Sk, s.Hkv, s.D),
                        tensor_view<double>::bthd(dv.data(), s.B, s.Sk, s.Hkv, s.Dv), enc, o,
                        attention_gradients{.encoder = r.enc, .sinks = r.sinks});
  r.dq.assign(dq.begin(), dq.end());
  r.dk.assign(dk.begin(), dk.end());
  r.dv.assign(dv.begin(), dv.end());
  return r;
}

// A = max |logit| over the call: scale |q.k| + |bias| (+ |q.aK|) bounded by the sdpa weights' log
// range is awkward to get; a bound from the inputs suffices: scale * max|q| * max|k| * D + max|bias|.
double logit_bound(const data& x, double scale, double max_bias) {
  double mq = 0, mk = 0;
  for (float e : x.q) mq = std::max(mq, static_cast<double>(std::fabs(e)));
  for (float e : x.k) mk = std::max(mk, static_cast<double>(std::fabs(e)));
  return scale * mq * mk * static_cast<double>(x.s.D) + max_bias;
}

template <class A, class B>
void expect_near(const std::vector<A>& got, const std::vector<B>& want, double A_bound, const char* what) {
  REQUIRE(got.size() == want.size());
  double mx = 0, worst = 0;
  for (const B& w : want) mx = std::max(mx, std::fabs(static_cast<double>(w)));
  for (std::size_t n = 0; n < got.size(); ++n)
    worst = std::max(worst, std::fabs(static_cast<double>(got[n]) - static_cast<double>(want[n])));
  const double rel = mx == 0 ? worst : worst / (mx * (1 + A_bound));
  INFO(what << ": max |fused - oracle| = " << worst << ", max |oracle| = " << mx << ", A <= " << A_bound << ", ratio "
            << rel);
  CHECK(rel <= fused_tol);
  CHECK(mx > 0);
}

template <class E>
void compare(const data& x, const E& enc, const attention_options& o, std::size_t n_params = 0, double max_bias = 0) {
  const result f = run_fused(x, enc, o, n_params), r = run_oracle(x, enc, o, n_params);
  const double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(x.s.D)));
  const double A = o.logit_softcap ? *o.logit_softcap + max_bias : logit_bound(x, scale, max_bias);
  expect_near(f.dq, r.dq, A, "dq");
  expect_near(f.dk, r.dk, A, "dk");
  expect_near(f.dv, r.dv, A, "dv");
  if (n_params > 0) expect_near(f.enc, r.enc, A, "encoder parameters");
  if (!o.sinks.empty()) expect_near(f.sinks, r.sinks, A, "sinks");
}

struct masks {
  std::vector<std::int64_t> pq, pk, lengths;
  std::vector<std::uint8_t> key_mask;
  std::vector<std::int32_t> qseg, kseg;
  std::vector<double> sinks{0.5, -1.0, 2.0, 0.0};
  explicit masks(const fused_shape& s) : lengths{s.Sk, s.Sk * 2 / 3} {
    for (std::ptrdiff_t b = 0; b < s.B; ++b) {
      for (std::ptrdiff_t i = 0; i < s.Sq; ++i) pq.push_back(b * 7 + i + (s.Sk - s.Sq));
      for (std::ptrdiff_t j = 0; j < s.Sk; ++j) {
        pk.push_back(b * 7 + j);
        key_mask.push_back(j % 5 == 3 ? 0 : 1);
        kseg.push_back(static_cast<std::int32_t>(j / 40));
      }
      for (std::ptrdiff_t i = 0; i < s.Sq; ++i) qseg.push_back(static_cast<std::int32_t>((i + (s.Sk - s.Sq)) / 40));
    }
  }
  std::vector<std::pair<const char*, attention_options>> cases() const {
    return {{"none", {}},
            {"causal", {.causal = true}},
            {"causal, explicit positions", {.causal = true, .query_positions = pq, .key_positions = pk}},
            {"sliding window", {.causal = true, .sliding_window = 50}},
            {"padding", {.causal = true, .key_lengths = lengths, .key_mask = key_mask}},
            {"segments", {.causal = true, .query_segments = qseg, .key_segments = kseg}},
            {"attention chunk", {.attention_chunk = 70, .query_positions = pq, .key_positions = pk}},
            {"soft-cap", {.causal = true, .logit_softcap = 5.0}},
            {"sinks", {.causal = true, .sinks = sinks}}};
  }
};

}  // namespace

namespace {

/// The forward's log-sum-exp against log(sum_j exp(l_ij) + exp(sink)) in double, causal, NoPE.
void check_lse(const data& x, const std::vector<double>& sinks) {
  const auto s = x.s;
  const attention_options o{.causal = true, .sinks = sinks};
  std::vector<float> lse(static_cast<std::size_t>(s.Hq * s.Sq)), out(x.dout.size());
  posenc::attention(tensor_view<const float>::bthd(x.q.data(), 1, s.Sq, s.Hq, s.D),
                    tensor_view<const float>::bthd(x.k.data(), 1, s.Sk, s.Hkv, s.D),
                    tensor_view<const float>::bthd(x.v.data(), 1, s.Sk, s.Hkv, s.Dv),
                    tensor_view<float>::bthd(out.data(), 1, s.Sq, s.Hq, s.Dv), posenc::no_position{}, o,
                    {.log_sum_exp = lse});
  const double scale = 1 / std::sqrt(static_cast<double>(s.D));
  const std::ptrdiff_t G = s.Hq / s.Hkv;
  for (std::ptrdiff_t h = 0; h < s.Hq; ++h)
    for (std::ptrdiff_t i = 0; i < s.Sq; ++i) {
      double m = sinks.empty() ? -std::numeric_limits<double>::infinity() : sinks[static_cast<std::size_t>(h)];
      std::vector<double> l;
      for (std::ptrdiff_t j = 0; j <= s.Sk - s.Sq + i; ++j) {
        double dot = 0;
        for (std::ptrdiff_t d = 0; d < s.D; ++d)
          dot += static_cast<double>(x.q[static_cast<std::size_t>((i * s.Hq + h) * s.D + d)]) *
                 static_cast<double>(x.k[static_cast<std::size_t>((j * s.Hkv + h / G) * s.D + d)]);
        l.push_back(scale * dot);
        m = std::max(m, scale * dot);
      }
      double den = sinks.empty() ? 0 : std::exp(sinks[static_cast<std::size_t>(h)] - m);
      for (double e : l) den += std::exp(e - m);
      const double want = m + std::log(den);
      CHECK(std::fabs(lse[static_cast<std::size_t>(h * s.Sq + i)] - want) <= 1e-6 * (1 + std::fabs(want)));
    }
}

}  // namespace

TEST_CASE("attention: log_sum_exp output is the log of the softmax denominator", "[backward]") {
  SECTION("prefill shape, sinks (one larger than every logit)") {
    check_lse(data({.B = 1, .Sq = 70, .Sk = 90, .Hq = 2, .Hkv = 1, .D = 16, .Dv = 8}), {0.3, 4.0});
  }
  SECTION("decode shape: keys split into chunks merged by log-sum-exp") {
    check_lse(data({.B = 1, .Sq = 1, .Sk = 4300, .Hq = 2, .Hkv = 1, .D = 16, .Dv = 8}), {});
    check_lse(data({.B = 1, .Sq = 1, .Sk = 4300, .Hq = 2, .Hkv = 1, .D = 16, .Dv = 8}), {1.0, -3.0});
  }
  SECTION("rows with nothing visible: -inf without a sink, the sink with one") {
    const data x({.B = 1, .Sq = 4, .Sk = 6, .Hq = 2, .Hkv = 1, .D = 8, .Dv = 8});
    const std::vector<std::int64_t> none{0};
    const std::vector<double> sinks{0.25, -2.0};
    std::vector<float> l1(8), l2(8), out(x.dout.size());
    auto run = [&](const attention_options& o, std::vector<float>& l) {
      posenc::attention(tensor_view<const float>::bthd(x.q.data(), 1, 4, 2, 8),
                        tensor_view<const float>::bthd(x.k.data(), 1, 6, 1, 8),
                        tensor_view<const float>::bthd(x.v.data(), 1, 6, 1, 8),
                        tensor_view<float>::bthd(out.data(), 1, 4, 2, 8), posenc::no_position{}, o, {.log_sum_exp = l});
    };
    run({.key_lengths = none}, l1);
    for (float e : l1) CHECK(e == -std::numeric_limits<float>::infinity());
    run({.key_lengths = none, .sinks = sinks}, l2);
    for (std::size_t n = 0; n < l2.size(); ++n) CHECK(l2[n] == static_cast<float>(sinks[n / 4]));
  }
}

TEST_CASE("attention_backward: NoPE, every mask option, GQA, against sdpa_backward", "[backward]") {
  const data x({});
  const masks m(x.s);
  for (const auto& [name, o] : m.cases()) {
    SECTION(name) {
      compare(x, posenc::no_position{}, o);
    }
  }
  SECTION("MQA, one query token (decode shape)") {
    const data y({.B = 1, .Sq = 1, .Sk = 200, .Hq = 3, .Hkv = 1, .D = 64, .Dv = 64});
    compare(y, posenc::no_position{}, {.causal = true});
  }
  SECTION("MHA, explicit query tile and key tile") {
    const data y({.B = 1, .Sq = 130, .Sk = 130, .Hq = 2, .Hkv = 2, .D = 16, .Dv = 16});
    const result f = run_fused(y, posenc::no_position{}, {.causal = true}, 0, {.query_tile = 16, .key_tile = 128});
    const result r = run_oracle(y, posenc::no_position{}, {.causal = true}, 0);
    expect_near(f.dq, r.dq, logit_bound(y, 0.25, 0), "dq");
    expect_near(f.dk, r.dk, logit_bound(y, 0.25, 0), "dk");
  }
}

TEST_CASE("attention_backward: RoPE (YaRN, Llama 3), xPos", "[backward]") {
  const data x({});
  const masks m(x.s);
  const attention_options o{.causal = true, .query_positions = m.pq, .key_positions = m.pk};
  SECTION("YaRN") {
    compare(x,
            posenc::rope({.head_dim = 32,
                          .scaling =
                              posenc::yarn_scaling{
                                  .factor = 4, .original_max_position = 64, .mscale = 1, .mscale_all_dim = 0.5}}),
            o);
  }
  SECTION("Llama 3") {
    compare(x,
            posenc::rope({.head_dim = 32, .scaling = posenc::llama3_scaling{.factor = 8, .original_max_position = 32}}),
            o);
  }
  SECTION("xPos") {
    compare(x, posenc::xpos({.head_dim = 32, .scale_base = 512}), o);
  }
}

TEST_CASE("attention_backward: ALiBi, T5 (table gradient), Shaw (tables), sinks, soft-cap", "[backward]") {
  const data x({});
  const masks m(x.s);
  SECTION("ALiBi, BLOOM row shift, with sinks") {
    compare(x, posenc::alibi({.num_heads = 4, .mode = posenc::alibi_mode::causal_row_shift}),
            {.causal = true, .sinks = m.sinks}, 0, 8.0 * 160);
  }
  SECTION("ALiBi, symmetric, window") {
    compare(x, posenc::alibi({.num_heads = 4}), {.sliding_window = 40}, 0, 8.0 * 160);
  }
  const posenc::t5_bias_config cfg{.num_buckets = 16, .max_distance = 64, .bidirectional = true, .num_heads = 4};
  const auto t5t = posenc_test::random_values(16 * 4, 5);
  const posenc::t5_bias t5(cfg, t5t);
  for (const auto& [name, o] : m.cases()) {
    SECTION(std::string("T5: ") + name) {
      compare(x, t5, o, 64, 1.0);
    }
  }
  SECTION("T5 through the general path (no distance table), with RoPE") {
    const auto enc = posenc::combine(posenc::rope({.head_dim = 32}), t5);
    const result f = run_fused(x, enc, {.causal = true}, 64, {.max_bias_table = 0});
    const result r = run_oracle(x, enc, {.causal = true}, 64);
    const double A = logit_bound(x, 1 / std::sqrt(32.0), 1.0);
    expect_near(f.enc, r.enc, A, "T5 table");
    expect_near(f.dq, r.dq, A, "dq");
  }
  const data y({.B = 2, .Sq = 100, .Sk = 130, .Hq = 4, .Hkv = 2, .D = 16, .Dv = 16});
  const masks my(y.s);
  const posenc::shaw_relative_config sc{.head_dim = 16, .k_left = 8, .k_right = 5};
  const auto n = static_cast<std::size_t>(sc.table_rows() * 16);
  const auto kt = posenc_test::random_values(n, 6), vt = posenc_test::random_values(n, 7);
  const posenc::shaw_relative shaw(sc, kt, vt);
  for (const auto& [name, o] : my.cases()) {
    SECTION(std::string("Shaw: ") + name) {
      compare(y, shaw, o, 2 * n, 1.5 * 16);
    }
  }
}

TEST_CASE("attention_backward: bit-identical for 1, 2 and 3 threads", "[backward][threads]") {
  const data x({.B = 1, .Sq = 300, .Sk = 300, .Hq = 2, .Hkv = 1, .D = 32, .Dv = 32});
  const posenc::t5_bias_config cfg{.num_buckets = 16, .max_distance = 64, .bidirectional = true, .num_heads = 2};
  const auto enc =
      posenc::combine(posenc::rope({.head_dim = 32}), posenc::t5_bias(cfg, posenc_test::random_values(32, 8)));
  const std::vector<double> sinks{0.1, -0.4};
  const attention_options o{.causal = true, .logit_softcap = 20.0, .sinks = sinks};
  posenc::thread_pool one(1), two(2), three(3);
  const result a = run_fused(x, enc, o, 32, {.executor = one.as_parallel_for()});
  const result b = run_fused(x, enc, o, 32, {.executor = two.as_parallel_for()});
  const result c = run_fused(x, enc, o, 32, {.executor = three.as_parallel_for()});
  for (const result* r : {&b, &c}) {
    CHECK(r->dq == a.dq);
    CHECK(r->dk == a.dk);
    CHECK(r->dv == a.dv);
    CHECK(r->enc == a.enc);
    CHECK(r->sinks == a.sinks);
  }
}

TEST_CASE("attention_backward: a workspace reused across calls gives the same bits as none", "[backward]") {
  // A larger call with other shapes, heads, masks and parameters first leaves every buffer of the
  // workspace dirty (dQ partials, offsets, the distance table, parameter partials); the second call
  // must not read any of it.
  const posenc::t5_bias_config cfg{.num_buckets = 16, .max_distance = 64, .bidirectional = true, .num_heads = 2};
  const auto enc =
      posenc::combine(posenc::rope({.head_dim = 32}), posenc::t5_bias(cfg, posenc_test::random_values(32, 8)));
  const data big({.B = 2, .Sq = 260, .Sk = 330, .Hq = 2, .Hkv = 2, .D = 32, .Dv = 40});
  const data x({.B = 1, .Sq = 200, .Sk = 200, .Hq = 2, .Hkv = 1, .D = 32, .Dv = 32});
  const std::vector<double> sinks{0.1, -0.4};
  const attention_options o{.causal = true, .logit_softcap = 20.0, .sinks = sinks};
  const attention_options ob{.sliding_window = 50};
  posenc::thread_pool two(2);
  posenc::attention_workspace ws;
  const result fresh = run_fused(x, enc, o, 32, {.executor = two.as_parallel_for()});
  static_cast<void>(run_fused(big, enc, ob, 32, {.executor = two.as_parallel_for(), .workspace = &ws}));
  const result reused = run_fused(x, enc, o, 32, {.executor = two.as_parallel_for(), .workspace = &ws});
  CHECK(reused.dq == fresh.dq);
  CHECK(reused.dk == fresh.dk);
  CHECK(reused.dv == fresh.dv);
  CHECK(reused.enc == fresh.enc);
  CHECK(reused.sinks == fresh.sinks);
}

TEST_CASE("attention_backward: invalid arguments are refused by name", "[backward]") {
  const data x({.B = 1, .Sq = 4, .Sk = 4, .Hq = 2, .Hkv = 1, .D = 8, .Dv = 8});
  const auto s = x.s;
  std::vector<float> out(x.dout.size()), lse(8), g(x.q.size()), gk(x.k.size()), gv(x.v.size());
  auto run = [&](std::span<const float> l, tensor_view<float> dq) {
    posenc::attention_backward(
        tensor_view<const float>::bthd(x.q.data(), 1, 4, 2, 8), tensor_view<const float>::bthd(x.k.data(), 1, 4, 1, 8),
        tensor_view<const float>::bthd(x.v.data(), 1, 4, 1, 8), tensor_view<const float>::bthd(out.data(), 1, 4, 2, 8),
        l, tensor_view<const float>::bthd(x.dout.data(), 1, 4, 2, 8), dq,
        tensor_view<float>::bthd(gk.data(), 1, 4, 1, 8), tensor_view<float>::bthd(gv.data(), 1, 4, 1, 8),
        posenc::no_position{});
  };
  auto names = [](auto f, const std::string& what) {
    try {
      f();
      FAIL("no exception");
    } catch (const std::exception& e) {
      CHECK_THAT(e.what(), Catch::Contains(what));
    }
  };
  static_cast<void>(s);
  names([&] { run(std::span<const float>(lse).first(7), tensor_view<float>::bthd(g.data(), 1, 4, 2, 8)); }, "lse");
  names([&] { run(lse, tensor_view<float>::bthd(out.data(), 1, 4, 2, 8)); }, "dq");
  names([&] { run(lse, tensor_view<float>::bthd(g.data(), 1, 3, 2, 8)); }, "dq (vs q)");
}

TEST_CASE("attention_backward: strided (head-major) views give the same bits", "[backward]") {
  // The same problem laid out [B, H, S, D] for every tensor, gradients included: the backward
  // reads every input through its view and packs its own tiles, so the results are identical.
  const data x({.B = 2, .Sq = 70, .Sk = 90, .Hq = 4, .Hkv = 2, .D = 16, .Dv = 8});
  const auto s = x.s;
  const auto rope = posenc::rope({.head_dim = 16});
  const attention_options o{.causal = true};
  const result a = run_fused(x, rope, o, 0);
  std::vector<float> out(x.dout.size());
  {
    std::vector<float> lse(a.lse.size());
    posenc::attention(tensor_view<const float>::bthd(x.q.data(), s.B, s.Sq, s.Hq, s.D),
                      tensor_view<const float>::bthd(x.k.data(), s.B, s.Sk, s.Hkv, s.D),
                      tensor_view<const float>::bthd(x.v.data(), s.B, s.Sk, s.Hkv, s.Dv),
                      tensor_view<float>::bthd(out.data(), s.B, s.Sq, s.Hq, s.Dv), rope, o, {.log_sum_exp = lse});
    REQUIRE(lse == a.lse);
  }
  // head-major copies
  auto head_major = [](const std::vector<float>& t, std::ptrdiff_t B, std::ptrdiff_t S, std::ptrdiff_t H,
                       std::ptrdiff_t D) {
    std::vector<float> r(t.size());
    const auto from = tensor_view<const float>::bthd(t.data(), B, S, H, D);
    const auto to = tensor_view<float>::bhtd(r.data(), B, H, S, D);
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t i = 0; i < S; ++i)
        for (std::ptrdiff_t h = 0; h < H; ++h)
          for (std::ptrdiff_t d = 0; d < D; ++d) to(b, i, h, d) = from(b, i, h, d);
    return r;
  };
  const auto q = head_major(x.q, s.B, s.Sq, s.Hq, s.D), k = head_major(x.k, s.B, s.Sk, s.Hkv, s.D),
             v = head_major(x.v, s.B, s.Sk, s.Hkv, s.Dv), o2 = head_major(out, s.B, s.Sq, s.Hq, s.Dv),
             dout = head_major(x.dout, s.B, s.Sq, s.Hq, s.Dv);
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  using cv = tensor_view<const float>;
  posenc::attention_backward(cv::bhtd(q.data(), s.B, s.Hq, s.Sq, s.D), cv::bhtd(k.data(), s.B, s.Hkv, s.Sk, s.D),
                             cv::bhtd(v.data(), s.B, s.Hkv, s.Sk, s.Dv), cv::bhtd(o2.data(), s.B, s.Hq, s.Sq, s.Dv),
                             std::span<const float>(a.lse), cv::bhtd(dout.data(), s.B, s.Hq, s.Sq, s.Dv),
                             tensor_view<float>::bhtd(dq.data(), s.B, s.Hq, s.Sq, s.D),
                             tensor_view<float>::bhtd(dk.data(), s.B, s.Hkv, s.Sk, s.D),
                             tensor_view<float>::bhtd(dv.data(), s.B, s.Hkv, s.Sk, s.Dv), rope, o);
  CHECK(dq == head_major(a.dq, s.B, s.Sq, s.Hq, s.D));
  CHECK(dk == head_major(a.dk, s.B, s.Sk, s.Hkv, s.D));
  CHECK(dv == head_major(a.dv, s.B, s.Sk, s.Hkv, s.Dv));
}
