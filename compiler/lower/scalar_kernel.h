// Rank-0 integer operations on the scalar core: what the element-wise kernels (f32, bf16, s32,
// u32, pred in vector registers) do not hold, chiefly s64 loop counters (while.hlo's
// `add(s64[], s64[])` and `compare(s64[], s64[])`), and also u64 and the 8- and 16-bit integer
// types. The operands are copied HBM -> SMEM by DMA, loaded into 64-bit scalar registers
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
// integer and pred scalars (f32 and bf16 only as compare operands), where some value is of a type
// the element-wise kernels do not hold (s64, u64, s8, u8, s16, u16) or the result is a pred (the
// element-wise kernels do not store pred arrays; a loop condition's result is one).
bool IsScalarCoreGroup(const KernelGroup& group);

void EmitScalarKernel(KernelContext& context);

}  // namespace tpusim::compiler
