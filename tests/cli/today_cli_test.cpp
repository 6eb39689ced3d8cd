// posenc rope on today's models: the per-layer schedule (text and JSON) of Qwen2.5-VL, Qwen3-VL,
// Gemma 3, Llama 4 and gpt-oss configs, the mRoPE stream plot, and errors naming the key.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "support/golden.hpp"

using posenc_cli_test::cli;

namespace {

std::string cfg(const std::string& name) {
  return std::string(POSENC_GOLDEN_DIR) + "/configs/" + name;
}

nlohmann::json layers_json(const std::string& file) {
  const auto r = cli({"rope", "--config", cfg(file), "--json"});
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("rope --json: per-layer schedule of Gemma 3, Llama 4, gpt-oss; mRoPE of Qwen-VL", "[cli][layered]") {
  const auto golden = posenc_test::load_golden("layered.json");
  const auto gemma = layers_json("gemma3_4b.json");
  const auto& gmap = posenc_test::golden_case(golden, "gemma3_4b_layer_map").at("expected");
  REQUIRE(gemma.at("layers").size() == 34);
  for (std::size_t i = 0; i < 34; ++i) {
    CHECK(gemma["layers"][i]["layer_type"] == gmap["layer_types"][i]);
    CHECK(gemma["layers"][i]["rope_source"] == gmap["rope_used"][i]);
    CHECK(gemma["layers"][i]["theta"] == (gmap["rope_used"][i] == "local" ? 10000.0 : 1000000.0));
  }
  CHECK(gemma.at("warnings").dump().find("rope_local_base_freq") == std::string::npos);

  const auto l4 = layers_json("llama4_scout.json");
  const auto& lmap = posenc_test::golden_case(golden, "llama4_scout_layer_map").at("expected");
  for (std::size_t i = 0; i < 48; ++i) {
    CHECK(l4["layers"][i]["rope"] == lmap["use_rope"][i]);
    CHECK(l4["layers"][i]["temperature"].is_null() == lmap["use_rope"][i].get<bool>());
  }
  CHECK(l4["layers"][3]["temperature"]["floor_scale"] == 8192);
  CHECK(l4.at("layout") == "interleaved");

  const auto oss = layers_json("gpt_oss_20b.json");
  CHECK(oss.at("attention_sinks") == true);
  CHECK(oss["layers"][0]["layer_type"] == "sliding_attention");
  CHECK(oss["layers"][0]["window"] == 128);
  CHECK(oss["layers"][1]["layer_type"] == "full_attention");

  const auto q25 = layers_json("qwen2_5_vl_7b.json");
  CHECK(q25["mrope"]["section"] == nlohmann::json({16, 24, 24}));
  CHECK(q25["mrope"]["layout"] == "contiguous");
  CHECK(q25["mrope"]["pair_stream"][15] == 0);
  CHECK(q25["mrope"]["pair_stream"][16] == 1);
  const auto q3 = layers_json("qwen3_vl_8b.json");
  CHECK(q3["mrope"]["layout"] == "interleaved");
  CHECK(q3["theta"] == 5000000.0);
  CHECK(q3["mrope"]["pair_stream"][61] == 0);
}

TEST_CASE("rope text report: per-layer table; --streams-plot writes the mRoPE SVG", "[cli][layered]") {
  const auto r = cli({"rope", "--config", cfg("gemma3_4b.json")});
  REQUIRE(r.status == 0);
  CHECK(r.out.find("per-layer schedule (34 layers)") != std::string::npos);
  CHECK(r.out.find("local: theta 10000 default") != std::string::npos);
  CHECK(r.out.find("global: theta 1e+06 linear") != std::string::npos);
  const auto l4 = cli({"rope", "--config", cfg("llama4_scout.json")});
  CHECK(l4.out.find("NoPE") != std::string::npos);
  CHECK(l4.out.find("log(floor((p+1)/8192)+1)*0.1+1") != std::string::npos);

  const std::string svg = (std::filesystem::temp_directory_path() / "posenc_cli_mrope_streams.svg").string();
  const auto q = cli({"rope", "--config", cfg("qwen2_5_vl_7b.json"), "--streams-plot", svg});
  REQUIRE(q.status == 0);
  CHECK(q.out.find("pair streams tttttttttttttttthhhhhhhhhhhhhhhhhhhhhhhhwwwwwwwwwwwwwwwwwwwwwwww") !=
        std::string::npos);
  std::ifstream f(svg);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  CHECK(doc.rfind("<svg", 0) == 0);
  CHECK(doc.find("mRoPE pair streams") != std::string::npos);
  std::size_t t_cells = 0;
  for (std::size_t at = doc.find("fill=\"#c0392b\" stroke"); at != std::string::npos;
       at = doc.find("fill=\"#c0392b\" stroke", at + 1))
    ++t_cells;
  CHECK(t_cells == 16);  // one temporal cell per t pair
  // a model without mRoPE: the plot is refused, naming the option
  const auto bad = cli({"rope", "--config", cfg("gemma3_4b.json"), "--streams-plot", svg});
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--streams-plot") != std::string::npos);
}

TEST_CASE("rope on a malformed per-layer config names the key", "[cli][layered]") {
  auto j = nlohmann::json::parse(std::ifstream(cfg("qwen2_5_vl_7b.json")));
  j["rope_scaling"]["mrope_section"] = {16, 24, 16};
  const std::string tmp = (std::filesystem::temp_directory_path() / "posenc_cli_bad_mrope.json").string();
  std::ofstream(tmp) << j.dump();
  const auto r = cli({"rope", "--config", tmp});
  CHECK(r.status == 2);
  CHECK(r.err.find("rope_scaling.mrope_section") != std::string::npos);
  auto g = nlohmann::json::parse(std::ifstream(cfg("gemma3_4b.json")));
  g["sliding_window_pattern"] = 40;
  std::ofstream(tmp) << g.dump();
  const auto r2 = cli({"rope", "--config", tmp});
  CHECK(r2.status == 2);
  CHECK(r2.err.find("sliding_window_pattern") != std::string::npos);
}
