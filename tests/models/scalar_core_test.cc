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
#include "models/vector_register_file.h"
#include "models/vmem.h"
#include "models/vpu.h"

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

namespace {

// A core with a VPU (element-wise: latency 2, 1 vreg per cycle; transcendental: latency 10, one
// vreg every 4 cycles; cross-lane: latency 4, 1 per cycle; 1 instruction per cycle), 64 KiB of
// VMEM (latency 3, 4096 bytes per cycle at 1 GHz) and no MXUs.
struct VectorMachine {
  std::unique_ptr<tpusim::models::Smem> smem;
  std::unique_ptr<tpusim::models::Vmem> vmem;
  std::vector<std::unique_ptr<tpusim::models::Semaphore>> semaphores;
  std::unique_ptr<tpusim::models::VectorRegisterFile> registers;
  std::unique_ptr<tpusim::models::Vpu> vpu;
  std::unique_ptr<ScalarCore> core;
  tpusim::isa::Program program;
};

std::unique_ptr<VectorMachine> RunVector(const std::string& code, uint32_t vpu_queue_depth = 8,
                                         bool timing_only = false) {
  auto m = std::make_unique<VectorMachine>();
  m->smem = std::make_unique<tpusim::models::Smem>("smem", tpusim::models::SmemParams{4096, 4.0, 1, 1000});
  tpusim::models::VmemParams vmem;
  vmem.capacity_bytes = 65536;
  vmem.bank_count = 1;
  vmem.bank_interleave_bytes = 512;
  vmem.read_bandwidth_gbps = 4096;
  vmem.write_bandwidth_gbps = 4096;
  vmem.access_latency_cycles = 3;
  vmem.clock_mhz = 1000;
  m->vmem = std::make_unique<tpusim::models::Vmem>("vmem", vmem);
  std::vector<tpusim::models::Semaphore*> semaphores;
  for (int i = 0; i < 4; ++i) {
    m->semaphores.push_back(std::make_unique<tpusim::models::Semaphore>("sem" + std::to_string(i)));
    semaphores.push_back(m->semaphores.back().get());
  }
  tpusim::models::MemoryMap memories{};
  memories[tpusim::isa::MEMORY_SPACE_SMEM] = m->smem.get();
  memories[tpusim::isa::MEMORY_SPACE_VMEM] = m->vmem.get();
  tpusim::models::ScalarCoreParams params;
  params.clock_mhz = 1000;
  params.max_instructions = 100000;
  m->core = std::make_unique<ScalarCore>("core", params, memories, semaphores, nullptr);
  m->registers = std::make_unique<tpusim::models::VectorRegisterFile>(32, 8, 128);
  tpusim::models::VpuParams vpu;
  vpu.sublanes = 8;
  vpu.lanes = 128;
  vpu.issue_instructions_per_cycle = 1;
  vpu.elementwise = {2, 1};
  vpu.transcendental = {10, 0.25};
  vpu.cross_lane = {4, 1};
  m->vpu = std::make_unique<tpusim::models::Vpu>(vpu, *m->registers);
  m->vpu->set_timing_only(timing_only);
  tpusim::models::TensorCoreUnits units;
  units.registers = m->registers.get();
  units.vpu = m->vpu.get();
  units.vpu_queue_depth_entries = vpu_queue_depth;
  m->core->AttachUnits(units);
  m->core->set_timing_only(timing_only);
  m->program = tpusim::isa::Assemble(std::string(kTarget) + code, "(test)");
  m->core->Start(m->program);
  sc_core::sc_start();
  return m;
}

}  // namespace

