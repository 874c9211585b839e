// scatter with an assigning combiner (`to_apply` returns its second parameter): the result starts
// as a copy of the operand, then each update window is copied into place by its own DMA, in the
// order of the scatter indices (all on one engine, so a later update of the same element wins, as
// in XLA's evaluator). An update whose window does not fit in the operand is skipped, as XLA does.
// Indices reach scalar registers through IndexLoop (index_loop.h). Other combiners (add, ...)
// and multi-operand scatters are refused.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

void EmitScatterKernel(KernelContext& context);

}  // namespace tpusim::compiler
