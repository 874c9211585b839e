// `tpusim config`: the effective architecture configuration and the peaks it implies.
#pragma once

#include <CLI/CLI.hpp>

#include "sim/command.h"  // Command

namespace tpusim::sim {

// Adds the `config` subcommand to `app`.
Command AddConfigCommand(CLI::App& app);

}  // namespace tpusim::sim
