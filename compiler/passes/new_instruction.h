// What the HLO rewrite passes share: adding an instruction on behalf of another.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "isa/shape.h"

namespace tpusim::compiler {

// Adds an instruction `opcode` of `shape` to `origin`'s computation, named `name` (made unique
// with '_' suffixes) and located where `origin` was written, so that errors about it point there.
hlo::Instruction* AddInstructionFor(const hlo::Instruction& origin, std::string name, hlo::Opcode opcode,
                                    isa::Shape shape);

// Removes from `computation` the `candidates` nothing reads (but parameters and the root), and
// then what only those read, as far as `removable` allows: what a rewrite left behind.
void RemoveUnread(hlo::Computation& computation, std::vector<hlo::Instruction*> candidates,
                  const std::function<bool(const hlo::Instruction&)>& removable);

// In every computation of `module` (those it has when called: a rewrite may add more), each
// instruction `applies` to is replaced by what `rewrite` adds for it (its readers, and the root, read that instead; the instruction goes), and a
// computation that changed is reordered operands-first: the rewrites are appended.
void RewriteEach(hlo::Module& module, const std::function<bool(const hlo::Instruction&)>& applies,
                 const std::function<hlo::Instruction*(hlo::Instruction&)>& rewrite);

}  // namespace tpusim::compiler
