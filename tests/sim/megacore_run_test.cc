// Megacore: a chip of several TensorCores sharing HBM (tpu_v4: 2). The machine runs one program on
// every core (core.id tells them apart, core.sync meets them); the compiler splits dot and
// element-wise kernels over the cores and runs the rest on core 0. Machine tests run programs on
// a Chip in this process; compiler tests run `tpusim run --check` and read the report's
// per-core statistics.
#include <catch2/catch.hpp>

#include <array>
#include <string>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/error.h"
#include "sim/chip/chip.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

// `code` on a target of tpu_v4's units with `cores` TensorCores.
tpusim::isa::Program Assemble(const std::string& code, uint32_t cores) {
  tpusim::isa::Target target = tpusim::sim::MachineTarget(LoadPreset("tpu_v4"));
  target.set_tensor_cores(cores);
  return tpusim::isa::Assemble(".program meet\n" + tpusim::isa::TargetLine(target) + "\n" + code, "(test)");
}

// Core c writes 7 + c to row c of `out` after the cores have met; core 1 first spins 1000 times.
constexpr char kMeet[] = R"(.buffer out, hbm[0x0], size=0x2000, shape=s32[2,1024]{1,0}, role=output(0)
  core.id s1
  mul s2, s1, 1000
  beq s2, 0, meet
spin:
  loop s2, spin
meet:
  core.sync
  add s3, s1, 7
  vbcast v0, s3
  vst v0, vmem[0x0]
  vpu.signal sem[1], 1
  sem.wait sem[1], 1
  mul s4, s1, 4096
  dma vmem[0x0] -> hbm[s4 + 0x0], src=u32[1024]{0}, dst=u32[1024]{0}, size=[1024], sem=sem[0], engine=0
  sem.wait sem[0], 1
  halt
)";

// The text of the report's TensorCore `core` (from its "index" to the next core's or the end).
std::string CoreSection(const std::string& report, int core) {
  const std::size_t begin = report.find("{\"index\": " + std::to_string(core));
  REQUIRE(begin != std::string::npos);
  const std::size_t end = report.find("{\"index\": " + std::to_string(core + 1), begin);
  return report.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The MACs each of the two TensorCores' MXUs did, from a report.
std::array<double, 2> CoreMacs(const std::string& report) {
  std::array<double, 2> macs = {};
  for (int core = 0; core < 2; ++core) {
    const std::string section = CoreSection(report, core);
    for (std::size_t at = section.find("\"macs\""); at != std::string::npos; at = section.find("\"macs\"", at + 1)) {
      macs[core] += JsonNumber(section, "macs", at);
    }
  }
  return macs;
}

}  // namespace

TEST_CASE("megacore: tpu_v4 is a chip of two TensorCores sharing its HBM", "[megacore]") {
  const tpusim::ArchConfig config = LoadPreset("tpu_v4");
  CHECK(config.tensor_core_count() == 2);
  CHECK(tpusim::sim::MachineTarget(config).tensor_cores() == 2);
  CHECK(config.hbm().channel_count() * config.hbm().channel_bandwidth_gbps() == Approx(1228.8));
}

TEST_CASE("megacore: every core runs the program, and core.sync holds each until the last arrives", "[megacore]") {
  tpusim::sim::Chip chip(LoadPreset("tpu_v4"));
  const tpusim::sim::RunReport run = chip.Run(Assemble(kMeet, 2), {}, false);
  REQUIRE(run.outputs.size() == 1);
  const auto& data = run.outputs[0].array.data;
  REQUIRE(data.size() == 2 * 1024 * 4);
  for (int row = 0; row < 2; ++row) {
    for (int i = 0; i < 1024; i += 511) {
      int32_t value = 0;
      std::memcpy(&value, data.data() + 4 * (row * 1024 + i), 4);
      CHECK(value == 7 + row);  // each core's own index, after the sync
    }
  }
  REQUIRE(run.cores.size() == 2);
  // Core 0 waited for core 1's 1000 taken branches (3 cycles each on tpu_v4, with the loop's issue
  // slot); core 1, the last to arrive, waited only core_sync_cycles (32), the first of them its
  // issue cycle.
  CHECK(run.cores[0].scalar_core.core_sync_stall_cycles >= 3000);
  CHECK(run.cores[1].scalar_core.core_sync_stall_cycles >= 31);
  CHECK(run.cores[1].scalar_core.core_sync_stall_cycles <= 32);
  CHECK(run.cores[1].scalar_core.taken_branches == 999);
  CHECK(run.cores[1].dma_engines.at(0).transfers == 1);
}

