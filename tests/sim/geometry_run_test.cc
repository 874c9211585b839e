// Issue 21: every ArchConfig geometry either works or is refused naming its field. The README's
// attention block (bf16 dots on the MXUs, softmax reduces, element-wise kernels, both cores) runs
// --check on machines unlike tpu_v4; a vreg geometry the compiler's layouts do not tile is refused
// before anything runs.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "tests/sim/exec_support.h"

using namespace tpusim::exec_test;

TEST_CASE("the attention block passes --check on other vreg counts and MXU sizes", "[run][config]") {
  const std::string module = (fs::path(TPUSIM_SOURCE_DIR) / "tests/workloads/mha_block_1x12x128x64_bf16.hlo").string();
  // 96 and 1024 vregs (tpu_v4: 32), MXUs of 64 x 64, 16 x 16 and 256 x 256 (tpu_v4: 128 x 128):
  // the kernels take their registers and MXU tiles from the target.
  for (const char* set : {"tensor_core.vpu.vector_register_count=96", "tensor_core.vpu.vector_register_count=1024",
                          "tensor_core.mxu.row_count=64 --set tensor_core.mxu.column_count=64",
                          "tensor_core.mxu.row_count=16 --set tensor_core.mxu.column_count=16",
                          "tensor_core.mxu.row_count=256 --set tensor_core.mxu.column_count=256"}) {
    INFO(set);
    CHECK_THAT(RunOk("run " + module + " --check --config tpu_v4 --set " + std::string(set)),
               Catch::Contains("check passed"));
  }
}

TEST_CASE("a vreg geometry other than the layouts' 8 x 128 tile is refused, naming the fields", "[run][config]") {
  const std::string module = (fs::path(TPUSIM_SOURCE_DIR) / "tests/workloads/mha_block_1x12x128x64_bf16.hlo").string();
  for (const auto& [set, geometry] : {std::pair{"tensor_core.vpu.sublane_count=16", "16 x 128"},
                                      std::pair{"tensor_core.vpu.lane_count=256", "8 x 256"}}) {
    INFO(set);
    CHECK_THAT(RunExpectingError("run " + module + " --timing-only --config tpu_v4 --set " + std::string(set)),
               Catch::Contains(std::string("tensor_core.vpu.sublane_count x lane_count = ") + geometry +
                               ": HLO modules compile for 8 x 128 vregs only, the tile of XLA's TPU layouts for "
                               "32-bit arrays (T(8,128), docs/layouts.md) that the kernels move a vreg at a time; "
                               "tpusim exec runs programs for other geometries"));
  }
}

