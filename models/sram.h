// The timing shared by the on-chip SRAMs (VMEM, CMEM, SMEM): a read port and a write port (or one
// port for both), optionally split into banks, and a fixed access latency. A request occupies its
// port for bytes / port rate and each bank it touches for that bank's share / (port rate /
// bank_count): different banks work in parallel, one bank serializes, and the port caps the
// total. It completes when the port and all its banks are done, plus the latency
// (docs/timing.md). Vmem, Cmem and Smem turn their ArchConfig-shaped parameters into this.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
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

// The bytes of the request [address, address + bytes) that fall in each of out.size() banks
// interleaved every `interleave_bytes` (bank of address a: (a / interleave_bytes) mod
// out.size()), written to `out`. Closed form, O(banks) whatever the size: the first and last
// interleave units may be partial, and the whole units between them go round the banks, so
// each bank gets floor(F / K) of the F whole units and the F mod K banks that follow the first
// unit's bank get one more. bytes >= 1, interleave_bytes >= 1, out not empty.
void BankShares(uint64_t address, uint64_t bytes, uint64_t interleave_bytes,
                std::span<uint64_t> out);

class Sram : public Memory {
 public:
  const SramTiming& timing() const { return timing_; }

  // Public so that a memory with two sets of ports (Vmem: one for the vector unit, one for the
  // DMA engines) can time requests on a second Sram that holds no data of its own.
  sc_core::sc_time Serve(AccessKind kind, uint64_t address, uint64_t bytes,
                         const sc_core::sc_time& issue) override;
  void AppendResourceStats(std::vector<ResourceStats>& out) const override;

  // `timing` is valid (the derived class validated its parameters).
  Sram(std::string name, uint64_t capacity_bytes, const SramTiming& timing);

 private:

  SramTiming timing_;
  BandwidthResource read_port_;
  std::optional<BandwidthResource> write_port_;  // absent with a shared port
  // The banks (none with bank_count 1). Most requests (whole vregs) give every bank the same
  // share, and then every bank's busy-until time B_k becomes max(t, B_k) + d. Such steps
  // compose to B_k = max(floor, offset_k + shift), so the banks are kept in that form, in
  // picoseconds: a step on every bank is floor = max(t, floor) + d, shift += d (O(1), whatever
  // the bank count), and a request with uneven shares updates its banks' offsets one by one:
  // offset_k = B_k' - shift, never negative because B_k' >= floor >= shift.
  uint32_t bank_count_ = 0;
  uint64_t bank_floor_ = 0;
  uint64_t bank_shift_ = 0;
  std::vector<uint64_t> bank_offset_;
  uint64_t max_bank_offset_ = 0;
  // Statistics: per bank for uneven requests, and once for all banks for even ones.
  std::vector<uint64_t> bank_requests_;
  std::vector<uint64_t> bank_bytes_;
  std::vector<uint64_t> bank_busy_;  // ps: the sum of its durations
  uint64_t even_requests_ = 0;
  uint64_t even_bytes_ = 0;          // per bank
  uint64_t even_busy_ = 0;           // ps, per bank
  std::vector<uint64_t> shares_;     // scratch: one request's bytes per bank
  // Picoseconds per byte of one bank at each port's rate: 1e12 x bank_count / port rate.
  double bank_read_picoseconds_per_byte_ = 0;
  double bank_write_picoseconds_per_byte_ = 0;
  // Requests that start at a multiple of the interleave and cover whole rounds of the banks
  // (whole vregs) give every bank the same share: address & round_start_mask_ == 0 and
  // bytes & round_bytes_mask_ == 0, when the interleave and a round are powers of two.
  bool whole_rounds_fast_path_ = false;
  uint64_t round_start_mask_ = 0;
  uint64_t round_bytes_mask_ = 0;
  // The last share converted to a duration (ps), per port (a stream repeats its sizes).
  uint64_t memo_share_[2] = {0, 0};
  uint64_t memo_duration_[2] = {0, 0};
};

}  // namespace tpusim::models
