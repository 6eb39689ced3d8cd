// tests/cli/model_cli_test.cpp — `posenc model`: the per-layer JSON contract (exactly the documented
// keys), values of real configs (Cohere2 NoPE full layers, Gemma 2 scale and soft-caps, Qwen3-Next
// linear layers, Llama 4 chunks), the text table, GGUF input, bad input (exit 2, one line on
// stderr), and the supported-models table in docs/configs.md equal to the generator's.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../config/gguf_writer.hpp"
#include "cli_support.hpp"
#include "support/golden.hpp"

using posenc_cli_test::cli;
using posenc_cli_test::expect_error;

namespace {

std::string conformance(const std::string& name) {
  return std::string(POSENC_GOLDEN_DIR) + "/configs/conformance/" + name + ".json";
}

/// The `hf` (or another format's) object of a conformance file written to a temporary config.json.
std::string write_config(const std::string& name, const std::string& format = "hf") {
  const auto f = nlohmann::json::parse(posenc::read_text_file(conformance(name)));
  const auto path = std::filesystem::temp_directory_path() / ("posenc_model_" + name + "_" + format + ".json");
  std::ofstream(path) << f.at(format).dump();
  return path.string();
}

nlohmann::json model_json_args(const std::vector<std::string>& args) {
  const auto r = cli(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  REQUIRE(r.err.empty());
  return nlohmann::json::parse(r.out);
}

nlohmann::json model_json(const std::string& path) {
  const auto r = cli({"model", "--config", path, "--json"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  REQUIRE(r.err.empty());
  return nlohmann::json::parse(r.out);
}

std::string between_markers(const std::string& path) {
  const std::string text = posenc::read_text_file(path);
  const std::string begin = "<!-- BEGIN supported-models -->\n", end = "<!-- END supported-models -->";
  const auto b = text.find(begin);
  const auto e = text.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  REQUIRE(b < e);
  return text.substr(b + begin.size(), e - b - begin.size());
}

}  // namespace

TEST_CASE("model --json: one object with exactly the documented per-layer keys", "[cli][model]") {
  const auto j = model_json(write_config("command_r7b"));
  for (const char* k : {"model_type", "positional", "head_dim", "final_logit_softcap", "layers"}) CHECK(j.contains(k));
  CHECK(j["model_type"] == "cohere2");
  CHECK(j["positional"] == "rope");
  CHECK(j["head_dim"] == 128);
  CHECK(j["final_logit_softcap"].is_null());
  const std::set<std::string> keys = {"index",         "layer_type",    "rope",
                                      "theta",         "rope_type",     "factor",
                                      "layout",        "rotary_dim",    "attention_scaling",
                                      "window",        "chunk_size",    "sinks",
                                      "softmax_scale", "logit_softcap", "temperature",
                                      "alibi"};
  REQUIRE(j["layers"].size() == 32);
  for (const auto& l : j["layers"]) {
    std::set<std::string> got;
    for (auto it = l.begin(); it != l.end(); ++it) got.insert(it.key());
    CHECK(got == keys);
  }
  // Cohere2: sliding layers rotate with interleaved pairs, the full layers are NoPE
  CHECK(j["layers"][0]["layer_type"] == "sliding_attention");
  CHECK(j["layers"][0]["window"] == 4096);
  CHECK(j["layers"][0]["layout"] == "interleaved");
  CHECK(j["layers"][0]["rotary_dim"] == 128);
  CHECK(j["layers"][3]["layer_type"] == "full_attention");
  CHECK(j["layers"][3]["rope"] == false);
  CHECK(j["layers"][3]["rotary_dim"] == 0);
  CHECK(j["layers"][3]["window"].is_null());
  CHECK(j["layers"][3]["softmax_scale"] == 1.0 / std::sqrt(128.0));
}

TEST_CASE("model --json: Gemma 2 27B scale and soft-caps, Qwen3-Next linear layers, Llama 4 chunks", "[cli][model]") {
  const auto g = model_json(write_config("gemma2_27b"));
  CHECK(g["final_logit_softcap"] == 30.0);
  CHECK(g["layers"][0]["softmax_scale"] == 1.0 / std::sqrt(144.0));
  CHECK(g["layers"][0]["logit_softcap"] == 50.0);
  CHECK(g["layers"][1]["layer_type"] == "full_attention");
  const auto q = model_json(write_config("qwen3_next_80b_a3b"));
  CHECK(q["layers"][0]["layer_type"] == "linear_attention");
  CHECK(q["layers"][0]["rope"] == false);
  CHECK(q["layers"][3]["layer_type"] == "full_attention");
  CHECK(q["layers"][3]["rotary_dim"] == 64);
  const auto l = model_json(write_config("llama4_scout"));
  CHECK(l["layers"][0]["layer_type"] == "chunked_attention");
  CHECK(l["layers"][0]["chunk_size"] == 8192);
  CHECK(l["layers"][0]["factor"] == 16.0);
  CHECK(l["layers"][3]["temperature"]["rule"] == "llama4");
  const auto t = model_json(write_config("t5_base"));
  CHECK(t["positional"] == "t5_buckets");
  CHECK(t["layers"][0]["softmax_scale"] == 1.0);
  const auto b = model_json(write_config("bloom_560m"));
  CHECK(b["positional"] == "alibi");
  CHECK(b["layers"][0]["alibi"] == true);
}

TEST_CASE("model reads GGUF files too", "[cli][model]") {
  posenc_test::gguf_writer w;
  w.str("general.architecture", "cohere2");
  w.u32("cohere2.block_count", 8);
  w.u32("cohere2.embedding_length", 4096);
  w.u32("cohere2.attention.head_count", 32);
  w.f32("cohere2.rope.freq_base", 50000.0f);
  w.u32("cohere2.attention.sliding_window", 4096);
  const auto path = std::filesystem::temp_directory_path() / "posenc_model_cohere2.gguf";
  std::ofstream(path, std::ios::binary) << w.bytes();
  const auto j = model_json(path.string());
  CHECK(j["model_type"] == "cohere2");
  REQUIRE(j["layers"].size() == 8);
  CHECK(j["layers"][2]["rope"] == true);
  CHECK(j["layers"][3]["rope"] == false);
}

TEST_CASE("model text table names every layer", "[cli][model]") {
  const auto r = cli({"model", "--config", write_config("gemma2_9b")});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("posenc model") != std::string::npos);
  CHECK(r.out.find("final_logit_softcap  30") != std::string::npos);
  CHECK(r.out.find("sliding_attention") != std::string::npos);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') >= 42 + 5);
}

TEST_CASE("model: bad input exits 2 with one line", "[cli][model]") {
  expect_error({"model"}, "--config");
  expect_error({"model", "--config", "/nonexistent/config.json"}, "cannot open");
  // an unknown model_type is refused, naming the nearest known ones; --generic reads it at face value
  const std::string unknown = std::string(POSENC_GOLDEN_DIR) + "/configs/unknown_model_type.json";
  expect_error({"model", "--config", unknown}, "nearest: llama");
  const auto g = model_json_args({"model", "--config", unknown, "--generic", "--json"});
  CHECK(g["positional"] == "rope");
  CHECK(g["warnings"][0].get<std::string>().find("not in the architecture table") != std::string::npos);
  expect_error({"model", "--config", conformance("gemma_7b"), "--bogus"}, "--bogus");
  expect_error({"model", "--supported-markdown", "--config", conformance("gemma_7b")}, "--supported-markdown");
  const auto bad = std::filesystem::temp_directory_path() / "posenc_model_bad.json";
  std::ofstream(bad) << R"({"model_type": "exaone4", "hidden_size": 256, "num_attention_heads": 2,
                           "num_hidden_layers": 4, "sliding_window_pattern": "LLXG"})";
  expect_error({"model", "--config", bad.string()}, "sliding_window_pattern");
}

TEST_CASE("supported-models table: docs/configs.md carries the generated one", "[cli][model]") {
  const auto lines_of = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  const std::string table = posenc_cli::supported_markdown();
  CHECK(table.rfind("| Family |", 0) == 0);
  CHECK(std::count(table.begin(), table.end(), '\n') == 2 + static_cast<long>(posenc::architectures().size()));
  const auto r = cli({"model", "--supported-markdown"});
  REQUIRE(r.status == 0);
  CHECK(r.out == table);
  // Every line of the documented table is a generated line, in the generator's order: nothing stale, nothing
  // invented. A row added to the architecture table since scripts/supported-models last ran is not yet listed.
  const std::string root = std::string(POSENC_GOLDEN_DIR) + "/../..";
  for (const char* doc : {"/docs/configs.md"}) {
    INFO(doc << " (regenerate with scripts/supported-models)");
    const auto want = lines_of(table), got = lines_of(between_markers(root + doc));
    std::size_t at = 0;
    for (const auto& line : got) {
      INFO(line);
      while (at < want.size() && want[at] != line) ++at;
      CHECK(at < want.size());
    }
    CHECK(got.size() + 3 >= want.size());  // at most a few rows behind the table
  }
}
