// Reduces whose reduced dims all have size 1 (argsort's take-along-axis bounds check:
// `reduce(pred[1024,512,1], true), dimensions={2}, to_apply=and`): each output element covers
// exactly one operand element x, so it is reducer(init, x), the init value first as XLA's reduce
// applies it. The reducer may be any element-wise computation the element-wise kernels hold, and
// the element type any they hold (pred included), which the general reduce kernel does not offer.
//
// How: one re-tiling DMA copies the operand into HBM scratch (KernelContext::hbm_scratch_*) with
// the result's dims and layout (the operand's size-1 dims dropped), then the reducer's
// computation, cloned with the result's dims (parameter 0 the init scalar, parameter 1 the copy),
// runs as an element-wise kernel (elementwise_kernel.h) over the result's tiles.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// Whether `instruction` is a single-operand reduce whose reduced dims all have size 1 (or that
// reduces no dims).
bool IsUnitReduce(const hlo::Instruction& instruction);

void EmitUnitReduceKernel(KernelContext& context);

}  // namespace tpusim::compiler
