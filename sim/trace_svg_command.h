// `tpusim trace-svg TRACE.perfetto-trace -o OUT.svg`: checks a Perfetto trace (plain or .gz) and
// renders it as an SVG timeline (traces/trace_svg.h), for documents and a first look.
#pragma once

#include <CLI/CLI.hpp>

#include "sim/command.h"  // Command

namespace tpusim::sim {

// Adds the `trace-svg` subcommand to `app`.
Command AddTraceSvgCommand(CLI::App& app);

}  // namespace tpusim::sim
