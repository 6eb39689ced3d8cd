// cli/run.hpp — `posenc` entry point as a library function: parse, dispatch, map errors to exit codes.
//
// run() never exits and never lets an exception escape: a bad command line, a missing or malformed
// file, or an invalid parameter prints ONE line on `err` ("posenc: ...") and returns 2. Exit 0 on
// success. main.cpp is a two-line wrapper, so tests and fuzzers call run() directly.
#pragma once

#include <exception>
#include <new>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "model.hpp"
#include "tour.hpp"
#if POSENC_CLI_LAB
#include "lab.hpp"
#endif

namespace posenc_cli {

/// One line: newlines in a message are flattened so the contract "one line on stderr" holds.
inline std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.rfind("posenc", 0) != 0) s = "posenc: " + s;
  return s;
}

/// Runs the command in args (argv without the program name). Returns the exit status.
inline int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  try {
    const arguments a = parse_args(args);
    switch (a.cmd) {
      case command::help:
      case command::version:
        out << a.text;
        return 0;
      default:
        break;
    }
    // The report is buffered so that a failure half-way (e.g. an unwritable --plot) prints only
    // the error line, never a truncated report.
    std::ostringstream buf;
    switch (a.cmd) {
      case command::rope:
        run_rope(a, buf);
        break;
      case command::alibi:
        run_alibi(a, buf);
        break;
      case command::t5:
        run_t5(a, buf);
        break;
      case command::sinusoidal:
        run_sinusoidal(a, buf);
        break;
      case command::tour:
        run_tour(a, buf, err);
        break;
      case command::model:
        run_model(a, buf);
        break;
      case command::lab:
#if POSENC_CLI_LAB
        if (run_lab(a, buf, err) != 0) return 1;
        break;
#else
        throw usage_error("posenc lab: this posenc was built without Eigen (the lab's trainer needs it)");
#endif
      default:
        break;
    }
    out << buf.str();
    out.flush();
    return 0;
  } catch (const usage_error& e) {
    err << one_line(e.what()) << std::endl;
  } catch (const std::bad_alloc&) {
    err << "posenc: out of memory" << std::endl;
  } catch (const std::exception& e) {
    err << one_line(e.what()) << std::endl;
  } catch (...) {
    err << "posenc: unexpected error" << std::endl;
  }
  return 2;
}

/// argc/argv form.
inline int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return run(std::span<const std::string_view>(args), out, err);
}

}  // namespace posenc_cli
