// The tpusim command line.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <exception>
#include <systemc>

#include "isa/error.h"
#include "sim/config_command.h"
#include "sim/exec_command.h"
#include "sim/hlo_commands.h"
#include "sim/layout_command.h"
#include "sim/logging.h"
#include "sim/opt_command.h"
#include "sim/run_command.h"
#include "sim/sweep/sweep_command.h"
#include "sim/sweep/sweep_plot.h"
#include "sim/trace_svg_command.h"

// SystemC's entry point: the program proper, run by sc_elab_and_sim from main() below.
int sc_main(int argc, char** argv) {
  CLI::App app{
      "tpusim: a cycle-approximate simulator of a TPU-style accelerator.\n"
      "It compiles XLA HLO modules for a configured chip and simulates them with real data (`run`), "
      "lays out XLA arrays byte for byte (`layout`), and runs hand-written programs (`exec`).",
      "tpusim"};
  app.set_version_flag("--version", fmt::format("tpusim 0.1.0 (SystemC {})", sc_core::sc_release()));
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "Logging detail on stderr")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(tpusim::sim::kLogLevels),
                                                     std::end(tpusim::sim::kLogLevels))))
      ->capture_default_str();
  app.require_subcommand(1);
  const tpusim::sim::Command commands[] = {
      tpusim::sim::AddLayoutCommand(app), tpusim::sim::AddParseCommand(app),
      tpusim::sim::AddEvalCommand(app), tpusim::sim::AddExecCommand(app),
      tpusim::sim::AddConfigCommand(app), tpusim::sim::AddOptCommand(app), tpusim::sim::AddCompileCommand(app),
      tpusim::sim::AddRunCommand(app), tpusim::sim::AddSweepCommand(app), tpusim::sim::AddSweepMergeCommand(app),
      tpusim::sim::AddSweepPlotCommand(app),
      tpusim::sim::AddTraceSvgCommand(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  tpusim::sim::SetUpLogging(log_level);
  try {
    for (const tpusim::sim::Command& command : commands) {
      if (command.parser->parsed()) command.run();
    }
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  // A command-line tool must not print SystemC's banner.
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
