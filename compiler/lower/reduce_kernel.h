// The reduce kernel: `reduce(x, init), dimensions={...}, to_apply=op` for one operand, op one of
// add, multiply, maximum, minimum (f32, bf16, s32, u32) or and, or, xor (s32, u32), over any set
// of dims (docs/compiler.md, "Reduce"). The operand streams through VMEM in double-buffered
// blocks of whole strips; the result is accumulated in VMEM as f32/32-bit words in the result's
// tiling, starting from init, and copied to HBM once at the end.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

void EmitReduceKernel(KernelContext& context);

}  // namespace tpusim::compiler
