#include "compiler/passes/dot_transpose_folding.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

// Folds operand `side` (0 lhs, 1 rhs) of `dot` when it is a transpose; true if it did.
bool FoldOperand(hlo::Instruction& dot, std::size_t side) {
  hlo::Instruction* transpose = dot.operand(side);
  if (transpose->opcode() != Opcode::kTranspose || transpose->shape().is_tuple) return false;
  const auto* perm_attribute = transpose->Find<std::vector<int64_t>>("dimensions");
  if (perm_attribute == nullptr) return false;
  const std::vector<int64_t> perm = *perm_attribute;  // transpose dim i is operand dim perm[i]
  const std::string prefix = side == 0 ? "lhs" : "rhs";
  std::vector<int64_t>* batch = dot.FindMutable<std::vector<int64_t>>(prefix + "_batch_dims");
  std::vector<int64_t>* contracting = dot.FindMutable<std::vector<int64_t>>(prefix + "_contracting_dims");
  const auto rank = static_cast<int64_t>(perm.size());
  const auto listed = [&](int64_t d) {
    return (batch && std::count(batch->begin(), batch->end(), d)) ||
           (contracting && std::count(contracting->begin(), contracting->end(), d));
  };
  // The free dims, in the transpose's order, must map to increasing operand dims.
  int64_t last = -1;
  for (int64_t d = 0; d < rank; ++d) {
    if (listed(d)) continue;
    if (perm[d] < last) return false;
    last = perm[d];
  }
  if (batch) {
    for (int64_t& d : *batch) d = perm[d];
  }
  if (contracting) {
    for (int64_t& d : *contracting) d = perm[d];
  }
  dot.ReplaceOperand(side, transpose->operand(0));
  return true;
}

bool IsRead(const hlo::Computation& computation, const hlo::Instruction* x) {
  for (const auto& other : computation.instructions()) {
    const auto& operands = other->operands();
    if (std::find(operands.begin(), operands.end(), x) != operands.end()) return true;
    const auto predecessors = other->control_predecessors();
    if (std::find(predecessors.begin(), predecessors.end(), x) != predecessors.end()) return true;
  }
  return false;
}

}  // namespace

int FoldTransposesIntoDots(hlo::Module& module) {
  int folded = 0;
  for (const auto& computation : module.computations()) {
    std::vector<hlo::Instruction*> dropped;
    for (const auto& instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kDot || instruction->operand_count() != 2) continue;
      for (std::size_t side = 0; side < 2; ++side) {
        hlo::Instruction* transpose = instruction->operand(side);
        if (FoldOperand(*instruction, side)) {
          ++folded;
          if (std::find(dropped.begin(), dropped.end(), transpose) == dropped.end()) dropped.push_back(transpose);
        }
      }
    }
    for (hlo::Instruction* transpose : dropped) {
      if (transpose != computation->root() && !IsRead(*computation, transpose)) {
        computation->RemoveInstruction(transpose);
      }
    }
  }
  return folded;
}

}  // namespace tpusim::compiler
