#include "compiler/lower/vpu_issue_clock.h"

#include <algorithm>

namespace tpusim::compiler {

double VpuIssueClock::EarliestIssue(VpuSlot slot, double sources_ready) const {
  return std::max({next_issue_, sources_ready, slot_free_[static_cast<int>(slot)]});
}

double VpuIssueClock::Issue(VpuSlot slot, double sources_ready, int instructions) {
  const double issue = EarliestIssue(slot, sources_ready);
  const VpuSlotTiming& t = timing_.slots[static_cast<int>(slot)];
  const double per_instruction = timing_.issue_per_cycle > 0 ? 1 / timing_.issue_per_cycle : 1;
  next_issue_ = issue + std::max(instructions, 1) * per_instruction;
  slot_free_[static_cast<int>(slot)] = issue + t.interval_cycles;
  return issue + t.latency_cycles + (std::max(instructions, 1) - 1) * per_instruction;
}

double VpuIssueClock::IssueLoad(double sources_ready, double bytes) {
  if (timing_.vmem_read_bytes_per_cycle <= 0) return Issue(VpuSlot::kLoadStore, sources_ready, 1);
  const double issue = EarliestIssue(VpuSlot::kLoadStore, sources_ready);
  next_issue_ = issue + (timing_.issue_per_cycle > 0 ? 1 / timing_.issue_per_cycle : 1);
  const int slot = static_cast<int>(VpuSlot::kLoadStore);
  slot_free_[slot] = issue + timing_.slots[slot].interval_cycles;
  read_port_free_ = std::max(issue, read_port_free_) + bytes / timing_.vmem_read_bytes_per_cycle;
  return read_port_free_ + timing_.vmem_latency_cycles;
}

}  // namespace tpusim::compiler
