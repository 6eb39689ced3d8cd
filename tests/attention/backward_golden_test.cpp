// tests/attention/backward_golden_test.cpp — sdpa_backward against PyTorch autograd (float64) on
// tests/golden/attention_backward.json (generated once by tests/golden/gen_attention_backward.py):
// GQA + causal + soft-cap + sinks + a linear bias; Shaw key and value tables; RoPE + T5 buckets.
// Both sides compute in double from float32-exact inputs, in different orders: every value within
// 1e-13 * max(1, |torch|) (measured worst 1.5e-15: a few roundings of 2^-53 on these shapes).
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/rope/rope.hpp>

#include "support/golden.hpp"

using posenc::attention_gradients;
using posenc::attention_options;
using posenc::tensor_view;
using posenc_test::flatten;

namespace {

constexpr double golden_tol = 1e-13;

void expect_golden(const std::vector<double>& got, const nlohmann::json& want, const char* what) {
  const std::vector<double> w = flatten(want);
  REQUIRE(got.size() == w.size());
  double worst = 0;
  for (std::size_t n = 0; n < w.size(); ++n)
    worst = std::max(worst, std::fabs(got[n] - w[n]) / std::max(1.0, std::fabs(w[n])));
  INFO(what << ": worst relative difference " << worst);
  CHECK(worst <= golden_tol);
}

struct golden_inputs {
  std::ptrdiff_t B, Sq, Sk, Hq, Hkv, D, Dv;
  std::vector<double> q, k, v, dout;
  explicit golden_inputs(const nlohmann::json& c)
      : B(c["shape"]["B"]),
        Sq(c["shape"]["Sq"]),
        Sk(c["shape"]["Sk"]),
        Hq(c["shape"]["Hq"]),
        Hkv(c["shape"]["Hkv"]),
        D(c["shape"]["D"]),
        Dv(c["shape"]["Dv"]),
        q(flatten(c["q"])),
        k(flatten(c["k"])),
        v(flatten(c["v"])),
        dout(flatten(c["dout"])) {}

  /// Runs sdpa (checked against out_fp64) and sdpa_backward, checks dq, dk, dv.
  template <class E>
  void check(const nlohmann::json& c, const E& enc, const attention_options& o, const attention_gradients& g) const {
    std::vector<double> out(dout.size()), dq(q.size()), dk(k.size()), dv(v.size());
    const auto vq = tensor_view<const double>::bthd(q.data(), B, Sq, Hq, D);
    const auto vk = tensor_view<const double>::bthd(k.data(), B, Sk, Hkv, D);
    const auto vv = tensor_view<const double>::bthd(v.data(), B, Sk, Hkv, Dv);
    posenc::sdpa(vq, vk, vv, tensor_view<double>::bthd(out.data(), B, Sq, Hq, Dv), enc, o);
    expect_golden(out, c["out_fp64"], "out (the forward both differentiate)");
    posenc::sdpa_backward(vq, vk, vv, tensor_view<const double>::bthd(dout.data(), B, Sq, Hq, Dv),
                          tensor_view<double>::bthd(dq.data(), B, Sq, Hq, D),
                          tensor_view<double>::bthd(dk.data(), B, Sk, Hkv, D),
                          tensor_view<double>::bthd(dv.data(), B, Sk, Hkv, Dv), enc, o, g);
    expect_golden(dq, c["dq_fp64"], "dq");
    expect_golden(dk, c["dk_fp64"], "dk");
    expect_golden(dv, c["dv_fp64"], "dv");
  }
};

}  // namespace

TEST_CASE("sdpa_backward matches PyTorch autograd: GQA, causal, soft-cap, sinks, linear bias", "[backward][golden]") {
  const auto file = posenc_test::load_golden("attention_backward.json");
  const auto& c = posenc_test::golden_case(file, "gqa_causal_softcap_sinks_linear_bias");
  const golden_inputs in(c);
  const std::vector<double> sinks = flatten(c["sinks"]), slopes = flatten(c["slopes"]);
  const posenc::alibi bias({.num_heads = in.Hq, .mode = posenc::alibi_mode::causal_true_distance, .slopes = slopes});
  std::vector<double> dsinks(sinks.size(), 0.0);
  in.check(c, bias, {.causal = true, .logit_softcap = c["logit_softcap"].get<double>(), .sinks = sinks},
           {.sinks = dsinks});
  expect_golden(dsinks, c["dsinks_fp64"], "dsinks");
}

TEST_CASE("sdpa_backward matches PyTorch autograd: Shaw key and value tables", "[backward][golden]") {
  const auto file = posenc_test::load_golden("attention_backward.json");
  const auto& c = posenc_test::golden_case(file, "shaw_key_value_k2");
  const golden_inputs in(c);
  const std::vector<double> kt = flatten(c["shaw_key_table"]), vt = flatten(c["shaw_value_table"]);
  const posenc::shaw_relative shaw(posenc::shaw_relative_config::symmetric(c["k_max"].get<std::int64_t>(), in.D), kt,
                                   vt);
  std::vector<double> grad(kt.size() + vt.size(), 0.0);
  in.check(c, shaw, {}, {.encoder = grad});
  expect_golden(std::vector<double>(grad.begin(), grad.begin() + static_cast<std::ptrdiff_t>(kt.size())),
                c["dshaw_key_table_fp64"], "d key table");
  expect_golden(std::vector<double>(grad.begin() + static_cast<std::ptrdiff_t>(kt.size()), grad.end()),
                c["dshaw_value_table_fp64"], "d value table");
}

TEST_CASE("sdpa_backward matches PyTorch autograd: RoPE then T5 buckets, causal MQA", "[backward][golden]") {
  const auto file = posenc_test::load_golden("attention_backward.json");
  const auto& c = posenc_test::golden_case(file, "rope_t5_causal_mqa");
  const golden_inputs in(c);
  const std::vector<double> table = flatten(c["t5_table"]);
  const posenc::t5_bias_config cfg{.num_buckets = c["t5"]["num_buckets"],
                                   .max_distance = c["t5"]["max_distance"],
                                   .bidirectional = c["t5"]["bidirectional"],
                                   .num_heads = in.Hq};
  const auto enc =
      posenc::combine(posenc::rope({.head_dim = static_cast<int>(in.D), .theta = 10000}), posenc::t5_bias(cfg, table));
  std::vector<double> grad(table.size(), 0.0);
  in.check(c, enc, {.scale = 1.0, .causal = true}, {.encoder = grad});
  expect_golden(grad, c["dt5_table_fp64"], "d T5 table");
}
