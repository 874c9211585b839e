// The scalar core of a TensorCore: fetches a program's instructions in order, executes the scalar
// ones itself (arithmetic, SMEM loads and stores, branches, loops, semaphores, halt) and dispatches
// the others to their units' queues (docs/isa.md, "Execution"): `dma` to the DmaUnit, VPU and
// MXU instructions to the Vpu and Mxus attached with AttachUnits (docs/timing.md, "Dispatch to
// the VPU and the MXUs"). Without attached units they fault naming the pc and the instruction.
//
// Timing (docs/isa.md, "Cost classes and timing"): the core keeps its own time in issue slots,
// issue_instructions_per_cycle per cycle; every instruction (a dispatch included) takes one slot;
// a taken branch adds branch_cost_cycles; a register loaded from SMEM is ready
// smem_latency_cycles after the load issues, and an instruction reading it waits; sem.wait stalls
// until the semaphore holds enough; dispatch stalls while the DMA engine's, the VPU's or the MXU's
// queue is full; the run ends once the VPU and the MXUs have finished, not just at halt. The core
// meets SystemC time only when it touches another unit (dispatch, semaphores, halt), so pure
// scalar code costs no SystemC events.
//
// Like DmaUnit, no sc_module: Start() spawns the core's thread, so a core can be made before or
// between sc_start calls. A fault (a bad address, a semaphore out of range, running off the end)
// ends the thread with fault() set to "pc N (`instruction`): cause"; a sem.wait that nothing will
// ever satisfy leaves the core blocked when sc_start returns, which DescribeDeadlock() reports.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <systemc>

#include "isa/instruction_set.h"
#include "isa/program.pb.h"
#include "isa/shape.h"
#include "models/activity.h"
#include "models/clock_domain.h"
#include "models/core_barrier.h"
#include "models/dma_unit.h"
#include "models/loop_watch.h"
#include "models/memory.h"
#include "models/mxu.h"
#include "models/segment_log.h"
#include "models/semaphore.h"
#include "models/vector_register_file.h"
#include "models/vpu.h"

