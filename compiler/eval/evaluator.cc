#include "compiler/eval/evaluator.h"

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>

#include "compiler/eval/evaluator_impl.h"
#include "compiler/eval/literal_util.h"
#include "compiler/hlo/shape_inference.h"
#include "compiler/hlo/sort_key_pattern.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

using hlo::Computation;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

bool IsCommutative(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: case BinaryOp::kMultiply: case BinaryOp::kMaximum:
    case BinaryOp::kMinimum: case BinaryOp::kAnd: case BinaryOp::kOr: case BinaryOp::kXor:
      return true;
    default:
      return false;
  }
}

// `computation` is parameters plus a root that uses only parameters 0 and 1: the shape of a
// reducer or comparator the kernels can run natively.
bool IsParametersAndRoot(const Computation& computation) {
  for (const auto& instruction : computation.instructions()) {
    if (instruction.get() != computation.root() && instruction->opcode() != Opcode::kParameter) {
      return false;
    }
  }
  return computation.root()->opcode() != Opcode::kParameter;
}

bool UsesFirstTwoParameters(const Instruction& root, bool either_order) {
  if (root.operand_count() != 2) return false;
  const int64_t a = root.operand(0)->parameter_number();
  const int64_t b = root.operand(1)->parameter_number();
  return (a == 0 && b == 1) || (either_order && a == 1 && b == 0);
}

Plan MakePlan(const Computation& computation) {
  Plan plan;
  std::unordered_map<const Instruction*, std::size_t> slot;
  const auto& instructions = computation.instructions();
  plan.use_counts.assign(instructions.size(), 0);
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    slot[instructions[i].get()] = i;
    std::vector<std::size_t> operands;
    for (const Instruction* operand : instructions[i]->operands()) {
      const std::size_t s = slot.at(operand);  // the parser guarantees operands come first
      operands.push_back(s);
      ++plan.use_counts[s];
    }
    plan.operand_slots.push_back(std::move(operands));
    if (instructions[i].get() == computation.root()) plan.root_slot = i;
  }
  return plan;
}

// A comparator the kernels can run natively: compare(p0, p1), or compare(canon(p0), canon(p1))
// as JAX writes sort comparators. Other parameters may exist but must not be used.
std::optional<CompareSpec> KnownComparison(const Computation& computation) {
  const Instruction& root = *computation.root();
  if (root.opcode() != Opcode::kCompare) return std::nullopt;
  const Instruction* lhs = root.operand(0);
  const Instruction* rhs = root.operand(1);
  bool canonical = false;
  if (lhs->opcode() != Opcode::kParameter) {
    lhs = hlo::CanonicalizedSortKey(*lhs);
    rhs = hlo::CanonicalizedSortKey(*rhs);
    canonical = true;
    if (!lhs || !rhs) return std::nullopt;
  }
  if (lhs->parameter_number() != 0 || rhs->parameter_number() != 1) return std::nullopt;
  const auto direction = ParseCompareDirection(root.GetIdentifier("direction"));
  std::optional<CompareType> type = DefaultCompareType(lhs->shape().element_type);
  if (root.HasAttribute("type")) type = ParseCompareType(root.GetIdentifier("type"));
  if (!direction || !type) return std::nullopt;
  return CompareSpec{*direction, *type, canonical};
}

}  // namespace

void FailAt(const Instruction& instruction, const std::string& message) {
  throw Error(instruction.Describe() + ": " + message);
}

EvaluatorImpl::EvaluatorImpl(const hlo::Module& module, EvaluatorOptions options)
    : module_(module),
      options_(std::move(options)),
      num_partitions_(module.num_partitions()),
      device_count_(module.replica_count() * module.num_partitions()),
      rng_(options_.seed) {}

