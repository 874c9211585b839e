// The dot kernel: HLO `dot` of bf16 operands (f32 or bf16 result) on the MXUs
// (docs/compiler.md, "Dot"; the tiling in mxu_tiling.h).
#pragma once

#include <cstdint>
#include <utility>

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// Emits the dot of context.instruction, or with context.part of several, that core's rows of it.
void EmitDotKernel(KernelContext& context);

// Megacore: the TensorCores a canonical dot splits its rows (M) over: every core of the target
// where each gets at least a pass of MXU rows, else 1.
int DotCoreParts(const KernelContext& context);
// Core part.index's output rows [first, end) of a dot with `m` rows: equal shares of whole result
// tiles and packed vregs.
std::pair<int64_t, int64_t> DotCoreRows(int64_t m, const CorePart& part, int64_t sublanes, const DeviceBuffer& result);

}  // namespace tpusim::compiler
