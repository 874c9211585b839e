#include "compiler/passes/dead_code_elimination.h"

#include <unordered_set>
#include <vector>

#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

bool HasSideEffectItself(const Instruction& x) {
  switch (x.opcode()) {
    case Opcode::kSend:
    case Opcode::kSendDone:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
    case Opcode::kInfeed:
    case Opcode::kOutfeed:
    case Opcode::kRng:
    case Opcode::kRngGetAndUpdateState:
    case Opcode::kAllReduceStart:
    case Opcode::kAllReduceDone:
    case Opcode::kAllGatherStart:
    case Opcode::kAllGatherDone:
    case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectivePermuteDone:
      return true;
    case Opcode::kAllReduce:
      return x.HasAttribute("channel_id");
    case Opcode::kCustomCall:
      return x.GetBool("custom_call_has_side_effect", false);
    default:
      return false;
  }
}

}  // namespace

bool HasSideEffect(const Instruction& x) {
  if (HasSideEffectItself(x)) return true;
  for (const hlo::Computation* callee : x.CalledComputations()) {
    for (const auto& y : callee->instructions()) {
      if (HasSideEffect(*y)) return true;
    }
  }
  return false;
}

std::size_t EliminateDeadCode(hlo::Module& module) {
  std::size_t removed = 0;
  for (const auto& computation : module.computations()) {
    std::unordered_set<const Instruction*> read;
    std::unordered_set<const Instruction*> followed;  // named in another's control-predecessors: stays
    for (const auto& x : computation->instructions()) {
      for (const Instruction* operand : x->operands()) read.insert(operand);
      for (const Instruction* before : x->control_predecessors()) followed.insert(before);
    }
    std::vector<Instruction*> unread;
    for (const auto& x : computation->instructions()) {
      if (!read.contains(x.get())) unread.push_back(x.get());
    }
    const std::size_t before = computation->instructions().size();
    RemoveUnread(*computation, std::move(unread),
                 [&](const Instruction& x) { return !followed.contains(&x) && !HasSideEffect(x); });
    removed += before - computation->instructions().size();
  }
  return removed;
}

}  // namespace tpusim::compiler
