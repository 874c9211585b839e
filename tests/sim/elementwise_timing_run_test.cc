// Element-wise kernels on tpu_v4 against their HBM roofline: the bytes of the arrays' tiled
// layouts (padding included: the DMAs move whole tiles) at the chip's 1228.8 GB/s, which no
// kernel beats. The shapes are the ones the kernel's block and body plans once handled badly:
// one-tile strips whose last lanes are masked, a few strips wider than a block, a bf16 exp.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

constexpr double kHbmBytesPerUs = 1228.8e3;  // tpu_v4: 1228.8 GB/s

// The device time of `hlo` on tpu_v4 in timing-only mode.
double DeviceTimeUs(const std::string& name, const std::string& hlo) {
  const fs::path dir = TempDir("ew_timing_" + name);
  WriteText(dir / "m.hlo", hlo);
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  return ReportNumber(dir / "r.json", "device_time_us");
}

// Runs `hlo` with --check on tpu_v4: the reference evaluator's values.
void RequireChecked(const std::string& name, const std::string& hlo) {
  const fs::path dir = TempDir("ew_check_" + name);
  WriteText(dir / "m.hlo", hlo);
  CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check"), Catch::Contains("check passed"));
}

std::string Chain(const std::string& shape, const std::string& body) {
  return "HloModule m\nENTRY e {\n  x = " + shape + " parameter(0)\n" + body + "}\n";
}

std::string LogChain(const std::string& shape) {
  // log is not zero-preserving: every tile's padding lanes are masked before its store.
  return Chain(shape, "  t = " + shape + " tanh(x)\n  a = " + shape + " abs(t)\n  s = " + shape + " sqrt(a)\n  ROOT l = " +
                          shape + " log(s)\n");
}

}  // namespace

TEST_CASE("element-wise timing: a masked chain over one-tile strips streams at HBM speed, its values exact", "[timing]") {
  // f32[34624,15]: 15 of a tile's 128 lanes, one tile per strip, each tile's lanes masked. Tiles
  // go many to a body (before: one, its tanh-sqrt-log chain's latencies in turn, 130.6 us).
  // Roofline: 2 arrays x 34624 x 128 x 4 B = 35454976 B = 28.85 us; the transcendental unit's
  // 3 x 2164 vregs per core at one per 4 cycles, 24.3 us, is below it.
  const double roofline = 2.0 * 34624 * 128 * 4 / kHbmBytesPerUs;
  const double time = DeviceTimeUs("narrow", LogChain("f32[34624,15]"));
  INFO("device " << time << " us, roofline " << roofline << " us");
  CHECK(time >= roofline);
  CHECK(time <= 1.15 * roofline);
  RequireChecked("narrow", LogChain("f32[200,15]"));
}

TEST_CASE("element-wise timing: a few strips wider than a block stream in pieces over both cores", "[timing]") {
  // f32[8,47167]: one strip of 369 tiles, 1.5 MB per array. Whole-strip blocks made it one block
  // loaded, computed and stored in turn on one core (8.1 us). Roofline: 2 x 8 x 47232 x 4 B.
  const std::string body = "  s = f32[8,47167] sqrt(x)\n  ROOT a = f32[8,47167] add(s, x)\n";
  const double roofline = 2.0 * 8 * 47232 * 4 / kHbmBytesPerUs;
  const fs::path dir = TempDir("ew_pieces");
  WriteText(dir / "m.hlo", Chain("f32[8,47167]", body));
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  const double time = ReportNumber(dir / "r.json", "device_time_us");
  INFO("device " << time << " us, roofline " << roofline << " us");
  CHECK(time >= roofline);
  CHECK(time <= 1.3 * roofline);
  // Both cores' VPUs computed: the report has a "vpu" block per core with instructions.
  const std::string report = ReadText(dir / "r.json");
  const std::size_t core1 = report.find("{\"index\": 1");
  REQUIRE(core1 != std::string::npos);
  CHECK(JsonNumber(report, "instructions", report.find("\"vpu\"", core1)) > 100);
  // Pieces of a strip with a broadcast-free chain and a masked last piece: exact values.
  RequireChecked("pieces", LogChain("f32[8,20000]"));
}

