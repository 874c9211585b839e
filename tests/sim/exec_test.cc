// End-to-end tests of `tpusim exec`: programs from tests/asm/ assembled and run by the built
// binary on every preset (each run is its own process, as SystemC elaborates once per process),
// outputs compared exactly with values computed here, DMA timing against first principles, and
// faults that must end the run with the pc and the instruction.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "isa/npy.h"
#include "isa/shape.h"
#include "sim/chip/chip.h"
#include "sim/config/load.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

// The program at tests/asm/NAME with its `.target` line rewritten for `preset`: the preset's
// vreg shape and MXU shape, `dma_engines` engines, 8 semaphores, CMEM as the preset has it. The
// programs' code and data layouts do not depend on the MXU shape, only their `.target` does.
fs::path Retarget(const std::string& name, const std::string& preset, const fs::path& dir,
                  int dma_engines) {
  const tpusim::ArchConfig config = tpusim::sim::LoadArchConfig(PresetPath(preset));
  const tpusim::isa::Target machine = tpusim::sim::MachineTarget(config);
  const std::string target =
      ".target sublanes=" + std::to_string(machine.sublanes()) + ", lanes=" + std::to_string(machine.lanes()) +
      ", vregs=" + std::to_string(machine.vector_registers()) + ", mxus=1, mxu_rows=" +
      std::to_string(machine.mxu_rows()) + ", mxu_cols=" + std::to_string(machine.mxu_columns()) +
      ", dma_engines=" + std::to_string(dma_engines) + ", semaphores=8, cmem=" +
      (machine.has_cmem() ? "true" : "false");
  const std::string text = ReadText(fs::path(TPUSIM_SOURCE_DIR) / "tests/asm" / name);
  const std::string retargeted = std::regex_replace(text, std::regex(R"(\.target [^\n]*)"), target);
  REQUIRE(retargeted.find(target + "\n") != std::string::npos);
  const fs::path path = dir / name;
  WriteText(path, retargeted);
  return path;
}

}  // namespace

TEST_CASE("tpusim exec copies a bf16 array double-buffered on every preset", "[exec]") {
  const std::vector<uint8_t> input = RandomBytes(256 * 256 * 2, 1);
  for (const char* preset : kPresets) {
    INFO("preset " << preset);
    const fs::path dir = TempDir(std::string("copy_") + preset);
    const fs::path program = Retarget("copy_double_buffered.tpuasm", preset, dir, 2);
    const std::vector<int64_t> dims = {256, 256};
    tpusim::isa::WriteNpy((dir / "input.npy").string(), ElementType::kBF16, dims, input);
    const std::string common = program.string() + " --config " + preset + " --input input=" +
                               (dir / "input.npy").string();
    const std::string run = RunOk("exec " + common + " --out " + (dir / "out").string() + " --report " +
                                  (dir / "report.json").string());
    CHECK_THAT(run, Catch::Contains("program copy_double_buffered on"));
    const tpusim::isa::NpyArray output = ReadOutput(dir / "out" / "output.npy", ElementType::kBF16);
    CHECK(output.dims == dims);
    CHECK(output.data == input);

    // Timing-only moves nothing and takes exactly as long.
    const std::string timing = RunOk("exec " + common + " --timing-only --report " + (dir / "timing.json").string());
    CHECK(ReportCycles(dir / "timing.json") == ReportCycles(dir / "report.json"));
    CHECK(ReportCycles(dir / "report.json") > 0);
  }
}

