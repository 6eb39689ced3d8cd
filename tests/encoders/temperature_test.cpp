// Attention temperature (encoders/temperature.hpp): layered.json temperature cases at the README
// tolerances, the two rules and where they differ, composition with RoPE through sdpa and the
// KV cache, invalid parameters.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/rope.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::error_of;

TEST_CASE("layered.json temperature cases: int64 positions match scale_fp64full", "[encoders][temperature][golden]") {
  const auto file = posenc_test::load_golden("layered.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "temperature") continue;
    ++n;
    INFO(c.at("id").get<std::string>());
    const bool beta = c.at("model") == "ministral3";
    attention_temperature_config cfg{.head_dim = 8};
    if (beta) {
      // README: beta = rope_parameters["llama_4_scaling_beta"], L0 = original_max_position_embeddings
      const auto& src = c.contains("config") ? c.at("config").at("rope_parameters") : c;
      cfg.rule = temperature_rule::llama4_beta;
      cfg.floor_scale = src.at("original_max_position_embeddings").get<double>();
      cfg.scale = src.at("llama_4_scaling_beta").get<double>();
    } else {
      cfg.floor_scale = c.at("floor_scale").get<double>();
      cfg.scale = c.at("attn_scale").get<double>();
    }
    const attention_temperature t(cfg);
    const auto pos = c.at("positions").get<std::vector<std::int64_t>>();
    const auto full = c.at("expected").at("scale_fp64full").get<std::vector<double>>();
    const auto fp32 = c.at("expected").at("scale_fp32").get<std::vector<double>>();
    for (std::size_t i = 0; i < pos.size(); ++i) {
      INFO("position " << pos[i]);
      CHECK(std::fabs(t.factor(pos[i]) - full[i]) <= 1e-15);
      if (pos[i] < (1 << 24)) CHECK(std::fabs(t.factor(pos[i]) - fp32[i]) <= 2e-7);
    }
    // and on the query: every element times the factor, keys untouched
    std::vector<double> q(pos.size() * 8, 0.5), k = q;
    t.transform_q(tensor_view<double>::bthd(q.data(), 1, static_cast<std::ptrdiff_t>(pos.size()), 1, 8), pos);
    t.transform_k(tensor_view<double>::bthd(k.data(), 1, static_cast<std::ptrdiff_t>(pos.size()), 1, 8), pos);
    for (std::size_t i = 0; i < pos.size(); ++i) {
      CHECK(q[i * 8 + 3] == 0.5 * full[i]);
      CHECK(k[i * 8 + 3] == 0.5);
    }
  }
  CHECK(n >= 1);
}

TEST_CASE("temperature rules: Llama 4 floors (p + 1) / floor_scale, Mistral 3 floors p / L0",
          "[encoders][temperature]") {
  const attention_temperature l4({.head_dim = 4, .rule = temperature_rule::llama4, .floor_scale = 8192, .scale = 0.1});
  const attention_temperature m3(
      {.head_dim = 4, .rule = temperature_rule::llama4_beta, .floor_scale = 16384, .scale = 0.1});
  auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-15; };
  CHECK(l4.factor(0) == 1.0);
  CHECK(l4.factor(8190) == 1.0);
  CHECK(near(l4.factor(8191), 1.0 + 0.1 * std::log(2.0)));
  CHECK(m3.factor(16383) == 1.0);  // the rules differ at k * L0 - 1
  CHECK(near(m3.factor(16384), 1.0 + 0.1 * std::log(2.0)));
  const attention_temperature l4b({.head_dim = 4, .floor_scale = 16384, .scale = 0.1});
  CHECK(near(l4b.factor(16383), 1.0 + 0.1 * std::log(2.0)));
  // int64 positions above 2^24 are exact (HF's fp32 reference rounds 33562622 so that it scales
  // like 33562623, whose p + 1 = 4097 * 8192)
  CHECK(near(l4.factor(33562622), 1.0 + 0.1 * std::log1p(4096.0)));
  CHECK(near(l4.factor(33562623), 1.0 + 0.1 * std::log1p(4097.0)));
  CHECK(l4.factor(33562622) != l4.factor(33562623));
  // non-integral floor_scale uses the double floor
  const attention_temperature frac({.head_dim = 4, .floor_scale = 2.5, .scale = 1});
  CHECK(near(frac.factor(4), 1.0 + std::log1p(2.0)));
  CHECK(near(frac.factor(3), 1.0 + std::log1p(1.0)));
  CHECK(frac.factor(-5) == 1.0);  // negative floor: no temperature (documented)
}

