// Frequency schedules: golden HF inv_freq, the tiny vectors and golden constants of docs/spec.md §8.
#include <cmath>
#include <numbers>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/rope/schedule.hpp>

#include "hf_config.hpp"
#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::flatten;

namespace {

std::vector<double> to_float_and_back(const std::vector<double>& v) {
  std::vector<double> r;
  for (double x : v) r.push_back(static_cast<double>(static_cast<float>(x)));
  return r;
}

}  // namespace

TEST_CASE("schedule matches every rope_configs golden case", "[rope][schedule][golden]") {
  const auto file = posenc_test::load_golden("rope_configs.json");
  REQUIRE(file.at("cases").size() >= 8);
  for (const auto& c : file.at("cases")) {
    INFO("case " << c.at("id").get<std::string>());
    const rope_schedule s(posenc_test::rope_config_from_hf(c.at("config")));
    const auto len = c.at("seq_len").is_null() ? std::int64_t{0} : c.at("seq_len").get<std::int64_t>();
    const rope_frequencies f = s.at(len);
    CHECK(2 * f.inv_freq.size() == c.at("rotary_dim").get<std::size_t>());
    CHECK(s.rotary_dim() == c.at("rotary_dim").get<int>());
    const auto& e = c.at("expected");
    POSENC_CHECK_CLOSE(f.inv_freq, flatten(e.at("inv_freq_fp64")), 0.0, 1e-13);
    POSENC_CHECK_CLOSE(to_float_and_back(f.inv_freq), flatten(e.at("inv_freq_fp32")), 0.0, 1e-6);
    CHECK(f.attention_scaling == Approx(e.at("attention_scaling").get<double>()).epsilon(1e-13));
    if (e.contains("softmax_scale_multiplier"))
      CHECK(f.softmax_scale_multiplier == Approx(e.at("softmax_scale_multiplier").get<double>()).epsilon(1e-13));
  }
}

TEST_CASE("YaRN tiny vector (docs/spec.md §8.5)", "[rope][schedule][yarn]") {
  const rope_schedule s(
      rope_config{.head_dim = 16, .theta = 1e4, .scaling = yarn_scaling{.factor = 4, .original_max_position = 64}});
  const auto [low, high] = yarn_correction_range(32, 1, 16, 1e4, 64, true);
  CHECK(low == 0);
  CHECK(high == 3);
  const std::vector<double> expected{1,      0.237170825,    0.05,    0.00790569415,
                                     0.0025, 0.000790569415, 0.00025, 7.90569415e-05};
  POSENC_CHECK_CLOSE(s.base().inv_freq, expected, 0.0, 1e-8);
  CHECK(s.base().attention_scaling == Approx(yarn_get_mscale(4)).epsilon(1e-15));
  CHECK(s.base().softmax_scale_multiplier == 1.0);
}

TEST_CASE("Llama 3 tiny vector (docs/spec.md §8.6)", "[rope][schedule][llama3]") {
  const rope_schedule s(rope_config{
      .head_dim = 16,
      .theta = 1e4,
      .scaling =
          llama3_scaling{.factor = 8, .low_freq_factor = 1, .high_freq_factor = 4, .original_max_position = 64}});
  const std::vector<double> expected{1,       0.244384599,    0.013042256, 0.00395284708,
                                     0.00125, 0.000395284708, 0.000125,    3.95284708e-05};
  POSENC_CHECK_CLOSE(s.base().inv_freq, expected, 0.0, 1e-8);
  CHECK(s.base().attention_scaling == 1.0);
}

TEST_CASE("Llama 3.1 8B bands: pairs 0-28 kept, 29-34 blended, 35-63 divided by 8", "[rope][schedule][llama3]") {
  const rope_schedule s(rope_config{.head_dim = 128, .theta = 5e5, .scaling = llama3_scaling{}});
  const auto plain = detail::default_inv_freq(5e5, 128, 64);
  for (std::size_t k = 0; k < 64; ++k) {
    INFO("pair " << k);
    const double w = s.base().inv_freq[k];
    if (k <= 28)
      CHECK(w == plain[k]);
    else if (k >= 35)
      CHECK(w == Approx(plain[k] / 8).epsilon(1e-15));
    else
      CHECK((w < plain[k] && w > plain[k] / 8));
  }
}

