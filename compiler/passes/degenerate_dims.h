// Degenerate-dim removal: a reduce whose operand or result has dims of size 1 becomes
//   reshape(reduce(reshape(operand)))
// with the size-1 dims gone (reducing over a size-1 dim folds nothing), as XLA's algebraic
// simplifier does. Layout assignment puts size-1 dims at the major end, so both reshapes are
// aliases of the same bytes (SameRowMajorImage) and the reduce kernel sees row-major arrays:
// attention's reduce over bf16[16,8,1,2048,2048]{4,3,1,0,2} is the reduce over [16,8,2048,2048].
// Runs after AssignLayouts; the instructions it adds get default layouts.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void RemoveDegenerateReduceDims(hlo::Module& module);

}  // namespace tpusim::compiler
