// End-to-end runs of the topk kernel through the built binary: `tpusim run --check` against the
// reference evaluator (bit-exact: topk only compares and moves bits) on the logits workload and
// on odd shapes of every supported type, and one case whose outputs are checked against values
// computed here from XLA's semantics (floats in total order, ties to the lower index).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "tests/sim/exec_support.h"

namespace tpusim::exec_test {
namespace {

// A module whose root is the (values, indices) tuple, so --check compares both outputs.
fs::path TopKModule(const fs::path& dir, const std::string& type, const std::vector<int64_t>& dims, int64_t k,
                    bool largest) {
  std::string in = type + "[", out_values = type + "[", out_indices = "s32[";
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const std::string sep = d ? "," : "";
    const int64_t out_dim = d + 1 == dims.size() ? k : dims[d];
    in += sep + std::to_string(dims[d]);
    out_values += sep + std::to_string(out_dim);
    out_indices += sep + std::to_string(out_dim);
  }
  const fs::path path = dir / "topk.hlo";
  WriteText(path, "HloModule topk\n\nENTRY main {\n  x = " + in + "] parameter(0)\n  ROOT t = (" + out_values +
                      "], " + out_indices + "]) topk(x), k=" + std::to_string(k) +
                      ", largest=" + (largest ? "true" : "false") + "\n}\n");
  return path;
}

void RequireCheckPasses(const fs::path& module, int seed) {
  RunOk("run " + module.string() + " --check --seed " + std::to_string(seed));
}

TEST_CASE("topk kernel: the logits workload bf16[1,50000] k=10 passes --check") {
  const std::string module = std::string(TPUSIM_SHARED_DIR) + "/workloads/xla/topk_logits_k10_1x50000_bf16.hlo";
  for (int seed : {0, 1}) RequireCheckPasses(module, seed);
}

// Random inputs: floats in (-1, 1) (bf16 rounding makes ties), ints in [-64, 64) (many ties in
// every row), odd lengths that leave partial vregs, k = 1, k = n, rank 1 and rank 3, and
// rows counts that are not powers of two.
TEST_CASE("topk kernel: run --check on odd shapes of f32, bf16, f16, s32, u32") {
  struct Case {
    const char* name;
    const char* type;
    std::vector<int64_t> dims;
    int64_t k;
    bool largest;
  };
  const std::vector<Case> cases = {
      {"f32 [3,1000] k=7", "f32", {3, 1000}, 7, true},
      {"f32 [3,1000] k=1", "f32", {3, 1000}, 1, true},
      {"f32 [3,1000] k=7 smallest", "f32", {3, 1000}, 7, false},
      {"f32 [2,130] k=n", "f32", {2, 130}, 130, true},
      {"bf16 [5,333] k=7", "bf16", {5, 333}, 7, true},
      {"bf16 [1,3] k=n smallest", "bf16", {1, 3}, 3, false},
      {"f16 [2,3,129] k=4", "f16", {2, 3, 129}, 4, true},
      {"s32 [4,2000] k=50", "s32", {4, 2000}, 50, true},
      {"s32 [4,2000] k=9 smallest", "s32", {4, 2000}, 9, false},
      {"u32 [1000] k=5", "u32", {1000}, 5, true},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const fs::path dir = TempDir("topk_check");
      const fs::path module = TopKModule(dir, c.type, c.dims, c.k, c.largest);
      for (int seed : {0, 1}) RequireCheckPasses(module, seed);
    }
  }
}

// Element types the kernel does not lower are refused by name, never run: s8 here.
TEST_CASE("topk kernel: an s8 operand is refused with a cannot-lower error") {
  const fs::path dir = TempDir("topk_refused");
  const fs::path module = TopKModule(dir, "s8", {4, 100}, 3, true);
  const std::string output = RunExpectingError("run " + module.string() + " --check");
  CHECK(output.find("cannot lower topk") != std::string::npos);
  CHECK(output.find("f32, bf16, f16, s32 and u32") != std::string::npos);
}

// XLA's order for floats: total order by bits (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN).
int32_t TotalOrderKey(float value) {
  const int32_t bits = std::bit_cast<int32_t>(value);
  return bits < 0 ? bits ^ 0x7fffffff : bits;
}

// f32[3,1000], values in 50 levels (20 copies of each per row, so ties everywhere) plus NaN,
// infinities and both zeros. Expected: a stable sort of each row by the key, first k.
TEST_CASE("topk kernel: f32 [3,1000] k=7 equals a stable sort computed in the test") {
  const int64_t rows = 3, n = 1000, k = 7;
  std::vector<float> x(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) x[r * n + i] = static_cast<float>((i * 37 + r * 11) % 50 - 25);
  }
  x[0 * n + 500] = std::numeric_limits<float>::quiet_NaN();
  x[0 * n + 7] = std::numeric_limits<float>::infinity();
  x[0 * n + 8] = std::numeric_limits<float>::infinity();
  x[1 * n + 3] = -0.0f;
  x[1 * n + 999] = -std::numeric_limits<float>::infinity();
  x[2 * n + 998] = -std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> bytes(x.size() * 4);
  std::memcpy(bytes.data(), x.data(), bytes.size());
  for (bool largest : {true, false}) {
    SECTION(largest ? "largest" : "smallest") {
      const fs::path dir = TempDir("topk_known");
      const std::vector<int64_t> dims = {rows, n};
      isa::WriteNpy((dir / "x.npy").string(), isa::ElementType::kF32, dims, bytes);
      const fs::path module = TopKModule(dir, "f32", {rows, n}, k, largest);
      RunOk("run " + module.string() + " --check --input 0=" + (dir / "x.npy").string() +
            " --out " + dir.string());
      const isa::NpyArray values = ReadOutput(dir / "output_0.npy", isa::ElementType::kF32);
      const isa::NpyArray indices = ReadOutput(dir / "output_1.npy", isa::ElementType::kS32);
      REQUIRE(values.data.size() == static_cast<std::size_t>(rows * k * 4));
      REQUIRE(indices.data.size() == static_cast<std::size_t>(rows * k * 4));
      std::vector<uint32_t> got_values(rows * k);
      std::vector<int32_t> got_indices(rows * k);
      std::memcpy(got_values.data(), values.data.data(), values.data.size());
      std::memcpy(got_indices.data(), indices.data.data(), indices.data.size());
      for (int64_t row = 0; row < rows; ++row) {
        std::vector<int32_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
          const int32_t ka = TotalOrderKey(x[row * n + a]), kb = TotalOrderKey(x[row * n + b]);
          return largest ? ka > kb : ka < kb;
        });
        for (int64_t j = 0; j < k; ++j) {
          CHECK(got_indices[row * k + j] == order[j]);
          CHECK(got_values[row * k + j] == std::bit_cast<uint32_t>(x[row * n + order[j]]));
        }
      }
      // Spelled out for row 0 (largest): NaN, the two infinities, then the first three 24s.
      if (largest) {
        CHECK(got_indices[0] == 500);
        CHECK(got_indices[1] == 7);
        CHECK(got_indices[2] == 8);
        // 24 = (37 i) % 50 - 25  <=>  37 i = 49 (mod 50)  <=>  i = 49 * 23 = 27 (mod 50), as 37 * 23 = 851 = 1 (mod 50).
        CHECK(got_indices[3] == 27);
        CHECK(got_indices[4] == 77);
        CHECK(got_indices[5] == 127);
        CHECK(got_indices[6] == 177);
      }
    }
  }
}

}  // namespace
}  // namespace tpusim::exec_test