TEST_CASE("Llama 3 blend is continuous at both (inclusive) band boundaries", "[rope][schedule][llama3]") {
  // A wavelength exactly at L0/high_freq_factor gets g = 1 (kept), exactly at L0/low_freq_factor g = 0
  // (divided): the blend meets both outer bands, so HF's inclusive boundaries are continuous.
  const llama3_scaling l{.factor = 8, .low_freq_factor = 1, .high_freq_factor = 4, .original_max_position = 8192};
  std::vector<double> w{2 * std::numbers::pi / 2048, 2 * std::numbers::pi / 8192, 2 * std::numbers::pi / 4096};
  REQUIRE(2 * std::numbers::pi / w[0] == 2048);
  REQUIRE(2 * std::numbers::pi / w[1] == 8192);
  const auto in = w;
  detail::apply_llama3(w, l);
  CHECK(w[0] == Approx(in[0]).epsilon(1e-15));
  CHECK(w[1] == Approx(in[1] / 8).epsilon(1e-15));
  // midway (lambda = 4096): g = (2 - 1) / 3
  CHECK(w[2] == Approx((1 - 1.0 / 3) * in[2] / 8 + in[2] / 3).epsilon(1e-15));
}

TEST_CASE("YaRN golden correction ranges and get_mscale (docs/spec.md §8.5)", "[rope][schedule][yarn]") {
  {
    const auto [lo, hi] = yarn_correction_range(32, 1, 128, 1e4, 4096, false);
    CHECK(lo == Approx(20.94).margin(0.005));
    CHECK(hi == Approx(45.03).margin(0.005));
    const auto [tl, th] = yarn_correction_range(32, 1, 128, 1e4, 4096, true);
    CHECK(tl == 20);
    CHECK(th == 46);
  }
  {
    const auto [lo, hi] = yarn_correction_range(32, 1, 64, 1e4, 4096, true);  // DeepSeek-V3 rope slice
    CHECK(lo == 10);
    CHECK(hi == 23);
  }
  {
    const auto [lo, hi] = yarn_correction_range(32, 1, 64, 150000, 4096, false);  // gpt-oss
    CHECK(lo == Approx(8.0928).margin(5e-5));
    CHECK(hi == Approx(17.3980).margin(5e-5));
  }
  {
    const auto [lo, hi] = yarn_correction_range(32, 1, 128, 1e6, 32768, true);
    CHECK(lo == 23);
    CHECK(hi == 40);
  }
  {  // the clamp is dims - 1 (not dims/2 - 1): a huge L0 pushes high past P
    const auto [lo, hi] = yarn_correction_range(32, 1, 16, 1e4, 1e12, true);
    CHECK(hi == 15);
    CHECK(lo > 0);
  }
  {  // L0 <= 2 pi beta: corr <= 0, clamped to 0
    const auto [lo, hi] = yarn_correction_range(32, 1, 16, 1e4, 64, true);
    CHECK(lo == 0);
    CHECK(hi >= 0);
  }
  CHECK(yarn_get_mscale(4) == Approx(1.13863).margin(5e-6));
  CHECK(yarn_get_mscale(32) == Approx(1.34657).margin(5e-6));
  CHECK(yarn_get_mscale(40) == Approx(1.36889).margin(5e-6));
  CHECK(yarn_get_mscale(0.5) == 1.0);
  CHECK(yarn_get_mscale(1) == 1.0);
}

