#include "compiler/passes/algebraic_simplifier.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// Whether `x`'s result is `source`'s bytes as they are: the same dims and type, and the same
// layout where both are written.
bool SameArray(const Instruction& x, const Instruction& source) {
  const isa::Shape& a = x.shape();
  const isa::Shape& b = source.shape();
  if (a.is_tuple || b.is_tuple || a.dims != b.dims || a.element_type != b.element_type) return false;
  return !a.layout || !b.layout || *a.layout == *b.layout;
}

bool IsIota(const std::vector<int64_t>& v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// What `x` is to be replaced by, or null.
Instruction* Simplified(Instruction& x) {
  if (x.operand_count() != 1) return nullptr;
  Instruction* source = x.operand(0);
  switch (x.opcode()) {
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
      if (IsIota(x.GetIntListOrEmpty("dimensions")) && SameArray(x, *source)) return source;
      return nullptr;
    case Opcode::kReshape:
      if (SameArray(x, *source)) return source;
      return nullptr;
    default:
      return nullptr;
  }
}

}  // namespace

void SimplifyAlgebraically(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    std::vector<Instruction*> instructions;
    for (const auto& x : computation->instructions()) instructions.push_back(x.get());
    std::vector<Instruction*> bypassed;  // instructions their readers no longer read
    for (Instruction* x : instructions) {
      // reshape(reshape(y)) reads y: the inner reshape may then go unread.
      if (x->opcode() == Opcode::kReshape && x->operand(0)->opcode() == Opcode::kReshape) {
        bypassed.push_back(x->operand(0));
        x->ReplaceOperand(0, x->operand(0)->operand(0));
      }
      if (Instruction* replacement = Simplified(*x)) {
        computation->ReplaceUses(x, replacement);
        bypassed.push_back(x);
      }
    }
    if (bypassed.empty()) continue;
    // Drop what nothing reads any more, and what only those read (but parameters and the root).
    std::unordered_map<const Instruction*, int> readers;
    for (const auto& x : computation->instructions()) {
      for (const Instruction* operand : x->operands()) ++readers[operand];
    }
    std::unordered_set<const Instruction*> dead;
    while (!bypassed.empty()) {
      Instruction* x = bypassed.back();
      bypassed.pop_back();
      if (dead.contains(x) || readers[x] > 0 || x == computation->root() || x->opcode() == Opcode::kParameter) continue;
      if (x->opcode() != Opcode::kBroadcast && x->opcode() != Opcode::kTranspose && x->opcode() != Opcode::kReshape) continue;
      dead.insert(x);
      for (Instruction* operand : x->operands()) {
        if (--readers[operand] == 0) bypassed.push_back(operand);
      }
    }
    computation->RemoveInstructions(dead);
  }
}

}  // namespace tpusim::compiler
