// End-to-end tests of f8e5m2 and f8e4m3fn (compiler/passes/f8_conversion.h): converts are rewritten
// into integer and f32 VPU operations, dots widen f8 operands to bf16. Outputs are compared bit
// for bit with isa's converter (isa/convert.h, an independent implementation of the formats), and
// --check compares them with the reference evaluator as well.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "isa/convert.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

struct F8Type {
  const char* name;
  ElementType type;
  float (*decode)(uint8_t);
  uint8_t (*encode)(float);
};

const F8Type kTypes[] = {
    {"f8e5m2", ElementType::kF8E5M2, tpusim::isa::F8E5M2ToF32, tpusim::isa::F32ToF8E5M2},
    {"f8e4m3fn", ElementType::kF8E4M3FN, tpusim::isa::F8E4M3FNToF32, tpusim::isa::F32ToF8E4M3FN},
};

std::vector<uint8_t> Output(const fs::path& dir, ElementType type, std::size_t bytes) {
  const tpusim::isa::NpyArray got = tpusim::isa::ReadNpy((dir / "out" / "output_0.npy").string(), type);
  REQUIRE(got.data.size() == bytes);
  return got.data;
}

// f32 inputs that exercise every rounding path of f32 -> f8: every f8 value, the midpoint of
// each pair of neighbours (a tie) and the f32 values just below and above it, zeros, f32
// denormals, values past the largest finite (overflow), infinities and NaNs.
std::vector<float> NarrowingInputs(const F8Type& t) {
  std::vector<float> values;
  std::vector<float> finite;
  for (int b = 0; b < 128; ++b) {
    const float v = t.decode(static_cast<uint8_t>(b));
    if (std::isfinite(v)) finite.push_back(v);
  }
  for (std::size_t i = 0; i < finite.size(); ++i) {
    for (float sign : {1.0f, -1.0f}) {
      values.push_back(sign * finite[i]);
      if (i + 1 < finite.size()) {
        const float mid = (finite[i] + finite[i + 1]) / 2;  // exact: f32 has room for one more bit
        values.push_back(sign * mid);
        values.push_back(sign * std::nextafter(mid, 0.0f));
        values.push_back(sign * std::nextafter(mid, 1e30f));
      }
    }
  }
  const float largest = finite.back();
  const float step = largest - finite[finite.size() - 2];
  for (float v : {largest + step / 2, std::nextafter(largest + step / 2, 0.0f), std::nextafter(largest + step / 2, 1e30f),
                  largest * 2, 1e30f, std::numeric_limits<float>::denorm_min(), 1e-40f, 0.0f,
                  std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    values.push_back(v);
    values.push_back(-v);
  }
  return values;
}

}  // namespace

