// A sweep file (sim/config/sweep.proto, docs/sweeps.md) read and expanded into its points: each
// point one workload run timing-only on one configuration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/module_loading.h"

namespace tpusim::sim {

struct SweepPoint {
  std::size_t index = 0;
  // "0007-1a2b3c4d": the point's place in the sweep and a hash of what it runs, so that a report
  // left by another sweep (or an edited one) is never taken for this point's.
  std::string id;
  std::string workload;              // its name
  std::string hlo_path;              // resolved against the sweep file's directory
  std::string config;                // as the sweep names it (a preset, or a file)
  std::string config_path;           // resolved
  std::vector<std::string> overrides;  // --set assignments: the sweep's, the workload's, the axes'
  std::vector<std::string> axis_values;  // one per axis, as --set takes it
  DeviceCountFlags devices;
  int64_t device_id = 0;
};

struct SweepPlan {
  std::string source;                   // the sweep file
  std::string name;
  std::vector<std::string> axis_paths;  // the axes' --set paths, in order
  std::vector<SweepPoint> points;       // workloads, then configs, then the axes' combinations
};

// Reads and expands the sweep at `path`. Throws tpusim::Error with `path:line:col` for a bad file
// (syntax, unknown fields, a workload without `hlo` or whose file does not exist, an axis without
// values or with both values and a range, a bad range, zipped axes of different lengths, two axes
// or workloads of one name), and with the axis's place for a --set path the configuration does
// not have, or a value it refuses: before any point runs.
SweepPlan LoadSweep(const std::string& path);

// "axis=value, axis=value" of a point, for progress lines and errors.
std::string DescribeAxes(const SweepPlan& plan, const SweepPoint& point);

}  // namespace tpusim::sim
