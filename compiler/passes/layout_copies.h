// Layout copies: after layout assignment, a value may reach an instruction in another layout
// than the one the instruction reads it in (the module's text fixes both). Here a `copy` to the
// needed layout is put between them, as XLA's layout assignment does, and the copy is lowered
// like any other (a re-tiling or transposing DMA). Three places need it:
//  - a `call`'s operand and the called computation's parameter (the call binds the operand's
//    buffer as the parameter);
//  - an element-wise operation's array operand and its result, which the element-wise kernels
//    walk tile by tile in one layout;
//  - a custom-call "Sharding" that changes the layout (otherwise an alias of its operand).
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

// Inserts the copies in every computation of `module` (after AssignLayouts).
void InsertLayoutCopies(hlo::Module& module);

}  // namespace tpusim::compiler
