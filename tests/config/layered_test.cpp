// Per-layer positional configuration (config/layered.hpp, config/layer_encoder.hpp): layered.json
// layer maps and per-layer RoPE through the HF loader, legacy == v5 forms, the embedded published
// configs (Qwen2.5-VL, Qwen3-VL, Gemma 3, Llama 4, gpt-oss), GGUF keys, gpt-oss through sdpa with
// sinks == KV-cache decode, and a config_error naming the key for every malformed input.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/config/json.hpp>
#include <posenc/config/layer_encoder.hpp>
#include <posenc/config/layered.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::error_of;
using posenc_test::flatten;

namespace {

layered_config load_json(const nlohmann::json& j) {
  return load_hf_layered(to_config_value(j));
}

/// layered.json's configs are the text models' dicts, without a model_type: the family from the case id.
layered_config load_case(const nlohmann::json& c) {
  nlohmann::json cfg = c.at("config");
  const std::string id = c.at("id");
  if (!cfg.contains("model_type")) cfg["model_type"] = id.rfind("gemma3", 0) == 0 ? "gemma3_text" : "llama4_text";
  return load_json(cfg);
}
layered_config load_file(const std::string& name) {
  return load_hf_layered(parse_config_json(read_text_file(std::string(POSENC_GOLDEN_DIR) + "/configs/" + name)));
}
nlohmann::json config_file(const std::string& name) {
  return nlohmann::json::parse(read_text_file(std::string(POSENC_GOLDEN_DIR) + "/configs/" + name));
}

}  // namespace

TEST_CASE("layered.json layer maps through the HF loader", "[layered][golden]") {
  const auto file = posenc_test::load_golden("layered.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "layer_map") continue;
    ++n;
    INFO(c.at("id").get<std::string>());
    const auto cfg = load_case(c);
    const auto& e = c.at("expected");
    const auto types = e.at("layer_types").get<std::vector<std::string>>();
    REQUIRE(cfg.layers.size() == types.size());
    for (std::size_t i = 0; i < types.size(); ++i) {
      INFO("layer " << i);
      CHECK(layer_type_name(cfg.layers[i].attention) == types[i]);
      if (e.contains("is_sliding")) CHECK((cfg.layers[i].attention == layer_attention::sliding) == e["is_sliding"][i]);
      if (e.contains("sliding_window")) {
        if (e["sliding_window"][i].is_null())
          CHECK(!cfg.layers[i].window);
        else
          CHECK(cfg.layers[i].window == e["sliding_window"][i].get<std::int64_t>());
      }
      if (e.contains("rope_used")) CHECK(cfg.layers[i].rope_source == e["rope_used"][i].get<std::string>());
      if (e.contains("use_rope")) CHECK(cfg.layers[i].rope.has_value() == e["use_rope"][i].get<bool>());
      if (e.contains("no_rope_layers")) CHECK(int(cfg.layers[i].rope.has_value()) == e["no_rope_layers"][i].get<int>());
    }
    if (e.contains("temperature_layers")) {
      std::vector<int> got;
      for (std::size_t i = 0; i < cfg.layers.size(); ++i)
        if (cfg.layers[i].temperature) got.push_back(static_cast<int>(i));
      CHECK(got == e.at("temperature_layers").get<std::vector<int>>());
    }
  }
  CHECK(n >= 2);
}

