// Architecture conformance: for every family in tests/golden/configs/conformance/, the config.json
// (legacy keys), its transformers-v5 form (rope_parameters / layer_types) and the GGUF metadata
// llama.cpp's converter writes, each loaded through posenc, give the per-layer semantics the file
// expects (written from the reference code the file cites): layer type, RoPE base / scaling /
// layout / rotary dim / magnitude, window, chunk, sinks, softmax scale, soft-cap, ALiBi,
// temperature. The GGUF pair layout is the one llama.cpp rotates (convert_hf_to_gguf.py permutes
// q/k for some families), given by the file's gguf_layout when it differs from HF's.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/config/architectures.hpp>
#include <posenc/config/gguf.hpp>
#include <posenc/config/json.hpp>
#include <posenc/config/layer_encoder.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/rope/schedule.hpp>
#include <posenc/rope/vision_rope.hpp>

#include "gguf_writer.hpp"
#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using nlohmann::json;

namespace {

std::string dir() {
  return std::string(POSENC_GOLDEN_DIR) + "/configs/conformance";
}

std::vector<std::string> files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir()))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// The per-layer semantics of a loaded layer, in the expected files' terms.
json actual(const layer_spec& l) {
  json j;
  j["layer_type"] = layer_type_name(l.attention);
  j["rope"] = l.rope.has_value();
  j["theta"] = l.rope ? json(l.rope->theta) : json();
  j["rope_type"] = l.rope ? json(scaling_type_name(l.rope->scaling)) : json();
  const auto f = l.rope ? posenc::scaling_factor(l.rope->scaling) : std::nullopt;
  j["factor"] = f ? json(*f) : json();
  j["layout"] = l.rope ? json(l.rope->layout == kernels::pairing::interleaved ? "interleaved" : "half_split") : json();
  if (l.rope) {
    const rope_schedule s(*l.rope);
    j["rotary_dim"] = 2 * s.pairs();
    j["attention_scaling"] = s.base().attention_scaling;
    j["inv_freq"] = s.base().inv_freq;
  } else {
    j["rotary_dim"] = 0;
    j["attention_scaling"] = 1.0;
  }
  j["window"] = l.window ? json(*l.window) : json();
  j["chunk_size"] = l.chunk_size ? json(*l.chunk_size) : json();
  j["sinks"] = l.sinks;
  j["softmax_scale"] = l.softmax_scale;
  j["logit_softcap"] = l.logit_softcap ? json(*l.logit_softcap) : json();
  j["alibi"] = l.alibi;
  j["temperature"] = l.temperature.has_value();
  j["causal"] = l.causal;
  return j;
}

void same(const json& got, const json& want, const std::string& key) {
  if (key == "inv_freq") {
    // transformers computes inv_freq in float32: within 1e-6 of posenc's float64 frequencies (a few float32 ulps)
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      INFO("inv_freq[" << k << "]: got " << got[k].get<double>() << ", want " << want[k].get<double>());
      CHECK(std::fabs(got[k].get<double>() - want[k].get<double>()) <= 1e-6 * std::fabs(want[k].get<double>()));
    }
    return;
  }
  INFO(key << ": got " << got.dump() << ", want " << want.dump());
  if (want.is_number_float() || (want.is_number() && got.is_number_float())) {
    REQUIRE(got.is_number());
    const double g = got.get<double>(), w = want.get<double>();
    // the expected values are float64 results of the same formulas (1/sqrt, 0.1 ln s + 1)
    CHECK(std::fabs(g - w) <= 4e-16 * std::fabs(w));
  } else {
    CHECK(got == want);
  }
}

