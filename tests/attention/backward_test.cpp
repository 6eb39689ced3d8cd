// tests/attention/backward_test.cpp — sdpa_backward against central finite differences of sdpa, in
// double, for every encoder and every mask option; the per-encoder backward hooks (transposes of
// the q/k transforms, the parameter scatter-adds) on their own.
//
// The loss is L = sum(dout * sdpa(q, k, v)) with a fixed random dout, so dL/dx is exactly what
// sdpa_backward returns for that dout. Central differences with step h = 1e-5 in double have a
// truncation error h^2 |L'''| / 6 (~1e-11 here: every input is O(1)) and a rounding error
// ~ eps |L| / h (~1e-11): every gradient element must agree within 1e-7 * max(1, |g|), four orders
// above both and far below any real mistake (a dropped term is O(1e-2) or more on these shapes).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "attention_support.hpp"
#include "support/gradient_check.hpp"

using posenc::attention_gradients;
using posenc::attention_options;
using posenc::tensor_view;

namespace {

namespace gradcheck = posenc_test::fd;  // problem, check_inputs, check_parameters, central, expect_close

// ---- the mask options, each on its own and some together ----

struct mask_case {
  const char* name;
  attention_options o;
};

struct mask_data {
  // B = 2, Sq = 5, Sk = 7
  std::vector<std::int64_t> pq{2, 3, 4, 5, 6, 10, 11, 12, 13, 14}, pk{0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14};
  std::vector<std::int64_t> lengths{6, 4};
  std::vector<std::uint8_t> key_mask{1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1};
  std::vector<std::int32_t> qseg{0, 0, 1, 1, 1, 3, 3, 3, 4, 4}, kseg{0, 0, 0, 1, 1, 1, 1, 3, 3, 3, 3, 4, 4, -1};
  std::vector<double> sinks{0.5, -1.0, 2.0, 0.0};

  std::vector<mask_case> cases() const {
    std::vector<mask_case> c;
    c.push_back({"none", {}});
    c.push_back({"causal", {.causal = true}});
    c.push_back({"causal, explicit positions", {.causal = true, .query_positions = pq, .key_positions = pk}});
    c.push_back({"sliding window (causal)", {.causal = true, .sliding_window = 3}});
    c.push_back({"sliding window (symmetric)", {.sliding_window = 2, .query_positions = pq, .key_positions = pk}});
    c.push_back({"padding (key_lengths)", {.key_lengths = lengths}});
    c.push_back({"padding (key_mask), causal", {.causal = true, .key_mask = key_mask}});
    c.push_back({"segments", {.query_segments = qseg, .key_segments = kseg}});
    c.push_back({"attention chunk", {.attention_chunk = 3, .query_positions = pq, .key_positions = pk}});
    c.push_back({"soft-cap", {.logit_softcap = 2.0}});
    c.push_back({"sinks, causal", {.causal = true, .sinks = sinks}});
    c.push_back(
        {"scale, soft-cap, sinks, window", {.scale = 0.7, .sliding_window = 4, .logit_softcap = 1.5, .sinks = sinks}});
    return c;
  }
};

template <class E>
void check_every_mask(const E& enc, gradcheck::shape s = {}) {
  const mask_data m;
  for (const mask_case& c : m.cases()) {
    SECTION(c.name) {
      gradcheck::check_inputs(gradcheck::problem(s), enc, c.o);
    }
  }
}

posenc::rope make_rope(posenc::rope_scaling scaling = posenc::default_scaling{}, int rotary = 8,
                       posenc::kernels::pairing layout = posenc::kernels::pairing::half_split) {
  return posenc::rope(
      posenc::rope_config{.head_dim = 8, .rotary_dim = rotary, .theta = 100, .layout = layout, .scaling = scaling});
}

std::vector<double> table(std::size_t n, std::uint64_t seed) {
  return posenc_test::random_values(n, seed);
}

}  // namespace

TEST_CASE("sdpa_backward: NoPE, every mask option, GQA, against finite differences", "[backward]") {
  check_every_mask(posenc::no_position{});
}

TEST_CASE("sdpa_backward: MQA and equal heads", "[backward]") {
  SECTION("MQA") {
    gradcheck::check_inputs(gradcheck::problem({.Hq = 3, .Hkv = 1}), posenc::no_position{}, {.causal = true});
  }
  SECTION("MHA, Dv = D, Sq = Sk") {
    gradcheck::check_inputs(gradcheck::problem({.Sq = 6, .Sk = 6, .Hkv = 4, .Dv = 8}), posenc::no_position{}, {});
  }
}

