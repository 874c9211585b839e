// Which kernel computes a group, and on how many TensorCores: the one dispatch Compile uses for
// every kernel, and the output fusion trials (output_fusion_trial.h) for their candidates.
#pragma once

#include "compiler/lower/kernel.h"
#include "compiler/passes/elementwise_fusion.h"

namespace tpusim::compiler {

// Whether the group is computed by the element-wise kernel: fused element-wise operations, a
// broadcast of a scalar, or a `fusion` instruction of the module.
bool IsElementwiseGroup(const KernelGroup& group);

// Emits context.group's kernel split over the cores it splits over (megacore, EmitOnCores),
// setting context.part for each core's part.
void EmitKernelOnCores(KernelContext& context);

}  // namespace tpusim::compiler
