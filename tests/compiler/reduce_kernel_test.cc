// The reduce kernel's planning (reducer recognition, which dims fall on lanes, sublanes or whole
// tiles, where an output element lies in the tiled image) and its refusals. The arithmetic is
// checked end to end against the evaluator in tests/sim/reduce_run_test.cc.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "compiler/lower/reduce_plan.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/error.h"
#include "tests/compiler/compile_test_support.h"
#include "isa/shape.h"

using namespace tpusim;
using compiler::ReduceKind;
using compiler::ReduceOp;

namespace {

std::string Module(const std::string& type, const std::string& dims, const std::string& reduced,
                   const std::string& out_dims, const std::string& body = "add(a, b)") {
  return "HloModule m\nr {\n  a = " + type + "[] parameter(0)\n  b = " + type + "[] parameter(1)\n  ROOT c = " +
         type + "[] " + body + "\n}\nENTRY e {\n  x = " + type + "[" + dims + "] parameter(0)\n  i = " + type +
         "[] constant(0)\n  ROOT y = " + type + "[" + out_dims + "] reduce(x, i), dimensions={" + reduced +
         "}, to_apply=r\n}\n";
}

// The plan of the module's root reduce, with TPU default layouts.
compiler::ReducePlan Plan(const std::string& text) {
  auto module = hlo::ParseModule(text, "test.hlo");
  compiler::AssignLayouts(*module);
  const hlo::Instruction& root = *module->entry()->root();
  return compiler::PlanReduce(root, root.operand(0)->shape(), root.shape(), 8, 128);
}

std::string CompileError(const std::string& text) {
  return compiler_test::CompileErrorOf(text, compiler_test::SmallTargetOptions());
}

}  // namespace

TEST_CASE("reduce plan: the reducer's op is recognised in either parameter order", "[compiler][reduce]") {
  CHECK(Plan(Module("f32", "4,8", "1", "4")).op == ReduceOp::kAdd);
  CHECK(Plan(Module("f32", "4,8", "1", "4", "maximum(b, a)")).op == ReduceOp::kMaximum);
  CHECK(Plan(Module("f32", "4,8", "1", "4", "minimum(a, b)")).op == ReduceOp::kMinimum);
  CHECK(Plan(Module("f32", "4,8", "1", "4", "multiply(a, b)")).op == ReduceOp::kMultiply);
  CHECK(Plan(Module("s32", "4,8", "1", "4", "and(a, b)")).op == ReduceOp::kAnd);
  CHECK(Plan(Module("u32", "4,8", "1", "4", "xor(a, b)")).op == ReduceOp::kXor);
}

TEST_CASE("reduce plan: dims fall on whole tiles, lanes, sublanes or both", "[compiler][reduce]") {
  // The workloads' case: [1,4096,1024] over dim 2 folds each row across lanes.
  const compiler::ReducePlan sum = Plan(Module("f32", "1,4096,1024", "2", "1,4096"));
  CHECK(sum.kind == ReduceKind::kLanes);
  CHECK(sum.rows == 4096);
  CHECK(sum.columns == 1024);
  CHECK(sum.reduced_elements == 1024);
  CHECK(sum.in.strips == 512);
  CHECK(sum.in.strip_tiles == 8);
  CHECK(Plan(Module("f32", "1,4096,1024", "1", "1,1024")).kind == ReduceKind::kRows);
  CHECK(Plan(Module("f32", "3,40,300", "0", "40,300")).kind == ReduceKind::kMajor);
  CHECK(Plan(Module("f32", "3,40,300", "", "3,40,300")).kind == ReduceKind::kMajor);
  CHECK(Plan(Module("f32", "3,40,300", "1,2", "3")).kind == ReduceKind::kBoth);
  const compiler::ReducePlan all = Plan(Module("f32", "3,40,300", "0,1,2", ""));
  CHECK(all.kind == ReduceKind::kBoth);
  CHECK(all.reduced_elements == 3 * 40 * 300);
  const compiler::ReducePlan rank1 = Plan(Module("f32", "3000", "0", ""));
  CHECK(rank1.kind == ReduceKind::kBoth);
  CHECK(rank1.rank1);
  CHECK(rank1.rows == 3);  // three 1024-element tiles
  // Major dims kept and reduced: [5,6,20,130] over {0,2} keeps dim 1 and the columns.
  const compiler::ReducePlan mixed = Plan(Module("u32", "5,6,20,130", "0,2", "6,130", "maximum(a, b)"));
  CHECK(mixed.kind == ReduceKind::kRows);
  CHECK(mixed.major_dims == std::vector<int64_t>{5, 6});
  CHECK(mixed.major_reduced == std::vector<bool>{true, false});
  CHECK(compiler::KeptMajorIndex(mixed, 0) == std::vector<int64_t>{0});
  CHECK(compiler::KeptMajorIndex(mixed, 6 + 4) == std::vector<int64_t>{4});  // matrix (1, 4)
}

