// tests/config/hf_loader_test.cpp — Hugging Face config.json keys -> model_config: every key and
// alias, contradictions, unknown keys, explicit 0, and the sample model configs.
#include <string>

#include <catch2/catch.hpp>

#include <posenc/config/json.hpp>
#include <posenc/rope/schedule.hpp>

#include "support/check.hpp"

using namespace posenc;
using posenc_test::error_of;

// A named namespace around the whole file: the unity build of the tests (POSENC_UNITY_TESTS)
// compiles it with its neighbours, which reuse these names.
namespace hf_loader_test {

namespace {

/// Key-level reading: configs without a model_type are read generically (keys at face value).
model_config load(const std::string& json) {
  return load_hf_config_json(json, "test.json", {.generic = true});
}

model_config load_file(const std::string& name) {
  return load_hf_config_file(std::string(POSENC_GOLDEN_DIR) + "/configs/" + name);
}

/// Runs f, expects config_error whose parameter() is `param`, returns the message.
bool has_warning(const model_config& m, const std::string& needle) {
  for (const auto& w : m.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("hf: Llama-2 config gives default RoPE, D = hidden/heads, half-split") {
  const auto m = load_file("llama2_7b.json");
  CHECK(m.format == "hf");
  CHECK(m.model_type == "llama");
  CHECK(m.rope_type == "default");
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 128);
  CHECK(!m.rope->rotary_dim);
  CHECK(m.rope->theta == 10000.0);
  CHECK(m.rope->layout == kernels::pairing::half_split);
  CHECK(std::holds_alternative<default_scaling>(m.rope->scaling));
  CHECK(m.max_position_embeddings == 4096);
  CHECK(m.num_attention_heads == 32);
  CHECK(m.warnings.empty());
  CHECK(!m.t5);
  CHECK(!m.alibi);
}

TEST_CASE("hf: Llama-3.1 llama3 scaling with all four keys") {
  const auto m = load_file("llama3_1_8b.json");
  CHECK(m.rope_type == "llama3");
  REQUIRE(m.rope);
  CHECK(m.rope->theta == 500000.0);
  const auto& s = std::get<llama3_scaling>(m.rope->scaling);
  CHECK(s == llama3_scaling{.factor = 8, .low_freq_factor = 1, .high_freq_factor = 4, .original_max_position = 8192});
  CHECK(m.num_key_value_heads == 8);
  CHECK(m.warnings.empty());
}

TEST_CASE("hf: Qwen2 YaRN with legacy `type` key; factor kept as given") {
  const auto m = load_file("qwen2_7b_instruct_yarn.json");
  CHECK(m.rope_type == "yarn");
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 128);
  const auto& y = std::get<yarn_scaling>(m.rope->scaling);
  CHECK(y.factor == 4.0);
  CHECK(y.original_max_position == 32768);
  CHECK(y.beta_fast == 32.0);
  CHECK(y.beta_slow == 1.0);
  CHECK(!y.attention_factor);
  CHECK(y.truncate);
}

TEST_CASE("hf: GPT-NeoX rotary_pct and rotary_emb_base") {
  const auto m = load_file("gpt_neox_20b.json");
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 96);
  CHECK(m.rope->partial_rotary_factor == 0.25);
  CHECK(m.rope->theta == 10000.0);
  CHECK(m.rope->layout == kernels::pairing::half_split);
}

TEST_CASE("hf: GPT-J rotary_dim, n_embd/n_head, interleaved pairs") {
  const auto m = load_file("gptj_6b.json");
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 256);
  CHECK(m.rope->rotary_dim == 64);
  CHECK(m.rope->layout == kernels::pairing::interleaved);
  CHECK(m.max_position_embeddings == 2048);
  CHECK(m.warnings.empty());
}

TEST_CASE("hf: DeepSeek-V3 MLA slice, interleaved, YaRN with mscale") {
  const auto m = load_file("deepseek_v3.json");
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 192);
  CHECK(m.rope->rotary_dim == 64);
  CHECK(m.rope->rotary_offset == 128);
  CHECK(m.rope->layout == kernels::pairing::interleaved);
  const auto& y = std::get<yarn_scaling>(m.rope->scaling);
  CHECK(y.factor == 40.0);
  CHECK(y.original_max_position == 4096);
  CHECK(y.mscale == 1.0);
  CHECK(y.mscale_all_dim == 1.0);
  // rope_interleave = false overrides the model-type default.
  const auto m2 = load(R"({"model_type":"deepseek_v3","qk_rope_head_dim":64,"qk_nope_head_dim":128,
                           "rope_interleave":false})");
  CHECK(m2.rope->layout == kernels::pairing::half_split);
}

