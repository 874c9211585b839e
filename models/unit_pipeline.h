// One pipelined execution unit's timing: it accepts one operation every 1 / throughput cycles
// and each result is ready latency cycles after its operation issued (a VPU sub-unit: the
// ArchConfig's VpuUnitConfig). docs/timing.md, "VPU".
//
// Slots are kept exactly, in fractional cycles: the k-th slot of a busy unit begins k / throughput
// cycles after the first, and an operation issues in the (whole) cycle in which its slot begins.
// So a unit of throughput 2 takes two operations in every cycle, one of throughput 0.25 one every
// fourth cycle, and one of 0.3 issues at 0, 3, 6, 10, 13, ...: n operations over n / 0.3 cycles.
#pragma once

#include <algorithm>
#include <cstdint>

#include "models/cycles.h"

namespace tpusim::models {

class UnitPipeline {
 public:
  // latency_cycles >= 1 and throughput > 0 (the owner validated them).
  UnitPipeline(uint32_t latency_cycles, double throughput_per_cycle)
      : latency_(latency_cycles), interval_(1.0 / throughput_per_cycle) {}

  // The first cycle >= `cycle` in which an operation can issue: its slot begins in that cycle.
  uint64_t EarliestIssue(uint64_t cycle) const { return std::max(cycle, FloorCycle(next_slot_)); }
  // Issues an operation in `cycle` (>= EarliestIssue(cycle)); returns the cycle its result is
  // ready.
  uint64_t Issue(uint64_t cycle) {
    next_slot_ = std::max(static_cast<double>(cycle), next_slot_) + interval_;
    busy_cycles_ += interval_;
    ++operations_;
    return cycle + latency_;
  }

  uint32_t latency_cycles() const { return latency_; }
  double interval_cycles() const { return interval_; }
  uint64_t operations() const { return operations_; }
  double busy_cycles() const { return busy_cycles_; }  // operations x interval

 private:
  uint32_t latency_;
  double interval_;
  double next_slot_ = 0;  // when the next slot begins, fractional cycles
  uint64_t operations_ = 0;
  double busy_cycles_ = 0;
};

}  // namespace tpusim::models
