// gather: one DMA per index vector (docs/compiler.md, "Sort, top-k, gather"). Slow but general:
// the indices reach scalar registers through IndexLoop (index_loop.h), are clamped as XLA does,
// and each slice is copied operand -> result by its own DMA.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

void EmitGatherKernel(KernelContext& context);

}  // namespace tpusim::compiler
