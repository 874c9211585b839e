// XLA's HloCSE (compiler/passes/common_subexpressions.h): HLO in, HLO out.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/common_subexpressions.h"

namespace {

std::string Merged(const std::string& text, std::size_t expected_merged) {
  auto module = tpusim::hlo::ParseModule(text, "test.hlo");
  CHECK(tpusim::compiler::EliminateCommonSubexpressions(*module) == expected_merged);
  tpusim::hlo::Verify(*module);
  return tpusim::hlo::ToString(*module);
}

}  // namespace

TEST_CASE("cse: two layers' copies of a table are one, chains included, metadata aside", "[compiler][cse]") {
  // Each "layer" computes the same rotary-like table from the same iota and constant (its own
  // metadata): the second chain's iota, constant, broadcast, power and sine are the first's, so
  // its multiply and the root read the first sine.
  CHECK(Merged(R"(HloModule c

ENTRY e {
  x = f32[128] parameter(0)
  i1 = f32[128] iota(), iota_dimension=0, metadata={op_name="layer_0/iota"}
  c1 = f32[] constant(2)
  b1 = f32[128] broadcast(c1), dimensions={}
  p1 = f32[128] power(b1, i1)
  s1 = f32[128] sine(p1)
  m1 = f32[128] multiply(x, s1)
  i2 = f32[128] iota(), iota_dimension=0, metadata={op_name="layer_1/iota"}
  c2 = f32[] constant(2)
  b2 = f32[128] broadcast(c2), dimensions={}
  p2 = f32[128] power(b2, i2)
  s2 = f32[128] sine(p2)
  m2 = f32[128] multiply(m1, s2)
  ROOT n = f32[128] add(m2, s2)
}
)", 5) == R"(HloModule c

ENTRY e (x: f32[128]) -> f32[128] {
  x = f32[128] parameter(0)
  i1 = f32[128] iota(), iota_dimension=0, metadata={op_name="layer_0/iota"}
  c1 = f32[] constant(2)
  b1 = f32[128] broadcast(c1), dimensions={}
  p1 = f32[128] power(b1, i1)
  s1 = f32[128] sine(p1)
  m1 = f32[128] multiply(x, s1)
  m2 = f32[128] multiply(m1, s1)
  ROOT n = f32[128] add(m2, s1)
}
)");
}

TEST_CASE("cse: what differs, has a side effect, is unknown or is ordered stays", "[compiler][cse]") {
  // Different attributes (iota dims, compare directions), different constants, different
  // layouts, random numbers, elided constants and an instruction in a control dependency: nothing
  // merges.
  const std::string text = R"(HloModule c

ENTRY e (x: f32[8,128]) -> (s32[8,128], s32[8,128], f32[], f32[], pred[8,128], pred[8,128], f32[8,128], f32[8,128], f32[8,128], f32[8,128], f32[4], f32[4], f32[8,128], f32[8,128]) {
  x = f32[8,128]{1,0} parameter(0)
  a = s32[8,128]{1,0} iota(), iota_dimension=0
  b = s32[8,128]{1,0} iota(), iota_dimension=1
  c = f32[] constant(1)
  d = f32[] constant(2)
  lt = pred[8,128]{1,0} compare(x, x), direction=LT
  gt = pred[8,128]{1,0} compare(x, x), direction=GT
  row = f32[8,128]{1,0} copy(x)
  column = f32[8,128]{0,1} copy(x)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  r1 = f32[8,128]{1,0} rng(zero, one), distribution=rng_uniform
  r2 = f32[8,128]{1,0} rng(zero, one), distribution=rng_uniform
  k1 = f32[4]{0} constant({...})
  k2 = f32[4]{0} constant({...})
  n1 = f32[8,128]{1,0} negate(x)
  n2 = f32[8,128]{1,0} negate(x), control-predecessors={n1}
  ROOT t = (s32[8,128]{1,0}, s32[8,128]{1,0}, f32[], f32[], pred[8,128]{1,0}, pred[8,128]{1,0}, f32[8,128]{1,0}, f32[8,128]{0,1}, f32[8,128]{1,0}, f32[8,128]{1,0}, f32[4]{0}, f32[4]{0}, f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(a, b, c, d, lt, gt, row, column, r1, r2, k1, k2, n1, n2)
}
)";
  // Only the constants 1 (c and one) are the same value.
  const std::string out = Merged(text, 1);
  CHECK(out.find("one = ") == std::string::npos);
  CHECK(out.find("rng(zero, c)") != std::string::npos);
  CHECK(out.find("r2 = ") != std::string::npos);
  CHECK(out.find("k2 = ") != std::string::npos);
  CHECK(out.find("n2 = ") != std::string::npos);
  CHECK(out.find("column = ") != std::string::npos);
  CHECK(out.find("gt = ") != std::string::npos);
  CHECK(out.find("b = ") != std::string::npos);
  CHECK(out.find("d = ") != std::string::npos);
}

TEST_CASE("cse: a root that repeats an earlier instruction is replaced by it", "[compiler][cse]") {
  CHECK(Merged(R"(HloModule c

ENTRY e {
  x = f32[8] parameter(0)
  a = f32[8] negate(x)
  ROOT b = f32[8] negate(x)
}
)", 1) == R"(HloModule c

ENTRY e (x: f32[8]) -> f32[8] {
  x = f32[8] parameter(0)
  ROOT a = f32[8] negate(x)
}
)");
}