TEST_CASE("YaRN magnitude precedence and DeepSeek softmax multiplier", "[rope][schedule][yarn]") {
  auto M = [](yarn_scaling y) {
    y.original_max_position = 4096;
    const rope_schedule s(rope_config{.head_dim = 64, .theta = 1e4, .scaling = y});
    return std::pair{s.base().attention_scaling, s.base().softmax_scale_multiplier};
  };
  // DeepSeek-V3: s = 40, mscale = mscale_all_dim = 1 -> M = 1, softmax x 1.3689^2 = 1.8739
  auto [m1, sm1] = M({.factor = 40, .mscale = 1.0, .mscale_all_dim = 1.0});
  CHECK(m1 == 1.0);
  CHECK(sm1 == Approx(1.8739).margin(5e-5));
  CHECK(sm1 == Approx(yarn_get_mscale(40, 1) * yarn_get_mscale(40, 1)).epsilon(1e-15));
  // DeepSeek-V2-Lite: mscale = mscale_all_dim = 0.707 -> M = 1, softmax x 1.5896261651208736
  auto [m2, sm2] = M({.factor = 40, .mscale = 0.707, .mscale_all_dim = 0.707});
  CHECK(m2 == 1.0);
  CHECK(sm2 == Approx(1.5896261651208736).epsilon(1e-14));
  // attention_factor wins over everything
  auto [m3, sm3] = M({.factor = 40, .attention_factor = 0.5, .mscale = 1.0, .mscale_all_dim = 0.707});
  CHECK(m3 == 0.5);
  CHECK(sm3 == Approx(yarn_get_mscale(40, 0.707) * yarn_get_mscale(40, 0.707)));
  // only one of mscale / mscale_all_dim present -> get_mscale(s, 1)
  CHECK(M({.factor = 40, .mscale = 0.707}).first == Approx(yarn_get_mscale(40)).epsilon(1e-15));
  CHECK(M({.factor = 40, .mscale_all_dim = 0.707}).first == Approx(yarn_get_mscale(40)).epsilon(1e-15));
  // mscale_all_dim = 0 explicitly present, mscale = 1: HF's 0.1 ln s + 1, by explicit rule; no softmax factor
  auto [m4, sm4] = M({.factor = 40, .mscale = 1.0, .mscale_all_dim = 0.0});
  CHECK(m4 == Approx(0.1 * std::log(40.0) + 1).epsilon(1e-15));
  CHECK(sm4 == 1.0);
  // mscale = 0 explicitly present: the ratio form does not apply (as HF), get_mscale(s, 1)
  CHECK(M({.factor = 40, .mscale = 0.0, .mscale_all_dim = 1.0}).first == Approx(yarn_get_mscale(40)).epsilon(1e-15));
  // plain YaRN
  CHECK(M({.factor = 4}).first == Approx(1.138629436111989).epsilon(1e-15));
}

TEST_CASE("YaRN low == high adds 0.001 to high; extrapolation_factor 0 is pure interpolation",
          "[rope][schedule][yarn]") {
  // beta_fast and beta_slow close together: truncate makes low == high only if floor == ceil, i.e. an
  // integer corr; use truncate=false with betas so close the raw range is (nearly) empty.
  yarn_scaling y{
      .factor = 4, .original_max_position = 4096, .beta_fast = 32, .beta_slow = 31.999999999, .truncate = false};
  const rope_schedule s(rope_config{.head_dim = 128, .theta = 1e4, .scaling = y});
  const auto plain = detail::default_inv_freq(1e4, 128, 64);
  const auto [lo, hi] = yarn_correction_range(32, 31.999999999, 128, 1e4, 4096, false);
  for (std::size_t k = 0; k < 64; ++k) {
    const double kk = static_cast<double>(k);
    if (kk <= lo) CHECK(s.base().inv_freq[k] == Approx(plain[k]).epsilon(1e-15));
    if (kk >= hi + 1) CHECK(s.base().inv_freq[k] == Approx(plain[k] / 4).epsilon(1e-15));
  }
  yarn_scaling z{.factor = 4, .original_max_position = 4096, .extrapolation_factor = 0};
  const rope_schedule s0(rope_config{.head_dim = 128, .theta = 1e4, .scaling = z});
  for (std::size_t k = 0; k < 64; ++k) CHECK(s0.base().inv_freq[k] == Approx(plain[k] / 4).epsilon(1e-15));
}

