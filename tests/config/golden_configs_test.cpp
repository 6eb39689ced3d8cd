// tests/config/golden_configs_test.cpp — every rope_configs.json case: its `config` object, read by
// the HF loader and turned into frequencies by rope_schedule, matches the reference values.
#include <string>

#include <catch2/catch.hpp>

#include <posenc/config/json.hpp>
#include <posenc/rope/schedule.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;

TEST_CASE("golden: rope_configs cases through load_hf_config (inv_freq rtol 1e-13, attention_scaling)") {
  const auto golden = posenc_test::load_golden("rope_configs.json");
  int n = 0;
  for (const auto& c : golden.at("cases")) {
    if (c.at("reference") != "hf") continue;
    INFO("case " << c.at("id").get<std::string>());
    const model_config m = load_hf_config(to_config_value(c.at("config")), {.generic = true});
    CHECK(m.rope_type == c.at("rope_type").get<std::string>());
    REQUIRE(m.rope);
    const rope_schedule s(*m.rope);
    CHECK(s.rotary_dim() == c.at("rotary_dim").get<int>());
    const auto f = c.at("seq_len").is_null() ? s.base() : s.at(c.at("seq_len").get<std::int64_t>());
    POSENC_CHECK_CLOSE(f.inv_freq, posenc_test::flatten(c.at("expected").at("inv_freq_fp64")), 0.0, 1e-13);
    CHECK(f.attention_scaling == Approx(c.at("expected").at("attention_scaling").get<double>()).epsilon(1e-13));
    ++n;
  }
  CHECK(n >= 8);
}
