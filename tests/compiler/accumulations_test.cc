// Issue 21, item 1: the compiled module states, per output, what it accumulates in another order
// than XLA's evaluator (compiler/lower/accumulations.h); `run --check` derives its bounds from
// that alone (tests/sim/output_check_test.cc).
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "tests/compiler/compile_test_support.h"

using namespace tpusim;
using compiler::Accumulation;

TEST_CASE("accumulations: a dot's K, a reduce's n and a product's factors per output, element-wise outputs none",
          "[compiler][accumulations]") {
  auto module = hlo::ParseModule(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT p = f32[] multiply(a, b)
}
ENTRY e {
  x = bf16[16,384] parameter(0)
  y = bf16[384,256] parameter(1)
  d = f32[16,256] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  one = f32[] constant(1)
  r = f32[16] reduce(d, z), dimensions={1}, to_apply=add
  p = f32[256] reduce(d, one), dimensions={0}, to_apply=mul
  n = bf16[16,384] negate(x)
  ROOT t = (f32[16], f32[256], bf16[16,384]) tuple(r, p, n)
}
)", "m.hlo");
  compiler::CompileOptions options = compiler_test::SmallTargetOptions();
  options.target.set_mxu_accumulator_rows(1024);
  const compiler::CompiledModule compiled = compiler::Compile(*module, options);
  const auto& outputs = compiled.output_accumulations;
  REQUIRE(outputs.size() == 3);
  // r: the dot's K = 384 products, then 256 of them added per row.
  REQUIRE(outputs[0].size() == 2);
  CHECK(outputs[0][0].kind == Accumulation::Kind::kSum);
  CHECK(outputs[0][0].depth == 256);
  CHECK(outputs[0][0].source == "float add-reduce 'r' of 256 elements");
  CHECK(outputs[0][1].depth == 384);
  CHECK(outputs[0][1].source == "dot 'd' with K = 384");
  // p: the dot, then 16 factors over the sublanes multiplied.
  REQUIRE(outputs[1].size() == 2);
  CHECK(outputs[1][0].kind == Accumulation::Kind::kProduct);
  CHECK(outputs[1][0].depth == 16);
  // n: element-wise only.
  CHECK(outputs[2].empty());
}