TEST_CASE("dynamic NTK base goldens and boundary lengths L0, L0+1 (docs/spec.md §8.4)", "[rope][schedule][dynamic]") {
  CHECK(dynamic_ntk_theta(1e4, 2, 4096, 4096, 128) == Approx(10000).epsilon(1e-15));
  CHECK(dynamic_ntk_theta(1e4, 2, 4096, 100, 128) == Approx(10000).epsilon(1e-15));
  CHECK(dynamic_ntk_theta(1e4, 2, 4096, 6144, 128) == Approx(20221.26).margin(0.005));
  CHECK(dynamic_ntk_theta(1e4, 2, 4096, 8192, 128) == Approx(30527.74).margin(0.005));
  CHECK(dynamic_ntk_theta(1e4, 2, 4096, 16384, 128) == Approx(72195.86).margin(0.005));

  const rope_schedule s(
      rope_config{.head_dim = 128, .scaling = dynamic_ntk_scaling{.factor = 2, .original_max_position = 4096}});
  CHECK(s.length_dependent());
  const auto plain = detail::default_inv_freq(1e4, 128, 64);
  CHECK(s.base().inv_freq == plain);
  CHECK(s.at(4096).inv_freq == plain);
  const auto next = s.at(4097).inv_freq;
  CHECK(next != plain);
  CHECK(next == detail::default_inv_freq(dynamic_ntk_theta(1e4, 2, 4096, 4097, 128), 128, 64));
  // select() gives the same without allocating
  std::vector<double> scratch(64);
  const auto v = s.select(4097, scratch);
  CHECK(std::vector<double>(v.inv_freq, v.inv_freq + v.pairs) == next);
  CHECK(s.select(4096, scratch).inv_freq == s.base().inv_freq.data());
  const std::vector<std::int64_t> pos{0, 5, 4096, 17};
  CHECK(rope_schedule::effective_length(pos) == 4097);
  CHECK(rope_schedule::effective_length({}) == 0);

  // vLLM fixed_max: the HF formula once at L = L0 * s, i.e. theta * (s^2 - s + 1)^(R/(R-2)) (vLLM
  // DynamicNTKScalingRotaryEmbedding; docs/spec.md §8.4).
  CHECK(dynamic_ntk_theta(1e4, 2, 4096, 8192, 128) == Approx(1e4 * std::pow(3.0, 128.0 / 126.0)).epsilon(1e-14));
  const rope_schedule v2(
      rope_config{.head_dim = 128,
                  .scaling = dynamic_ntk_scaling{
                      .factor = 2, .original_max_position = 4096, .length_source = dynamic_length_source::fixed_max}});
  CHECK_FALSE(v2.length_dependent());
  POSENC_CHECK_CLOSE(v2.base().inv_freq, detail::default_inv_freq(ntk_static_theta(1e4, 3, 128), 128, 64), 0.0, 1e-14);
  CHECK(v2.at(1).inv_freq == v2.base().inv_freq);
}

TEST_CASE("NTK static alpha", "[rope][schedule][ntk]") {
  const rope_schedule s(rope_config{.head_dim = 64, .theta = 1e4, .scaling = ntk_scaling{.alpha = 8}});
  CHECK(ntk_static_theta(1e4, 8, 64) == Approx(1e4 * std::pow(8.0, 64.0 / 62.0)).epsilon(1e-15));
  POSENC_CHECK_CLOSE(s.base().inv_freq, detail::default_inv_freq(1e4 * std::pow(8.0, 64.0 / 62.0), 64, 32), 0.0, 1e-15);
  CHECK_FALSE(s.length_dependent());
}

