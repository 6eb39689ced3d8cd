// tests/config/gguf_loader_test.cpp — GGUF metadata -> model_config, and the .gguf reader on
// in-memory files (including every truncation of a valid file).
#include <cmath>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include <posenc/config/gguf.hpp>
#include <posenc/config/json.hpp>
#include <posenc/rope/schedule.hpp>

#include "gguf_writer.hpp"
#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::error_of;
using posenc_test::gguf_writer;

namespace {

model_config load_bytes(const std::string& bytes, const load_options& options = {}) {
  std::istringstream in(bytes);
  const gguf_contents c = read_gguf(in, "test.gguf");
  return load_gguf_config(c.metadata, &c.tensors, options);
}

bool has_warning(const model_config& m, const std::string& needle) {
  for (const auto& w : m.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

gguf_writer llama_base() {
  gguf_writer w;
  w.str("general.architecture", "llama");
  w.str("general.name", "test");
  w.u32("llama.context_length", 131072);
  w.u32("llama.embedding_length", 4096);
  w.u32("llama.attention.head_count", 32);
  w.u32("llama.attention.head_count_kv", 8);
  w.u32("llama.rope.dimension_count", 128);
  w.f32("llama.rope.freq_base", 500000.0f);
  // A vocabulary-sized array is skipped, not stored.
  w.str_array("tokenizer.ggml.tokens", std::vector<std::string>(5000, "tok"));
  return w;
}

}  // namespace

TEST_CASE("gguf: Llama 3.1 with rope_freqs tensor = HF llama3 frequencies, interleaved (NORM) pairs") {
  // The factors llama.cpp's converter stores: w_default / w_llama3, as float32.
  const auto hf = load_hf_config_file(std::string(POSENC_GOLDEN_DIR) + "/configs/llama3_1_8b.json");
  const auto expected = rope_schedule(*hf.rope).base().inv_freq;
  rope_config plain = *hf.rope;
  plain.scaling = default_scaling{};
  const auto base = rope_schedule(plain).base().inv_freq;
  std::vector<float> factors;
  for (std::size_t k = 0; k < base.size(); ++k) factors.push_back(static_cast<float>(base[k] / expected[k]));

  gguf_writer w = llama_base();
  w.tensor_f32("rope_freqs.weight", factors);
  const auto m = load_bytes(w.bytes());
  CHECK(m.format == "gguf");
  CHECK(m.model_type == "llama");
  CHECK(m.rope_type == "frequency_factors");
  CHECK(m.num_attention_heads == 32);
  CHECK(m.num_key_value_heads == 8);
  CHECK(m.max_position_embeddings == 131072);
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 128);
  CHECK(m.rope->rotary_dim == 128);
  CHECK(m.rope->theta == 500000.0);
  CHECK(m.rope->layout == kernels::pairing::interleaved);
  const auto got = rope_schedule(*m.rope).base().inv_freq;
  REQUIRE(got.size() == expected.size());
  for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k] == Approx(expected[k]).epsilon(2e-7));
  CHECK(m.warnings.empty());

  // Without the tensor (metadata only) it is plain RoPE.
  const auto m2 = load_bytes(llama_base().bytes());
  CHECK(m2.rope_type == "default");
}

TEST_CASE("gguf: Qwen2 YaRN keys, NEOX pairs") {
  gguf_writer w;
  w.str("general.architecture", "qwen2");
  w.u32("qwen2.context_length", 131072);
  w.u32("qwen2.embedding_length", 3584);
  w.u32("qwen2.attention.head_count", 28);
  w.f32("qwen2.rope.freq_base", 1000000.0f);
  w.str("qwen2.rope.scaling.type", "yarn");
  w.f32("qwen2.rope.scaling.factor", 4.0f);
  w.u32("qwen2.rope.scaling.original_context_length", 32768);
  w.f32("qwen2.rope.scaling.yarn_beta_fast", 32.0f);
  w.f32("qwen2.rope.scaling.yarn_beta_slow", 1.0f);
  const auto m = load_bytes(w.bytes());
  CHECK(m.rope_type == "yarn");
  CHECK(m.rope->head_dim == 128);
  CHECK(m.rope->layout == kernels::pairing::half_split);
  const auto& y = std::get<yarn_scaling>(m.rope->scaling);
  CHECK(y.factor == 4.0);
  CHECK(y.original_max_position == 32768);
  // Same frequencies as the HF config of the same model.
  const auto golden = posenc_test::load_golden("rope_configs.json");
  const auto& c = posenc_test::golden_case(golden, "qwen2_7b_instruct_yarn4");
  const auto f = rope_schedule(*m.rope).base();
  const auto expected = posenc_test::flatten(c.at("expected").at("inv_freq_fp64"));
  REQUIRE(f.inv_freq.size() == expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) CHECK(f.inv_freq[k] == Approx(expected[k]).epsilon(1e-13));
  CHECK(f.attention_scaling == Approx(c.at("expected").at("attention_scaling").get<double>()).epsilon(1e-13));
}

