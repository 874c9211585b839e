// Reduces without their size-1 dims (compiler/passes/degenerate_dims.h), the squeeze moved through
// cheap element-wise producers: HLO in, HLO out.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/degenerate_dims.h"
#include "compiler/passes/layout_assignment.h"

TEST_CASE("degenerate reduce dims: the squeeze goes through cheap producers, not expensive ones", "[degenerate_dims]") {
  // s = convert(exp(x) * c) summed over the rows of [1,12,128,128]: the squeezed reduce reads a
  // squeezed convert of a squeezed multiply (the scalar broadcast re-made in the squeezed dims),
  // which reads the exponential through a reshape (an exp is not recomputed). The originals go:
  // nothing else reads them.
  auto module = tpusim::hlo::ParseModule(R"(HloModule d

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = bf16[1,12,128,128] parameter(0)
  e = bf16[1,12,128,128] exponential(x)
  c = bf16[] constant(2)
  cb = bf16[1,12,128,128] broadcast(c), dimensions={}
  m = bf16[1,12,128,128] multiply(e, cb)
  f = f32[1,12,128,128] convert(m)
  z = f32[] constant(0)
  ROOT r = f32[1,12,128] reduce(f, z), dimensions={3}, to_apply=add
}
)", "test.hlo");
  tpusim::compiler::AssignLayouts(*module);
  tpusim::compiler::RemoveDegenerateReduceDims(*module);
  tpusim::hlo::Verify(*module);
  const std::string out = tpusim::hlo::ToString(*module);
  CHECK_THAT(out, Catch::Contains("r.squeezed_operand__ = bf16[12,128,128]{2,1,0:T(8,128)(2,1)} reshape(e)"));
  CHECK_THAT(out, Catch::Contains("r.squeezed_operand___ = bf16[12,128,128]{2,1,0:T(8,128)(2,1)} broadcast(c), dimensions={}"));
  CHECK_THAT(out, Catch::Contains("r.squeezed_operand_ = bf16[12,128,128]{2,1,0:T(8,128)(2,1)} multiply(r.squeezed_operand__, "
                                  "r.squeezed_operand___)"));
  CHECK_THAT(out, Catch::Contains("r.squeezed_operand = f32[12,128,128]{2,1,0:T(8,128)} convert(r.squeezed_operand_)"));
  CHECK_THAT(out, Catch::Contains("f32[12,128]{1,0:T(8,128)} reduce(r.squeezed_operand, z)"));
  CHECK_THAT(out, !Catch::Contains(" m = ") && !Catch::Contains(" f = ") && !Catch::Contains(" cb = "));
  CHECK_THAT(out, Catch::Contains("e = bf16[1,12,128,128]"));  // the exponential stays, computed once
}
