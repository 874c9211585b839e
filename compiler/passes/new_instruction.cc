#include "compiler/passes/new_instruction.h"

#include <memory>

namespace tpusim::compiler {

hlo::Instruction* AddInstructionFor(const hlo::Instruction& origin, std::string name, hlo::Opcode opcode,
                                    isa::Shape shape) {
  hlo::Computation& computation = *origin.parent();
  while (computation.FindInstruction(name) != nullptr) name += "_";
  auto x = std::make_unique<hlo::Instruction>(std::move(name), opcode, std::move(shape));
  x->set_location(origin.location());
  return computation.AddInstruction(std::move(x));
}

}  // namespace tpusim::compiler