TEST_CASE("megacore: a program for one core runs on core 0 alone, where core.sync waits for nobody", "[megacore]") {
  tpusim::sim::Chip chip(LoadPreset("tpu_v4"));
  const tpusim::sim::RunReport run = chip.Run(Assemble(kMeet, 1), {}, false);
  int32_t value = 0;
  std::memcpy(&value, run.outputs.at(0).array.data.data(), 4);
  CHECK(value == 7);
  CHECK(run.cores.at(0).scalar_core.core_sync_stall_cycles == 0);
  CHECK(run.cores.at(1).scalar_core.instructions == 0);
}

TEST_CASE("megacore: a core.sync that a halted core never reaches is a deadlock naming the pc", "[megacore]") {
  tpusim::sim::Chip chip(LoadPreset("tpu_v4"));
  const std::string code = R"(  core.id s1
  bne s1, 0, done
  core.sync
done:
  halt
)";
  try {
    chip.Run(Assemble(code, 2), {}, true);
    FAIL("no error");
  } catch (const tpusim::Error& error) {
    CHECK_THAT(error.what(), Catch::Contains("scalar_core: deadlock at pc 2 (`core.sync`): 1 of 2 TensorCores reached "
                                             "this core.sync, and the others ended or wait elsewhere"));
  }
}

TEST_CASE("megacore: .target cores= round-trips, is range-checked, and must fit the machine", "[megacore][isa]") {
  const tpusim::isa::Program program = Assemble("  halt\n", 2);
  CHECK(program.target().tensor_cores() == 2);
  CHECK_THAT(tpusim::isa::Disassemble(program), Catch::Contains(", cores=2\n"));
  CHECK_THAT(tpusim::isa::Disassemble(Assemble("  halt\n", 1)), !Catch::Contains("cores="));
  try {
    Assemble("  halt\n", 17);
    FAIL("no error");
  } catch (const tpusim::Error& error) {
    CHECK_THAT(error.what(), Catch::Contains("target cores is 17; it must be in [0, 16]"));
  }
  tpusim::ArchConfig one = LoadPreset("tpu_v4");
  one.set_tensor_core_count(1);
  tpusim::sim::Chip chip(one);
  try {
    chip.Run(Assemble("  halt\n", 2), {}, true);
    FAIL("no error");
  } catch (const tpusim::Error& error) {
    CHECK_THAT(error.what(), Catch::Contains("the program runs on cores=2; the machine has only 1"));
  }
}

TEST_CASE("megacore: a dot splits its rows, or else its columns, over both cores, exactly, and a small one stays on core 0",
          "[megacore]") {
  // M = 600: rows [0, 304) on core 0 and [304, 600) on core 1 (whole 16-row packed vregs); M = 100
  // is within a pass of 128 MXU rows, so N = 700 splits: columns [0, 384) and [384, 700) (whole
  // 128-column MXU blocks); 100 x 120 neither: core 0 alone. Ragged N and K throughout.
  struct Case {
    int m, n;
    bool split;
  };
  for (const Case& c : {Case{600, 700, true}, Case{100, 700, true}, Case{100, 120, false}}) {
    INFO("M = " << c.m << ", N = " << c.n);
    const fs::path dir = TempDir("megacore_dot_" + std::to_string(c.m) + "x" + std::to_string(c.n));
    const std::string m = std::to_string(c.m), n = std::to_string(c.n);
    WriteText(dir / "m.hlo", "HloModule d\nENTRY e {\n  a = bf16[" + m + ",300] parameter(0)\n  b = bf16[300," + n +
                                 "] parameter(1)\n  ROOT d = f32[" + m + "," + n +
                                 "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
    CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string()),
               Catch::Contains("check passed"));
    const std::string report = ReadText(dir / "r.json");
    // Every MAC of the dot is done once, on one core or the other.
    const std::array<double, 2> macs = CoreMacs(report);
    CHECK(macs[0] > 0);
    if (c.split) {
      CHECK(macs[1] > 0);
    } else {
      CHECK(macs[1] == 0);
    }
  }
}

