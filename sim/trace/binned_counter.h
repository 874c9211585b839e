// A counter made from amounts spread over time intervals (bytes a DMA moved, cycles an MXU was
// busy), summed into fixed bins and written as one sample per bin: amount in the bin x `scale`
// (e.g. bytes per ps -> GB/s). Intervals may arrive out of time order as long as none begins
// before the watermark the caller last passed to Flush; Flush writes the bins that end at or
// before it and forgets them, so memory holds only the bins between the watermark and the latest
// interval. A sample is written only when the value changes.
#pragma once

#include <cstdint>
#include <deque>

#include "traces/trace_sink.h"

namespace tpusim::sim {

class BinnedCounter {
 public:
  // `scale` multiplies the amount per bin (divide by the bin width there for a rate).
  BinnedCounter(traces::TraceSink* sink, traces::TrackId track, uint64_t bin_ps, double scale)
      : sink_(sink), track_(track), bin_ps_(bin_ps), scale_(scale) {}

  // Spreads `amount` evenly over [begin_ps, end_ps) (all in begin's bin if the interval is empty).
  void Add(uint64_t begin_ps, uint64_t end_ps, double amount);
  // Writes the bins that end at or before `watermark_ps`.
  void Flush(uint64_t watermark_ps);
  // Writes every bin, then a final 0 at `end_ps` (the end of the run).
  void FlushAll(uint64_t end_ps);

 private:
  void Emit(uint64_t time_ps, double value);

  traces::TraceSink* sink_;
  traces::TrackId track_;
  uint64_t bin_ps_;
  double scale_;
  uint64_t first_bin_ = 0;      // index of bins_.front()
  std::deque<double> bins_;     // amounts of bins first_bin_, first_bin_ + 1, ...
  bool written_ = false;
  uint64_t last_time_ps_ = 0;
  double last_value_ = 0;
};

}  // namespace tpusim::sim