TEST_CASE("layered.json Gemma 3 per-layer-type RoPE through the loader", "[layered][golden]") {
  const auto file = posenc_test::load_golden("layered.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "layer_type_rope") continue;
    ++n;
    INFO(c.at("id").get<std::string>());
    const auto cfg = load_case(c);
    const std::string type = c.at("layer_type");
    std::size_t layer = 0;
    while (layer_type_name(cfg.layers[layer].attention) != type) ++layer;
    REQUIRE(cfg.layers[layer].rope);
    const auto& e = c.at("expected");
    const rope r(*cfg.layers[layer].rope);
    POSENC_CHECK_CLOSE(r.base_frequencies().inv_freq, e.at("inv_freq_fp64full").get<std::vector<double>>(), 0.0, 1e-13);
    CHECK(r.base_frequencies().attention_scaling == e.at("attention_scaling").get<double>());
    const auto pos = c.at("positions").get<std::vector<std::int64_t>>();
    const int D = c.at("head_dim").get<int>();
    for (const char* which : {"q", "k"}) {
      const auto in = flatten(c.at("inputs").at(which));
      const auto want = flatten(e.at(std::string(which) + "_out_fp64full"));
      std::vector<double> xd = in;
      std::vector<float> xf(in.begin(), in.end());
      const auto P = static_cast<std::ptrdiff_t>(pos.size());
      r.transform_k(tensor_view<double>::bthd(xd.data(), 1, P, 1, D), pos);
      r.transform_k(tensor_view<float>::bthd(xf.data(), 1, P, 1, D), pos);
      for (std::size_t row = 0; row < pos.size(); ++row) {
        INFO(which << " row " << row);
        const auto p = static_cast<double>(pos[row]);
        for (std::size_t d = 0; d < static_cast<std::size_t>(D); ++d) {
          const std::size_t i = row * static_cast<std::size_t>(D) + d;
          CHECK(std::fabs(xd[i] - want[i]) <= 1e-12 + 2.5e-16 * p);
          CHECK(std::fabs(static_cast<double>(xf[i]) - want[i]) <= 2e-6 + 1.2e-7 * p);
        }
      }
    }
  }
  CHECK(n >= 2);
}

