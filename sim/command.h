// A subcommand of `tpusim`: its CLI11 parser and what runs it once the whole command line has
// been parsed (so that logging is set up first).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tpusim::sim {

struct Command {
  CLI::App* parser;
  std::function<void()> run;
};

// `--config FILE|PRESET` and the repeatable `--set PATH=VALUE` of the commands that build a chip.
void AddConfigOptions(CLI::App* command, std::string& config, std::vector<std::string>& overrides);
// `--max-instructions N` of the commands that run a program (models::ScalarCoreParams).
void AddMaxInstructionsOption(CLI::App* command, uint64_t& max_instructions);
// --no-reuse: simulate every segment of a timing-only run (sim/chip/segment_replay.h).
void AddNoReuseFlag(CLI::App* command, bool& no_reuse);

}  // namespace tpusim::sim
