#include "sim/trace/xla_lines.h"

#include <algorithm>

#include "isa/error.h"

namespace tpusim::sim {
namespace {

const std::vector<uint64_t>& Marks(const RunReport& run, const std::string& label) {
  const auto it = run.label_cycles.find(label);
  if (it == run.label_cycles.end()) throw Error("trace: the run did not mark label '" + label + "'");
  return it->second;
}

}  // namespace

std::vector<XlaSlice> XlaModuleSlices(const std::string& module_name, const RunReport& run) {
  const std::vector<uint64_t>& begins = Marks(run, "device_begin");
  const std::vector<uint64_t>& ends = Marks(run, "device_end");
  if (begins.empty() || ends.empty()) throw Error("trace: the run never reached device_begin and device_end");
  return {XlaSlice{module_name, begins.front(), ends.front(), {}}};
}

std::vector<XlaSlice> XlaOpSlices(const ModuleReport& module, const RunReport& run) {
  std::vector<XlaSlice> slices;
  for (const OpReport& op : module.ops) {
    const compiler::KernelInfo& kernel = *op.kernel;
    const std::vector<uint64_t>& begins = Marks(run, kernel.begin_label);
    const std::vector<uint64_t>& ends = Marks(run, kernel.end_label);
    for (std::size_t i = 0; i < begins.size() && i < ends.size(); ++i) {
      slices.push_back({kernel.name,
                        begins[i],
                        ends[i],
                        {{"hlo_op", kernel.opcode},
                         {"hlo_category", kernel.category},
                         {"long_name", kernel.long_name},
                         {"flops", kernel.flops},
                         {"bytes_accessed", kernel.bytes_accessed}}});
    }
  }
  std::stable_sort(slices.begin(), slices.end(),
                   [](const XlaSlice& a, const XlaSlice& b) { return a.begin_cycle < b.begin_cycle; });
  return slices;
}

}  // namespace tpusim::sim
