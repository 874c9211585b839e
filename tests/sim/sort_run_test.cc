// End-to-end runs of the sort and gather kernels through the built binary: `tpusim run --check`
// against the reference evaluator (bit-exact: these ops only move and compare bits) on odd shapes
// of every supported type, and one sort whose output is checked against values computed here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "tests/sim/exec_support.h"

namespace tpusim::exec_test {
namespace {

std::string Module(const std::string& name) {
  return std::string(TPUSIM_SOURCE_DIR) + "/tests/sim/sort_modules/" + name + ".hlo";
}

void RequireCheckPasses(const std::string& name, int seed) {
  const Result r = RunTpusim("run " + Module(name) + " --check --seed " + std::to_string(seed));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

// f32 [37,300] LT (FLOAT) along the minor dim; bf16 [129,5] along the major dim with JAX's
// canonicalizing comparator; f32 keys with an s32 iota payload, GT TOTALORDER (argsort);
// s32 [3,50,4] GT along the middle dim; u32 [1000] (rank 1, padded to 1024).
TEST_CASE("sort kernel: run --check on odd shapes of f32, bf16, s32, u32") {
  for (const char* name : {"f32_lt", "bf16_canon_dim0", "argsort_gt", "s32_gt", "u32_rank1"}) {
    SECTION(name) {
      for (int seed : {0, 1}) RequireCheckPasses(name, seed);
    }
  }
}

// Gather: rows of a table by clamped indices (random s32 indices, mostly out of range, so the
// clamp to [0, 43] is exercised), and JAX's take_along_axis form with batching dims.
TEST_CASE("gather kernel: run --check, row lookup and take_along_axis") {
  for (const char* name : {"gather_rows", "gather_take"}) {
    SECTION(name) { RequireCheckPasses(name, 0); }
  }
}

// Known values: s32[3,50,4] sorted descending along dim 1; the expected output is computed here
// by sorting each row of the input we write.
TEST_CASE("sort kernel: s32 descending output equals a sort computed in the test") {
  const fs::path dir = TempDir("sort_known");
  std::vector<int32_t> values(600);
  for (int i = 0; i < 600; ++i) values[i] = static_cast<int32_t>((i * 7919) % 601) - 300;
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  const std::vector<int64_t> dims = {3, 50, 4};
  isa::WriteNpy((dir / "x.npy").string(), isa::ElementType::kS32, dims, bytes);
  const Result r = RunTpusim("run " + Module("s32_gt") + " --input 0=" + (dir / "x.npy").string() + " --out " +
                             dir.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const isa::NpyArray got = ReadOutput(dir / "output_0.npy", isa::ElementType::kS32);
  REQUIRE(got.data.size() == bytes.size());
  std::vector<int32_t> out(600);
  std::memcpy(out.data(), got.data.data(), got.data.size());
  for (int a = 0; a < 3; ++a) {
    for (int c = 0; c < 4; ++c) {
      std::vector<int32_t> row;
      for (int b = 0; b < 50; ++b) row.push_back(values[(a * 50 + b) * 4 + c]);
      std::sort(row.begin(), row.end(), std::greater<>());
      for (int b = 0; b < 50; ++b) CHECK(out[(a * 50 + b) * 4 + c] == row[b]);
    }
  }
}

}  // namespace
}  // namespace tpusim::exec_test

namespace tpusim::exec_test {
namespace {

// bf16 keys with an s32 payload: refused with a CannotLower error naming the sort (their rows
// would be unpacked in different orders), never a wrong answer.
TEST_CASE("sort kernel: mixed 16- and 32-bit operands are refused clearly") {
  const Result r = RunTpusim("run " + Module("argsort_bf16_s32") + " --check");
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("cannot lower sort") != std::string::npos);
  CHECK(r.output.find("mixed 16- and 32-bit") != std::string::npos);
}

}  // namespace
}  // namespace tpusim::exec_test
