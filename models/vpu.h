// The vector unit of a TensorCore: executes VPU instructions from its in-order queue on the
// shared vector register file, computing their values (docs/isa.md) and their timing
// (docs/timing.md, "VPU"). A plain C++ class driven by explicit cycle numbers, so it can be
// tested without a SystemC kernel; the scalar core's dispatch (SystemC) calls it in queue order
// with the cycle each instruction reached the head of the queue.
//
// Timing: up to issue_instructions_per_cycle instructions issue per cycle, in queue order, each
// once the registers it reads are ready, the register it writes has no write pending and no
// earlier read outstanding (a scoreboard: VectorRegisterFile), and its sub-unit (element-wise,
// transcendental, cross-lane: a UnitPipeline each) has a slot; its result is ready latency_cycles
// after issue. Timing-only mode skips the arithmetic and gives the same times (the timing never
// looks at values).
#pragma once

#include <array>
#include <cstdint>

#include "models/unit_pipeline.h"
#include "models/vector_register_file.h"
#include "models/vpu_op.h"

namespace tpusim::models {

// One sub-unit's ArchConfig block (tensor_core.vpu.elementwise and so on).
struct VpuUnitParams {
  uint32_t latency_cycles = 0;            // issue to result usable, >= 1
  double throughput_vregs_per_cycle = 0;  // > 0: 0.25 is one vreg every 4 cycles
};

// The ArchConfig's tensor_core.vpu block (vector_register_count sizes the VectorRegisterFile).
struct VpuParams {
  uint32_t sublanes = 0;                      // sublane_count
  uint32_t lanes = 0;                         // lane_count
  uint32_t issue_instructions_per_cycle = 0;  // over all sub-units
  VpuUnitParams elementwise;
  VpuUnitParams transcendental;
  VpuUnitParams cross_lane;
};

void Validate(const VpuParams& params);  // throws tpusim::Error naming the field

// When one instruction ran.
struct VpuTiming {
  uint64_t issue = 0;  // the cycle it issued: its sources were read
  uint64_t ready = 0;  // the cycle its result is usable (= issue + the sub-unit's latency)
};

struct VpuUnitStats {
  uint64_t operations = 0;
  double busy_cycles = 0;  // operations / throughput: cycles of the unit's slots used
};

struct VpuStats {
  uint64_t instructions = 0;  // issue slots used: operations, signals, loads and stores
  std::array<VpuUnitStats, kVpuSubUnitCount> units = {};  // indexed by VpuSubUnit
  uint64_t last_issue = 0;
  uint64_t all_complete = 0;  // when every instruction issued so far has completed
};
// The counts (instructions, units) of `now` less those of `before`; the cycles are left 0.
VpuStats CountsSince(const VpuStats& now, const VpuStats& before);

class Vpu {
 public:
  // Validates `params`; `registers` must have params' sublanes and lanes and outlive the Vpu.
  Vpu(const VpuParams& params, VectorRegisterFile& registers);

  const VpuParams& params() const { return params_; }
  void set_timing_only(bool timing_only) { timing_only_ = timing_only; }
  bool timing_only() const { return timing_only_; }

  // Executes the next instruction of the queue, which reached the head at `arrival_cycle`: faults
  // first (tpusim::Error, nothing changed: CheckVpuOp), then issues it as the header says,
  // computes its result unless timing-only, and records the result's ready cycle in the
  // scoreboard.
  VpuTiming Execute(const VpuInstr& instr, uint64_t arrival_cycle);

  // vpu.signal: takes an issue slot once every earlier instruction has completed; returns that
  // cycle (when the semaphore is incremented).
  uint64_t Signal(uint64_t arrival_cycle);

  // The issue stage alone, for queue instructions whose work is elsewhere (vld / vst: VMEM
  // decides their completion): the first cycle >= arrival in which an instruction with these
  // registers may issue, then the commit of that issue with its completion (a load's register
  // ready cycle; a store's write done). CommitIssue throws tpusim::Error for a cycle before the
  // last issue (out of queue order); a cycle EarliestIssue gave is always valid.
  uint64_t EarliestIssue(uint64_t arrival_cycle, const RegisterUse& use) const;
  void CommitIssue(uint64_t cycle, const RegisterUse& use, uint64_t complete_cycle);

  VpuStats stats() const;

  // A replayed segment (sim/chip/segment_replay.h): its counts (a CountsSince) join stats(), and
  // its last issue and completion become the unit's, as if its instructions had issued. The
  // unit must be quiescent (every instruction complete) before `all_complete`.
  void AddReplayed(const VpuStats& counts, uint64_t last_issue, uint64_t all_complete);

 private:
  UnitPipeline& PipelineOf(VpuSubUnit unit) { return pipelines_[static_cast<size_t>(unit)]; }

  VpuParams params_;
  VectorRegisterFile& registers_;
  bool timing_only_ = false;
  std::array<UnitPipeline, kVpuSubUnitCount> pipelines_;
  uint64_t last_issue_ = 0;      // the cycle of the latest issue
  uint32_t issued_in_last_ = 0;  // instructions issued in that cycle
  VpuStats stats_;               // all but `units`, which the pipelines keep
  std::array<VpuUnitStats, kVpuSubUnitCount> replayed_units_ = {};  // AddReplayed's sums
};

}  // namespace tpusim::models