TEST_CASE("megacore: an element-wise kernel splits its blocks over both cores, ragged, and a one-block one does not",
          "[megacore]") {
  for (const char* shape : {"f32[1000,1000]", "f32[8,128]"}) {
    INFO(shape);
    const fs::path dir = TempDir(std::string("megacore_ew_") + (shape[4] == '1' ? "big" : "small"));
    WriteText(dir / "m.hlo", std::string("HloModule m\nENTRY e {\n  a = ") + shape + " parameter(0)\n  b = " + shape +
                                 " parameter(1)\n  p = " + shape + " multiply(a, b)\n  ROOT s = " + shape +
                                 " subtract(p, a)\n}\n");
    CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string()),
               Catch::Contains("check passed"));
    const std::string report = ReadText(dir / "r.json");
    const double vector_ops1 = JsonNumber(CoreSection(report, 1), "instructions", CoreSection(report, 1).find("\"vpu\""));
    if (shape[4] == '1') {
      CHECK(vector_ops1 > 0);
    } else {
      CHECK(vector_ops1 == 0);
    }
  }
}

TEST_CASE("megacore: convolutions split their channel chunks (depthwise) or image groups (MXU) over both cores",
          "[megacore]") {
  // The depthwise workload's 256 channels of one image go in chunks of cc channels, half of the
  // chunks on each core, every output element equal to the evaluator's; the f32 convolution's 16
  // images in two groups of 8, one group per core, within the dot bound (K = 3 x 3 x 128).
  struct Case {
    const char* workload;
    const char* unit;
    const char* passed;
  };
  for (const Case& c : {Case{"depthwise_conv_3x3_1x256x56x56_bf16", "\"vpu\"", "every element equal"},
                        Case{"isolated_convolution", "\"mxus\"", "check passed"}}) {
    INFO(c.workload);
    const fs::path dir = TempDir(std::string("megacore_") + c.workload);
    const std::string path = std::string(TPUSIM_SHARED_DIR) + "/workloads/xla/" + c.workload + ".hlo";
    CHECK_THAT(RunOk("run " + path + " --check --report " + (dir / "r.json").string()), Catch::Contains(c.passed));
    const std::string report = ReadText(dir / "r.json");
    for (int core = 0; core < 2; ++core) {
      INFO("core " << core);
      const std::string section = CoreSection(report, core);
      const std::string key = std::string(c.unit) == "\"vpu\"" ? "instructions" : "macs";
      CHECK(JsonNumber(section, key, section.find(c.unit)) > 10000);
    }
  }
}

TEST_CASE("megacore: two cores with the chip's HBM stream an add twice as fast as one with half of it", "[megacore][timing]") {
  // f32[2048,1024] + f32[2048,1024]: 24 MiB through HBM, bound by its bandwidth: 614.4 GB/s for
  // one core's two stacks, 1228.8 GB/s for the chip's four shared by both cores.
  const fs::path dir = TempDir("megacore_add");
  WriteText(dir / "m.hlo", "HloModule m\nENTRY e {\n  a = f32[2048,1024] parameter(0)\n  b = f32[2048,1024] parameter(1)\n"
                           "  ROOT s = f32[2048,1024] add(a, b)\n}\n");
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "two.json").string());
  RunOk("run " + (dir / "m.hlo").string() +
        " --timing-only --set tensor_core_count=1 --set hbm.channel_count=16 --report " + (dir / "one.json").string());
  const double two = ReportNumber(dir / "two.json", "device_time_us");
  const double one = ReportNumber(dir / "one.json", "device_time_us");
  INFO("one core " << one << " us, two cores " << two << " us");
  CHECK(one / two >= 1.8);
  CHECK(one / two <= 2.05);
  const double fraction = 3.0 * 2048 * 1024 * 4 / (two * 1e-6) / 1228.8e9;
  CHECK(fraction >= 0.85);
  CHECK(fraction <= 1.0);
}

