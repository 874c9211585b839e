#include "models/cmem.h"

#include <utility>

#include "models/param_checks.h"
#include "models/time_units.h"

namespace tpusim::models {

void Validate(const CmemParams& params) {
  constexpr std::string_view kParams = "CmemParams";
  RequireAtLeast(kParams, "capacity_bytes", params.capacity_bytes, 1);
  RequirePositive(kParams, "read_bandwidth_gbps", params.read_bandwidth_gbps);
  RequirePositive(kParams, "write_bandwidth_gbps", params.write_bandwidth_gbps);
  RequireNonNegative(kParams, "access_latency_ns", params.access_latency_ns);
}

namespace {

SramTiming TimingOf(const CmemParams& params) {
  Validate(params);
  SramTiming timing;
  timing.read_bytes_per_second = GbpsToBytesPerSecond(params.read_bandwidth_gbps);
  timing.write_bytes_per_second = GbpsToBytesPerSecond(params.write_bandwidth_gbps);
  timing.latency = Nanoseconds(params.access_latency_ns);
  return timing;
}

}  // namespace

Cmem::Cmem(std::string name, const CmemParams& params)
    : Sram(std::move(name), params.capacity_bytes, TimingOf(params)), params_(params) {}

}  // namespace tpusim::models