void check_config(const layered_config& cfg, const json& e, const std::string& gguf_layout,
                  const json& differs = json::object()) {
  CHECK(positional_name(cfg.positional) == e.at("positional").get<std::string>());
  CHECK(cfg.head_dim == e.at("head_dim").get<int>());
  if (e.contains("alibi")) {
    REQUIRE(cfg.base.alibi);
    same(cfg.base.alibi->max_bias, e["alibi"].at("max_bias"), "alibi.max_bias");
    same(cfg.base.alibi->slope_scale, e["alibi"].at("slope_scale"), "alibi.slope_scale");
  }
  if (e.contains("learned_offset")) {
    REQUIRE(cfg.base.learned_offset);
    CHECK(*cfg.base.learned_offset == e.at("learned_offset").get<std::int64_t>());
  }
  if (e.contains("deberta")) {  // DeBERTa's relative attention, as its attention module reads the config
    REQUIRE(cfg.deberta);
    const auto& d = *cfg.deberta;
    const json got{{"c2p", d.relative.c2p},
                   {"p2c", d.relative.p2c},
                   {"position_buckets", d.relative.position_buckets},
                   {"max_relative_positions", d.relative.max_relative_positions},
                   {"table_rows", d.relative.table_rows()},
                   {"share_att_key", d.share_att_key},
                   {"norm_rel_ebd", d.norm_rel_ebd},
                   {"position_biased_input", d.position_biased_input}};
    INFO("deberta: got " << got.dump() << ", want " << e["deberta"].dump());
    CHECK(got == e["deberta"]);
    CHECK(d.relative.head_dim == cfg.head_dim);
  } else {
    CHECK(!cfg.deberta);
  }
  if (e.contains("vision") && cfg.base.format == "hf") {  // the vision tower, as its modeling code reads the config
    REQUIRE(cfg.vision);
    const auto& v = *cfg.vision;
    const json& w = e["vision"];
    CHECK(v.tower == w.at("tower").get<std::string>());
    CHECK(v.rope.head_dim == w.at("head_dim").get<int>());
    same(v.rope.theta, w.at("theta"), "vision.theta");
    same(v.softmax_scale, w.at("softmax_scale"), "vision.softmax_scale");
    CHECK(v.patch_size == w.at("patch_size").get<int>());
    CHECK(v.depth == w.at("depth").get<int>());
    CHECK(v.num_heads == w.at("num_heads").get<int>());
    CHECK(v.patches_per_side == w.value("patches_per_side", 0));
    CHECK(v.spatial_merge_size == w.value("spatial_merge_size", 1));
    CHECK(v.temporal_patch_size == w.value("temporal_patch_size", 1));
    CHECK(v.window_size == w.value("window_size", 0));
    CHECK(v.fullatt_block_indexes == w.value("fullatt_block_indexes", std::vector<int>{}));
    CHECK(v.learned_positions == w.value("learned_positions", 0));
    // the encoder built from the loaded configuration turns the patch at row 1, column 1 by HF's angles
    // (float32 there: within 1e-6)
    const vision_rope enc(v.rope);
    const auto want = w.at("angles_1_1").get<std::vector<double>>();
    REQUIRE(enc.inv_freq().size() == want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      const double got = enc.inv_freq()[k] * static_cast<double>(1 + enc.position_offset());
      INFO("vision angle " << k << ": got " << got << ", want " << want[k]);
      CHECK(std::fabs(got - want[k]) <= 1e-6 * std::fabs(want[k]));
    }
  } else {
    CHECK(!cfg.vision);  // GGUF: the vision tower is the projector file's (refused)
  }
  same(cfg.final_logit_softcap ? json(*cfg.final_logit_softcap) : json(), e.at("final_logit_softcap"),
       "final_logit_softcap");
  const std::string letters = e.at("layers");
  const auto& kinds = e.at("kinds");
  REQUIRE(cfg.layers.size() == letters.size());
  for (std::size_t i = 0; i < letters.size(); ++i) {
    INFO("layer " << i);
    json want = kinds.at(static_cast<std::size_t>(letters[i] - 'A'));
    if (!gguf_layout.empty() && want["rope"].get<bool>()) want["layout"] = gguf_layout;
    for (auto it = differs.begin(); it != differs.end(); ++it)
      if (it.key() != "why" && it.key() != "inv_freq") want[it.key()] = it.value();
    // llama.cpp's own frequencies where it runs another scaling than transformers
    if (differs.contains("rope_type") || differs.contains("theta") || differs.contains("factor") ||
        differs.contains("inv_freq"))
      want.erase("inv_freq");
    json got = actual(cfg.layers[i]);
    if (!want.contains("inv_freq")) got.erase("inv_freq");
    for (auto it = want.begin(); it != want.end(); ++it) same(got.at(it.key()), it.value(), it.key());
    CHECK(got.size() == want.size());
    // layer_options carries the layer's scale, window, chunk and soft-cap (not its encoder multiplier)
    if (is_softmax(cfg.layers[i].attention)) {
      const auto o = layer_options(cfg.layers[i]);
      CHECK(o.causal == cfg.layers[i].causal);
      CHECK(o.scale == cfg.layers[i].base_scale);
      CHECK(o.sliding_window == cfg.layers[i].window);
      CHECK(o.attention_chunk == cfg.layers[i].chunk_size);
      CHECK(o.logit_softcap == cfg.layers[i].logit_softcap);
    } else {
      posenc_test::error_of([&] { static_cast<void>(layer_options(cfg.layers[i])); }, "layer.attention");
    }
  }
}

