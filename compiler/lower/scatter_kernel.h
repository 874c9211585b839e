// scatter with an assigning combiner (`to_apply` returns its second parameter): the result starts
// as a copy of the operand, then each update window is copied into place by its own DMA, in the
// order of the scatter indices (all on one engine, so a later update of the same element wins, as
// in XLA's evaluator). An update whose window does not fit in the operand is skipped, as XLA does.
// With an adding combiner (jax's scatter-add, f32/bf16/s32/u32) each window is read-modify-written
// instead: the result's window and the update's go to VMEM, the VPU adds them (bf16 in f32,
// rounded once), the sum goes back, one index after the other so repeated indices add in index
// order, as the evaluator does. Indices reach scalar registers through IndexLoop (index_loop.h).
// Other combiners and multi-operand scatters are refused.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

void EmitScatterKernel(KernelContext& context);

}  // namespace tpusim::compiler