DeviceValues EvaluatorImpl::Run(const Computation& computation, const std::vector<DeviceValues>& args,
                                int64_t devices) {
  auto found = plans_.find(&computation);
  if (found == plans_.end()) found = plans_.emplace(&computation, MakePlan(computation)).first;
  const Plan& plan = found->second;

  const auto& instructions = computation.instructions();
  std::vector<DeviceValues> values(instructions.size());
  std::vector<int64_t> remaining = plan.use_counts;
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& instruction = *instructions[i];
    if (instruction.opcode() == Opcode::kParameter) {
      values[i] = args.at(instruction.parameter_number());
      continue;
    }
    std::vector<const DeviceValues*> operands;
    for (std::size_t s : plan.operand_slots[i]) operands.push_back(&values[s]);
    values[i] = EvaluateInstruction(instruction, operands, devices);
    for (std::size_t s : plan.operand_slots[i]) {
      if (--remaining[s] == 0 && s != plan.root_slot) DeviceValues().swap(values[s]);
    }
  }
  return std::move(values[plan.root_slot]);
}

DeviceValues EvaluatorImpl::EvaluateInstruction(const Instruction& instruction,
                                                const std::vector<const DeviceValues*>& operands,
                                                int64_t devices) {
  switch (instruction.opcode()) {
    case Opcode::kCall: case Opcode::kFusion: case Opcode::kWhile: case Opcode::kConditional:
    case Opcode::kAsyncStart: case Opcode::kAsyncUpdate: case Opcode::kAsyncDone:
      return EvaluateControlFlow(instruction, operands, devices);
    case Opcode::kAllReduce: case Opcode::kAllReduceStart: case Opcode::kAllReduceDone:
    case Opcode::kAllGather: case Opcode::kAllGatherStart: case Opcode::kAllGatherDone:
    case Opcode::kReduceScatter: case Opcode::kAllToAll:
    case Opcode::kCollectivePermute: case Opcode::kCollectivePermuteStart:
    case Opcode::kCollectivePermuteDone:
      return EvaluateCollective(instruction, operands, devices);
    default:
      break;
  }
  DeviceValues results;
  std::vector<const Literal*> device_operands(operands.size());
  for (int64_t d = 0; d < devices; ++d) {
    for (std::size_t o = 0; o < operands.size(); ++o) device_operands[o] = &(*operands[o])[d];
    results.push_back(EvaluateOnDevice(instruction, device_operands, d));
  }
  return results;
}

DeviceValues EvaluatorImpl::EvaluateControlFlow(const Instruction& instruction,
                                                const std::vector<const DeviceValues*>& operands,
                                                int64_t devices) {
  std::vector<DeviceValues> args;
  for (const DeviceValues* operand : operands) args.push_back(*operand);
  switch (instruction.opcode()) {
    case Opcode::kCall:
      return Run(*instruction.GetComputation("to_apply"), args, devices);
    case Opcode::kFusion:
      return Run(*instruction.GetComputation("calls"), args, devices);
    case Opcode::kWhile:
      return EvaluateWhile(instruction, args.at(0), devices);
    case Opcode::kConditional: {
      std::vector<Computation*> branches;
      if (instruction.HasAttribute("branch_computations")) {
        branches = instruction.GetComputations("branch_computations");
      } else {
        branches = {instruction.GetComputation("true_computation"),
                    instruction.GetComputation("false_computation")};
      }
      // A pred selects true (branch 0) or false (branch 1); an s32 index out of range selects the
      // last branch (XLA's rule).
      auto branch_of = [&](const Literal& selector) -> std::size_t {
        if (selector.element_type() == isa::ElementType::kPred) return selector.GetInt(0) ? 0 : 1;
        const int64_t index = selector.GetInt(0);
        return index < 0 || index >= static_cast<int64_t>(branches.size()) ? branches.size() - 1
                                                                           : static_cast<std::size_t>(index);
      };
      const std::size_t branch = branch_of(args[0][0]);
      for (int64_t d = 1; d < devices; ++d) {
        if (branch_of(args[0][d]) != branch) {
          FailAt(instruction, "devices take different branches; the evaluator runs devices in lockstep");
        }
      }
      // Branch k takes operand k + 1 alone.
      std::vector<DeviceValues> branch_args;
      branch_args.push_back(std::move(args.at(branch + 1)));
      return Run(*branches[branch], branch_args, devices);
    }
    case Opcode::kAsyncStart: {
      // The async tuple: ((operands...), result, context...) with zeros for the context.
      const DeviceValues result = Run(*instruction.GetComputation("calls"), args, devices);
      DeviceValues starts;
      for (int64_t d = 0; d < devices; ++d) {
        Literal start(instruction.shape());
        std::vector<Literal>& parts = start.mutable_elements();
        std::vector<Literal> operand_values;
        for (const DeviceValues& arg : args) operand_values.push_back(arg[d]);
        parts.at(0) = Literal::Tuple(std::move(operand_values));
        parts.at(1) = result[d];
        starts.push_back(std::move(start));
      }
      return starts;
    }
    case Opcode::kAsyncUpdate:
      return args.at(0);
    case Opcode::kAsyncDone: {
      DeviceValues done;
      for (const Literal& start : args.at(0)) done.push_back(start.elements().at(1));
      return done;
    }
    default:
      FailAt(instruction, "not a control-flow op");
  }
}

