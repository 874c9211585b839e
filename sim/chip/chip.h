// A chip assembled from an ArchConfig: its shared memories (HBM, CMEM where configured, host
// memory behind PCIe, the ICI endpoint) and tensor_core_count TensorCores, each with its own VMEM,
// SMEM, semaphores, DMA engines, scalar core, vector registers, VPU and MXUs (megacore: the cores
// share HBM and contend for it), built once per process (SystemC elaborates once) and able to run
// programs one after another.
//
// Parameters the ArchConfig lacks (docs/timing.md): VMEM's bank interleave is 4 x lane_count /
// bank_count bytes (rounded down to a power of two, at least 1) and SMEM's bandwidth
// 4 x scalar_core.issue_instructions_per_cycle bytes per cycle.
//
// Loading a program: CheckTargetCompatible against the machine's Target; every buffer and data
// segment inside its memory; data segments written; parameters written as their buffers' device
// images (isa::Materialize of the row-major .npy data) straight into the buffer's memory, HBM and
// host alike (reaching HBM over PCIe is issue 5's job). A program that pushes an MXU input type
// whose passes are 0 in the config is refused at load. Outputs are read back with
// isa::Dematerialize. A program runs on the first `.target cores` TensorCores (one when left
// out), each from its first instruction; the others idle. Data segments and inputs in a core's own
// memories (VMEM, SMEM) are written to every running core's; outputs there are read from core 0's.
// Core 0's parts keep the single-core names ("vmem", "scalar_core", "dma"); core c's are prefixed
// "core<c>_" ("core1_vmem").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "isa/npy.h"
#include "isa/program.pb.h"
#include "models/cmem.h"
#include "models/core_barrier.h"
#include "models/dma_unit.h"
#include "models/hbm.h"
#include "models/host_memory.h"
#include "models/ici_link.h"
#include "models/mxu.h"
#include "models/scalar_core.h"
#include "models/semaphore.h"
#include "models/smem.h"
#include "models/vector_register_file.h"
#include "models/vmem.h"
#include "models/vpu.h"
#include "sim/chip/segment_replay.h"
#include "sim/config/arch_config.pb.h"

namespace tpusim::sim {

// What a chip is built from, converted from the ArchConfig (exposed for tests and reports).
struct ChipParams {
  models::HbmParams hbm;
  models::VmemParams vmem;
  models::SmemParams smem;
  bool has_cmem = false;
  models::CmemParams cmem;
  models::HostMemoryParams host;
  models::PcieParams pcie;
  models::IciParams ici;
  models::DmaParams dma;
  models::ScalarCoreParams scalar_core;
  uint32_t semaphore_count = 0;
  models::VpuParams vpu;
  uint32_t vector_register_count = 0;
  models::MxuParams mxu;
  uint32_t mxu_count = 0;
  uint32_t vpu_queue_depth_entries = 1;
  uint32_t mxu_queue_depth_entries = 1;
  uint32_t tensor_core_count = 1;
  uint32_t core_sync_cycles = 0;
};
ChipParams ChipParamsFromConfig(const ArchConfig& config);
// The machine as a program's `.target` describes it.
isa::Target MachineTarget(const ArchConfig& config);

struct MemoryReport {
  std::string name;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t busy_cycles = 0;  // the busiest resource (channel, port, bank, link direction)
};
struct DmaEngineReport {
  std::string name;
  uint64_t transfers = 0;
  uint64_t payload_bytes = 0;
  uint64_t busy_cycles = 0;
};
struct OutputArray {
  std::string name;  // the buffer's
  uint32_t index = 0;
  isa::NpyArray array;
};

// What one TensorCore's units did in a run (zero for a core the program does not run on).
struct TensorCoreReport {
  models::ScalarCoreStats scalar_core;
  models::VpuStats vpu;
  std::vector<models::MxuStats> mxus;
  std::vector<DmaEngineReport> dma_engines;
};

struct RunReport {
  std::string program;
  uint64_t cycles = 0;            // from the start of the run until the last unit finished
  double device_time_us = 0;
  std::vector<TensorCoreReport> cores;  // every TensorCore of the chip, by index
  std::vector<MemoryReport> memories;   // the shared ones, then each core's VMEM and SMEM
  std::vector<OutputArray> outputs;  // empty in timing-only runs
  // For each label set with Chip::set_marked_labels: the cycles (from the start of the run) at
  // which core 0's scalar core reached it, in order.
  std::map<std::string, std::vector<uint64_t>> label_cycles;
  ReplayStats reuse;  // the segments replayed instead of simulated (sim/chip/segment_replay.h)
};

class Chip {
 public:
  // `max_instructions`: a run that executes more faults (models::ScalarCoreParams).
  explicit Chip(const ArchConfig& config, uint64_t max_instructions = models::kDefaultMaxInstructions);
  Chip(const Chip&) = delete;
  Chip& operator=(const Chip&) = delete;
  ~Chip();

