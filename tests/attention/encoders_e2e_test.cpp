// tests/attention/encoders_e2e_test.cpp — attention_e2e.json and shaw.json through sdpa() with the
// library's own encoders (rope, alibi, t5_bias, shaw_relative), float64 and float32 paths.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>
#include <posenc/core/positions.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/rope/rope.hpp>

#include "attention_support.hpp"
#include "support/check.hpp"
#include "support/golden.hpp"

using posenc_test::flatten;
using posenc_test::load_golden;

namespace {

struct e2e_result {
  std::vector<double> out, weights;
};

/// Inputs [heads][seq][dim] of an attention_e2e case through sdpa with `enc` in type T.
template <class T, class E>
e2e_result run_case(const nlohmann::json& c, const E& enc) {
  const auto H = c.at("heads").get<std::ptrdiff_t>(), S = c.at("seq_len").get<std::ptrdiff_t>(),
             D = c.at("head_dim").get<std::ptrdiff_t>();
  auto q = posenc_test::cast_to<T>(flatten(c.at("inputs").at("q")));
  auto k = posenc_test::cast_to<T>(flatten(c.at("inputs").at("k")));
  auto v = posenc_test::cast_to<T>(flatten(c.at("inputs").at("v")));
  std::vector<T> out(q.size());
  e2e_result r;
  r.weights.resize(static_cast<std::size_t>(H * S * S));
  using view = posenc::tensor_view<const T>;
  posenc::sdpa(
      view::bhtd(q.data(), 1, H, S, D), view::bhtd(k.data(), 1, H, S, D), view::bhtd(v.data(), 1, H, S, D),
      posenc::tensor_view<T>::bhtd(out.data(), 1, H, S, D), enc,
      {.scale = c.at("softmax_scale").get<double>(), .causal = c.at("causal").get<bool>(), .weights = r.weights});
  r.out.assign(out.begin(), out.end());
  return r;
}

template <class E>
void check_case(const nlohmann::json& c, const E& enc) {
  INFO(c.at("id").get<std::string>() << " with " << enc.name());
  const auto out = flatten(c.at("expected").at("out_fp64")), w = flatten(c.at("expected").at("weights_fp64"));
  const auto d = run_case<double>(c, enc);
  POSENC_CHECK_CLOSE(d.out, out, 1e-12, 0);
  POSENC_CHECK_CLOSE(d.weights, w, 1e-12, 0);
  const auto f = run_case<float>(c, enc);
  POSENC_CHECK_CLOSE(f.out, out, 2e-5, 0);
  POSENC_CHECK_CLOSE(f.weights, w, 2e-5, 0);
}

}  // namespace

TEST_CASE("golden e2e through the library encoders (rope, alibi, t5, shaw)", "[attention][golden]") {
  const auto file = load_golden("attention_e2e.json");
  int checked = 0;
  for (const auto& c : file.at("cases")) {
    const std::string kind = c.at("encoder");
    const auto H = c.at("heads").get<std::int64_t>();
    const auto D = c.at("head_dim").get<int>();
    const auto& p = c.at("params");
    if (kind == "rope") {
      const posenc::rope enc({.head_dim = D,
                              .rotary_dim = p.at("rotary_dim").get<int>(),
                              .scaling = posenc::explicit_frequencies{.inv_freq = flatten(p.at("inv_freq_fp32"))}});
      check_case(c, enc);
      // The rotated q and k themselves.
      const auto S = c.at("seq_len").get<std::ptrdiff_t>();
      auto q = flatten(c.at("inputs").at("q")), k = flatten(c.at("inputs").at("k"));
      std::vector<std::int64_t> pos;
      for (const auto& x : p.at("positions")) pos.push_back(x.get<std::int64_t>());
      using view = posenc::tensor_view<double>;
      enc.transform_q(view::bhtd(q.data(), 1, H, S, D), pos);
      enc.transform_k(view::bhtd(k.data(), 1, H, S, D), pos);
      POSENC_CHECK_CLOSE(q, flatten(c.at("expected").at("q_rotated")), 1e-12, 0);
      POSENC_CHECK_CLOSE(k, flatten(c.at("expected").at("k_rotated")), 1e-12, 0);
    } else if (kind == "alibi") {
      const auto slopes = flatten(p.at("slopes"));
      POSENC_CHECK_CLOSE(posenc::alibi_slopes(H), slopes, 0, 1e-14);
      check_case(c, posenc::alibi({.num_heads = H, .mode = posenc::alibi_mode::causal_true_distance}));
      check_case(c, posenc::alibi({.num_heads = H, .mode = posenc::alibi_mode::symmetric}));  // equal under causal
      check_case(c, posenc::alibi({.num_heads = H, .mode = posenc::alibi_mode::causal_row_shift}));
    } else if (kind == "t5") {
      const posenc::t5_bias enc({.num_buckets = p.at("num_buckets").get<int>(),
                                 .max_distance = p.at("max_distance").get<int>(),
                                 .bidirectional = p.at("bidirectional").get<bool>(),
                                 .num_heads = H},
                                std::span<const double>(flatten(c.at("inputs").at("t5_bias_table"))));
      check_case(c, enc);
    } else if (kind == "shaw") {
      const auto keys = flatten(c.at("inputs").at("rel_keys_table")),
                 values = flatten(c.at("inputs").at("rel_values_table"));
      const posenc::shaw_relative enc(
          posenc::shaw_relative_config::symmetric(p.at("max_relative_position").get<std::int64_t>(), D),
          std::span<const double>(keys), std::span<const double>(values));
      check_case(c, enc);
    } else {
      FAIL("unknown encoder " << kind);
    }
    ++checked;
  }
  CHECK(checked == static_cast<int>(file.at("cases").size()));
}

