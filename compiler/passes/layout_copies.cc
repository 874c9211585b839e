#include "compiler/passes/layout_copies.h"

#include <string>
#include <vector>

#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/new_instruction.h"
#include "isa/shape.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

// Replaces operand `i` of `user` by a copy of it with shape `needed`.
void CopyOperand(hlo::Instruction& user, std::size_t i, isa::Shape needed) {
  hlo::Instruction* copy = AddInstructionFor(user, user.name() + ".relayout." + std::to_string(i), Opcode::kCopy,
                                             std::move(needed));
  copy->AddOperand(user.operand(i));
  user.ReplaceOperand(i, copy);
}

bool IsArray(const isa::Shape& shape) { return !shape.is_tuple && shape.layout.has_value(); }

// The same array in another layout: what a copy turns `have` into `need`.
bool OnlyLayoutDiffers(const isa::Shape& have, const isa::Shape& need) {
  return IsArray(have) && IsArray(need) && have.dims == need.dims && have.element_type == need.element_type &&
         *have.layout != *need.layout;
}

void CopyCallOperands(hlo::Instruction& call) {
  const hlo::Computation* callee = call.GetComputation("to_apply");
  for (std::size_t i = 0; i < call.operand_count() && i < callee->parameters().size(); ++i) {
    const isa::Shape& need = callee->parameters()[i]->shape();
    if (OnlyLayoutDiffers(call.operand(i)->shape(), need)) CopyOperand(call, i, need);
  }
}

void CopyElementwiseOperands(hlo::Instruction& op) {
  const isa::Shape& result = op.shape();
  if (!IsArray(result) || result.rank() < 2) return;
  for (std::size_t i = 0; i < op.operand_count(); ++i) {
    const isa::Shape& have = op.operand(i)->shape();
    if (!IsArray(have) || have.dims != result.dims ||
        have.layout->minor_to_major == result.layout->minor_to_major) {
      continue;
    }
    isa::Shape need = have;
    need.layout->minor_to_major = result.layout->minor_to_major;
    CopyOperand(op, i, std::move(need));
  }
}

// custom-call "Sharding" is an alias of its operand (buffer assignment) when their shapes agree;
// JAX's sharding constraints may also change the layout, which takes a copy.
void CopyShardingOperand(hlo::Instruction& annotation) {
  const auto* target = annotation.Find<hlo::QuotedString>("custom_call_target");
  if (target == nullptr || target->value != "Sharding" || annotation.operand_count() != 1) return;
  if (OnlyLayoutDiffers(annotation.operand(0)->shape(), annotation.shape())) {
    CopyOperand(annotation, 0, annotation.shape());
  }
}

}  // namespace

void InsertLayoutCopies(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    std::vector<hlo::Instruction*> instructions;
    for (const auto& instruction : computation->instructions()) instructions.push_back(instruction.get());
    for (hlo::Instruction* instruction : instructions) {
      if (instruction->opcode() == Opcode::kCall) {
        CopyCallOperands(*instruction);
      } else if (instruction->opcode() == Opcode::kCustomCall) {
        CopyShardingOperand(*instruction);
      } else if (IsElementwiseOpcode(instruction->opcode())) {
        CopyElementwiseOperands(*instruction);
      }
    }
    // The copies it appends are read by instructions written before them.
    if (computation->instruction_count() != instructions.size()) computation->OrderOperandsFirst();
  }
}

}  // namespace tpusim::compiler