TEST_CASE("gguf: DeepSeek-2 MLA slice and yarn_log_multiplier = 0.1 * mscale_all_dim") {
  gguf_writer w;
  w.str("general.architecture", "deepseek2");
  w.u32("deepseek2.context_length", 163840);
  w.u32("deepseek2.embedding_length", 2048);
  w.u32("deepseek2.attention.head_count", 16);
  w.u32("deepseek2.attention.key_length", 192);
  w.u32("deepseek2.rope.dimension_count", 64);
  w.f32("deepseek2.rope.freq_base", 10000.0f);
  w.str("deepseek2.rope.scaling.type", "yarn");
  w.f32("deepseek2.rope.scaling.factor", 40.0f);
  w.u32("deepseek2.rope.scaling.original_context_length", 4096);
  w.f64("deepseek2.rope.scaling.yarn_log_multiplier", 0.0707);
  const auto m = load_bytes(w.bytes());
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 192);
  CHECK(m.rope->rotary_dim == 64);
  CHECK(m.rope->rotary_offset == 128);
  CHECK(m.rope->layout == kernels::pairing::interleaved);
  const auto& y = std::get<yarn_scaling>(m.rope->scaling);
  CHECK(*y.mscale == Approx(0.707).epsilon(1e-12));
  CHECK(*y.mscale_all_dim == Approx(0.707).epsilon(1e-12));
  const auto f = rope_schedule(*m.rope).base();
  CHECK(f.attention_scaling == Approx(1.0).epsilon(1e-13));
  CHECK(f.softmax_scale_multiplier == Approx(1.5896261651208736).epsilon(1e-12));
}

TEST_CASE("gguf: Phi-3 longrope factors from tensors; linear via legacy scale_linear") {
  gguf_writer w;
  w.str("general.architecture", "phi3");
  w.u32("phi3.context_length", 131072);
  w.u32("phi3.embedding_length", 3072);
  w.u32("phi3.attention.head_count", 32);
  w.u32("phi3.rope.dimension_count", 96);
  w.str("phi3.rope.scaling.type", "longrope");
  w.u32("phi3.rope.scaling.original_context_length", 4096);
  w.f32("phi3.rope.scaling.attn_factor", 1.1902380714238083f);
  w.tensor_f32("rope_factors_long.weight", std::vector<float>(48, 4.0f));
  w.tensor_f32("rope_factors_short.weight", std::vector<float>(48, 1.5f));
  const auto m = load_bytes(w.bytes());
  CHECK(m.rope_type == "longrope");
  const auto& l = std::get<longrope_scaling>(m.rope->scaling);
  CHECK(l.long_factor == std::vector<double>(48, 4.0));
  CHECK(l.short_factor == std::vector<double>(48, 1.5));
  CHECK(l.original_max_position == 4096);
  CHECK(l.max_position == 131072);
  CHECK(*l.attention_factor == Approx(1.1902380714238083).epsilon(1e-7));
  // Metadata alone cannot give the factors: the error says where they are.
  std::istringstream in(w.bytes());
  const auto c = read_gguf(in);
  error_of([&] { (void)load_gguf_config(c.metadata); }, "rope_factors_long.weight");

  gguf_writer v;
  v.str("general.architecture", "llama");
  v.u32("llama.embedding_length", 512);
  v.u32("llama.attention.head_count", 8);
  v.f32("llama.rope.scale_linear", 4.0f);
  const auto lin = load_bytes(v.bytes());
  CHECK(lin.rope_type == "linear");
  CHECK(std::get<linear_scaling>(lin.rope->scaling).factor == 4.0);
  CHECK(lin.rope->head_dim == 64);
}

