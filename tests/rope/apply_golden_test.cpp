// rope_apply.json: HF Llama/NeoX rotate_half and GPT-J interleaved outputs, in both angle modes
// and for float and double storage, at the README tolerances.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/rope/rope.hpp>

#include "hf_config.hpp"
#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::flatten;

namespace {

struct apply_case {
  std::string id;
  std::vector<std::int64_t> positions;
  int head_dim = 0, rotary_dim = 0;
  std::vector<double> q, k;
  const nlohmann::json* expected = nullptr;
};

apply_case read(const nlohmann::json& c) {
  apply_case a;
  a.id = c.at("id").get<std::string>();
  a.positions = c.at("positions").get<std::vector<std::int64_t>>();
  a.head_dim = c.at("head_dim").get<int>();
  a.rotary_dim = c.at("rotary_dim").get<int>();
  a.q = flatten(c.at("inputs").at("q"));
  a.k = flatten(c.at("inputs").at("k"));
  a.expected = &c.at("expected");
  return a;
}

/// Runs transform_q/transform_k of `enc` on the inputs in storage T, returns them as doubles.
template <class T>
std::pair<std::vector<double>, std::vector<double>> run(const rope& enc, const apply_case& a) {
  auto go = [&](const std::vector<double>& in, bool is_q) {
    std::vector<T> x;
    for (double v : in) x.push_back(static_cast<T>(v));
    const auto P = static_cast<std::ptrdiff_t>(a.positions.size());
    auto view = tensor_view<T>::bthd(x.data(), 1, P, 1, a.head_dim);
    if (is_q)
      enc.transform_q(view, a.positions);
    else
      enc.transform_k(view, a.positions);
    return std::vector<double>(x.begin(), x.end());
  };
  return {go(a.q, true), go(a.k, false)};
}

/// Row-wise check with a position-dependent absolute tolerance atol0 + per_pos * position.
void check_rows(const std::vector<double>& got, const std::vector<double>& want, const apply_case& a, double atol0,
                double per_pos) {
  REQUIRE(got.size() == want.size());
  const auto D = static_cast<std::size_t>(a.head_dim);
  for (std::size_t r = 0; r < a.positions.size(); ++r) {
    INFO("row " << r << " position " << a.positions[r]);
    const std::vector<double> g(got.begin() + static_cast<std::ptrdiff_t>(r * D),
                                got.begin() + static_cast<std::ptrdiff_t>((r + 1) * D));
    const std::vector<double> w(want.begin() + static_cast<std::ptrdiff_t>(r * D),
                                want.begin() + static_cast<std::ptrdiff_t>((r + 1) * D));
    POSENC_CHECK_CLOSE(g, w, atol0 + per_pos * static_cast<double>(a.positions[r]), 0.0);
  }
}

}  // namespace

TEST_CASE("rope_apply rotate_half golden cases", "[rope][golden][apply]") {
  const auto configs = posenc_test::load_golden("rope_configs.json");
  const auto file = posenc_test::load_golden("rope_apply.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("layout") != "rotate_half") continue;
    ++n;
    const apply_case a = read(c);
    INFO("case " << a.id);
    const auto& e = *a.expected;
    rope_config cfg = posenc_test::rope_config_from_hf(
        posenc_test::golden_case(configs, c.at("config_case").get<std::string>()).at("config"));
    const rope schedule_enc(cfg);
    REQUIRE(schedule_enc.rotary_dim() == a.rotary_dim);
    CHECK(schedule_enc.base_frequencies().attention_scaling ==
          Approx(c.at("attention_scaling").get<double>()).epsilon(1e-13));

    // 1. exact mode, double storage, fp64 frequencies -> the promoted-to-fp64 reference.
    auto [qd, kd] = run<double>(schedule_enc, a);
    check_rows(qd, flatten(e.at("q_out_fp64full")), a, 1e-12, 2.5e-16);
    check_rows(kd, flatten(e.at("k_out_fp64full")), a, 1e-12, 2.5e-16);

    // 2. exact mode, float storage, fp64 frequencies -> fp64full at the float tolerance.
    auto [qf, kf] = run<float>(schedule_enc, a);
    check_rows(qf, flatten(e.at("q_out_fp64full")), a, 2e-6, 1.2e-7);
    check_rows(kf, flatten(e.at("k_out_fp64full")), a, 2e-6, 1.2e-7);

    // 3. the reference's fp32 inv_freq given explicitly, exact angles -> _fp64 (double and float storage).
    rope_config fixed = cfg;
    fixed.scaling = explicit_frequencies{.inv_freq = flatten(c.at("inv_freq_fp32")),
                                         .attention_factor = c.at("attention_scaling").get<double>()};
    const rope fixed_enc(fixed);
    auto [qd2, kd2] = run<double>(fixed_enc, a);
    check_rows(qd2, flatten(e.at("q_out_fp64")), a, 1e-12, 2.5e-16);
    check_rows(kd2, flatten(e.at("k_out_fp64")), a, 1e-12, 2.5e-16);
    auto [qf2, kf2] = run<float>(fixed_enc, a);
    check_rows(qf2, flatten(e.at("q_out_fp64")), a, 2e-6, 1.2e-7);
    check_rows(kf2, flatten(e.at("k_out_fp64")), a, 2e-6, 1.2e-7);

    // 4. reference_fp32: HF's float32 arithmetic with its fp32 inv_freq -> _fp32 at 2e-6 flat.
    fixed.angles = angle_mode::reference_fp32;
    const rope ref_enc(fixed);
    auto [qr, kr] = run<float>(ref_enc, a);
    check_rows(qr, flatten(e.at("q_out_fp32")), a, 2e-6, 0.0);
    check_rows(kr, flatten(e.at("k_out_fp32")), a, 2e-6, 0.0);
    // the cos/sin rows themselves (duplicated [phi, phi] in HF; our table keeps P values)
    const cos_sin_table<float> tab(ref_enc.base_frequencies(), 0, 1, angle_mode::reference_fp32);
    const auto cos32 = flatten(e.at("cos_fp32"));
    const auto sin32 = flatten(e.at("sin_fp32"));
    const auto P = static_cast<std::size_t>(a.rotary_dim / 2);
    for (std::size_t r = 0; r < a.positions.size(); ++r) {
      const cos_sin_table<float> row(ref_enc.base_frequencies(), a.positions[r], 1, angle_mode::reference_fp32);
      for (std::size_t j = 0; j < P; ++j) {
        CHECK(std::fabs(row.cos_row(a.positions[r])[j] - cos32[r * 2 * P + j]) <= 2e-6);
        CHECK(std::fabs(row.sin_row(a.positions[r])[j] - sin32[r * 2 * P + j]) <= 2e-6);
        CHECK(cos32[r * 2 * P + j] == cos32[r * 2 * P + P + j]);
      }
    }
    (void)tab;
  }
  CHECK(n == 8);
}

