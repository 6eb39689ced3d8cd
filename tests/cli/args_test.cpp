// tests/cli/args_test.cpp — the command line on CLI11 (cli/args.hpp): the LIST, A:B, integer and
// number validators (valid, invalid and edge values), the messages CLI11's refusals become, and
// that every option is declared once: `posenc <command> --help` lists exactly the options of the
// synopsis in docs/cli.md, each once and with a description.
#include "args.hpp"

#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli_support.hpp"

using posenc_cli_test::cli;
using posenc_cli_test::expect_error;

namespace {

posenc_cli::arguments parsed_args(std::vector<std::string> args) {
  const std::vector<std::string_view> v(args.begin(), args.end());
  return posenc_cli::parse_args(v);
}

std::vector<std::int64_t> listed(const std::string& list) {
  const auto a = parsed_args({"sinusoidal", "--d-model", "8", "--positions", list});
  REQUIRE(a.positions);
  return *a.positions;
}

/// The validator's verdict on `s`: empty when accepted, else the message.
std::string verdict(const CLI::Validator& v, std::string s) {
  return v(s);
}

std::vector<std::int64_t> range_values(std::int64_t a, std::int64_t b) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = a; x <= b; ++x) v.push_back(x);
  return v;
}

}  // namespace

TEST_CASE("LIST: integers and inclusive ranges, in the order given") {
  CHECK(listed("0,1,8:15") == std::vector<std::int64_t>{0, 1, 8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(listed("7") == std::vector<std::int64_t>{7});
  CHECK(listed("4:4") == std::vector<std::int64_t>{4});  // a one-value range
  CHECK(listed("-3:-1,+5,-7") == std::vector<std::int64_t>{-3, -2, -1, 5, -7});
  CHECK(listed("-2:1") == std::vector<std::int64_t>{-2, -1, 0, 1});
  CHECK(listed("3,3,1") == std::vector<std::int64_t>{3, 3, 1});  // duplicates and order kept
  CHECK(listed("010") == std::vector<std::int64_t>{10});         // decimal, never octal
  // The extreme magnitudes accepted, 2^62 either side.
  CHECK(listed("4611686018427387904,-4611686018427387904") ==
        std::vector<std::int64_t>{std::int64_t{1} << 62, -(std::int64_t{1} << 62)});
  // Exactly max_list entries is allowed.
  CHECK(listed("0:65535") == range_values(0, 65535));
  CHECK(listed("0:65534,9") == [] {
    auto v = range_values(0, 65534);
    v.push_back(9);
    return v;
  }());
  // rope takes the same syntax through the same declaration.
  const auto r = parsed_args({"rope", "--config", "x.json", "--positions=0,4095"});
  REQUIRE(r.positions);
  CHECK(*r.positions == std::vector<std::int64_t>{0, 4095});
}

TEST_CASE("LIST: the validator refuses bad syntax, reversed ranges, overflow and too many entries") {
  const CLI::Validator list = posenc_cli::int_list();
  CHECK(verdict(list, "0,1,8:15").empty());
  CHECK(verdict(list, "") == "empty list");
  CHECK(verdict(list, ",") == ",: empty list item");
  CHECK(verdict(list, "1,,2") == "1,,2: empty list item");
  CHECK(verdict(list, "1,") == "1,: empty list item");
  CHECK(verdict(list, ",1") == ",1: empty list item");
  CHECK(verdict(list, "5:1") == "5:1: range end before its start");
  CHECK(verdict(list, "0,-1:-2") == "-1:-2: range end before its start");
  CHECK(verdict(list, "a") == "a: not an integer");
  CHECK(verdict(list, "1.5") == "1.5: not an integer");
  CHECK(verdict(list, "0x10") == "0x10: not an integer");
  CHECK(verdict(list, " 1") == " 1: not an integer");
  CHECK(verdict(list, "1 ") == "1 : not an integer");
  CHECK(verdict(list, "1:2:3") == "2:3: not an integer");
  CHECK(verdict(list, ":3") == ":3: not an integer");
  CHECK(verdict(list, "3:") == ": not an integer");
  CHECK(verdict(list, "--1") == "--1: not an integer");
  // Overflow: beyond 2^62, beyond int64, and a range whose length does not fit int64.
  CHECK(verdict(list, "4611686018427387905") ==
        "4611686018427387905: out of range [-4611686018427387904, "
        "4611686018427387904]");
  CHECK(verdict(list, "-4611686018427387905").find("out of range") != std::string::npos);
  CHECK(verdict(list, "99999999999999999999").find("out of range") != std::string::npos);
  CHECK(verdict(list, "-4611686018427387904:4611686018427387904") ==
        "-4611686018427387904:4611686018427387904: more than 65536 entries");
  CHECK(verdict(list, "0:65536") == "0:65536: more than 65536 entries");
  CHECK(verdict(list, "0:65535,1") == "more than 65536 entries");
  CHECK(verdict(list, "0:40000,0:40000") == "more than 65536 entries");
  // Through the parser: the option is named, one line.
  expect_error({"sinusoidal", "--d-model", "8", "--positions", ""}, "posenc sinusoidal: --positions: empty list");
  expect_error({"sinusoidal", "--d-model", "8", "--positions", "9:2"}, "--positions: 9:2: range end before its start");
  expect_error({"rope", "--config", "x.json", "--positions", "0:70000"},
               "--positions: 0:70000: more than 65536 entries");
  expect_error({"rope", "--config", "x.json", "--positions"}, "--positions: 1 required LIST missing");
}

TEST_CASE("A:B: one range, A <= B, at most 65536 values") {
  const CLI::Validator range = posenc_cli::int_range();
  CHECK(verdict(range, "-3:4").empty());
  CHECK(verdict(range, "2:2").empty());
  CHECK(verdict(range, "3") == "3: expected A:B");
  CHECK(verdict(range, "") == ": expected A:B");
  CHECK(verdict(range, "3:1") == "3:1: B is less than A");
  CHECK(verdict(range, "0:65536") == "0:65536: more than 65536 entries");
  CHECK(verdict(range, "0:65535").empty());
  CHECK(verdict(range, "1,2:3") == "1,2: not an integer");
  const auto a = parsed_args({"t5", "--relative=-40:40"});
  REQUIRE(a.relative);
  CHECK(*a.relative == std::pair<std::int64_t, std::int64_t>{-40, 40});
}

TEST_CASE("integers: base 10 only, range-checked, and converted to exactly the checked value") {
  CHECK(parsed_args({"alibi", "--heads", "010"}).heads == 10);  // CLI11's strtoll base 0 would read 8
  CHECK(parsed_args({"alibi", "--heads", "+7"}).heads == 7);
  CHECK(parsed_args({"alibi", "--heads", "4096"}).heads == 4096);
  CHECK(parsed_args({"t5", "--buckets", "1048576"}).buckets == 1048576);
  CHECK(parsed_args({"t5", "--max-distance", "1073741824"}).max_distance == 1073741824);
  CHECK(parsed_args({"rope", "--config", "x", "--seq-len", "4611686018427387904"}).seq_len == std::int64_t{1} << 62);
  expect_error({"alibi", "--heads", "0x10"}, "--heads: 0x10: not an integer");
  expect_error({"alibi", "--heads", " 5"}, "--heads:  5: not an integer");
  expect_error({"alibi", "--heads", "4097"}, "--heads: 4097: out of range [1, 4096]");
  expect_error({"alibi", "--heads", "-1"}, "--heads: -1: out of range [1, 4096]");
  expect_error({"t5", "--buckets", "1048577"}, "--buckets");
  expect_error({"rope", "--config", "x", "--seq-len", "4611686018427387905"}, "--seq-len");
}

TEST_CASE("max-bias: finite numbers, read with one correct rounding") {
  // The defaults and ordinary values.
  CHECK(parsed_args({"alibi", "--heads", "8"}).max_bias == 8);
  for (const char* s : {"0.1", "8", "-2.5", "-0", "1e-300", "5e-324", "1e300", "0.30000000000000004"}) {
    INFO(s);
    double want = 0;
    std::from_chars(s, s + std::strlen(s), want);
    CHECK(std::bit_cast<std::uint64_t>(parsed_args({"alibi", "--heads", "8", "--max-bias", s}).max_bias) ==
          std::bit_cast<std::uint64_t>(want));
  }
  // Just above the midpoint of 1 and its successor: the correct double is 1 + 2^-52. Read as an x87
  // long double (where the midpoint is exact) and then cast, it would round to even, 1.
  const char* above_mid = "1.000000000000000111022302462515654042363166809082031250000001";
  CHECK(parsed_args({"alibi", "--heads", "8", "--max-bias", above_mid}).max_bias == 1.0000000000000002);
  expect_error({"alibi", "--heads", "8", "--max-bias", "inf"}, "--max-bias: inf: not a finite number");
  expect_error({"alibi", "--heads", "8", "--max-bias", "1e301"}, "not a finite number");
  expect_error({"alibi", "--heads", "8", "--max-bias", "0x1p3"}, "not a finite number");
  expect_error({"alibi", "--heads", "8", "--max-bias", ""}, "not a finite number");
}

TEST_CASE("CLI11 refusals become one line naming the command and the problem") {
  expect_error({}, "posenc: no command given");
  expect_error({"--bogus"}, "posenc: unknown option --bogus");
  expect_error({"Rope"}, "unknown command 'Rope' (commands: rope, alibi, t5, sinusoidal, model, tour, lab)");
  expect_error({"alibi", "--heads", "2", "--config", "x"}, "posenc alibi: unknown option --config (see posenc");
  expect_error({"alibi", "--heads", "2", "stray"}, "posenc alibi: unexpected argument 'stray'");
  expect_error({"alibi", "--heads", "2", "--", "x"}, "unexpected argument 'x'");
  expect_error({"t5", "--causal", "--causal"}, "posenc t5: --causal given more than once");
  expect_error({"t5", "--buckets", "8", "--buckets", "9"}, "posenc t5: --buckets given more than once");
  expect_error({"tour", "--out", ""}, "posenc tour: --out: empty directory name");
  expect_error({"rope", "--config", ""}, "posenc rope: --config: empty file name");
  expect_error({"alibi", "--heads", "2", "--plot="}, "--plot: 1 required FILE.svg missing");
  expect_error({"alibi", "--heads", "2", "--plot", ""}, "--plot: empty file name");
  expect_error({"model", "--supported-markdown", "--config", "x"}, "--config excludes --supported-markdown");
  expect_error({"rope", "--config", "x", "--angle-mode", "fast"}, "--angle-mode: fast not in {exact,reference_fp32}");
  expect_error({"rope", "--config", "x", "--version"}, "unknown option --version");
}

TEST_CASE("help per command, exit 0, nothing on stderr; version") {
  auto r = cli({"--help"});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  for (const char* c : {"rope", "alibi", "t5", "sinusoidal", "model", "tour"})
    CHECK(r.out.find(c) != std::string::npos);
  CHECK(r.out.find("LIST: comma-separated integers or inclusive ranges A:B") != std::string::npos);
  CHECK(cli({"-h"}).out == r.out);
  for (const char* c : {"rope", "alibi", "t5", "sinusoidal", "model", "tour"}) {
    INFO(c);
    r = cli({c, "--help"});
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find("Usage: posenc " + std::string(c) + " [OPTIONS]") != std::string::npos);
    CHECK(cli({c, "-h"}).out == r.out);
  }
  // --help wins over missing required options.
  CHECK(cli({"alibi", "--help"}).status == 0);
  r = cli({"--version"});
  CHECK(r.status == 0);
  CHECK(r.out == posenc_cli::version_text() + "\n");
}

TEST_CASE("every option is declared once: --help lists the docs/cli.md synopsis, each option once") {
  // The synopsis lines of docs/cli.md ("posenc <command> ..."): the options each command takes.
  std::ifstream f(std::string(POSENC_SOURCE_DIR) + "/docs/cli.md");
  REQUIRE(f);
  std::map<std::string, std::set<std::string>> documented;
  const std::regex option("--[a-z][a-z-]*");
  for (std::string line; std::getline(f, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, std::regex("^posenc (rope|alibi|t5|sinusoidal|model|tour|lab)( |$)"))) continue;
    auto& set = documented[m[1]];
    for (auto it = std::sregex_iterator(line.begin(), line.end(), option); it != std::sregex_iterator(); ++it)
      set.insert(it->str());
  }
  REQUIRE(documented.size() == 7);
  for (const auto& [cmd, opts] : documented) {
    INFO(cmd);
    const auto r = cli({cmd, "--help"});
    REQUIRE(r.status == 0);
    // Option lines: "  --name TYPE...  description" (and "  -h,--help ..."); a description that
    // does not fit goes on the next line, indented.
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::multiset<std::string> listed;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::smatch m;
      if (!std::regex_search(lines[i], m, std::regex("^  (?:-[a-z],)?(--[a-z][a-z-]*)(.*)$"))) continue;
      listed.insert(m[1]);
      INFO(lines[i]);
      const bool described = std::regex_search(lines[i], std::regex("^  \\S.*\\S {2,}\\S")) ||
                             (i + 1 < lines.size() && std::regex_search(lines[i + 1], std::regex("^ {20,}\\S")));
      CHECK(described);
    }
    std::set<std::string> want = opts;
    want.insert("--help");
    CHECK(std::set<std::string>(listed.begin(), listed.end()) == want);
    for (const auto& o : want) CHECK(listed.count(o) == 1);
    // An option of another command is refused here (after the required options, which are checked
    // first).
    const std::map<std::string, std::vector<std::string>> required = {{"rope", {"--config", "x"}},
                                                                      {"alibi", {"--heads", "1"}},
                                                                      {"sinusoidal", {"--d-model", "8"}},
                                                                      {"model", {"--supported-markdown"}},
                                                                      {"t5", {}},
                                                                      {"tour", {}},
                                                                      {"lab", {}}};
    for (const auto& [other, other_opts] : documented)
      for (const auto& o : other_opts)
        if (!want.count(o)) {
          std::vector<std::string> args{cmd};
          for (const auto& x : required.at(cmd)) args.push_back(x);
          args.push_back(o);
          const auto e = cli(args);
          INFO(o);
          CHECK(e.status == 2);
          CHECK(e.err.find("unknown option " + o) != std::string::npos);
        }
  }
}

TEST_CASE("defaults: the struct's values when an option is absent") {
  const auto t5 = parsed_args({"t5"});
  CHECK(t5.cmd == posenc_cli::command::t5);
  CHECK(t5.buckets == 32);
  CHECK(t5.max_distance == 128);
  CHECK_FALSE(t5.causal);
  CHECK_FALSE(t5.relative);
  CHECK_FALSE(t5.json);
  CHECK_FALSE(t5.plot);
  const auto s = parsed_args({"sinusoidal", "--d-model", "16"});
  CHECK(s.layout == "interleaved");
  CHECK_FALSE(s.positions);
  const auto rope = parsed_args({"rope", "--config", "c.json", "--angle-mode", "reference_fp32", "--json"});
  CHECK(rope.reference_fp32());
  CHECK(rope.json);
  CHECK(rope.config == "c.json");
  CHECK(parsed_args({"tour"}).out_dir == "posenc-tour");
  CHECK(parsed_args({"model", "--supported-markdown"}).supported_markdown);
  // --help shows the defaults from the same declarations.
  const auto h = cli({"t5", "--help"}).out;
  CHECK(h.find("=32") != std::string::npos);
  CHECK(h.find("=128") != std::string::npos);
}
