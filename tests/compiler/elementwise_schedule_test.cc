// The element-wise kernel's body order (compiler/lower/elementwise_kernel.cc, EmitScheduled):
// given the VPU's latencies (CompileOptions::vpu_timing), the in-order VPU is given, step by
// step, the operation that issues first, so no bf16 rounding waits right behind its own exp and
// a tile's store goes out while later tiles load.
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include "tests/compiler/compile_test_support.h"

namespace {

using tpusim::compiler::VpuSlot;

// tpu_v4's tensor_core.vpu (configs/tpu_v4.pbtxt): 2 instructions a cycle; element-wise latency
// 2, 2 a cycle; transcendental latency 16, one every 4 cycles; a load 4 cycles of VMEM latency
// plus 4 for a vreg's 4 KiB at about 1 KiB a cycle.
tpusim::compiler::CompileOptions WithVpuTiming() {
  tpusim::compiler::CompileOptions options = tpusim::compiler_test::SmallTargetOptions();
  options.vpu_timing.issue_per_cycle = 2;
  options.vpu_timing.slots[static_cast<int>(VpuSlot::kElementwise)] = {2, 0.5};
  options.vpu_timing.slots[static_cast<int>(VpuSlot::kTranscendental)] = {16, 4};
  options.vpu_timing.slots[static_cast<int>(VpuSlot::kCrossLane)] = {16, 2};
  options.vpu_timing.slots[static_cast<int>(VpuSlot::kLoadStore)] = {8, 1};
  return options;
}

// The first loop body's instructions, from its label to its `loop`.
std::vector<std::string> FirstLoopBody(const std::string& text) {
  std::vector<std::string> body;
  std::size_t at = text.find("loop:\n");
  REQUIRE(at != std::string::npos);
  at += 6;
  while (at < text.size()) {
    const std::size_t eol = text.find('\n', at);
    const std::string line = text.substr(at, eol - at);
    if (line.rfind("  loop ", 0) == 0) break;
    body.push_back(line);
    at = eol + 1;
  }
  return body;
}

std::string Mnemonic(const std::string& line) { return line.substr(2, line.find(' ', 2) - 2); }
std::string Destination(const std::string& line) {
  const std::size_t begin = line.find(' ', 2) + 1;
  return line.substr(begin, line.find(',', begin) - begin);
}

}  // namespace

TEST_CASE("element-wise kernel: with the VPU's latencies, no bf16 rounding waits behind its own exp, and stores overlap loads",
          "[compiler][elementwise]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule m

ENTRY e {
  x = bf16[1024,1024] parameter(0)
  a = bf16[1024,1024] exponential(x)
  ROOT b = bf16[1024,1024] multiply(a, x)
}
)", "test.hlo");
  const std::vector<std::string> body = FirstLoopBody(tpusim::compiler::ProgramText(tpusim::compiler::Compile(*module, WithVpuTiming())));
  int exps = 0, roundings = 0, rounded_at_once = 0;
  std::size_t first_store = body.size(), last_load = 0;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const std::string op = Mnemonic(body[i]);
    if (op == "vexp.f32") ++exps;
    if (op == "vld") last_load = i;
    if (op == "vst" && first_store == body.size()) first_store = i;
    if (op != "vcvt.bf16.f32") continue;
    ++roundings;
    // The instruction that last wrote the rounded register, and how far back.
    for (std::size_t j = i; j-- > 0;) {
      if (Destination(body[j]) != Destination(body[i])) continue;
      if (Mnemonic(body[j]) == "vexp.f32" && i - j < 3) ++rounded_at_once;
      break;
    }
  }
  INFO("tiles in the body: " << exps);
  CHECK(exps >= 16);                // the body streams many tiles: its first loads and last stores are few of its cycles
  CHECK(roundings == 2 * exps);     // the exp's and the multiply's, per tile
  CHECK(rounded_at_once == 0);      // each exp's 16 cycles are filled with other tiles' work
  CHECK(first_store < last_load);   // tile 0 is stored before the last tile is loaded
}