TEST_CASE("rope_apply GPT-J interleaved golden cases", "[rope][golden][apply]") {
  const auto file = posenc_test::load_golden("rope_apply.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("layout") != "gptj_interleaved") continue;
    ++n;
    const apply_case a = read(c);
    INFO("case " << a.id);
    const auto& e = *a.expected;
    rope_config cfg{.head_dim = a.head_dim, .rotary_dim = a.rotary_dim, .layout = kernels::pairing::interleaved};
    const rope enc(cfg);
    auto [qd, kd] = run<double>(enc, a);
    check_rows(qd, flatten(e.at("q_out_fp64full")), a, 1e-12, 2.5e-16);
    check_rows(kd, flatten(e.at("k_out_fp64full")), a, 1e-12, 2.5e-16);
    auto [qf, kf] = run<float>(enc, a);
    check_rows(qf, flatten(e.at("q_out_fp64full")), a, 2e-6, 1.2e-7);
    check_rows(kf, flatten(e.at("k_out_fp64full")), a, 2e-6, 1.2e-7);
    // HF fp32 arithmetic with float(inv_freq): within the fp32-angle tolerance of the fp32 reference.
    cfg.angles = angle_mode::reference_fp32;
    const rope ref(cfg);
    auto [qr, kr] = run<float>(ref, a);
    check_rows(qr, flatten(e.at("q_out_fp32")), a, 2e-6, 1.2e-7);
    check_rows(kr, flatten(e.at("k_out_fp32")), a, 2e-6, 1.2e-7);
    // the half-width tables
    const auto cosh = flatten(e.at("cos_half_fp64full"));
    const auto sinh = flatten(e.at("sin_half_fp64full"));
    const auto P = static_cast<std::size_t>(a.rotary_dim / 2);
    for (std::size_t r = 0; r < a.positions.size(); ++r) {
      const cos_sin_table<double> row(enc.base_frequencies(), a.positions[r], 1);
      for (std::size_t j = 0; j < P; ++j) {
        CHECK(row.cos_row(a.positions[r])[j] == Approx(cosh[r * P + j]).margin(1e-12));
        CHECK(row.sin_row(a.positions[r])[j] == Approx(sinh[r * P + j]).margin(1e-12));
      }
    }
  }
  CHECK(n == 2);
}

TEST_CASE("reference_fp32 from the config alone reproduces HF fp32 inv_freq and outputs (default, linear)",
          "[rope][golden][apply]") {
  const auto configs = posenc_test::load_golden("rope_configs.json");
  for (const auto& c : configs.at("cases")) {
    const auto type = c.at("rope_type").get<std::string>();
    if (type != "default" && type != "linear") continue;
    INFO("case " << c.at("id").get<std::string>());
    auto cfg = posenc_test::rope_config_from_hf(c.at("config"));
    cfg.angles = angle_mode::reference_fp32;
    const rope enc(cfg);
    CHECK(enc.base_frequencies().inv_freq == flatten(c.at("expected").at("inv_freq_fp32")));  // bit for bit
  }
  const auto file = posenc_test::load_golden("rope_apply.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("layout") != "rotate_half") continue;
    const auto id = c.at("config_case").get<std::string>();
    const auto& cc = posenc_test::golden_case(configs, id);
    if (cc.at("rope_type") != "default") continue;
    ++n;
    const apply_case a = read(c);
    INFO("case " << a.id);
    auto cfg = posenc_test::rope_config_from_hf(cc.at("config"));
    cfg.angles = angle_mode::reference_fp32;
    auto [qr, kr] = run<float>(rope(cfg), a);
    check_rows(qr, flatten(c.at("expected").at("q_out_fp32")), a, 2e-6, 0.0);
    check_rows(kr, flatten(c.at("expected").at("k_out_fp32")), a, 2e-6, 0.0);
  }
  CHECK(n == 4);
}
