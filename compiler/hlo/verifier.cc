#include "compiler/hlo/verifier.h"

#include <string>
#include <unordered_set>

#include "compiler/hlo/shape_inference.h"
#include "isa/error.h"

namespace tpusim::hlo {
namespace {

std::string Quote(std::string_view name) { return "'" + std::string(name) + "'"; }

// "file: computation 'name'" (with the computation's line:col when known).
std::string DescribeComputation(const Module& module, const Computation& computation) {
  std::string where = FormatLocation(module.source_name(), computation.location());
  if (!where.empty()) where += ": ";
  return where + "computation " + Quote(computation.name());
}

// What an inferred shape was inferred from, for the mismatch message.
std::string InferredFrom(const Instruction& instruction) {
  switch (instruction.opcode()) {
    case Opcode::kParameter:
      return "the entry_computation_layout";
    case Opcode::kConstant:
      return "its literal";
    case Opcode::kCall: case Opcode::kFusion: {
      const Computation* callee =
          instruction.GetComputation(instruction.HasAttribute("to_apply") ? "to_apply" : "calls");
      return "the root of " + Quote(callee->name());
    }
    case Opcode::kConditional: {
      const Computation* first = instruction.HasAttribute("branch_computations")
                                     ? instruction.GetComputations("branch_computations").front()
                                     : instruction.GetComputation("true_computation");
      return "the root of branch 0 " + Quote(first->name());
    }
    case Opcode::kGetTupleElement:
      return "element " + std::to_string(instruction.GetInt("index")) + " of " +
             ShapeToStringWithoutLayout(instruction.operand(0)->shape());
    default:
      break;
  }
  // opcode(operand shapes), the list cut short for long operand lists.
  constexpr std::size_t kMaxListed = 4;
  std::string text = std::string(OpcodeName(instruction.opcode())) + "(";
  for (std::size_t i = 0; i < instruction.operand_count(); ++i) {
    if (i == kMaxListed) {
      text += ", ... " + std::to_string(instruction.operand_count() - kMaxListed) + " more";
      break;
    }
    if (i > 0) text += ", ";
    text += ShapeToStringWithoutLayout(instruction.operand(i)->shape());
  }
  return text + ")";
}

void VerifyStructure(const Module& module, const Computation& computation) {
  const std::string where = DescribeComputation(module, computation);
  if (computation.instructions().empty()) throw Error(where + " has no instructions");
  if (!computation.root()) throw Error(where + " has no root");
  if (computation.root()->parent() != &computation) {
    throw Error(where + ": its root " + Quote(computation.root()->name()) + " belongs to another computation");
  }
  std::size_t parameter_count = 0;
  for (const auto& instruction : computation.instructions()) {
    if (instruction->opcode() == Opcode::kParameter) ++parameter_count;
  }
  const auto& parameters = computation.parameters();
  if (parameters.size() != parameter_count) {
    throw Error(where + " has " + std::to_string(parameter_count) + " parameter instructions but " +
                std::to_string(parameters.size()) + " numbered parameters");
  }
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i] || parameters[i]->parameter_number() != static_cast<int64_t>(i)) {
      throw Error(where + ": its parameters are not numbered 0.." + std::to_string(parameters.size() - 1) +
                  " (parameter(" + std::to_string(i) + ") is missing or repeated)");
    }
  }
  // Operands come before their users, in the same computation: the text is in dataflow order.
  std::unordered_set<const Instruction*> defined;
  defined.reserve(computation.instruction_count());
  for (const auto& instruction : computation.instructions()) {
    for (const Instruction* operand : instruction->operands()) {
      if (operand->parent() != &computation) {
        throw Error(instruction->Describe() + ": operand " + Quote(operand->name()) + " belongs to another computation");
      }
      if (!defined.contains(operand)) {
        throw Error(instruction->Describe() + ": operand " + Quote(operand->name()) + " is used before its definition");
      }
    }
    defined.insert(instruction.get());
  }
}

void VerifyShape(const Instruction& instruction) {
  const isa::Shape inferred = InferShape(instruction);
  if (SameShapeIgnoringLayout(inferred, instruction.shape())) return;
  throw Error(instruction.Describe() + ": expected shape " + ShapeToStringWithoutLayout(inferred) +
              " (inferred from " + InferredFrom(instruction) + "), written " +
              ShapeToStringWithoutLayout(instruction.shape()));
}

}  // namespace

void Verify(const Module& module) {
  if (!module.entry()) {
    throw Error((module.source_name().empty() ? "" : module.source_name() + ": ") + "module " +
                Quote(module.name()) + " has no entry computation");
  }
  for (const auto& computation : module.computations()) VerifyStructure(module, *computation);
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) VerifyShape(*instruction);
  }
}

}  // namespace tpusim::hlo
