// The reduce kernel's code does not grow with the number of matrices it folds into one result
// element (compiler/lower/reduce_kernel.cc, EmitBlockFold): MaxText's gradient norm reduces
// f32[2560,8,8,128]{3,2,0,1}, 20480 matrices of one 8x128 tile each, to one sum. Unrolled per
// matrix (a sublane fold, a lane fold and an accumulator update each, about 190 instructions),
// that kernel was 3.9 M instructions; looped, it is a few dozen per 512 KiB block. A lane fold
// (a sum over the minor dim) keeps where each strip's rows go in registers, so its strips, and
// the blocks of its operand, are loops (MaxText's attention softmax sums: 3.3 M instructions each
// when unrolled).
#include <catch2/catch.hpp>

#include <string>

#include "tests/compiler/compile_test_support.h"

namespace tpusim {
namespace {

// The instructions of the program that sums w (`operand`) over `dims` into `result`.
int64_t SumInstructions(const std::string& operand, const std::string& dims, const std::string& result) {
  const std::string text = "HloModule gn\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                           "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  w = " + operand +
                           " parameter(0)\n  z = f32[] constant(0)\n  ROOT r = " + result +
                           " reduce(w, z), dimensions={" + dims + "}, to_apply=add\n}\n";
  auto module = hlo::ParseModule(text, "test.hlo");
  return compiler::Compile(*module, compiler_test::SmallTargetOptions()).program.instructions_size();
}

}  // namespace

TEST_CASE("a reduce over many one-tile matrices into one sum loops over their tiles", "[compiler][reduce]") {
  // 80 MiB in 160 blocks of 512 KiB: per block its DMAs, waits and one loop over 128 tiles (about
  // 30 instructions), plus the host copies and the final fold (a few hundred). 20480 unrolled
  // matrices would be 100 times more.
  const int64_t instructions = SumInstructions("f32[2560,8,8,128]{3,2,0,1}", "0,1,2,3", "f32[]");
  CHECK(instructions < 160 * 60 + 1000);
  CHECK(instructions > 160 * 10);  // every block is still emitted
}

TEST_CASE("a reduce to one value per outer index folds the matrices of each index in one loop", "[compiler][reduce]") {
  // dims {1,2,3} of f32[64,40,8,128]: 64 results, each the sum of 40 one-tile matrices. Per result
  // one final fold of about 190 instructions and a loop, plus 10 blocks of DMAs (40 matrices each
  // unrolled would be 64 x 40 x 190).
  CHECK(SumInstructions("f32[64,40,8,128]", "1,2,3", "f32[64]") < 64 * 260 + 1000);
}

TEST_CASE("a sum over the minor dim is one loop over blocks of one loop over strips", "[compiler][reduce]") {
  // f32[16,8,2048,2048] over dim 3: 256 MiB, 32768 strips of 16 tiles, 4096 blocks of 8 strips.
  // The loop body is two blocks (one per buffer) with a loop over strip pairs: a pair's tiles,
  // two lane folds, two row gathers with their branches and a row update, the row address of the
  // next matrix (about 400 instructions in all); then the last blocks (about 800) and the
  // accumulator init and store. Unrolled, a strip is about 100 instructions: 3.3 M.
  const int64_t instructions = SumInstructions("f32[16,8,2048,2048]", "3", "f32[16,8,2048]");
  CHECK(instructions < 3000);
  // The same with a partial last block, odd strips per matrix and a reduced major dim: the row
  // address comes back to the kept index's row at each matrix.
  CHECK(SumInstructions("f32[3,40,2056,1000]", "0,3", "f32[40,2056]") < 3000);
}

}  // namespace tpusim
