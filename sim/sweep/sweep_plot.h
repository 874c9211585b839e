// `tpusim sweep-plot DIR [--cost COLUMN]`: a sweep's results as SVG charts (device time against
// each axis; a Pareto front of device time against a cost column; every op of every point on the
// roofline) in DIR/plots/, all of them inline in DIR/index.html with the results table, a page
// that opens in a browser without a server. docs/sweeps.md.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "sim/command.h"
#include "sim/sweep/sweep_results.h"
#include "sim/sweep/svg_chart.h"

namespace tpusim::sim {

// The charts of a results table (results.csv read back): one per axis column (the columns
// between `config` and `status`), x numeric where every value is a number (log where they span
// 8x or more) and categories otherwise, a line per combination of the workload, the config and
// the other axes; and, where `cost` names a numeric column, device time against it with the
// Pareto front (the points no other point beats in both).
std::vector<Chart> SweepCharts(const CsvTable& results, const std::string& cost);

Command AddSweepPlotCommand(CLI::App& app);

}  // namespace tpusim::sim
