// topk over the last dim (docs/compiler.md, "TopK"): per row, k passes of a lane-parallel
// argmax over the row's (key, position) pairs, each pass taking the best pair strictly after the
// previous pass's pair in the order (key descending, position ascending), so nothing is masked
// in memory. Values are copied operand -> result by one DMA per selected element.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

void EmitTopKKernel(KernelContext& context);

}  // namespace tpusim::compiler
