// tests/cli/cli_test.cpp — the posenc CLI in-process: golden values on real model configs, the JSON
// field contract, plots, and error handling (exit 2, exactly one line on stderr).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "support/check.hpp"
#include "support/golden.hpp"

using posenc_cli_test::cli;
using posenc_cli_test::expect_error;

namespace {

std::string config(const std::string& name) {
  return std::string(POSENC_GOLDEN_DIR) + "/configs/" + name;
}

nlohmann::json rope_json(const std::string& file, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"rope", "--config", config(file), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = cli(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  REQUIRE(r.err.empty());
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("rope --json on real model configs matches rope_configs.json (inv_freq rtol 1e-13, attention_scaling)") {
  const auto golden = posenc_test::load_golden("rope_configs.json");
  const std::pair<const char*, const char*> cases[] = {
      {"llama2_7b.json", "llama2_7b_default"},
      {"llama3_1_8b.json", "llama3_1_8b_llama3"},
      {"mistral_7b_v0_1.json", "mistral_7b_v0_1_default"},
      {"qwen2_7b_instruct_yarn.json", "qwen2_7b_instruct_yarn4"},
      {"gpt_neox_20b.json", "gpt_neox_20b_partial"},
  };
  for (const auto& [file, id] : cases) {
    INFO(file);
    const auto& c = posenc_test::golden_case(golden, id);
    const auto j = rope_json(file);
    CHECK(j.at("rope_type") == c.at("rope_type"));
    CHECK(j.at("rotary_dim") == c.at("rotary_dim"));
    const auto inv = j.at("inv_freq").get<std::vector<double>>();
    POSENC_CHECK_CLOSE(inv, posenc_test::flatten(c.at("expected").at("inv_freq_fp64")), 0.0, 1e-13);
    CHECK(j.at("attention_scaling").get<double>() ==
          Approx(c.at("expected").at("attention_scaling").get<double>()).epsilon(1e-13));
    CHECK(j.at("softmax_scale_multiplier").get<double>() == 1.0);
  }
}

TEST_CASE("rope --json cos/sin match rope_apply.json fp64full (atol 1e-12 + 2.5e-16 * pos)") {
  const auto golden = posenc_test::load_golden("rope_apply.json");
  const std::pair<const char*, const char*> files[] = {
      {"llama2_7b_default", "llama2_7b.json"},
      {"llama3_1_8b_llama3", "llama3_1_8b.json"},
      {"qwen2_7b_instruct_yarn4", "qwen2_7b_instruct_yarn.json"},
      {"gpt_neox_20b_partial", "gpt_neox_20b.json"},
  };
  int checked = 0;
  for (const auto& c : golden.at("cases")) {
    if (c.at("layout") != "rotate_half") continue;
    const std::string cfg = c.at("config_case").get<std::string>();
    const char* file = nullptr;
    for (const auto& [id, f] : files)
      if (cfg == id) file = f;
    if (!file) continue;
    INFO(c.at("id").get<std::string>());
    const auto pos = c.at("positions").get<std::vector<std::int64_t>>();
    std::string list;
    for (auto p : pos) list += (list.empty() ? "" : ",") + std::to_string(p);
    const auto j = rope_json(file, {"--positions", list});
    CHECK(j.at("positions").get<std::vector<std::int64_t>>() == pos);
    const auto R = c.at("rotary_dim").get<std::size_t>(), P = R / 2;
    for (std::size_t t = 0; t < pos.size(); ++t) {
      // The golden columns are [phi, phi] (rotate_half, length R); the CLI prints one per pair.
      const auto& ec = c.at("expected").at("cos_fp64full")[t];
      const auto& es = c.at("expected").at("sin_fp64full")[t];
      const auto gc = j.at("cos")[t].get<std::vector<double>>(), gs = j.at("sin")[t].get<std::vector<double>>();
      REQUIRE(gc.size() == P);
      std::vector<double> wc(P), ws(P), wc2(P), ws2(P);
      for (std::size_t k = 0; k < P; ++k) {
        wc[k] = ec[k].get<double>();
        ws[k] = es[k].get<double>();
        wc2[k] = ec[k + P].get<double>();
        ws2[k] = es[k + P].get<double>();
      }
      const double atol = 1e-12 + 2.5e-16 * static_cast<double>(pos[t]);
      POSENC_CHECK_CLOSE(gc, wc, atol, 0.0);
      POSENC_CHECK_CLOSE(gs, ws, atol, 0.0);
      POSENC_CHECK_CLOSE(gc, wc2, atol, 0.0);
      POSENC_CHECK_CLOSE(gs, ws2, atol, 0.0);
      ++checked;
    }
  }
  CHECK(checked >= 20);
}

TEST_CASE("rope --angle-mode reference_fp32 reproduces HF float32 cos/sin (default and partial schedules)") {
  // Default-schedule models: HF's own float32 inv_freq, float32 angle and cos/sin, at every golden
  // position (0 to 65535); atol 2e-6 as the golden README allows for libm differences.
  const auto golden = posenc_test::load_golden("rope_apply.json");
  for (const auto& [file, id] :
       std::vector<std::pair<std::string, std::string>>{{"llama2_7b.json", "llama2_7b_default_apply_small_pos"},
                                                        {"llama2_7b.json", "llama2_7b_default_apply_mid_pos"},
                                                        {"gpt_neox_20b.json", "gpt_neox_20b_partial_apply_small_pos"},
                                                        {"gpt_neox_20b.json", "gpt_neox_20b_partial_apply_mid_pos"}}) {
    INFO(id);
    const auto& c = posenc_test::golden_case(golden, id);
    std::string list;
    for (const auto& p : c.at("positions")) list += (list.empty() ? "" : ",") + std::to_string(p.get<std::int64_t>());
    const auto j = rope_json(file, {"--positions", list, "--angle-mode", "reference_fp32"});
    CHECK(j.at("angle_mode") == "reference_fp32");
    for (std::size_t t = 0; t < c.at("positions").size(); ++t) {
      const auto gc = j.at("cos")[t].get<std::vector<double>>();
      const auto gs = j.at("sin")[t].get<std::vector<double>>();
      for (std::size_t k = 0; k < gc.size(); ++k) {
        CHECK(static_cast<double>(static_cast<float>(gc[k])) == gc[k]);  // float32 values
        CHECK(gc[k] == Approx(c.at("expected").at("cos_fp32")[t][k].get<double>()).margin(2e-6));
        CHECK(gs[k] == Approx(c.at("expected").at("sin_fp32")[t][k].get<double>()).margin(2e-6));
      }
    }
  }
}

TEST_CASE("rope: dynamic NTK follows --seq-len / positions; DeepSeek softmax multiplier; JSON fields") {
  const std::string dir = std::string(POSENC_GOLDEN_DIR) + "/configs/";
  const auto golden = posenc_test::load_golden("rope_configs.json");
  const auto& dyn = posenc_test::golden_case(golden, "llama2_7b_dynamic2_seq8192");
  const std::string tmp = (std::filesystem::temp_directory_path() / "posenc_cli_dynamic.json").string();
  {
    std::ofstream f(tmp);
    f << dyn.at("config").dump();
  }
  const auto r = cli({"rope", "--config", tmp, "--json", "--seq-len", "8192", "--generic"});  // no model_type
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("seq_len") == 8192);
  CHECK(j.at("length_dependent") == true);
  POSENC_CHECK_CLOSE(j.at("inv_freq").get<std::vector<double>>(),
                     posenc_test::flatten(dyn.at("expected").at("inv_freq_fp64")), 0.0, 1e-13);
  // Positions up to 8191 imply the same length (HF: max(position) + 1).
  const auto r2 = cli({"rope", "--config", tmp, "--json", "--positions", "0,8191", "--generic"});
  j = nlohmann::json::parse(r2.out);
  CHECK(j.at("seq_len") == 8192);
  POSENC_CHECK_CLOSE(j.at("inv_freq").get<std::vector<double>>(),
                     posenc_test::flatten(dyn.at("expected").at("inv_freq_fp64")), 0.0, 1e-13);

  j = rope_json("deepseek_v3.json");
  CHECK(j.at("rotary_dim") == 64);
  CHECK(j.at("rotary_offset") == 128);
  CHECK(j.at("layout") == "interleaved");
  CHECK(j.at("attention_scaling").get<double>() == Approx(1.0).epsilon(1e-15));
  const double m = 0.1 * std::log(40.0) + 1.0;
  CHECK(j.at("softmax_scale_multiplier").get<double>() == Approx(m * m).epsilon(1e-13));

  j = rope_json("gpt_oss_20b.json", {"--positions", "0:3"});
  for (const char* k : {"rope_type", "rotary_dim", "inv_freq", "attention_scaling", "softmax_scale_multiplier",
                        "positions", "cos", "sin", "wavelength", "wavelength_ratio", "warnings"})
    CHECK(j.contains(k));
  CHECK(j.at("positions").size() == 4);
  CHECK(j.at("cos").size() == 4);
  CHECK(j.at("cos")[0].size() == 32);
  CHECK(j.at("inv_freq").size() == 32);
  // Numbers round-trip: the printed inv_freq[1] reads back as the double the schedule computed.
  CHECK(j.at("inv_freq")[0].get<double>() == 1.0);
}

TEST_CASE("rope text report and plot") {
  const auto svg = (std::filesystem::temp_directory_path() / "posenc_cli_rope.svg").string();
  const auto r = cli({"rope", "--config", config("llama3_1_8b.json"), "--plot", svg});
  REQUIRE(r.status == 0);
  CHECK(r.out.find("rope_type                 llama3") != std::string::npos);
  CHECK(r.out.find("attention_scaling") != std::string::npos);
  std::ifstream f(svg);
  std::stringstream s;
  s << f.rdbuf();
  CHECK(s.str().rfind("<svg", 0) == 0);
  CHECK(s.str().find("</svg>") != std::string::npos);
  CHECK(s.str().find("<polyline") != std::string::npos);
  CHECK(s.str().find("http://www.w3.org/2000/svg") != std::string::npos);
  CHECK(s.str().find("<script") == std::string::npos);
}

TEST_CASE("alibi --json slopes match alibi_slopes.json (rtol 1e-14)") {
  const auto golden = posenc_test::load_golden("alibi_slopes.json");
  int n = 0;
  for (const auto& c : golden.at("cases")) {
    const auto h = c.at("n_heads").get<int>();
    const auto r = cli({"alibi", "--heads", std::to_string(h), "--json"});
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    POSENC_CHECK_CLOSE(j.at("slopes").get<std::vector<double>>(),
                       posenc_test::flatten(c.at("expected").at("slopes_fp64")), 0.0, 1e-14);
    ++n;
  }
  CHECK(n > 5);
}

TEST_CASE("t5 --json buckets match t5_buckets.json exactly") {
  const auto golden = posenc_test::load_golden("t5_buckets.json");
  for (const auto& c : golden.at("cases")) {
    std::vector<std::string> args{"t5",
                                  "--buckets",
                                  std::to_string(c.at("num_buckets").get<int>()),
                                  "--max-distance",
                                  std::to_string(c.at("max_distance").get<int>()),
                                  "--relative",
                                  "-300:300",
                                  "--json"};
    if (!c.at("bidirectional").get<bool>()) args.push_back("--causal");
    const auto r = cli(args);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("buckets").get<std::vector<int>>() == c.at("expected").at("bucket").get<std::vector<int>>());
  }
}

TEST_CASE("sinusoidal --json table matches sinusoidal.json (atol 1e-12)") {
  const auto golden = posenc_test::load_golden("sinusoidal.json");
  int n = 0;
  for (const auto& c : golden.at("cases")) {
    const std::string layout = c.at("layout") == "interleaved_distilbert" ? "interleaved"
                               : c.at("layout") == "concat_marian"        ? "concat"
                                                                          : "fairseq";
    const auto rows = c.at("rows").get<std::vector<std::int64_t>>();
    std::string list;
    for (auto p : rows) list += (list.empty() ? "" : ",") + std::to_string(p);
    const auto r = cli({"sinusoidal", "--d-model", std::to_string(c.at("d_model").get<int>()), "--layout", layout,
                        "--positions", list, "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    POSENC_CHECK_CLOSE(posenc_test::flatten(j.at("table")), posenc_test::flatten(c.at("expected").at("table_fp64")),
                       1e-12, 0.0);
    ++n;
  }
  CHECK(n > 0);
}

TEST_CASE("bad input: exit 2 and one line naming the problem, never a crash") {
  expect_error({}, "no command");
  expect_error({"frobnicate"}, "unknown command 'frobnicate'");
  expect_error({"rope"}, "--config is required");
  expect_error({"rope", "--config", "/nonexistent/config.json"}, "/nonexistent/config.json");
  expect_error({"rope", "--config"}, "required FILE missing");
  expect_error({"rope", "--config", config("llama2_7b.json"), "--seq-len", "0"}, "--seq-len");
  expect_error({"rope", "--config", config("llama2_7b.json"), "--positions", "1,,2"}, "--positions");
  expect_error({"rope", "--config", config("llama2_7b.json"), "--positions", "5:1"}, "--positions");
  expect_error({"rope", "--config", config("llama2_7b.json"), "--positions", "0:100000000"}, "--positions");
  expect_error({"rope", "--config", config("llama2_7b.json"), "--angle-mode", "fast"}, "--angle-mode");
  expect_error({"rope", "--config", config("llama2_7b.json"), "--json", "--json"}, "--json given more than once");
  expect_error({"rope", "--config", config("t5_base.json")}, "no rotary position embedding");
  expect_error({"rope", "--config", config("llama2_7b.json"), "--plot", "/nonexistent/dir/x.svg"}, "--plot");
  expect_error({"alibi"}, "--heads is required");
  expect_error({"alibi", "--heads", "0"}, "--heads");
  expect_error({"alibi", "--heads", "abc"}, "not an integer");
  expect_error({"alibi", "--heads", "99999999999999999999"}, "out of range");
  expect_error({"alibi", "--heads", "8", "--max-bias", "nan"}, "--max-bias");
  expect_error({"alibi", "--heads", "8", "--config", "x"}, "unknown option --config");
  expect_error({"t5", "--buckets", "2"}, "t5");
  expect_error({"t5", "--relative", "3"}, "expected A:B");
  expect_error({"t5", "--relative", "3:1"}, "B is less than A");
  expect_error({"sinusoidal"}, "--d-model is required");
  expect_error({"sinusoidal", "--d-model", "8", "--layout", "weird"}, "--layout");
  expect_error({"sinusoidal", "--d-model", "65536", "--positions", "0:1000"}, "--positions");
  expect_error({"tour", "--out", "/proc/forbidden/dir"}, "--out");

  // Malformed and invalid config files name the file or the key.
  const auto dir = std::filesystem::temp_directory_path();
  const auto bad = (dir / "posenc_cli_bad.json").string();
  std::ofstream(bad) << "{\"hidden_size\": 64,";
  expect_error({"rope", "--config", bad}, "malformed JSON");
  const auto zero = (dir / "posenc_cli_zero.json").string();
  std::ofstream(zero) << R"({"model_type":"llama","head_dim":64,"rope_scaling":{"rope_type":"yarn","factor":4,
                            "original_max_position_embeddings":4096,"beta_fast":0}})";
  expect_error({"rope", "--config", zero}, "beta_fast");
  const auto contra = (dir / "posenc_cli_contra.json").string();
  std::ofstream(contra) << R"({"model_type":"gpt_neox","head_dim":64,"rope_theta":10000,"rotary_emb_base":20000})";
  expect_error({"rope", "--config", contra}, "rotary_emb_base");
  const auto gguf = (dir / "posenc_cli_bad.gguf").string();
  std::ofstream(gguf, std::ios::binary) << "GGUF\x03";
  expect_error({"rope", "--config", gguf}, "truncated GGUF");
}

