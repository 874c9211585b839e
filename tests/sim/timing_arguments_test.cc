// sim/inputs.h's PrepareTimingArguments: a timing-only run draws values only for the parameters
// whose bytes it can move (models::kTimingOnlyMovedBytes), and those values are the ones a run
// with data gets, so the control flow they steer is the same.
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/hlo/parser.h"
#include "models/dma_unit.h"
#include "sim/inputs.h"

namespace {

bool SameBytes(const tpusim::hlo::Literal& a, const tpusim::hlo::Literal& b) {
  return std::ranges::equal(a.bytes(), b.bytes());
}

}  // namespace

TEST_CASE("timing-only arguments skip big parameters and keep the small ones' values", "[inputs]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule m
ENTRY e {
  big = f32[1024] parameter(0)
  n = s32[] parameter(1)
  edge = f32[16] parameter(2)
  over = f32[17] parameter(3)
  ROOT t = (f32[1024], s32[], f32[16], f32[17]) tuple(big, n, edge, over)
}
)", "m");
  const auto& entry = *module->entry();
  const auto full = tpusim::sim::PrepareArguments(entry, {}, 7);
  const auto timing =
      tpusim::sim::PrepareTimingArguments(entry, {}, 7, tpusim::models::kTimingOnlyMovedBytes);
  REQUIRE(timing.size() == 4);
  CHECK_FALSE(timing[0].has_value());  // 4096 bytes
  REQUIRE(timing[1].has_value());      // 4 bytes: the same value as with data
  CHECK(SameBytes(*timing[1], full[1]));
  REQUIRE(timing[2].has_value());      // 64 bytes: still moved
  CHECK(SameBytes(*timing[2], full[2]));
  CHECK_FALSE(timing[3].has_value());  // 68 bytes
}