TEST_CASE("tpusim exec transposes, re-tiles and extracts blocks by DMA on every preset", "[exec]") {
  const std::vector<uint8_t> x = RandomBytes(256 * 128 * 4, 2);
  const std::vector<uint8_t> y = RandomBytes(64 * 256 * 2, 3);
  // block: rows 32..95 are rows 64..127 of x; the rest stays zero.
  std::vector<uint8_t> block(128 * 128 * 4, 0);
  std::memcpy(block.data() + 32 * 128 * 4, x.data() + 64 * 128 * 4, 64 * 128 * 4);
  for (const char* preset : kPresets) {
    INFO("preset " << preset);
    const fs::path dir = TempDir(std::string("retile_") + preset);
    const fs::path program = Retarget("retile_transpose_portable.tpuasm", preset, dir, 2);
    tpusim::isa::WriteNpy((dir / "x.npy").string(), ElementType::kF32, std::vector<int64_t>{256, 128}, x);
    tpusim::isa::WriteNpy((dir / "y.npy").string(), ElementType::kBF16, std::vector<int64_t>{64, 256}, y);
    RunOk("exec " + program.string() + " --config " + preset + " --input x=" +
          (dir / "x.npy").string() + " --input y=" + (dir / "y.npy").string() +
          " --out " + (dir / "out").string() + " --report " + (dir / "f.json").string());
    RunOk("exec " + program.string() + " --config " + preset +
          " --timing-only --report " + (dir / "t.json").string());
    CHECK(ReportCycles(dir / "t.json") == ReportCycles(dir / "f.json"));
    // xt is x in a column-major layout: the same logical array.
    CHECK(ReadOutput(dir / "out" / "xt.npy", ElementType::kF32).data == x);
    CHECK(ReadOutput(dir / "out" / "y_host.npy", ElementType::kBF16).data == y);
    CHECK(ReadOutput(dir / "out" / "block.npy", ElementType::kF32).data == block);
  }
}

TEST_CASE("tpusim exec runs retile_transpose.tpuasm as written (CMEM, 4 engines) on tpu_v4", "[exec]") {
  const fs::path dir = TempDir("retile_v4");
  const std::vector<uint8_t> x = RandomBytes(256 * 128 * 4, 4);
  const std::vector<uint8_t> y = RandomBytes(64 * 256 * 2, 5);
  std::vector<uint8_t> block(128 * 128 * 4, 0);
  std::memcpy(block.data() + 32 * 128 * 4, x.data() + 64 * 128 * 4, 64 * 128 * 4);
  tpusim::isa::WriteNpy((dir / "x.npy").string(), ElementType::kF32, std::vector<int64_t>{256, 128}, x);
  tpusim::isa::WriteNpy((dir / "y.npy").string(), ElementType::kBF16, std::vector<int64_t>{64, 256}, y);
  const std::string program = std::string(TPUSIM_SOURCE_DIR) + "/tests/asm/retile_transpose.tpuasm";
  RunOk("exec " + program + " --config tpu_v4 --input x=" + (dir / "x.npy").string() +
        " --input y=" + (dir / "y.npy").string() + " --out " + (dir / "out").string());
  CHECK(ReadOutput(dir / "out" / "xt.npy", ElementType::kF32).data == x);
  CHECK(ReadOutput(dir / "out" / "y_host.npy", ElementType::kBF16).data == y);
  CHECK(ReadOutput(dir / "out" / "block.npy", ElementType::kF32).data == block);

  // A machine without CMEM refuses it before running.
  const std::string refused = RunExpectingError("exec " + program + " --config tpu_v5e --timing-only");
  CHECK_THAT(refused, Catch::Contains("uses CMEM; the machine has none"));
}

