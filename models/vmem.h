// Vector memory (VMEM, memory space S(1)): the TensorCore's software-managed SRAM. Separate read
// and write ports at the published read/write bandwidths, `bank_count` banks interleaved every
// `bank_interleave_bytes`, and an access latency in TensorCore cycles (sram.h has the timing).
#pragma once

#include <cstdint>
#include <string>

#include "models/sram.h"

namespace tpusim::models {

// The ArchConfig's `tensor_core.vmem` block with capacity in bytes, plus what the models need that
// the schema does not state: the clock the latency counts (tensor_core.clock_mhz) and the bank
// interleave (the schema has no field for it; see docs/timing.md).
struct VmemParams {
  uint64_t capacity_bytes = 0;
  uint32_t bank_count = 0;
  uint64_t bank_interleave_bytes = 0;  // a power of two
  double read_bandwidth_gbps = 0;      // over all banks; GB/s = 1e9 B/s
  double write_bandwidth_gbps = 0;
  uint32_t access_latency_cycles = 0;
  double clock_mhz = 0;
};

void Validate(const VmemParams& params);  // throws tpusim::Error naming the field

class Vmem final : public Sram {
 public:
  Vmem(std::string name, const VmemParams& params);  // validates
  const VmemParams& params() const { return params_; }

 private:
  VmemParams params_;
};

}  // namespace tpusim::models
