// End-to-end tests of f16 (compiler/lower/f16_emulation.h): the VPU has no f16, so the element-wise
// and dot kernels widen f16 to f32 and round back with integer ops. Outputs are compared bit for
// bit with values computed here by isa's converter (an independent implementation of f32 -> f16
// rounding): an f16 multiply or subtract is the f32 result rounded once to f16 (exact for
// multiply; for subtract f32's 24 bits >= 2 x 11 + 2 make the double rounding innocuous), and
// --check also compares with the reference evaluator.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "isa/convert.h"
#include "tests/compiler/activation_modules.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;
using tpusim::isa::F16ToF32;
using tpusim::isa::F32ToF16;

// f16 bit patterns that exercise every path of the conversions: zeros, denormals (smallest,
// largest), the smallest normal, ordinary values, the largest finite, infinities, NaN.
const uint16_t kSpecial[] = {0x0000, 0x8000, 0x0001, 0x03ff, 0x8200, 0x0400, 0x3c00, 0xbc00, 0x3555, 0x4248,
                             0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x5bff, 0x1400, 0x0c01, 0x3c01, 0xc400};

// Element i of operand `which`: the special values first, then a spread of ordinary bit patterns.
uint16_t F16At(int64_t i, int which) {
  constexpr int64_t n = sizeof(kSpecial) / sizeof(kSpecial[0]);
  if (i < n * n) return which == 0 ? kSpecial[i / n] : kSpecial[i % n];
  const uint32_t x = static_cast<uint32_t>(i * 2654435761u + which * 40503u);
  return static_cast<uint16_t>((x >> 7) & 0x7bff) | static_cast<uint16_t>(x & 0x8000);  // finite
}

std::vector<uint8_t> F16Bytes(int64_t count, int which) {
  std::vector<uint8_t> bytes(2 * count);
  for (int64_t i = 0; i < count; ++i) {
    const uint16_t h = F16At(i, which);
    std::memcpy(&bytes[2 * i], &h, 2);
  }
  return bytes;
}

std::vector<uint16_t> OutputF16(const fs::path& dir, std::size_t count) {
  const tpusim::isa::NpyArray got = tpusim::isa::ReadNpy((dir / "out" / "output_0.npy").string(), ElementType::kF16);
  REQUIRE(got.data.size() == 2 * count);
  std::vector<uint16_t> values(count);
  std::memcpy(values.data(), got.data.data(), got.data.size());
  return values;
}

bool IsNan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

// `op` of two f16 arrays of `dims`, every element checked bit for bit (any NaN matches any NaN).
void ElementwiseF16(const std::string& op, const std::vector<int64_t>& dims) {
  int64_t count = 1;
  std::string shape;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    count *= dims[d];
    shape += (d ? "," : "") + std::to_string(dims[d]);
  }
  INFO(op << " f16[" << shape << "]");
  const fs::path dir = TempDir(fmt::format("f16_{}_{}", op, count));
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kF16, dims, F16Bytes(count, 0));
  tpusim::isa::WriteNpy((dir / "in1.npy").string(), ElementType::kF16, dims, F16Bytes(count, 1));
  RunModuleChecked(dir,
      fmt::format("HloModule m\n\nENTRY main {{\n  a = f16[{0}] parameter(0)\n  b = f16[{0}] parameter(1)\n"
                  "  ROOT r = f16[{0}] {1}(a, b)\n}}\n",
                  shape, op),
      "tpu_v4", 2);
  const std::vector<uint16_t> got = OutputF16(dir, count);
  int64_t bad = 0;
  int64_t first = -1;
  for (int64_t i = 0; i < count; ++i) {
    const float a = F16ToF32(F16At(i, 0));
    const float b = F16ToF32(F16At(i, 1));
    const uint16_t want = F32ToF16(op == "multiply" ? a * b : op == "subtract" ? a - b : a + b);
    const bool same = got[i] == want || (IsNan(got[i]) && IsNan(want));
    if (!same && first < 0) first = i;
    bad += !same;
  }
  INFO("first mismatch at " << first << ": got " << (first >= 0 ? got[first] : 0));
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("f16: multiply and subtract bit for bit, specials and partial tiles", "[f16]") {
  ElementwiseF16("multiply", {40, 300});  // 400 special pairs, then ordinary values; ragged 8x128 tiles
  ElementwiseF16("subtract", {40, 300});
  ElementwiseF16("add", {1000});           // rank 1: T(1024)(128)(2,1), a partial tile
}

