#include "sim/module_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "isa/error.h"
#include "sim/chip/report_json.h"
#include "sim/config/derived.h"

namespace tpusim::sim {
namespace {

constexpr char kDeviceBegin[] = "device_begin";
constexpr char kDeviceEnd[] = "device_end";


uint64_t OnlyMark(const RunReport& run, const std::string& label) {
  const auto it = run.label_cycles.find(label);
  if (it == run.label_cycles.end() || it->second.empty()) throw Error("the run never reached label '" + label + "'");
  return it->second.front();
}

}  // namespace

std::vector<std::string> MarkedLabels(const compiler::CompiledModule& compiled) {
  std::vector<std::string> labels = {kDeviceBegin, kDeviceEnd};
  for (const compiler::KernelInfo& kernel : compiled.kernels) {
    labels.push_back(kernel.begin_label);
    labels.push_back(kernel.end_label);
  }
  return labels;
}

ModuleReport MakeModuleReport(const compiler::CompiledModule& compiled, const RunReport& run,
                              const ArchConfig& config) {
  const double clock_mhz = config.tensor_core().clock_mhz();
  const double peak_flops = PeakFlopsPerSecond(config);
  const double hbm_bytes = HbmBytesPerSecond(config);
  ModuleReport module;
  const uint64_t begin = OnlyMark(run, kDeviceBegin);
  const uint64_t end = OnlyMark(run, kDeviceEnd);
  module.device_cycles = end - begin;
  module.device_time_us = static_cast<double>(module.device_cycles) / clock_mhz;
  module.total_time_us = run.device_time_us;
  for (const compiler::KernelInfo& kernel : compiled.kernels) {
    const std::vector<uint64_t>& starts = run.label_cycles.at(kernel.begin_label);
    const std::vector<uint64_t>& ends = run.label_cycles.at(kernel.end_label);
    if (starts.empty()) continue;  // a kernel in a branch not taken
    if (starts.size() != ends.size()) throw Error("kernel '" + kernel.name + "' started and ended a different number of times");
    OpReport op;
    op.kernel = &kernel;
    op.start_cycle = starts.front() - begin;
    for (std::size_t i = 0; i < starts.size(); ++i) op.cycles += ends[i] - starts[i];
    op.start_us = static_cast<double>(op.start_cycle) / clock_mhz;
    op.time_us = static_cast<double>(op.cycles) / clock_mhz;
    op.occurrences = starts.size();
    op.flops = kernel.flops * static_cast<double>(op.occurrences);
    op.bytes_accessed = kernel.bytes_accessed * op.occurrences;
    const double compute_us = op.flops / peak_flops * 1e6;
    const double memory_us = static_cast<double>(op.bytes_accessed) / hbm_bytes * 1e6;
    if (std::max(compute_us, memory_us) < 0.5 * op.time_us) {
      op.bound = "other";
    } else {
      op.bound = compute_us >= memory_us ? "compute" : "memory";
    }
    module.flops += op.flops;
    module.bytes_accessed += op.bytes_accessed;
    module.ops.push_back(op);
  }
  std::stable_sort(module.ops.begin(), module.ops.end(),
                   [](const OpReport& a, const OpReport& b) { return a.start_cycle < b.start_cycle; });
  module.hbm_peak_bytes = compiled.hbm_peak_bytes;
  module.host_peak_bytes = compiled.host_peak_bytes;
  module.hbm_live_peak = compiled.hbm_live_peak;
  return module;
}

std::string ModuleReportJson(const ModuleReport& module, const RunReport& run, const ArchConfig& config,
                             bool timing_only) {
  std::string out = "{\n";
  out += fmt::format("  \"device_time_us\": {:.6f},\n  \"total_time_us\": {:.6f},\n", module.device_time_us,
                     module.total_time_us);
  out += fmt::format("  \"cycles\": {},\n  \"total_cycles\": {},\n  \"clock_mhz\": {},\n", module.device_cycles,
                     run.cycles, config.tensor_core().clock_mhz());
  out += fmt::format("  \"peak_flops_per_s\": {:.6e},\n  \"hbm_bytes_per_s\": {:.6e},\n", PeakFlopsPerSecond(config),
                     HbmBytesPerSecond(config));
  out += fmt::format("  \"flops\": {},\n  \"bytes_accessed\": {},\n", module.flops, module.bytes_accessed);
  out += "  \"ops\": [";
  for (std::size_t i = 0; i < module.ops.size(); ++i) {
    const OpReport& op = module.ops[i];
    out += fmt::format(
        "{}\n    {{\"name\": {}, \"opcode\": {}, \"category\": {}, \"start_us\": {:.6f}, \"occurrences\": {}, "
        "\"time_us\": {:.6f}, \"cycles\": {}, \"flops\": {}, \"bytes_accessed\": {}, \"bound\": {}, \"long_name\": {}}}",
        i == 0 ? "" : ",", JsonString(op.kernel->name), JsonString(op.kernel->opcode), JsonString(op.kernel->category), op.start_us,
        op.occurrences, op.time_us, op.cycles, op.flops, op.bytes_accessed, JsonString(op.bound),
        JsonString(op.kernel->long_name));
  }
  out += "\n  ],\n";
  const compiler::LivePeak& live = module.hbm_live_peak;
  out += fmt::format("  \"memory\": {{\"hbm_peak_bytes\": {}, \"host_peak_bytes\": {}, \"hbm_most_live\": {{\"instruction\": {}, "
                     "\"bytes\": {}, \"buffers\": {}, \"largest\": [",
                     module.hbm_peak_bytes, module.host_peak_bytes, JsonString(live.instruction), live.bytes, live.buffers);
  for (std::size_t i = 0; i < live.largest.size(); ++i) {
    out += fmt::format("{}{{\"name\": {}, \"bytes\": {}}}", i == 0 ? "" : ", ", JsonString(live.largest[i].first),
                       live.largest[i].second);
  }
  out += "]}},\n  \"run\": ";
  std::string run_json = RunReportJson(run, config, timing_only);
  // Indent the run's own report inside this one.
  std::string indented;
  for (std::size_t i = 0; i < run_json.size(); ++i) {
    indented += run_json[i];
    if (run_json[i] == '\n' && i + 1 < run_json.size()) indented += "  ";
  }
  while (!indented.empty() && indented.back() == '\n') indented.pop_back();
  out += indented + "\n}\n";
  return out;
}

namespace {

// `name` in at most `width` characters: a longer one keeps its end, where an op nested in loops
// and calls has its own name (`while.1401/region_15.1216/call.1319/dot.1173`).
std::string FitName(const std::string& name, std::size_t width) {
  if (name.size() <= width) return name;
  return "..." + name.substr(name.size() - (width - 3));
}

}  // namespace

std::string ModuleSummary(const std::string& module_name, const ModuleReport& module, const RunReport& run,
                          const ArchConfig& config, std::size_t top) {
  const double peak_flops = PeakFlopsPerSecond(config);
  const double hbm_bytes = HbmBytesPerSecond(config);
  std::string out = fmt::format("module {} on {}: {:.3f} us on the device ({} cycles at {} MHz), {:.3f} us with host transfers\n",
                                module_name, config.name(), module.device_time_us, module.device_cycles,
                                config.tensor_core().clock_mhz(), module.total_time_us);
  std::vector<const OpReport*> by_time;
  for (const OpReport& op : module.ops) by_time.push_back(&op);
  std::stable_sort(by_time.begin(), by_time.end(), [](const OpReport* a, const OpReport* b) { return a->time_us > b->time_us; });
  out += fmt::format("  {:<32} {:<22} {:>10} {:>6} {:>12} {:>12}  {}\n", "op", "category", "time_us", "%", "GFLOP/s",
                     "GB/s", "bound");
  for (std::size_t i = 0; i < by_time.size() && i < top; ++i) {
    const OpReport& op = *by_time[i];
    const double seconds = op.time_us * 1e-6;
    out += fmt::format("  {:<32} {:<22} {:>10.3f} {:>5.1f}% {:>12.1f} {:>12.1f}  {}\n", FitName(op.kernel->name, 32),
                       op.kernel->category, op.time_us,
                       module.device_time_us > 0 ? 100 * op.time_us / module.device_time_us : 0.0,
                       seconds > 0 ? op.flops / seconds / 1e9 : 0.0,
                       seconds > 0 ? static_cast<double>(op.bytes_accessed) / seconds / 1e9 : 0.0, op.bound);
  }
  if (by_time.size() > top) out += fmt::format("  ... and {} more ops\n", by_time.size() - top);
  const double seconds = module.device_time_us * 1e-6;
  const double intensity = module.bytes_accessed > 0 ? module.flops / static_cast<double>(module.bytes_accessed) : 0.0;
  out += fmt::format(
      "  roofline: {:.3e} FLOP, {} bytes, {:.2f} FLOP/byte (ridge {:.1f}); {:.1f} GFLOP/s = {:.2f}% of peak, "
      "{:.1f} GB/s = {:.2f}% of HBM bandwidth\n",
      module.flops, module.bytes_accessed, intensity, peak_flops / hbm_bytes,
      seconds > 0 ? module.flops / seconds / 1e9 : 0.0, seconds > 0 ? 100 * module.flops / seconds / peak_flops : 0.0,
      seconds > 0 ? static_cast<double>(module.bytes_accessed) / seconds / 1e9 : 0.0,
      seconds > 0 ? 100 * static_cast<double>(module.bytes_accessed) / seconds / hbm_bytes : 0.0);
  (void)run;
  return out;
}

}  // namespace tpusim::sim
