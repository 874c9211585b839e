// Unit reduces as element-wise operations: a single-operand reduce whose reduced dims all have
// size 1 (or that reduces no dim) folds exactly one operand element x into each output element,
// so it is reducer(init, x), the init value first as XLA's reduce applies it (argsort's
// take-along-axis bounds check: `reduce(pred[1024,512,1], true), dimensions={2}, to_apply=and`).
// It becomes the reducer's computation written out over the result's dims, its parameter 0 a
// broadcast of the init value and its parameter 1 the operand reshaped to the result's dims (an
// alias where the size-1 dims lie major), its scalar constants broadcast; element-wise fusion then
// makes it one kernel. XLA's algebraic simplifier replaces such a reduce by the reshape alone,
// taking the init value to be the reducer's identity; this keeps any init and any reducer the
// element-wise kernels hold exact (a non-commutative `subtract`: 100 - x). Left as it is: a
// variadic reduce, and a reducer with anything but element-wise operations and scalar constants
// (the lowering then says so). Runs after the degenerate-dim removal, whose squeezed reduces over
// no dim it rewrites too; the instructions it adds take the reduce's result layout.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

// Whether `instruction` is a single-operand reduce whose reduced dims all have size 1 (or that
// reduces no dims).
bool IsUnitReduce(const hlo::Instruction& instruction);

void ExpandUnitReduces(hlo::Module& module);

}  // namespace tpusim::compiler
