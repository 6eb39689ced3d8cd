// The tiny trainer's gradients (cli/trainer/tiny_lm.hpp: posenc::attention_backward with the
// encoders' gradient hooks; LayerNorm, MLP and output layer by hand) against central finite
// differences of its loss, for every hook it supports: additive (sinusoidal, learned table),
// qk transform (RoPE, RoPE + YaRN, xPos: through their transform backward), score bias (ALiBi, and
// the trained ones: T5's table, FIRE's MLP, KERPLE's log and power kernels), both at once (RoPE +
// ALiBi), none, and the two that run in sdpa / sdpa_backward (DeBERTa's c2p and p2c with the
// relative embeddings projected by each layer's W_k and W_q; CoPE's per-layer table and gates).
// Then: the loss of the last predictions alone (the sliding-window evaluation), training lowers the
// loss, two runs with one seed are bit-identical, and the lab's mean and spread over seeds.
#include "trainer/tiny_lm.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/cope.hpp>
#include <posenc/encoders/deberta.hpp>
#include <posenc/encoders/fire.hpp>
#include <posenc/encoders/kerple.hpp>
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "trainer/lab.hpp"

namespace {

tiny::lm_config small() {
  return {.vocab = 256, .d_model = 8, .heads = 2, .layers = 2, .d_ff = 16, .seed = 3};
}

std::vector<std::uint8_t> text(std::size_t n, std::uint64_t seed) {
  tiny::rng g{seed};
  std::vector<std::uint8_t> t(n);
  for (auto& c : t) c = static_cast<std::uint8_t>(97 + g.below(8));  // a few letters: repeated bytes
  return t;
}

// Perturbs `count` coordinates of every tensor; the worst |fd - analytic| / (1e-3 + 0.03 |analytic|).
template <class E>
double worst_gradient_error(E enc, std::string& where) {
  tiny::tiny_lm<E> m(small(), std::move(enc));
  const auto seq = text(8, 11);
  for (int warm = 0; warm < 3; ++warm) (void)m.train_step(text(64, 5 + warm), 2, 7);  // off the initial point
  tiny::lm_params g = m.params().zeros_like();
  (void)m.loss(seq, &g);
  std::vector<float*> ps, gs;
  std::vector<std::size_t> ns;
  m.params().each([&](float* p, std::size_t n) { ps.push_back(p), ns.push_back(n); });
  g.each([&](float* p, std::size_t) { gs.push_back(p); });
  tiny::rng pick{7};
  double worst = 0;
  for (std::size_t k = 0; k < ps.size(); ++k)
    for (int c = 0; c < 6 && ns[k] > 0; ++c) {
      const std::size_t i = pick.below(ns[k]);
      const float keep = ps[k][i], h = 1e-2f;
      ps[k][i] = keep + h;
      const double up = m.loss(seq);
      ps[k][i] = keep - h;
      const double down = m.loss(seq);
      ps[k][i] = keep;
      const double fd = (up - down) / (2.0 * h), an = gs[k][i];
      const double err = std::abs(fd - an) / (1e-3 + 0.03 * std::abs(an));
      if (err > worst)
        worst = err, where = "tensor " + std::to_string(k) + " [" + std::to_string(i) + "] fd " + std::to_string(fd) +
                             " analytic " + std::to_string(an);
    }
  return worst;
}

}  // namespace

TEST_CASE("tiny_lm: gradients match finite differences for every hook", "[trainer]") {
  const auto check = [](auto enc) {
    std::string where;
    const double e = worst_gradient_error(std::move(enc), where);
    INFO("worst coordinate: " << where);
    CHECK(e < 1.0);
  };
  const auto rope = [](posenc::rope_scaling s = posenc::default_scaling{}) {
    return posenc::rope(posenc::rope_config{.head_dim = 4, .theta = 10000, .scaling = s});
  };
  // The learned table and the encoder tables get the trainer's parameters (see tiny_lm's sync).
  const posenc::learned_absolute learned({.max_len = 8, .model_dim = 8}, std::vector<float>(64));
  const posenc::t5_bias t5({.num_buckets = 8, .max_distance = 16, .bidirectional = false, .num_heads = 2},
                           std::vector<float>(16));
  const posenc::alibi alibi({.num_heads = 2});
  SECTION("none") {
    check(posenc::no_position{});
  }
  SECTION("sinusoidal") {
    check(posenc::sinusoidal(posenc::sinusoidal_config{.d_model = 8}));
  }
  SECTION("learned") {
    check(learned);
  }
  SECTION("rope") {
    check(rope());
  }
  SECTION("rope + yarn") {
    check(rope(posenc::yarn_scaling{.factor = 4, .original_max_position = 4}));
  }
  SECTION("xpos") {
    check(posenc::xpos({.head_dim = 4, .scale_base = 4}));
  }
  SECTION("alibi") {
    check(alibi);
  }
  SECTION("t5") {
    check(t5);
  }
  SECTION("fire") {  // threshold 4 < the positions: the normaliser depends on the query too
    posenc::fire_parameters p{.c = 0.5, .threshold = 4, .w1 = {1.0, -0.7, 0.4}, .b1 = {0.1, 0.3, -0.2}};
    p.w2 = {0.5, -0.3, 0.2, 0.4, 0.1, -0.6}, p.b2 = {0.0, 0.1};
    check(posenc::fire({.num_heads = 2, .mlp_width = 3}, p));
  }
  SECTION("kerple log") {  // parameters away from the authors' floor (its clamp has no gradient)
    check(posenc::kerple({.num_heads = 2}, std::vector<double>{1.2, 0.6}, std::vector<double>{0.5, 0.9}));
  }
  SECTION("kerple power") {
    check(posenc::kerple({.kernel = posenc::kerple_kernel::power, .num_heads = 2}, std::vector<double>{0.8, 0.3},
                         std::vector<double>{1.1, 0.6}));
  }
  SECTION("rope + alibi") {
    check(posenc::combine(rope(), alibi));
  }
  SECTION("deberta") {  // 4 buckets, M = 6: distances 0..2 exact, 3..5 in log buckets, beyond saturated
    const auto c = posenc::deberta_relative_config::v3(2, 4, 4, 6);
    const std::vector<double> zeros(static_cast<std::size_t>(c.table_rows() * 8));
    check(posenc::deberta_relative(c, zeros, zeros));
  }
  SECTION("cope") {  // npos 5 < the 7 positions: the cap is reached
    check(posenc::cope({.head_dim = 4, .npos = 5}, std::vector<double>(20)));
  }
}