/// A GGUF file with the metadata of `md` (the types llama.cpp's writer uses: u32 counts, f32 reals,
/// strings, i32 / bool arrays), read back through read_gguf.
gguf_contents gguf_of(const json& md) {
  posenc_test::gguf_writer w;
  for (auto it = md.begin(); it != md.end(); ++it) {
    const auto& v = it.value();
    if (v.is_string()) {
      w.str(it.key(), v.get<std::string>());
    } else if (v.is_boolean()) {
      w.boolean(it.key(), v.get<bool>());
    } else if (v.is_number_integer()) {
      w.u32(it.key(), v.get<std::uint32_t>());
    } else if (v.is_number_float()) {
      w.f32(it.key(), v.get<float>());
    } else if (v.is_array() && !v.empty() && v[0].is_boolean()) {
      std::string bytes = posenc_test::gguf_writer::le(std::uint32_t{7}) +
                          posenc_test::gguf_writer::le(static_cast<std::uint64_t>(v.size()));
      for (const auto& b : v) bytes.push_back(b.get<bool>() ? '\1' : '\0');
      w.raw(it.key(), 9, bytes);
    } else if (v.is_array()) {
      w.i32_array(it.key(), v.get<std::vector<std::int32_t>>());
    } else {
      FAIL("unsupported metadata value for " << it.key());
    }
  }
  std::istringstream in(w.bytes());
  return read_gguf(in, "conformance.gguf");
}

}  // namespace

TEST_CASE("conformance: every family, every format, the same per-layer semantics", "[conformance][golden]") {
  int families = 0, hf = 0, v5 = 0, gguf = 0;
  for (const auto& path : files()) {
    const json f = json::parse(read_text_file(path));
    INFO(path);
    ++families;
    REQUIRE(f.contains("reference"));
    if (f.contains("hf_error")) {
      posenc_test::error_of([&] { static_cast<void>(load_hf_layered(to_config_value(f.at("hf")))); },
                            f.at("hf_error").get<std::string>());
      continue;
    }
    const json& e = f.at("expected");
    if (f.contains("hf")) {
      INFO("HF legacy");
      check_config(load_hf_layered(to_config_value(f.at("hf"))), e, "");
      ++hf;
    }
    if (f.contains("hf_v5")) {
      INFO("HF v5");
      check_config(load_hf_layered(to_config_value(f.at("hf_v5"))), e, "");
      ++v5;
    }
    if (f.contains("gguf")) {
      INFO("GGUF");
      const auto c = gguf_of(f.at("gguf"));
      // where transformers and llama.cpp disagree, the file names the GGUF values and says why
      const json differs = f.value("gguf_differs", json::object());
      if (!differs.empty()) REQUIRE(differs.contains("why"));
      check_config(load_gguf_layered(c.metadata, &c.tensors), e, f.value("gguf_layout", std::string()), differs);
      ++gguf;
    }
  }
  CHECK(families >= 40);
  CHECK(hf >= 40);
  CHECK(v5 >= 20);
  CHECK(gguf >= 25);
}

TEST_CASE("conformance: every family of the data has a row in the architecture table", "[conformance]") {
  for (const auto& path : files()) {
    const json f = json::parse(read_text_file(path));
    INFO(path);
    bool found = false;
    for (const auto& a : architectures()) found = found || a.family == f.at("family").get<std::string>();
    CHECK(found);
  }
}

TEST_CASE("architecture table: names are unique, sources cited, refusals worded", "[conformance]") {
  const auto& t = architectures();
  for (std::size_t i = 0; i < t.size(); ++i) {
    INFO(t[i].family);
    CHECK(!t[i].family.empty());
    CHECK(!t[i].sources.empty());
    if (!t[i].refused.empty()) CHECK(t[i].refused.find(": ") != std::string_view::npos);
    for (std::size_t j = i + 1; j < t.size(); ++j) CHECK(t[i].family != t[j].family);
    if (!t[i].hf_model_type.empty() && t[i].hf_model_type != "falcon")
      CHECK(find_hf_architecture(t[i].hf_model_type) == &t[i]);
  }
  CHECK(t.size() >= 40);
  CHECK(find_hf_architecture("falcon", true)->positional == positional_family::alibi);
  CHECK(find_hf_architecture("falcon", false)->positional == positional_family::rope);
  CHECK(find_hf_architecture("gemma3")->family == "Gemma 3");
  CHECK(find_gguf_architecture("command-r")->family == "Cohere / Command-R");
  CHECK(find_hf_architecture("no_such_model") == nullptr);
}