TEST_CASE("hf: gpt-oss YaRN with truncate false and explicit head_dim") {
  const auto m = load_file("gpt_oss_20b.json");
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 64);  // not hidden_size / heads = 45
  CHECK(m.rope->theta == 150000.0);
  const auto& y = std::get<yarn_scaling>(m.rope->scaling);
  CHECK(y.factor == 32.0);
  CHECK_FALSE(y.truncate);
}

TEST_CASE("hf: Phi-3 'su' alias is longrope; L0 from the top level; factor not invented") {
  const auto m = load_file("phi3_mini_128k_su.json");
  CHECK(m.rope_type == "longrope");
  const auto& l = std::get<longrope_scaling>(m.rope->scaling);
  CHECK(l.short_factor.size() == 48);
  CHECK(l.long_factor.size() == 48);
  CHECK(l.long_factor.front() == 1.0299999713897705);
  CHECK(l.original_max_position == 4096);
  CHECK(!l.factor);
  CHECK(l.max_position == 131072);
  CHECK(!l.attention_factor);
}

TEST_CASE("hf: T5 buckets (defaults and explicit), BLOOM and MPT ALiBi, no RoPE") {
  const auto t5 = load_file("t5_base.json");
  CHECK(!t5.rope);
  REQUIRE(t5.t5);
  CHECK(t5.t5->num_buckets == 32);
  CHECK(t5.t5->max_distance == 128);
  CHECK(t5.num_attention_heads == 12);
  const auto t5b = load(R"({"model_type":"t5","relative_attention_num_buckets":64,
                            "relative_attention_max_distance":256})");
  CHECK(t5b.t5 == model_config::t5_params{64, 256});
  const auto bloom = load_file("bloom_560m.json");
  CHECK(!bloom.rope);
  REQUIRE(bloom.alibi);
  CHECK(bloom.alibi->max_bias == 8.0);
  CHECK(bloom.num_attention_heads == 16);
  // HF's MPT never reads attn_config.alibi / alibi_bias_max: ALiBi with a maximum bias of 8, and a warning
  const auto mpt = load(R"({"model_type":"mpt","n_heads":32,"attn_config":{"alibi":true,"alibi_bias_max":16}})");
  REQUIRE(mpt.alibi);
  CHECK(mpt.alibi->max_bias == 8.0);
  CHECK(has_warning(mpt, "attn_config.alibi_bias_max"));
  // generically, the keys are read at face value
  const auto generic_alibi =
      load(R"({"model_type":"my_mpt","n_heads":32,"attn_config":{"alibi":true,"alibi_bias_max":16}})");
  REQUIRE(generic_alibi.alibi);
  CHECK(generic_alibi.alibi->max_bias == 16.0);
}

TEST_CASE("hf: linear, dynamic, NTK alpha, proportional") {
  auto m = load(R"({"hidden_size":64,"num_attention_heads":2,"max_position_embeddings":4096,
                    "rope_scaling":{"rope_type":"linear","factor":4}})");
  CHECK(std::get<linear_scaling>(m.rope->scaling).factor == 4.0);
  m = load(R"({"hidden_size":64,"num_attention_heads":2,"max_position_embeddings":4096,
               "rope_scaling":{"type":"dynamic","factor":2}})");
  const auto& d = std::get<dynamic_ntk_scaling>(m.rope->scaling);
  CHECK(d.factor == 2.0);
  CHECK(d.original_max_position == 4096);  // HF: max_position_embeddings
  // HF's dynamic NTK never reads original_max_position_embeddings: L0 stays max_position_embeddings
  m = load(R"({"hidden_size":64,"num_attention_heads":2,"max_position_embeddings":4096,
               "rope_scaling":{"type":"dynamic","factor":2,"original_max_position_embeddings":2048}})");
  CHECK(std::get<dynamic_ntk_scaling>(m.rope->scaling).original_max_position == 4096);
  CHECK(has_warning(m, "is not read by Hugging Face's dynamic NTK"));
  error_of(
      [] { (void)load(R"({"hidden_size":64,"num_attention_heads":2,"rope_scaling":{"type":"dynamic","factor":2}})"); },
      "max_position_embeddings");
  // An alpha under a dynamic rope_type is HunYuan's own scaling; any other family's dynamic NTK does not read it.
  m = load(R"({"hidden_size":64,"num_attention_heads":2,"max_position_embeddings":4096,
               "rope_scaling":{"type":"dynamic","alpha":1000.0,"factor":1.0}})");
  CHECK(m.rope_type == "dynamic");
  CHECK(has_warning(m, "rope_scaling.alpha: not used by rope_type dynamic"));
  // HF v5 rope_parameters with proportional partial rotary.
  m = load(R"({"hidden_size":64,"num_attention_heads":2,
               "rope_parameters":{"rope_type":"proportional","rope_theta":1000000,"partial_rotary_factor":0.25}})");
  CHECK(m.rope->partial_mode == partial_rotary_mode::proportional);
  CHECK(m.rope->theta == 1000000.0);
  CHECK(m.rope->partial_rotary_factor == 0.25);
}

