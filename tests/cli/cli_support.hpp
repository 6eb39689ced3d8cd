// tests/cli/cli_support.hpp — running the posenc CLI in-process for the CLI tests: its exit status
// and both streams, and the error contract (exit 2, nothing on stdout, one line on stderr).
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "run.hpp"

namespace posenc_cli_test {

struct result {
  int status;
  std::string out, err;
};

inline result cli(std::vector<std::string> args) {
  std::vector<std::string_view> v(args.begin(), args.end());
  std::ostringstream out, err;
  const int s = posenc_cli::run(std::span<const std::string_view>(v), out, err);
  return {s, out.str(), err.str()};
}

/// Expects exit 2, nothing on stdout and exactly one line on stderr starting "posenc" and
/// containing `needle`.
inline void expect_error(std::vector<std::string> args, const std::string& needle) {
  const auto r = cli(std::move(args));
  INFO("stderr: " << r.err);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.rfind("posenc", 0) == 0);
  CHECK(r.err.find(needle) != std::string::npos);
}

}  // namespace posenc_cli_test
