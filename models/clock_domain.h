// A clock domain: converts between cycles of a unit's clock and SystemC time. Units keep their
// own time in cycles and convert once per wait, so rounding never accumulates.
#pragma once

#include <cstdint>

#include <systemc>

namespace tpusim::models {

class ClockDomain {
 public:
  // Throws tpusim::Error unless 0 < clock_mhz <= 1e6 (a 1 ps period, SystemC's resolution).
  explicit ClockDomain(double clock_mhz);

  double clock_mhz() const { return clock_mhz_; }
  // The time `cycles` cycles take, rounded to the nearest picosecond (SystemC's resolution).
  sc_core::sc_time ToTime(uint64_t cycles) const;
  // Whole cycles elapsed at `time`: the largest n with ToTime(n) <= time.
  uint64_t ToCycles(const sc_core::sc_time& time) const;
  // Nanoseconds at `cycles` (what traces and reports print).
  double ToNanoseconds(uint64_t cycles) const { return static_cast<double>(cycles) * 1e3 / clock_mhz_; }

 private:
  double clock_mhz_;
};

}  // namespace tpusim::models