TEST_CASE("element-wise kernel: without the VPU's latencies, tiles go in a wavefront, each a step behind the one before",
          "[compiler][elementwise]") {
  // CompileOptions without vpu_timing: every step issues at once, so the order is the ranks'
  // (node + tile; within a rank, the lower tile first): tile 0's exp before tile 1's load, tile
  // 0's store before tile 1's exp.
  auto module = tpusim::hlo::ParseModule(R"(HloModule m

ENTRY e {
  x = f32[1024,1024] parameter(0)
  ROOT a = f32[1024,1024] exponential(x)
}
)", "test.hlo");
  const std::vector<std::string> body =
      FirstLoopBody(tpusim::compiler::ProgramText(tpusim::compiler::Compile(*module, tpusim::compiler_test::SmallTargetOptions())));
  std::vector<std::string> ops;
  for (const std::string& line : body) ops.push_back(Mnemonic(line));
  REQUIRE(ops.size() >= 6);
  CHECK(ops[0] == "vld");       // tile 0, rank 0
  CHECK(ops[1] == "vexp.f32");  // tile 0, rank 1
  CHECK(ops[2] == "vld");       // tile 1, rank 1
  CHECK(ops[3] == "vst");       // tile 0, rank 2
  CHECK(ops[4] == "vexp.f32");  // tile 1, rank 2
  CHECK(ops[5] == "vld");       // tile 2, rank 2
}

TEST_CASE("element-wise kernel: a chain whose values are read far apart fits the registers, tiles in flight bounded",
          "[compiler][elementwise]") {
  // v0 and p1 are read again at the chain's end: each tile holds several registers for long.
  // Taking steps greedily once ran out of registers here (every tile's loads pulled ahead);
  // tiles in flight are bounded by one tile's peak now, and a body is still whole strips of 29
  // tiles (3686 columns; the last tile's padding lanes masked): two of them in a body of at most
  // 64 tiles.
  auto module = tpusim::hlo::ParseModule(R"(HloModule m

ENTRY e {
  p0 = bf16[618,3686] parameter(0)
  p1 = bf16[618,3686] parameter(1)
  v0 = bf16[618,3686] exponential(p1)
  v1 = bf16[618,3686] exponential(v0)
  v2 = bf16[618,3686] add(v1, p0)
  v3 = bf16[618,3686] multiply(v2, v1)
  v4 = bf16[618,3686] tanh(v3)
  v5 = bf16[618,3686] add(v4, v0)
  ROOT v6 = bf16[618,3686] multiply(v5, p1)
}
)", "test.hlo");
  const std::vector<std::string> body = FirstLoopBody(tpusim::compiler::ProgramText(tpusim::compiler::Compile(*module, WithVpuTiming())));
  int tanhs = 0;
  for (const std::string& line : body) tanhs += Mnemonic(line) == "vtanh.f32" ? 1 : 0;
  CHECK(tanhs == 2 * 29);
}

TEST_CASE("element-wise kernel: a strip's lane broadcast is loaded and spread first, the longest chain of latencies",
          "[compiler][elementwise]") {
  // x - broadcast(m): m's row values are loaded into lane 0 of a tile and spread by vperm (16
  // cycles of cross-lane latency) for the strip's tiles. Its chain (load 8, vperm 16, subtract 2)
  // is the longest, so the body starts with it (CriticalOrder): the strip's first subtract waits
  // for the vperm, and the loads of its data tiles fill those cycles. (In node order the data
  // loads went first and every subtract stalled behind the late vperm: a layer norm's variance
  // 18.3 -> 16.5 us on tpu_v4.)
  auto module = tpusim::hlo::ParseModule(R"(HloModule m

ENTRY e {
  x = f32[256,1024] parameter(0)
  m = f32[256] parameter(1)
  b = f32[256,1024] broadcast(m), dimensions={0}
  ROOT d = f32[256,1024] subtract(x, b)
}
)", "test.hlo");
  const std::string assembly = tpusim::compiler::ProgramText(tpusim::compiler::Compile(*module, WithVpuTiming()));
  const std::vector<std::string> body = FirstLoopBody(assembly);
  std::size_t first_vperm = body.size(), first_sub = body.size();
  for (std::size_t i = 0; i < body.size(); ++i) {
    const std::string op = Mnemonic(body[i]);
    if (op == "vperm" && first_vperm == body.size()) first_vperm = i;
    if (op == "vsub.f32" && first_sub == body.size()) first_sub = i;
  }
  REQUIRE(first_vperm < body.size());
  // The body's first instruction loads what the first vperm spreads (its destination is the
  // vperm's source), and the vperm issues within the 8 loads of the strip's data tiles.
  REQUIRE(!body.empty());
  CHECK(Mnemonic(body[0]) == "vld");
  CHECK(body[first_vperm].find(", " + Destination(body[0]) + ",") != std::string::npos);
  CHECK(first_vperm <= 9);
  CHECK(first_vperm < first_sub);
}