TEST_CASE("gguf: ALiBi and T5 architectures; unknown rope keys warned") {
  gguf_writer b;
  b.str("general.architecture", "bloom");
  b.u32("bloom.attention.head_count", 16);
  b.f32("bloom.attention.max_alibi_bias", 8.0f);
  const auto bloom = load_bytes(b.bytes());
  CHECK(!bloom.rope);
  REQUIRE(bloom.alibi);
  CHECK(bloom.alibi->max_bias == 8.0);

  gguf_writer t;
  t.str("general.architecture", "t5");
  t.u32("t5.attention.relative_buckets_count", 32);
  const auto t5 = load_bytes(t.bytes());
  REQUIRE(t5.t5);
  CHECK(t5.t5->num_buckets == 32);
  CHECK(t5.t5->max_distance == 128);

  gguf_writer u = llama_base();
  u.f32("llama.rope.scaling.wibble", 1.0f);
  u.i32_array("llama.rope.dimension_sections", {16, 24, 24, 0});
  const auto m = load_bytes(u.bytes());
  CHECK(has_warning(m, "llama.rope.scaling.wibble: unknown rope key"));
  CHECK(has_warning(m, "llama.rope.dimension_sections: multimodal RoPE sections ignored here"));
}

TEST_CASE("gguf: bad input is config_error, never a crash") {
  error_of([] { (void)load_bytes("GGML"); }, "test.gguf");
  error_of([] { (void)load_bytes("NOTAGGUFFILE-----------------------"); }, "test.gguf");
  gguf_writer w;
  w.u32("llama.context_length", 10);
  error_of([&] { (void)load_bytes(w.bytes()); }, "general.architecture");
  gguf_writer s = llama_base();
  s.str("llama.rope.scaling.type", "dynamic");
  error_of([&] { (void)load_bytes(s.bytes()); }, "llama.rope.scaling.type");
  gguf_writer ty;
  ty.str("general.architecture", "llama");
  ty.str("llama.rope.freq_base", "ten thousand");
  error_of([&] { (void)load_bytes(ty.bytes()); }, "llama.rope.freq_base");

  // Every prefix of a valid file is rejected cleanly.
  gguf_writer full = llama_base();
  full.tensor_f32("rope_freqs.weight", std::vector<float>(64, 1.0f));
  const std::string bytes = full.bytes();
  REQUIRE_NOTHROW(load_bytes(bytes));
  int tried = 0, errors = 0;
  for (std::size_t n = 0; n < bytes.size(); n += (n < 200 ? 1 : 97)) {
    ++tried;
    try {
      (void)load_bytes(bytes.substr(0, n));
    } catch (const config_error&) {
      ++errors;
    }
  }
  CHECK(errors == tried);
}

