// CoPE through sdpa and sdpa_backward against the authors' code (tests/golden/cope.json, gen_cope.py:
// facebookresearch/RAM ContextPosSelfAttn, outputs, weights and autograd gradients), a special case
// (constant gates make CoPE a relative position embedding), finite differences and invalid inputs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/cope.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/rope/rope.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"
#include "support/gradient_check.hpp"

using posenc::cope;
using posenc::cope_config;
using posenc::tensor_view;
using posenc_test::flatten;

namespace {

struct golden_case {
  std::ptrdiff_t B = 0, H = 0, S = 0, D = 0;
  cope_config config;
  std::vector<double> table, q, k, v, dout;
  std::vector<std::uint8_t> key_mask;  // empty: no padding
  bool causal = false;
};

/// The authors' [B * H, S, D] (row b * H + h) as posenc's [B, S, H, D].
std::vector<double> to_bshd(const std::vector<double>& x, std::ptrdiff_t B, std::ptrdiff_t H, std::ptrdiff_t S,
                            std::ptrdiff_t D) {
  std::vector<double> y(x.size());
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t h = 0; h < H; ++h)
      for (std::ptrdiff_t i = 0; i < S; ++i)
        for (std::ptrdiff_t d = 0; d < D; ++d)
          y[static_cast<std::size_t>(((b * S + i) * H + h) * D + d)] =
              x[static_cast<std::size_t>(((b * H + h) * S + i) * D + d)];
  return y;
}

golden_case read(const nlohmann::json& c) {
  golden_case g;
  g.B = c.at("batch");
  g.H = c.at("heads");
  g.S = c.at("seq");
  g.D = c.at("head_dim");
  g.config = {
      .head_dim = g.D,
      .npos = c.at("npos"),
      .gate_source = c.at("val_gates") ? posenc::contextual_gate_source::values : posenc::contextual_gate_source::keys,
      .scale_position_term = !c.at("nodiv").get<bool>()};
  g.table = posenc::cope_table_from_reference(flatten(c.at("pos_emb")), g.D, g.config.npos);
  for (const char* n : {"q", "k", "v", "dout"}) {
    auto x = to_bshd(flatten(c.at(n)), g.B, g.H, g.S, g.D);
    (n == std::string_view("q")   ? g.q
     : n == std::string_view("k") ? g.k
     : n == std::string_view("v") ? g.v
                                  : g.dout) = x;
  }
  g.causal = c.at("causal");
  if (!c.at("padding").is_null())
    for (const auto& row : c.at("padding"))
      for (const auto& pad : row) g.key_mask.push_back(pad.get<bool>() ? 0 : 1);
  return g;
}

template <class T>
tensor_view<const T> view(const std::vector<T>& x, const golden_case& g) {
  return tensor_view<const T>::bthd(x.data(), g.B, g.S, g.H, g.D);
}

/// The rows of [B, S, H, D] / [B, H, S, S] whose query is not padding (the authors let a padding
/// query attend to itself; posenc's masks do not).
std::vector<double> valid(const std::vector<double>& x, const golden_case& g, bool weights) {
  std::vector<double> r;
  const std::ptrdiff_t row = weights ? g.S : g.H * g.D;
  for (std::ptrdiff_t b = 0; b < g.B; ++b)
    for (std::ptrdiff_t h = 0; h < (weights ? g.H : 1); ++h)
      for (std::ptrdiff_t i = 0; i < g.S; ++i) {
        if (!g.key_mask.empty() && g.key_mask[static_cast<std::size_t>(b * g.S + i)] == 0) continue;
        const auto at = x.begin() + ((weights ? (b * g.H + h) * g.S : b * g.S) + i) * row;
        r.insert(r.end(), at, at + row);
      }
  return r;
}

/// CoPE with every gate 1: p_ij counts the visible keys from j to i.
struct unit_gate_cope {
  cope inner;
  [[nodiscard]] std::string_view name() const { return "unit_gate_cope"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const { return inner.head_dim(); }
  [[nodiscard]] posenc::contextual_gate_source gate_source() const { return inner.gate_source(); }
  [[nodiscard]] static double gate(double) { return 1.0; }
  [[nodiscard]] double max_position() const { return inner.max_position(); }
  [[nodiscard]] double position_logit(std::ptrdiff_t h, std::span<const double> q, double p) const {
    return inner.position_logit(h, q, p);
  }
  [[nodiscard]] bool position_term_scaled() const { return inner.position_term_scaled(); }
};

}  // namespace

