#include "models/vmem.h"

#include <utility>

#include "models/clock_domain.h"
#include "models/param_checks.h"
#include "models/time_units.h"

namespace tpusim::models {

void Validate(const VmemParams& params) {
  constexpr std::string_view kParams = "VmemParams";
  RequireAtLeast(kParams, "capacity_bytes", params.capacity_bytes, 1);
  RequireAtLeast(kParams, "bank_count", params.bank_count, 1);
  RequirePowerOfTwo(kParams, "bank_interleave_bytes", params.bank_interleave_bytes);
  RequirePositive(kParams, "read_bandwidth_gbps", params.read_bandwidth_gbps);
  RequirePositive(kParams, "write_bandwidth_gbps", params.write_bandwidth_gbps);
  RequirePositive(kParams, "clock_mhz", params.clock_mhz);
}

namespace {

SramTiming TimingOf(const VmemParams& params) {
  Validate(params);
  SramTiming timing;
  timing.read_bytes_per_second = GbpsToBytesPerSecond(params.read_bandwidth_gbps);
  timing.write_bytes_per_second = GbpsToBytesPerSecond(params.write_bandwidth_gbps);
  timing.bank_count = params.bank_count;
  timing.bank_interleave_bytes = params.bank_interleave_bytes;
  timing.latency = ClockDomain(params.clock_mhz).ToTime(params.access_latency_cycles);
  return timing;
}

}  // namespace

Vmem::Vmem(std::string name, const VmemParams& params)
    : Sram(std::move(name), params.capacity_bytes, TimingOf(params)), params_(params) {}

}  // namespace tpusim::models
