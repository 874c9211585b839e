// Issue 21, item 5: the loop watch (models/loop_watch.h) and the content hash it reads
// (SparseBytes::ContentHash): a loop whose deciding state comes back is caught at the iteration
// Brent's method promises, and one whose state keeps changing is not.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "isa/error.h"
#include "models/hbm.h"
#include "models/loop_watch.h"
#include "models/sparse_bytes.h"

namespace {

using namespace tpusim::models;

HbmParams SmallHbm() {
  HbmParams params;
  params.capacity_bytes = uint64_t{1} << 20;
  params.channel_count = 1;
  params.interleave_bytes = 512;
  params.channel_bandwidth_gbps = 32;
  params.access_latency_ns = 100;
  return params;
}

void Put(Hbm& hbm, uint64_t address, uint32_t value) {
  const uint8_t bytes[4] = {static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8),
                            static_cast<uint8_t>(value >> 16), static_cast<uint8_t>(value >> 24)};
  hbm.Write(address, bytes);
}

// A program whose loop at `top` (instruction 1) decides on the 4 bytes at hbm[0x100].
tpusim::isa::Program LoopProgram(const std::string& state) {
  return tpusim::isa::Assemble(
      ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=1, semaphores=2, "
      "cmem=false\n" + state + "\n  nop\ntop:\n  nop\n  br top\n");
}

}  // namespace

TEST_CASE("content hash: equal bytes hash equal, written zeros as untouched, each byte and its place count",
          "[models][loop_watch]") {
  SparseBytes a(uint64_t{1} << 20);
  SparseBytes b(uint64_t{1} << 20);
  const uint64_t page = SparseBytes::kPageBytes;
  // Nothing written, and zeros written (a page allocated), hash alike: 0.
  CHECK(a.ContentHash(0, 3 * page) == 0);
  b.Write(page + 5, std::vector<uint8_t>(100, 0));
  CHECK(b.ContentHash(0, 3 * page) == 0);
  // One byte makes a difference, the same byte in the same place hashes the same.
  const uint8_t one[1] = {1};
  a.Write(page + 7, one);
  CHECK(a.ContentHash(0, 3 * page) != 0);
  b.Write(page + 7, one);
  CHECK(a.ContentHash(0, 3 * page) == b.ContentHash(0, 3 * page));
  // The same byte one place on, or another value in its place, hashes otherwise.
  SparseBytes c(uint64_t{1} << 20);
  c.Write(page + 8, one);
  CHECK(c.ContentHash(0, 3 * page) != a.ContentHash(0, 3 * page));
  const uint8_t two[1] = {2};
  c.Write(page + 7, two);
  c.Write(page + 8, std::vector<uint8_t>(1, 0));
  CHECK(c.ContentHash(0, 3 * page) != a.ContentHash(0, 3 * page));
  // A range that leaves the byte out does not see it; an odd-sized range ending on it does.
  CHECK(a.ContentHash(0, page + 7) == 0);
  CHECK(a.ContentHash(page + 1, 7) != 0);
}

TEST_CASE("loop watch: a deciding state that comes back is caught where Brent's method says", "[models][loop_watch]") {
  Hbm hbm("hbm", SmallHbm());
  MemoryMap memories{};
  memories[tpusim::isa::MEMORY_SPACE_HBM] = &hbm;
  const tpusim::isa::Program program = LoopProgram(".loop top, hbm[0x100], size=0x4");
  LoopWatch watch;
  watch.Start(program, memories);
  CHECK_FALSE(watch.IsTop(0));
  REQUIRE(watch.IsTop(1));

  // Runs the loop over the counter values `sequence` (iteration 0 first, each next one reached by
  // the back branch); returns the iteration the watch stops it at, or -1.
  auto stopped_at = [&](const std::vector<uint32_t>& sequence) {
    for (std::size_t i = 0; i < sequence.size(); ++i) {
      Put(hbm, 0x100, sequence[i]);
      if (!watch.Reached(1, i > 0).empty()) return static_cast<int>(i);
    }
    return -1;
  };
  // A state that never changes: caught at iteration 1.
  CHECK(stopped_at({5, 5, 5}) == 1);
  // Entered afresh, the watch forgets the last run: a toggle 0, 1, 0, 1 (cycle 2 from iteration
  // 0): iteration 1 is saved after one step, then compared for two: caught at iteration 3.
  CHECK(stopped_at({0, 1, 0, 1, 0}) == 3);
  // A cycle of 3 after a prefix of 2 (9, 8, then 1, 2, 3, 1, 2, 3, ...): the saved state is
  // iteration 0's, then 1's, then 3's (2), which comes back at iteration 6.
  CHECK(stopped_at({9, 8, 1, 2, 3, 1, 2, 3, 1, 2, 3}) == 6);
  // A counter that keeps changing is never stopped.
  std::vector<uint32_t> counter(1000);
  for (uint32_t i = 0; i < counter.size(); ++i) counter[i] = i;
  CHECK(stopped_at(counter) == -1);
  // And what the stop says: the loop, the iterations, the bytes.
  Put(hbm, 0x100, 0);
  CHECK(watch.Reached(1, false).empty());
  CHECK(watch.Reached(1, true) ==
        "the loop at 'top' never ends: at iteration 1 the 4 bytes of state its ending depends on are as they were at "
        "iteration 0, so it would repeat iteration 0 forever");
}