TEST_CASE(
    "cope: sdpa equals the authors' ContextPosSelfAttn (outputs and weights, causal, padding, "
    "bidirectional, npos cap, value gates, nodiv)",
    "[cope][golden]") {
  const auto file = posenc_test::load_golden("cope.json");
  for (const auto& c : file.at("cases")) {
    INFO(c.at("id").get<std::string>());
    const golden_case g = read(c);
    const cope enc(g.config, g.table);
    std::vector<double> out(g.q.size()), w(static_cast<std::size_t>(g.B * g.H * g.S * g.S));
    const posenc::attention_options o{.causal = g.causal, .key_mask = g.key_mask, .weights = w};
    posenc::sdpa(view(g.q, g), view(g.k, g), view(g.v, g), tensor_view<double>::bthd(out.data(), g.B, g.S, g.H, g.D),
                 enc, o);
    const auto& e = c.at("expected");
    const auto expected = to_bshd(flatten(e.at("out_fp64full")), g.B, g.H, g.S, g.D);
    POSENC_CHECK_CLOSE(valid(out, g, false), valid(expected, g, false), 1e-14, 1e-12);
    POSENC_CHECK_CLOSE(valid(w, g, true), valid(flatten(e.at("weights_fp64full")), g, true), 1e-14, 1e-12);
    // float inputs vs the reference's float32 run
    const std::vector<float> qf(g.q.begin(), g.q.end()), kf(g.k.begin(), g.k.end()), vf(g.v.begin(), g.v.end());
    std::vector<float> of(qf.size());
    posenc::sdpa(view(qf, g), view(kf, g), view(vf, g), tensor_view<float>::bthd(of.data(), g.B, g.S, g.H, g.D), enc,
                 {.causal = g.causal, .key_mask = g.key_mask});
    const auto expected32 = to_bshd(flatten(e.at("out_fp32")), g.B, g.H, g.S, g.D);
    POSENC_CHECK_CLOSE(valid(std::vector<double>(of.begin(), of.end()), g, false), valid(expected32, g, false), 2e-6,
                       0);
  }
}

TEST_CASE("cope: sdpa_backward equals the authors' autograd gradients (q, k, v, the embeddings)", "[cope][golden]") {
  const auto file = posenc_test::load_golden("cope.json");
  for (const auto& c : file.at("cases")) {
    INFO(c.at("id").get<std::string>());
    const golden_case g = read(c);
    const cope enc(g.config, g.table);
    std::vector<double> dq(g.q.size()), dk(g.k.size()), dv(g.v.size()), grad(g.table.size(), 0.0);
    posenc::sdpa_backward(view(g.q, g), view(g.k, g), view(g.v, g), view(g.dout, g),
                          tensor_view<double>::bthd(dq.data(), g.B, g.S, g.H, g.D),
                          tensor_view<double>::bthd(dk.data(), g.B, g.S, g.H, g.D),
                          tensor_view<double>::bthd(dv.data(), g.B, g.S, g.H, g.D), enc,
                          {.causal = g.causal, .key_mask = g.key_mask}, {.encoder = grad});
    const auto& e = c.at("expected");
    POSENC_CHECK_CLOSE(dq, to_bshd(flatten(e.at("dq_fp64full")), g.B, g.H, g.S, g.D), 1e-13, 1e-11);
    POSENC_CHECK_CLOSE(dk, to_bshd(flatten(e.at("dk_fp64full")), g.B, g.H, g.S, g.D), 1e-13, 1e-11);
    POSENC_CHECK_CLOSE(dv, to_bshd(flatten(e.at("dv_fp64full")), g.B, g.H, g.S, g.D), 1e-13, 1e-11);
    const auto dtable = posenc::cope_table_from_reference(flatten(e.at("dpos_emb_fp64full")), g.D, g.config.npos);
    POSENC_CHECK_CLOSE(grad, dtable, 1e-13, 1e-11);
  }
}

TEST_CASE("cope: with every gate 1 the contextual position is the distance + 1 (a relative embedding)", "[cope]") {
  const std::ptrdiff_t B = 2, S = 9, H = 3, D = 4;
  const std::int64_t npos = 6;
  const auto E = posenc_test::random_values(static_cast<std::size_t>(npos * D), 7);
  const unit_gate_cope counting{cope({.head_dim = D, .npos = npos}, E)};
  // Shaw, query - key, rows 0 .. npos - 2 holding E[1 .. npos - 1], distances clipped at npos - 2
  const posenc::shaw_relative shaw({.head_dim = D,
                                    .k_left = 0,
                                    .k_right = npos - 2,
                                    .sign = posenc::shaw_sign::query_minus_key,
                                    .use_value_term = false},
                                   std::span<const double>(E).subspan(static_cast<std::size_t>(D)),
                                   std::span<const double>{});
  const auto q = posenc_test::random_values(static_cast<std::size_t>(B * S * H * D), 1);
  const auto k = posenc_test::random_values(q.size(), 2), v = posenc_test::random_values(q.size(), 3);
  std::vector<double> a(q.size()), b(q.size());
  const auto vq = tensor_view<const double>::bthd(q.data(), B, S, H, D);
  const auto vk = tensor_view<const double>::bthd(k.data(), B, S, H, D);
  const auto vv = tensor_view<const double>::bthd(v.data(), B, S, H, D);
  posenc::sdpa(vq, vk, vv, tensor_view<double>::bthd(a.data(), B, S, H, D), counting, {.causal = true});
  posenc::sdpa(vq, vk, vv, tensor_view<double>::bthd(b.data(), B, S, H, D), shaw, {.causal = true});
  POSENC_CHECK_CLOSE(a, b, 1e-15, 1e-13);
}

