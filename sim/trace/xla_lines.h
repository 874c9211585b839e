// The XLA Modules and XLA Ops lines of a trace, from the same kernel list and label marks that
// `tpusim run --report` uses (sim/module_report.h): one XLA Modules slice from device_begin to
// device_end, and one XLA Ops slice per time a kernel ran (its begin label to its end label),
// with the XLA profiler's annotations.
#pragma once

#include <string>
#include <vector>

#include "sim/chip/chip.h"
#include "sim/module_report.h"
#include "sim/trace/trace_recorder.h"

namespace tpusim::sim {

// device_begin..device_end of `run`, named `module_name`.
std::vector<XlaSlice> XlaModuleSlices(const std::string& module_name, const RunReport& run);
// In begin order: hlo_op, hlo_category, long_name, flops, bytes_accessed (and the recorder adds
// cycles).
std::vector<XlaSlice> XlaOpSlices(const ModuleReport& module, const RunReport& run);

}  // namespace tpusim::sim
