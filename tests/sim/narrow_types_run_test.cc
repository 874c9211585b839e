// End-to-end tests of 8-bit integers in the element-wise kernels (compiler/lower/elementwise_kernel.cc):
// s8/u8 arrays in their T(8,128)(4,1) layout loaded, converted, computed and stored by `tpusim
// run`, outputs compared with values computed here from XLA's convert rules (int -> float exact
// for 8-bit values; float -> int truncates toward zero and saturates, NaN -> 0; int -> int wraps).
// Every expected value is exact, so the comparisons are bit for bit; --check also compares with
// the evaluator.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

// A deterministic s8 value for element i: covers -128..127 including both ends.
int8_t S8At(int64_t i) { return static_cast<int8_t>((i * 37 + i / 128 * 11) & 0xff); }

std::vector<uint8_t> S8Bytes(int64_t count) {
  std::vector<uint8_t> bytes(count);
  for (int64_t i = 0; i < count; ++i) bytes[i] = static_cast<uint8_t>(S8At(i));
  return bytes;
}

template <typename T>
std::vector<T> Output(const fs::path& dir, ElementType type, std::size_t count) {
  const tpusim::isa::NpyArray got = tpusim::isa::ReadNpy((dir / "out" / "output_0.npy").string(), type);
  REQUIRE(got.data.size() == count * sizeof(T));
  std::vector<T> values(count);
  std::memcpy(values.data(), got.data.data(), got.data.size());
  return values;
}

// s8 -> f32 with ragged rows and lanes (partial tiles), then an f32 op, on a preset.
void ConvertS8ToF32(const std::string& preset, int64_t rows, int64_t cols) {
  INFO(preset << " " << rows << "x" << cols);
  const fs::path dir = TempDir(fmt::format("s8_f32_{}_{}x{}", preset, rows, cols));
  const std::vector<int64_t> dims = {rows, cols};
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kS8, dims, S8Bytes(rows * cols));
  RunModuleChecked(dir, fmt::format("HloModule m\n\nENTRY main {{\n  a = s8[{0},{1}] parameter(0)\n"
                                    "  c = f32[{0},{1}] convert(a)\n  h = f32[] constant(0.5)\n"
                                    "  hb = f32[{0},{1}] broadcast(h), dimensions={{}}\n"
                                    "  ROOT m = f32[{0},{1}] multiply(c, hb)\n}}\n",
                                    rows, cols),
                        preset, 1);
  const auto got = Output<float>(dir, ElementType::kF32, rows * cols);
  int64_t bad = 0;
  for (int64_t i = 0; i < rows * cols; ++i) bad += got[i] != static_cast<float>(S8At(i)) * 0.5f;
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("narrow types: s8 -> f32 convert over partial tiles on tiny and tpu_v4", "[narrow]") {
  ConvertS8ToF32("tiny", 20, 200);
  ConvertS8ToF32("tpu_v4", 37, 300);
}

