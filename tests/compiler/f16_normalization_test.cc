// f16 arithmetic in f32 with excess precision (compiler/passes/f16_normalization.h): HLO in, HLO
// out, and what it does to element-wise fusion.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/f16_normalization.h"
#include "compiler/passes/layout_assignment.h"
#include "tests/compiler/activation_modules.h"

namespace {

std::string Normalized(const std::string& text, int expected_rewrites) {
  auto module = tpusim::hlo::ParseModule(text, "test.hlo");
  CHECK(tpusim::compiler::NormalizeF16(*module) == expected_rewrites);
  tpusim::hlo::Verify(*module);
  return tpusim::hlo::ToString(*module);
}

}  // namespace

TEST_CASE("f16 normalization: a chain computes in f32 and rounds where an f16 is read", "[f16_normalization]") {
  // p and q are computed in f32 (p.f32, q.f32); the compare and the exponential read the f32
  // values, not their f16 roundings; the transpose (not element-wise) and the convert to s32 read
  // f16 values, so p and q remain as converts of the f32 values; the convert of q to f32 is q.f32
  // itself, and a's and the constant's widenings are converts of the f16 values.
  const std::string out = Normalized(R"(HloModule n

ENTRY e {
  a = f16[8,128] parameter(0)
  c = f16[] constant(3)
  cb = f16[8,128] broadcast(c), dimensions={}
  p = f16[8,128] multiply(a, cb)
  q = f16[8,128] exponential(p)
  g = pred[8,128] compare(q, a), direction=GT
  t = f16[128,8] transpose(p), dimensions={1,0}
  w = f32[8,128] convert(q)
  i = s32[8,128] convert(q)
  ROOT r = (pred[8,128], f16[128,8], f32[8,128], s32[8,128]) tuple(g, t, w, i)
}
)", 3);
  CHECK(out == R"(HloModule n

ENTRY e (a: f16[8,128]) -> (pred[8,128], f16[128,8], f32[8,128], s32[8,128]) {
  a = f16[8,128] parameter(0)
  c = f16[] constant(3)
  cb = f16[8,128] broadcast(c), dimensions={}
  a.f32 = f32[8,128] convert(a)
  cb.f32 = f32[8,128] convert(cb)
  p.f32 = f32[8,128] multiply(a.f32, cb.f32)
  q.f32 = f32[8,128] exponential(p.f32)
  g = pred[8,128] compare(q.f32, a.f32), direction=GT
  p = f16[8,128] convert(p.f32)
  t = f16[128,8] transpose(p), dimensions={1,0}
  q = f16[8,128] convert(q.f32)
  i = s32[8,128] convert(q)
  ROOT r = (pred[8,128], f16[128,8], f32[8,128], s32[8,128]) tuple(g, t, q.f32, i)
}
)");
}

TEST_CASE("f16 normalization: other types, f16 reducers and fusions are left as written", "[f16_normalization]") {
  const std::string text = R"(HloModule n

add (x: f16[], y: f16[]) -> f16[] {
  x = f16[] parameter(0)
  y = f16[] parameter(1)
  ROOT s = f16[] add(x, y)
}

ENTRY e (a: bf16[8,128], b: f16[8,128]) -> (bf16[8,128], f16[8]) {
  a = bf16[8,128] parameter(0)
  m = bf16[8,128] multiply(a, a)
  b = f16[8,128] parameter(1)
  z = f16[] constant(0)
  s = f16[8] reduce(b, z), dimensions={1}, to_apply=add
  ROOT r = (bf16[8,128], f16[8]) tuple(m, s)
}
)";
  CHECK(Normalized(text, 0) == text);
}

TEST_CASE("f16 normalization: a root and a while body's state keep their f16 values", "[f16_normalization]") {
  const std::string out = Normalized(R"(HloModule n

body {
  s = (s32[], f16[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  x = f16[8,128] get-tuple-element(s), index=1
  y = f16[8,128] multiply(x, x)
  ROOT t = (s32[], f16[8,128]) tuple(j, y)
}

cond {
  s = (s32[], f16[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  a = f16[8,128] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f16[8,128]) tuple(zero, a)
  w = (s32[], f16[8,128]) while(init), condition=cond, body=body
  x = f16[8,128] get-tuple-element(w), index=1
  ROOT r = f16[8,128] negate(x)
}
)", 2);
  CHECK(out.find("  y.f32 = f32[8,128] multiply(x.f32, x.f32)\n  y = f16[8,128] convert(y.f32)\n"
                 "  ROOT t = (s32[], f16[8,128]) tuple(j, y)\n") != std::string::npos);
  CHECK(out.find("  r.f32 = f32[8,128] negate(x.f32)\n  ROOT r = f16[8,128] convert(r.f32)\n") != std::string::npos);
}

TEST_CASE("f16 normalization: an activation function is one fused kernel, its scalars inside", "[f16_normalization]") {
  // selu on f16: before normalization the f16 broadcasts of scalars were kernels of their own
  // (written to HBM) and every operation another kernel.
  auto module = tpusim::hlo::ParseModule(tpusim::test_modules::kSeluF16, "test.hlo");
  tpusim::compiler::NormalizeF16(*module);
  tpusim::compiler::AssignLayouts(*module);
  const auto groups = tpusim::compiler::FuseElementwise(tpusim::compiler::Schedule(*module->entry()));
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].root->name() == "r");
  REQUIRE(groups[0].operands.size() == 1);
  CHECK(groups[0].operands[0]->name() == "x");
}

TEST_CASE("computation: removing many instructions at once, and renaming one", "[f16_normalization]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule m

ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] negate(a)
  c = f32[4] abs(b)
  d = f32[4] exponential(a)
  ROOT r = f32[4] add(a, a)
}
)", "test.hlo");
  tpusim::hlo::Computation& entry = *module->entry();
  const auto* b = entry.FindInstruction("b");
  const auto* c = entry.FindInstruction("c");
  // b is read by c: removing b alone is refused, and nothing is removed.
  CHECK_THROWS_WITH(entry.RemoveInstructions({b}), Catch::Contains("cannot be removed while 'c' reads it"));
  CHECK_THROWS_WITH(entry.RemoveInstructions({entry.root()}), Catch::Contains("the root and parameters"));
  REQUIRE(entry.instruction_count() == 5);
  entry.RemoveInstructions({b, c});
  CHECK(entry.instruction_count() == 3);
  CHECK(entry.FindInstruction("b") == nullptr);
  CHECK_THROWS_WITH(entry.RenameInstruction(entry.FindInstruction("d"), "a"), Catch::Contains("already has"));
  entry.RenameInstruction(entry.FindInstruction("d"), "e");
  CHECK(entry.FindInstruction("d") == nullptr);
  CHECK(entry.FindInstruction("e")->opcode() == tpusim::hlo::Opcode::kExp);
}
