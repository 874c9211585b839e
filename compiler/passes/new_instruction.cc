#include "compiler/passes/new_instruction.h"

#include <memory>
#include <vector>

namespace tpusim::compiler {

hlo::Instruction* AddInstructionFor(const hlo::Instruction& origin, std::string name, hlo::Opcode opcode,
                                    isa::Shape shape) {
  hlo::Computation& computation = *origin.parent();
  while (computation.FindInstruction(name) != nullptr) name += "_";
  auto x = std::make_unique<hlo::Instruction>(std::move(name), opcode, std::move(shape));
  x->set_location(origin.location());
  return computation.AddInstruction(std::move(x));
}

void RewriteEach(hlo::Module& module, const std::function<bool(const hlo::Instruction&)>& applies,
                 const std::function<hlo::Instruction*(hlo::Instruction&)>& rewrite) {
  // A rewrite may add computations (a reduce's to_apply): the ones there are now.
  std::vector<hlo::Computation*> computations;
  for (const auto& computation : module.computations()) computations.push_back(computation.get());
  for (hlo::Computation* computation : computations) {
    std::vector<hlo::Instruction*> matches;
    for (const auto& x : computation->instructions()) {
      if (applies(*x)) matches.push_back(x.get());
    }
    if (matches.empty()) continue;
    for (hlo::Instruction* x : matches) {
      computation->ReplaceUses(x, rewrite(*x));
      computation->RemoveInstruction(x);
    }
    computation->OrderOperandsFirst();
  }
}

}  // namespace tpusim::compiler