TEST_CASE("tpusim exec: one DMA of N bytes takes latency + N / bandwidth", "[exec]") {
  // 128 KiB HBM -> VMEM on `tiny` with enough requests in flight that HBM bandwidth, not latency,
  // limits: t = issue_latency + N / (channels x channel bandwidth) + HBM latency + VMEM latency,
  // plus a few scalar-core cycles (the dispatch, the sem.wait, the halt).
  const fs::path dir = TempDir("dma_timing");
  WriteText(dir / "one_dma.tpuasm",
            ".program one_dma\n"
            ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=16, mxu_cols=16, dma_engines=1, "
            "semaphores=1, cmem=false\n"
            ".buffer a, hbm[0x0], size=0x20000, shape=f32[256,128]{1,0}, role=parameter(0)\n"
            ".buffer b, vmem[0x0], size=0x20000, shape=f32[256,128]{1,0}, role=output(0)\n"
            "  dma hbm[0x0] -> vmem[0x0], src=f32[256,128]{1,0}, dst=f32[256,128]{1,0}, size=[256, 128], "
            "sem=sem[0], engine=0\n"
            "  sem.wait sem[0], 1\n"
            "  halt\n");
  const std::string set = " --set tensor_core.dma.max_outstanding_requests=4096";
  RunOk("exec " + (dir / "one_dma.tpuasm").string() + " --config tiny" + set +
        " --timing-only --report " + (dir / "r.json").string());
  const tpusim::ArchConfig config = tpusim::sim::LoadArchConfig(
      PresetPath("tiny"), {"tensor_core.dma.max_outstanding_requests=4096"});
  const double clock_ghz = config.tensor_core().clock_mhz() / 1e3;
  const double bytes = 256 * 128 * 4;
  const double hbm_bytes_per_ns = config.hbm().channel_count() * config.hbm().channel_bandwidth_gbps();
  const double expected_ns = config.tensor_core().dma().issue_latency_cycles() / clock_ghz +
                             bytes / hbm_bytes_per_ns + config.hbm().access_latency_ns() +
                             config.tensor_core().vmem().access_latency_cycles() / clock_ghz;
  const double measured_ns = ReportNumber(dir / "r.json", "device_time_us") * 1e3;
  INFO("expected " << expected_ns << " ns, measured " << measured_ns << " ns");
  // Within 2%: the scalar core's few cycles and the last burst's write are all that is not in
  // the formula.
  CHECK(std::abs(measured_ns - expected_ns) <= 0.02 * expected_ns);
  CHECK(ReportNumber(dir / "r.json", "clock_mhz") == config.tensor_core().clock_mhz());
  CHECK(ReportNumber(dir / "r.json", "hbm_bytes_per_s") == Approx(hbm_bytes_per_ns * 1e9));
  CHECK(ReportNumber(dir / "r.json", "peak_flops_per_s") > 0);
}

TEST_CASE("tpusim exec stops a faulting program with its pc and instruction", "[exec]") {
  const fs::path dir = TempDir("faults");
  const std::string target =
      ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=16, mxu_cols=16, dma_engines=1, "
      "semaphores=2, cmem=false\n";
  SECTION("an SMEM load past the end of SMEM") {
    WriteText(dir / "bad_load.tpuasm", target + "  mov s1, 0x100000\n  ld.s32 s2, smem[s1 + 4]\n  halt\n");
    const std::string run = RunExpectingError("exec " + (dir / "bad_load.tpuasm").string() + " --config tiny");
    CHECK_THAT(run, Catch::Contains("pc 1 (`ld.s32 s2, smem[s1 + 0x4]`)"));
  }
  SECTION("a DMA whose image lies outside VMEM") {
    WriteText(dir / "bad_dma.tpuasm",
              target + "  mov s3, 0x7fffff00\n"
                       "  dma hbm[0x0] -> vmem[s3], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], "
                       "sem=sem[0], engine=0\n  sem.wait sem[0], 1\n  halt\n");
    const std::string run = RunExpectingError("exec " + (dir / "bad_dma.tpuasm").string() + " --config tiny");
    CHECK_THAT(run, Catch::Contains("pc 1 (`dma hbm[0x0] -> vmem[s3]"));
  }
  SECTION("a sem.wait that nothing will satisfy is a deadlock, not a hang") {
    WriteText(dir / "deadlock.tpuasm", target + "  sem.signal sem[1], 1\n  sem.wait sem[1], 2\n  halt\n");
    const std::string run = RunExpectingError("exec " + (dir / "deadlock.tpuasm").string() + " --config tiny");
    CHECK_THAT(run, Catch::Contains("deadlock at pc 1 (`sem.wait sem[1], 2`)"));
    CHECK_THAT(run, Catch::Contains("semaphore 1 holds 1 and needs 2"));
  }
  SECTION("running off the end without halt") {
    WriteText(dir / "no_halt.tpuasm", target + "  mov s1, 1\n");
    const std::string run = RunExpectingError("exec " + (dir / "no_halt.tpuasm").string() + " --config tiny");
    CHECK_THAT(run, Catch::Contains("pc 1: ran past the last instruction"));
  }
  SECTION("a loop that never ends stops at --max-instructions") {
    // Two instructions per iteration: the 1001st executed is past a limit of 1000, and the fault
    // names the instruction there (pc 0 or 1) and the flag that raises the limit.
    WriteText(dir / "spin.tpuasm", target + "spin:\n  add s1, s1, 1\n  br spin\n  halt\n");
    const std::string run =
        RunExpectingError("exec " + (dir / "spin.tpuasm").string() + " --config tiny --max-instructions 1000");
    CHECK_THAT(run, Catch::Contains("more than 1000 instructions executed"));
    CHECK_THAT(run, Catch::Contains("--max-instructions raises the limit"));
    CHECK_THAT(RunExpectingError("exec " + (dir / "spin.tpuasm").string() + " --config tiny --max-instructions 0"),
               Catch::Contains("--max-instructions"));
  }
  SECTION("an MXU pop with no result rows") {
    WriteText(dir / "empty_pop.tpuasm", target + "  mxu.pop mxu0, v1\n  halt\n");
    const std::string run = RunExpectingError("exec " + (dir / "empty_pop.tpuasm").string() + " --config tiny");
    CHECK_THAT(run, Catch::Contains("pc 0 (`mxu.pop mxu0, v1`)"));
  }
}

