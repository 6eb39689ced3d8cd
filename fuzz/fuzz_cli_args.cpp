// fuzz/fuzz_cli_args.cpp — libFuzzer harness for the `posenc` command-line parser (CLI11, declared in
// cli/args.hpp): the input is split at NUL bytes into argv. parse_args() may only throw usage_error
// (a CLI11 exception escaping it, or any other, is a finding); --help and --version must come with
// their text; a parsed LIST holds at most max_list entries. Commands that need no files (alibi, t5,
// small sinusoidal tables) are also run in-process, where run() must return 0 or 2 and never throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "run.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> args;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == '\0') {
      args.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  posenc_cli::arguments a;
  try {
    a = posenc_cli::parse_args(args);
  } catch (const posenc_cli::usage_error& e) {
    if (std::string_view(e.what()).empty()) std::abort();  // the one stderr line names the problem
    return 0;
  }
  using posenc_cli::command;
  if ((a.cmd == command::help || a.cmd == command::version) && a.text.empty()) std::abort();
  if (a.positions && (a.positions->empty() || a.positions->size() > posenc_cli::max_list)) std::abort();
  if (a.relative && a.relative->second < a.relative->first) std::abort();
  const bool small_table =
      a.cmd != command::sinusoidal ||
      static_cast<double>(a.d_model) * static_cast<double>(a.positions ? a.positions->size() : 16) <= 1e5;
  if ((a.cmd == command::alibi || a.cmd == command::t5 || a.cmd == command::sinusoidal) && !a.plot && small_table) {
    std::ostringstream out, err;
    const int status = posenc_cli::run(std::span<const std::string_view>(args), out, err);
    if (status != 0 && status != 2) std::abort();
  }
  return 0;
}