TEST_CASE("hf: rope_parameters (v5) carry rope_theta; per-layer-type parameters use full_attention") {
  auto m = load(R"({"hidden_size":64,"num_attention_heads":2,
                    "rope_parameters":{"rope_type":"yarn","rope_theta":500000,"factor":8,
                                       "original_max_position_embeddings":8192,"attention_factor":1.5}})");
  CHECK(m.rope->theta == 500000.0);
  CHECK(std::get<yarn_scaling>(m.rope->scaling).attention_factor == 1.5);
  m = load(R"({"hidden_size":64,"num_attention_heads":2,
               "rope_parameters":{"sliding_attention":{"rope_type":"default","rope_theta":10000},
                                  "full_attention":{"rope_type":"linear","factor":8,"rope_theta":1000000}}})");
  CHECK(m.rope_type == "linear");
  CHECK(m.rope->theta == 1000000.0);
  CHECK(has_warning(m, "rope_parameters.sliding_attention"));
}

TEST_CASE("hf: every YaRN key is read, including explicit zeros") {
  const auto m = load(R"({"head_dim":128,"num_attention_heads":4,"rope_scaling":{"rope_type":"yarn","factor":16,
      "original_max_position_embeddings":4096,"beta_fast":0,"beta_slow":0,"mscale":0,"mscale_all_dim":0,
      "attention_factor":0,"truncate":false,"extrapolation_factor":0}})");
  const auto& y = std::get<yarn_scaling>(m.rope->scaling);
  // Explicit 0 is a value, never "use the default" (HF's `x or default` would give 32 and 1).
  CHECK(y.beta_fast == 0.0);
  CHECK(y.beta_slow == 0.0);
  CHECK(y.mscale == 0.0);
  CHECK(y.mscale_all_dim == 0.0);
  CHECK(y.attention_factor == 0.0);
  CHECK_FALSE(y.truncate);
  CHECK(y.extrapolation_factor == 0.0);
  // Explicit zeros elsewhere stay zeros, for validation to reject by name.
  const auto z = load(R"({"head_dim":0,"rope_theta":0,"partial_rotary_factor":0,"num_attention_heads":2})");
  CHECK(z.rope->head_dim == 0);
  CHECK(z.rope->theta == 0.0);
  CHECK(z.rope->partial_rotary_factor == 0.0);
  const auto f = load(R"({"head_dim":64,"rope_scaling":{"rope_type":"linear","factor":0}})");
  CHECK(std::get<linear_scaling>(f.rope->scaling).factor == 0.0);
}

TEST_CASE("hf: factor is never re-derived from the lengths when given (HF #38224)") {
  const auto m = load(R"({"head_dim":128,"max_position_embeddings":131072,
      "rope_scaling":{"rope_type":"yarn","factor":4,"original_max_position_embeddings":4096}})");
  CHECK(std::get<yarn_scaling>(m.rope->scaling).factor == 4.0);  // not 131072 / 4096 = 32
  const auto d = load(R"({"head_dim":128,"max_position_embeddings":131072,
      "rope_scaling":{"rope_type":"yarn","original_max_position_embeddings":4096}})");
  CHECK(std::get<yarn_scaling>(d.rope->scaling).factor == 32.0);  // absent: derived, and said so
  CHECK(has_warning(d, "factor absent"));
}