TEST_CASE("sdpa_backward: RoPE (plain, partial, interleaved), every mask option", "[backward]") {
  check_every_mask(make_rope());
}

TEST_CASE("sdpa_backward: RoPE scalings and layouts", "[backward]") {
  const mask_data m;
  const attention_options o{.causal = true, .query_positions = m.pq, .key_positions = m.pk};
  // YaRN: magnitude M = 0.1 ln 4 + 1 != 1 on q and k, and DeepSeek's softmax multiplier.
  SECTION("YaRN") {
    gradcheck::check_inputs(
        gradcheck::problem({}),
        make_rope(posenc::yarn_scaling{.factor = 4, .original_max_position = 4, .mscale = 1.0, .mscale_all_dim = 0.5}),
        o);
  }
  SECTION("Llama 3") {
    gradcheck::check_inputs(gradcheck::problem({}),
                            make_rope(posenc::llama3_scaling{.factor = 8, .original_max_position = 4}), o);
  }
  SECTION("partial rotary (tail passes through)") {
    gradcheck::check_inputs(gradcheck::problem({}), make_rope({}, 4), o);
  }
  SECTION("interleaved") {
    gradcheck::check_inputs(gradcheck::problem({}), make_rope({}, 8, posenc::kernels::pairing::interleaved), o);
  }
  SECTION("transform_queries off") {
    attention_options x = o;
    x.transform_queries = false;
    gradcheck::check_inputs(gradcheck::problem({}), make_rope(), x);
  }
}

TEST_CASE("sdpa_backward: xPos, mRoPE, temperature", "[backward]") {
  const mask_data m;
  const attention_options o{.causal = true, .query_positions = m.pq, .key_positions = m.pk};
  SECTION("xPos (fixed centre, scales far from 1)") {
    gradcheck::check_inputs(gradcheck::problem({}),
                            posenc::xpos({.head_dim = 8, .theta = 100, .scale_base = 8, .center = 3}), o);
  }
  SECTION("xPos (midpoint of call)") {
    gradcheck::check_inputs(
        gradcheck::problem({}),
        posenc::xpos({.head_dim = 8, .scale_base = 16, .center_policy = posenc::xpos_center_policy::midpoint_of_call}),
        {.causal = true});
  }
  SECTION("mRoPE with three different streams") {
    const posenc::mrope mr({.rope = {.head_dim = 8, .theta = 100}, .section = {2, 1, 1}});
    posenc::mrope_position_ids ids{.batch = 2, .length = 7, .ids = {}, .delta = {1, -2}};
    ids.ids.resize(3 * 2 * 7);
    for (std::size_t n = 0; n < ids.ids.size(); ++n) ids.ids[n] = static_cast<std::int64_t>((n * 7) % 11);
    gradcheck::check_inputs(gradcheck::problem({}), mr.bind(ids), {.causal = true});
  }
  SECTION("temperature") {
    gradcheck::check_inputs(
        gradcheck::problem({}),
        posenc::attention_temperature(
            {.head_dim = 8, .rule = posenc::temperature_rule::llama4, .floor_scale = 2, .scale = 0.5}),
        {.causal = true});
  }
}

TEST_CASE("sdpa_backward: ALiBi, every mask option", "[backward]") {
  check_every_mask(posenc::alibi({.num_heads = 4}));
  SECTION("BLOOM row shift with a sink") {
    const mask_data m;
    gradcheck::check_inputs(gradcheck::problem({}),
                            posenc::alibi({.num_heads = 4, .mode = posenc::alibi_mode::causal_row_shift}),
                            {.causal = true, .sinks = m.sinks});
  }
}

TEST_CASE("sdpa_backward: T5 buckets, inputs and table", "[backward]") {
  const posenc::t5_bias_config cfg{.num_buckets = 8, .max_distance = 12, .bidirectional = true, .num_heads = 4};
  const auto t = table(8 * 4, 7);
  auto make = [&](const std::vector<double>& x) { return posenc::t5_bias(cfg, x); };
  check_every_mask(make(t));
  const mask_data m;
  for (const mask_case& c : m.cases()) {
    SECTION(std::string("table: ") + c.name) {
      gradcheck::check_parameters(gradcheck::problem({}), t, make, c.o);
    }
  }
  SECTION("combined with RoPE (table after RoPE's parameters: none)") {
    auto make2 = [&](const std::vector<double>& x) { return posenc::combine(make_rope(), posenc::t5_bias(cfg, x)); };
    gradcheck::check_parameters(gradcheck::problem({}), t, make2, {.causal = true, .logit_softcap = 3.0});
    gradcheck::check_inputs(gradcheck::problem({}), make2(t), {.causal = true, .logit_softcap = 3.0});
  }
}

