#include "compiler/passes/unit_reduces.h"

#include <string>
#include <unordered_map>

#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/layout_assignment.h"
#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// Whether the reducer holds only its two parameters, scalar constants and element-wise
// operations: what can be written out over arrays.
bool ElementwiseReducer(const hlo::Computation& reducer) {
  if (reducer.parameters().size() != 2 || reducer.root()->shape().is_tuple) return false;
  for (const auto& x : reducer.instructions()) {
    if (x->opcode() == Opcode::kParameter) continue;
    if (x->opcode() == Opcode::kConstant) {
      if (x->shape().rank() != 0 || x->literal() == nullptr) return false;
      continue;
    }
    if (!IsElementwiseOpcode(x->opcode())) return false;
  }
  return true;
}

// reducer(broadcast(init), reshape(operand)) over the reduce's result dims.
Instruction* Expand(Instruction& reduce) {
  const hlo::Computation& reducer = *reduce.GetComputation("to_apply");
  const isa::Shape& result = reduce.shape();
  // The result's dims and dim order, with `type`'s default tiles (the result's own shape for its
  // type: the last instruction replaces the reduce).
  const auto array = [&](isa::ElementType type) { return type == result.element_type ? result : AsType(result, type); };
  const auto add = [&](const std::string& role, Opcode opcode, isa::Shape shape) {
    return AddInstructionFor(reduce, reduce.name() + ".unit_" + role, opcode, std::move(shape));
  };
  const auto broadcast = [&](Instruction* scalar, const std::string& role) {
    Instruction* spread = add(role, Opcode::kBroadcast, array(scalar->shape().element_type));
    spread->AddOperand(scalar);
    spread->AddAttribute({"dimensions", std::vector<int64_t>{}, {}});
    return spread;
  };
  std::unordered_map<const Instruction*, Instruction*> mapped;
  mapped[reducer.parameters()[0]] = broadcast(reduce.operand(1), "init");
  // The operand itself where it has the result's dims (a reduce over no dim): a reshape would
  // keep its producers out of the kernel.
  Instruction* operand = reduce.operand(0);
  if (operand->shape().dims != result.dims) {
    operand = add("operand", Opcode::kReshape, array(reduce.operand(0)->shape().element_type));
    operand->AddOperand(reduce.operand(0));
  }
  mapped[reducer.parameters()[1]] = operand;
  for (const auto& x : reducer.instructions()) {
    if (mapped.contains(x.get())) continue;
    if (x->opcode() == Opcode::kConstant) {
      Instruction* constant = add(x->name(), Opcode::kConstant, x->shape());
      constant->set_constant(x->constant_form(), *x->literal(), x->literal_text());
      mapped[x.get()] = broadcast(constant, x->name() + "_broadcast");
      continue;
    }
    Instruction* copy = add(x->name(), x->opcode(), array(x->shape().element_type));
    for (const Instruction* input : x->operands()) copy->AddOperand(mapped.at(input));
    for (const hlo::Attribute& attribute : x->attributes()) copy->AddAttribute(attribute);
    mapped[x.get()] = copy;
  }
  return mapped.at(reducer.root());
}

}  // namespace

bool IsUnitReduce(const Instruction& instruction) {
  if (instruction.opcode() != Opcode::kReduce || instruction.operand_count() != 2 || instruction.shape().is_tuple) {
    return false;
  }
  const isa::Shape& operand = instruction.operand(0)->shape();
  if (operand.is_tuple) return false;
  for (int64_t d : instruction.GetIntList("dimensions")) {
    if (d < 0 || d >= operand.rank() || operand.dims[d] != 1) return false;
  }
  return true;
}

void ExpandUnitReduces(hlo::Module& module) {
  RewriteEach(
      module,
      [](const Instruction& x) { return IsUnitReduce(x) && ElementwiseReducer(*x.GetComputation("to_apply")); },
      [](Instruction& reduce) { return Expand(reduce); });
}

}  // namespace tpusim::compiler