TEST_CASE("tpusim exec: dispatch stalls while the DMA queue is full", "[exec]") {
  // tiny's DMA queues hold 4 transfers: the 6th of 6 back-to-back DMAs on one engine waits for
  // the first to finish (one runs, four wait), and the report counts the stall.
  const fs::path dir = TempDir("queue");
  std::string code =
      ".program queue\n"
      ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=16, mxu_cols=16, dma_engines=1, "
      "semaphores=1, cmem=false\n";
  for (int i = 0; i < 6; ++i) {
    code += "  dma hbm[0x0] -> vmem[0x0], src=f32[64,128]{1,0}, dst=f32[64,128]{1,0}, size=[64, 128], "
            "sem=sem[0], engine=0\n";
  }
  code += "  sem.wait sem[0], 6\n  halt\n";
  WriteText(dir / "queue.tpuasm", code);
  RunOk("exec " + (dir / "queue.tpuasm").string() + " --config tiny --timing-only --report " +
        (dir / "r.json").string());
  CHECK(ReportNumber(dir / "r.json", "dispatch") > 0);
  CHECK(ReportNumber(dir / "r.json", "transfers") == 6);
  const std::string json = ReadText(dir / "r.json");
  CHECK_THAT(json, Catch::Contains("\"payload_bytes\": 196608"));
}

TEST_CASE("tpusim exec runs matmul_128 on the MXU bit for bit on tpu_v4 and tpu_v5e", "[exec]") {
  // The file as written assumes a 128x128 MXU; kernels_test.cc runs the same matmul, written for
  // each preset's MXU by kernel_gen.cc, on every preset.
  // C = A x B as docs/isa.md's MXU defines it: exact bf16 products, added in f32 in increasing k,
  // each addition rounded to nearest even, starting from the first product.
  const std::vector<uint8_t> a = RandomBf16(128 * 128, 11);
  const std::vector<uint8_t> b = RandomBf16(128 * 128, 12);
  std::vector<uint8_t> expected(128 * 128 * 4);
  for (int i = 0; i < 128; ++i) {
    for (int j = 0; j < 128; ++j) {
      float sum = 0;
      for (int k = 0; k < 128; ++k) {
        // The product is exact in double and in float (8-bit significands); the cast keeps the
        // compiler from fusing it into the addition.
        const float product = static_cast<float>(static_cast<double>(Bf16ToF32(Bf16At(a, i * 128 + k))) *
                                                 static_cast<double>(Bf16ToF32(Bf16At(b, k * 128 + j))));
        sum = k == 0 ? product : sum + product;
      }
      std::memcpy(expected.data() + 4 * (i * 128 + j), &sum, 4);
    }
  }
  for (const char* preset : {"tpu_v4", "tpu_v5e"}) {
    INFO("preset " << preset);
    const fs::path dir = TempDir(std::string("matmul_") + preset);
    const fs::path program = Retarget("matmul_128.tpuasm", preset, dir, 2);
    const std::vector<int64_t> dims = {128, 128};
    tpusim::isa::WriteNpy((dir / "a.npy").string(), ElementType::kBF16, dims, a);
    tpusim::isa::WriteNpy((dir / "b.npy").string(), ElementType::kBF16, dims, b);
    const std::string common = program.string() + " --config " + preset + " --input a=" + (dir / "a.npy").string() +
                               " --input b=" + (dir / "b.npy").string();
    const std::string run = RunOk("exec " + common + " --out " + (dir / "out").string() + " --report " +
                                  (dir / "f.json").string());
    const tpusim::isa::NpyArray c = ReadOutput(dir / "out" / "c.npy", ElementType::kF32);
    CHECK(c.dims == dims);
    CHECK(c.data == expected);
    RunOk("exec " + common + " --timing-only --report " + (dir / "t.json").string());
    CHECK(ReportCycles(dir / "t.json") == ReportCycles(dir / "f.json"));
    // At least the MXU's own time: a weight load, the fill, 128 rows at one pass, the drain.
    const tpusim::ArchConfig config = tpusim::sim::LoadArchConfig(PresetPath(preset));
    const auto& mxu = config.tensor_core().mxu();
    CHECK(ReportCycles(dir / "f.json") >=
          mxu.weight_load_cycles() + mxu.pipeline_fill_cycles() + 128 + mxu.pipeline_drain_cycles());
    // The report counts the MXU's work: 128 LHS rows through a 128x128 array.
    CHECK(ReportNumber(dir / "f.json", "macs") == 128.0 * 128 * 128);
    CHECK_THAT(run, Catch::Contains("mxu0"));
  }
}