TEST_CASE("Gemma 3: legacy keys and the transformers v5 rope_parameters per layer type agree", "[layered]") {
  const auto legacy_j = config_file("gemma3_4b.json");
  const auto legacy = load_json(legacy_j);
  nlohmann::json v5 = legacy_j;
  for (const char* k : {"rope_theta", "rope_scaling", "rope_local_base_freq", "sliding_window_pattern"}) v5.erase(k);
  v5["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
                           {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  std::vector<std::string> types;
  for (const auto& l : legacy.layers) types.emplace_back(layer_type_name(l.attention));
  v5["layer_types"] = types;
  const auto modern = load_json(v5);
  REQUIRE(modern.layers.size() == legacy.layers.size());
  for (std::size_t i = 0; i < legacy.layers.size(); ++i) {
    INFO("layer " << i);
    CHECK(modern.layers[i].attention == legacy.layers[i].attention);
    REQUIRE(modern.layers[i].rope);
    CHECK(rope_schedule(*modern.layers[i].rope).base() == rope_schedule(*legacy.layers[i].rope).base());
  }
  CHECK(legacy.layers[5].rope->theta == 1000000.0);
  CHECK(std::holds_alternative<linear_scaling>(legacy.layers[5].rope->scaling));
  CHECK(legacy.layers[0].rope->theta == 10000.0);
  CHECK(std::holds_alternative<default_scaling>(legacy.layers[0].rope->scaling));
  // legacy top-level keys next to the v5 form: the per-type entries win (Gemma3TextConfig setdefault), and a
  // top-level key that disagrees is reported
  v5["rope_theta"] = 1000000.0;
  v5["rope_local_base_freq"] = 10000.0;
  CHECK(load_json(v5).layers[0].rope->theta == 10000.0);
  CHECK(load_json(v5).warnings.empty());
  auto has = [](const layered_config& l, const std::string& needle) {
    return std::any_of(l.warnings.begin(), l.warnings.end(),
                       [&](const std::string& w) { return w.find(needle) != std::string::npos; });
  };
  v5["rope_theta"] = 500000.0;
  CHECK(load_json(v5).layers[5].rope->theta == 1000000.0);
  CHECK(has(load_json(v5), "rope_theta = 5e+05 ignored"));
  v5["rope_theta"] = 1000000.0;
  v5["rope_local_base_freq"] = 20000.0;
  CHECK(load_json(v5).layers[0].rope->theta == 10000.0);
  CHECK(has(load_json(v5), "rope_local_base_freq = 20000 ignored"));
}

TEST_CASE("embedded published configs: Qwen2.5-VL, Qwen3-VL, Llama 4, gpt-oss", "[layered]") {
  SECTION("Qwen2.5-VL 7B: contiguous mRoPE [16, 24, 24] on all 28 layers") {
    const auto cfg = load_file("qwen2_5_vl_7b.json");
    REQUIRE(cfg.mrope);
    CHECK(cfg.mrope->section == std::array<int, 3>{16, 24, 24});
    CHECK(cfg.mrope->layout == mrope_layout::contiguous);
    CHECK(cfg.layers.size() == 28);
    const auto enc = make_layer_encoder(cfg, 27);
    REQUIRE(std::holds_alternative<mrope>(enc));
    CHECK(std::get<mrope>(enc).config().rope.theta == 1000000.0);
    for (const auto& w : cfg.warnings) CHECK(w.find("mrope") == std::string::npos);
  }
  SECTION("Qwen2.5-VL with the long-context YaRN of its model card: mRoPE over YaRN frequencies") {
    auto j = config_file("qwen2_5_vl_7b.json");
    j["rope_scaling"] = {
        {"type", "yarn"}, {"mrope_section", {16, 24, 24}}, {"factor", 4}, {"original_max_position_embeddings", 32768}};
    const auto cfg = load_json(j);
    REQUIRE(cfg.mrope);
    const auto enc = make_layer_encoder(cfg, 0);
    REQUIRE(std::holds_alternative<mrope>(enc));
    const auto& m = std::get<mrope>(enc);
    CHECK(std::holds_alternative<yarn_scaling>(m.config().rope.scaling));
    CHECK(m.base_frequencies() == rope_schedule(m.config().rope).base());
    CHECK(m.base_frequencies().attention_scaling == Approx(0.1 * std::log(4.0) + 1).epsilon(1e-15));
  }
  SECTION("Qwen3-VL 8B: interleaved [24, 20, 20] read from text_config") {
    const auto cfg = load_file("qwen3_vl_8b.json");
    REQUIRE(cfg.mrope);
    CHECK(cfg.mrope->section == std::array<int, 3>{24, 20, 20});
    CHECK(cfg.mrope->layout == mrope_layout::interleaved);
    CHECK(cfg.base.model_type == "qwen3_vl");
    CHECK(cfg.layers.size() == 36);
    CHECK(cfg.layers[0].rope->theta == 5000000.0);
  }
  SECTION("Llama 4 Scout: NoPE every 4th layer with the temperature, llama3 scaling elsewhere") {
    const auto cfg = load_file("llama4_scout.json");
    REQUIRE(cfg.layers.size() == 48);
    CHECK(std::holds_alternative<rope>(make_layer_encoder(cfg, 0)));
    const auto nope = make_layer_encoder(cfg, 3);
    REQUIRE(std::holds_alternative<attention_temperature>(nope));
    const auto& t = std::get<attention_temperature>(nope);
    CHECK(t.factor(8191) == Approx(1.0 + 0.1 * std::log(2.0)).margin(1e-15));
    CHECK(cfg.layers[0].attention == layer_attention::chunked);
    CHECK(cfg.layers[0].chunk_size == 8192);
    CHECK(!cfg.layers[0].window);
    CHECK(std::holds_alternative<llama3_scaling>(cfg.layers[0].rope->scaling));
    CHECK(cfg.layers[0].rope->layout == kernels::pairing::interleaved);  // HF view_as_complex pairs
    CHECK(layer_options(cfg.layers[0]).attention_chunk == 8192);
    CHECK(!layer_options(cfg.layers[0]).sliding_window);
    CHECK(layer_options(cfg.layers[3]).causal);
    CHECK(!layer_options(cfg.layers[3]).attention_chunk);
  }
  SECTION("gpt-oss 20B: even layers slide (128), YaRN truncate false on every layer, sinks") {
    const auto cfg = load_file("gpt_oss_20b.json");
    REQUIRE(cfg.layers.size() == 24);
    CHECK(cfg.attention_sinks);
    for (std::size_t i = 0; i < 24; ++i) {
      CHECK((cfg.layers[i].attention == layer_attention::sliding) == (i % 2 == 0));
      REQUIRE(cfg.layers[i].rope);
      const auto* y = std::get_if<yarn_scaling>(&cfg.layers[i].rope->scaling);
      REQUIRE(y);
      CHECK(!y->truncate);
    }
    CHECK(cfg.layers[0].window == 128);
    CHECK(!cfg.layers[1].window);
    // fractional correction range (docs/spec.md §8.5: [8.0928, 17.3980]; ggml's floor/ceil gives [8, 18])
    const auto [lo, hi] = yarn_correction_range(32, 1, 64, 150000, 4096, false);
    CHECK(std::fabs(lo - 8.0928) < 1e-4);
    CHECK(std::fabs(hi - 17.3980) < 1e-4);
    const auto [tlo, thi] = yarn_correction_range(32, 1, 64, 150000, 4096, true);
    CHECK((tlo == 8.0 && thi == 18.0));
  }
}

TEST_CASE("gpt-oss layers through sdpa with sinks equal KV-cache decode", "[layered][kv_cache]") {
  const auto cfg = load_file("gpt_oss_20b.json");
  const std::ptrdiff_t Hq = 4, Hkv = 2, D = 64, N = 10;
  std::mt19937 g(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> q(static_cast<std::size_t>(N * Hq * D)), k(static_cast<std::size_t>(N * Hkv * D)), v(k.size());
  for (auto* x : {&q, &k, &v})
    for (auto& e : *x) e = u(g);
  const std::vector<double> sinks = {0.5, -1.0, 2.0, 0.0};
  for (std::size_t layer : {0u, 1u}) {
    INFO("layer " << layer);
    auto opts = layer_options(cfg.layers[layer]);
    if (layer == 0) opts.sliding_window = 4;  // a window shorter than the test sequence (the model's is 128)
    opts.sinks = sinks;
    std::visit(
        [&](const auto& enc) {
          std::vector<double> full(q.size()), step(q.size()), nosink(q.size());
          sdpa(tensor_view<const double>::bthd(q.data(), 1, N, Hq, D),
               tensor_view<const double>::bthd(k.data(), 1, N, Hkv, D),
               tensor_view<const double>::bthd(v.data(), 1, N, Hkv, D),
               tensor_view<double>::bthd(full.data(), 1, N, Hq, D), enc, opts);
          kv_cache<double> cache({.kv_heads = Hkv, .head_dim = D});
          for (std::ptrdiff_t t = 0; t < N; ++t) {
            const std::int64_t p[1] = {t};
            static_cast<void>(cache.append(enc, tensor_view<const double>::bthd(k.data() + t * Hkv * D, 1, 1, Hkv, D),
                                           tensor_view<const double>::bthd(v.data() + t * Hkv * D, 1, 1, Hkv, D), p));
            cache.attend(enc, tensor_view<const double>::bthd(q.data() + t * Hq * D, 1, 1, Hq, D),
                         tensor_view<double>::bthd(step.data() + t * Hq * D, 1, 1, Hq, D), p, opts);
          }
          POSENC_CHECK_CLOSE(step, full, 1e-12, 0.0);
          auto o2 = opts;
          o2.sinks = {};
          sdpa(tensor_view<const double>::bthd(q.data(), 1, N, Hq, D),
               tensor_view<const double>::bthd(k.data(), 1, N, Hkv, D),
               tensor_view<const double>::bthd(v.data(), 1, N, Hkv, D),
               tensor_view<double>::bthd(nosink.data(), 1, N, Hq, D), enc, o2);
          double diff = 0;
          for (std::size_t i = 0; i < full.size(); ++i) diff = std::max(diff, std::fabs(full[i] - nosink[i]));
          CHECK(diff > 1e-6);  // the sinks act
        },
        make_layer_encoder(cfg, layer));
  }
}

TEST_CASE("layered HF loader: every malformed key is a config_error naming it", "[layered][validate]") {
  const auto gemma = config_file("gemma3_4b.json");
  const auto llama4 = config_file("llama4_scout.json");
  const auto qwen = config_file("qwen2_5_vl_7b.json");
  auto with = [](nlohmann::json j, const std::string& k, const nlohmann::json& v) {
    j[k] = v;
    return j;
  };
  nlohmann::json q = qwen;
  q["rope_scaling"]["mrope_section"] = {16, 24, 16};
  error_of([&] { load_json(q); }, "rope_scaling.mrope_section");
  q["rope_scaling"]["mrope_section"] = {16, 48};
  error_of([&] { load_json(q); }, "rope_scaling.mrope_section");
  error_of([&] { load_json(with(gemma, "sliding_window_pattern", 35)); }, "sliding_window_pattern");
  error_of([&] { load_json(with(gemma, "layer_types", std::vector<std::string>(35, "full_attention"))); },
           "layer_types");
  // an explicit layer_types beats the pattern (as in Hugging Face), which is reported
  const auto explicit_types = load_json(with(gemma, "layer_types", std::vector<std::string>(34, "full_attention")));
  CHECK(explicit_types.layers[0].attention == layer_attention::full);
  CHECK(std::any_of(explicit_types.warnings.begin(), explicit_types.warnings.end(),
                    [](const std::string& w) { return w.find("sliding_window_pattern") != std::string::npos; }));
  auto bad_type = gemma;
  bad_type.erase("sliding_window_pattern");
  bad_type["layer_types"] = std::vector<std::string>(34, "full_attention");
  bad_type["layer_types"][1] = "global";
  error_of([&] { load_json(bad_type); }, "layer_types[1]");
  auto no_window = gemma;
  no_window.erase("sliding_window");
  CHECK(load_json(no_window).layers[0].window == 4096);  // Gemma3TextConfig's class default
  no_window["sliding_window"] = nullptr;
  error_of([&] { load_json(no_window); }, "sliding_window");
  auto no_layers = gemma;
  no_layers.erase("num_hidden_layers");
  error_of([&] { load_json(no_layers); }, "num_hidden_layers");
  // layer counts past 2^16 are refused rather than built layer by layer
  CHECK(load_json(with(with(gemma, "num_hidden_layers", 65536), "sliding_window_pattern", 2)).layers.size() == 65536);
  error_of([&] { load_json(with(gemma, "num_hidden_layers", 65537)); }, "num_hidden_layers");
  // a 2^20-wide rotary head on every layer (loads in milliseconds: one schedule per distinct RoPE), each
  // layer's softmax scale carrying DeepSeek's YaRN get_mscale(40, 1)^2 = (0.1 ln 40 + 1)^2
  const auto wide = load_json({{"model_type", "deepseek_v3"},
                               {"num_hidden_layers", 64},
                               {"num_attention_heads", 128},
                               {"hidden_size", 7168},
                               {"q_lora_rank", 1536},
                               {"kv_lora_rank", 512},
                               {"qk_nope_head_dim", 128},
                               {"qk_rope_head_dim", (1 << 20) - 128},
                               {"v_head_dim", 128},
                               {"rope_theta", 10000},
                               {"rope_scaling",
                                {{"type", "yarn"},
                                 {"factor", 40},
                                 {"original_max_position_embeddings", 4096},
                                 {"mscale", 1.0},
                                 {"mscale_all_dim", 1.0}}}});
  REQUIRE(wide.layers.size() == 64);
  const double mscale = 0.1 * std::log(40.0) + 1.0;
  for (const std::size_t i : {std::size_t{0}, std::size_t{63}}) {
    REQUIRE(wide.layers[i].rope);
    CHECK(wide.layers[i].base_scale == 1.0 / 1024.0);  // (qk_nope + qk_rope)^-1/2 = 2^-10
    CHECK(std::fabs(wide.layers[i].softmax_scale - mscale * mscale / 1024.0) < 1e-15);
  }
  error_of([&] { load_json(with(llama4, "floor_scale", -8192)); }, "floor_scale");
  error_of([&] { load_json(with(llama4, "floor_scale", 0)); }, "floor_scale");
  error_of([&] { load_json(with(llama4, "attn_scale", -1)); }, "attn_scale");
  error_of([&] { load_json(with(llama4, "no_rope_layers", std::vector<int>(47, 1))); }, "no_rope_layers");
  auto bad_nrl = std::vector<int>(48, 1);
  bad_nrl[3] = 2;
  error_of([&] { load_json(with(llama4, "no_rope_layers", bad_nrl)); }, "no_rope_layers[3]");
  error_of([&] { load_json(with(llama4, "no_rope_layer_interval", 49)); }, "no_rope_layer_interval");
  // explicit no_rope_layers contradicting the interval
  error_of([&] { load_json(with(llama4, "no_rope_layers", std::vector<int>(48, 1))); }, "no_rope_layer_interval");
  // Mistral 3 temperature needs its L0
  nlohmann::json m3 = {
      {"model_type", "ministral3"},
      {"num_hidden_layers", 2},
      {"head_dim", 128},
      {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1e6}, {"llama_4_scaling_beta", 0.1}}}};
  error_of([&] { load_json(m3); }, "rope_parameters.original_max_position_embeddings");
  m3["rope_parameters"]["original_max_position_embeddings"] = 16384;
  const auto ok = load_json(m3);
  REQUIRE(ok.layers[1].temperature);
  CHECK(ok.layers[1].temperature->rule == temperature_rule::llama4_beta);
  CHECK(ok.layers[1].temperature->floor_scale == 16384);
  CHECK(std::holds_alternative<combined<rope, attention_temperature>>(make_layer_encoder(ok, 1)));
  m3["rope_parameters"]["llama_4_scaling_beta"] = -0.1;
  error_of([&] { load_json(m3); }, "rope_parameters.llama_4_scaling_beta");
  error_of([&] { static_cast<void>(make_layer_encoder(ok, 2)); }, "layer");
}

TEST_CASE("layered GGUF loader: dimension_sections, freq_base_swa, sliding pattern, temperature", "[layered][gguf]") {
  auto md = [](const nlohmann::json& extra) {
    nlohmann::json j = {{"general.architecture", "gemma3"},       {"gemma3.block_count", 12},
                        {"gemma3.attention.head_count", 8},       {"gemma3.attention.key_length", 256},
                        {"gemma3.rope.freq_base", 1000000.0},     {"gemma3.rope.dimension_count", 256},
                        {"gemma3.attention.sliding_window", 1024}};
    for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
    return to_config_value(j);
  };
  const auto g =
      load_gguf_layered(md({{"gemma3.rope.freq_base_swa", 10000.0}, {"gemma3.attention.sliding_window_pattern", 6}}));
  REQUIRE(g.layers.size() == 12);
  CHECK(g.layers[0].attention == layer_attention::sliding);
  CHECK(g.layers[5].attention == layer_attention::full);
  CHECK(g.layers[0].rope->theta == 10000.0);
  CHECK(g.layers[5].rope->theta == 1000000.0);
  CHECK(g.layers[0].window == 1024);
  std::vector<bool> pat(12, false);
  pat[2] = true;
  const auto a = load_gguf_layered(md({{"gemma3.attention.sliding_window_pattern", pat}}));
  CHECK(a.layers[2].attention == layer_attention::sliding);
  CHECK(a.layers[3].attention == layer_attention::full);
  using posenc_test::error_of;
  error_of(
      [&] {
        static_cast<void>(load_gguf_layered(md({{"gemma3.attention.sliding_window_pattern", 13}})));
      },
      "gemma3.attention.sliding_window_pattern");
  error_of(
      [&] {
        static_cast<void>(load_gguf_layered(md({{"gemma3.attention.sliding_window_pattern", std::vector<bool>(13)}})));
      },
      "gemma3.attention.sliding_window_pattern");
  // implied pattern: a warning
  const auto implied = load_gguf_layered(md({}));
  CHECK(implied.layers[5].attention == layer_attention::full);
  CHECK(!implied.warnings.empty());

  nlohmann::json qv = {{"general.architecture", "qwen2vl"},
                       {"qwen2vl.block_count", 2},
                       {"qwen2vl.attention.head_count", 28},
                       {"qwen2vl.attention.key_length", 128},
                       {"qwen2vl.rope.freq_base", 1000000.0},
                       {"qwen2vl.rope.dimension_count", 128},
                       {"qwen2vl.rope.dimension_sections", {16, 24, 24, 0}}};
  const auto q = load_gguf_layered(to_config_value(qv));
  REQUIRE(q.mrope);
  CHECK(q.mrope->section == std::array<int, 3>{16, 24, 24});
  qv["qwen2vl.rope.dimension_sections"] = {16, 24, 20, 0};
  error_of([&] { static_cast<void>(load_gguf_layered(to_config_value(qv))); }, "qwen2vl.rope.dimension_sections");
  qv["qwen2vl.rope.dimension_sections"] = {16, 24, 20, 4};
  error_of([&] { static_cast<void>(load_gguf_layered(to_config_value(qv))); }, "qwen2vl.rope.dimension_sections");
  qv["qwen2vl.rope.dimension_sections"] = {16, 24, 24, 0};
  qv["qwen2vl.attention.temperature_scale"] = 0.1;
  error_of([&] { static_cast<void>(load_gguf_layered(to_config_value(qv))); }, "qwen2vl.attention.temperature_length");
  qv["qwen2vl.attention.temperature_length"] = -5;
  error_of([&] { static_cast<void>(load_gguf_layered(to_config_value(qv))); }, "qwen2vl.attention.temperature_length");
  qv["qwen2vl.attention.temperature_length"] = 16384;
  const auto t = load_gguf_layered(to_config_value(qv));
  REQUIRE(t.layers[0].temperature);
  CHECK(t.layers[0].temperature->scale == 0.1);
  qv.erase("qwen2vl.block_count");
  error_of([&] { static_cast<void>(load_gguf_layered(to_config_value(qv))); }, "qwen2vl.block_count");
}

// The kinds below are described in the golden README; a golden file need not hold every kind.
// Each case found is checked through the loader; a field the README promises
// but the case lacks fails the test rather than skipping it.
TEST_CASE("layered.json apply cases (Llama 4, gpt-oss) through the loader", "[layered][golden]") {
  const auto file = posenc_test::load_golden("layered.json");
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "apply") continue;
    INFO(c.at("id").get<std::string>());
    REQUIRE(c.contains("config"));
    const auto cfg = load_case(c);
    const auto layer = c.at("layer_idx").get<std::size_t>();
    const int D = c.at("head_dim").get<int>();
    const auto pos = c.at("positions").get<std::vector<std::int64_t>>();
    const auto& e = c.at("expected");
    if (cfg.layers.at(layer).rope) {
      const rope r(*cfg.layers[layer].rope);
      POSENC_CHECK_CLOSE(r.base_frequencies().inv_freq, c.at("inv_freq_fp64full").get<std::vector<double>>(), 0.0,
                         1e-13);
      CHECK(r.base_frequencies().attention_scaling == Approx(c.at("attention_scaling").get<double>()).epsilon(1e-13));
      CHECK((r.config().layout == kernels::pairing::interleaved) == (c.at("layout") == "interleaved_complex"));
    }
    const auto P = static_cast<std::ptrdiff_t>(pos.size());
    std::visit(
        [&](const auto& enc) {
          for (const char* which : {"q", "k"}) {
            auto x = flatten(c.at("inputs").at(which));
            const auto want = flatten(e.at(std::string(which) + "_out_fp64full"));
            const auto view = tensor_view<double>::bthd(x.data(), 1, P, 1, D);
            if constexpr (qk_transform_encoding<std::decay_t<decltype(enc)>>) {
              if (std::string(which) == "q")
                enc.transform_q(view, pos);
              else
                enc.transform_k(view, pos);
            }
            for (std::size_t row = 0; row < pos.size(); ++row)
              for (std::size_t d = 0; d < static_cast<std::size_t>(D); ++d) {
                const std::size_t i = row * static_cast<std::size_t>(D) + d;
                INFO(which << " row " << row << " dim " << d);
                CHECK(std::fabs(x[i] - want[i]) <= 1e-12 + 2.5e-16 * static_cast<double>(pos[row]));
              }
          }
        },
        make_layer_encoder(cfg, layer));
  }
}