TEST_CASE("f8: every bit pattern widens exactly to f32 and bf16", "[f8]") {
  for (const F8Type& t : kTypes) {
    for (const char* to : {"f32", "bf16"}) {
      INFO(t.name << " -> " << to);
      const fs::path dir = TempDir(fmt::format("f8_widen_{}_{}", t.name, to));
      // [2,128]: every pattern once, in one partial 8x128 tile of the (4,1)-packed 8-bit layout.
      std::vector<uint8_t> bytes(256);
      for (int i = 0; i < 256; ++i) bytes[i] = static_cast<uint8_t>(i);
      tpusim::isa::WriteNpy((dir / "in0.npy").string(), t.type, std::vector<int64_t>{2, 128}, bytes);
      RunModuleChecked(dir,
          fmt::format("HloModule m\n\nENTRY main {{\n  a = {0}[2,128] parameter(0)\n"
                      "  ROOT r = {1}[2,128] convert(a)\n}}\n",
                      t.name, to), "tpu_v4", 1);
      const bool f32 = std::string(to) == "f32";
      const std::vector<uint8_t> got = Output(dir, f32 ? ElementType::kF32 : ElementType::kBF16, 256 * (f32 ? 4 : 2));
      int bad = 0;
      for (int i = 0; i < 256; ++i) {
        const float value = t.decode(static_cast<uint8_t>(i));
        uint32_t want = std::bit_cast<uint32_t>(value);
        uint32_t have = 0;
        if (f32) {
          std::memcpy(&have, &got[4 * i], 4);
        } else {
          want = tpusim::isa::F32ToBf16(value);
          uint16_t h = 0;
          std::memcpy(&h, &got[2 * i], 2);
          have = h;
        }
        if (have != want) {
          UNSCOPED_INFO("pattern " << i << ": got " << std::hex << have << ", want " << want << std::dec);
          ++bad;
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("f8: f32 and bf16 narrow to f8 with round to nearest even, overflow and NaN as isa's converter", "[f8]") {
  for (const F8Type& t : kTypes) {
    INFO(t.name);
    const std::vector<float> values = NarrowingInputs(t);
    const auto count = static_cast<int64_t>(values.size());
    const fs::path dir = TempDir(fmt::format("f8_narrow_{}", t.name));
    std::vector<uint8_t> bytes(4 * values.size());
    std::memcpy(bytes.data(), values.data(), bytes.size());
    tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kF32, std::vector<int64_t>{count}, bytes);
    RunModuleChecked(dir,
        fmt::format("HloModule m\n\nENTRY main {{\n  a = f32[{1}] parameter(0)\n"
                    "  ROOT r = {0}[{1}] convert(a)\n}}\n",
                    t.name, count), "tpu_v4", 1);
    const std::vector<uint8_t> got = Output(dir, t.type, values.size());
    int bad = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const uint8_t want = t.encode(values[i]);
      if (got[i] != want) {
        UNSCOPED_INFO(values[i] << ": got " << int(got[i]) << ", want " << int(want));
        ++bad;
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("f8: bf16 to f8 goes through f32, and f8e5m2 to f8e4m3fn rounds once", "[f8]") {
  // 512 bf16 patterns spread over both signs and every exponent (inf and NaN included), and
  // every f8e5m2 pattern converted to f8e4m3fn: both are one rounding of an exact f32.
  const fs::path dir = TempDir("f8_bf16_narrow");
  std::vector<uint8_t> bytes(2 * 512);
  for (int i = 0; i < 512; ++i) {
    const auto h = static_cast<uint16_t>(i * 128 + (i % 3));  // spread over signs and exponents
    std::memcpy(&bytes[2 * i], &h, 2);
  }
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kBF16, std::vector<int64_t>{4, 128}, bytes);
  RunModuleChecked(dir,
      "HloModule m\n\nENTRY main {\n  a = bf16[4,128] parameter(0)\n"
      "  ROOT r = f8e4m3fn[4,128] convert(a)\n}\n", "tpu_v4", 1);
  const std::vector<uint8_t> got = Output(dir, ElementType::kF8E4M3FN, 512);
  int bad = 0;
  for (int i = 0; i < 512; ++i) {
    uint16_t h = 0;
    std::memcpy(&h, &bytes[2 * i], 2);
    bad += got[i] != tpusim::isa::F32ToF8E4M3FN(tpusim::isa::Bf16ToF32(h));
  }
  CHECK(bad == 0);

  const fs::path dir2 = TempDir("f8_f8_narrow");
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<uint8_t>(i);
  tpusim::isa::WriteNpy((dir2 / "in0.npy").string(), ElementType::kF8E5M2, std::vector<int64_t>{256}, all);
  RunModuleChecked(dir2,
      "HloModule m\n\nENTRY main {\n  a = f8e5m2[256] parameter(0)\n"
      "  ROOT r = f8e4m3fn[256] convert(a)\n}\n", "tpu_v4", 1);
  const std::vector<uint8_t> got2 = Output(dir2, ElementType::kF8E4M3FN, 256);
  int bad2 = 0;
  for (int i = 0; i < 256; ++i) {
    bad2 += got2[i] != tpusim::isa::F32ToF8E4M3FN(tpusim::isa::F8E5M2ToF32(static_cast<uint8_t>(i)));
  }
  CHECK(bad2 == 0);
}

TEST_CASE("f8: a chain from f8 through bf16 back to f8 is one kernel", "[f8]") {
  // Widening, a bf16 multiply and narrowing to another f8 type fuse into one kernel: the rewrite's
  // integer constants (one broadcast per use) share registers, where one register each left too
  // few for the kernel. Every f8e4m3fn pattern, times 2, to f8e5m2: one rounding of an exact f32.
  const fs::path dir = TempDir("f8_chain");
  std::vector<uint8_t> all(8 * 128);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint8_t>(i);
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kF8E4M3FN, std::vector<int64_t>{8, 128}, all);
  RunModuleChecked(dir,
      "HloModule m\n\nENTRY main {\n  a = f8e4m3fn[8,128] parameter(0)\n  w = bf16[8,128] convert(a)\n"
      "  c = bf16[] constant(2)\n  cb = bf16[8,128] broadcast(c), dimensions={}\n"
      "  p = bf16[8,128] multiply(w, cb)\n  ROOT r = f8e5m2[8,128] convert(p)\n}\n", "tpu_v4", 1);
  const std::vector<uint8_t> got = Output(dir, ElementType::kF8E5M2, all.size());
  int bad = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const float twice = tpusim::isa::Bf16ToF32(tpusim::isa::F32ToBf16(2.0f * tpusim::isa::F8E4M3FNToF32(all[i])));
    // A NaN's sign after arithmetic is not defined (IEEE 754, XLA): any f8e5m2 NaN will do.
    const bool both_nan = std::isnan(twice) && (got[i] & 0x7c) == 0x7c && (got[i] & 0x3) != 0;
    if (!both_nan && got[i] != tpusim::isa::F32ToF8E5M2(twice)) {
      ++bad;
      UNSCOPED_INFO("pattern " << i << ": got " << int{got[i]} << ", want " << int{tpusim::isa::F32ToF8E5M2(twice)});
    }
  }
  CHECK(bad == 0);
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  const std::string report = ReadText(dir / "r.json");
  const std::size_t first = report.find("\"opcode\": ");
  REQUIRE(first != std::string::npos);
  CHECK(report.find("\"opcode\": ", first + 1) == std::string::npos);
}

TEST_CASE("f8: f8e5m2 x f8e4m3fn dot widens to bf16 and sums exactly", "[f8]") {
  // Every product of two f8 values is exact in f32 (3 + 4 significand bits), and with k = 96
  // products of powers of two times small integers the f32 sums are exact in any order: the
  // result is known here, and --check compares with the evaluator too.
  const fs::path dir = TempDir("f8_dot");
  const int64_t m = 24, k = 96, n = 136;
  std::vector<uint8_t> lhs(m * k), rhs(n * k);
  std::vector<float> a(m * k), b(n * k);
  for (int64_t i = 0; i < m * k; ++i) {
    a[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.5f;  // -1.5 .. 1.5, exact in f8e5m2
    lhs[i] = tpusim::isa::F32ToF8E5M2(a[i]);
    REQUIRE(tpusim::isa::F8E5M2ToF32(lhs[i]) == a[i]);
  }
  for (int64_t i = 0; i < n * k; ++i) {
    b[i] = static_cast<float>(static_cast<int>(i % 5) - 2) * 0.25f;  // -0.5 .. 0.5, exact in f8e4m3fn
    rhs[i] = tpusim::isa::F32ToF8E4M3FN(b[i]);
    REQUIRE(tpusim::isa::F8E4M3FNToF32(rhs[i]) == b[i]);
  }
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kF8E5M2, std::vector<int64_t>{m, k}, lhs);
  tpusim::isa::WriteNpy((dir / "in1.npy").string(), ElementType::kF8E4M3FN, std::vector<int64_t>{n, k}, rhs);
  RunModuleChecked(dir,
      "HloModule m\n\nENTRY main {\n  a = f8e5m2[24,96] parameter(0)\n  b = f8e4m3fn[136,96] parameter(1)\n"
      "  ROOT d = f32[24,136] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n}\n", "tpu_v4", 2);
  const std::vector<uint8_t> got = Output(dir, ElementType::kF32, 4 * m * n);
  int bad = 0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      float want = 0;
      for (int64_t i = 0; i < k; ++i) want += a[r * k + i] * b[c * k + i];  // exact: multiples of 1/8 below 2^10
      float have = 0;
      std::memcpy(&have, &got[4 * (r * n + c)], 4);
      bad += have != want;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("f8: other f8 variants are refused naming the type", "[f8]") {
  const fs::path dir = TempDir("f8_refused");
  for (const char* type : {"f8e4m3fnuz", "f8e5m2fnuz", "f8e4m3b11fnuz"}) {
    WriteText(dir / "m.hlo", fmt::format("HloModule m\n\nENTRY main {{\n  a = {}[8,128] parameter(0)\n"
                                         "  ROOT r = f32[8,128] convert(a)\n}}\n",
                                         type));
    const std::string output = RunExpectingError("compile " + (dir / "m.hlo").string() + " --config tpu_v4 -o " + (dir / "m.tpuasm").string());
    CHECK(output.find(std::string(type) + " is not lowered") != std::string::npos);
    CHECK(output.find("m.hlo:5:") != std::string::npos);  // the convert's source line
  }
}

TEST_CASE("f8: fp8_gemm_loop scaled down passes --check (20 iterations of an f8 dot in a while body)", "[f8]") {
  // The workload itself (f8e5m2[32768,1024] x f8e4m3fn[8192,1024], 20 iterations) runs only in
  // --timing-only (4.5 minutes of wall time, docs/compiler.md Status): here its text with the dims
  // scaled to [512,384] x [256,384], so the same loop, converts and dots are checked against the
  // evaluator. 384 is 3 MXU depths; the dims stay multiples of the tiles' 8 and 128.
  std::string hlo = ReadText(fs::path(TPUSIM_SHARED_DIR) / "workloads/xla/fp8_gemm_loop.hlo");
  const auto replace_all = [&hlo](const std::string& from, const std::string& to) {
    for (std::size_t at = hlo.find(from); at != std::string::npos; at = hlo.find(from, at + to.size())) {
      hlo.replace(at, from.size(), to);
    }
  };
  replace_all("32768", "512");
  replace_all("8192", "256");
  replace_all("1024", "384");
  REQUIRE(hlo.find("f8e5m2[512,384]") != std::string::npos);
  const fs::path dir = TempDir("f8_gemm_loop_small");
  WriteText(dir / "m.hlo", hlo);
  const std::string output = RunOk("run " + (dir / "m.hlo").string() + " --config tpu_v4 --check --seed 1");
  CHECK(output.find("check passed") != std::string::npos);
}