TEST_CASE("sdpa_backward: Shaw keys and values, inputs and both tables", "[backward]") {
  const gradcheck::shape s{.Dv = 8};  // aV rows are head_dim wide
  const posenc::shaw_relative_config shared{.head_dim = 8, .k_left = 2, .k_right = 3};
  const auto n = static_cast<std::size_t>(shared.table_rows() * 8);
  const auto kt = table(n, 11), vt = table(n, 12);
  auto make = [&](const std::vector<double>& x) {
    return posenc::shaw_relative(shared, std::span<const double>(x).first(n), std::span<const double>(x).subspan(n));
  };
  std::vector<double> both(kt);
  both.insert(both.end(), vt.begin(), vt.end());
  check_every_mask(make(both), s);
  const mask_data m;
  for (const mask_case& c : m.cases()) {
    SECTION(std::string("tables: ") + c.name) {
      gradcheck::check_parameters(gradcheck::problem(s), both, make, c.o);
    }
  }
  SECTION("per-head tables, key term only, with ALiBi") {
    const posenc::shaw_relative_config per{.head_dim = 8,
                                           .k_left = 1,
                                           .k_right = 2,
                                           .use_value_term = false,
                                           .shared_across_heads = false,
                                           .num_heads = 4};
    const auto kp = table(static_cast<std::size_t>(4 * per.table_rows() * 8), 13);
    auto make2 = [&](const std::vector<double>& x) {
      return posenc::combine(posenc::alibi({.num_heads = 4}), posenc::shaw_relative(per, x, std::span<const double>{}));
    };
    gradcheck::check_parameters(gradcheck::problem(s), kp, make2, {.causal = true, .sinks = m.sinks});
    gradcheck::check_inputs(gradcheck::problem(s), make2(kp), {.causal = true, .sinks = m.sinks});
  }
}

