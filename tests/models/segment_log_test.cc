// SegmentLog (models/segment_log.h): a segment's inputs are what it reads before it writes them,
// with the values they had; its writes are the ranges it wrote. A replay needs those inputs equal,
// so a value the segment made itself must not be one.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "models/segment_log.h"
#include "models/smem.h"

namespace {

using namespace tpusim::models;
using tpusim::isa::MEMORY_SPACE_HBM;
using tpusim::isa::MEMORY_SPACE_SMEM;

Smem MakeSmem() {
  SmemParams params;
  params.capacity_bytes = 4096;
  params.bandwidth_bytes_per_cycle = 8;
  params.access_latency_cycles = 1;
  params.clock_mhz = 1000;
  return Smem("smem", params);
}

}  // namespace

TEST_CASE("segment log: registers read before they are written are inputs, once each", "[models][reuse]") {
  SegmentLog log;
  log.ReadRegister(3, 7);
  log.ReadRegister(3, 7);  // again: still one input
  log.WroteRegister(4);
  log.ReadRegister(4, 99);  // the segment's own value: not an input
  log.WroteRegister(3);
  log.ReadRegister(3, 8);
  REQUIRE(log.register_inputs().size() == 1);
  CHECK(log.register_inputs()[0] == std::pair<uint32_t, int64_t>{3, 7});
  CHECK(log.written_registers() == ((uint64_t{1} << 3) | (uint64_t{1} << 4)));
  CHECK(!log.spoiled());
}

TEST_CASE("segment log: memory bytes read before the segment wrote them are inputs with their values",
          "[models][reuse]") {
  Smem smem = MakeSmem();
  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6, 7, 8};
  smem.Write(16, bytes);
  SegmentLog log;
  log.WroteMemory(MEMORY_SPACE_SMEM, 18, 2);  // bytes 18 and 19 are the segment's own
  log.ReadMemory(MEMORY_SPACE_SMEM, smem, 16, 8);
  // The bytes around them are inputs, as two runs: [16, 18) and [20, 24).
  REQUIRE(log.memory_inputs().size() == 2);
  CHECK(log.memory_inputs()[0].address == 16);
  CHECK(log.memory_inputs()[0].bytes == std::vector<uint8_t>{1, 2});
  CHECK(log.memory_inputs()[1].address == 20);
  CHECK(log.memory_inputs()[1].bytes == std::vector<uint8_t>{5, 6, 7, 8});
  // The same addresses in another memory space are other bytes.
  log.ReadMemory(MEMORY_SPACE_HBM, smem, 18, 2);
  REQUIRE(log.memory_inputs().size() == 3);
  CHECK(log.memory_inputs()[2].bytes == std::vector<uint8_t>{3, 4});
  REQUIRE(log.memory_writes().size() == 1);
  CHECK(log.memory_writes()[0].address == 18);
  CHECK(log.memory_writes()[0].size == 2);
}

TEST_CASE("segment log: too many entries, or a spoiling event, give the segment up", "[models][reuse]") {
  Smem smem = MakeSmem();
  SegmentLog log;
  for (std::size_t i = 0; i <= SegmentLog::kMaxEntries; ++i) log.WroteMemory(MEMORY_SPACE_HBM, 2 * i, 1);
  CHECK(log.spoiled());
  SegmentLog top;
  top.Spoil();
  CHECK(top.spoiled());
}