TEST_CASE("layered.json sink_attention cases through sdpa", "[layered][golden]") {
  const auto file = posenc_test::load_golden("layered.json");
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "sink_attention") continue;
    INFO(c.at("id").get<std::string>());
    const auto H = c.at("heads").get<std::ptrdiff_t>(), Hkv = c.at("kv_heads").get<std::ptrdiff_t>();
    const auto S = c.at("seq_len").get<std::ptrdiff_t>(), D = c.at("head_dim").get<std::ptrdiff_t>();
    const auto q = flatten(c.at("inputs").at("q")), k = flatten(c.at("inputs").at("k")),
               v = flatten(c.at("inputs").at("v"));
    const auto sinks = flatten(c.at("inputs").at("sinks"));
    std::vector<double> out(static_cast<std::size_t>(S * H * D)), w(static_cast<std::size_t>(H * S * S));
    // q [heads][S][d], k/v [kv_heads][S][d]: head-major views; out [S][heads][d]
    const auto hv = [&](const std::vector<double>& x, std::ptrdiff_t heads) {
      return tensor_view<const double>::strided(x.data(), {1, S, heads, D}, {heads * S * D, D, S * D, 1});
    };
    sdpa(hv(q, H), hv(k, Hkv), hv(v, Hkv), tensor_view<double>::bthd(out.data(), 1, S, H, D), no_position{},
         {.scale = c.at("scaling").get<double>(), .causal = c.value("causal", true), .sinks = sinks, .weights = w});
    POSENC_CHECK_CLOSE(out, flatten(c.at("expected").at("out_fp64full")), 1e-12, 0.0);
    POSENC_CHECK_CLOSE(w, flatten(c.at("expected").at("weights_fp64full")), 1e-12, 0.0);
  }
}

