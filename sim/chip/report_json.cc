#include "sim/chip/report_json.h"

#include <fmt/format.h>

#include "sim/config/derived.h"

namespace tpusim::sim {
namespace {

std::string Quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

double Utilization(uint64_t busy, uint64_t total) {
  return total == 0 ? 0.0 : static_cast<double>(busy) / static_cast<double>(total);
}

}  // namespace

std::string RunReportJson(const RunReport& report, const ArchConfig& config, bool timing_only) {
  const models::ScalarCoreStats& s = report.scalar_core;
  std::string out = "{\n";
  out += fmt::format("  \"program\": {},\n  \"config\": {},\n", Quote(report.program), Quote(config.name()));
  out += fmt::format("  \"cycles\": {},\n  \"device_time_us\": {:.6f},\n", report.cycles, report.device_time_us);
  out += fmt::format("  \"clock_mhz\": {},\n", config.tensor_core().clock_mhz());
  out += fmt::format("  \"peak_flops_per_s\": {:.6e},\n", PeakFlopsPerSecond(config));
  out += fmt::format("  \"hbm_bytes_per_s\": {:.6e},\n", HbmBytesPerSecond(config));
  out += fmt::format("  \"timing_only\": {},\n", timing_only ? "true" : "false");
  out += "  \"scalar_core\": {";
  out += fmt::format(
      "\"instructions\": {}, \"dispatched_dma\": {}, \"taken_branches\": {}, \"busy_cycles\": {}, "
      "\"utilization\": {:.6f}, \"stall_cycles\": {{\"branch\": {}, \"smem\": {}, \"semaphore\": {}, "
      "\"dispatch\": {}}}, \"end_cycle\": {}}},\n",
      s.instructions, s.dispatched_dma, s.taken_branches, s.issue_cycles,
      Utilization(s.issue_cycles, report.cycles), s.branch_stall_cycles, s.smem_stall_cycles,
      s.semaphore_stall_cycles, s.dispatch_stall_cycles, s.end_cycle);
  out += "  \"dma_engines\": [";
  for (std::size_t i = 0; i < report.dma_engines.size(); ++i) {
    const DmaEngineReport& e = report.dma_engines[i];
    out += fmt::format("{}\n    {{\"name\": {}, \"transfers\": {}, \"payload_bytes\": {}, \"busy_cycles\": {}, "
                       "\"utilization\": {:.6f}}}",
                       i == 0 ? "" : ",", Quote(e.name), e.transfers, e.payload_bytes, e.busy_cycles,
                       Utilization(e.busy_cycles, report.cycles));
  }
  out += "\n  ],\n  \"memories\": [";
  for (std::size_t i = 0; i < report.memories.size(); ++i) {
    const MemoryReport& m = report.memories[i];
    out += fmt::format("{}\n    {{\"name\": {}, \"bytes_read\": {}, \"bytes_written\": {}, \"busy_cycles\": {}, "
                       "\"utilization\": {:.6f}}}",
                       i == 0 ? "" : ",", Quote(m.name), m.bytes_read, m.bytes_written, m.busy_cycles,
                       Utilization(m.busy_cycles, report.cycles));
  }
  out += "\n  ]\n}\n";
  return out;
}

std::string RunSummary(const RunReport& report, const ArchConfig& config) {
  const models::ScalarCoreStats& s = report.scalar_core;
  std::string out = fmt::format("program {} on {}: {} cycles, {:.3f} us at {} MHz\n", report.program,
                                config.name(), report.cycles, report.device_time_us,
                                config.tensor_core().clock_mhz());
  out += fmt::format("  scalar core  {:5.1f}% busy, {} instructions; stalls: semaphore {}, dispatch {}, "
                     "branch {}, smem {} cycles\n",
                     100 * Utilization(s.issue_cycles, report.cycles), s.instructions, s.semaphore_stall_cycles,
                     s.dispatch_stall_cycles, s.branch_stall_cycles, s.smem_stall_cycles);
  for (const DmaEngineReport& e : report.dma_engines) {
    out += fmt::format("  {:<12} {:5.1f}% busy, {} transfers, {} bytes\n", e.name,
                       100 * Utilization(e.busy_cycles, report.cycles), e.transfers, e.payload_bytes);
  }
  for (const MemoryReport& m : report.memories) {
    out += fmt::format("  {:<12} {:5.1f}% busy, {} bytes read, {} bytes written\n", m.name,
                       100 * Utilization(m.busy_cycles, report.cycles), m.bytes_read, m.bytes_written);
  }
  return out;
}

}  // namespace tpusim::sim
