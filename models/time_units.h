// Conversions between the models' plain numbers (ns, GB/s, bytes) and SystemC time. SystemC's
// default resolution is 1 ps (models/clock_domain.h relies on it too), so an sc_time value is a
// count of picoseconds; each conversion rounds to the nearest picosecond once.
#pragma once

#include <cmath>
#include <cstdint>

#include <systemc>

namespace tpusim::models {

inline sc_core::sc_time Picoseconds(double picoseconds) {
  return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(std::llround(picoseconds)));
}
inline sc_core::sc_time Nanoseconds(double nanoseconds) { return Picoseconds(nanoseconds * 1e3); }
inline double ToNanoseconds(const sc_core::sc_time& time) {
  return static_cast<double>(time.value()) / 1e3;
}
// The ArchConfig's GB/s: 1e9 bytes per second (decimal), never gigabits.
inline double GbpsToBytesPerSecond(double gbps) { return gbps * 1e9; }

}  // namespace tpusim::models
