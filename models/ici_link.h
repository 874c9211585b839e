// The chip's end of its inter-chip interconnect (ICI) as the DMA engines see it: memory space
// `ici` (isa::MEMORY_SPACE_ICI). A simulation runs one device, so the ICI endpoint stands for the
// ring that a collective runs over (docs/timing.md, "ICI"):
// - a DMA *write* to it sends the bytes to the next device of the ring: it occupies the outgoing
//   direction for bytes / (link_bandwidth x ring_link_count);
// - a DMA *read* from it receives bytes from the previous device: the incoming direction, the same
//   rate;
// - a request that finds its direction idle starts a message and first waits one hop (latency_ns);
//   requests that arrive while the direction is busy stream behind it, so a transfer of B bytes
//   takes latency + B / rate however many requests the DMA engine keeps in flight. In a ring every device sends and receives the same bytes at the same time, so
//   the simulated device's receive stands for its neighbour's send.
// Addresses only tag a transfer. The bytes written are kept and a read returns them (a loop-back):
// the other devices' data does not exist here, so the compiler uses this memory only in runs that
// move no collective data (timing-only) and refuses functional multi-device collectives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/bandwidth_resource.h"
#include "models/memory.h"

namespace tpusim::models {

// The ArchConfig's `ici` block.
struct IciParams {
  double link_bandwidth_gbps = 0;  // one link, each direction; GB/s = 1e9 B/s
  uint32_t ring_link_count = 0;    // links a ring's traffic is spread over, each direction
  double latency_ns = 0;           // one hop
};

void Validate(const IciParams& params);  // throws tpusim::Error naming the field

class IciLink final : public Memory {
 public:
  // `window_bytes`: the addresses a transfer may name. Validates `params`.
  IciLink(std::string name, const IciParams& params, uint64_t window_bytes);

  // Bytes per second in each direction: link_bandwidth_gbps x ring_link_count x 1e9.
  double ring_bytes_per_second() const { return outgoing_.bandwidth.bytes_per_second(); }

 private:
  sc_core::sc_time Serve(AccessKind kind, uint64_t address, uint64_t bytes,
                         const sc_core::sc_time& issue) override;
  void AppendResourceStats(std::vector<ResourceStats>& out) const override;

  // One direction of the ring.
  struct Direction {
    BandwidthResource bandwidth;
    bool used = false;  // whether a request has used it (until then busy_until means nothing)
  };

  sc_core::sc_time latency_;
  Direction outgoing_;  // sends (DMA writes)
  Direction incoming_;  // receives (DMA reads)
};

}  // namespace tpusim::models