TEST_CASE("megacore: the trace has a process per TensorCore, the XLA lines on core 0's", "[megacore][trace]") {
  const fs::path dir = TempDir("megacore_trace");
  WriteText(dir / "m.hlo", "HloModule m\nENTRY e {\n  a = f32[1024,1024] parameter(0)\n"
                           "  ROOT s = f32[1024,1024] add(a, a)\n}\n");
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --trace " + (dir / "t.json").string());
  const std::string trace = ReadText(dir / "t.json");
  CHECK_THAT(trace, Catch::Contains("/device:TPU:0 TensorCore 0 (tpu_v4)"));
  CHECK_THAT(trace, Catch::Contains("/device:TPU:0 TensorCore 1 (tpu_v4)"));
  CHECK_THAT(trace, Catch::Contains("XLA Ops"));
}

TEST_CASE("megacore: a dot in the general form splits its canonical dot over both cores, copies on core 0, --check",
          "[megacore]") {
  // Gemma 3's MLP up-projection, [1,11,1152] x [2,6912,1152] -> [1,11,2,6912]: the operands are
  // read in place, the result copied from the canonical [11,13824] (74.5 us on one core, 42.9 us
  // split by columns); and a dot whose lhs is copied first ([64,300] contracting its major dim),
  // split by rows. Every core has MXU work; the values are the evaluator's.
  struct Case {
    const char* name;
    const char* hlo;
  };
  for (const Case& c : {Case{"mlp", "HloModule m\nENTRY e {\n  a = bf16[1,11,1152] parameter(0)\n  w = bf16[2,6912,1152] parameter(1)\n"
                                    "  ROOT d = bf16[1,11,2,6912] dot(a, w), lhs_contracting_dims={2}, rhs_contracting_dims={2}\n}\n"},
                        Case{"copied_lhs", "HloModule m\nENTRY e {\n  a = bf16[64,300] parameter(0)\n  b = bf16[2,400,64] parameter(1)\n"
                                           "  ROOT d = bf16[300,2,400] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={2}\n}\n"}}) {
    INFO(c.name);
    const fs::path dir = TempDir(std::string("megacore_general_dot_") + c.name);
    WriteText(dir / "m.hlo", c.hlo);
    CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string()),
               Catch::Contains("check passed"));
    const std::string report = ReadText(dir / "r.json");
    for (int core = 0; core < 2; ++core) {
      INFO("core " << core);
      const std::string section = CoreSection(report, core);
      CHECK(JsonNumber(section, "macs", section.find("\"mxus\"")) > 0);
    }
  }
}

TEST_CASE("megacore: a dot of few rows against many columns splits its columns, reading the weights once",
          "[megacore][timing]") {
  // 218 x 931 against 931 x 3867 (bf16, tpu_v4): both splits are possible (M > 128, N > 128). By
  // rows each core would read all 7.4 MB of weights (HBM-bound: 16.5 MB, 13.4 us at 1228.8 GB/s,
  // against 7.7 us of MXU work); by columns each reads half of them and all of the 0.46 MB lhs
  // (9.7 MB), which DotCoreSlice's estimate prefers. HBM reads: the lhs twice, the weights once
  // and the result once (its copy to the host), tiled: [224,1024], [936,3968] and [224,3968] bf16.
  const fs::path dir = TempDir("megacore_dot_columns");
  WriteText(dir / "m.hlo",
            "HloModule d\nENTRY e {\n  a = bf16[218,931] parameter(0)\n  b = bf16[931,3867] parameter(1)\n"
            "  ROOT d = bf16[218,3867] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --config tpu_v4 --report " + (dir / "r.json").string());
  const std::string report = ReadText(dir / "r.json");
  const double read = JsonNumber(report, "bytes_read", report.find("\"name\": \"hbm\""));
  CHECK(read <= 2.0 * (2 * 224 * 1024 + 936 * 3968 + 224 * 3968));
  CHECK(read > 2.0 * (936 * 3968 + 224 * 3968));
  // Both cores did half of the MACs.
  const std::array<double, 2> macs = CoreMacs(report);
  CHECK(macs[1] == Approx(macs[0]).epsilon(0.15));
}