TEST_CASE("loop watch: a loop deciding on no state stops at its first branch back, and bad regions are refused",
          "[models][loop_watch]") {
  Hbm hbm("hbm", SmallHbm());
  MemoryMap memories{};
  memories[tpusim::isa::MEMORY_SPACE_HBM] = &hbm;
  LoopWatch watch;
  const tpusim::isa::Program constant = LoopProgram(".loop top");
  watch.Start(constant, memories);
  CHECK(watch.Reached(1, false).empty());
  CHECK_THAT(watch.Reached(1, true), Catch::Contains("whether it ends depends on no state (its condition is a constant)"));
  // Past the memory's end, or in a memory the machine lacks: refused when the run starts.
  CHECK_THROWS_WITH(watch.Start(LoopProgram(".loop top, hbm[0xffffe], size=0x4"), memories),
                    Catch::Contains("loop 'top''s state of 4 bytes at address 0xffffe runs past the end"));
  CHECK_THROWS_WITH(watch.Start(LoopProgram(".loop top, host[0x0], size=0x4"), memories),
                    Catch::Contains("loop 'top': its state lies in host, which this machine does not have"));
}

TEST_CASE("loop counter: the values a counter takes from its start decide whether the loop can end", "[models][loop_watch]") {
  // From start v by step s, a counter of w bits takes exactly v + k * g modulo 2^w, g the largest
  // power of two dividing s: it ends where one of those makes `counter COMPARE bound` false.
  const auto ends = [](const char* type, int64_t step, const char* compare, int64_t bound, uint64_t start) {
    tpusim::isa::LoopCounter counter;
    counter.set_is_signed(type[0] == 's');
    counter.mutable_place()->set_size_bytes(static_cast<uint64_t>(std::stoi(type + 1) / 8));
    counter.set_step(step);
    counter.set_compare(compare);
    counter.set_bound(bound);
    return CounterEverEnds(counter, start);
  };
  // Even values never meet -1 (s32, 0, 2, 4, ...); 10 is met; an odd step meets every value.
  CHECK_FALSE(ends("s32", 2, "NE", -1, 0));
  CHECK(ends("s32", 2, "NE", 10, 0));
  CHECK(ends("s32", 3, "NE", -1, 0));
  CHECK(ends("s32", -2, "NE", 10, 0));  // down by 2 from 0, through the wrap, to 10
  // Below INT32_MAX forever for even values (the greatest even one is 2^31 - 2); odd ones reach it.
  CHECK_FALSE(ends("s32", 2, "LT", INT32_MAX, 0));
  CHECK(ends("s32", 2, "LT", INT32_MAX, 1));
  // u8 in steps of 4 from 0: 0, 4, .. 252; `<= 252` always holds, `<= 251` not at 252.
  CHECK_FALSE(ends("u8", 4, "LE", 252, 0));
  CHECK(ends("u8", 4, "LE", 251, 0));
  // s8 in steps of 64 from 0: 0, 64, -128, -64; `>= -128` always holds, `>= -127` not at -128.
  CHECK_FALSE(ends("s8", 64, "GE", -128, 0));
  CHECK(ends("s8", 64, "GE", -127, 0));
  // u16 from 3 in steps of 4: the least value is 3; `> 2` always holds, `> 3` not at 3.
  CHECK_FALSE(ends("u16", 4, "GT", 2, 3));
  CHECK(ends("u16", 4, "GT", 3, 3));
  // A step of 0: one value, which the comparison decides; EQ ends with any other step.
  CHECK_FALSE(ends("s32", 0, "LT", 10, 5));
  CHECK(ends("s32", 0, "LT", 10, 10));
  CHECK(ends("s32", 1, "EQ", 0, 0));
  // 64 bits: even values never meet -1, any value is met by a step of 1.
  CHECK_FALSE(ends("s64", 2, "NE", -1, 0));
  CHECK(ends("s64", 1, "NE", -1, 0));
  CHECK_FALSE(ends("u64", 2, "NE", -1, 6));
}

TEST_CASE("loop watch: a counter that can never end its loop faults at the first branch back", "[models][loop_watch]") {
  Hbm hbm("hbm", SmallHbm());
  MemoryMap memories{};
  memories[tpusim::isa::MEMORY_SPACE_HBM] = &hbm;
  LoopWatch watch;
  const tpusim::isa::Program program = LoopProgram(
      ".loop top, hbm[0x100], size=0x4\n.loop top, counter=hbm[0x100], type=s32, step=2, while=NE, bound=-1");
  REQUIRE(program.loops(0).has_counter());
  watch.Start(program, memories);
  // Started at 1, the counter takes the odd values, -1 among them: the watch lets it run.
  Put(hbm, 0x100, 1);
  CHECK(watch.Reached(1, false).empty());
  for (uint32_t i = 3; i < 100; i += 2) {
    Put(hbm, 0x100, i);
    CHECK(watch.Reached(1, true).empty());
  }
  // Started at -4 (as the loop starts: what the watch reads then decides), it never meets -1.
  Put(hbm, 0x100, static_cast<uint32_t>(-4));
  CHECK(watch.Reached(1, false).empty());
  Put(hbm, 0x100, static_cast<uint32_t>(-2));
  CHECK(watch.Reached(1, true) ==
        "the loop at 'top' never ends: its counter (s32 at hbm[0x100]) is -4 as the loop starts and adds 2 each "
        "iteration, so it takes only the values congruent to 0 modulo 2, for each of which `counter NE -1` holds");
  // Its counter must lie in memory the machine has.
  CHECK_THROWS_WITH(
      watch.Start(LoopProgram(".loop top, counter=hbm[0xffffe], type=s32, step=1, while=LT, bound=10"), memories),
      Catch::Contains("loop 'top''s counter of 4 bytes at address 0xffffe runs past the end"));
}
