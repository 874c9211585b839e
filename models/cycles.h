// Fractional cycle times. A unit's resources may be busy for a fraction of a cycle (a VPU
// sub-unit with throughput 2 takes a vreg every half cycle; an MXU row of s8 at 0.5 passes), so
// they keep their busy-until times as doubles, while every time a unit reports (an instruction's
// issue, a register becoming ready) is a whole cycle: the cycle in which something begins
// (FloorCycle) or the first cycle boundary at or after something ends (CeilCycle). The
// configured values are dyadic (0.25, 0.5, 2) in every preset, so the doubles are exact; the
// tolerance only keeps a non-dyadic throughput (0.3) from losing a cycle to rounding error.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tpusim::models {

inline constexpr double kCycleTolerance = 1e-9;

inline uint64_t FloorCycle(double cycles) {
  return static_cast<uint64_t>(std::max(0.0, std::floor(cycles + kCycleTolerance)));
}
inline uint64_t CeilCycle(double cycles) {
  return static_cast<uint64_t>(std::max(0.0, std::ceil(cycles - kCycleTolerance)));
}

}  // namespace tpusim::models
