#include "compiler/passes/new_instruction.h"

#include <memory>
#include <unordered_map>
#include <unordered_set>
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

void RemoveUnread(hlo::Computation& computation, std::vector<hlo::Instruction*> candidates,
                  const std::function<bool(const hlo::Instruction&)>& removable) {
  if (candidates.empty()) return;
  std::unordered_map<const hlo::Instruction*, int> readers;
  for (const auto& x : computation.instructions()) {
    for (const hlo::Instruction* operand : x->operands()) ++readers[operand];
  }
  std::unordered_set<const hlo::Instruction*> dead;
  while (!candidates.empty()) {
    hlo::Instruction* x = candidates.back();
    candidates.pop_back();
    if (dead.contains(x) || readers[x] > 0 || x == computation.root() || x->opcode() == hlo::Opcode::kParameter ||
        !removable(*x)) {
      continue;
    }
    dead.insert(x);
    for (hlo::Instruction* operand : x->operands()) {
      if (--readers[operand] == 0) candidates.push_back(operand);
    }
  }
  computation.RemoveInstructions(dead);
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
