// The kernel tuner (compiler/lower/kernel_tuner.h): the candidate whose program runs in the
// fewest cycles, the first on a tie, identical programs run once, choices remembered by key; and
// the dot kernel's candidates on a shape whose estimate chose the slower plan.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/lower/kernel_tuner.h"
#include "isa/assembler.h"
#include "tests/sim/exec_support.h"

namespace {

// A program of `moves` scalar moves and a halt.
std::string Program(int moves) {
  std::string text = ".program p\n.target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, "
                     "dma_engines=2, semaphores=8, cmem=false\n";
  for (int i = 0; i < moves; ++i) text += "  mov s1, " + std::to_string(i) + "\n";
  return text + "  halt\n";
}

}  // namespace

TEST_CASE("kernel tuner: the fewest cycles, the first on a tie, identical programs once, choices kept by key",
          "[compiler][tuner]") {
  // Cycles stand in for a run: 10 a instruction.
  int runs = 0;
  tpusim::compiler::KernelTuner tuner([&](const tpusim::isa::Program& program) {
    ++runs;
    return static_cast<uint64_t>(10 * program.instructions_size());
  });
  int asked = 0;
  const auto candidates = [&](std::vector<int> moves) {
    return [&asked, moves] {
      ++asked;
      std::vector<tpusim::isa::Program> programs;
      for (int m : moves) programs.push_back(tpusim::isa::Assemble(Program(m)));
      return programs;
    };
  };
  CHECK(tuner.Choose("a", candidates({5, 3, 3, 7})) == 1);  // 3 moves, before its twin
  CHECK(runs == 3);                                        // the twin not run
  CHECK(tuner.Choose("b", candidates({2, 4, 2})) == 0);
  CHECK(runs == 5);
  CHECK(tuner.Choose("a", candidates({0, 1})) == 1);  // remembered: not asked, not run
  CHECK(asked == 2);
  CHECK(runs == 5);
  CHECK(tuner.trials() == 5);
}

TEST_CASE("tpusim run: Gemma 3's MLP down-projection with its MXUs a group tried in simulation", "[sim][dot][tuner]") {
  // [11, 6912] x [6912, 1152] (15.9 MB of weights: 12.96 us at HBM's 1228.8 GB/s), in 9 column
  // blocks of 128, 5 and 4 a core. The estimate's plan (groups of 4 MXUs) leaves the fifth block
  // a group of its own on four MXUs, each of its 54 K blocks a weight load after the last bytes
  // have landed: 21.8 us. Tried in simulation, one MXU a group with K split four ways: 16.8 us.
  using namespace tpusim::exec_test;
  const fs::path dir = TempDir("dot_tuned");
  WriteText(dir / "m.hlo", R"(HloModule down_proj
ENTRY e {
  x = bf16[11,6912] parameter(0)
  w = bf16[6912,1152] parameter(1)
  ROOT d = bf16[11,1152] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --seed 2"), Catch::Contains("check passed"));
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  const double us = ReportNumber(dir / "r.json", "device_time_us");
  CHECK(us > 12.96);
  CHECK(us < 18.0);
}
