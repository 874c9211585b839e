// The JSON report of one run (`tpusim exec --report FILE.json`), written by hand (no dependency).
#pragma once

#include <string>

#include "sim/chip/chip.h"
#include "sim/config/arch_config.pb.h"

namespace tpusim::sim {

// {"program", "config", "cycles", "device_time_us", "clock_mhz", "peak_flops_per_s",
//  "hbm_bytes_per_s", "timing_only", "tensor_cores": [{"index", "scalar_core", "vpu", "mxus",
//  "dma_engines"}, ...] (every TensorCore of the chip), "memories": [...]}
std::string RunReportJson(const RunReport& report, const ArchConfig& config, bool timing_only);

// `text` as a JSON string: quoted, with '"', '\\' and control characters escaped.
std::string JsonString(const std::string& text);

// A short human summary: time, cycles, per-unit utilization, bytes moved.
std::string RunSummary(const RunReport& report, const ArchConfig& config);

}  // namespace tpusim::sim
