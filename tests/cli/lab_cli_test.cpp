// `posenc lab` end to end on a tiny budget: the table has a row per encoding and per evaluation-time
// scaling, the files are written, the result does not depend on the thread count, and bad names
// are one error line.
#if POSENC_CLI_LAB
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "cli_support.hpp"

namespace {

std::string lab_table(const std::string& threads, const std::string& dir) {
  const auto r = posenc_cli_test::cli({"lab", "--encoders", "rope,alibi,t5", "--steps", "3", "--batch", "2",
                                       "--train-len", "16", "--eval-tokens", "64", "--threads", threads, "--out", dir});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto at = r.out.find("| encoding |");
  REQUIRE(at != std::string::npos);
  return r.out.substr(at, r.out.find("\nwritten:") - at);
}

}  // namespace

TEST_CASE("lab: a row per encoding, the files written, the same table on 1 and 2 threads") {
  const auto dir = (std::filesystem::temp_directory_path() / "posenc_lab_cli_test").string();
  const std::string one = lab_table("1", dir), two = lab_table("2", dir + "2");
  for (const char* row : {"| rope |", "| alibi |", "| t5 |", "| rope-pi (eval) |", "| rope-yarn (eval) |"})
    CHECK(one.find(row) != std::string::npos);
  CHECK(one.find("| 16 (L) windows | 32 (2L) windows | 64 (4L) windows | 128 (8L) windows | 256 (16L) windows |") !=
        std::string::npos);
  CHECK(one == two);
  std::ifstream svg(dir + "/lab.svg");
  std::stringstream text;
  text << svg.rdbuf();
  CHECK(text.str().find("</svg>") != std::string::npos);
  CHECK(std::filesystem::file_size(dir + "/lab.md") > 0);
}

TEST_CASE("lab: FIRE and KERPLE train, and several seeds give a mean with its spread") {
  const auto dir = (std::filesystem::temp_directory_path() / "posenc_lab_cli_seeds").string();
  const std::vector<std::string> run = {"lab",
                                        "--encoders",
                                        "fire,kerple,kerple-power",
                                        "--rope-scalings",
                                        "none",
                                        "--steps",
                                        "3",
                                        "--batch",
                                        "2",
                                        "--train-len",
                                        "16",
                                        "--eval-tokens",
                                        "64",
                                        "--out",
                                        dir};
  auto two = run;
  two.insert(two.end(), {"--seeds", "2"});
  const auto r1 = posenc_cli_test::cli(run), r2 = posenc_cli_test::cli(two);
  INFO(r1.err << r2.err);
  REQUIRE(r1.status == 0);
  REQUIRE(r2.status == 0);
  for (const char* row : {"| fire | ", "| kerple | ", "| kerple-power | "}) {
    CHECK(r1.out.find(row) != std::string::npos);
    CHECK(r2.out.find(row) != std::string::npos);
  }
  CHECK(r1.out.find(" ± ") == std::string::npos);
  CHECK(r2.out.find(" ± ") != std::string::npos);
  CHECK(r2.out.find("over 2 seeds") != std::string::npos);
  CHECK(r2.out.find("seeds 1 to 2") != std::string::npos);
  std::ifstream svg(dir + "/lab.svg");
  std::stringstream text;
  text << svg.rdbuf();
  CHECK(text.str().find("<polygon") != std::string::npos);  // the spread's bands
}

TEST_CASE("lab: DeBERTa and CoPE train, and the sliding-window evaluation is a column of its own") {
  const auto dir = (std::filesystem::temp_directory_path() / "posenc_lab_cli_deberta").string();
  const auto r = posenc_cli_test::cli({"lab", "--encoders", "deberta,cope", "--rope-scalings", "none", "--steps", "3",
                                       "--batch", "2", "--train-len", "16", "--eval-tokens", "64", "--eval", "both",
                                       "--sliding-tokens", "4", "--out", dir});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("| deberta | ") != std::string::npos);
  CHECK(r.out.find("| cope | ") != std::string::npos);
  CHECK(r.out.find("| 256 (16L) windows | 16 (L) sliding |") != std::string::npos);
  CHECK(r.out.find("nan") == std::string::npos);
  posenc_cli_test::expect_error({"lab", "--eval", "overlapping"}, "--eval");
}

TEST_CASE("lab: unknown encodings and scalings without RoPE are one error line") {
  posenc_cli_test::expect_error({"lab", "--encoders", "rope,fourier"}, "unknown encoder 'fourier'");
  posenc_cli_test::expect_error({"lab", "--encoders", "alibi"}, "add rope to the encoders");
  posenc_cli_test::expect_error({"lab", "--steps", "0"}, "--steps");
  posenc_cli_test::expect_error({"lab", "--seeds", "0"}, "--seeds");
}
#endif