TEST_CASE("gguf: per-layer head counts — 0 marks a layer without attention (LFM2), errors name the entry") {
  auto lfm2 = [](std::vector<std::int32_t> kv) {
    gguf_writer w;
    w.str("general.architecture", "lfm2");
    w.u32("lfm2.embedding_length", 1024);
    w.u32("lfm2.attention.head_count", 16);
    w.i32_array("lfm2.attention.head_count_kv", kv);
    w.f32("lfm2.rope.freq_base", 1000000.0f);
    return w;
  };
  // LFM2-350M: convolution layers (0) first, attention layers with 8 KV heads.
  auto m = load_bytes(lfm2({0, 0, 8, 0, 0, 8, 0, 0, 8, 0, 8, 0, 8, 0, 8, 0}).bytes());
  CHECK(m.num_key_value_heads == 8);
  CHECK(m.num_attention_heads == 16);
  CHECK(m.warnings.empty());
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 64);
  // Attention layers that disagree: the first attention layer's value, and a warning saying which.
  m = load_bytes(lfm2({0, 4, 0, 8}).bytes());
  CHECK(m.num_key_value_heads == 4);
  CHECK(has_warning(m,
                    "lfm2.attention.head_count_kv: differs per attention layer; using the first, "
                    "lfm2.attention.head_count_kv[1] = 4"));
  // No attention layer at all: no value, said so; an empty array: no value.
  m = load_bytes(lfm2({0, 0}).bytes());
  CHECK(!m.num_key_value_heads);
  CHECK(has_warning(m, "lfm2.attention.head_count_kv: 0 for every layer"));
  m = load_bytes(lfm2({}).bytes());
  CHECK(!m.num_key_value_heads);
  CHECK(m.warnings.empty());
  // A negative entry names that entry.
  auto msg = error_of([&] { (void)load_bytes(lfm2({8, 8, -1}).bytes()); }, "lfm2.attention.head_count_kv[2]");
  CHECK(msg.find("head_count_kv[0]v") == std::string::npos);
  // Non-integer entries name the entry too (a float array).
  config_value md = config_value::object();
  md.set("general.architecture", config_value::string("llama"));
  md.set("llama.attention.head_count",
         config_value::list({config_value::integer(8), config_value::number(2.5), config_value{}}));
  error_of([&] { (void)load_gguf_config(md); }, "llama.attention.head_count[1]");
  md.set("llama.attention.head_count", config_value::list({config_value::integer(8), config_value{}}));
  error_of([&] { (void)load_gguf_config(md); }, "llama.attention.head_count[1]");
  // A scalar 0 is not a head count.
  gguf_writer s;
  s.str("general.architecture", "llama");
  s.u32("llama.attention.head_count_kv", 0);
  error_of([&] { (void)load_bytes(s.bytes()); }, "llama.attention.head_count_kv");
}

TEST_CASE("gguf: explicit zeros are values, not absent") {
  gguf_writer w;
  w.str("general.architecture", "qwen2");
  w.u32("qwen2.attention.head_count", 4);
  w.u32("qwen2.attention.key_length", 0);
  w.u32("qwen2.rope.dimension_count", 0);
  w.f32("qwen2.rope.freq_base", 0.0f);
  w.u32("qwen2.context_length", 0);
  w.f32("qwen2.rope.scaling.yarn_ext_factor", 0.0f);
  w.str("qwen2.rope.scaling.type", "yarn");
  w.f32("qwen2.rope.scaling.factor", 0.0f);
  w.u32("qwen2.rope.scaling.original_context_length", 0);
  w.f32("qwen2.rope.scaling.yarn_beta_fast", 0.0f);
  w.f32("qwen2.rope.scaling.yarn_beta_slow", 0.0f);
  const auto m = load_bytes(w.bytes());
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 0);
  CHECK(m.rope->rotary_dim == 0);
  CHECK(m.rope->theta == 0.0);
  CHECK(m.max_position_embeddings == 0);
  const auto& y = std::get<yarn_scaling>(m.rope->scaling);
  CHECK(y.factor == 0.0);
  CHECK(y.original_max_position == 0);
  CHECK(y.beta_fast == 0.0);
  CHECK(y.beta_slow == 0.0);
  CHECK(y.extrapolation_factor == 0.0);
  // llama.cpp's "unset" ext_factor is negative: that one keeps the default.
  gguf_writer n;
  n.str("general.architecture", "qwen2");
  n.u32("qwen2.attention.key_length", 64);
  n.str("qwen2.rope.scaling.type", "yarn");
  n.f32("qwen2.rope.scaling.factor", 4.0f);
  n.u32("qwen2.rope.scaling.original_context_length", 4096);
  n.f32("qwen2.rope.scaling.yarn_ext_factor", -1.0f);
  CHECK(std::get<yarn_scaling>(load_bytes(n.bytes()).rope->scaling).extrapolation_factor == 1.0);
  // max_alibi_bias 0 means "no ALiBi" in llama.cpp.
  gguf_writer a;
  a.str("general.architecture", "mpt");
  a.f32("mpt.attention.max_alibi_bias", 0.0f);
  CHECK(!load_bytes(a.bytes()).alibi);
}