namespace {

// The f32 sum of 128 lanes by docs/isa.md's halving tree (vredb.add.f32).
float HalvingTreeSum(std::vector<float> x) {
  std::size_t n = x.size();
  while (n > 1) {
    const std::size_t h = (n + 1) / 2;
    for (std::size_t i = 0; i + h < n; ++i) x[i] = x[i] + x[i + h];
    n = h;
  }
  return x[0];
}

}  // namespace

TEST_CASE("tpusim exec runs softmax_rows on the VPU bit for bit on every preset", "[exec]") {
  // tests/asm/softmax_rows.tpuasm, one row per sublane: the 128 lanes are the row's 100 columns
  // and 28 of padding set to -inf; m = the lanes' max (vredb.max.f32), e = exp(x - m) (vsub.f32,
  // then vexp.f32 = std::exp on float; exp(-inf) = 0 in the padding), s = the halving-tree sum of
  // e over 128 lanes (vredb.add.f32), out = e * (1 / s) (vrcp.f32, vmul.f32). The expected values
  // repeat exactly these f32 operations. They are the simulator's bit for bit because the
  // arithmetic is IEEE f32 and std::exp on float is the same host function in both processes
  // (correctly rounded on glibc 2.36, docs/timing.md), whatever the preset: the kernel uses only
  // the VPU and 8 x 128 vregs, which every preset has.
  const int rows = 64, cols = 100, lanes = 128;
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = dist(rng);
  std::vector<uint8_t> x_bytes(x.size() * 4);
  std::memcpy(x_bytes.data(), x.data(), x_bytes.size());
  std::vector<float> expected(rows * cols);
  for (int r = 0; r < rows; ++r) {
    std::vector<float> v(lanes, -INFINITY);
    for (int c = 0; c < cols; ++c) v[c] = x[r * cols + c];
    float m = v[0];
    for (int l = 1; l < lanes; ++l) m = std::max(m, v[l]);
    std::vector<float> e(lanes);
    for (int l = 0; l < lanes; ++l) e[l] = std::exp(v[l] - m);
    const float reciprocal = 1.0f / HalvingTreeSum(e);
    for (int c = 0; c < cols; ++c) expected[r * cols + c] = e[c] * reciprocal;
  }
  std::vector<uint8_t> expected_bytes(expected.size() * 4);
  std::memcpy(expected_bytes.data(), expected.data(), expected_bytes.size());
  // And a sanity check of the expectation itself against softmax in double: x - max is in
  // (-16, 0], its f32 rounding at most 2^-20 relative to exp (<= 1e-6), exp correctly rounded, the
  // tree 7 roundings, vrcp and vmul one each: below 3e-6; 1e-5 allowed.
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    double max = -INFINITY;
    for (int c = 0; c < cols; ++c) max = std::max(max, static_cast<double>(x[r * cols + c]));
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += std::exp(x[r * cols + c] - max);
    for (int c = 0; c < cols; ++c) {
      const double want = std::exp(x[r * cols + c] - max) / sum;
      worst = std::max(worst, std::abs(expected[r * cols + c] - want) / want);
    }
  }
  INFO("worst relative error of the f32 expectation " << worst);
  CHECK(worst <= 1e-5);
  for (const char* preset : kPresets) {
    INFO("preset " << preset);
    const fs::path dir = TempDir(std::string("softmax_") + preset);
    const fs::path program = Retarget("softmax_rows.tpuasm", preset, dir, 1);
    tpusim::isa::WriteNpy((dir / "x.npy").string(), ElementType::kF32, std::vector<int64_t>{rows, cols}, x_bytes);
    const std::string common = program.string() + " --config " + preset + " --input x=" + (dir / "x.npy").string();
    RunOk("exec " + common + " --out " + (dir / "out").string() + " --report " +
          (dir / "f.json").string());
    const tpusim::isa::NpyArray out = ReadOutput(dir / "out" / "out.npy", ElementType::kF32);
    CHECK(out.dims == std::vector<int64_t>{rows, cols});
    const WordDiff diff = CompareWords(out.data, expected_bytes);
    INFO("first differing element " << diff.first);
    CHECK(diff.count == 0);
    RunOk("exec " + common + " --timing-only --report " + (dir / "t.json").string());
    CHECK(ReportCycles(dir / "t.json") == ReportCycles(dir / "f.json"));
  }
}

