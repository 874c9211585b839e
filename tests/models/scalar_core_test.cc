// The scalar core on its own (no DMA engines): instruction semantics, the timing equations of
// docs/isa.md ("Scalar core") and faults. Each case makes its own core and runs sc_start again
// (the core is not an sc_module, so it can be made at any time).
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "models/scalar_core.h"
#include "models/semaphore.h"
#include "models/smem.h"

namespace {

using tpusim::models::ScalarCore;

struct Machine {
  std::unique_ptr<tpusim::models::Smem> smem;
  std::vector<std::unique_ptr<tpusim::models::Semaphore>> semaphores;
  std::unique_ptr<ScalarCore> core;
  tpusim::isa::Program program;
};

constexpr const char* kTarget =
    ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=1, "
    "semaphores=4, cmem=false\n";

// Runs `code` to its end on a core with the given timing; smem of 4 KiB.
std::unique_ptr<Machine> Run(const std::string& code, uint32_t issue_per_cycle = 1, uint32_t branch_cost = 0,
                             uint32_t smem_latency = 1) {
  auto m = std::make_unique<Machine>();
  m->smem = std::make_unique<tpusim::models::Smem>(
      "smem", tpusim::models::SmemParams{4096, 4.0 * issue_per_cycle, smem_latency, 1000});
  std::vector<tpusim::models::Semaphore*> semaphores;
  for (int i = 0; i < 4; ++i) {
    m->semaphores.push_back(std::make_unique<tpusim::models::Semaphore>("sem" + std::to_string(i)));
    semaphores.push_back(m->semaphores.back().get());
  }
  tpusim::models::MemoryMap memories{};
  memories[tpusim::isa::MEMORY_SPACE_SMEM] = m->smem.get();
  tpusim::models::ScalarCoreParams params;
  params.issue_instructions_per_cycle = issue_per_cycle;
  params.branch_cost_cycles = branch_cost;
  params.smem_latency_cycles = smem_latency;
  params.clock_mhz = 1000;
  params.max_instructions = 100000;
  m->core = std::make_unique<ScalarCore>("core", params, memories, semaphores, nullptr);
  m->program = tpusim::isa::Assemble(std::string(kTarget) + code, "(test)");
  m->core->Start(m->program);
  sc_core::sc_start();
  return m;
}

}  // namespace

TEST_CASE("scalar core: arithmetic follows docs/isa.md, edge cases included", "[scalar_core]") {
  const auto m = Run(
      "  mov s1, 7\n"
      "  sub s2, s0, s1\n"            // -7
      "  div s3, s2, 2\n"             // -3 (toward zero)
      "  rem s4, s2, 2\n"             // -1 (sign of sa)
      "  div s5, s1, 0\n"             // -1
      "  rem s6, s1, 0\n"             // 7
      "  divu s7, s1, 0\n"            // 2^64 - 1
      "  shl s8, s1, 64\n"            // 0
      "  sra s9, s2, 70\n"            // -1 (sign fill)
      "  shr s10, s2, 60\n"           // 0xf
      "  mov s11, 1\n"
      "  shl s11, s11, 63\n"          // INT64_MIN
      "  div s12, s11, -1\n"          // INT64_MIN
      "  rem s13, s11, -1\n"          // 0
      "  min s14, s2, s1\n"           // -7
      "  max s15, s2, s1\n"           // 7
      "  mul s16, s1, s2\n"           // -49
      "  xor s17, s1, 2\n"            // 5
      "  halt\n");
  REQUIRE(m->core->state() == ScalarCore::State::kHalted);
  CHECK(m->core->reg(2) == -7);
  CHECK(m->core->reg(3) == -3);
  CHECK(m->core->reg(4) == -1);
  CHECK(m->core->reg(5) == -1);
  CHECK(m->core->reg(6) == 7);
  CHECK(static_cast<uint64_t>(m->core->reg(7)) == UINT64_MAX);
  CHECK(m->core->reg(8) == 0);
  CHECK(m->core->reg(9) == -1);
  CHECK(m->core->reg(10) == 0xf);
  CHECK(m->core->reg(12) == INT64_MIN);
  CHECK(m->core->reg(13) == 0);
  CHECK(m->core->reg(14) == -7);
  CHECK(m->core->reg(15) == 7);
  CHECK(m->core->reg(16) == -49);
  CHECK(m->core->reg(17) == 5);
}

