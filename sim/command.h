// A subcommand of `tpusim`: its CLI11 parser and what runs it once the whole command line has
// been parsed (so that logging is set up first).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace tpusim::sim {

struct Command {
  CLI::App* parser;
  std::function<void()> run;
};

}  // namespace tpusim::sim
