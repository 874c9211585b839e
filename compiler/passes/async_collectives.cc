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

bool IsAsyncDone(const Instruction& x) {
  return x.operand_count() == 1 && SynchronousOf(x.operand(0)->opcode(), x.opcode()).has_value();
}

bool IsAsyncStart(const Instruction& x) {
  return x.opcode() == Opcode::kAllReduceStart || x.opcode() == Opcode::kAllGatherStart ||
         x.opcode() == Opcode::kCollectivePermuteStart;
}

// The synchronous collective of `done`'s start, with its operands and attributes.
Instruction* Synchronous(Instruction& done) {
  const Instruction& start = *done.operand(0);
  Instruction* collective =
      AddInstructionFor(done, start.name(), *SynchronousOf(start.opcode(), done.opcode()), done.shape());
  for (Instruction* operand : start.operands()) collective->AddOperand(operand);
  for (const hlo::Attribute& attribute : start.attributes()) collective->AddAttribute(attribute);
  return collective;
}

}  // namespace

void SynchronizeAsyncCollectives(hlo::Module& module) {
  RewriteEach(module, IsAsyncDone, Synchronous);
  // The starts their dones no longer read.
  for (const auto& computation : module.computations()) {
    std::vector<Instruction*> starts;
    for (const auto& x : computation->instructions()) {
      if (IsAsyncStart(*x)) starts.push_back(x.get());
    }
    RemoveUnread(*computation, std::move(starts), IsAsyncStart);
  }
}

}  // namespace tpusim::compiler
