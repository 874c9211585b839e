// `tpusim layout SHAPE`: how XLA lays out an array, and its device byte image.
#pragma once

#include "sim/command.h"

namespace tpusim::sim {

// Adds the `layout` subcommand to `app`.
Command AddLayoutCommand(CLI::App& app);

}  // namespace tpusim::sim