TEST_CASE("HunYuan dynamic alpha: the alpha base up to L0, dynamic NTK from the unscaled base beyond",
          "[rope][schedule][dynamic_alpha]") {
  // modeling_hunyuan_v1_dense.py: inv_freq from theta * alpha^(D/(D-2)); beyond max_position_embeddings
  // dynamic_rope_update recomputes _compute_dynamic_ntk_parameters from rope_theta (no alpha).
  const rope_config c{.head_dim = 128,
                      .theta = 10000,
                      .scaling = dynamic_alpha_scaling{.alpha = 1000, .factor = 2, .original_max_position = 4096}};
  const rope_schedule s(c);
  CHECK(s.length_dependent());
  const auto alpha_base = detail::default_inv_freq(10000 * std::pow(1000.0, 128.0 / 126.0), 128, 64);
  POSENC_CHECK_CLOSE(s.base().inv_freq, alpha_base, 0.0, 1e-15);
  POSENC_CHECK_CLOSE(s.at(4096).inv_freq, alpha_base, 0.0, 0.0);
  const double grown = 10000 * std::pow(2.0 * 8192 / 4096 - 1, 128.0 / 126.0);
  POSENC_CHECK_CLOSE(s.at(8192).inv_freq, detail::default_inv_freq(grown, 128, 64), 0.0, 1e-15);
  // the growth starts from the unscaled base: just past L0 the frequencies are higher than the alpha ones
  CHECK(s.at(4097).inv_freq[1] > s.base().inv_freq[1]);
  std::vector<double> scratch(64);
  const auto v = s.select(8192, scratch);
  CHECK(std::vector<double>(v.inv_freq, v.inv_freq + v.pairs) == s.at(8192).inv_freq);
  CHECK(scaling_name(c.scaling) == "dynamic_alpha");
  CHECK(scaling_factor(c.scaling) == 2.0);
  posenc_test::error_of(
      [] {
        (void)rope_schedule(rope_config{.head_dim = 64, .scaling = dynamic_alpha_scaling{.alpha = 8, .factor = 1}});
      },
      "dynamic_alpha.original_max_position");
  posenc_test::error_of(
      [] {
        (void)rope_schedule(rope_config{
            .head_dim = 64, .scaling = dynamic_alpha_scaling{.alpha = 0.5, .factor = 1, .original_max_position = 64}});
      },
      "dynamic_alpha.alpha");
}

TEST_CASE("LongRoPE: short/long switch policies, boundary L0 / L0+1, magnitude", "[rope][schedule][longrope]") {
  std::vector<double> shortf(8, 1.0), longf(8);
  for (std::size_t k = 0; k < 8; ++k) longf[k] = 1.0 + static_cast<double>(k);
  longrope_scaling l{
      .short_factor = shortf, .long_factor = longf, .original_max_position = 4096, .max_position = 131072};
  const rope_schedule s(rope_config{.head_dim = 16, .scaling = l});
  const auto plain = detail::default_inv_freq(1e4, 16, 8);
  const double M = std::sqrt(1 + std::log(32.0) / std::log(4096.0));
  CHECK(s.length_dependent());
  CHECK(s.at(4096).inv_freq == s.base().inv_freq);
  POSENC_CHECK_CLOSE(s.at(4096).inv_freq, plain, 0.0, 1e-15);
  const auto lf = s.at(4097);
  for (std::size_t k = 0; k < 8; ++k) CHECK(lf.inv_freq[k] == Approx(plain[k] / longf[k]).epsilon(1e-15));
  CHECK(s.at(4096).attention_scaling == Approx(M).epsilon(1e-15));  // same M in both regimes (HF)
  CHECK(lf.attention_scaling == Approx(M).epsilon(1e-15));
  // Phi-3-mini-128k: L0 = 4096, max 131072 -> 1.19024
  CHECK(longrope_attention_factor(l) == Approx(1.19024).margin(5e-6));

  auto with = [&](longrope_switch p, std::int64_t cap) {
    auto m = l;
    m.switch_policy = p;
    m.capacity = cap;
    return rope_schedule(rope_config{.head_dim = 16, .scaling = m});
  };
  const auto cap_long = with(longrope_switch::fixed_by_capacity, 8192);
  CHECK_FALSE(cap_long.length_dependent());
  CHECK(cap_long.at(1).inv_freq == lf.inv_freq);
  const auto cap_short = with(longrope_switch::fixed_by_capacity, 4096);
  CHECK(cap_short.at(100000).inv_freq == s.base().inv_freq);
  const auto always = with(longrope_switch::always_long, 0);
  CHECK(always.at(1).inv_freq == lf.inv_freq);
  // explicit factor and attention factor
  auto m = l;
  m.factor = 1.0;
  CHECK(longrope_attention_factor(m) == 1.0);
  m.attention_factor = 1.5;
  CHECK(rope_schedule(rope_config{.head_dim = 16, .scaling = m}).base().attention_scaling == 1.5);
}