TEST_CASE("seeded random valid configs run a dot, a fused reduce and an element-wise chain, or refuse them",
          "[run][config]") {
  // Issue 21: every valid ArchConfig either works or is refused. 16 configs drawn from a fixed
  // seed, each tpu_v4 with one to three of these fields set to a value drawn log-uniformly from a
  // range inside its valid one (docs/configs.md), then two that hung before: one HBM channel
  // (folded stripes looped forever) and one-row MXUs (the contraction split's search never
  // ended). Each module must pass --check, or be refused with tpusim's error (exit code 1) naming
  // the config field whose value it cannot take, within 60 s: no crash, no hang, no wrong result.
  struct Field {
    const char* path;
    double low, high;
    bool power_of_two;
  };
  const Field fields[] = {
      {"tensor_core_count", 1, 4, false},
      {"tensor_core.scalar_core.issue_instructions_per_cycle", 1, 16, false},
      {"tensor_core.scalar_core.semaphore_count", 1, 128, false},
      {"tensor_core.scalar_core.vpu_queue_depth_entries", 1, 64, false},
      {"tensor_core.scalar_core.dma_queue_depth_entries", 1, 64, false},
      {"tensor_core.scalar_core.mxu_queue_depth_entries", 1, 64, false},
      {"tensor_core.vpu.vector_register_count", 1, 256, false},
      {"tensor_core.vpu.issue_instructions_per_cycle", 1, 16, false},
      {"tensor_core.vpu.elementwise.latency_cycles", 1, 64, false},
      {"tensor_core.mxu.count", 1, 8, false},
      {"tensor_core.mxu.row_count", 1, 512, false},
      {"tensor_core.mxu.column_count", 1, 512, false},
      {"tensor_core.mxu.weight_buffer_count", 1, 4, false},
      {"tensor_core.mxu.accumulator_rows", 1, 8192, false},
      {"tensor_core.vmem.capacity_mib", 1, 64, false},
      {"tensor_core.vmem.bank_count", 1, 64, false},
      {"tensor_core.dma.engine_count", 1, 16, false},
      {"tensor_core.dma.max_outstanding_requests", 1, 512, false},
      {"tensor_core.dma.burst_bytes", 32, 512, true},
      {"hbm.channel_count", 1, 64, false},
      {"hbm.access_latency_ns", 1, 2000, false},
  };
  const fs::path dir = TempDir("random_configs");
  WriteText(dir / "dot.hlo", "HloModule d\nENTRY e {\n  a = bf16[70,300] parameter(0)\n  b = bf16[300,200] parameter(1)\n"
                             "  ROOT d = f32[70,200] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  WriteText(dir / "reduce.hlo",
            "HloModule r\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
            "ENTRY e {\n  x = bf16[61,700] parameter(0)\n  m = bf16[61] parameter(1)\n"
            "  mb = bf16[61,700] broadcast(m), dimensions={0}\n  d = bf16[61,700] subtract(x, mb)\n"
            "  s = bf16[61,700] multiply(d, d)\n  c = f32[61,700] convert(s)\n  z = f32[] constant(0)\n"
            "  ROOT r = f32[61] reduce(c, z), dimensions={1}, to_apply=add\n}\n");
  WriteText(dir / "chain.hlo", "HloModule w\nENTRY e {\n  x = f32[33,530] parameter(0)\n  y = f32[33,530] parameter(1)\n"
                               "  a = f32[33,530] add(x, y)\n  e = f32[33,530] exponential(a)\n"
                               "  ROOT m = f32[33,530] multiply(e, y)\n}\n");
  std::mt19937 random(21);
  const auto uniform = [&] { return static_cast<double>(random()) / 4294967296.0; };  // [0, 1) on every platform
  std::vector<std::string> configs;
  for (int c = 0; c < 16; ++c) {
    std::string sets;
    const int count = 1 + static_cast<int>(uniform() * 3);
    for (int i = 0; i < count; ++i) {
      const Field& f = fields[static_cast<std::size_t>(uniform() * std::size(fields))];
      const double value = std::exp2(std::log2(f.low) + uniform() * (std::log2(f.high) - std::log2(f.low)));
      const int64_t v = f.power_of_two ? int64_t{1} << std::llround(std::log2(value)) : std::llround(value);
      sets += fmt::format(" --set {}={}", f.path, v);
    }
    configs.push_back(sets);
  }
  configs.push_back(" --set hbm.channel_count=1");
  configs.push_back(" --set tensor_core.mxu.row_count=1");
  const std::regex field(R"((tensor_core|hbm|cmem|host|pcie|ici)[._][a-z_.]+)");
  int passed = 0;
  for (const std::string& sets : configs) {
    for (const char* module : {"dot", "reduce", "chain"}) {
      const std::string args = "run " + (dir / (std::string(module) + ".hlo")).string() + " --check --quiet" + sets;
      const Result result = RunTpusimWithin(args, 60);
      INFO("tpusim " << args << "\n" << result.output);
      const bool ok = result.exit_code == 0 && result.output.find("check passed") != std::string::npos;
      const bool refused = result.exit_code == 1 && result.output.find("tpusim: error: ") != std::string::npos &&
                           std::regex_search(result.output, field);
      CHECK((ok || refused));
      passed += ok ? 1 : 0;
    }
  }
  // Most draws are machines the kernels run on.
  CHECK(passed >= 30);
}
