// What a scalar core's program read and wrote during one segment (the run from one core.sync to
// the next; sim/chip/segment_replay.h): the scalar registers and memory bytes it read before it
// wrote them, whose values a replay of the segment needs to find again, and the memory it wrote,
// whose bytes at the segment's end a replay writes. Memory here is what moves data in a
// timing-only run: SMEM loads and stores, and DMAs of at most kTimingOnlyMovedBytes.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "isa/program.pb.h"
#include "models/memory.h"

namespace tpusim::models {

struct MemoryBytes {
  isa::MemorySpace space = isa::MEMORY_SPACE_HBM;
  uint64_t address = 0;
  std::vector<uint8_t> bytes;
};
struct MemoryRange {
  isa::MemorySpace space = isa::MEMORY_SPACE_HBM;
  uint64_t address = 0;
  uint64_t size = 0;
};

class SegmentLog {
 public:
  // A log that records more inputs or writes than this gives up (spoiled): such a segment is
  // simulated every time. A kernel's scalar traffic is a few words (counters, indices).
  static constexpr std::size_t kMaxEntries = 4096;

  void ReadRegister(uint32_t index, int64_t value) {
    const uint64_t bit = uint64_t{1} << index;
    if (((written_registers_ | read_registers_) & bit) != 0) return;
    read_registers_ |= bit;
    register_inputs_.emplace_back(index, value);
  }
  void WroteRegister(uint32_t index) { written_registers_ |= uint64_t{1} << index; }
  // `size` bytes at `address` of `memory` (in `space`), read now: those this segment has not
  // written are inputs.
  void ReadMemory(isa::MemorySpace space, const Memory& memory, uint64_t address, uint64_t size);
  void WroteMemory(isa::MemorySpace space, uint64_t address, uint64_t size);
  // The segment did something a replay would not redo (it reached a loop's top, which the loop
  // watch must see): it is never replayed.
  void Spoil() { spoiled_ = true; }

  bool spoiled() const { return spoiled_; }
  uint64_t written_registers() const { return written_registers_; }
  const std::vector<std::pair<uint32_t, int64_t>>& register_inputs() const { return register_inputs_; }
  const std::vector<MemoryBytes>& memory_inputs() const { return memory_inputs_; }
  const std::vector<MemoryRange>& memory_writes() const { return memory_writes_; }

 private:
  bool Written(isa::MemorySpace space, uint64_t address) const;

  bool spoiled_ = false;
  uint64_t read_registers_ = 0;
  uint64_t written_registers_ = 0;
  std::vector<std::pair<uint32_t, int64_t>> register_inputs_;
  std::vector<MemoryBytes> memory_inputs_;
  std::vector<MemoryRange> memory_writes_;
};

}  // namespace tpusim::models