TEST_CASE("golden shaw.json attention case through shaw_relative", "[attention][golden]") {
  const auto file = load_golden("shaw.json");
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "attention") continue;
    const auto H = c.at("heads").get<std::ptrdiff_t>(), S = c.at("length").get<std::ptrdiff_t>(),
               D = c.at("depth").get<std::ptrdiff_t>();
    const auto keys = flatten(c.at("inputs").at("rel_keys_table")),
               values = flatten(c.at("inputs").at("rel_values_table"));
    const posenc::shaw_relative enc(
        posenc::shaw_relative_config::symmetric(c.at("max_relative_position").get<std::int64_t>(), D),
        std::span<const double>(keys), std::span<const double>(values));
    auto q = flatten(c.at("inputs").at("q")), k = flatten(c.at("inputs").at("k")), v = flatten(c.at("inputs").at("v"));
    std::vector<double> out(q.size()), w(static_cast<std::size_t>(H * S * S));
    using view = posenc::tensor_view<double>;
    posenc::sdpa(view::bhtd(q.data(), 1, H, S, D), view::bhtd(k.data(), 1, H, S, D), view::bhtd(v.data(), 1, H, S, D),
                 view::bhtd(out.data(), 1, H, S, D), enc,
                 {.scale = c.at("scale").get<double>(), .causal = c.at("causal").get<bool>(), .weights = w});
    POSENC_CHECK_CLOSE(out, flatten(c.at("expected").at("out_fp64")), 1e-12, 0);
    POSENC_CHECK_CLOSE(w, flatten(c.at("expected").at("weights_fp64")), 1e-12, 0);
  }
}

TEST_CASE("shift invariance with the library's ALiBi, T5 and Shaw", "[attention]") {
  const std::ptrdiff_t S = 9, H = 4, D = 8;
  posenc_test::tensor4<double> q(1, S, H, D, 7), k(1, S, H, D, 8), v(1, S, H, D, 9);
  const auto p0 = posenc::arange_positions(S, 0), pt = posenc::arange_positions(S, 777);
  auto check_shift = [&](const auto& enc) {
    posenc_test::tensor4<double> a(1, S, H, D), b(1, S, H, D);
    posenc::sdpa(q.cview(), k.cview(), v.cview(), a.view(), enc,
                 {.causal = true, .query_positions = p0, .key_positions = p0});
    posenc::sdpa(q.cview(), k.cview(), v.cview(), b.view(), enc,
                 {.causal = true, .query_positions = pt, .key_positions = pt});
    INFO(enc.name());
    POSENC_CHECK_CLOSE(b.data, a.data, 1e-12, 0);
  };
  const auto table = posenc_test::random_values(32 * H, 5);
  const auto kt = posenc_test::random_values(7 * D, 6), vt = posenc_test::random_values(7 * D, 7);
  check_shift(posenc::alibi({.num_heads = H}));
  check_shift(posenc::t5_bias({.bidirectional = false, .num_heads = H}, std::span<const double>(table)));
  check_shift(posenc::shaw_relative(posenc::shaw_relative_config::symmetric(3, D), std::span<const double>(kt),
                                    std::span<const double>(vt)));
  check_shift(posenc::rope({.head_dim = static_cast<int>(D), .theta = 500000}));
}
