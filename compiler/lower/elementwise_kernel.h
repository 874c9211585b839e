// Element-wise kernels: an element-wise op, or a fusion of them, as one pass over the output's
// tiles. Blocks of whole strips stream HBM -> VMEM by DMA (double-buffered: block b+1 lands while
// the VPU computes block b), the VPU loads each tile of every operand (bf16 unpacked to f32),
// evaluates the expression in registers (bf16 results rounded once per operation, as XLA does),
// zeroes the layout's padding where the expression would not keep it zero, packs and stores,
// and the block goes back to HBM by DMA. Scalars are read once through SMEM and broadcast.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

void EmitElementwiseKernel(KernelContext& context);

}  // namespace tpusim::compiler