TEST_CASE("gguf: architecture-dependent RoPE: mRoPE, unknown names, ALiBi without a bias key") {
  gguf_writer q;
  q.str("general.architecture", "qwen2vl");
  q.u32("qwen2vl.attention.head_count", 4);
  q.u32("qwen2vl.embedding_length", 256);
  q.i32_array("qwen2vl.rope.dimension_sections", {16, 24, 24, 0});
  auto m = load_bytes(q.bytes());
  REQUIRE(m.rope);
  CHECK(m.rope->layout == kernels::pairing::half_split);
  CHECK(has_warning(m, "qwen2vl.rope.dimension_sections: multimodal RoPE sections ignored here"));

  // An architecture the table does not know is refused, naming the nearest known names ...
  gguf_writer u;
  u.str("general.architecture", "wibble");
  u.u32("wibble.attention.key_length", 64);
  u.f32("wibble.rope.freq_base", 5e5f);
  const auto msg = error_of([&] { (void)load_bytes(u.bytes()); }, "general.architecture");
  CHECK(msg.find("nearest") != std::string::npos);
  // ... or read at face value when the load is generic, every guess a warning.
  m = load_bytes(u.bytes(), {.generic = true});
  REQUIRE(m.rope);
  CHECK(m.rope->layout == kernels::pairing::half_split);
  CHECK(has_warning(m, "pair layout unknown to this loader; assuming NeoX"));
  CHECK(has_warning(m, "not in the architecture table"));
  gguf_writer u2;  // unknown and without rope keys: no RoPE
  u2.str("general.architecture", "wibble");
  CHECK(!load_bytes(u2.bytes(), {.generic = true}).rope);

  gguf_writer b;
  b.str("general.architecture", "mpt");
  b.u32("mpt.attention.head_count", 8);
  m = load_bytes(b.bytes());
  REQUIRE(m.alibi);
  CHECK(m.alibi->max_bias == 8.0);

  gguf_writer s = llama_base();
  s.f32("llama.rope.freq_base_swa", 10000.0f);
  s.u32("llama.rope.dimension_count_swa", 64);
  s.boolean("llama.rope.scaling.finetuned", true);
  s.f32("llama.rope.scaling.yarn_attn_factor", 1.0f);
  m = load_bytes(s.bytes());
  CHECK(has_warning(m, "llama.rope.freq_base_swa: per-layer RoPE is given by load_hf_layered / load_gguf_layered"));
  CHECK(has_warning(m, "llama.rope.dimension_count_swa: sliding-window"));
  CHECK(has_warning(m, "llama.rope.scaling.finetuned: not interpreted"));
  CHECK(has_warning(m, "llama.rope.scaling.yarn_attn_factor: not interpreted"));
}

TEST_CASE("gguf: head dimension sources and their errors") {
  gguf_writer none;
  none.str("general.architecture", "llama");
  none.f32("llama.rope.freq_base", 1e4f);
  error_of([&] { (void)load_bytes(none.bytes()); }, "llama.attention.key_length");
  gguf_writer odd;
  odd.str("general.architecture", "llama");
  odd.u32("llama.embedding_length", 100);
  odd.u32("llama.attention.head_count", 3);
  const auto msg = error_of([&] { (void)load_bytes(odd.bytes()); }, "llama.embedding_length");
  CHECK(msg.find("a multiple of llama.attention.head_count = 3") != std::string::npos);
  // DeepSeek-2 MLA: key_length_mla wins over key_length.
  gguf_writer mla;
  mla.str("general.architecture", "deepseek2");
  mla.u32("deepseek2.attention.key_length_mla", 192);
  mla.u32("deepseek2.attention.key_length", 576);
  mla.u32("deepseek2.rope.dimension_count", 64);
  CHECK(load_bytes(mla.bytes()).rope->head_dim == 192);
}

