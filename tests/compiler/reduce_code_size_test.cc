// The reduce kernel's code does not grow with the number of matrices it folds into one result
// element (compiler/lower/reduce_kernel.cc, EmitBlockFold): MaxText's gradient norm reduces
// f32[2560,8,8,128]{3,2,0,1}, 20480 matrices of one 8x128 tile each, to one sum. Unrolled per
// matrix (a sublane fold, a lane fold and an accumulator update each, about 190 instructions),
// that kernel was 3.9 M instructions; looped, it is a few dozen per 512 KiB block.
#include <catch2/catch.hpp>

#include <string>

#include "tests/compiler/compile_test_support.h"

namespace tpusim {
namespace {

int64_t KernelInstructions(const std::string& text, const compiler::CompileOptions& options) {
  auto module = hlo::ParseModule(text, "test.hlo");
  const compiler::CompiledModule compiled = compiler::Compile(*module, options);
  return compiled.program.instructions_size();
}

}  // namespace

TEST_CASE("a reduce over many one-tile matrices into one sum loops over their tiles", "[compiler][reduce]") {
  const compiler::CompileOptions options = compiler_test::SmallTargetOptions();
  const std::string text = R"(HloModule gn
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  w = f32[2560,8,8,128]{3,2,0,1} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(w, z), dimensions={0,1,2,3}, to_apply=add
}
)";
  // 80 MiB in 160 blocks of 512 KiB: per block its DMAs, waits and one loop over 128 tiles (about
  // 30 instructions), plus the host copies and the final fold (a few hundred). 20480 unrolled
  // matrices would be 100 times more.
  const int64_t instructions = KernelInstructions(text, options);
  CHECK(instructions < 160 * 60 + 1000);
  CHECK(instructions > 160 * 10);  // every block is still emitted
}

TEST_CASE("a reduce to one value per outer index folds the matrices of each index in one loop", "[compiler][reduce]") {
  const compiler::CompileOptions options = compiler_test::SmallTargetOptions();
  // dims {1,2,3} of f32[64,40,8,128]: 64 results, each the sum of 40 one-tile matrices (10 KiB of
  // code per result unrolled, a loop of 40 tiles and one final fold looped).
  const std::string text = R"(HloModule gn
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  w = f32[64,40,8,128] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(w, z), dimensions={1,2,3}, to_apply=add
}
)";
  // 64 final folds of about 190 instructions each, plus 10 blocks of loops.
  CHECK(KernelInstructions(text, options) < 64 * 260 + 1000);
}

}  // namespace tpusim
