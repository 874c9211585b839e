#include "compiler/passes/async_collectives.h"

#include <optional>
#include <vector>

#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// The synchronous form of the collective a done finishes, given its start's opcode.
std::optional<Opcode> SynchronousOf(Opcode start, Opcode done) {
  if (start == Opcode::kAllReduceStart && done == Opcode::kAllReduceDone) return Opcode::kAllReduce;
  if (start == Opcode::kAllGatherStart && done == Opcode::kAllGatherDone) return Opcode::kAllGather;
  if (start == Opcode::kCollectivePermuteStart && done == Opcode::kCollectivePermuteDone) return Opcode::kCollectivePermute;
  return std::nullopt;
}

}  // namespace

void SynchronizeAsyncCollectives(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    std::vector<Instruction*> dones;
    for (const auto& x : computation->instructions()) {
      if (x->operand_count() == 1 && SynchronousOf(x->operand(0)->opcode(), x->opcode())) dones.push_back(x.get());
    }
    if (dones.empty()) continue;
    std::vector<Instruction*> starts;
    for (Instruction* done : dones) {
      Instruction* start = done->operand(0);
      Instruction* collective =
          AddInstructionFor(*done, start->name(), *SynchronousOf(start->opcode(), done->opcode()), done->shape());
      for (Instruction* operand : start->operands()) collective->AddOperand(operand);
      for (const hlo::Attribute& attribute : start->attributes()) collective->AddAttribute(attribute);
      computation->ReplaceUses(done, collective);
      computation->RemoveInstruction(done);
      starts.push_back(start);
    }
    computation->OrderOperandsFirst();
    for (Instruction* start : starts) {
      bool read = start == computation->root();
      for (const auto& y : computation->instructions()) {
        for (const Instruction* operand : y->operands()) read = read || operand == start;
      }
      if (!read) computation->RemoveInstruction(start);
    }
  }
}

}  // namespace tpusim::compiler