namespace tpusim::models {

class Vmem;

// The default limit on a run's executed instructions: 2^34, 17.2 G. Llama 3 8B's train step (two
// layer loops of 32 iterations) executes 10.5 G; a runaway loop of scalar instructions reaches
// the limit in minutes.
inline constexpr uint64_t kDefaultMaxInstructions = uint64_t{1} << 34;

// The ArchConfig's tensor_core.scalar_core timing fields and the clock they count.
struct ScalarCoreParams {
  uint32_t issue_instructions_per_cycle = 1;
  uint32_t branch_cost_cycles = 0;
  uint32_t smem_latency_cycles = 0;
  double clock_mhz = 0;
  // A run that executes more instructions than this faults (a runaway loop is an error, not a
  // hang).
  uint64_t max_instructions = kDefaultMaxInstructions;
};

void Validate(const ScalarCoreParams& params);  // throws tpusim::Error naming the field

// The TensorCore's vector and matrix units the core dispatches to (owned by the chip). The core
// drives them in program order with the dispatch cycle as the arrival at the head of their queue
// (their queues are modelled by the start times they return: dispatch waits while a queue holds
// `depth` instructions that have not started).
struct TensorCoreUnits {
  VectorRegisterFile* registers = nullptr;
  Vpu* vpu = nullptr;
  std::vector<Mxu*> mxus;  // mxu0, mxu1, ...
  uint32_t vpu_queue_depth_entries = 1;
  uint32_t mxu_queue_depth_entries = 1;  // per MXU
};

struct ScalarCoreStats {
  uint64_t instructions = 0;          // issued, dispatches included
  uint64_t dispatched_dma = 0;
  uint64_t dispatched_vpu = 0;
  uint64_t dispatched_mxu = 0;
  uint64_t taken_branches = 0;
  uint64_t smem_bytes_read = 0;
  uint64_t smem_bytes_written = 0;
  uint64_t issue_cycles = 0;          // cycles with at least one issue slot used (busy)
  // Cycles the core did not issue, by cause.
  uint64_t branch_stall_cycles = 0;   // taken-branch cost
  uint64_t smem_stall_cycles = 0;     // waiting for a register loaded from SMEM
  uint64_t semaphore_stall_cycles = 0;  // sem.wait
  uint64_t dispatch_stall_cycles = 0;   // a full DMA, VPU or MXU queue
  uint64_t core_sync_stall_cycles = 0;  // core.sync: waiting for the other TensorCores
  uint64_t end_cycle = 0;             // cycle after the halt issued (from the start of the run)
  uint64_t units_done_cycle = 0;      // when the VPU and the MXUs finished (the run ends at the
                                      // later of this and end_cycle)
};
// The counts of `now` less those of `before` (end_cycle and units_done_cycle left 0), and their
// sum: a replayed segment's share (sim/chip/segment_replay.h).
ScalarCoreStats CountsSince(const ScalarCoreStats& now, const ScalarCoreStats& before);
void AddCounts(ScalarCoreStats& to, const ScalarCoreStats& delta);

// Where a core stood as it reached the core.sync that ends a segment (the run between two rounds
// of core.sync), its cycles relative to the segment's first (its anchor, ScalarCore's
// anchor_cycle): what a replay of the segment gives the core (sim/chip/segment_replay.h).
struct ScalarSegmentEnd {
  uint64_t pc = 0;            // the core.sync
  uint64_t slot = 0;          // issue slots after the anchor's first
  int64_t issue_cycle = 0;    // cycles after the anchor (negative: before it)
  int64_t last_busy_cycle = 0;
  bool branched = false;
  uint64_t written_registers = 0;  // a bit per scalar register the segment wrote
  std::array<int64_t, 32> registers{};
  std::array<int64_t, 32> ready_slots{};  // relative, like slot
  std::vector<int64_t> vpu_starts;
  std::vector<std::vector<int64_t>> mxu_starts;
  ScalarCoreStats counts;  // CountsSince the segment's start
  struct Mark {
    uint32_t pc = 0;
    int64_t cycle = 0;
  };
  std::vector<Mark> marks;
};

// Called by each core at every core.sync, around the barrier (sim/chip/segment_replay.h
// implements it). The cores' clocks are re-anchored at each release, so a segment's timing is a
// function of its own start alone.
class SyncHooks {
 public:
  virtual ~SyncHooks() = default;
  // Core `core` is about to issue a core.sync: the segment it ran since the last one is done.
  virtual void BeforeSync(uint32_t core) = 0;
  // Core `core` has passed the barrier, its clock re-anchored and its pc on the instruction after
  // the core.sync: the next segment starts.
  virtual void AfterSync(uint32_t core) = 0;
};

class ScalarCore {
 public:
  enum class State : uint8_t { kIdle, kRunning, kWaitingSemaphore, kWaitingCores, kHalted, kFaulted };

  // `semaphores` and `dma` belong to the chip and outlive the core; `dma` may be nullptr (then
  // a `dma` instruction faults).
  ScalarCore(std::string name, const ScalarCoreParams& params, const MemoryMap& memories,
             std::vector<Semaphore*> semaphores, DmaUnit* dma);
  ScalarCore(const ScalarCore&) = delete;
  ScalarCore& operator=(const ScalarCore&) = delete;

  // The VPU and MXUs to dispatch to; set before Start (the units are reset by their owner).
  void AttachUnits(const TensorCoreUnits& units);
  // Which TensorCore of the chip this is (`core.id`), and the barrier of `core.sync` (owned by
  // the chip; nullptr or one core: core.sync does nothing). Set before Start.
  void set_core(uint32_t index, CoreBarrier* barrier) {
    core_index_ = index;
    barrier_ = barrier;
  }
  // Timing-only: vld / vst move no data (the units' own flags are set by their owner).
  void set_timing_only(bool timing_only) { timing_only_ = timing_only; }
  // Told of every core.sync (nullptr: nobody; not owned). Set before Start.
  void set_sync_hooks(SyncHooks* hooks) { hooks_ = hooks; }
  // Reports what the core and its units do to `observer` (nullptr: nobody; not owned).
  void set_observer(ActivityObserver* observer) { observer_ = observer; }