TEST_CASE("layered.json format_equivalence: legacy and v5 forms give identical per-layer RoPE", "[layered][golden]") {
  const auto file = posenc_test::load_golden("layered.json");
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "format_equivalence") continue;
    INFO(c.at("id").get<std::string>());
    const auto a = load_json(c.at("config_legacy")), b = load_json(c.at("config_v5"));
    REQUIRE(a.layers.size() == b.layers.size());
    for (std::size_t i = 0; i < a.layers.size(); ++i) {
      INFO("layer " << i);
      REQUIRE(a.layers[i].rope.has_value() == b.layers[i].rope.has_value());
      if (a.layers[i].rope) CHECK(rope_schedule(*a.layers[i].rope).base() == rope_schedule(*b.layers[i].rope).base());
    }
  }
}

TEST_CASE("layered.json temperature cases through the loader when they carry a config", "[layered][golden]") {
  const auto file = posenc_test::load_golden("layered.json");
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "temperature" || !c.contains("config")) continue;
    INFO(c.at("id").get<std::string>());
    const auto cfg = load_case(c);
    const auto& l = cfg.layers.at(c.at("layer_idx").get<std::size_t>());
    REQUIRE(l.temperature);
    const attention_temperature t(*l.temperature);
    const auto pos = c.at("positions").get<std::vector<std::int64_t>>();
    const auto want = c.at("expected").at("scale_fp64full").get<std::vector<double>>();
    for (std::size_t i = 0; i < pos.size(); ++i) CHECK(std::fabs(t.factor(pos[i]) - want[i]) <= 1e-15);
  }
}