TEST_CASE("scalar core: SMEM stores and loads, sign and zero extension", "[scalar_core]") {
  const auto m = Run(
      "  mov s1, -2\n"
      "  st.s32 s1, smem[0x10]\n"
      "  st.s64 s1, smem[0x18]\n"
      "  ld.s32 s2, smem[0x10]\n"
      "  ld.u32 s3, smem[0x10]\n"
      "  mov s5, 0x18\n"
      "  ld.s64 s4, smem[s5]\n"
      "  halt\n");
  REQUIRE(m->core->state() == ScalarCore::State::kHalted);
  CHECK(m->core->reg(2) == -2);
  CHECK(m->core->reg(3) == 0xfffffffe);
  CHECK(m->core->reg(4) == -2);
  CHECK(m->core->stats().smem_bytes_written == 12);
  CHECK(m->core->stats().smem_bytes_read == 16);
}

TEST_CASE("scalar core: a loop costs its issue slots plus the taken-branch cost", "[scalar_core]") {
  const std::string code =
      "  mov s1, 10\n"
      "top:\n"
      "  add s2, s2, 1\n"
      "  loop s1, top\n"
      "  halt\n";
  SECTION("one issue per cycle, branch cost 3") {
    const auto m = Run(code, 1, 3);
    REQUIRE(m->core->state() == ScalarCore::State::kHalted);
    CHECK(m->core->reg(2) == 10);
    // mov + 10 x (add, loop) + halt = 22 issue cycles, 9 taken branches x 3.
    CHECK(m->core->stats().instructions == 22);
    CHECK(m->core->stats().taken_branches == 9);
    CHECK(m->core->stats().branch_stall_cycles == 27);
    CHECK(m->core->stats().end_cycle == 22 + 27);
  }
  SECTION("two issues per cycle, no branch cost") {
    const auto m = Run(code, 2, 0);
    CHECK(m->core->stats().end_cycle == 11);  // 22 slots, 2 per cycle
    CHECK(m->core->stats().issue_cycles == 11);
  }
}

TEST_CASE("scalar core: a register loaded from SMEM is ready smem_latency_cycles after issue",
          "[scalar_core]") {
  const std::string code =
      "  ld.s32 s2, smem[0x0]\n"
      "  add s3, s2, 1\n"   // waits for s2
      "  halt\n";
  const auto m = Run(code, 1, 0, 5);
  CHECK(m->core->stats().smem_stall_cycles == 4);
  CHECK(m->core->stats().end_cycle == 3 + 4);
  const auto independent = Run("  ld.s32 s2, smem[0x0]\n  add s3, s4, 1\n  halt\n", 1, 0, 5);
  CHECK(independent->core->stats().smem_stall_cycles == 0);
  CHECK(independent->core->stats().end_cycle == 3);
}

TEST_CASE("scalar core: semaphores signal, set and wait", "[scalar_core]") {
  const auto m = Run(
      "  sem.signal sem[1], 3\n"
      "  sem.wait sem[1], 2\n"
      "  mov s1, 2\n"
      "  sem.set sem[s1 + 1], 5\n"
      "  halt\n");
  REQUIRE(m->core->state() == ScalarCore::State::kHalted);
  CHECK(m->semaphores[1]->value() == 1);
  CHECK(m->semaphores[3]->value() == 5);
  CHECK(m->core->stats().semaphore_stall_cycles == 0);
}

TEST_CASE("scalar core: faults name the pc, the instruction and the cause", "[scalar_core]") {
  SECTION("misaligned SMEM access") {
    const auto m = Run("  mov s1, 2\n  st.s32 s1, smem[s1]\n  halt\n");
    CHECK(m->core->state() == ScalarCore::State::kFaulted);
    CHECK_THAT(m->core->fault(), Catch::Contains("pc 1 (`st.s32 s1, smem[s1]`)") &&
                                     Catch::Contains("not 4-byte aligned"));
  }
  SECTION("semaphore out of range") {
    const auto m = Run("  mov s1, 9\n  sem.signal sem[s1], 1\n  halt\n");
    CHECK(m->core->state() == ScalarCore::State::kFaulted);
    CHECK_THAT(m->core->fault(), Catch::Contains("pc 1") && Catch::Contains("semaphore 9 out of range"));
  }
  SECTION("a loop that never ends hits the instruction limit") {
    const auto m = Run("top:\n  br top\n");
    CHECK(m->core->state() == ScalarCore::State::kFaulted);
    CHECK_THAT(m->core->fault(), Catch::Contains("pc 0 (`br top`)") && Catch::Contains("never ends"));
  }
  SECTION("a DMA on a machine without DMA engines") {
    const auto m = Run(
        "  dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], "
        "engine=0\n  halt\n");
    CHECK(m->core->state() == ScalarCore::State::kFaulted);
    CHECK_THAT(m->core->fault(), Catch::Contains("pc 0 (`dma ") && Catch::Contains("no DMA engines"));
  }
}
