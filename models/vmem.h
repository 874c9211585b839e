// Vector memory (VMEM, memory space S(1)): the TensorCore's software-managed SRAM. Separate read
// and write ports at the published read/write bandwidths, `bank_count` banks interleaved every
// `bank_interleave_bytes`, and an access latency in TensorCore cycles (sram.h has the timing).
//
// Two sets of those ports and banks: one serves the vector unit's loads and stores
// (VectorAccess), the other the DMA engines (Access), and they do not contend. A vector load is
// timed when the scalar core dispatches it, at an issue cycle that may lie ahead of the SystemC
// time at which the DMA engines reserve their bursts; with one shared set, each DMA burst waited
// behind vector requests of its future, which serialized a kernel's DMAs with its vector work
// (docs/timing.md, SRAMs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

  // A vector load or store: checked and counted as Access, timed on the vector unit's ports and
  // banks.
  sc_core::sc_time VectorAccess(AccessKind kind, uint64_t address, uint64_t bytes, const sc_core::sc_time& issue);

  // The DMA side's resources, then the vector side's ("vector read port", "vector bank 3", ...).
  void AppendResourceStats(std::vector<ResourceStats>& out) const override;

 private:
  VmemParams params_;
  std::unique_ptr<Sram> vector_ports_;  // timing only: the bytes are this memory's
};

}  // namespace tpusim::models
