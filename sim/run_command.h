// `tpusim run MODULE.hlo` (compile, simulate with real data, report, optionally check against the
// reference evaluator) and `tpusim compile MODULE.hlo -o OUT.tpuasm`.
#pragma once

#include <CLI/CLI.hpp>

#include "sim/command.h"

namespace tpusim::sim {

Command AddRunCommand(CLI::App& app);
Command AddCompileCommand(CLI::App& app);

}  // namespace tpusim::sim
