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
  RunOk("run " + Module(name) + " --check --seed " + std::to_string(seed));
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
  RunOk("run " + Module("s32_gt") + " --input 0=" + (dir / "x.npy").string() + " --out " +
        dir.string());
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

// Mixed 16- and 32-bit operands (the argsort workload's shape: bf16 keys, s32 iota): the 16-bit
// arrays are unpacked in row order then. bf16[20,70] GT (two sublanes of rows), bf16[300,70] LT
// (four), and s32 keys along dim 0 carrying a bf16 and an f32 payload (1000 rows: all eight).
TEST_CASE("sort kernel: mixed 16- and 32-bit operands pass --check") {
  for (const char* name : {"argsort_bf16_s32", "argsort_bf16_s32_wide", "s32_key_bf16_payload"}) {
    SECTION(name) {
      for (int seed : {0, 1}) RequireCheckPasses(name, seed);
    }
  }
}

// Known values: the argsort of bf16[20,70] (descending, total order, stable) computed here.
TEST_CASE("sort kernel: bf16 argsort indices equal a stable sort computed in the test") {
  const fs::path dir = TempDir("argsort_known");
  const int rows = 20, n = 70;
  // Values in 9 levels (ties in every row), both zeros, and a NaN.
  std::vector<uint16_t> x(rows * n);
  for (int i = 0; i < rows * n; ++i) {
    const float v = static_cast<float>((i * 13) % 9) - 4.0f;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    x[i] = static_cast<uint16_t>(bits >> 16);  // exact: small integers
  }
  x[5] = 0x8000;   // -0
  x[75] = 0x7fc0;  // +NaN
  std::vector<uint8_t> bytes(x.size() * 2);
  std::memcpy(bytes.data(), x.data(), bytes.size());
  const std::vector<int64_t> dims = {rows, n};
  isa::WriteNpy((dir / "x.npy").string(), isa::ElementType::kBF16, dims, bytes);
  RunOk("run " + Module("argsort_bf16_s32") + " --check --input 0=" + (dir / "x.npy").string() +
        " --out " + dir.string());
  const isa::NpyArray got = ReadOutput(dir / "output_0.npy", isa::ElementType::kS32);
  REQUIRE(got.data.size() == static_cast<std::size_t>(rows * n * 4));
  std::vector<int32_t> out(rows * n);
  std::memcpy(out.data(), got.data.data(), got.data.size());
  // Total order of bf16 bits: negative values reversed below the positive ones.
  const auto key = [](uint16_t b) { return (b & 0x8000) ? -static_cast<int32_t>(b & 0x7fff) - 1 : static_cast<int32_t>(b); };
  for (int row = 0; row < rows; ++row) {
    std::vector<int32_t> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return key(x[row * n + a]) > key(x[row * n + b]); });
    for (int i = 0; i < n; ++i) CHECK(out[row * n + i] == order[i]);
  }
}

}  // namespace
}  // namespace tpusim::exec_test
