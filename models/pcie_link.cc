#include "models/pcie_link.h"

#include <utility>

#include "models/param_checks.h"
#include "models/time_units.h"

namespace tpusim::models {

void Validate(const PcieParams& params) {
  RequirePositive("PcieParams", "bandwidth_gbps", params.bandwidth_gbps);
  RequireNonNegative("PcieParams", "latency_ns", params.latency_ns);
}

namespace {

const PcieParams& Validated(const PcieParams& params) {
  Validate(params);
  return params;
}

}  // namespace

PcieLink::PcieLink(std::string name, const PcieParams& params)
    : name_(std::move(name)),
      params_(Validated(params)),
      latency_(Nanoseconds(params.latency_ns)),
      host_to_device_(name_ + " host to device", GbpsToBytesPerSecond(params.bandwidth_gbps)),
      device_to_host_(name_ + " device to host", GbpsToBytesPerSecond(params.bandwidth_gbps)) {}

sc_core::sc_time PcieLink::Reserve(PcieDirection direction, const sc_core::sc_time& ready,
                                   uint64_t bytes) {
  BandwidthResource& lane =
      direction == PcieDirection::kHostToDevice ? host_to_device_ : device_to_host_;
  return lane.Reserve(ready, bytes);
}

void PcieLink::AppendStats(std::vector<ResourceStats>& out) const {
  out.push_back(host_to_device_.stats());
  out.push_back(device_to_host_.stats());
}

}  // namespace tpusim::models