  // Instructions whose issue cycle the next runs record (kernel boundaries, for reports and
  // traces): marks() lists each time one of them is reached, in order.
  struct Mark {
    uint32_t pc = 0;
    uint64_t cycle = 0;  // from the start of the run
  };
  void set_marked_pcs(const std::vector<uint32_t>& pcs) { marked_pcs_ = pcs; }
  const std::vector<Mark>& marks() const { return marks_; }

  // Resets registers and statistics and starts `program` (valid, labels resolved by name) at the
  // current simulated time: spawns the core's thread; the caller then runs sc_start(). The
  // program must outlive the run. Throws tpusim::Error if a run is in progress.
  void Start(const isa::Program& program);

  State state() const { return state_; }
  const std::string& fault() const { return fault_; }
  // For a core left in kWaitingSemaphore after sc_start returned: "deadlock: pc N (`sem.wait
  // ...`): semaphore K holds V and needs N, and no unit has work left that could signal it";
  // in kWaitingCores, which core.sync and how many cores reached it.
  std::string DescribeDeadlock() const;
  const ScalarCoreStats& stats() const { return stats_; }
  int64_t reg(uint32_t index) const { return regs_.at(index); }
  const std::string& name() const { return name_; }

  // Segments (SyncHooks). The cycle its clock counts from since the last core.sync, and when
  // that cycle began: cycle c is at anchor_time() + ToTime(c - anchor_cycle()).
  uint64_t anchor_cycle() const { return anchor_cycle_; }
  const sc_core::sc_time& anchor_time() const { return anchor_time_; }
  uint64_t pc() const { return pc_; }
  uint32_t issue_width() const { return params_.issue_instructions_per_cycle; }
  // Issue slots after the anchor's first (where the core resumed after the barrier).
  uint64_t slot_after_anchor() const { return slot_ - anchor_cycle_ * params_.issue_instructions_per_cycle; }
  // Nothing this core started is pending at its current slot: scalar registers loaded from SMEM
  // are ready and the VPU and MXU queues hold nothing that has not started.
  bool settled() const;
  // Logs this core's reads and writes into `log` from now on (nullptr: stops). Not owned.
  void set_segment_log(SegmentLog* log) { log_ = log; }
  // Where the core stands now, before a core.sync, relative to its anchor; `counts` since
  // `start_stats` and the marks after the first `start_marks`.
  ScalarSegmentEnd SegmentEnd(const ScalarCoreStats& start_stats, std::size_t start_marks) const;
  // Puts the core where a recorded segment that started from this core's state ended, relative
  // to its current anchor: the segment is not simulated. Throws like Step (the instruction limit).
  void ReplaySegment(const ScalarSegmentEnd& end);