TEST_CASE("tpusim exec refuses an MXU input type whose passes are 0", "[exec]") {
  const fs::path dir = TempDir("f16_refused");
  WriteText(dir / "f16.tpuasm",
            ".program f16\n"
            ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=1, "
            "semaphores=1, cmem=false\n"
            "  mxu.wpush.f16 mxu0, v0\n  mxu.latch mxu0\n  halt\n");
  const std::string program = (dir / "f16.tpuasm").string();
  RunOk("exec " + program + " --config tpu_v4 --timing-only");
  const std::string refused = RunExpectingError("exec " + program + " --config tpu_v4 --set tensor_core.mxu.f16_passes=0 --timing-only");
  CHECK_THAT(refused, Catch::Contains("pc 0 (`mxu.wpush.f16 mxu0, v0`)"));
  CHECK_THAT(refused, Catch::Contains("tensor_core.mxu.f16_passes is 0"));
}

TEST_CASE("tpusim exec runs matmul_512 on four MXUs bit for bit on tpu_v4 and tpu_v5e", "[exec]") {
  // As matmul_128: kernels_test.cc runs the 512 cube on every preset.
  // The kernel's order (tests/asm/matmul_512.tpuasm): MXU k sums the products of K tile k
  // (k in [128 kt, 128 kt + 128)) in f32 in increasing k, starting from the first product; the
  // four tiles' sums are then added in f32 in tile order, ((P0 + P1) + P2) + P3, by mxu.pop and
  // three mxu.pop.acc.
  constexpr int n = 512;
  const std::vector<uint8_t> a = RandomBf16(n * n, 31);
  const std::vector<uint8_t> b = RandomBf16(n * n, 32);
  const std::vector<float> af = Bf16Values(a);
  std::vector<float> bt(n * n);  // B transposed, so the inner loop walks memory
  {
    const std::vector<float> bf = Bf16Values(b);
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j) bt[j * n + k] = bf[k * n + j];
  }
  std::vector<uint8_t> expected(n * n * 4);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      float c = 0;
      for (int kt = 0; kt < 4; ++kt) {
        float partial = 0;
        for (int k = 128 * kt; k < 128 * kt + 128; ++k) {
          // Exact in double and in float; the cast keeps the compiler from fusing it.
          const float product = static_cast<float>(static_cast<double>(af[i * n + k]) *
                                                   static_cast<double>(bt[j * n + k]));
          partial = k == 128 * kt ? product : partial + product;
        }
        c = kt == 0 ? partial : c + partial;
      }
      std::memcpy(expected.data() + 4 * (i * n + j), &c, 4);
    }
  }
  const std::string program = std::string(TPUSIM_SOURCE_DIR) + "/tests/asm/matmul_512.tpuasm";
  for (const char* preset : {"tpu_v4", "tpu_v5e"}) {
    INFO("preset " << preset);
    const fs::path dir = TempDir(std::string("matmul_512_") + preset);
    const std::vector<int64_t> dims = {n, n};
    tpusim::isa::WriteNpy((dir / "a.npy").string(), ElementType::kBF16, dims, a);
    tpusim::isa::WriteNpy((dir / "b.npy").string(), ElementType::kBF16, dims, b);
    const std::string common = program + " --config " + preset + " --input a=" + (dir / "a.npy").string() +
                               " --input b=" + (dir / "b.npy").string();
    const std::string run = RunOk("exec " + common + " --out " + (dir / "out").string() + " --report " +
                                  (dir / "f.json").string());
    const tpusim::isa::NpyArray c = ReadOutput(dir / "out" / "c.npy", ElementType::kF32);
    CHECK(c.dims == dims);
    CHECK(c.data == expected);
    RunOk("exec " + common + " --timing-only --report " + (dir / "t.json").string());
    CHECK(ReportCycles(dir / "t.json") == ReportCycles(dir / "f.json"));
    // Every MXU did a quarter of the work: 2048 rows through its 128x128 array.
    for (const char* mxu : {"mxu0", "mxu1", "mxu2", "mxu3"}) {
      CHECK(std::regex_search(run, std::regex(std::string(mxu) + R"( +[0-9.]+% utilized, 2048 rows, 33554432 MACs)")));
    }
    // At least the MXU time of 2048 rows at one pass each, plus a weight load, a fill, a drain.
    CHECK(ReportCycles(dir / "f.json") >= 128 + 128 + 2048 + 128);
  }
}