TEST_CASE("reduce plan: output words follow the T(8,128) and T(1024) tilings", "[compiler][reduce]") {
  const isa::Shape matrix = isa::ParseShape("f32[2,20,300]{2,1,0:T(8,128)}");
  // 20 rows -> 3 strips per matrix, 300 columns -> 3 tiles per strip, 1024 words per tile.
  CHECK(compiler::OutputWord(matrix, {0, 0, 0}, 8, 128) == 0);
  CHECK(compiler::OutputWord(matrix, {0, 1, 2}, 8, 128) == 128 + 2);
  CHECK(compiler::OutputWord(matrix, {0, 9, 130}, 8, 128) == (1 * 3 + 1) * 1024 + 1 * 128 + 2);
  CHECK(compiler::OutputWord(matrix, {1, 0, 0}, 8, 128) == 9 * 1024);
  const isa::Shape vector = isa::ParseShape("f32[3000]{0:T(1024)}");
  CHECK(compiler::OutputWord(vector, {2500}, 8, 128) == 2500);
  CHECK(compiler::OutputWord(isa::ParseShape("f32[]"), {}, 8, 128) == 0);
}

TEST_CASE("reduce lowering refuses what it does not lower, naming the op and line", "[compiler][reduce]") {
  // A reducer that is not one op of its parameters.
  const std::string two_ops =
      "HloModule m\nr {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  s = f32[] add(a, b)\n"
      "  ROOT c = f32[] multiply(s, s)\n}\nENTRY e {\n  x = f32[4,8] parameter(0)\n  i = f32[] constant(0)\n"
      "  ROOT y = f32[4] reduce(x, i), dimensions={1}, to_apply=r\n}\n";
  const std::string error = CompileError(two_ops);
  CHECK_THAT(error, Catch::Contains("test.hlo:11:"));
  CHECK_THAT(error, Catch::Contains("cannot lower reduce f32[4]"));
  CHECK_THAT(error, Catch::Contains("its reducer is not one"));
  // Variadic reduce (argmax style).
  const std::string variadic =
      "HloModule m\nr {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n  c = f32[] parameter(2)\n"
      "  d = s32[] parameter(3)\n  m = f32[] maximum(a, c)\n  n = s32[] minimum(b, d)\n"
      "  ROOT t = (f32[], s32[]) tuple(m, n)\n}\nENTRY e {\n  x = f32[4,8] parameter(0)\n"
      "  k = s32[4,8] parameter(1)\n  i = f32[] constant(0)\n  j = s32[] constant(0)\n"
      "  ROOT y = (f32[4], s32[4]) reduce(x, k, i, j), dimensions={1}, to_apply=r\n}\n";
  CHECK_THAT(CompileError(variadic), Catch::Contains("variadic (tuple-result) reduce is not lowered yet"));
  // Preds are bytes, not 32-bit words.
  CHECK_THAT(CompileError(Module("pred", "4,8", "1", "4", "or(a, b)")),
             Catch::Contains("is not f32/bf16/s32/u32 with a default TPU tiled layout"));
}

TEST_CASE("reduce lowering compiles the sum workload into one kernel", "[compiler][reduce]") {
  auto module = hlo::ParseModule(Module("f32", "1,4096,1024", "2", "1,4096"), "test.hlo");
  const compiler::CompiledModule compiled = compiler::Compile(*module, compiler_test::SmallTargetOptions());
  REQUIRE(compiled.kernels.size() == 1);
  CHECK(compiled.kernels[0].opcode == "reduce");
  // Rows fold across lanes with the cross-lane unit's reduce (its sum in every lane), in groups
  // of 8 strips: 512 strips of a [4096,1024] matrix in blocks of 16, and 16 strips per result row
  // of 128 lanes, so every strip is in a group and none goes the pairs' way (vred, vrot). Each
  // strip's sums are selected into its lane block, and one vxpose per group puts the rows in
  // order. A float sum is plain f32 adds, as the hardware's: no TwoSum (its vsub.f32).
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains("vredb.add.f32"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains("vxpose"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains("vsel"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), !Catch::Contains("vred.add.f32"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), !Catch::Contains("vrot"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), !Catch::Contains("vsub.f32"));
}