TEST_CASE("megacore: a batched dot too small to split by rows or columns splits its batch elements, --check",
          "[megacore]") {
  // Attention's scores, 12 heads of 128 x 64 x 128 (M = N = 128: neither split pays): each core
  // takes 6 heads, whole dots, their MACs equal. An odd batch (3 x 5 = 15 flattened elements over
  // two batch dims) splits 8 + 7, the second core starting at element 8 = (1, 3).
  struct Case {
    const char* name;
    std::string hlo;
    double core1_share;
  };
  const Case cases[] = {
      {"heads",
       "HloModule d\nENTRY e {\n  x = bf16[12,128,64] parameter(0)\n  y = bf16[12,64,128] parameter(1)\n"
       "  ROOT d = bf16[12,128,128] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
       "rhs_contracting_dims={1}\n}\n",
       6.0 / 12},
      {"odd",
       "HloModule d\nENTRY e {\n  x = bf16[3,5,100,70] parameter(0)\n  y = bf16[3,5,70,90] parameter(1)\n"
       "  ROOT d = f32[3,5,100,90] dot(x, y), lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={3}, "
       "rhs_contracting_dims={2}\n}\n",
       7.0 / 15},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const fs::path dir = TempDir(std::string("megacore_dot_batch_") + c.name);
    WriteText(dir / "m.hlo", c.hlo);
    CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string()),
               Catch::Contains("check passed"));
    const std::string report = ReadText(dir / "r.json");
    const std::array<double, 2> macs = CoreMacs(report);
    CHECK(macs[1] / (macs[0] + macs[1]) == Approx(c.core1_share));
  }
}

TEST_CASE("megacore: a fused lane reduce whose producer's blocks the cores would share unevenly gets smaller blocks",
          "[megacore]") {
  // A softmax's row maxima: 12 x 128 rows of 128 bf16, scaled and widened in the kernel. The
  // producer's blocks (sized by HBM's bytes in flight) were 3, the cores taking 1 and 2 (VPU
  // instructions 1008 and 2003, 2.87 us); at least two per core, whole heads, now (1510 and
  // 1511, 2.43 us). --check: every maximum exact.
  const fs::path dir = TempDir("megacore_reduce_balance");
  WriteText(dir / "m.hlo", "HloModule m\nmx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                           "  ROOT c = f32[] maximum(a, b)\n}\nENTRY e {\n  x = bf16[1,12,128,128] parameter(0)\n"
                           "  s = bf16[] constant(0.125)\n  sb = bf16[1,12,128,128] broadcast(s), dimensions={}\n"
                           "  y = bf16[1,12,128,128] multiply(x, sb)\n  c = f32[1,12,128,128] convert(y)\n"
                           "  init = f32[] constant(-inf)\n"
                           "  ROOT r = f32[1,12,128] reduce(c, init), dimensions={3}, to_apply=mx\n}\n");
  CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string()),
             Catch::Contains("check passed"));
  const std::string report = ReadText(dir / "r.json");
  double vpu[2] = {};
  for (int core = 0; core < 2; ++core) {
    const std::string section = CoreSection(report, core);
    vpu[core] = JsonNumber(section, "instructions", section.find("\"vpu\""));
  }
  INFO("VPU instructions: " << vpu[0] << " and " << vpu[1]);
  CHECK(vpu[1] == Approx(vpu[0]).epsilon(0.1));
}