DeviceValues EvaluatorImpl::EvaluateWhile(const Instruction& instruction, const DeviceValues& init,
                                          int64_t devices) {
  const Computation& condition = *instruction.GetComputation("condition");
  const Computation& body = *instruction.GetComputation("body");
  DeviceValues state = init;
  for (int64_t iteration = 0;; ++iteration) {
    const DeviceValues keep_going = Run(condition, {state}, devices);
    const bool go = keep_going[0].GetInt(0) != 0;
    for (int64_t d = 1; d < devices; ++d) {
      if ((keep_going[d].GetInt(0) != 0) != go) {
        FailAt(instruction, "devices disagree on the loop condition; the evaluator runs devices in lockstep");
      }
    }
    if (!go) return state;
    if (iteration >= options_.max_while_iterations) {
      FailAt(instruction, "the loop ran " + std::to_string(iteration) +
                              " iterations, more than the evaluator's limit");
    }
    state = Run(body, {state}, devices);
  }
}

Reducer EvaluatorImpl::ReducerFor(const Computation& computation) {
  Reducer reducer = Reducer::Of(FunctionFor(computation));
  const Instruction& root = *computation.root();
  if (computation.parameters().size() == 2 && IsParametersAndRoot(computation)) {
    const auto op = ParseBinaryOp(hlo::OpcodeName(root.opcode()));
    if (op && UsesFirstTwoParameters(root, IsCommutative(*op)) && !root.shape().is_tuple) {
      reducer.known = op;
    }
  }
  return reducer;
}

Comparator EvaluatorImpl::ComparatorFor(const Computation& computation) {
  Comparator comparator = Comparator::Of(FunctionFor(computation));
  comparator.known = KnownComparison(computation);
  return comparator;
}

ScalarFunction EvaluatorImpl::FunctionFor(const Computation& computation) {
  return [this, &computation](std::span<const Literal> args) {
    std::vector<DeviceValues> device_args;
    device_args.reserve(args.size());
    for (const Literal& arg : args) device_args.push_back(DeviceValues{arg});
    return std::move(Run(computation, device_args, 1)[0]);
  };
}

EvaluationResult EvaluateModule(const hlo::Module& module, std::span<const Literal> arguments,
                                EvaluatorOptions options) {
  const Computation& entry = *module.entry();
  if (arguments.size() != entry.parameters().size()) {
    throw Error(module.source_name() + ": the entry computation '" + entry.name() + "' takes " +
                std::to_string(entry.parameters().size()) + " parameters, got " +
                std::to_string(arguments.size()) + " arguments");
  }
  EvaluatorImpl evaluator(module, std::move(options));
  std::vector<DeviceValues> args;
  for (std::size_t p = 0; p < arguments.size(); ++p) {
    const Instruction& parameter = *entry.parameters()[p];
    if (!hlo::SameShapeIgnoringLayout(arguments[p].shape(), parameter.shape())) {
      FailAt(parameter, "argument " + std::to_string(p) + " has shape " +
                            isa::ToString(arguments[p].shape()) + ", the parameter is " +
                            isa::ToString(parameter.shape()));
    }
    args.emplace_back(evaluator.device_count(), arguments[p]);
  }
  EvaluationResult result;
  result.device_results = evaluator.Run(entry, args, evaluator.device_count());
  result.outfeed = std::move(evaluator.outfeed());
  return result;
}

Literal Evaluate(const hlo::Module& module, std::span<const Literal> arguments,
                 EvaluatorOptions options) {
  return std::move(EvaluateModule(module, arguments, std::move(options)).device_results.at(0));
}

}  // namespace tpusim::eval