TEST_CASE("temperature rejects invalid parameters, naming them", "[encoders][temperature][validate]") {
  error_of([] { attention_temperature({.head_dim = 0}); }, "attention_temperature.head_dim");
  error_of([] { attention_temperature({.head_dim = 4, .floor_scale = -8192}); }, "attention_temperature.floor_scale");
  error_of([] { attention_temperature({.head_dim = 4, .floor_scale = 0}); }, "attention_temperature.floor_scale");
  error_of([] { attention_temperature({.head_dim = 4, .scale = -0.1}); }, "attention_temperature.attn_scale");
  error_of([] { attention_temperature({.head_dim = 4, .scale = NAN}); }, "attention_temperature.attn_scale");
  error_of([] { attention_temperature({.head_dim = 4, .rule = temperature_rule::llama4_beta, .floor_scale = 0}); },
           "attention_temperature.original_max_position");
  error_of([] { attention_temperature({.head_dim = 4, .rule = temperature_rule::llama4_beta, .scale = -1}); },
           "attention_temperature.beta");
}

TEST_CASE("RoPE + temperature (Mistral 3) through sdpa equals KV-cache decode", "[encoders][temperature][kv_cache]") {
  const std::ptrdiff_t N = 12, H = 2, D = 8;
  std::mt19937 g(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> q(static_cast<std::size_t>(N * H * D)), k(q.size()), v(q.size());
  for (auto* x : {&q, &k, &v})
    for (auto& e : *x) e = u(g);
  const auto enc = combine(
      rope({.head_dim = D, .theta = 10000}),
      attention_temperature({.head_dim = D, .rule = temperature_rule::llama4_beta, .floor_scale = 4, .scale = 0.5}));
  std::vector<std::int64_t> pos(static_cast<std::size_t>(N));
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
  std::vector<double> full(q.size()), step(q.size()), plain(q.size());
  sdpa(tensor_view<const double>::bthd(q.data(), 1, N, H, D), tensor_view<const double>::bthd(k.data(), 1, N, H, D),
       tensor_view<const double>::bthd(v.data(), 1, N, H, D), tensor_view<double>::bthd(full.data(), 1, N, H, D), enc,
       {.causal = true});
  kv_cache<double> cache({.kv_heads = H, .head_dim = D});
  for (std::ptrdiff_t t = 0; t < N; ++t) {
    const std::span<const std::int64_t> p(pos.data() + t, 1);
    static_cast<void>(cache.append(enc, tensor_view<const double>::bthd(k.data() + t * H * D, 1, 1, H, D),
                                   tensor_view<const double>::bthd(v.data() + t * H * D, 1, 1, H, D), p));
    cache.attend(enc, tensor_view<const double>::bthd(q.data() + t * H * D, 1, 1, H, D),
                 tensor_view<double>::bthd(step.data() + t * H * D, 1, 1, H, D), p, {.causal = true});
  }
  POSENC_CHECK_CLOSE(step, full, 1e-12, 0.0);
  // the temperature acts: plain RoPE gives different outputs once floor(p / 4) > 0
  sdpa(tensor_view<const double>::bthd(q.data(), 1, N, H, D), tensor_view<const double>::bthd(k.data(), 1, N, H, D),
       tensor_view<const double>::bthd(v.data(), 1, N, H, D), tensor_view<double>::bthd(plain.data(), 1, N, H, D),
       enc.first(), {.causal = true});
  double diff = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) diff = std::max(diff, std::fabs(plain[i] - full[i]));
  CHECK(diff > 1e-6);
  for (std::size_t i = 0; i < static_cast<std::size_t>(4 * H * D); ++i) CHECK(plain[i] == full[i]);  // p < 4: factor 1
}
