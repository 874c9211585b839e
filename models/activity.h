// What the units of a TensorCore did, reported as it happens to an optional observer (sim/'s trace
// recorder). The scalar core reports every instruction it issues and, for the ones it dispatches,
// the timing the unit gave back; the chip reports each DMA completion. Unset (the default), the
// hooks cost one pointer test each. Cycles count from the start of the run at the TensorCore's
// clock; picoseconds (DMA completions, which happen in SystemC time) from the start of the run.
#pragma once

#include <cstdint>

#include "models/vpu_op.h"

namespace tpusim::models {

struct VpuActivity {
  uint32_t pc = 0;
  VpuSubUnit unit = VpuSubUnit::kElementwise;
  uint64_t issue_cycle = 0;
  uint64_t ready_cycle = 0;
  double busy_cycles = 0;  // the sub-unit's slot: 1 / throughput, what VpuUnitStats.busy_cycles adds
};

// vld / vst: the VPU issue slot and VMEM's service of the rows.
struct VectorMemoryActivity {
  uint32_t pc = 0;
  bool load = false;
  uint64_t address = 0;  // VMEM byte address of the first row
  uint64_t bytes = 0;    // the rows' span, first byte to last
  uint64_t issue_cycle = 0;
  uint64_t complete_cycle = 0;
};

struct MxuActivity {
  uint32_t pc = 0;
  uint32_t mxu = 0;
  uint64_t start_cycle = 0;
  uint64_t done_cycle = 0;
  double busy_cycles = 0;  // what this operation added to MxuStats.busy_cycles
};

// A `dma` instruction handed to its engine's queue.
struct DmaIssue {
  uint32_t pc = 0;
  uint32_t engine = 0;
  int source_space = 0;  // isa::MemorySpace
  int destination_space = 0;
  uint64_t source_address = 0;       // base of the source array's image
  uint64_t destination_address = 0;  // base of the destination array's image
  uint64_t destination_bytes = 0;    // size of the destination array's image
  uint64_t submit_ps = 0;            // when it was queued
};

struct DmaDone {
  uint32_t engine = 0;
  uint64_t started_ps = 0;    // the engine began it
  uint64_t completed_ps = 0;  // its last write landed (the engine's busy time is the difference)
  uint64_t payload_bytes = 0;
};

class ActivityObserver {
 public:
  virtual ~ActivityObserver() = default;
  // Every instruction the scalar core issues, dispatches included, in program order.
  virtual void OnScalarInstruction(uint32_t pc, uint64_t issue_cycle) = 0;
  // A marked pc (a kernel boundary label) reached, before that instruction issues.
  virtual void OnMark(uint32_t pc, uint64_t cycle) = 0;
  virtual void OnVpu(const VpuActivity& activity) = 0;
  virtual void OnVectorMemory(const VectorMemoryActivity& activity) = 0;
  virtual void OnMxu(const MxuActivity& activity) = 0;
  // DMAs are reported issued in queue order and completed per engine in that order.
  virtual void OnDmaIssued(const DmaIssue& issue) = 0;
  virtual void OnDmaCompleted(const DmaDone& done) = 0;
};

}  // namespace tpusim::models