TEST_CASE("hf: aliases normalised") {
  const char* cfg =
      R"({"head_dim":64,"rope_scaling":{"type":"deepseek_yarn","factor":4,"original_max_position_embeddings":64}})";
  CHECK(load(cfg).rope_type == "yarn");
  CHECK(load(R"({"head_dim":64,"rope_scaling":{"rope_type":"default"}})").rope_type == "default");
  CHECK(load(R"({"head_dim":64,"rope_scaling":{"type":"su","short_factor":[1],"long_factor":[2],
                 "original_max_position_embeddings":64}})")
            .rope_type == "longrope");
  // rope_type and type agreeing after normalisation is fine.
  CHECK(load(R"({"head_dim":64,"rope_scaling":{"type":"su","rope_type":"longrope","short_factor":[1],
                 "long_factor":[2],"original_max_position_embeddings":64}})")
            .rope_type == "longrope");
}

TEST_CASE("hf: contradictory keys are config_error naming the key") {
  error_of([] { (void)load(R"({"head_dim":64,"rope_scaling":{"rope_type":"yarn","type":"linear","factor":2}})"); },
           "rope_scaling.type");
  error_of([] { (void)load(R"({"head_dim":64,"rope_theta":10000,"rotary_emb_base":20000})"); }, "rotary_emb_base");
  error_of([] { (void)load(R"({"head_dim":64,"rope_theta":10000,"rope_parameters":{"rope_theta":500000}})"); },
           "rope_parameters.rope_theta");
  error_of([] { (void)load(R"({"head_dim":64,"partial_rotary_factor":0.5,"rotary_pct":0.25})"); }, "rotary_pct");
  error_of([] { (void)load(R"({"head_dim":64,"partial_rotary_factor":0.5,"rotary_dim":16})"); }, "rotary_dim");
  error_of(
      [] {
        (void)load(R"({"head_dim":64,"original_max_position_embeddings":4096,"rope_scaling":{"type":"yarn",
                              "factor":2,"original_max_position_embeddings":8192}})");
      },
      "original_max_position_embeddings");
  error_of(
      [] {
        (void)load(R"({"head_dim":64,"rope_scaling":{"type":"linear","factor":2},
                              "rope_parameters":{"rope_type":"linear","factor":4}})");
      },
      "rope_parameters.factor");
  error_of([] { (void)load(R"({"model_type":"llama","hidden_size":100,"num_attention_heads":3})"); }, "hidden_size");
  // Agreeing duplicates are not contradictions.
  const auto ok = load(R"({"head_dim":64,"partial_rotary_factor":0.5,"rotary_dim":32,"rope_theta":10000,
                           "rotary_emb_base":10000.0})");
  CHECK(ok.rope->rotary_dim == 32);
  CHECK(!ok.rope->partial_rotary_factor);
}

TEST_CASE("hf: unknown and unused rope keys are reported as warnings") {
  const auto m = load(R"({"head_dim":64,"rope_local_base_freq":10000,"rope_foo":1,
      "rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,
                      "original_max_position_embeddings":8192,"beta_fast":32,"wibble":3,"mrope_section":[16,24,24]}})");
  CHECK(has_warning(m, "rope_scaling.beta_fast: not used by rope_type llama3"));
  CHECK(has_warning(m, "rope_scaling.wibble: unknown rope key"));
  CHECK(has_warning(m, "rope_scaling.mrope_section"));
  CHECK(has_warning(m, "rope_local_base_freq"));
  CHECK(has_warning(m, "rope_foo: unknown rotary key"));
  CHECK(has_warning(m, "not in the architecture table"));  // read generically: the guess is reported too
  CHECK(m.warnings.size() == 6);
}

TEST_CASE("hf: missing required keys and wrong types name the key") {
  error_of([] { (void)load(R"({"head_dim":64,"rope_scaling":{"rope_type":"linear"}})"); }, "rope_scaling.factor");
  error_of(
      [] {
        (void)load(R"({"head_dim":64,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,
                              "original_max_position_embeddings":8192}})");
      },
      "rope_scaling.high_freq_factor");
  error_of(
      [] {
        (void)load(R"({"head_dim":64,"rope_scaling":{"rope_type":"longrope","short_factor":[1],"long_factor":[1]}})");
      },
      "rope_scaling.original_max_position_embeddings");
  error_of([] { (void)load(R"({"head_dim":64,"rope_scaling":{"rope_type":"wat"}})"); }, "rope_scaling.rope_type");
  error_of([] { (void)load(R"({"head_dim":64,"rope_scaling":{"factor":2}})"); }, "rope_scaling.rope_type");
  error_of([] { (void)load(R"({"model_type":"llama","head_dim":"64"})"); }, "head_dim");
  error_of([] { (void)load(R"({"model_type":"llama","head_dim":64.5})"); }, "head_dim");
  error_of([] { (void)load(R"({"model_type":"llama","head_dim":-2})"); }, "head_dim");
  error_of([] { (void)load(R"({"head_dim":64,"rope_theta":true})"); }, "rope_theta");
  error_of(
      [] {
        (void)load(R"({"head_dim":64,"rope_scaling":{"type":"yarn","factor":2,"truncate":"no",
                              "original_max_position_embeddings":64}})");
      },
      "rope_scaling.truncate");
  error_of(
      [] {
        (void)load(R"({"head_dim":64,"rope_scaling":{"type":"longrope","short_factor":[1,"x"],
                              "long_factor":[1],"original_max_position_embeddings":64}})");
      },
      "rope_scaling.short_factor");
  error_of([] { (void)load(R"({"head_dim":64,"rope_scaling":7})"); }, "rope_scaling");
  error_of([] { (void)load(R"({"model_type":"llama"})"); }, "head_dim");
  error_of([] { (void)load("[1,2]"); }, "config");
}