TEST_CASE("help and version exit 0") {
  auto r = cli({"--help"});
  CHECK(r.status == 0);
  CHECK(r.out.find("Usage: posenc [OPTIONS] SUBCOMMAND") != std::string::npos);
  r = cli({"rope", "--help"});
  CHECK(r.status == 0);
  r = cli({"--version"});
  CHECK(r.status == 0);
  CHECK(r.out.rfind("posenc ", 0) == 0);
}

TEST_CASE("t5 without --relative stays bounded for a huge max_distance (fuzzer timeout)") {
  const auto r = cli({"t5", "--max-distance", "1000000000", "--json"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("buckets").size() <= 65536);
  CHECK(j.at("relative")[0] == -32767);
}

TEST_CASE("tour writes its plots and reports the invariance error") {
  const auto dir = (std::filesystem::temp_directory_path() / "posenc_cli_tour").string();
  const auto r = cli({"tour", "--out", dir});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("RoPE relative invariance") != std::string::npos);
  for (const char* name : {"NoPE", "sinusoidal", "learned absolute", "RoPE + YaRN", "xPos", "ALiBi", "RoPE + ALiBi",
                           "T5 bias", "Shaw relative"}) {
    INFO(name);
    CHECK(r.out.find(name) != std::string::npos);  // every family, and a combination, runs through attention
  }
  for (const char* f : {"rope_wavelengths.svg", "alibi_heads.svg", "t5_buckets.svg", "sinusoidal.svg", "attention.svg"})
    CHECK(std::filesystem::file_size(std::filesystem::path(dir) / f) > 1000);
}
