// Dots the dot kernel (dot_kernel.h) does not take as written: several free or contracting dims
// per operand, none (matrix-vector, outer products), or batch dims that are not the leading dims
// in order (Gemma 3's attention: bf16[2,1,1152,256] x bf16[1,11,1152] -> bf16[2,1,256,1,11]).
// XLA's dot is a matrix product once each operand's dims are grouped as [batch..., free...,
// contracting...] (lhs) and [batch..., contracting..., free...] (rhs), the groups merged into
// M, K and N, and its result's dims are [batch..., lhs free..., rhs free...]: exactly the
// row-major order of [batch..., M, N]. So the operands are copied (each by two DMAs: a permuted
// view into row-major untiled HBM scratch, whose bytes are also the merged dims' untiled image,
// then re-tiled into the TPU layout) into canonical [batch..., M, K] and [batch..., K, N] arrays,
// the dot kernel multiplies them into a canonical result in scratch, and two DMAs bring that to
// the result's dims and layout. All of it between the dot's labels: one kernel in the report.
// A side whose bytes already are the canonical array's (Llama's bf16[1,8192,4096] lhs, say) is
// read or written in place instead, with no copies.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// The dot kernel when the dot is canonical (mxu_tiling.h's CanonicalDot), else the above.
void EmitGeneralDotKernel(KernelContext& context);

// Megacore: the TensorCores the dot splits over: the dot kernel's split of the canonical dot
// (DotCoreParts), which the copies before and after it, on core 0, do not change.
int GeneralDotCoreParts(const KernelContext& context);

}  // namespace tpusim::compiler
