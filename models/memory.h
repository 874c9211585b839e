// A simulated memory: its bytes (held for real, sparsely) and the timing of requests to it. Every
// memory block (HBM, VMEM, SMEM, CMEM, host memory) is one of these.
//
// The timing is a plain function of the request and the issue time, with no SystemC process:
// Access() reserves the resources a request uses (channels, ports, banks, a PCIe direction) and
// returns when it completes, in the manner of a TLM-2.0 b_transport with an annotated delay. The
// caller (a DMA engine thread) waits until then. Data moves separately and in zero time (Read,
// Write, contents()), so timing-only runs skip it and get the same times.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <systemc>

#include "models/bandwidth_resource.h"
#include "models/sparse_bytes.h"

namespace tpusim::models {

enum class AccessKind : uint8_t { kRead, kWrite };
std::string_view ToString(AccessKind kind);  // "read", "write"

struct MemoryStats {
  std::string name;
  uint64_t read_requests = 0;
  uint64_t write_requests = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  // Channels, ports, banks, link directions: bytes and busy time of each.
  std::vector<ResourceStats> resources;
};
// `now`'s counts less `before`'s, resource by resource (both from one memory's stats()).
MemoryStats CountsSince(const MemoryStats& now, const MemoryStats& before);

class Memory {
 public:
  virtual ~Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  const std::string& name() const { return name_; }
  uint64_t capacity_bytes() const { return contents_.size(); }

  // Timing of one request of `bytes` at `address` issued at `issue`: reserves what it uses and
  // returns when it completes (read data returned, write accepted). A zero-byte request completes
  // at `issue`. Throws tpusim::Error if [address, address + bytes) is not inside the memory.
  sc_core::sc_time Access(AccessKind kind, uint64_t address, uint64_t bytes,
                          const sc_core::sc_time& issue);

  // Data, in zero simulated time. Throw tpusim::Error when out of range.
  void Read(uint64_t address, std::span<uint8_t> out) const;
  std::vector<uint8_t> Read(uint64_t address, uint64_t bytes) const;
  void Write(uint64_t address, std::span<const uint8_t> in);
  // The bytes themselves, for the DMA's copy path (which checks ranges once per transfer).
  SparseBytes& contents() { return contents_; }
  const SparseBytes& contents() const { return contents_; }

  // Throws tpusim::Error("<name>: <what> of N bytes at address 0x... runs past the end of its
  // capacity ...") unless [address, address + bytes) lies inside the memory.
  void CheckRange(std::string_view what, uint64_t address, uint64_t bytes) const;

  MemoryStats stats() const;
  // Adds `delta` (a CountsSince of this memory's stats) to what stats() reports: the requests of
  // a replayed segment, which never reach the timing (sim/chip/segment_replay.h).
  void AddReplayedCounts(const MemoryStats& delta);

 protected:
  Memory(std::string name, uint64_t capacity_bytes);
  // Counts a request in stats() (Access does; so does a memory's own second way in).
  void CountRequest(AccessKind kind, uint64_t bytes);
  // The timing of an in-range request of at least one byte.
  virtual sc_core::sc_time Serve(AccessKind kind, uint64_t address, uint64_t bytes,
                                 const sc_core::sc_time& issue) = 0;
  virtual void AppendResourceStats(std::vector<ResourceStats>& out) const = 0;

 private:
  std::string name_;
  SparseBytes contents_;
  MemoryStats counters_;  // the request and byte counts; resources are filled in by stats()
  MemoryStats replayed_;  // AddReplayedCounts's sums (no resources until the first)
};

// Memories by memory-space number (isa::MemorySpace: 0 HBM, 1 VMEM, 2 SMEM, 3 CMEM, 5 host, 6 ICI);
// nullptr where the chip has none.
using MemoryMap = std::array<Memory*, 7>;

}  // namespace tpusim::models