TEST_CASE("DeBERTa: pos_att_type forms, ignored entries, and layers whose encoder needs the model's tables",
          "[layered][deberta]") {
  const char* v3 = R"({"model_type": "deberta-v2", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                       "relative_attention": true, "position_buckets": 16, "max_relative_positions": 64,
                       "pos_att_type": " P2C | c2p ", "share_att_key": true})";
  const auto a = load_hf_layered(parse_config_json(v3, "v3"));
  REQUIRE(a.deberta);
  CHECK((a.deberta->relative.c2p && a.deberta->relative.p2c));
  CHECK(a.layers[0].softmax_scale == 1.0 / std::sqrt(16.0 * 3.0));
  CHECK(a.layers[0].base_scale == 0.25);  // the encoder's softmax_scale_multiplier carries (1 + 2)^-0.5
  CHECK(!a.layers[0].causal);
  // make_layer_encoder cannot build DeBERTa's encoder from the configuration alone
  error_of([&] { static_cast<void>(make_layer_encoder(a, 0)); }, "layer");
  // v2 reads c2p / p2c only: another entry is reported and changes nothing
  const char* p2p = R"({"model_type": "deberta-v2", "hidden_size": 64, "num_attention_heads": 4,
                        "num_hidden_layers": 1, "relative_attention": true, "pos_att_type": ["c2p", "p2p"]})";
  const auto b = load_hf_layered(parse_config_json(p2p, "p2p"));
  REQUIRE(b.deberta);
  CHECK((b.deberta->relative.c2p && !b.deberta->relative.p2c));
  CHECK(b.layers[0].softmax_scale == 1.0 / std::sqrt(16.0 * 2.0));
  CHECK(std::any_of(b.warnings.begin(), b.warnings.end(),
                    [](const std::string& w) { return w.find("\"p2p\"") != std::string::npos; }));
  // without relative_attention HF still divides by sqrt(d (1 + n)): no encoder, the scale in the options
  const char* plain = R"({"model_type": "deberta-v2", "hidden_size": 64, "num_attention_heads": 4,
                          "num_hidden_layers": 1, "pos_att_type": "c2p|p2c"})";
  const auto c = load_hf_layered(parse_config_json(plain, "plain"));
  CHECK(!c.deberta);
  CHECK(c.positional == positional_family::learned);
  CHECK(layer_options(c.layers[0]).scale == 1.0 / std::sqrt(16.0 * 3.0));
  // wrong types name the key
  error_of(
      [] {
        static_cast<void>(load_hf_layered(
            parse_config_json(R"({"model_type": "deberta", "relative_attention": true, "pos_att_type": 3})", "bad")));
      },
      "pos_att_type");
}
