#include "compiler/hlo/reducer_pattern.h"

namespace tpusim::hlo {

std::optional<ReduceOp> ReducerOpOf(const Instruction& reduce) {
  if ((reduce.opcode() != Opcode::kReduce && reduce.opcode() != Opcode::kReduceWindow) ||
      !reduce.HasAttribute("to_apply")) return std::nullopt;
  const Computation& c = *reduce.GetComputation("to_apply");
  if (c.parameters().size() != 2 || c.instruction_count() != 3) return std::nullopt;
  const Instruction& root = *c.root();
  if (root.shape().is_tuple || root.operand_count() != 2) return std::nullopt;
  const Instruction* a = root.operand(0);
  const Instruction* b = root.operand(1);
  if (a->opcode() != Opcode::kParameter || b->opcode() != Opcode::kParameter ||
      a->parameter_number() == b->parameter_number()) {
    return std::nullopt;
  }
  switch (root.opcode()) {
    case Opcode::kAdd: return ReduceOp::kAdd;
    case Opcode::kMultiply: return ReduceOp::kMultiply;
    case Opcode::kMaximum: return ReduceOp::kMaximum;
    case Opcode::kMinimum: return ReduceOp::kMinimum;
    case Opcode::kAnd: return ReduceOp::kAnd;
    case Opcode::kOr: return ReduceOp::kOr;
    case Opcode::kXor: return ReduceOp::kXor;
    default: return std::nullopt;
  }
}

}  // namespace tpusim::hlo
