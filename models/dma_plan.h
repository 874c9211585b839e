// A DMA transfer cut into the requests an engine issues (docs/timing.md, "DMA"):
// - reads: for every aligned window of burst_bytes in the source memory that the region touches,
//   one request covering the touched span of that window (first to last touched byte; gaps inside
//   are read and discarded, as a burst would), in ascending address order;
// - writes: the same for the destination (gaps are masked: the data path writes element bytes
//   only), each with the index of the last read holding one of its bytes.
// Windows are aligned in absolute addresses, so with burst_bytes <= hbm.interleave_bytes every
// request lies in one HBM channel.
//
// Planning walks the region once (WalkRegion); the same walk copies the bytes when asked to, so a
// timing-only plan is built by the very same code and gives the very same requests.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/dma_transfer.h"
#include "models/region_walk.h"

namespace tpusim::models {

struct DmaRequest {
  uint64_t address = 0;
  uint64_t bytes = 0;
};

struct DmaPlan {
  std::vector<DmaRequest> reads;   // source memory, ascending address
  std::vector<DmaRequest> writes;  // destination memory, ascending address
  // write_needs[i]: index into `reads` of the last read that holds a byte of writes[i].
  std::vector<uint64_t> write_needs;
  uint64_t payload_bytes = 0;      // element bytes the region holds
};

// Validates `transfer` (ValidateTransfer) and plans it for bursts of `burst_bytes` (a power of
// two). With `move_data` it also copies the region's bytes from the source memory to the
// destination memory, in zero simulated time. `cache`, if given, keeps the layouts' offset
// tables for later transfers (the plan is the same with or without it).
DmaPlan PlanDma(const DmaTransfer& transfer, uint64_t burst_bytes, bool move_data,
                DimTableCache* cache = nullptr);

// A kept plan and where it lies: its requests' addresses plus read_offset (source) and
// write_offset (destination) are the transfer's.
struct PlacedDmaPlan {
  std::shared_ptr<const DmaPlan> plan;
  uint64_t read_offset = 0;
  uint64_t write_offset = 0;
};

// The plans of transfers that move no data (timing-only), kept by everything a plan depends on:
// the memories, shapes, starts and sizes, the burst size, and each base address's place within a
// burst window. Windows are aligned in absolute addresses, so moving a base address by whole
// windows moves every request by as much: a plan is kept for the bases reduced to their offset in
// a window, and placed at the transfer's (each layer of a model, each buffer of a loop, reads
// the same shapes at other addresses). Kernels issue the same transfers again and again (a dot's
// weight panel for every block of rows, a loop body's DMAs every iteration), and walking a
// transposing region costs a call per element (Gemma's logits weights: 302 M; MaxText's attention
// relayouts in its layer loop: 134 M each). Bounded: once the kept plans hold kMaxRequests
// requests (about 24 bytes each), all are dropped; a plan of more than half of that is not kept.
class DmaPlanCache {
 public:
  static constexpr std::size_t kMaxRequests = std::size_t{1} << 24;

  PlacedDmaPlan Plan(const DmaTransfer& transfer, uint64_t burst_bytes, DimTableCache* tables);

 private:
  struct Entry {
    DmaTransfer transfer;  // bases reduced to their place in a window; no semaphore or id
    uint64_t burst_bytes = 0;
    std::shared_ptr<const DmaPlan> plan;
  };
  std::unordered_multimap<uint64_t, Entry> entries_;
  std::size_t requests_ = 0;
};

}  // namespace tpusim::models
