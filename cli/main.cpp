// cli/main.cpp — the `posenc` command-line inspector (see cli/run.hpp and `posenc --help`).
#include <iostream>

#include "run.hpp"

int main(int argc, char** argv) {
  return posenc_cli::run(argc, argv, std::cout, std::cerr);
}
