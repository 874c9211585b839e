// The TensorCore's DMA engines in SystemC: engine_count DmaEngines, each with a queue of
// queue_depth_entries transfers, run their transfers in order, the next beginning once every read
// of the previous has issued (DmaEngine::can_begin). A transfer's requests are issued at their
// times (the thread waits until each), its bytes move when it begins (unless timing-only), and
// when its last write lands the engine adds to the transfer's semaphore and reports a
// DmaCompletion; completions come in queue order (a transfer that lands before an earlier one
// completes with it).
//
// No sc_module: an engine's thread is spawned (sc_spawn) when work arrives on an idle engine and
// ends when its queue empties. So a DmaUnit can be made at any time, before or between sc_start
// calls (SystemC elaborates once per process; tests build one per case), and sc_start() returns
// when all work is done. Destroying a DmaUnit with work in flight abandons that work: its threads
// stop at their next wake-up without touching anything.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/dma_engine.h"

namespace tpusim::models {

inline constexpr uint64_t kTimingOnlyMovedBytes = 64;

class DmaUnit {
 public:
  DmaUnit(std::string name, const DmaParams& params);  // validates
  ~DmaUnit();
  DmaUnit(const DmaUnit&) = delete;
  DmaUnit& operator=(const DmaUnit&) = delete;

  const std::string& name() const;
  uint32_t engine_count() const;
  // Timing-only: transfers of more than kTimingOnlyMovedBytes move no data. Smaller ones (scalars:
  // loop counters, predicates, indices) still do, so that control flow that reads them takes the
  // same path as in a functional run, and the times stay identical.
  void set_timing_only(bool timing_only);
  // Called at each completion, in the engine's thread at the completion time.
  void set_completion_callback(std::function<void(const DmaCompletion&)> callback);

  // Validates `transfer` (ValidateTransfer throws here, in the caller) and queues it on `engine`;
  // false, and nothing queued, if that queue is full.
  bool TrySubmit(uint32_t engine, const DmaTransfer& transfer);
  // The same, but waits while the queue is full; waiting needs a SystemC thread (throws outside
  // one when the queue is full).
  void Submit(uint32_t engine, const DmaTransfer& transfer);

  std::size_t queued(uint32_t engine) const;  // waiting, not counting the one in progress
  bool idle() const;                          // nothing queued or in progress
  std::vector<DmaEngineStats> stats() const;
  // Adds `delta` (CountsSince of stats(), engine by engine) to what stats() reports: the
  // transfers of a replayed segment (sim/chip/segment_replay.h).
  void AddReplayedCounts(const std::vector<DmaEngineStats>& delta);

 private:
  struct State;
  // An engine's thread: runs its queue dry, then ends.
  static void RunEngine(const std::shared_ptr<State>& state, uint32_t engine);

  std::shared_ptr<State> state_;  // shared with the engine threads, which may outlive this
};

}  // namespace tpusim::models
