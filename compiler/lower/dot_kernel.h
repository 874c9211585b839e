// The dot kernel: HLO `dot` of bf16 operands (f32 or bf16 result) on the MXUs
// (docs/compiler.md, "Dot"; the tiling in mxu_tiling.h).
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

void EmitDotKernel(KernelContext& context);

}  // namespace tpusim::compiler
