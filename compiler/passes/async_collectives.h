// An optimized module's asynchronous collectives (all-reduce-start / -done, all-gather-start /
// -done, collective-permute-start / -done) as their synchronous forms, at the done: the
// collective kernels lower those. XLA overlaps the collective with the work between the start
// and the done; here it runs on its own, after that work (what this leaves out). Runs first,
// before layout assignment.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void SynchronizeAsyncCollectives(hlo::Module& module);

}  // namespace tpusim::compiler
