// One thing that moves bytes at a fixed rate, one request at a time, first come first served: an
// HBM channel, an SRAM port or bank, one direction of the PCIe link. Contention between
// concurrent streams is nothing more than this busy-until time (docs/timing.md):
//   start = max(ready, busy_until);  busy_until = start + bytes / rate;  returns busy_until.
// Requests must arrive in non-decreasing `ready` order for first-come-first-served to mean
// first-issued-first-served; the DMA engines issue in simulated-time order (dma_engine.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <systemc>

namespace tpusim::models {

// Statistics of one resource: what it moved and for how long it was busy moving it.
struct ResourceStats {
  std::string name;
  uint64_t requests = 0;
  uint64_t bytes = 0;
  sc_core::sc_time busy = sc_core::SC_ZERO_TIME;  // sum of the transfer times it served
};
// Counts add and subtract field by field (a replayed segment's share: sim/chip/segment_replay.h).
inline void AddCounts(ResourceStats& to, const ResourceStats& delta) {
  to.requests += delta.requests;
  to.bytes += delta.bytes;
  to.busy += delta.busy;
}
inline ResourceStats CountsSince(const ResourceStats& now, const ResourceStats& before) {
  ResourceStats delta;
  delta.requests = now.requests - before.requests;
  delta.bytes = now.bytes - before.bytes;
  delta.busy = now.busy - before.busy;
  return delta;
}

class BandwidthResource {
 public:
  // bytes_per_second > 0 (the owner validated it).
  BandwidthResource(std::string name, double bytes_per_second);

  // Time to move `bytes` at this resource's rate, rounded to the nearest picosecond.
  sc_core::sc_time TransferTime(uint64_t bytes) const;
  // Occupies the resource for TransferTime(bytes) from max(ready, busy_until()); returns the end.
  sc_core::sc_time Reserve(const sc_core::sc_time& ready, uint64_t bytes) {
    // Streams repeat their sizes (vregs, bursts): the last size's time is kept.
    if (bytes != memo_bytes_) {
      memo_bytes_ = bytes;
      memo_duration_ = TransferTime(bytes);
    }
    return ReserveFor(ready, bytes, memo_duration_);
  }
  // The same for a caller-computed duration.
  sc_core::sc_time ReserveFor(const sc_core::sc_time& ready, uint64_t bytes,
                              const sc_core::sc_time& duration) {
    busy_until_ = std::max(ready, busy_until_) + duration;
    ++stats_.requests;
    stats_.bytes += bytes;
    stats_.busy += duration;
    return busy_until_;
  }

  const sc_core::sc_time& busy_until() const { return busy_until_; }
  double bytes_per_second() const { return bytes_per_second_; }
  const ResourceStats& stats() const { return stats_; }

 private:
  double picoseconds_per_byte_;
  double bytes_per_second_;
  uint64_t memo_bytes_ = 0;  // TransferTime(memo_bytes_) == memo_duration_ (0 takes 0 ps)
  sc_core::sc_time memo_duration_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time busy_until_ = sc_core::SC_ZERO_TIME;
  ResourceStats stats_;
};

}  // namespace tpusim::models
