// `tpusim exec PROGRAM.tpuasm`: assemble a program, run it on a chip built from a config, write
// its outputs (DIR/<output buffer name>.npy), a summary and optionally a JSON report.
#pragma once

#include <CLI/CLI.hpp>

#include "sim/command.h"  // Command

namespace tpusim::sim {

// Adds the `exec` subcommand to `app`.
Command AddExecCommand(CLI::App& app);

}  // namespace tpusim::sim
