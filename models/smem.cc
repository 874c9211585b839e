#include "models/smem.h"

#include <utility>

#include "models/clock_domain.h"
#include "models/param_checks.h"

namespace tpusim::models {

void Validate(const SmemParams& params) {
  constexpr std::string_view kParams = "SmemParams";
  RequireAtLeast(kParams, "capacity_bytes", params.capacity_bytes, 1);
  RequirePositive(kParams, "bandwidth_bytes_per_cycle", params.bandwidth_bytes_per_cycle);
  RequirePositive(kParams, "clock_mhz", params.clock_mhz);
}

namespace {

SramTiming TimingOf(const SmemParams& params) {
  Validate(params);
  SramTiming timing;
  timing.read_bytes_per_second = params.bandwidth_bytes_per_cycle * params.clock_mhz * 1e6;
  timing.shared_port = true;
  timing.latency = ClockDomain(params.clock_mhz).ToTime(params.access_latency_cycles);
  return timing;
}

}  // namespace

Smem::Smem(std::string name, const SmemParams& params)
    : Sram(std::move(name), params.capacity_bytes, TimingOf(params)), params_(params) {}

}  // namespace tpusim::models
