// What `tpusim run` reports of a compiled module's run: per-kernel times from the marks the
// scalar core recorded at each kernel's labels, their FLOPs and bytes, and the roofline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/lower/compile.h"
#include "sim/chip/chip.h"
#include "sim/config/arch_config.pb.h"

namespace tpusim::sim {

struct OpReport {
  const compiler::KernelInfo* kernel = nullptr;
  uint64_t start_cycle = 0;  // first start, from device_begin
  uint64_t occurrences = 0;  // times it ran (a kernel in a loop body runs once per iteration)
  uint64_t cycles = 0;       // summed over every time it ran
  double start_us = 0;
  double time_us = 0;        // likewise summed
  double flops = 0;          // likewise summed: the kernel's FLOPs x occurrences
  uint64_t bytes_accessed = 0;  // likewise summed
  std::string bound;         // "compute", "memory" or "other"
};

struct ModuleReport {
  uint64_t device_cycles = 0;  // device_begin to device_end: the kernels, host transfers excluded
  double device_time_us = 0;
  double total_time_us = 0;    // the whole run, host transfers included
  double flops = 0;
  uint64_t bytes_accessed = 0;
  std::vector<OpReport> ops;   // in the order they first ran
  uint64_t hbm_peak_bytes = 0;   // the program's HBM: the highest address its buffers use
  uint64_t host_peak_bytes = 0;  // likewise in host memory
  compiler::LivePeak hbm_live_peak;  // where the most HBM bytes are live, and the largest there
};

// The labels Chip::set_marked_labels must watch for MakeModuleReport.
std::vector<std::string> MarkedLabels(const compiler::CompiledModule& compiled);

// An op is compute-bound when its FLOPs at the peak take longer than its bytes at HBM bandwidth,
// memory-bound otherwise, and "other" when neither takes half of its simulated time (fixed costs,
// latency and pipeline fill dominate).
ModuleReport MakeModuleReport(const compiler::CompiledModule& compiled, const RunReport& run,
                              const ArchConfig& config);

// The JSON of issue 5: device_time_us, total_time_us, cycles (the device's), total_cycles, clock_mhz, peak_flops_per_s,
// hbm_bytes_per_s, ops [...], memory (HBM and host peaks; the instruction where the most HBM bytes
// are live, how many, and the largest buffers there), and the run's per-unit statistics
// (RunReportJson).
std::string ModuleReportJson(const ModuleReport& module, const RunReport& run, const ArchConfig& config,
                             bool timing_only);

// The terminal summary: time, the top ops by time, and the module's roofline position.
std::string ModuleSummary(const std::string& module_name, const ModuleReport& module, const RunReport& run,
                          const ArchConfig& config, std::size_t top = 10);

}  // namespace tpusim::sim
