#include "models/clock_domain.h"

#include <cmath>
#include <string>

#include "isa/error.h"

namespace tpusim::models {

ClockDomain::ClockDomain(double clock_mhz) : clock_mhz_(clock_mhz) {
  if (!(clock_mhz > 0 && clock_mhz <= 1e6)) {
    throw Error("clock_mhz must be in (0, 1000000], got " + std::to_string(clock_mhz));
  }
}

namespace {

// SystemC's default time resolution is 1 ps, so one time unit is one picosecond.
sc_core::sc_time ToPicoseconds(double picoseconds) {
  return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(std::llround(picoseconds)));
}

}  // namespace

sc_core::sc_time ClockDomain::ToTime(uint64_t cycles) const {
  return ToPicoseconds(static_cast<double>(cycles) * 1e6 / clock_mhz_);
}

uint64_t ClockDomain::ToCycles(const sc_core::sc_time& time) const {
  const auto picoseconds = static_cast<double>(time.value());
  auto cycles = static_cast<uint64_t>(std::floor(picoseconds * clock_mhz_ / 1e6));
  // Correct the floating-point estimate against ToTime's own rounding.
  while (ToTime(cycles + 1) <= time) ++cycles;
  while (cycles > 0 && ToTime(cycles) > time) --cycles;
  return cycles;
}

}  // namespace tpusim::models
