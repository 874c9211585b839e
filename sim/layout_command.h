// `tpusim layout SHAPE`: how XLA lays out an array, and its device byte image.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace tpusim::sim {

// A subcommand of `tpusim`: its CLI11 parser and what runs it once the command line is parsed.
struct Command {
  CLI::App* parser;
  std::function<void()> run;
};

// Adds the `layout` subcommand to `app`.
Command AddLayoutCommand(CLI::App& app);

}  // namespace tpusim::sim