TEST_CASE("cope: gradients pass finite differences (key and value gates, nodiv, masks, GQA, with RoPE)",
          "[cope][backward]") {
  using namespace posenc_test::fd;
  const shape s{.B = 2, .Sq = 6, .Sk = 7, .Hq = 4, .Hkv = 2, .D = 4, .Dv = 4};
  const std::int64_t npos = 5;
  const auto table = posenc_test::random_values(static_cast<std::size_t>(npos * 4), 9);
  const std::vector<std::int64_t> lengths{7, 5};
  for (const auto source : {posenc::contextual_gate_source::keys, posenc::contextual_gate_source::values})
    for (const bool scaled : {true, false}) {
      const cope_config cfg{.head_dim = 4, .npos = npos, .gate_source = source, .scale_position_term = scaled};
      const std::string name =
          std::string(source == posenc::contextual_gate_source::keys ? "keys" : "values") + (scaled ? "" : ", nodiv");
      auto make = [&](const std::vector<double>& x) { return cope(cfg, x); };
      SECTION(name + ": causal") {
        check_inputs(problem(s), make(table), {.causal = true});
        check_parameters(problem(s), table, make, {.causal = true});
      }
      SECTION(name + ": bidirectional, padding, window, soft-cap") {
        const posenc::attention_options o{.sliding_window = 3, .logit_softcap = 2.5, .key_lengths = lengths};
        check_inputs(problem(s), make(table), o);
        check_parameters(problem(s), table, make, o);
      }
    }
  SECTION("with RoPE (the gates read the rotated keys)") {
    const posenc::rope rope({.head_dim = 4, .theta = 100});
    auto make = [&](const std::vector<double>& x) {
      return posenc::combine(rope, cope({.head_dim = 4, .npos = npos}, x));
    };
    check_inputs(problem(s), make(table), {.causal = true});
    check_parameters(problem(s), table, make, {.causal = true});
  }
}

TEST_CASE("cope: invalid configurations and inputs are refused by name", "[cope][invalid]") {
  using posenc_test::error_of;
  error_of([] { cope({.head_dim = 4, .npos = 3}, std::vector<double>(11)); }, "cope.table.size");
  error_of([] { cope({.head_dim = 4, .npos = 0}, std::vector<double>{}); }, "cope.npos");
  error_of([] { cope({.head_dim = 0, .npos = 3}, std::vector<double>{}); }, "cope.head_dim");
  error_of([] { (void)posenc::cope_table_from_reference(std::vector<double>(5), 2, 3); }, "cope.pos_emb.size");
  // value gates meet q: v.dim must be q.dim
  const cope enc({.head_dim = 4, .npos = 3, .gate_source = posenc::contextual_gate_source::values},
                 std::vector<double>(12, 0.1));
  std::vector<double> q(2 * 4, 0.1), v(2 * 6, 0.2), out(2 * 6);
  posenc_test::refused<posenc::shape_error>(
      [&] {
        posenc::sdpa(tensor_view<const double>::bthd(q.data(), 1, 2, 1, 4),
                     tensor_view<const double>::bthd(q.data(), 1, 2, 1, 4),
                     tensor_view<const double>::bthd(v.data(), 1, 2, 1, 6),
                     tensor_view<double>::bthd(out.data(), 1, 2, 1, 6), enc);
      },
      "v.dim");
  // head_dim must be q.dim
  posenc_test::refused<posenc::shape_error>(
      [&] {
        posenc::sdpa(tensor_view<const double>::bthd(v.data(), 1, 2, 1, 6),
                     tensor_view<const double>::bthd(v.data(), 1, 2, 1, 6),
                     tensor_view<const double>::bthd(v.data(), 1, 2, 1, 6),
                     tensor_view<double>::bthd(out.data(), 1, 2, 1, 6), enc);
      },
      "encoder.head_dim");
}
