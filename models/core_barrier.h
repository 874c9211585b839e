// The TensorCores of a chip meeting at `core.sync` (the chip's cross-core sync flags, the
// profiler's "TensorCore Sync Flags"): each of the `cores` arrives and waits; once the last has
// arrived, all go on `latency` later. Arrivals are counted per round, so the n-th core.sync of
// every core meets the n-th of the others. A plain object with an sc_event, like Semaphore.
#pragma once

#include <cstdint>

#include <systemc>

namespace tpusim::models {

class CoreBarrier {
 public:
  CoreBarrier(uint32_t cores, sc_core::sc_time latency) : cores_(cores), latency_(latency) {}
  CoreBarrier(const CoreBarrier&) = delete;
  CoreBarrier& operator=(const CoreBarrier&) = delete;

  // In a SystemC thread: arrives at the current round and returns when every core has arrived
  // at it, plus the latency.
  void ArriveAndWait();
  // Cores that have arrived at the round in progress (0 when none waits): a core left waiting
  // when the simulation ends is a deadlock the chip reports.
  uint32_t waiting() const { return arrived_; }
  uint32_t cores() const { return cores_; }
  // A new run: no core has arrived.
  void Reset() { arrived_ = 0; }

 private:
  uint32_t cores_;
  sc_core::sc_time latency_;
  uint32_t arrived_ = 0;
  uint64_t round_ = 0;
  sc_core::sc_event released_;
};

}  // namespace tpusim::models