TEST_CASE("narrow types: s8 -> bf16 -> dot as in the dot_bf16 workloads", "[narrow]") {
  // The workloads' pattern at a small size: lhs s8[K,M] converted to bf16, contracted over dim 0
  // with rhs bf16[N,K]. s8 values times small integers: every partial sum is an integer below
  // 2^24, exact in f32 in any order, so the result is exact.
  const int64_t k = 96, m = 200, n = 8;
  const fs::path dir = TempDir("s8_dot");
  const std::vector<int64_t> a_dims = {k, m};
  const std::vector<int64_t> b_dims = {n, k};
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kS8, a_dims, S8Bytes(k * m));
  std::vector<uint8_t> b(n * k * 2);
  std::vector<float> b_values(n * k);
  for (int64_t i = 0; i < n * k; ++i) {
    b_values[i] = static_cast<float>(i % 7 - 3);
    const uint16_t bits = static_cast<uint16_t>(std::bit_cast<uint32_t>(b_values[i]) >> 16);
    std::memcpy(b.data() + 2 * i, &bits, 2);
  }
  tpusim::isa::WriteNpy((dir / "in1.npy").string(), ElementType::kBF16, b_dims, b);
  RunModuleChecked(dir, fmt::format("HloModule m\n\nENTRY main {{\n  a = s8[{0},{1}] parameter(0)\n"
                                    "  c = bf16[{0},{1}] convert(a)\n  b = bf16[{2},{0}] parameter(1)\n"
                                    "  ROOT d = f32[{1},{2}] dot(c, b), lhs_contracting_dims={{0}}, "
                                    "rhs_contracting_dims={{1}}\n}}\n",
                                    k, m, n),
                        "tiny", 2);
  const auto got = Output<float>(dir, ElementType::kF32, m * n);
  int64_t bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += static_cast<double>(S8At(p * m + i)) * b_values[j * k + p];
      bad += got[i * n + j] != static_cast<float>(sum);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("narrow types: f32 -> s8 and u8 truncate and saturate, NaN -> 0", "[narrow]") {
  const int64_t rows = 19, cols = 130;
  const std::vector<float> specials = {0.0f, -0.7f, 0.7f, 126.9f, 127.5f, 128.0f, -128.9f, -129.0f, 255.9f, 256.0f,
                                       -1e30f, 1e30f, std::numeric_limits<float>::quiet_NaN(), -3.5f, 3e9f};
  std::vector<float> values(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) {
    values[i] = i < static_cast<int64_t>(specials.size()) ? specials[i] : static_cast<float>(i % 601 - 300) * 0.75f;
  }
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  for (const bool is_signed : {true, false}) {
    const std::string type = is_signed ? "s8" : "u8";
    INFO(type);
    const fs::path dir = TempDir("f32_to_" + type);
    const std::vector<int64_t> dims = {rows, cols};
    tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kF32, dims, bytes);
    RunModuleChecked(dir, fmt::format("HloModule m\n\nENTRY main {{\n  a = f32[{0},{1}] parameter(0)\n"
                                      "  ROOT c = {2}[{0},{1}] convert(a)\n}}\n",
                                      rows, cols, type),
                          "tpu_v4", 1);
    const auto got = Output<uint8_t>(dir, is_signed ? ElementType::kS8 : ElementType::kU8, rows * cols);
    int64_t bad = 0;
    std::string first;
    for (int64_t i = 0; i < rows * cols; ++i) {
      const double lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
      const double v = values[i];
      const double t = std::isnan(v) ? 0 : std::trunc(std::min(std::max(v, lo), hi));
      const uint8_t want = static_cast<uint8_t>(static_cast<int>(t) & 0xff);
      if (got[i] != want && bad++ == 0) first = fmt::format("element {} ({}): want {}, got {}", i, v, want, got[i]);
    }
    INFO(first);
    CHECK(bad == 0);
  }
}

TEST_CASE("narrow types: s8 arithmetic wraps, u8 <-> s8 converts wrap, rank-1 arrays", "[narrow]") {
  const int64_t n = 3000;  // rank 1: T(1024)(128)(4,1), a partial last tile
  const fs::path dir = TempDir("s8_wrap");
  const std::vector<int64_t> dims = {n};
  tpusim::isa::WriteNpy((dir / "in0.npy").string(), ElementType::kS8, dims, S8Bytes(n));
  RunModuleChecked(dir, fmt::format("HloModule m\n\nENTRY main {{\n  a = s8[{0}] parameter(0)\n"
                                    "  s = s8[{0}] add(a, a)\n  u = u8[{0}] convert(s)\n"
                                    "  k = u8[] constant(200)\n  kb = u8[{0}] broadcast(k), dimensions={{}}\n"
                                    "  v = u8[{0}] add(u, kb)\n  ROOT w = s8[{0}] convert(v)\n}}\n",
                                    n),
                        "tiny", 1);
  const auto got = Output<int8_t>(dir, ElementType::kS8, n);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int8_t s = static_cast<int8_t>(2 * S8At(i));  // wraps modulo 256
    const uint8_t v = static_cast<uint8_t>(static_cast<uint8_t>(s) + 200);
    bad += got[i] != static_cast<int8_t>(v);
  }
  CHECK(bad == 0);
}

TEST_CASE("narrow types: shifts of s8 are refused with the op named", "[narrow]") {
  const fs::path dir = TempDir("s8_shift");
  WriteText(dir / "m.hlo",
            "HloModule m\n\nENTRY main {\n  a = s8[8,128] parameter(0)\n"
            "  ROOT s = s8[8,128] shift-right-logical(a, a)\n}\n");
  const std::string output = RunExpectingError("run " + (dir / "m.hlo").string() + " --config tiny");
  CHECK_THAT(output, Catch::Contains("shift-right-logical 's'") && Catch::Contains("on s8"));
}

TEST_CASE("narrow types: the dot_bf16_0 and dot_bf16_1 workloads (s8 -> bf16 -> dot) pass --check on tpu_v4", "[narrow][workload]") {
  for (const char* name : {"dot_bf16_0.hlo", "dot_bf16_1.hlo"}) {
    INFO(name);
    RunOk(std::string("run ") + TPUSIM_SHARED_DIR + "/workloads/xla/" + name + " --config tpu_v4 --check");
  }
}