TEST_CASE("additive encoders: learned table and sinusoidal inputs through sdpa", "[backward]") {
  // x [1, S, 1, d] embeddings; q = k = v = x + PE(p) (identity projections, one head): the loss
  // depends on the table only through the sum, so dL/dE[row] = the scatter-add of dq + dk + dv.
  constexpr std::ptrdiff_t S = 6, d = 8;
  const std::vector<std::int64_t> pos{0, 1, 2, 3, 5, 2};  // a repeated position: two rows add up
  const auto x = posenc_test::random_values(S * d, 21), dout = posenc_test::random_values(S * d, 22);
  const attention_options o{.causal = true, .query_positions = pos, .key_positions = pos};
  auto embed = [&](const auto& enc) {
    std::vector<double> e(x);
    for (std::ptrdiff_t t = 0; t < S; ++t)
      enc.add(pos[static_cast<std::size_t>(t)], std::span<double>(e).subspan(static_cast<std::size_t>(t * d), d));
    return e;
  };
  auto loss_of = [&](const std::vector<double>& e) {
    const auto v = tensor_view<const double>::bthd(e.data(), 1, S, 1, d);
    std::vector<double> out(e.size());
    posenc::sdpa(v, v, v, tensor_view<double>::bthd(out.data(), 1, S, 1, d), posenc::no_position{}, o);
    double l = 0;
    for (std::size_t n = 0; n < out.size(); ++n) l += out[n] * dout[n];
    return l;
  };
  auto d_embedding = [&](const std::vector<double>& e) {
    const auto v = tensor_view<const double>::bthd(e.data(), 1, S, 1, d);
    std::vector<double> dq(e.size()), dk(e.size()), dv(e.size());
    posenc::sdpa_backward(v, v, v, tensor_view<const double>::bthd(dout.data(), 1, S, 1, d),
                          tensor_view<double>::bthd(dq.data(), 1, S, 1, d),
                          tensor_view<double>::bthd(dk.data(), 1, S, 1, d),
                          tensor_view<double>::bthd(dv.data(), 1, S, 1, d), posenc::no_position{}, o);
    for (std::size_t n = 0; n < dq.size(); ++n) dq[n] += dk[n] + dv[n];
    return dq;
  };
  SECTION("learned: the table gradient is the scatter-add of the embedding gradient") {
    constexpr std::int64_t rows = 7;
    auto tab = posenc_test::random_values(rows * d, 23);
    auto make = [&](const std::vector<double>& t) {
      return posenc::learned_absolute({.max_len = rows, .model_dim = d, .offset = 1}, std::span<const double>(t));
    };
    const auto enc = make(tab);
    STATIC_REQUIRE(posenc::trainable_additive_encoding<posenc::learned_absolute>);
    const auto de = d_embedding(embed(enc));
    std::vector<double> grad(tab.size(), 0.0);
    enc.accumulate_gradient(pos, std::span<const double>(de), grad);
    std::vector<double> numeric(tab.size());
    for (std::size_t n = 0; n < tab.size(); ++n) {
      const double t0 = tab[n];
      numeric[n] = gradcheck::central(
          [&](double t) {
            tab[n] = t;
            return loss_of(embed(make(tab)));
          },
          t0);
      tab[n] = t0;
    }
    gradcheck::expect_close(grad, numeric, "learned table");
    // Row 0 (no position maps to it with offset 1) gets nothing; row 3 = position 2 twice.
    for (std::ptrdiff_t c = 0; c < d; ++c) CHECK(grad[static_cast<std::size_t>(c)] == 0.0);
  }
  SECTION("sinusoidal: no parameters, the embedding gradient passes through the add") {
    const posenc::sinusoidal enc(posenc::sinusoidal_config::distilbert(d));
    STATIC_REQUIRE(!posenc::has_trainable_parameters<posenc::sinusoidal>);
    std::vector<double> xs(x);
    const auto de = d_embedding(embed(enc));
    std::vector<double> numeric(xs.size());
    auto embed_from = [&](const std::vector<double>& base) {
      std::vector<double> e(base);
      for (std::ptrdiff_t t = 0; t < S; ++t)
        enc.add(pos[static_cast<std::size_t>(t)], std::span<double>(e).subspan(static_cast<std::size_t>(t * d), d));
      return e;
    };
    for (std::size_t n = 0; n < xs.size(); ++n) {
      const double t0 = xs[n];
      numeric[n] = gradcheck::central(
          [&](double t) {
            xs[n] = t;
            return loss_of(embed_from(xs));
          },
          t0);
      xs[n] = t0;
    }
    gradcheck::expect_close(de, numeric, "embedding through sinusoidal");
  }
}

TEST_CASE("trainable-parameter hook: which encoders have parameters", "[backward]") {
  STATIC_REQUIRE(!posenc::has_trainable_parameters<posenc::no_position>);
  STATIC_REQUIRE(!posenc::has_trainable_parameters<posenc::sinusoidal>);
  STATIC_REQUIRE(!posenc::has_trainable_parameters<posenc::alibi>);
  STATIC_REQUIRE(!posenc::has_trainable_parameters<posenc::rope>);
  STATIC_REQUIRE(!posenc::has_trainable_parameters<posenc::xpos>);
  STATIC_REQUIRE(!posenc::has_trainable_parameters<posenc::mrope>);
  STATIC_REQUIRE(!posenc::has_trainable_parameters<posenc::attention_temperature>);
  STATIC_REQUIRE(posenc::has_trainable_parameters<posenc::learned_absolute>);
  STATIC_REQUIRE(posenc::trainable_score_bias_encoding<posenc::t5_bias>);
  STATIC_REQUIRE(posenc::trainable_relative_kv_encoding<posenc::shaw_relative>);
  STATIC_REQUIRE(posenc::trainable_score_bias_encoding<posenc::combined<posenc::rope, posenc::t5_bias>>);
  STATIC_REQUIRE(!posenc::has_trainable_parameters<posenc::combined<posenc::rope, posenc::alibi>>);
  STATIC_REQUIRE(posenc::qk_transform_backward_encoding<posenc::rope>);
  STATIC_REQUIRE(posenc::qk_transform_backward_encoding<posenc::xpos>);
  STATIC_REQUIRE(posenc::qk_transform_backward_encoding<posenc::mrope>);
  STATIC_REQUIRE(posenc::qk_transform_backward_encoding<posenc::mrope_bound>);
  STATIC_REQUIRE(posenc::qk_transform_backward_encoding<posenc::attention_temperature>);
  STATIC_REQUIRE(posenc::qk_transform_backward_encoding<posenc::combined<posenc::rope, posenc::attention_temperature>>);
  const posenc::t5_bias_config cfg{.num_buckets = 8, .max_distance = 12, .num_heads = 3};
  CHECK(posenc::t5_bias(cfg, std::vector<double>(24)).parameter_count() == 24);
  const posenc::shaw_relative_config sc{.head_dim = 4, .k_left = 1, .k_right = 1};
  CHECK(posenc::shaw_relative(sc, std::vector<double>(12), std::vector<double>(12)).parameter_count() == 24);
  CHECK(posenc::combine(posenc::t5_bias(cfg, std::vector<double>(24)),
                        posenc::shaw_relative(sc, std::vector<double>(12), std::vector<double>(12)))
            .parameter_count() == 48);
}

