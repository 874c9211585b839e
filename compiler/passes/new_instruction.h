// What the HLO rewrite passes share: adding an instruction on behalf of another.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "isa/shape.h"

namespace tpusim::compiler {

// Adds an instruction `opcode` of `shape` to `origin`'s computation, named `name` (made unique
// with '_' suffixes) and located where `origin` was written, so that errors about it point there.
hlo::Instruction* AddInstructionFor(const hlo::Instruction& origin, std::string name, hlo::Opcode opcode,
                                    isa::Shape shape);

}  // namespace tpusim::compiler