TEST_CASE("tpusim exec: DMA and VPU take turns through two semaphores on every preset", "[exec]") {
  // tests/asm/semaphore_pingpong.tpuasm: v0 = x, v(t+1) = f32(f32(v(t) * y) + x), 6 rounds, each
  // round's value carried VMEM -> HBM -> VMEM by DMA between VPU passes.
  constexpr int count = 16 * 128;
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> xdist(-1.0f, 1.0f), ydist(0.5f, 1.0f);
  std::vector<float> x(count), y(count), v(count);
  for (int i = 0; i < count; ++i) {
    x[i] = xdist(rng);
    y[i] = ydist(rng);
  }
  v = x;
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < count; ++i) {
      // The product of two floats is exact in double; the cast rounds it once, as vmul.f32 does.
      const float product = static_cast<float>(static_cast<double>(v[i]) * static_cast<double>(y[i]));
      v[i] = product + x[i];
    }
  }
  std::vector<uint8_t> x_bytes(count * 4), y_bytes(count * 4), expected(count * 4);
  std::memcpy(x_bytes.data(), x.data(), x_bytes.size());
  std::memcpy(y_bytes.data(), y.data(), y_bytes.size());
  std::memcpy(expected.data(), v.data(), expected.size());
  for (const char* preset : kPresets) {
    INFO("preset " << preset);
    const fs::path dir = TempDir(std::string("pingpong_") + preset);
    const fs::path program = Retarget("semaphore_pingpong.tpuasm", preset, dir, 1);
    const std::vector<int64_t> dims = {16, 128};
    tpusim::isa::WriteNpy((dir / "x.npy").string(), ElementType::kF32, dims, x_bytes);
    tpusim::isa::WriteNpy((dir / "y.npy").string(), ElementType::kF32, dims, y_bytes);
    const std::string common = program.string() + " --config " + preset + " --input x=" + (dir / "x.npy").string() +
                               " --input y=" + (dir / "y.npy").string();
    RunOk("exec " + common + " --out " + (dir / "out").string() + " --report " +
          (dir / "f.json").string());
    const tpusim::isa::NpyArray out = ReadOutput(dir / "out" / "out.npy", ElementType::kF32);
    CHECK(out.dims == dims);
    CHECK(out.data == expected);
    // 3 + 2 x 6 transfers, and timing-only takes exactly as long.
    CHECK(ReportNumber(dir / "f.json", "transfers") == 15);
    RunOk("exec " + common + " --timing-only --report " + (dir / "t.json").string());
    CHECK(ReportCycles(dir / "t.json") == ReportCycles(dir / "f.json"));
  }
}
