#include "models/segment_log.h"

namespace tpusim::models {

bool SegmentLog::Written(isa::MemorySpace space, uint64_t address) const {
  for (const MemoryRange& range : memory_writes_) {
    if (range.space == space && address >= range.address && address - range.address < range.size) return true;
  }
  return false;
}

void SegmentLog::ReadMemory(isa::MemorySpace space, const Memory& memory, uint64_t address, uint64_t size) {
  if (spoiled_) return;
  // Runs of bytes not written yet, each an input as it reads now.
  for (uint64_t at = address; at < address + size;) {
    if (Written(space, at)) {
      ++at;
      continue;
    }
    uint64_t end = at + 1;
    while (end < address + size && !Written(space, end)) ++end;
    memory_inputs_.push_back({space, at, memory.Read(at, end - at)});
    at = end;
  }
  if (memory_inputs_.size() > kMaxEntries) Spoil();
}

void SegmentLog::WroteMemory(isa::MemorySpace space, uint64_t address, uint64_t size) {
  if (spoiled_ || size == 0) return;
  memory_writes_.push_back({space, address, size});
  if (memory_writes_.size() > kMaxEntries) Spoil();
}

}  // namespace tpusim::models