TEST_CASE("tiny_lm: the last predictions alone (the sliding-window evaluation)", "[trainer]") {
  tiny::tiny_lm<posenc::cope> m(small(), posenc::cope({.head_dim = 4, .npos = 9}, std::vector<double>(36)));
  (void)m.train_step(text(64, 5), 2, 7);  // CoPE's table off zero
  const auto seq = text(9, 11);
  const std::span<const std::uint8_t> s(seq);
  // Causal: the last prediction's loss is the whole sequence's minus its prefix's.
  const double last = 8 * m.loss(s) - 7 * m.loss(s.first(8));
  CHECK(m.tail_loss(s, 1) == Approx(last).epsilon(1e-4));
  CHECK(m.tail_loss(s, 8) == Approx(m.loss(s)).epsilon(1e-6));
  CHECK(m.tail_loss(s, 3) == Approx((8 * m.loss(s) - 5 * m.loss(s.first(6))) / 3).epsilon(1e-4));
  CHECK_THROWS(m.tail_loss(s, 9));
}

TEST_CASE("tiny_lm: a wrong gradient is caught (the check can fail)", "[trainer]") {
  tiny::tiny_lm<posenc::no_position> m(small(), {});
  const auto seq = text(8, 11);
  tiny::lm_params g = m.params().zeros_like();
  (void)m.loss(seq, &g, 2.0f);  // twice the gradient
  Eigen::Index at = 0;
  (void)g.out.cwiseAbs().reshaped().maxCoeff(&at);
  float* p = m.params().out.data() + at;
  const float keep = *p;
  *p = keep + 1e-2f;
  const double up = m.loss(seq);
  *p = keep - 1e-2f;
  const double down = m.loss(seq);
  *p = keep;
  const double fd = (up - down) / 2e-2, an = g.out.data()[at];
  CHECK(std::abs(fd - an) > 0.03 * std::abs(an) + 1e-3);
}

TEST_CASE("tiny_lm: training lowers the loss, and one seed gives one result", "[trainer]") {
  const auto data = text(4096, 1);
  auto run = [&] {
    tiny::lm_config c = small();
    c.steps = 150, c.warmup = 20;
    tiny::tiny_lm<posenc::alibi> m(c, posenc::alibi({.num_heads = 2}));
    const double first = m.loss(std::span<const std::uint8_t>(data).first(33));
    for (int s = 0; s < c.steps; ++s) (void)m.train_step(data, 4, 32);
    return std::pair{first, m.loss(std::span<const std::uint8_t>(data).first(33))};
  };
  const auto a = run(), b = run();
  CHECK(a.first > 5.0);   // about ln 256 at initialisation
  CHECK(a.second < 2.5);  // 8 equiprobable letters: ln 8 = 2.08 is the floor
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
}

TEST_CASE("lab: the mean and spread over seeds, and the lengths where seeds order the encodings differently",
          "[trainer]") {
  const auto line = [](const char* name, std::vector<double> bpb) { return tiny::lab_line{name, std::move(bpb), 1.0}; };
  const std::vector<std::vector<tiny::lab_line>> seeds = {{line("a", {1.0, 2.0}), line("b", {1.5, 2.5})},
                                                          {line("a", {1.2, 2.6}), line("b", {1.7, 2.4})},
                                                          {line("a", {1.4, 2.2}), line("b", {1.9, 2.3})}};
  const auto m = tiny::detail::mean_over_seeds(seeds);
  REQUIRE(m.size() == 2);
  CHECK(m[0].bits_per_byte[0] == Approx(1.2));
  CHECK(m[0].spread[0] == Approx(0.2));  // sample standard deviation of 1.0, 1.2, 1.4
  CHECK(m[1].bits_per_byte[1] == Approx(2.4));
  CHECK(m[1].spread[1] == Approx(0.1));
  CHECK(tiny::detail::columns_where_order_differs(seeds) == std::vector<std::size_t>{1});  // a < b, then not
  CHECK(tiny::detail::mean_over_seeds({seeds[0]})[0].spread.empty());
}
