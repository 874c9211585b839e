// An estimate of when VPU instructions issue, for kernels that order straight-line vector code
// (the element-wise body): the VPU issues in queue order, each instruction once its sources are
// ready and its sub-unit has a slot (models/vpu.h), so where one instruction waits for a
// transcendental's result, everything behind it waits too. A kernel that knows these times can
// emit, among the instructions whose sources are ready, the one that issues first, as a VLIW
// compiler's list scheduler fills a bundle (TPU's LLO does so). The figures come from the
// ArchConfig (tensor_core.vpu, vmem.access_latency_cycles); all zero, every instruction is ready
// at once and kernels keep their own order.
#pragma once

#include <array>
#include <cstdint>

namespace tpusim::compiler {

enum class VpuSlot { kElementwise, kTranscendental, kCrossLane, kLoadStore };
inline constexpr int kVpuSlotCount = 4;

struct VpuSlotTiming {
  double latency_cycles = 0;   // issue to result usable
  double interval_cycles = 0;  // between two issues to this sub-unit (1 / throughput)
};

struct VpuTiming {
  double issue_per_cycle = 0;  // instructions over all sub-units; 0: one
  std::array<VpuSlotTiming, kVpuSlotCount> slots = {};  // indexed by VpuSlot
  // VMEM's read port, which vector loads share: bytes per cycle (0: loads take the kLoadStore
  // slot's timing) and the latency after a load's bytes are read.
  double vmem_read_bytes_per_cycle = 0;
  double vmem_latency_cycles = 0;
};

class VpuIssueClock {
 public:
  explicit VpuIssueClock(const VpuTiming& timing) : timing_(timing) {}

  // The cycle an instruction for `slot` whose sources are ready at `sources_ready` would issue,
  // were it the next one in the queue.
  double EarliestIssue(VpuSlot slot, double sources_ready) const;
  // Records `instructions` queued next, the first for `slot` at EarliestIssue (the others take
  // issue slots after it); returns the cycle its result is ready.
  double Issue(VpuSlot slot, double sources_ready, int instructions);
  // Records a vector load of `bytes` queued next; returns the cycle its value is in its register:
  // the load issues at EarliestIssue(kLoadStore), and its bytes come through VMEM's read port
  // after the loads before it (a bf16 tile's 2 KiB take 2 cycles at 1 KiB a cycle), so loads
  // issued back to back land one port time apart.
  double IssueLoad(double sources_ready, double bytes);

 private:
  VpuTiming timing_;
  double next_issue_ = 0;  // the queue's next free issue slot
  std::array<double, kVpuSlotCount> slot_free_ = {};
  double read_port_free_ = 0;  // when VMEM's read port has served the loads issued so far
};

}  // namespace tpusim::compiler
