// tests/attention/golden_test.cpp — attention_e2e.json and shaw.json's attention case through sdpa()
// with test-local encoders (the family encoders are checked against the same cases in
// encoders_e2e_test.cpp).
#include "support/golden.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>

#include "attention_support.hpp"
#include "support/check.hpp"

using posenc_test::flatten;
using posenc_test::load_golden;

namespace {

/// Runs one attention_e2e case (inputs [heads][seq][dim]) through sdpa with `enc` in type T and
/// checks out and weights against the float64 references.
template <class T, class E>
void check_e2e_case(const nlohmann::json& c, const E& enc, double atol) {
  const auto H = c.at("heads").get<std::ptrdiff_t>(), S = c.at("seq_len").get<std::ptrdiff_t>(),
             D = c.at("head_dim").get<std::ptrdiff_t>();
  auto q = posenc_test::cast_to<T>(flatten(c.at("inputs").at("q")));
  auto k = posenc_test::cast_to<T>(flatten(c.at("inputs").at("k")));
  auto v = posenc_test::cast_to<T>(flatten(c.at("inputs").at("v")));
  std::vector<T> out(q.size(), T(-7));
  std::vector<double> w(static_cast<std::size_t>(H * S * S), -7.0);
  using view = posenc::tensor_view<const T>;
  posenc::sdpa(view::bhtd(q.data(), 1, H, S, D), view::bhtd(k.data(), 1, H, S, D), view::bhtd(v.data(), 1, H, S, D),
               posenc::tensor_view<T>::bhtd(out.data(), 1, H, S, D), enc,
               {.scale = c.at("softmax_scale").get<double>(), .causal = c.at("causal").get<bool>(), .weights = w});
  INFO(c.at("id").get<std::string>());
  POSENC_CHECK_CLOSE(out, flatten(c.at("expected").at("out_fp64")), atol, 0);
  POSENC_CHECK_CLOSE(w, flatten(c.at("expected").at("weights_fp64")), atol, 0);
}

template <class E>
void check_e2e_both(const nlohmann::json& c, const E& enc) {
  check_e2e_case<double>(c, enc, 1e-12);
  check_e2e_case<float>(c, enc, 2e-5);
}

}  // namespace

TEST_CASE("golden e2e: every case through sdpa with a test-local encoder of its hook", "[attention][golden]") {
  const auto file = load_golden("attention_e2e.json");
  int checked = 0;
  for (const auto& c : file.at("cases")) {
    const std::string kind = c.at("encoder");
    const auto H = c.at("heads").get<std::ptrdiff_t>(), S = c.at("seq_len").get<std::ptrdiff_t>();
    if (kind == "rope") {
      check_e2e_both(c, posenc_test::local_rope{flatten(c.at("params").at("inv_freq_fp32"))});
    } else if (kind == "alibi" || kind == "t5") {
      // The reference's own additive bias [H][S][S] (positions 0..S-1) as a score-bias encoder.
      check_e2e_both(c, posenc_test::table_bias{H, S, S, flatten(c.at("expected").at("bias"))});
      if (kind == "alibi") check_e2e_both(c, posenc_test::slope_bias{flatten(c.at("params").at("slopes"))});
    } else if (kind == "shaw") {
      check_e2e_both(c, posenc_test::local_shaw{c.at("params").at("max_relative_position").get<std::int64_t>(),
                                                c.at("head_dim").get<std::ptrdiff_t>(),
                                                flatten(c.at("inputs").at("rel_keys_table")),
                                                flatten(c.at("inputs").at("rel_values_table"))});
    } else {
      FAIL("unknown encoder kind " << kind);
    }
    ++checked;
  }
  CHECK(checked == static_cast<int>(file.at("cases").size()));
  CHECK(checked >= 5);
}

TEST_CASE("golden shaw.json attention case through sdpa (bidirectional, value term)", "[attention][golden]") {
  const auto file = load_golden("shaw.json");
  int checked = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "attention") continue;
    const auto H = c.at("heads").get<std::ptrdiff_t>(), S = c.at("length").get<std::ptrdiff_t>(),
               D = c.at("depth").get<std::ptrdiff_t>();
    const posenc_test::local_shaw enc{c.at("max_relative_position").get<std::int64_t>(), D,
                                      flatten(c.at("inputs").at("rel_keys_table")),
                                      flatten(c.at("inputs").at("rel_values_table"))};
    auto run = [&]<class T>(T, double atol) {
      auto q = posenc_test::cast_to<T>(flatten(c.at("inputs").at("q")));
      auto k = posenc_test::cast_to<T>(flatten(c.at("inputs").at("k")));
      auto v = posenc_test::cast_to<T>(flatten(c.at("inputs").at("v")));
      std::vector<T> out(q.size());
      std::vector<double> w(static_cast<std::size_t>(H * S * S));
      using view = posenc::tensor_view<T>;
      posenc::sdpa(view::bhtd(q.data(), 1, H, S, D), view::bhtd(k.data(), 1, H, S, D), view::bhtd(v.data(), 1, H, S, D),
                   view::bhtd(out.data(), 1, H, S, D), enc,
                   {.scale = c.at("scale").get<double>(), .causal = c.at("causal").get<bool>(), .weights = w});
      POSENC_CHECK_CLOSE(out, flatten(c.at("expected").at("out_fp64")), atol, 0);
      POSENC_CHECK_CLOSE(w, flatten(c.at("expected").at("weights_fp64")), atol, 0);
    };
    run(0.0, 1e-12);
    run(0.0f, 1e-5);
    ++checked;
  }
  CHECK(checked == 1);
}
