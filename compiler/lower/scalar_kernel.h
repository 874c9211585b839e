// Rank-0 integer operations on the scalar core: loop counters and predicates (while.hlo's
// `add(s64[], s64[])` and `compare(s64[], s64[])`), every integer width from 8 to 64 bits. Kept
// off the VPU so that a counter costs a few scalar instructions, not a vector tile's round trip,
// and so that timing-only runs (which move scalars but no vector data) count loops right. The
// operands are copied HBM -> SMEM by DMA, loaded into 64-bit scalar registers
// (sign- or zero-extended from their width), combined with the scalar ALU and branches, stored to
// SMEM and copied back to HBM; the store and the DMA keep only the result type's bytes, which is
// XLA's wrap-around for integer results. Float compares (IEEE: false with a NaN except NE, -0 ==
// +0) compare integer keys made from the bits: |x| for x >= 0, -|x| for x < 0.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// Whether the group (one instruction, or an element-wise fusion of rank-0 instructions and scalar
// constants) is computed here: add, subtract, multiply, divide, remainder, and, or, xor, not,
// negate, abs, maximum, minimum, clamp, compare, select, the three shifts, convert and copy, on
// integer and pred scalars (f32 and bf16 only as compare operands). Every value is kept extended
// from its own width after each operation, so narrow results wrap as XLA's do.
bool IsScalarCoreGroup(const KernelGroup& group);

void EmitScalarKernel(KernelContext& context);

}  // namespace tpusim::compiler
