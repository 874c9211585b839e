// Host memory (memory space S(5)) as the chip sees it: host DRAM behind the PCIe link, which this
// class owns. A read sends its request to the host (one PCIe latency), waits for the DRAM, and
// brings the data back over the host-to-device direction (bandwidth, one more latency); a write
// carries its data over the device-to-host direction, then the DRAM accepts it. Host DRAM
// bandwidth is not a limit (the schema has none; PCIe is far slower). docs/timing.md has the
// equations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/memory.h"
#include "models/pcie_link.h"

namespace tpusim::models {

// The ArchConfig's `host` block, with capacity in bytes.
struct HostMemoryParams {
  uint64_t capacity_bytes = 0;
  double access_latency_ns = 0;  // host DRAM, added to the PCIe latency
};

void Validate(const HostMemoryParams& params);  // throws tpusim::Error naming the field

class HostMemory final : public Memory {
 public:
  // Validates both parameter sets.
  HostMemory(std::string name, const HostMemoryParams& params, const PcieParams& pcie);

  const HostMemoryParams& params() const { return params_; }
  PcieLink& link() { return link_; }
  const PcieLink& link() const { return link_; }

 private:
  sc_core::sc_time Serve(AccessKind kind, uint64_t address, uint64_t bytes,
                         const sc_core::sc_time& issue) override;
  void AppendResourceStats(std::vector<ResourceStats>& out) const override;

  HostMemoryParams params_;
  sc_core::sc_time dram_latency_;
  PcieLink link_;
};

}  // namespace tpusim::models