TEST_CASE("scalar core: VPU instructions run at dispatch, vpu.signal waits for them", "[scalar_core]") {
  // Dispatched at cycles 0, 2, 3, 4 (the mov at 1): v2 is ready at 4, so the add issues at 4 and
  // is ready at 6; the signal takes the slot at 6, so the sem.wait (cycle 5) holds the core and
  // the halt issues at 6 rather than 5.
  const auto m = RunVector(
      "  vbcast v1, 3\n"
      "  mov s1, 4\n"
      "  vbcast v2, s1\n"
      "  vadd.s32 v3, v1, v2\n"
      "  vpu.signal sem[2], 1\n"
      "  sem.wait sem[2], 1\n"
      "  halt\n");
  REQUIRE(m->core->state() == ScalarCore::State::kHalted);
  CHECK(m->registers->vreg(3).s32(7, 127) == 7);
  CHECK(m->core->stats().dispatched_vpu == 4);
  CHECK(m->vpu->stats().all_complete == 6);
  CHECK(m->core->stats().end_cycle == 7);
  CHECK(m->semaphores[2]->value() == 0);
}

TEST_CASE("scalar core: dispatch waits while the VPU queue is full, the run waits for the VPU",
          "[scalar_core]") {
  // Queue depth 1: the first exp issues at 0 (ready 10), the second, dispatched at 1, waits for
  // v1 and issues at 10; the third cannot be dispatched until the second has started (cycle 10),
  // then issues at 20 (ready 30). The halt issues at 11, and the run ends at 30.
  const std::string code =
      "  vexp.f32 v1, v0\n"
      "  vexp.f32 v2, v1\n"
      "  vexp.f32 v3, v2\n"
      "  halt\n";
  const auto m = RunVector(code, 1);
  REQUIRE(m->core->state() == ScalarCore::State::kHalted);
  CHECK(m->core->stats().dispatch_stall_cycles == 8);
  CHECK(m->core->stats().end_cycle == 12);
  CHECK(m->core->stats().units_done_cycle == 30);
  // A deeper queue takes the third without a stall.
  const auto deep = RunVector(code, 8);
  CHECK(deep->core->stats().dispatch_stall_cycles == 0);
  CHECK(deep->core->stats().units_done_cycle == 30);
}

TEST_CASE("scalar core: vld and vst move VMEM words through vregs, with masks", "[scalar_core]") {
  const std::string code =
      "  vlaneid v1\n"
      "  vst v1, vmem[0x0]\n"                        // rows 0..7 at 0x0: lane ids
      "  vbcast v2, 64\n"
      "  vcmp.lt.s32 m1, v1, v2\n"                   // lanes 0..63
      "  vbcast v3, 7\n"
      "  vst v3, vmem[0x1000], mask=m1\n"            // 7 in lanes 0..63, 0 elsewhere
      "  vld v4, vmem[0x1000], stride=0, sublanes=0x5\n"  // sublanes 0 and 2: row 0; others 0
      "  vld v5, vmem[0x0]\n"
      "  halt\n";
  const auto m = RunVector(code);
  REQUIRE(m->core->state() == ScalarCore::State::kHalted);
  CHECK(m->registers->vreg(5).s32(3, 100) == 100);
  CHECK(m->registers->vreg(4).s32(0, 10) == 7);
  CHECK(m->registers->vreg(4).s32(2, 63) == 7);
  CHECK(m->registers->vreg(4).s32(2, 64) == 0);
  CHECK(m->registers->vreg(4).s32(1, 10) == 0);
  const uint64_t cycles = m->vpu->stats().all_complete;
  CHECK(cycles > 0);
  // Timing-only moves nothing and takes exactly as long.
  const auto timing = RunVector(code, 8, true);
  CHECK(timing->vpu->stats().all_complete == cycles);
  CHECK(timing->registers->vreg(5).s32(3, 100) == 0);
}

TEST_CASE("scalar core: a VPU instruction without a VPU attached faults", "[scalar_core]") {
  const auto m = Run("  vmov v1, v2\n  halt\n");
  CHECK(m->core->state() == ScalarCore::State::kFaulted);
  CHECK_THAT(m->core->fault(), Catch::Contains("pc 0 (`vmov v1, v2`)") && Catch::Contains("none attached"));
}