TEST_CASE("q/k transform backwards are the transposes of the forwards", "[backward]") {
  // <T x, y> == <x, T^T y> for random x, y at random positions, for float rows too.
  const std::vector<std::int64_t> pos{0, 3, 17, 1000, 65536, 5};
  auto check = [&](const auto& enc, bool is_q) {
    constexpr std::ptrdiff_t H = 2, D = 8;
    const auto n = pos.size() * H * D;
    auto x = posenc_test::random_values(n, 31), y = posenc_test::random_values(n, 32);
    std::vector<double> tx(x), ty(y);
    const auto S = static_cast<std::ptrdiff_t>(pos.size());
    auto vx = tensor_view<double>::bthd(tx.data(), 1, S, H, D), vy = tensor_view<double>::bthd(ty.data(), 1, S, H, D);
    if (is_q) {
      enc.transform_q(vx, pos);
      enc.transform_q_backward(vy, pos);
    } else {
      enc.transform_k(vx, pos);
      enc.transform_k_backward(vy, pos);
    }
    double a = 0, b = 0;
    for (std::size_t i = 0; i < n; ++i) a += tx[i] * y[i], b += x[i] * ty[i];
    CHECK(std::fabs(a - b) <= 1e-12 * (1 + std::fabs(a)));
    // float rows: the same map within float rounding
    std::vector<float> fy(y.begin(), y.end());
    auto vfy = tensor_view<float>::bthd(fy.data(), 1, S, H, D);
    if (is_q)
      enc.transform_q_backward(vfy, pos);
    else
      enc.transform_k_backward(vfy, pos);
    for (std::size_t i = 0; i < n; ++i) CHECK(std::fabs(fy[i] - ty[i]) <= 1e-5 * (1 + std::fabs(ty[i])));
  };
  for (bool is_q : {true, false}) {
    check(make_rope(posenc::yarn_scaling{.factor = 4, .original_max_position = 64}), is_q);
    check(make_rope(posenc::llama3_scaling{.factor = 8, .original_max_position = 64}, 6), is_q);
    check(make_rope({}, 8, posenc::kernels::pairing::interleaved), is_q);
    check(posenc::xpos({.head_dim = 8, .scale_base = 4096}), is_q);
    check(posenc::attention_temperature({.head_dim = 8, .floor_scale = 4, .scale = 0.3}), is_q);
    check(posenc::combine(make_rope(), posenc::attention_temperature({.head_dim = 8, .floor_scale = 4, .scale = 0.3})),
          is_q);
  }
}

TEST_CASE("sdpa_backward: invalid gradients are refused by name", "[backward]") {
  const gradcheck::problem p({});
  const auto s = p.s;
  std::vector<double> dq(p.q.size()), dk(p.k.size()), dv(p.v.size()), g(3);
  auto run = [&](std::ptrdiff_t dq_tokens, const attention_gradients& gr, const attention_options& o) {
    posenc::sdpa_backward(
        p.vq(), p.vk(), p.vv(), p.vdo(), tensor_view<double>::bthd(dq.data(), s.B, dq_tokens, s.Hq, s.D),
        tensor_view<double>::bthd(dk.data(), s.B, s.Sk, s.Hkv, s.D),
        tensor_view<double>::bthd(dv.data(), s.B, s.Sk, s.Hkv, s.Dv), posenc::alibi({.num_heads = 4}), o, gr);
  };
  auto names = [](auto f, const std::string& what) {
    try {
      f();
      FAIL("no exception");
    } catch (const std::exception& e) {
      CHECK_THAT(e.what(), Catch::Contains(what));
    }
  };
  names([&] { run(s.Sq - 1, {}, {}); }, "dq (vs q)");
  names([&] { run(s.Sq, {.encoder = g}, {}); }, "gradients.encoder");
  names([&] { run(s.Sq, {.sinks = g}, {}); }, "gradients.sinks");
}