TEST_CASE("architecture table: every architecture llama.cpp names is a row, exact or refused", "[conformance]") {
  // LLM_ARCH_NAMES, src/llama-arch.cpp at llama.cpp@b97ebdc9 (126 names)
  // clang-format off
  static constexpr std::string_view llama_cpp[] = {
      "clip", "llama", "llama4", "deci", "falcon", "grok", "gpt2", "gptj", "gptneox", "mpt", "baichuan",
      "starcoder", "refact", "bert", "modern-bert", "nomic-bert", "nomic-bert-moe", "neo-bert", "jina-bert-v2",
      "jina-bert-v3", "eurobert", "bloom", "stablelm", "qwen", "qwen2", "qwen2moe", "qwen2vl", "qwen3", "qwen3moe",
      "qwen3next", "qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe", "phi2", "phi3", "phimoe", "plamo", "plamo2",
      "plamo3", "codeshell", "orion", "internlm2", "minicpm", "minicpm3", "gemma", "gemma2", "gemma3", "gemma3n",
      "gemma4", "gemma-embedding", "starcoder2", "mamba", "mamba2", "jamba", "falcon-h1", "xverse", "command-r",
      "cohere2", "dbrx", "olmo", "olmo2", "olmoe", "openelm", "arctic", "deepseek", "deepseek2", "deepseek2-ocr",
      "chatglm", "glm4", "glm4moe", "glm-dsa", "bitnet", "t5", "t5encoder", "jais", "jais2", "nemotron",
      "nemotron_h", "nemotron_h_moe", "exaone", "exaone4", "exaone-moe", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7",
      "granite", "granitemoe", "granitehybrid", "chameleon", "wavtokenizer-dec", "plm", "bailingmoe",
      "bailingmoe2", "dots1", "arcee", "afmoe", "ernie4_5", "ernie4_5-moe", "hunyuan-moe", "hunyuan-dense",
      "hunyuan_vl", "smollm3", "gpt-oss", "lfm2", "lfm2moe", "dream", "smallthinker", "llada", "llada-moe",
      "seed_oss", "grovemoe", "apertus", "minimax-m2", "cogvlm", "rnd1", "pangu-embedded", "mistral3", "mistral4",
      "paddleocr", "mimo2", "step35", "llama-embed", "maincoder", "kimi-linear"};
  // clang-format on
  static_assert(std::size(llama_cpp) == 126);
  for (const std::string_view name : llama_cpp) {
    INFO(name);
    const architecture* a = find_gguf_architecture(name);
    REQUIRE(a != nullptr);
    CHECK(!a->sources.empty());
  }
  CHECK(architectures().size() >= 110);
}