  const ArchConfig& config() const { return config_; }
  const ChipParams& params() const { return params_; }

  // Loads and runs `program` to its end (sc_start), with `inputs` by buffer name for its
  // parameter buffers (a parameter without one is left zero). Timing-only moves no DMA data and
  // reads no outputs; the cycles are the same. Throws tpusim::Error for a program that does not
  // fit the machine, a bad input, a run-time fault (naming pc and instruction) or a deadlock.
  RunReport Run(const isa::Program& program, const std::map<std::string, isa::NpyArray>& inputs,
                bool timing_only);

  // Core 0's memory of `space` (the shared one for HBM, CMEM, host and ICI).
  models::Memory* memory(isa::MemorySpace space) const { return cores_.at(0).memories.at(space); }
  uint32_t core_count() const { return static_cast<uint32_t>(cores_.size()); }

  // Whether the next timing-only runs replay segments they already simulated (the default;
  // sim/chip/segment_replay.h). Runs with data or an observer simulate every segment.
  void set_reuse(bool reuse) { reuse_ = reuse; }

  // Labels whose arrival times the next runs report (RunReport::label_cycles).
  void set_marked_labels(std::vector<std::string> labels) { marked_labels_ = std::move(labels); }

  // Where a run is: the device time simulated and the marked labels core 0 has passed so far.
  struct Progress {
    double device_time_us = 0;
    uint64_t marks = 0;
  };
  // Called after every kProgressSliceUs of simulated time while the next runs go (they then
  // advance slice by slice, each to its last event: the same events in the same order, so the
  // same results); nullptr: none, one sc_start to the end.
  static constexpr double kProgressSliceUs = 20;
  void set_progress(std::function<void(const Progress&)> callback) { progress_ = std::move(callback); }
  // Reports the next runs' activity (instructions, unit operations, DMAs) of core `core` to
  // `observer` (nullptr: nobody; not owned, must outlive the runs).
  void set_observer(uint32_t core, models::ActivityObserver* observer);
  void clear_observers();
  // Core `core`'s DMA engines' names, by engine index.
  std::vector<std::string> dma_engine_names(uint32_t core = 0) const;

 private:
  // One TensorCore's parts.
  struct Core {
    std::unique_ptr<models::Vmem> vmem;
    std::unique_ptr<models::Smem> smem;
    models::MemoryMap memories{};  // its own VMEM and SMEM, the chip's shared memories
    std::vector<std::unique_ptr<models::Semaphore>> semaphores;
    std::unique_ptr<models::DmaUnit> dma;
    std::unique_ptr<models::ScalarCore> scalar_core;
    std::unique_ptr<models::VectorRegisterFile> registers;
    std::unique_ptr<models::Vpu> vpu;
    std::vector<std::unique_ptr<models::Mxu>> mxus;
  };

  void Load(const isa::Program& program, const std::map<std::string, isa::NpyArray>& inputs, uint32_t running);
  // Fresh vector registers, VPU and MXUs for a run (their clocks count from the run's start).
  void ResetUnits(Core& core, bool timing_only);
  TensorCoreReport CoreReport(const Core& core) const;
  // The run's SyncHooks over its first `running` cores; `replay`: whether it replays segments.
  std::unique_ptr<SegmentReplay> MakeSegmentReplay(uint32_t running, bool replay);

  ArchConfig config_;
  ChipParams params_;
  std::vector<std::string> marked_labels_;
  bool reuse_ = true;
  std::vector<bool> observed_;  // by core: an observer is set
  std::function<void(const Progress&)> progress_;
  sc_core::sc_time run_start_;
  std::unique_ptr<models::Hbm> hbm_;
  std::unique_ptr<models::Cmem> cmem_;
  std::unique_ptr<models::HostMemory> host_;
  std::unique_ptr<models::IciLink> ici_;
  std::unique_ptr<models::CoreBarrier> barrier_;  // remade per run for the program's cores
  std::vector<Core> cores_;
  // Remade per run for the program's cores; after cores_, so that it is destroyed first (its
  // destructor takes its segment logs back from the scalar cores).
  std::unique_ptr<SegmentReplay> replay_;
};

}  // namespace tpusim::sim