 private:
  void Run();
  // Executes the instruction at pc_; returns false after halt.
  bool Step();
  uint64_t Cycle() const { return slot_ / params_.issue_instructions_per_cycle; }
  // The first slot of the cycle after the current slot's cycle, unless the slot starts a cycle.
  uint64_t RoundUpSlot(uint64_t slot) const;
  void WaitForRegisters(const isa::Instruction& instruction, const isa::InstructionInfo* info);
  void IssueSlot();  // takes one issue slot, counting busy cycles
  // Waits until the start of `cycle` (from the start of the run) in SystemC time.
  void SyncToCycle(uint64_t cycle);
  // When `cycle` begins in SystemC time, from the anchor.
  sc_core::sc_time TimeOfCycle(uint64_t cycle) const;
  // After a core.sync: the current cycle becomes the anchor.
  void Reanchor();
  int64_t Reg(uint32_t index) const;  // logs the read (a segment's input)
  void SetReg(uint32_t index, int64_t value);
  // A data-moving DMA's (a small one in timing-only runs) bytes, for the segment log; the spaces
  // are its endpoints' memories'.
  void LogDmaData(const DmaTransfer& transfer, isa::MemorySpace source_space, isa::MemorySpace destination_space);
  void CatchUpToSystemCTime(uint64_t* stall_counter);
  int64_t Value(const isa::Operand& operand) const;  // sreg or imm
  int64_t Value(const isa::RegOffset& value) const;
  uint64_t AddressOf(const isa::Operand& operand) const;
  Semaphore& SemaphoreOf(const isa::Operand& operand);
  uint64_t SmemAddress(const isa::Operand& operand, uint64_t bytes);
  void Branch(bool taken, const isa::Operand& target);
  void DispatchDma(const isa::Instruction& instruction);
  // Waits (in the core's own time) while `starts` holds `depth` instructions not yet started.
  void WaitForQueue(std::deque<uint64_t>& starts, uint32_t depth);
  void DispatchVpu(const isa::Instruction& instruction, const isa::InstructionInfo& info);
  void DispatchVectorMemory(const isa::Instruction& instruction, const isa::InstructionInfo& info);
  void DispatchMxu(const isa::Instruction& instruction, const isa::InstructionInfo& info);
  uint64_t CycleOfTime(const sc_core::sc_time& time) const;  // the first whole cycle at or after

  std::string name_;
  ScalarCoreParams params_;
  ClockDomain clock_;
  MemoryMap memories_;
  std::vector<Semaphore*> semaphores_;
  DmaUnit* dma_;
  uint32_t core_index_ = 0;
  CoreBarrier* barrier_ = nullptr;
  Vmem* vector_vmem_;  // memories_'s VMEM when it is a Vmem (its vector ports), else nullptr
  TensorCoreUnits units_;
  bool timing_only_ = false;
  ActivityObserver* observer_ = nullptr;
  SyncHooks* hooks_ = nullptr;
  SegmentLog* log_ = nullptr;
  std::deque<uint64_t> vpu_starts_;                // queued VPU instructions' issue cycles
  std::vector<std::deque<uint64_t>> mxu_starts_;   // per MXU

  const isa::Program* program_ = nullptr;
  std::vector<uint32_t> label_targets_;  // per instruction: resolved branch target, if any
  std::vector<const isa::InstructionInfo*> infos_;  // per instruction: its opcode's row, or null
  // Per instruction: a dma's two shapes, parsed the first time it runs (a pointer, so the
  // table costs 8 bytes per instruction: MaxText's program has 16.7 M).
  std::vector<std::unique_ptr<const std::array<isa::Shape, 2>>> dma_shapes_;
  State state_ = State::kIdle;
  std::string fault_;
  uint64_t pc_ = 0;
  bool branched_ = false;  // the last instruction was a taken branch to pc_
  LoopWatch loops_;
  std::array<int64_t, 32> regs_{};
  std::array<uint64_t, 32> reg_ready_slot_{};
  uint64_t slot_ = 0;                // next free issue slot, from the start of the run
  uint64_t issue_cycle_ = 0;         // the cycle the current instruction issued in
  uint64_t last_busy_cycle_ = UINT64_MAX;
  sc_core::sc_time start_time_;
  sc_core::sc_time anchor_time_;  // when cycle anchor_cycle_ began
  uint64_t anchor_cycle_ = 0;
  // While waiting on a semaphore: which, and how much.
  uint32_t waiting_semaphore_ = 0;
  int64_t waiting_amount_ = 0;
  ScalarCoreStats stats_;
  std::vector<uint32_t> marked_pcs_;
  std::vector<bool> marked_;  // per instruction of the running program
  std::vector<Mark> marks_;
};

}  // namespace tpusim::models