TEST_CASE("loaders: what the confirmed mismatches load as now", "[conformance]") {
  auto cfg = [](const json& j) { return load_hf_layered(to_config_value(j)); };
  // The load fails with a config_error naming `key`.
  auto refused = [&](const json& j, const std::string& key) {
    posenc_test::error_of([&] { static_cast<void>(cfg(j)); }, key);
  };
  SECTION("Cohere pairs (2k, 2k + 1); SmolLM3 with no_rope_layers keeps Llama's halves") {
    CHECK(cfg({{"model_type", "cohere"}, {"hidden_size", 256}, {"num_attention_heads", 2}, {"num_hidden_layers", 1}})
              .layers[0]
              .rope->layout == kernels::pairing::interleaved);
    const auto s = cfg({{"model_type", "smollm3"},
                        {"hidden_size", 256},
                        {"num_attention_heads", 2},
                        {"num_hidden_layers", 4},
                        {"no_rope_layers", {1, 1, 1, 0}}});
    CHECK(s.layers[0].rope->layout == kernels::pairing::half_split);
    CHECK(s.layers[0].rope->theta == 2000000.0);
    CHECK(!s.layers[3].rope);
  }
  SECTION("EXAONE 4 without a sliding window: every layer full and rotating") {
    const auto x = cfg({{"model_type", "exaone4"},
                        {"hidden_size", 256},
                        {"num_attention_heads", 2},
                        {"num_hidden_layers", 4},
                        {"sliding_window", nullptr}});
    for (const auto& l : x.layers) {
      CHECK(l.attention == layer_attention::full);
      CHECK(l.rope);
    }
  }
  SECTION("EXAONE 4 letter pattern: repeated over the layers, as llama.cpp's converter reads it") {
    const auto x = cfg({{"model_type", "exaone4"},
                        {"hidden_size", 256},
                        {"num_attention_heads", 2},
                        {"num_hidden_layers", 6},
                        {"sliding_window_pattern", "LLLG"}});
    const std::vector<bool> sliding = {true, true, true, false, true, true};
    for (std::size_t i = 0; i < 6; ++i) {
      INFO("layer " << i);
      CHECK((x.layers[i].attention == layer_attention::sliding) == sliding[i]);
      CHECK(x.layers[i].rope.has_value() == sliding[i]);  // global layers are NoPE with a window
    }
  }
  SECTION("rope_interleave is read only by DeepSeek-V3 (class default true)") {
    json v3 = {{"model_type", "deepseek_v3"}, {"hidden_size", 1024},     {"num_attention_heads", 8},
               {"num_hidden_layers", 1},      {"qk_nope_head_dim", 128}, {"qk_rope_head_dim", 64},
               {"rope_interleave", false}};
    CHECK(cfg(v3).layers[0].rope->layout == kernels::pairing::half_split);
    v3.erase("rope_interleave");
    CHECK(cfg(v3).layers[0].rope->layout == kernels::pairing::interleaved);
    const auto c = cfg({{"model_type", "cohere"},
                        {"hidden_size", 256},
                        {"num_attention_heads", 2},
                        {"num_hidden_layers", 1},
                        {"rope_interleave", false}});
    CHECK(c.layers[0].rope->layout == kernels::pairing::interleaved);
    CHECK(std::any_of(c.warnings.begin(), c.warnings.end(),
                      [](const std::string& w) { return w.find("rope_interleave") != std::string::npos; }));
  }
  SECTION("YaRN mscale / mscale_all_dim: a rotary magnitude everywhere, a softmax factor only for DeepSeek-V3") {
    const json yarn = {{"rope_type", "yarn"},
                       {"factor", 40.0},
                       {"original_max_position_embeddings", 4096},
                       {"mscale", 0.707},
                       {"mscale_all_dim", 1.0}};
    const auto l = cfg({{"model_type", "llama"},
                        {"hidden_size", 1024},
                        {"num_attention_heads", 8},
                        {"num_hidden_layers", 1},
                        {"rope_scaling", yarn}});
    CHECK(l.layers[0].softmax_scale == 1.0 / std::sqrt(128.0));
    const double ratio = (0.1 * 0.707 * std::log(40.0) + 1.0) / (0.1 * std::log(40.0) + 1.0);
    CHECK(std::fabs(rope_schedule(*l.layers[0].rope).base().attention_scaling - ratio) < 1e-15);
    const auto v3 = cfg({{"model_type", "deepseek_v3"},
                         {"hidden_size", 1024},
                         {"num_attention_heads", 8},
                         {"num_hidden_layers", 1},
                         {"qk_nope_head_dim", 128},
                         {"qk_rope_head_dim", 64},
                         {"rope_scaling", yarn}});
    const double m = 0.1 * std::log(40.0) + 1.0;
    CHECK(std::fabs(v3.layers[0].softmax_scale - m * m / std::sqrt(192.0)) < 1e-16);
  }
  SECTION("Phi-MoE: the LongRoPE magnitude is short_mscale / long_mscale") {
    json phimoe = {{"model_type", "phimoe"},
                   {"hidden_size", 4096},
                   {"num_attention_heads", 32},
                   {"num_hidden_layers", 1},
                   {"max_position_embeddings", 131072},
                   {"original_max_position_embeddings", 4096},
                   {"rope_scaling",
                    {{"type", "longrope"},
                     {"short_factor", std::vector<double>(64, 1.0)},
                     {"long_factor", std::vector<double>(64, 2.0)},
                     {"short_mscale", 1.243},
                     {"long_mscale", 1.243}}}};
    const auto p = cfg(phimoe);
    CHECK(rope_schedule(*p.layers[0].rope).base().attention_scaling == 1.243);
    phimoe["rope_scaling"]["long_mscale"] = 1.5;
    posenc_test::error_of([&] { static_cast<void>(cfg(phimoe)); }, "rope_scaling.short_mscale");
  }
  SECTION("UMT5 has its own row, LongT5 is refused, Ministral 3 refuses a rope_theta its class ignores") {
    CHECK(find_hf_architecture("umt5")->per_layer_bias);
    CHECK(!find_hf_architecture("t5")->per_layer_bias);
    posenc_test::error_of(
        [&] {
          static_cast<void>(
              cfg({{"model_type", "longt5"}, {"d_model", 512}, {"num_heads", 8}, {"d_kv", 64}, {"num_layers", 2}}));
        },
        "encoder_attention_type");
    // without rope_parameters the class sets its YaRN default, whose rope_theta (1e6) wins over the key
    const auto m3 = cfg({{"model_type", "ministral3"},
                         {"hidden_size", 4096},
                         {"num_attention_heads", 32},
                         {"num_hidden_layers", 1},
                         {"rope_theta", 10000.0}});
    CHECK(m3.layers[0].rope->theta == 1000000.0);
    CHECK(std::any_of(m3.warnings.begin(), m3.warnings.end(),
                      [](const std::string& w) { return w.find("rope_theta") != std::string::npos; }));
    CHECK(find_gguf_architecture("ernie4_5-moe")->family == "ERNIE 4.5");
    CHECK(find_gguf_architecture("qwen3vlmoe")->family == "Qwen3-VL");
    CHECK(find_gguf_architecture("qwen35moe")->family == "Qwen3.5");
    CHECK(find_hf_architecture("mistral3")->family == "Mistral");
  }
  SECTION("transformers v5 multimodal configs: the text model under text_config keeps its family") {
    const auto q = cfg({{"model_type", "qwen2_5_vl"},
                        {"text_config",
                         {{"model_type", "qwen2_5_vl_text"},
                          {"hidden_size", 3584},
                          {"num_attention_heads", 28},
                          {"num_hidden_layers", 2},
                          {"rope_parameters",
                           {{"rope_type", "default"}, {"rope_theta", 1000000.0}, {"mrope_section", {16, 24, 24}}}}}}});
    CHECK(q.family == "Qwen2.5-VL");
    REQUIRE(q.mrope);
    CHECK(q.mrope->section == std::array<int, 3>{16, 24, 24});
  }
  SECTION("bidirectional attention where the family reads it, refused elsewhere; T5's encoder is not causal") {
    const auto g = cfg({{"model_type", "gemma3_text"},
                        {"head_dim", 256},
                        {"num_attention_heads", 2},
                        {"num_hidden_layers", 2},
                        {"sliding_window", 512},
                        {"use_bidirectional_attention", true}});
    CHECK(!layer_options(g.layers[0]).causal);
    CHECK(layer_options(g.layers[0]).sliding_window == 257);  // |q - k| <= 512 / 2: Gemma3Config's 512 // 2 + 1
    CHECK(!layer_options(g.layers[1]).causal);
    refused({{"model_type", "llama"},
             {"hidden_size", 256},
             {"num_attention_heads", 2},
             {"num_hidden_layers", 2},
             {"use_bidirectional_attention", true}},
            "use_bidirectional_attention");
    const auto t = cfg({{"model_type", "t5"}, {"d_model", 512}, {"num_heads", 8}, {"d_kv", 64}, {"num_layers", 2}});
    CHECK(!layer_options(t.layers[0]).causal);
    CHECK(layer_options(t.layers[0]).scale == 1.0);
  }
  SECTION("malformed new keys name themselves") {
    refused({{"model_type", "exaone4"},
             {"hidden_size", 256},
             {"num_attention_heads", 2},
             {"num_hidden_layers", 4},
             {"sliding_window_pattern", "LLXG"}},
            "sliding_window_pattern");
    refused({{"model_type", "gemma2"},
             {"head_dim", 256},
             {"num_attention_heads", 2},
             {"num_hidden_layers", 2},
             {"attn_logit_softcapping", -1.0}},
            "attn_logit_softcapping");
    refused({{"model_type", "gemma2"},
             {"head_dim", 256},
             {"num_attention_heads", 2},
             {"num_hidden_layers", 2},
             {"query_pre_attn_scalar", 0}},
            "query_pre_attn_scalar");
    refused({{"model_type", "llama"},
             {"hidden_size", 256},
             {"num_attention_heads", 2},
             {"num_hidden_layers", 2},
             {"attn_logit_softcapping", 30.0}},
            "attn_logit_softcapping");
    refused({{"model_type", "granite"},
             {"hidden_size", 256},
             {"num_attention_heads", 2},
             {"num_hidden_layers", 2},
             {"attention_multiplier", -0.5}},
            "attention_multiplier");
    refused({{"model_type", "minimax"},
             {"head_dim", 128},
             {"num_attention_heads", 2},
             {"num_hidden_layers", 2},
             {"attn_type_list", {0, 1}}},
            "attn_type_list");
    refused({{"model_type", "qwen3_next"},
             {"head_dim", 256},
             {"num_attention_heads", 2},
             {"num_hidden_layers", 2},
             {"full_attention_interval", 3}},
            "full_attention_interval");
  }
  SECTION("a key the family's model does not read is a warning, not a change") {
    const auto l = cfg({{"model_type", "llama"},
                        {"hidden_size", 256},
                        {"num_attention_heads", 2},
                        {"num_hidden_layers", 2},
                        {"sliding_window", 4096},
                        {"query_pre_attn_scalar", 64}});
    CHECK(l.layers[0].attention == layer_attention::full);
    CHECK(l.layers[0].softmax_scale == 1.0 / std::sqrt(128.0));
    CHECK(l.warnings.size() >= 2);
    // a multiplier of V (MiMo-V2-Flash) is the caller's: reported, the logits unchanged
    const auto m = cfg({{"model_type", "mimo_v2_flash"},
                        {"hidden_size", 4096},
                        {"num_attention_heads", 64},
                        {"num_hidden_layers", 2},
                        {"attention_value_scale", 0.707}});
    CHECK(m.layers[0].softmax_scale == 1.0 / std::sqrt(192.0));
    CHECK(std::any_of(m.warnings.begin(), m.warnings.end(),
                      [](const std::string& w) { return w.find("attention_value_scale") != std::string::npos; }));
  }
  SECTION("dots.llm1 reads no use_sliding_window: the window alone makes layers >= max_window_layers slide") {
    // transformers@decba1d2 models/dots1/configuration_dots1.py __post_init__
    const auto d = cfg({{"model_type", "dots1"},
                        {"hidden_size", 4608},
                        {"num_attention_heads", 32},
                        {"head_dim", 128},
                        {"num_hidden_layers", 4},
                        {"sliding_window", 4096},
                        {"max_window_layers", 2}});
    CHECK(d.layers[1].attention == layer_attention::full);
    CHECK(d.layers[2].attention == layer_attention::sliding);
    CHECK(d.layers[3].window == 4096);
    const auto q = cfg({{"model_type", "qwen2"},  // Qwen2 still needs use_sliding_window
                        {"hidden_size", 4096},
                        {"num_attention_heads", 32},
                        {"num_hidden_layers", 4},
                        {"sliding_window", 4096},
                        {"max_window_layers", 2}});
    CHECK(q.layers[3].attention == layer_attention::full);
  }
  SECTION("gpt-oss without rope_scaling / rope_parameters: the class default YaRN 32 over 4096, the config's theta") {
    // transformers@decba1d2 models/gpt_oss/configuration_gpt_oss.py __post_init__
    const auto g = cfg({{"model_type", "gpt_oss"},
                        {"hidden_size", 2880},
                        {"num_attention_heads", 64},
                        {"num_hidden_layers", 2},
                        {"rope_theta", 250000}});
    REQUIRE(g.layers[1].rope);
    CHECK(g.layers[1].rope->theta == 250000.0);
    const auto& y = std::get<yarn_scaling>(g.layers[1].rope->scaling);
    CHECK(y.factor == 32.0);
    CHECK(y.original_max_position == 4096);
    CHECK(y.beta_fast == 32.0);
    CHECK(y.beta_slow == 1.0);
    CHECK_FALSE(y.truncate);
    CHECK(g.layers[0].rope->scaling == g.layers[1].rope->scaling);
  }
  SECTION("Bamba's config class replaces a top-level partial_rotary_factor by 0.5; rope_parameters' own wins") {
    // transformers@decba1d2 models/bamba/configuration_bamba.py __post_init__
    json b = {{"model_type", "bamba"},  {"hidden_size", 4096},       {"num_attention_heads", 32},
              {"num_hidden_layers", 2}, {"attn_layer_indices", {1}}, {"partial_rotary_factor", 1.0}};
    const auto top = cfg(b);
    REQUIRE(top.layers[1].rope);
    CHECK(rope_schedule(*top.layers[1].rope).pairs() == 32);
    b.erase("partial_rotary_factor");
    b["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 1.0}};
    CHECK(rope_schedule(*cfg(b).layers[1].rope).pairs() == 64);
  }
  SECTION("Phi-3 reads a rope_type \"yarn\" as LongRoPE") {
    // transformers@decba1d2 models/phi3/configuration_phi3.py convert_rope_params_to_dict
    json p = {{"model_type", "phi3"},
              {"hidden_size", 3072},
              {"num_attention_heads", 32},
              {"num_hidden_layers", 1},
              {"max_position_embeddings", 131072},
              {"original_max_position_embeddings", 4096},
              {"rope_scaling",
               {{"type", "yarn"},
                {"short_factor", std::vector<double>(48, 1.0)},
                {"long_factor", std::vector<double>(48, 2.0)}}}};
    const auto yarn_named = cfg(p);
    p["rope_scaling"]["type"] = "longrope";
    const auto longrope_named = cfg(p);
    REQUIRE(yarn_named.layers[0].rope);
    const auto& l = std::get<longrope_scaling>(yarn_named.layers[0].rope->scaling);
    CHECK(l.long_factor == std::vector<double>(48, 2.0));
    CHECK(*yarn_named.layers[0].rope == *longrope_named.layers[0].rope);
  }
}

TEST_CASE("GGUF: llama.cpp's built-in rules and the keys it does not read", "[conformance][gguf]") {
  auto md = [](const std::string& arch, int n, const json& extra) {
    json j = {{"general.architecture", arch},
              {arch + ".block_count", n},
              {arch + ".embedding_length", 4096},
              {arch + ".attention.head_count", 32},
              {arch + ".rope.freq_base", 500000.0}};
    for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
    return to_config_value(j);
  };
  SECTION("llama4: NoPE every 4th layer with chunks of 8192; a sliding_window of 0 turns both off") {
    const auto a = load_gguf_layered(md("llama4", 8, json::object()));
    CHECK(a.layers[0].attention == layer_attention::chunked);
    CHECK(a.layers[0].chunk_size == 8192);
    CHECK(!a.layers[3].rope);
    CHECK(a.layers[3].temperature);
    const auto b = load_gguf_layered(md("llama4", 8, {{"llama4.attention.sliding_window", 0}}));
    for (const auto& l : b.layers) {
      CHECK(l.attention == layer_attention::full);
      CHECK(l.rope);
      CHECK(!l.temperature);
    }
  }
  SECTION("qwen2: llama.cpp attends fully whatever attention.sliding_window says (with a warning)") {
    const auto q = load_gguf_layered(md("qwen2", 4, {{"qwen2.attention.sliding_window", 4096}}));
    for (const auto& l : q.layers) CHECK(l.attention == layer_attention::full);
    CHECK(std::any_of(q.warnings.begin(), q.warnings.end(),
                      [](const std::string& w) { return w.find("sliding_window") != std::string::npos; }));
  }
  SECTION("starcoder2: llama.cpp reads no sliding window for it") {
    const auto s2 = load_gguf_layered(md("starcoder2", 2, {{"starcoder2.attention.sliding_window", 4096}}));
    for (const auto& l : s2.layers) CHECK(l.attention == layer_attention::full);
    const auto p3 = load_gguf_layered(md("phi3", 2, {{"phi3.attention.sliding_window", 2047}}));
    for (const auto& l : p3.layers) CHECK(l.window == 2047);
  }
  SECTION("gemma2: 46 layers scale by 1/sqrt(n_embd / n_head), other sizes by head_dim") {
    const auto big = load_gguf_layered(md("gemma2", 46,
                                          {{"gemma2.embedding_length", 4608},
                                           {"gemma2.attention.key_length", 128},
                                           {"gemma2.attention.sliding_window", 4096}}));
    CHECK(big.layers[0].softmax_scale == 1.0 / std::sqrt(144.0));
    const auto small = load_gguf_layered(md("gemma2", 42,
                                            {{"gemma2.embedding_length", 3584},
                                             {"gemma2.attention.head_count", 16},
                                             {"gemma2.attention.key_length", 256},
                                             {"gemma2.attention.sliding_window", 4096}}));
    CHECK(small.layers[0].softmax_scale == 1.0 / 16.0);
  }
  SECTION("qwen3next: full_attention_interval longer than the model is refused") {
    posenc_test::error_of(
        [&] {
          static_cast<void>(load_gguf_layered(md("qwen3next", 2, {{"qwen3next.full_attention_interval", 3}})));
        },
        "qwen3next.full_attention_interval");
  }
}
