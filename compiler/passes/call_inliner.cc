#include "compiler/passes/call_inliner.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/lower/elementwise_expr.h"
#include "isa/error.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// Control predecessors name instructions: a copy's must name the copies (or, for the callee's
// parameters, the call's operands).
void RemapControlPredecessors(Instruction& x, const std::unordered_map<const Instruction*, Instruction*>& map) {
  for (hlo::Attribute& attribute : x.mutable_attributes()) {
    auto* list = std::get_if<std::vector<Instruction*>>(&attribute.value);
    if (attribute.name != "control-predecessors" || list == nullptr) continue;
    for (Instruction*& p : *list) {
      const auto it = map.find(p);
      if (it != map.end()) p = it->second;
    }
  }
}

// Whether the element-wise kernel lowers `fusion` as written (compiler/lower/elementwise_expr.cc):
// its computation holds only parameters, scalar constants, element-wise operations, broadcasts,
// copies, reshapes and bitcasts, reduce-precisions and a tuple root of results of one shape.
bool ElementwiseAsWritten(const Instruction& fusion) {
  const hlo::Computation& fused = *fusion.GetComputation("calls");
  for (const auto& x : fused.instructions()) {
    switch (x->opcode()) {
      case Opcode::kParameter: case Opcode::kBroadcast: case Opcode::kCopy: case Opcode::kReshape:
      case Opcode::kBitcast: case Opcode::kReducePrecision:
        continue;
      case Opcode::kConstant:
        if (x->shape().rank() != 0) return false;
        continue;
      case Opcode::kTuple:
        if (x.get() != fused.root()) return false;
        continue;
      default:
        if (!IsElementwiseOpcode(x->opcode())) return false;
    }
  }
  return true;
}

// Whether `x` is inlined: a call, or a fusion the kernels do not lower as written.
bool Inlined(const Instruction& x) {
  return x.opcode() == Opcode::kCall || (x.opcode() == Opcode::kFusion && !ElementwiseAsWritten(x));
}

// Replaces `call` (a call or a fusion, in its computation) by copies of its callee's instructions.
void InlineOne(Instruction& call) {
  hlo::Computation& caller = *call.parent();
  const hlo::Computation& callee = *call.GetComputation(call.opcode() == Opcode::kFusion ? "calls" : "to_apply");
  if (callee.parameters().size() != call.operand_count()) {
    throw Error(call.Describe() + ": calls '" + callee.name() + "', which takes " +
                std::to_string(callee.parameters().size()) + " parameters, with " +
                std::to_string(call.operand_count()) + " operands");
  }
  std::unordered_map<const Instruction*, Instruction*> copy_of;
  for (std::size_t i = 0; i < callee.parameters().size(); ++i) copy_of[callee.parameters()[i]] = call.operand(i);
  for (const auto& original : callee.instructions()) {
    if (original->opcode() == Opcode::kParameter) continue;
    std::string name = call.name() + "." + original->name();
    while (caller.FindInstruction(name) != nullptr) name += "_";
    auto x = std::make_unique<Instruction>(std::move(name), original->opcode(), original->shape());
    x->set_async_wrapped_opcode(original->async_wrapped_opcode());
    x->set_location(original->location());
    if (original->opcode() == Opcode::kConstant) {
      std::optional<hlo::Literal> literal;
      if (original->literal() != nullptr) literal = *original->literal();
      x->set_constant(original->constant_form(), std::move(literal), original->literal_text());
    }
    for (const Instruction* operand : original->operands()) x->AddOperand(copy_of.at(operand));
    for (const hlo::Attribute& attribute : original->attributes()) x->AddAttribute(attribute);
    RemapControlPredecessors(*x, copy_of);
    copy_of[original.get()] = caller.AddInstruction(std::move(x));
  }
  Instruction* result = copy_of.at(callee.root());
  caller.ReplaceUses(&call, result);
  std::unordered_map<const Instruction*, Instruction*> call_to_result = {{&call, result}};
  for (const auto& x : caller.instructions()) RemapControlPredecessors(*x, call_to_result);
  caller.RemoveInstruction(&call);
}

}  // namespace

void InlineCalls(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    // Inlined callees may hold calls of their own: repeat until none is left. A computation
    // that calls itself would never end; HLO forbids recursion, so a bound guards the loop.
    for (int round = 0;; ++round) {
      std::vector<Instruction*> calls;
      for (const auto& x : computation->instructions()) {
        if (Inlined(*x)) calls.push_back(x.get());
      }
      if (calls.empty()) break;
      if (round == 64) {
        throw Error(calls.front()->Describe() + ": calls nest more than 64 deep (recursive calls are not HLO)");
      }
      for (Instruction* call : calls) InlineOne(*call);
      computation->OrderOperandsFirst();
    }
  }
}

}  // namespace tpusim::compiler
