// Turns what a TensorCore's run did (models::ActivityObserver) into a trace (traces::TraceSink),
// with the track layout of docs/traces.md ("Tracks"): one process per TensorCore; XLA Modules and XLA
// Ops (written after the run, from the kernel marks: AddXlaLines); the scalar core, each MXU,
// the VPU's sub-units, VPU loads/stores, each DMA engine and the PCIe link; counters for HBM read
// and write bandwidth, VMEM in use, MXU utilization and outstanding DMAs. Unit slices are
// written as the run goes (per unit in time order); counters through bounded bins; memory does
// not grow with the length of the run.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "isa/program.pb.h"
#include "models/activity.h"
#include "models/clock_domain.h"
#include "sim/trace/binned_counter.h"
#include "sim/trace/trace_level.h"
#include "sim/trace/unit_track.h"
#include "traces/trace_sink.h"

namespace tpusim::sim {

struct TraceRecorderSetup {
  std::string process_name;      // "/device:TPU:0 (tpu_v4)"
  // The TensorCore recorded (megacore: one recorder per core, each its own process, pid = core).
  // Only core 0's has the XLA lines, and its Finish finishes the sink: finish the others first.
  uint32_t core = 0;
  uint32_t core_count = 1;
  double clock_mhz = 0;          // the TensorCore's
  uint32_t mxu_count = 0;
  std::vector<std::string> dma_engine_names;
  TraceLevel level = TraceLevel::kUnits;
  uint64_t counter_bin_cycles = 1000;  // width of the bandwidth / utilization bins
};

// One line of XLA Modules or XLA Ops: cycles from the start of the run.
struct XlaSlice {
  std::string name;
  uint64_t begin_cycle = 0;
  uint64_t end_cycle = 0;
  std::vector<traces::Annotation> annotations;
};

class TraceRecorder : public models::ActivityObserver {
 public:
  // Declares the process and every track. `program` (the one the next run executes) names the
  // instructions; it must outlive the recorder.
  TraceRecorder(traces::TraceSink& sink, const TraceRecorderSetup& setup, const isa::Program& program);

  void OnScalarInstruction(uint32_t pc, uint64_t issue_cycle) override;
  void OnMark(uint32_t pc, uint64_t cycle) override;
  void OnVpu(const models::VpuActivity& activity) override;
  void OnVectorMemory(const models::VectorMemoryActivity& activity) override;
  void OnMxu(const models::MxuActivity& activity) override;
  void OnDmaIssued(const models::DmaIssue& issue) override;
  void OnDmaCompleted(const models::DmaDone& done) override;

  // After the run: closes the unit slices, writes the counters' last bins up to `end_cycle` (the
  // run's cycles) and the XLA lines (each list in begin order), then finishes the sink.
  void Finish(uint64_t end_cycle, const std::vector<XlaSlice>& modules, const std::vector<XlaSlice>& ops);


 private:
  struct PendingDma {
    models::DmaIssue issue;
  };
  // A DMA's destination in VMEM waiting for its first reader.
  struct PendingFlow {
    uint64_t low = 0, high = 0;  // VMEM byte range
    uint64_t id = 0;
    uint64_t begin_ps = 0;       // the DMA slice's begin
  };

  uint64_t Ps(uint64_t cycle) const { return static_cast<uint64_t>(clock_.ToTime(cycle).value()); }
  uint64_t Ps(double cycles) const;
  bool units() const { return setup_.level != TraceLevel::kOps; }
  bool all() const { return setup_.level == TraceLevel::kAll; }
  std::vector<traces::Annotation> InstructionDetails(uint32_t pc) const;
  void CloseUnitSlices();
  void FlushCounters();
  // After a change of the outstanding DMAs from `before`.
  void WriteOutstanding(uint64_t time_ps, int64_t before);
  void FlushOutstanding();
  void NoteVmem(uint64_t low, uint64_t high);
  uint64_t TakeFlow(uint64_t low, uint64_t high, uint64_t* begin_ps);

  traces::TraceSink& sink_;
  TraceRecorderSetup setup_;
  const isa::Program& program_;
  models::ClockDomain clock_;
  double period_ps_;
  std::vector<std::string_view> mnemonics_;  // per pc
  std::vector<bool> step_ends_;              // per pc: a sem.wait

  traces::TrackId process_ = 0;
  traces::TrackId xla_modules_ = 0, xla_ops_ = 0;
  std::vector<std::unique_ptr<UnitTrack>> tracks_;  // all unit tracks, for closing
  UnitTrack* scalar_ = nullptr;
  std::vector<UnitTrack*> mxus_;
  std::vector<UnitTrack*> vpu_units_;  // by VpuSubUnit
  UnitTrack* vector_memory_ = nullptr;
  std::vector<UnitTrack*> dma_engines_;
  traces::TrackId pcie_ = 0;
  std::vector<UnitTrack*> pcie_lanes_;  // per DMA engine, declared at its first host transfer

  std::unique_ptr<BinnedCounter> hbm_read_, hbm_write_, mxu_utilization_;
  traces::TrackId vmem_in_use_ = 0, outstanding_ = 0;

  uint64_t last_scalar_cycle_ = UINT64_MAX;
  uint64_t core_ps_ = 0;  // the scalar core's latest issue: no unit operation starts before it
  uint64_t now_ps_ = 0;   // SystemC time last seen (DMA submissions and completions)
  std::vector<std::deque<PendingDma>> dma_queues_;  // per engine, submitted and not completed
  // Per engine, the previous transfer's completion: a transfer's slice begins no earlier (an
  // engine begins the next transfer while the previous one's last requests are in flight).
  std::vector<uint64_t> dma_busy_until_ps_;
  int64_t outstanding_count_ = 0;
  uint64_t bin_ps_ = 1;
  uint64_t outstanding_bin_ = 0;     // ops level: the bin being summarised
  int64_t outstanding_peak_ = -1;    // its peak so far (-1: none yet)
  int64_t outstanding_written_ = -1; // the last value written
  std::deque<PendingFlow> flows_;
  uint64_t next_flow_ = 0;
  std::vector<uint64_t> mxu_end_ps_;  // per MXU: occupied until
  uint64_t kernel_begin_ps_ = 0;
  uint64_t vmem_high_ = 0;  // highest VMEM byte touched in the current kernel
};

}  // namespace tpusim::sim