TEST_CASE("f16: a chain keeps f32 values between its ops and rounds once, scalars and constants widened", "[f16]") {
  // (a * 3 - s) with s an f16 scalar parameter. XLA computes f16 arithmetic in f32 and, with excess
  // precision allowed (its default), does not round the product to f16 before the subtract
  // (compiler/passes/f16_normalization.h): one rounding, of the f32 result.
  const fs::path dir = TempDir("f16_chain");
  const int64_t n = 2048;
  std::vector<uint8_t> a(2 * n);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = F32ToF16(1.0f + static_cast<float>(i) / 1024.0f);  // 1 .. 3 in steps f16 holds exactly
    std::memcpy(&a[2 * i], &h, 2);
  }
  const std::vector<int64_t> dims = {16, 128};
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kF16, dims, a);
  const uint16_t s = F32ToF16(0.001f);
  tpusim::isa::WriteNpy((dir / "in1.npy").string(), ElementType::kF16, std::vector<int64_t>{},
                        std::vector<uint8_t>{static_cast<uint8_t>(s & 0xff), static_cast<uint8_t>(s >> 8)});
  RunModuleChecked(dir,
      "HloModule m\n\nENTRY main {\n  a = f16[16,128] parameter(0)\n  s = f16[] parameter(1)\n"
      "  c = f16[] constant(3)\n  cb = f16[16,128] broadcast(c), dimensions={}\n"
      "  sb = f16[16,128] broadcast(s), dimensions={}\n  p = f16[16,128] multiply(a, cb)\n"
      "  ROOT r = f16[16,128] subtract(p, sb)\n}\n",
      "tpu_v4", 2);
  const std::vector<uint16_t> got = OutputF16(dir, n);
  int64_t bad = 0;
  int64_t rounded_twice_differs = 0;  // elements where rounding the product first gives another f16
  for (int64_t i = 0; i < n; ++i) {
    const float a_i = F16ToF32(F32ToF16(1.0f + static_cast<float>(i) / 1024.0f));
    const uint16_t want = F32ToF16(a_i * 3.0f - F16ToF32(s));
    bad += got[i] != want;
    rounded_twice_differs += F32ToF16(F16ToF32(F32ToF16(a_i * 3.0f)) - F16ToF32(s)) != want;
  }
  CHECK(bad == 0);
  CHECK(rounded_twice_differs > 100);  // the data tells the two semantics apart
}

TEST_CASE("f16: an activation function runs as one kernel, equal to the reference on special values", "[f16]") {
  // selu over the special values (denormals, infinities, NaN, the largest finite: exp overflows to
  // inf and the product with alpha stays inf) and a spread of ordinary ones. One kernel: the
  // scalars are recomputed in registers, nothing but x is read and r written (f16 bytes: 2 x 2 MiB).
  const fs::path dir = TempDir("f16_selu");
  const std::vector<int64_t> dims = {512, 1024};
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kF16, dims, F16Bytes(512 * 1024, 0));
  const std::string out = RunModuleChecked(dir, tpusim::test_modules::kSeluF16, "tpu_v4", 1);
  CHECK(out.find("check passed") != std::string::npos);
  CHECK(out.find("every element equal") != std::string::npos);
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  const std::string report = ReadText(dir / "r.json");
  const std::size_t first = report.find("\"opcode\": ");
  REQUIRE(first != std::string::npos);
  CHECK(report.find("\"opcode\": ", first + 1) == std::string::npos);
  CHECK(JsonNumber(report, "bytes_accessed", first) == 4 * 512 * 1024);
}

TEST_CASE("f16: dot on the MXU sums in f32 and rounds once to f16", "[f16]") {
  // ones[24,3001] x ones[3001,40]: the sum 3001 is exact in f32 in any order; f16 (11 bits) holds
  // even integers there, and 3001 is a tie that rounds to even, 3000. Rows of 0.25 give 750.25, a
  // tie between 750 and 750.5 -> 750. Rounding every partial sum to f16 instead would stop at
  // 2048 (2048 + 1 rounds back) and at 512 (512 + 0.25 rounds back).
  const fs::path dir = TempDir("f16_dot");
  const int64_t m = 24, k = 3001, n = 40;
  std::vector<uint8_t> lhs(2 * m * k), rhs(2 * k * n);
  const uint16_t one = 0x3c00, quarter = 0x3400;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      const uint16_t h = r < m / 2 ? one : quarter;
      std::memcpy(&lhs[2 * (r * k + c)], &h, 2);
    }
  }
  for (int64_t i = 0; i < k * n; ++i) std::memcpy(&rhs[2 * i], &one, 2);
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kF16, std::vector<int64_t>{m, k}, lhs);
  tpusim::isa::WriteNpy((dir / "in1.npy").string(), ElementType::kF16, std::vector<int64_t>{k, n}, rhs);
  RunModuleChecked(dir,
      "HloModule m\n\nENTRY main {\n  a = f16[24,3001] parameter(0)\n  b = f16[3001,40] parameter(1)\n"
      "  ROOT d = f16[24,40] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
      "tpu_v4", 2);
  const std::vector<uint16_t> got = OutputF16(dir, m * n);
  const uint16_t ones_sum = F32ToF16(3001.0f), quarters_sum = F32ToF16(750.25f);
  REQUIRE(F16ToF32(ones_sum) == 3000.0f);
  REQUIRE(F16ToF32(quarters_sum) == 750.0f);
  int64_t bad = 0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) bad += got[r * n + c] != (r < m / 2 ? ones_sum : quarters_sum);
  }
  CHECK(bad == 0);
}

TEST_CASE("f16: random dot within the evaluator's bound (--check)", "[f16]") {
  const fs::path dir = TempDir("f16_dot_random");
  WriteText(dir / "m.hlo",
            "HloModule m\n\nENTRY main {\n  a = f16[70,300] parameter(0)\n  b = f16[300,130] parameter(1)\n"
            "  ROOT d = f16[70,130] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  RunOk("run " + (dir / "m.hlo").string() + " --config tpu_v4 --check");
}
