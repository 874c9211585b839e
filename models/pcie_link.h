// The chip's PCIe link to the host: full duplex, each direction a bandwidth resource of its own
// (bandwidth_gbps each way) plus a one-way latency. HostMemory sends its requests across it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/bandwidth_resource.h"

namespace tpusim::models {

// The ArchConfig's `pcie` block.
struct PcieParams {
  double bandwidth_gbps = 0;  // each direction; GB/s = 1e9 B/s
  double latency_ns = 0;      // one way
};

void Validate(const PcieParams& params);  // throws tpusim::Error naming the field

enum class PcieDirection : uint8_t { kHostToDevice, kDeviceToHost };

class PcieLink {
 public:
  PcieLink(std::string name, const PcieParams& params);  // validates

  // Occupies `direction` for bytes / bandwidth from max(ready, its busy-until); returns the end of
  // that occupancy (the caller adds the latencies the request crosses).
  sc_core::sc_time Reserve(PcieDirection direction, const sc_core::sc_time& ready, uint64_t bytes);
  const sc_core::sc_time& latency() const { return latency_; }
  const PcieParams& params() const { return params_; }
  const std::string& name() const { return name_; }
  void AppendStats(std::vector<ResourceStats>& out) const;

 private:
  std::string name_;
  PcieParams params_;
  sc_core::sc_time latency_;
  BandwidthResource host_to_device_;
  BandwidthResource device_to_host_;
};

}  // namespace tpusim::models
