#include "sim/chip/report_json.h"

#include <fmt/format.h>

#include "sim/config/derived.h"
#include "traces/json_writer.h"

namespace tpusim::sim {
namespace {

double Utilization(double busy, uint64_t total) {
  return total == 0 ? 0.0 : busy / static_cast<double>(total);
}

std::string VpuJson(const models::VpuStats& vpu, uint64_t cycles) {
  std::string out = fmt::format("\"vpu\": {{\"instructions\": {}, \"units\": {{", vpu.instructions);
  for (int u = 0; u < models::kVpuSubUnitCount; ++u) {
    const models::VpuUnitStats& unit = vpu.units[u];
    out += fmt::format("{}\"{}\": {{\"operations\": {}, \"busy_cycles\": {:.1f}, \"utilization\": {:.6f}}}",
                       u == 0 ? "" : ", ", models::VpuSubUnitName(static_cast<models::VpuSubUnit>(u)),
                       unit.operations, unit.busy_cycles, Utilization(unit.busy_cycles, cycles));
  }
  return out + "}}";
}

std::string MxusJson(const std::vector<models::MxuStats>& mxus, uint64_t cycles) {
  std::string out = "\"mxus\": [";
  for (std::size_t i = 0; i < mxus.size(); ++i) {
    const models::MxuStats& m = mxus[i];
    out += fmt::format("{}\n      {{\"name\": \"mxu{}\", \"rows\": {}, \"macs\": {}, \"busy_cycles\": {:.1f}, "
                       "\"fill_cycles\": {:.1f}, \"weight_load_cycles\": {:.1f}, \"utilization\": {:.6f}}}",
                       i == 0 ? "" : ",", i, m.rows, m.macs, m.busy_cycles, m.fill_cycles,
                       m.weight_load_cycles, models::MxuUtilization(m, cycles));
  }
  return out + "\n    ]";
}

std::string CoreJson(const TensorCoreReport& core, std::size_t index, uint64_t cycles) {
  const models::ScalarCoreStats& s = core.scalar_core;
  std::string out = fmt::format("    {{\"index\": {},\n     \"scalar_core\": {{", index);
  out += fmt::format(
      "\"instructions\": {}, \"dispatched_dma\": {}, \"taken_branches\": {}, \"busy_cycles\": {}, "
      "\"utilization\": {:.6f}, \"stall_cycles\": {{\"branch\": {}, \"smem\": {}, \"semaphore\": {}, "
      "\"dispatch\": {}, \"core_sync\": {}}}, \"end_cycle\": {}}},\n",
      s.instructions, s.dispatched_dma, s.taken_branches, s.issue_cycles, Utilization(s.issue_cycles, cycles),
      s.branch_stall_cycles, s.smem_stall_cycles, s.semaphore_stall_cycles, s.dispatch_stall_cycles,
      s.core_sync_stall_cycles, s.end_cycle);
  out += "     " + VpuJson(core.vpu, cycles) + ",\n     " + MxusJson(core.mxus, cycles) + ",\n";
  out += "     \"dma_engines\": [";
  for (std::size_t i = 0; i < core.dma_engines.size(); ++i) {
    const DmaEngineReport& e = core.dma_engines[i];
    out += fmt::format("{}\n      {{\"name\": {}, \"transfers\": {}, \"payload_bytes\": {}, \"busy_cycles\": {}, "
                       "\"utilization\": {:.6f}}}",
                       i == 0 ? "" : ",", JsonString(e.name), e.transfers, e.payload_bytes, e.busy_cycles,
                       Utilization(e.busy_cycles, cycles));
  }
  return out + "\n    ]}";
}

}  // namespace

std::string JsonString(const std::string& text) {
  std::string out;
  traces::AppendJsonString(out, text);
  return out;
}

std::string RunReportJson(const RunReport& report, const ArchConfig& config, bool timing_only) {
  std::string out = "{\n";
  out += fmt::format("  \"program\": {},\n  \"config\": {},\n", JsonString(report.program), JsonString(config.name()));
  out += fmt::format("  \"cycles\": {},\n  \"device_time_us\": {:.6f},\n", report.cycles, report.device_time_us);
  out += fmt::format("  \"clock_mhz\": {},\n", config.tensor_core().clock_mhz());
  out += fmt::format("  \"peak_flops_per_s\": {:.6e},\n", PeakFlopsPerSecond(config));
  out += fmt::format("  \"hbm_bytes_per_s\": {:.6e},\n", HbmBytesPerSecond(config));
  out += fmt::format("  \"timing_only\": {},\n", timing_only ? "true" : "false");
  out += "  \"tensor_cores\": [\n";
  for (std::size_t c = 0; c < report.cores.size(); ++c) {
    out += CoreJson(report.cores[c], c, report.cycles) + (c + 1 < report.cores.size() ? ",\n" : "\n");
  }
  out += "  ],\n  \"memories\": [";
  for (std::size_t i = 0; i < report.memories.size(); ++i) {
    const MemoryReport& m = report.memories[i];
    out += fmt::format("{}\n    {{\"name\": {}, \"bytes_read\": {}, \"bytes_written\": {}, \"busy_cycles\": {}, "
                       "\"utilization\": {:.6f}}}",
                       i == 0 ? "" : ",", JsonString(m.name), m.bytes_read, m.bytes_written, m.busy_cycles,
                       Utilization(m.busy_cycles, report.cycles));
  }
  out += "\n  ]\n}\n";
  return out;
}

std::string RunSummary(const RunReport& report, const ArchConfig& config) {
  std::string out = fmt::format("program {} on {}: {} cycles, {:.3f} us at {} MHz\n", report.program,
                                config.name(), report.cycles, report.device_time_us,
                                config.tensor_core().clock_mhz());
  for (std::size_t c = 0; c < report.cores.size(); ++c) {
    const TensorCoreReport& core = report.cores[c];
    const models::ScalarCoreStats& s = core.scalar_core;
    if (report.cores.size() > 1) out += fmt::format(" TensorCore {}\n", c);
    out += fmt::format("  scalar core  {:5.1f}% busy, {} instructions; stalls: semaphore {}, dispatch {}, "
                       "branch {}, smem {}, core sync {} cycles\n",
                       100 * Utilization(s.issue_cycles, report.cycles), s.instructions, s.semaphore_stall_cycles,
                       s.dispatch_stall_cycles, s.branch_stall_cycles, s.smem_stall_cycles, s.core_sync_stall_cycles);
    out += fmt::format("  vpu          {} instructions;", core.vpu.instructions);
    for (int u = 0; u < models::kVpuSubUnitCount; ++u) {
      out += fmt::format(" {} {:.1f}%", models::VpuSubUnitName(static_cast<models::VpuSubUnit>(u)),
                         100 * Utilization(core.vpu.units[u].busy_cycles, report.cycles));
    }
    out += " busy\n";
    for (std::size_t i = 0; i < core.mxus.size(); ++i) {
      const models::MxuStats& m = core.mxus[i];
      out += fmt::format("  mxu{:<9} {:5.1f}% utilized, {} rows, {} MACs\n", i,
                         100 * models::MxuUtilization(m, report.cycles), m.rows, m.macs);
    }
    for (const DmaEngineReport& e : core.dma_engines) {
      out += fmt::format("  {:<12} {:5.1f}% busy, {} transfers, {} bytes\n", e.name,
                         100 * Utilization(e.busy_cycles, report.cycles), e.transfers, e.payload_bytes);
    }
  }
  for (const MemoryReport& m : report.memories) {
    out += fmt::format("  {:<12} {:5.1f}% busy, {} bytes read, {} bytes written\n", m.name,
                       100 * Utilization(m.busy_cycles, report.cycles), m.bytes_read, m.bytes_written);
  }
  return out;
}

}  // namespace tpusim::sim
