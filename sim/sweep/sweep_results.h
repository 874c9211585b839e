// A sweep's results: each point's row read from its `tpusim run --report` JSON, and
// DIR/results.csv written, read back and merged (`tpusim sweep-merge`).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/sweep/sweep_plan.h"

namespace tpusim::sim {

// One point's outcome.
struct PointResult {
  const SweepPoint* point = nullptr;
  bool ok = false;
  std::string error;                       // why it failed
  double device_time_us = 0;
  double total_time_us = 0;                // host transfers included
  double flops = 0;
  double bytes_accessed = 0;
  double peak_flops_per_s = 0;
  double hbm_bytes_per_s = 0;
  std::map<std::string, double> category_time_us;  // the ops' time by category (XLA's op profile)
};

// The result of `point` from the report JSON at `report_path` (throws tpusim::Error naming the
// file if it is not a report).
PointResult ReadPointReport(const SweepPoint& point, const std::string& report_path);

// A CSV table: a header and rows of as many fields.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// results.csv of `results` (in the order given): id, workload, config, one column per axis,
// status, device_time_us, total_time_us, flops, bytes_accessed, flops_per_byte,
// ridge_flops_per_byte, bound (compute or memory, by the roofline), mxu_utilization and
// hbm_utilization (of the chip's peaks over the device time), one time_us.<category> column per op
// category of any point, and error. Failed points have status "failed", the error, and no numbers.
CsvTable ResultsTable(const SweepPlan& plan, const std::vector<PointResult>& results);

// RFC 4180: fields with a comma, a quote or a line break in quotes, quotes doubled; "\n" line ends.
std::string FormatCsv(const CsvTable& table);
// The inverse; throws tpusim::Error `SOURCE:LINE: ...` for a row whose field count differs from
// the header's or an unterminated quote.
CsvTable ParseCsv(std::string_view text, const std::string& source);

// Shards' tables as one, in the order of `ids` (every point of the sweep), columns in the first
// table's order followed by any others'. Throws tpusim::Error naming the ids of points that are in
// two shards or in none.
CsvTable MergeResults(const std::vector<CsvTable>& shards, const std::vector<std::string>& ids);

}  // namespace tpusim::sim
