// Common memory (CMEM, memory space S(3)): on-chip SRAM shared by the TensorCores, between VMEM
// and HBM (TPU v4). Separate read and write ports, no bank model, latency in ns (sram.h).
#pragma once

#include <cstdint>
#include <string>

#include "models/sram.h"

namespace tpusim::models {

// The ArchConfig's `cmem` block, with capacity in bytes.
struct CmemParams {
  uint64_t capacity_bytes = 0;
  double read_bandwidth_gbps = 0;  // GB/s = 1e9 B/s
  double write_bandwidth_gbps = 0;
  double access_latency_ns = 0;
};

void Validate(const CmemParams& params);  // throws tpusim::Error naming the field

class Cmem final : public Sram {
 public:
  Cmem(std::string name, const CmemParams& params);  // validates
  const CmemParams& params() const { return params_; }

 private:
  CmemParams params_;
};

}  // namespace tpusim::models
