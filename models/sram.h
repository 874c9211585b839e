// The timing shared by the on-chip SRAMs (VMEM, CMEM, SMEM): a read port and a write port (or one
// port for both), optionally split into banks, and a fixed access latency. A request occupies its
// port for bytes / port rate and each bank it touches for that bank's share / (port rate /
// bank_count): different banks work in parallel, one bank serializes, and the port caps the
// total. It completes when the port and all its banks are done, plus the latency
// (docs/timing.md). Vmem, Cmem and Smem turn their ArchConfig-shaped parameters into this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/memory.h"

namespace tpusim::models {

struct SramTiming {
  double read_bytes_per_second = 0;
  double write_bytes_per_second = 0;  // unused with shared_port
  // One port for reads and writes (at read_bytes_per_second) instead of one each.
  bool shared_port = false;
  uint32_t bank_count = 1;            // 1: no bank model beyond the port
  uint64_t bank_interleave_bytes = 1;  // address a lies in bank (a / this) % bank_count
  sc_core::sc_time latency = sc_core::SC_ZERO_TIME;
};

class Sram : public Memory {
 public:
  const SramTiming& timing() const { return timing_; }

 protected:
  // `timing` is valid (the derived class validated its parameters).
  Sram(std::string name, uint64_t capacity_bytes, const SramTiming& timing);

 private:
  sc_core::sc_time Serve(AccessKind kind, uint64_t address, uint64_t bytes,
                         const sc_core::sc_time& issue) override;
  void AppendResourceStats(std::vector<ResourceStats>& out) const override;

  SramTiming timing_;
  BandwidthResource read_port_;
  std::optional<BandwidthResource> write_port_;  // absent with a shared port
  std::vector<BandwidthResource> banks_;          // empty with bank_count 1
  std::vector<uint64_t> bank_bytes_;              // scratch: one request's bytes per bank
};

}  // namespace tpusim::models