TEST_CASE("gguf: scaling combinations — rope_freqs, alpha, YaRN lengths and attention factors") {
  auto base = [] {
    gguf_writer w;
    w.str("general.architecture", "qwen2");
    w.u32("qwen2.attention.key_length", 64);
    return w;
  };
  // rope_freqs with a scaling type other than none/linear-1 is a contradiction.
  gguf_writer f = base();
  f.str("qwen2.rope.scaling.type", "yarn");
  f.f32("qwen2.rope.scaling.factor", 4.0f);
  f.tensor_f32("rope_freqs.weight", std::vector<float>(32, 1.0f));
  error_of([&] { (void)load_bytes(f.bytes()); }, "rope_freqs.weight");
  // Hunyuan-style static NTK alpha.
  gguf_writer a = base();
  a.f32("qwen2.rope.scaling.alpha", 1000.0f);
  auto m = load_bytes(a.bytes());
  CHECK(m.rope_type == "ntk");
  CHECK(std::get<ntk_scaling>(m.rope->scaling).alpha == 1000.0);
  // YaRN without original_context_length: context_length stands in (said so); without both, an error.
  gguf_writer y = base();
  y.str("qwen2.rope.scaling.type", "yarn");
  y.f32("qwen2.rope.scaling.factor", 4.0f);
  error_of([&] { (void)load_bytes(y.bytes()); }, "qwen2.rope.scaling.original_context_length");
  y.u32("qwen2.context_length", 32768);
  m = load_bytes(y.bytes());
  CHECK(std::get<yarn_scaling>(m.rope->scaling).original_max_position == 32768);
  CHECK(has_warning(m, "original_context_length absent; L0 = qwen2.context_length = 32768"));
  gguf_writer nf = base();
  nf.str("qwen2.rope.scaling.type", "yarn");
  error_of([&] { (void)load_bytes(nf.bytes()); }, "qwen2.rope.scaling.factor");
  // yarn_log_multiplier 0: no softmax correction, magnitude 1.
  gguf_writer z = y;
  z.f32("qwen2.rope.scaling.yarn_log_multiplier", 0.0f);
  m = load_bytes(z.bytes());
  CHECK(std::get<yarn_scaling>(m.rope->scaling).attention_factor == 1.0);
  CHECK(has_warning(m, "no softmax correction"));
  // attn_factor as ggml reads it: multiplied into 1 + 0.1 ln(factor).
  gguf_writer at = y;
  at.f32("qwen2.rope.scaling.attn_factor", 2.0f);
  m = load_bytes(at.bytes());
  CHECK(*std::get<yarn_scaling>(m.rope->scaling).attention_factor == Approx(2.0 * (0.1 * std::log(4.0) + 1.0)));
  CHECK(has_warning(m, "read as ggml does"));
  // ... which contradicts a yarn_log_multiplier of 0 (magnitude 1), unless it gives the same.
  z.f32("qwen2.rope.scaling.attn_factor", 2.0f);
  error_of([&] { (void)load_bytes(z.bytes()); }, "qwen2.rope.scaling.attn_factor");
  // LongRoPE needs the original length.
  gguf_writer l = base();
  l.str("qwen2.rope.scaling.type", "longrope");
  l.tensor_f32("rope_factors_long.weight", std::vector<float>(32, 2.0f));
  l.tensor_f32("rope_factors_short.weight", std::vector<float>(32, 1.0f));
  error_of([&] { (void)load_bytes(l.bytes()); }, "qwen2.rope.scaling.original_context_length");
  // Metadata that is not an object.
  error_of([] { (void)load_gguf_config(config_value::list()); }, "gguf");
}

TEST_CASE("gguf: 16- and 64-bit array elements are read and kept") {
  gguf_writer w = llama_base();
  w.raw("u16s", 9,
        gguf_writer::le(std::uint32_t{2}) + gguf_writer::le(std::uint64_t{2}) + gguf_writer::le(std::uint16_t{7}) +
            gguf_writer::le(std::uint16_t{65535}));
  w.raw(
      "u64s", 9,
      gguf_writer::le(std::uint32_t{10}) + gguf_writer::le(std::uint64_t{1}) + gguf_writer::le(std::uint64_t{1} << 40));
  std::istringstream in(w.bytes());
  const auto c = read_gguf(in);
  CHECK(*c.metadata.find("u16s") == config_value::list({config_value::integer(7), config_value::integer(65535)}));
  CHECK(*c.metadata.find("u64s") == config_value::list({config_value::integer(std::int64_t{1} << 40)}));
}
