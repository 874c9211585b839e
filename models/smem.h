// Scalar memory (SMEM, memory space S(2)): the scalar core's SRAM. One port for reads and writes,
// latency in TensorCore cycles (sram.h). DMAs reach it like any other memory.
#pragma once

#include <cstdint>
#include <string>

#include "models/sram.h"

namespace tpusim::models {

// The ArchConfig's smem_capacity_kib (in bytes) and smem_latency_cycles, the clock those cycles
// count, and a bandwidth the schema does not state (docs/timing.md suggests a value).
struct SmemParams {
  uint64_t capacity_bytes = 0;
  double bandwidth_bytes_per_cycle = 0;  // reads and writes together
  uint32_t access_latency_cycles = 0;
  double clock_mhz = 0;
};

void Validate(const SmemParams& params);  // throws tpusim::Error naming the field

class Smem final : public Sram {
 public:
  Smem(std::string name, const SmemParams& params);  // validates
  const SmemParams& params() const { return params_; }

 private:
  SmemParams params_;
};

}  // namespace tpusim::models
