// Reuse of what a run already simulated (issue 18): a segment (the run of every core from one
// round of core.sync to the next: a kernel, a loop's condition, a copy) that starts from a quiet
// machine in a state already seen is not simulated again; its recorded outcome is replayed.
//
// A round is quiet when, as the cores leave the barrier, nothing they started is still going:
// every DMA unit idle, the VPUs and MXUs done by the cores' first cycle, no scalar register
// waiting for SMEM. The cores' clocks are re-anchored there (models/scalar_core.h), so what a
// segment does from a quiet round depends on the time since the round alone, and on:
//   - each core's pc and issue slot after the anchor, and the semaphores' counts (the key);
//   - the scalar registers and memory bytes it reads before writing them (its inputs: a
//     timing-only run moves the bytes of SMEM and of DMAs of at most 64 bytes, and only those
//     decide control flow and addresses; models/segment_log.h).
// A segment recorded from a quiet round to the next quiet round is kept with its inputs, and
// what it leaves: each core's registers, slot, queues and marks (ScalarSegmentEnd), the memory
// bytes it wrote, the semaphores, and every unit's and memory's statistics added over it. When
// a later quiet round has the same key and inputs, the cores take that end state at once and go
// on from the recorded core.sync, each at its recorded cycle: the same cycles, statistics and
// marks as simulating it (a test runs workloads both ways; docs/timing.md, "Reuse").
//
// Replay is for timing-only runs without an activity observer (a trace records every unit's
// work, which a replay does not redo); with data, bulk DMAs move bytes the segment's inputs do
// not cover. SegmentReplay is the cores' SyncHooks in every run, replaying or not: the cores
// leave a barrier together (the first to resume waits, in zero time, for the others), so runs
// with and without reuse take the same steps.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "models/dma_unit.h"
#include "models/memory.h"
#include "models/mxu.h"
#include "models/scalar_core.h"
#include "models/segment_log.h"
#include "models/semaphore.h"
#include "models/vpu.h"

namespace tpusim::sim {

// One running TensorCore's parts that a replay reads and sets (owned by the chip).
struct ReplayCore {
  models::ScalarCore* scalar_core = nullptr;
  models::Vpu* vpu = nullptr;
  std::vector<models::Mxu*> mxus;
  models::DmaUnit* dma = nullptr;
  std::vector<models::Semaphore*> semaphores;
  models::MemoryMap memories{};  // its own VMEM and SMEM, the chip's shared memories
};

struct ReplayStats {
  uint64_t rounds = 0;    // core.sync rounds the cores passed
  uint64_t quiet = 0;     // of them, quiet ones
  uint64_t recorded = 0;  // segments recorded (from a quiet round to the next)
  uint64_t replayed = 0;  // segments replayed instead of simulated
  uint64_t replayed_cycles = 0;  // their cycles, each from its anchor to its last core's core.sync
  // Wall time (seconds) spent simulating segments: those being recorded, and the others (from a
  // round that was not quiet, or whose key had all its variants). For the log, never a report.
  double recording_seconds = 0;
  double unrecorded_seconds = 0;
};

class SegmentReplay final : public models::SyncHooks {
 public:
  // `cores`: the running ones, by index; `memories`: every memory of the chip, once each;
  // `replay`: false runs every segment (the rounds are still taken together).
  SegmentReplay(std::vector<ReplayCore> cores, std::vector<models::Memory*> memories, bool replay);
  SegmentReplay(const SegmentReplay&) = delete;
  SegmentReplay& operator=(const SegmentReplay&) = delete;
  // Takes its segment logs back from the scalar cores (DetachLogs).
  ~SegmentReplay() override;

  // A run that ends while a segment is being recorded (the program halts between two rounds of
  // core.sync) leaves that segment's logs with the cores: a chip that runs another program must
  // not have them written into once this object is gone (a calibration run of 1198 programs on
  // one chip corrupted the heap so).
  void DetachLogs();

  void BeforeSync(uint32_t core) override;
  void AfterSync(uint32_t core) override;

  const ReplayStats& stats() const { return stats_; }

  // Variants kept per key (a segment whose inputs change every time, such as a loop's
  // dynamic-slice of the layer it is on, stops being recorded after this many).
  static constexpr std::size_t kMaxVariants = 4;

 private:
  struct Key {
    std::vector<uint64_t> words;  // per core: pc, slot after the anchor, semaphore counts, MXUs' latched types
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& key) const;
  };
  // What one core did in a recorded segment, and what it read first.
  struct CoreRecord {
    std::vector<std::pair<uint32_t, int64_t>> register_inputs;
    std::vector<models::MemoryBytes> memory_inputs;
    std::vector<models::MemoryBytes> memory_writes;  // final bytes
    models::ScalarSegmentEnd end;
    models::VpuStats vpu_counts;
    int64_t vpu_last_issue = 0;  // cycles after the anchor (negative: no VPU work in it)
    int64_t vpu_all_complete = 0;
    std::vector<models::MxuStats> mxu_counts;
    std::vector<int64_t> mxu_quiescent;
    std::vector<models::DmaEngineStats> dma_counts;
    std::vector<int64_t> semaphores;  // counts at the end
    std::vector<int> mxu_latched;     // each MXU's latched type at the end (Mxu::latched_type)
  };
  struct Record {
    uint64_t cycles = 0;  // from the anchor to the last core's core.sync
    std::vector<CoreRecord> cores;
    std::vector<models::MemoryStats> memory_counts;  // by memories_ index
  };
  // Statistics when a recording started, to take differences from.
  struct CoreStart {
    models::ScalarCoreStats scalar;
    std::size_t marks = 0;
    models::VpuStats vpu;
    std::vector<models::MxuStats> mxus;
    std::vector<models::DmaEngineStats> dma;
  };

  // With every core resumed: closes the recording that ends here, then replays, records or
  // runs the segment that starts here.
  void StartRound();
  bool Quiet() const;
  Key KeyNow() const;
  bool InputsMatch(const Record& record) const;
  void BeginRecording();
  void FinishRecording();
  void Replay(const Record& record);

  std::vector<ReplayCore> cores_;
  std::vector<models::Memory*> memories_;
  bool replay_;
  ReplayStats stats_;

  uint32_t resumed_ = 0;  // cores out of the barrier in the round in progress
  std::chrono::steady_clock::time_point round_started_ = std::chrono::steady_clock::now();
  uint64_t round_ = 0;
  sc_core::sc_event all_resumed_;

  const Record* replaying_ = nullptr;  // the round's segment, when it is replayed

  bool recording_ = false;
  Key recording_key_;
  uint64_t recording_anchor_ = 0;  // the recorded segment's first cycle
  std::vector<models::SegmentLog> logs_;  // per core, while recording
  std::vector<CoreStart> starts_;
  std::vector<models::MemoryStats> memory_starts_;
  std::vector<models::ScalarSegmentEnd> ends_;
  std::vector<bool> ended_;
  std::unordered_map<Key, std::vector<std::unique_ptr<Record>>, KeyHash> records_;
};

}  // namespace tpusim::sim
