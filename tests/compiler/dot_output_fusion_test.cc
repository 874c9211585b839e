// Dot output fusion (compiler/passes/dot_output_fusion.h): which dots join their consumers' group,
// with what operands, and which stay kernels of their own; the epilogue each fused group gets
// (compiler/lower/dot_epilogue.h) and the reasons it refuses.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/lower/dot_epilogue.h"
#include "compiler/lower/output_fusion_trial.h"
#include "compiler/passes/dot_output_fusion.h"
#include "isa/error.h"
#include "tests/compiler/compile_test_support.h"
#include "tests/compiler/fusion_test_support.h"

namespace {

using tpusim::compiler::KernelGroup;
using tpusim::fusion_test::HasMember;
using tpusim::fusion_test::Roots;

// x . w + broadcast(b), relu, then `tail` (which names the root).
std::string Dense(const std::string& tail) {
  return "HloModule m\nENTRY e {\n  x = bf16[64,256] parameter(0)\n  w = bf16[256,512] parameter(1)\n"
         "  b = f32[512] parameter(2)\n"
         "  d = f32[64,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
         "  bb = f32[64,512] broadcast(b), dimensions={1}\n  a = f32[64,512] add(d, bb)\n"
         "  z = f32[] constant(0)\n  zb = f32[64,512] broadcast(z), dimensions={}\n  r = f32[64,512] maximum(a, zb)\n" +
         tail + "}\n";
}

std::vector<KernelGroup> Fused(tpusim::hlo::Module& module) {
  const std::vector<KernelGroup> groups = tpusim::fusion_test::Groups(module);
  auto options = tpusim::compiler_test::SmallTargetOptions();
  options.target.set_mxu_accumulator_rows(2048);  // the dot kernel sums in the MXUs' accumulators
  options.target.set_semaphores(16);              // arrays in an epilogue take two of their own
  return tpusim::compiler::FuseDotOutputs(groups, tpusim::compiler::Schedule(*module.entry()),
                                          [&](const KernelGroup& g, const KernelGroup&) {
                                            return tpusim::compiler::OutputFusionFits(g, options);
                                          });
}

std::vector<std::string> Names(const std::vector<const tpusim::hlo::Instruction*>& list) {
  std::vector<std::string> names;
  for (const auto* x : list) names.push_back(x->name());
  return names;
}

}  // namespace

TEST_CASE("dot output fusion: a residual array joins too, an operand after the dot's", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(
      "HloModule m\nENTRY e {\n  x = bf16[64,256] parameter(0)\n  w = bf16[256,512] parameter(1)\n"
      "  y = f32[64,512] parameter(2)\n"
      "  d = f32[64,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  ROOT a = f32[64,512] add(d, y)\n}\n",
      "t.hlo");
  const std::vector<KernelGroup> groups = Fused(*module);
  REQUIRE(Roots(groups) == std::vector<std::string>{"a"});
  CHECK(Names(groups[0].operands) == std::vector<std::string>{"x", "w", "y"});
  CHECK(tpusim::compiler::BuildDotEpilogue(groups[0], 1).arrays.size() == 1);
}

TEST_CASE("dot output fusion: the dot joins its consumers' group, its lhs and rhs the group's first operands",
          "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(Dense("  ROOT c = bf16[64,512] convert(r)\n"), "t.hlo");
  const std::vector<KernelGroup> groups = Fused(*module);
  REQUIRE(Roots(groups) == std::vector<std::string>{"c"});
  CHECK(tpusim::compiler::FusedDot(groups[0]) != nullptr);
  CHECK(HasMember(groups[0], "d"));
  CHECK(Names(groups[0].operands) == std::vector<std::string>{"x", "w", "b"});
  // The epilogue: the sums, the bias row, the constant 0, the add, the maximum, the convert.
  const tpusim::compiler::DotEpilogue epilogue = tpusim::compiler::BuildDotEpilogue(groups[0], 1);
  CHECK(epilogue.biases.size() == 1);
  CHECK(epilogue.constants == std::vector<uint32_t>{0});
  CHECK_FALSE(epilogue.shifts_bf16);
  // Live at once: the bias, then the sum (the bias freed by the add), then the maximum's result
  // (the sum freed by it): 1; the convert writes the read register.
  CHECK(epilogue.temps == 1);
}

TEST_CASE("dot output fusion: a dot read outside the group, or the root, stays a kernel of its own", "[compiler][fusion]") {
  SECTION("read by the module's output too") {
    auto module = tpusim::hlo::ParseModule(Dense("  ROOT t = (f32[64,512], f32[64,512]) tuple(d, r)\n"), "t.hlo");
    const std::vector<KernelGroup> groups = Fused(*module);
    CHECK(Roots(groups) == std::vector<std::string>{"d", "r"});
    CHECK(tpusim::compiler::FusedDot(groups[1]) == nullptr);
  }
  SECTION("the root") {
    auto module = tpusim::hlo::ParseModule(
        "HloModule m\nENTRY e {\n  x = bf16[64,256] parameter(0)\n  w = bf16[256,512] parameter(1)\n"
        "  ROOT d = f32[64,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
        "t.hlo");
    CHECK(Roots(Fused(*module)) == std::vector<std::string>{"d"});
  }
  SECTION("its epilogue reads a vector along the rows") {
    auto module = tpusim::hlo::ParseModule(
        "HloModule m\nENTRY e {\n  x = bf16[64,256] parameter(0)\n  w = bf16[256,512] parameter(1)\n"
        "  v = f32[64] parameter(2)\n"
        "  d = f32[64,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "  vb = f32[64,512] broadcast(v), dimensions={0}\n  ROOT a = f32[64,512] add(d, vb)\n}\n",
        "t.hlo");
    CHECK(Roots(Fused(*module)) == std::vector<std::string>{"d", "a"});
  }
  SECTION("the group's other members read the dot's lhs") {
    auto module = tpusim::hlo::ParseModule(
        "HloModule m\nENTRY e {\n  x = f32[64,64] parameter(0)\n  w = f32[64,64] parameter(1)\n"
        "  d = f32[64,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "  ROOT a = f32[64,64] add(d, x)\n}\n",
        "t.hlo");
    CHECK(Roots(Fused(*module)) == std::vector<std::string>{"d", "a"});
  }
}

TEST_CASE("dot output fusion: what an epilogue refuses names the operation", "[compiler][fusion]") {
  // An s32 convert of the product: the epilogue holds f32 and bf16 values only.
  auto module = tpusim::hlo::ParseModule(Dense("  ROOT c = s32[64,512] convert(r)\n"), "t.hlo");
  const std::vector<KernelGroup> groups = tpusim::fusion_test::Groups(*module);
  KernelGroup merged = groups.back();
  const tpusim::hlo::Instruction* dot = nullptr;
  for (const KernelGroup& g : groups) {
    if (g.root->name() == "d") dot = g.root;
  }
  REQUIRE(dot != nullptr);
  merged.members.insert(merged.members.begin(), dot);
  merged.operands = {dot->operand(0), dot->operand(1)};
  for (const tpusim::hlo::Instruction* operand : groups.back().operands) {
    if (operand != dot) merged.operands.push_back(operand);
  }
  CHECK_THROWS_WITH(tpusim::compiler::BuildDotEpilogue(merged, 1),
                    Catch::Contains("convert 'c' of a dot's epilogue is not f32 or bf16"));
  CHECK(Roots(Fused(*module)) == std::vector<std::string>{"d", "c"});
}