TEST_CASE("linear, frequency_factors, explicit_frequencies", "[rope][schedule]") {
  const auto plain = detail::default_inv_freq(1e4, 32, 16);
  const rope_schedule lin(rope_config{.head_dim = 32, .scaling = linear_scaling{.factor = 4}});
  for (std::size_t k = 0; k < 16; ++k) CHECK(lin.base().inv_freq[k] == plain[k] / 4);
  std::vector<double> ff(16);
  for (std::size_t k = 0; k < 16; ++k) ff[k] = 0.5 + static_cast<double>(k);
  const rope_schedule fs(
      rope_config{.head_dim = 32, .scaling = frequency_factors{.factors = ff, .attention_factor = 1.25}});
  for (std::size_t k = 0; k < 16; ++k) CHECK(fs.base().inv_freq[k] == plain[k] / ff[k]);
  CHECK(fs.base().attention_scaling == 1.25);
  const rope_schedule ex(rope_config{.head_dim = 32, .scaling = explicit_frequencies{.inv_freq = ff}});
  CHECK(ex.base().inv_freq == ff);
}

TEST_CASE("every scaling at factor 1 equals plain RoPE", "[rope][schedule]") {
  const rope_config base{.head_dim = 64, .theta = 5e5};
  const auto plain = rope_schedule(base).base();
  std::vector<rope_scaling> ones{linear_scaling{.factor = 1},
                                 ntk_scaling{.alpha = 1},
                                 dynamic_ntk_scaling{.factor = 1, .original_max_position = 16},
                                 yarn_scaling{.factor = 1, .original_max_position = 4096},
                                 llama3_scaling{.factor = 1, .original_max_position = 8192},
                                 longrope_scaling{.short_factor = std::vector<double>(32, 1.0),
                                                  .long_factor = std::vector<double>(32, 1.0),
                                                  .original_max_position = 4096,
                                                  .factor = 1.0},
                                 frequency_factors{.factors = std::vector<double>(32, 1.0)},
                                 explicit_frequencies{.inv_freq = plain.inv_freq}};
  for (const auto& sc : ones) {
    auto c = base;
    c.scaling = sc;
    INFO("scaling index " << sc.index());
    const rope_schedule s(c);
    // dynamic NTK at factor 1 still grows the base beyond L0 ((L / L0)^(R/(R-2))): plain only up to L0.
    const bool dynamic = std::holds_alternative<dynamic_ntk_scaling>(sc);
    for (std::int64_t len :
         {std::int64_t{1}, std::int64_t{16}, std::int64_t{4096}, std::int64_t{4097}, std::int64_t{1} << 20}) {
      if (dynamic && len > 16) continue;
      const auto f = s.at(len);
      POSENC_CHECK_CLOSE(f.inv_freq, plain.inv_freq, 0.0, 1e-15);
      CHECK(f.attention_scaling == 1.0);
      CHECK(f.softmax_scale_multiplier == 1.0);
    }
  }
}

TEST_CASE("partial rotary: prefix (denominator R) and proportional (denominator D, zero tail)", "[rope][schedule]") {
  const rope_schedule pre(rope_config{.head_dim = 96, .partial_rotary_factor = 0.25});
  CHECK(pre.rotary_dim() == 24);
  CHECK(pre.pairs() == 12);
  CHECK(pre.base().inv_freq == detail::default_inv_freq(1e4, 24, 12));
  CHECK(pre.geometry().rotary_dim == 24);

  const rope_schedule prop(
      rope_config{.head_dim = 64, .partial_rotary_factor = 0.25, .partial_mode = partial_rotary_mode::proportional});
  CHECK(prop.rotary_dim() == 16);
  CHECK(prop.pairs() == 32);
  CHECK(prop.geometry().rotary_dim == 64);
  const auto full = detail::default_inv_freq(1e4, 64, 32);
  for (std::size_t k = 0; k < 32; ++k) CHECK(prop.base().inv_freq[k] == (k < 8 ? full[k] : 0.0));

  const rope_schedule off(rope_config{.head_dim = 192, .rotary_dim = 64, .rotary_offset = 128});
  CHECK(off.geometry().offset == 128);
  CHECK(off.geometry().rotary_dim == 64);
  CHECK(rope_schedule(rope_config{.head_dim = 192, .rotary_offset = 128}).rotary_dim() == 64);  // default D - offset
  CHECK(resolved_rotary_dim(rope_config{.head_dim = 80, .partial_rotary_factor = 0.4}) == 32);
}
