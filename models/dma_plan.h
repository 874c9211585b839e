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

}  // namespace tpusim::models
