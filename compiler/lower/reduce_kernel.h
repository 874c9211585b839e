// The reduce kernel: `reduce(x, init), dimensions={...}, to_apply=op` for one operand, op one of
// add, multiply, maximum, minimum (f32, bf16, s32, u32) or and, or, xor (s32, u32), over any set
// of dims (docs/compiler.md, "Reduce"). The operand streams through VMEM in double-buffered
// blocks of whole strips; the result is accumulated in VMEM as f32/32-bit words in the result's
// tiling, starting from init, and copied to HBM once at the end.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// With a fused group (context.group.fused(): the reduce and the element-wise producers of its
// operand, XLA's input fusion), the operand is never in HBM: the producers compute it block by
// block into VMEM (elementwise_kernel.h's producer) and each block is folded where it lies.
void EmitReduceKernel(KernelContext& context);

// Megacore: the parts `context`'s reduce splits into (the target's cores, or 1): a lane fold's
// result rows split over the cores where each core's strips are whole result rows of its own
// (docs/compiler.md, "Reduce").
int ReduceCoreParts(const KernelContext& context);

// Whether the fused reduce `group` lowers (its accumulators and two strips of every producer
// stream fit VMEM, its expression fits the registers): the fusion pass fuses only such groups.
bool ReduceInputFusionFits(const KernelGroup& group, const CompileOptions& options);

}  // namespace tpusim::compiler