TEST_CASE("hf: malformed JSON and missing files name the source") {
  const auto msg = error_of([] { (void)load("{\"head_dim\": 64,"); }, "test.json");
  CHECK(msg.find("malformed JSON") != std::string::npos);
  error_of([] { (void)load_hf_config_file("/nonexistent/config.json"); }, "/nonexistent/config.json");
  std::string deep(200, '[');
  error_of([&] { (void)load(deep + std::string(200, ']')); }, "config");
}

TEST_CASE("hf: null means absent") {
  const auto m = load(R"({"model_type":"llama","head_dim":null,"hidden_size":256,"num_attention_heads":4,
                          "rope_scaling":null,"rope_theta":null})");
  CHECK(m.rope->head_dim == 64);
  CHECK(m.rope->theta == 10000.0);
  CHECK(m.rope_type == "default");
}

TEST_CASE("hf: explicit \"rotary_dim\": 0 is a value (rejected by validation by name), never absent") {
  const auto m = load(R"({"head_dim":64,"rotary_dim":0})");
  REQUIRE(m.rope);
  REQUIRE(m.rope->rotary_dim.has_value());
  CHECK(*m.rope->rotary_dim == 0);
  // Absent would mean R = head_dim and a valid schedule; 0 must fail, naming rotary_dim.
  error_of([&] { (void)rope_schedule(*m.rope); }, "rope.rotary_dim");
  const auto absent = load(R"({"head_dim":64,"rope_theta":10000})");
  REQUIRE(absent.rope);
  CHECK_NOTHROW(rope_schedule(*absent.rope));
  // With a partial_rotary_factor that agrees (floor(64 * 0) = 0) it is still 0.
  const auto z = load(R"({"head_dim":64,"rotary_dim":0,"partial_rotary_factor":0.0})");
  CHECK(z.rope->rotary_dim == 0);
  CHECK(!z.rope->partial_rotary_factor);
  // The other integer keys: explicit zeros kept.
  const auto k = load(R"({"model_type":"deepseek_v3","qk_rope_head_dim":0,"qk_nope_head_dim":0,
                          "max_position_embeddings":0})");
  CHECK(k.rope->head_dim == 0);
  CHECK(k.rope->rotary_dim == 0);
  CHECK(k.rope->rotary_offset == 0);
  CHECK(k.max_position_embeddings == 0);
  const auto t5 = load(R"({"model_type":"t5","relative_attention_num_buckets":0,"relative_attention_max_distance":0})");
  REQUIRE(t5.t5);
  CHECK(t5.t5->num_buckets == 0);
  CHECK(t5.t5->max_distance == 0);
  const auto mpt = load(R"({"model_type":"my_mpt","attn_config":{"alibi":true,"alibi_bias_max":0}})");
  REQUIRE(mpt.alibi);
  CHECK(mpt.alibi->max_bias == 0.0);
  const auto l3 = load(R"({"head_dim":64,"rope_scaling":{"rope_type":"llama3","factor":0,"low_freq_factor":0,
                          "high_freq_factor":0,"original_max_position_embeddings":0}})");
  CHECK(std::get<llama3_scaling>(l3.rope->scaling) ==
        llama3_scaling{.factor = 0, .low_freq_factor = 0, .high_freq_factor = 0, .original_max_position = 0});
}