TEST_CASE("element-wise timing: a bf16 exp and multiply stay within 1.25x of the HBM roofline", "[timing]") {
  // bf16[1024,1024]: 2 MiB in, 2 MiB out, 3.41 us; the exps, 512 vregs per core at one per 4
  // cycles, take 1.92 us of it. In the phase order each rounding waited for its exp and every
  // body's stores for its last tile: 6.2 us.
  const double roofline = 2.0 * 1024 * 1024 * 2 / kHbmBytesPerUs;
  const double time = DeviceTimeUs(
      "exp", Chain("bf16[1024,1024]", "  a = bf16[1024,1024] exponential(x)\n  ROOT b = bf16[1024,1024] multiply(a, x)\n"));
  INFO("device " << time << " us, roofline " << roofline << " us");
  CHECK(time >= roofline);
  CHECK(time <= 1.25 * roofline);
}

TEST_CASE("element-wise timing: 40 seeded random bf16 and f32 chains of 1 to 8 ops on 1..64 MiB stay within 1.5x of the HBM roofline",
          "[timing]") {
  // Issue 16's physics sweep for element-wise chains on tpu_v4, timing-only: each chain applies 1
  // to 8 of add, subtract, multiply, maximum, minimum, negate, abs to the last value and (binary
  // ops) a parameter or an earlier value; 1 to 3 parameters, each array 1 to 64 MiB. No kernel
  // beats moving its parameters and result once at HBM's bandwidth, and none takes more than 1.5x
  // that with the bytes of the default tiles (8 x 128; bf16 packs two rows a word). (f16 chains
  // are not held to it: the measured f16[1024,1024] multiply of ../shared/validation takes 19.5 us,
  // 3.8x its roofline, as the VPU has no f16 arithmetic; docs/validation.md.)
  const fs::path dir = TempDir("ew_physics_sweep");
  std::mt19937 random(7);
  const auto uniform = [&](int64_t lo, int64_t hi) {  // [lo, hi], the same on every platform
    return lo + static_cast<int64_t>(random() % static_cast<uint32_t>(hi - lo + 1));
  };
  const auto pad = [](int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; };
  const char* kUnary[] = {"negate", "abs"};
  const char* kBinary[] = {"add", "subtract", "multiply", "maximum", "minimum"};
  for (int i = 0; i < 40; ++i) {
    const bool bf16 = uniform(0, 1) == 0;
    const int64_t bytes_per_element = bf16 ? 2 : 4;
    int64_t rows = 0, cols = 0;
    do {
      rows = uniform(1, 4096);
      cols = uniform(1, 4096);
    } while (rows * cols * bytes_per_element < (int64_t{1} << 20) || rows * cols * bytes_per_element > (int64_t{64} << 20));
    const std::string shape = fmt::format("{}[{},{}]", bf16 ? "bf16" : "f32", rows, cols);
    std::string text = fmt::format("HloModule m\nENTRY e {{\n  p0 = {} parameter(0)\n", shape);
    std::vector<std::string> values{"p0"};
    int parameters = 1;
    const int64_t ops = uniform(1, 8);
    for (int64_t op = 0; op < ops; ++op) {
      const std::string result = fmt::format("v{}", op);
      const std::string last = values.back();
      text += fmt::format("  {}{} = {} ", op + 1 == ops ? "ROOT " : "", result, shape);
      if (uniform(0, 3) == 0) {
        text += fmt::format("{}({})\n", kUnary[uniform(0, 1)], last);
      } else {
        std::string other = values[static_cast<std::size_t>(uniform(0, static_cast<int64_t>(values.size()) - 1))];
        if (parameters < 3 && uniform(0, 2) == 0) {  // a new parameter
          other = fmt::format("p{}", parameters);
          text = text.substr(0, text.rfind("  ")) +
                 fmt::format("  {} = {} parameter({})\n", other, shape, parameters) + text.substr(text.rfind("  "));
          ++parameters;
        }
        text += fmt::format("{}({}, {})\n", kBinary[uniform(0, 4)], last, other);
      }
      values.push_back(result);
    }
    text += "}\n";
    WriteText(dir / "m.hlo", text);
    RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
    const std::string report = ReadText(dir / "r.json");
    const double time_us = JsonNumber(report, "device_time_us");
    const double bandwidth = JsonNumber(report, "hbm_bytes_per_s");
    const double arrays = parameters + 1.0;
    const double floor_us = arrays * static_cast<double>(rows * cols * bytes_per_element) / bandwidth * 1e6;
    const double roofline_us = arrays * static_cast<double>(pad(rows, 8) * pad(cols, 128) * bytes_per_element) / bandwidth * 1e6;
    INFO(text << time_us << " us, roofline " << roofline_us << " us");
    CHECK(time_us >= floor_us);
    CHECK(time_us <= 1.5 * roofline_us);
  }
}
