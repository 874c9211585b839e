// `tpusim sweep SWEEP.pbtxt -o DIR` (every point of a sweep as a `tpusim run --timing-only`
// process, results.csv; resumable, shardable) and `tpusim sweep-merge DIR... -o DIR`.
// docs/sweeps.md.
#pragma once

#include <CLI/CLI.hpp>

#include "sim/command.h"

namespace tpusim::sim {

Command AddSweepCommand(CLI::App& app);
Command AddSweepMergeCommand(CLI::App& app);

}  // namespace tpusim::sim
