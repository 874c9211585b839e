// Values and control flow: parameter, constant, tuple, get-tuple-element, while, conditional,
// call, fusion, async-start/-update/-done. Called computations must take what the instruction
// passes them; the result is what they return.
#include <string>

#include "compiler/hlo/shape_inference.h"
#include "compiler/hlo/shape_inference_util.h"

namespace tpusim::hlo::inference {

using isa::ElementType;
using isa::Shape;

namespace {

std::vector<Shape> OperandShapes(const Instruction& instruction) {
  std::vector<Shape> shapes;
  shapes.reserve(instruction.operand_count());
  for (const Instruction* operand : instruction.operands()) shapes.push_back(Logical(operand->shape()));
  return shapes;
}

}  // namespace

Shape InferParameter(const Instruction& instruction) {
  // The entry's parameters are what entry_computation_layout says (the parser has checked that
  // they agree); other computations' parameters are what their callers pass, checked at the call.
  const Computation* computation = instruction.parent();
  const Module* module = computation ? computation->parent() : nullptr;
  const ProgramShape* layout = module ? module->entry_computation_layout() : nullptr;
  const int64_t number = instruction.parameter_number();
  if (layout && module->entry() == computation && number >= 0 &&
      number < static_cast<int64_t>(layout->parameters.size())) {
    return Logical(layout->parameters[number]);
  }
  return Written(instruction);
}

Shape InferConstant(const Instruction& instruction) {
  // A parsed literal has the shape its text had; an elided `{...}` or a value tpusim cannot hold
  // has only the written shape.
  const Literal* literal = instruction.literal();
  return literal ? Logical(literal->shape()) : Written(instruction);
}

Shape InferTuple(const Instruction& instruction) { return Shape::Tuple(OperandShapes(instruction)); }

Shape InferGetTupleElement(const Instruction& instruction) {
  const Shape& tuple = TupleOperand(instruction, 0);
  const int64_t index = instruction.GetInt("index");
  if (index < 0 || index >= static_cast<int64_t>(tuple.tuple_shapes.size())) {
    Fail(instruction, "index=" + std::to_string(index) + " is out of range for the " +
                          std::to_string(tuple.tuple_shapes.size()) + "-element tuple " + Str(tuple));
  }
  return Logical(tuple.tuple_shapes[index]);
}

Shape InferWhile(const Instruction& instruction) {
  // The loop carries one value: the condition reads it and says whether to go on, the body maps
  // it to the next one, of the same shape.
  const Shape carried = Logical(instruction.operand(0)->shape());
  const Computation& condition = Called(instruction, "condition");
  const Computation& body = Called(instruction, "body");
  CheckParameters(instruction, "condition", condition, {carried});
  CheckResult(instruction, "condition", condition, Scalar(ElementType::kPred));
  CheckParameters(instruction, "body", body, {carried});
  CheckResult(instruction, "body", body, carried);
  return carried;
}

Shape InferConditional(const Instruction& instruction) {
  // conditional(index, operand_0, ...): a pred index picks true_computation (true) or
  // false_computation; an s32 index picks branch_computations[index] (the last one when out of
  // range). Branch k takes operand k+1; all branches return the same shape.
  const Shape& index = ScalarOperand(instruction, 0, "the branch index");
  std::vector<const Computation*> branches;
  if (instruction.HasAttribute("branch_computations")) {
    for (const Computation* branch : instruction.GetComputations("branch_computations")) branches.push_back(branch);
  } else {
    branches = {&Called(instruction, "true_computation"), &Called(instruction, "false_computation")};
  }
  if (index.element_type == ElementType::kPred) {
    if (branches.size() != 2) {
      Fail(instruction, "a conditional on a pred takes 2 branches, got " + std::to_string(branches.size()));
    }
  } else if (index.element_type != ElementType::kS32) {
    Fail(instruction, "the branch index of conditional must be pred[] or s32[], got " + Str(index));
  }
  if (branches.empty()) Fail(instruction, "conditional has no branches");
  if (instruction.operand_count() != branches.size() + 1) {
    Fail(instruction, "conditional with " + std::to_string(branches.size()) + " branches takes " +
                          std::to_string(branches.size() + 1) + " operands, got " +
                          std::to_string(instruction.operand_count()));
  }
  const Shape result = RootShape(*branches[0]);
  for (std::size_t k = 0; k < branches.size(); ++k) {
    const std::string role = "branch " + std::to_string(k);
    CheckParameters(instruction, role, *branches[k], {Logical(instruction.operand(k + 1)->shape())});
    if (k > 0 && !SameShapeIgnoringLayout(result, RootShape(*branches[k]))) {
      Fail(instruction, "branch " + std::to_string(k) + " computation " + Quote(branches[k]->name()) + " returns " +
                            Str(RootShape(*branches[k])) + " but branch 0 " + Quote(branches[0]->name()) +
                            " returns " + Str(result));
    }
  }
  return result;
}

Shape InferCall(const Instruction& instruction) {
  // call (to_apply=) and fusion (calls=): the computation takes the operands and its root is the
  // result.
  const std::string_view attribute = instruction.HasAttribute("to_apply") ? "to_apply" : "calls";
  const Computation& callee = Called(instruction, attribute);
  CheckParameters(instruction, attribute, callee, OperandShapes(instruction));
  return RootShape(callee);
}

Shape InferAsync(const Instruction& instruction) {
  // async-start's result is ((operands...), result, context...): the context is the
  // implementation's (taken as written). -update passes the tuple on; -done yields element 1.
  switch (instruction.opcode()) {
    case Opcode::kAsyncStart: {
      const Shape& written = instruction.shape();
      if (!instruction.HasAttribute("calls") || !written.is_tuple || written.tuple_shapes.size() < 2) {
        return Written(instruction);
      }
      const Computation& callee = Called(instruction, "calls");
      CheckParameters(instruction, "calls", callee, OperandShapes(instruction));
      std::vector<Shape> elements = {Shape::Tuple(OperandShapes(instruction)), RootShape(callee)};
      for (std::size_t i = 2; i < written.tuple_shapes.size(); ++i) elements.push_back(Logical(written.tuple_shapes[i]));
      return Shape::Tuple(elements);
    }
    case Opcode::kAsyncUpdate:
      return Logical(instruction.operand(0)->shape());
    default: {
      const Shape& start = TupleOperand(instruction, 0);
      if (start.tuple_shapes.size() < 2) {
        Fail(instruction, "the operand " + Str(start) + " of async-done is not an async-start's (operands, result, ...)");
      }
      return Logical(start.tuple_shapes[1]);
    }
  }
}

}  // namespace tpusim::hlo::inference