TEST_CASE("hf: sums and products of keys are checked where the keys are known") {
  // qk_nope_head_dim + qk_rope_head_dim overflowing int is refused at load time, naming the key.
  auto msg =
      error_of([] { (void)load(R"({"qk_rope_head_dim":2147483647,"qk_nope_head_dim":1})"); }, "qk_nope_head_dim");
  CHECK(msg.find("2147483648") != std::string::npos);
  const auto edge = load(R"({"qk_rope_head_dim":2147483646,"qk_nope_head_dim":1})");
  CHECK(edge.rope->head_dim == 2147483647);
  // rotary_dim vs a huge partial_rotary_factor: a contradiction, not a float-to-int overflow.
  error_of([] { (void)load(R"({"head_dim":64,"rotary_dim":32,"partial_rotary_factor":1e300})"); }, "rotary_dim");
  // YaRN factor derived from the lengths with L0 = 0: refused by name, not an infinite factor.
  msg = error_of(
      [] {
        (void)load(R"({"head_dim":64,"max_position_embeddings":4096,
                       "rope_scaling":{"rope_type":"yarn","original_max_position_embeddings":0}})");
      },
      "rope_scaling.original_max_position_embeddings");
  error_of(
      [] {
        (void)load(R"({"head_dim":64,"max_position_embeddings":4096,"original_max_position_embeddings":0,
                       "rope_scaling":{"rope_type":"yarn"}})");
      },
      "original_max_position_embeddings");
}

TEST_CASE("hf: MLA warnings, null rope_parameters members, lengths YaRN and dynamic need") {
  auto m = load(R"({"qk_rope_head_dim":64,"qk_nope_head_dim":128,"head_dim":96,"rotary_dim":32})");
  CHECK(has_warning(m, "head_dim = 96 ignored"));
  CHECK(has_warning(m, "partial_rotary_factor/rotary_dim ignored"));
  CHECK(m.rope->rotary_dim == 64);
  // head_dim equal to qk_rope_head_dim or to the sum is not worth a warning.
  CHECK(load(R"({"model_type":"deepseek_v3","qk_rope_head_dim":64,"qk_nope_head_dim":128,"head_dim":192})")
            .warnings.empty());
  // A null member of rope_parameters is absent, also when rope_scaling has the key.
  m = load(R"({"head_dim":64,"rope_scaling":{"rope_type":"linear","factor":2},
               "rope_parameters":{"rope_type":null,"factor":2}})");
  CHECK(std::get<linear_scaling>(m.rope->scaling).factor == 2.0);
  // YaRN: L0 from max_position_embeddings when absent (said so); neither: an error naming it.
  m = load(R"({"head_dim":64,"max_position_embeddings":8192,"rope_scaling":{"rope_type":"yarn","factor":4}})");
  CHECK(std::get<yarn_scaling>(m.rope->scaling).original_max_position == 8192);
  CHECK(has_warning(m, "L0 = max_position_embeddings = 8192"));
  error_of([] { (void)load(R"({"head_dim":64,"rope_scaling":{"rope_type":"yarn","factor":4}})"); },
           "rope_scaling.original_max_position_embeddings");
  // YaRN factor absent and not derivable (no max_position_embeddings besides L0).
  error_of(
      [] {
        (void)load(R"({"head_dim":64,"rope_scaling":{"rope_type":"yarn","original_max_position_embeddings":64}})");
      },
      "rope_scaling.factor");
  // Dynamic NTK needs a length.
  error_of([] { (void)load(R"({"head_dim":64,"rope_scaling":{"rope_type":"dynamic","factor":2}})"); },
           "max_position_embeddings");
  // llama3 needs original_max_position_embeddings.
  error_of(
      [] {
        (void)load(R"({"head_dim":64,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,
                       "high_freq_factor":4}})");
      },
      "rope_scaling.original_max_position_embeddings");
  // rope_type default with scaling keys: each one reported as not used.
  m = load(R"({"head_dim":64,"rope_scaling":{"rope_type":"default","factor":2}})");
  CHECK(has_warning(m, "rope_scaling.factor: not used by rope_type default"));
}

TEST_CASE("hf: integral floating-point values are integers (64.0), others are not") {
  const auto m = load(R"({"head_dim":64.0,"rope_theta":10000,"max_position_embeddings":4096.0})");
  CHECK(m.rope->head_dim == 64);
  CHECK(m.max_position_embeddings == 4096);
  error_of([] { (void)load(R"({"head_dim":1e300,"rope_theta":10000})"); }, "head_dim");
}

}  // namespace hf_loader_test
