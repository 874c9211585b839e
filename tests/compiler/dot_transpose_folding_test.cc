// Transposes folded into dots (compiler/passes/dot_transpose_folding.h): the dot reads the
// transpose's operand with its dimension numbers renamed, the transpose goes away when nothing
// else reads it, and a transpose that reorders the free dims stays.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/passes/dot_transpose_folding.h"
#include "tests/sim/exec_support.h"

namespace {

const std::vector<int64_t>& List(const tpusim::hlo::Instruction& x, const char* name) {
  return *x.Find<std::vector<int64_t>>(name);
}

}  // namespace

TEST_CASE("a transposed dot operand is read in place and the transpose removed", "[compiler][dot]") {
  // Gemma 3's logits: dot(x[1,1152], transpose(w[262144,1152])) contracting x dim 1 with the
  // transpose's dim 0, which is w's dim 1 (dimensions={1,0}).
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  x = bf16[1,64] parameter(0)
  w = bf16[300,64] parameter(1)
  t = bf16[64,300] transpose(w), dimensions={1,0}
  ROOT d = bf16[1,300] dot(x, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})", "t.hlo");
  CHECK(tpusim::compiler::FoldTransposesIntoDots(*module) == 1);
  const tpusim::hlo::Instruction& dot = *module->entry()->root();
  CHECK(dot.operand(1)->name() == "w");
  CHECK(List(dot, "rhs_contracting_dims") == std::vector<int64_t>{1});
  CHECK(List(dot, "lhs_contracting_dims") == std::vector<int64_t>{1});
  CHECK(module->entry()->FindInstruction("t") == nullptr);
}

TEST_CASE("a transpose that reorders a dot's free dims is not folded", "[compiler][dot]") {
  // The result's dims follow the operand's free dims in order: [2,3] free dims swapped by the
  // transpose would swap the result's, so it stays (and so does its other reader).
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  x = f32[4,8] parameter(0)
  w = f32[2,8,3] parameter(1)
  t = f32[3,8,2] transpose(w), dimensions={2,1,0}
  ROOT d = f32[4,3,2] dot(x, t), lhs_contracting_dims={1}, rhs_contracting_dims={1}
})", "t.hlo");
  CHECK(tpusim::compiler::FoldTransposesIntoDots(*module) == 0);
  CHECK(module->entry()->root()->operand(1)->name() == "t");
}

TEST_CASE("tpusim run --check: a dot of a transposed operand after folding", "[sim][dot]") {
  using namespace tpusim::exec_test;
  const fs::path dir = TempDir("dot_transpose_folding");
  WriteText(dir / "m.hlo", R"(HloModule t
ENTRY e {
  x = bf16[20,200] parameter(0)
  w = bf16[300,200] parameter(1)
  t = bf16[200,300] transpose(w), dimensions={1,0}
  ROOT d = f32[20,300] dot(x, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const std::string output = RunOk("run " + (dir / "m.hlo").string() + " --check --seed 6");
  CHECK_THAT(output, Catch::Contains("check passed"));
  // One kernel: the transpose no longer runs on its own.
  CHECK_THAT(output, !Catch::Contains("transpose"));
}

TEST_CASE("tpusim run --check: dots with several free dims and batch dims not leading", "[sim][dot]") {
  // Gemma 3's shapes, smaller: lhs free dims {0,1,3} and rhs free dims {0,1} (no batch dims), and
  // a batch dim that is not leading on the rhs. Both go through canonical copies
  // (compiler/lower/dot_general_kernel.h).
  using namespace tpusim::exec_test;
  const char* const modules[] = {
      R"(HloModule g
ENTRY e {
  a = bf16[2,1,64,32] parameter(0)
  b = bf16[1,11,64] parameter(1)
  ROOT d = bf16[2,1,32,1,11] dot(a, b), lhs_contracting_dims={2}, rhs_contracting_dims={2}
})",
      R"(HloModule g
ENTRY e {
  a = bf16[3,11,4,20] parameter(0)
  b = bf16[20,3,40] parameter(1)
  ROOT d = f32[3,11,4,40] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={3}, rhs_batch_dims={1}, rhs_contracting_dims={0}
})",
  };
  int i = 0;
  for (const char* text : modules) {
    const fs::path dir = TempDir("dot_general_" + std::to_string(i++));
    WriteText(dir / "m.hlo", text);
    const std::string output = RunOk("run " + (dir / "m.hlo").string() + " --check --seed 7");
    CHECK_THAT(output, Catch::Contains("check passed"));
  }
}
