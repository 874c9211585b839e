#include "compiler/lower/while_state.h"

#include <optional>
#include <set>
#include <unordered_set>
#include <utility>

#include "compiler/passes/tuple_leaves.h"
#include "isa/element_type.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;
using LeafRange = std::pair<std::size_t, std::size_t>;  // [begin, end)

// The leaves of the computation's parameter that `x` is, where it is the parameter or a chain of
// get-tuple-elements from it.
std::optional<LeafRange> ParameterLeaves(const Instruction& x) {
  if (x.opcode() == Opcode::kParameter) return LeafRange{0, LeafCount(x.shape())};
  if (x.opcode() != Opcode::kGetTupleElement) return std::nullopt;
  const std::optional<LeafRange> tuple = ParameterLeaves(*x.operand(0));
  if (!tuple) return std::nullopt;
  const LeafRange element = ElementLeafRange(x.operand(0)->shape(), x.GetInt("index"));
  return LeafRange{tuple->first + element.first, tuple->first + element.second};
}

// The parameter's leaves that `value` is computed from.
std::set<std::size_t> LeavesRead(const Instruction& value) {
  std::set<std::size_t> leaves;
  std::unordered_set<const Instruction*> seen{&value};
  std::vector<const Instruction*> stack{&value};
  while (!stack.empty()) {
    const Instruction* x = stack.back();
    stack.pop_back();
    if (const std::optional<LeafRange> range = ParameterLeaves(*x)) {
      for (std::size_t leaf = range->first; leaf < range->second; ++leaf) leaves.insert(leaf);
      continue;
    }
    for (const Instruction* operand : x->operands()) {
      if (seen.insert(operand).second) stack.push_back(operand);
    }
  }
  return leaves;
}

// What the leaves of `value`, leaves `first`.. of the body's result, are computed from: a tuple
// instruction's elements each on their own, anything else all from what it reads.
void AssignReads(const Instruction& value, std::size_t first, std::vector<std::set<std::size_t>>& reads) {
  if (value.opcode() == Opcode::kTuple) {
    for (int64_t e = 0; e < static_cast<int64_t>(value.operand_count()); ++e) {
      AssignReads(*value.operand(e), first + ElementFirstLeaf(value.shape(), e), reads);
    }
    return;
  }
  const std::set<std::size_t> value_reads = LeavesRead(value);
  for (std::size_t leaf = first; leaf < first + LeafCount(value.shape()); ++leaf) reads.at(leaf) = value_reads;
}

// The value of a scalar integer constant.
std::optional<int64_t> IntegerScalarConstant(const Instruction& x) {
  if (x.opcode() != Opcode::kConstant || x.shape().is_tuple || x.shape().rank() != 0 || x.literal() == nullptr ||
      !isa::IsInteger(x.shape().element_type)) {
    return std::nullopt;
  }
  return x.literal()->GetInt(0);
}

// The one leaf of the parameter that a scalar integer `x` is.
std::optional<std::size_t> ScalarParameterLeaf(const Instruction& x) {
  if (x.shape().is_tuple || x.shape().rank() != 0 || !isa::IsInteger(x.shape().element_type)) return std::nullopt;
  const std::optional<LeafRange> range = ParameterLeaves(x);
  if (!range || range->second != range->first + 1) return std::nullopt;
  return range->first;
}

// The instruction of the body's result that computes leaf `leaf`, through tuple instructions.
const Instruction* LeafValue(const Instruction& value, std::size_t leaf) {
  if (value.opcode() != Opcode::kTuple) return LeafCount(value.shape()) == 1 && leaf == 0 ? &value : nullptr;
  for (int64_t e = 0; e < static_cast<int64_t>(value.operand_count()); ++e) {
    const LeafRange range = ElementLeafRange(value.shape(), e);
    if (leaf >= range.first && leaf < range.second) return LeafValue(*value.operand(e), leaf - range.first);
  }
  return nullptr;
}

// The direction that compares the same way with the operands swapped (K < c is c > K).
std::string Mirrored(const std::string& direction) {
  if (direction == "LT") return "GT";
  if (direction == "GT") return "LT";
  if (direction == "LE") return "GE";
  if (direction == "GE") return "LE";
  return direction;  // EQ, NE
}

}  // namespace

std::optional<WhileCounter> FindWhileCounter(const hlo::Instruction& loop) {
  const Instruction& compare = *loop.GetComputation("condition")->root();
  if (compare.opcode() != Opcode::kCompare) return std::nullopt;
  WhileCounter counter;
  counter.compare = compare.GetIdentifier("direction");
  std::optional<std::size_t> leaf = ScalarParameterLeaf(*compare.operand(0));
  std::optional<int64_t> bound = IntegerScalarConstant(*compare.operand(1));
  if (!leaf || !bound) {
    leaf = ScalarParameterLeaf(*compare.operand(1));
    bound = IntegerScalarConstant(*compare.operand(0));
    counter.compare = Mirrored(counter.compare);
  }
  if (!leaf || !bound) return std::nullopt;
  counter.leaf = *leaf;
  counter.bound = *bound;
  counter.type = compare.operand(0)->shape().element_type;
  const Instruction* next = LeafValue(*loop.GetComputation("body")->root(), counter.leaf);
  if (next == nullptr || (next->opcode() != Opcode::kAdd && next->opcode() != Opcode::kSubtract)) return std::nullopt;
  for (int64_t side = 0; side < 2; ++side) {
    const std::optional<std::size_t> read = ScalarParameterLeaf(*next->operand(side));
    const std::optional<int64_t> step = IntegerScalarConstant(*next->operand(1 - side));
    if (read != counter.leaf || !step || (side == 1 && next->opcode() == Opcode::kSubtract)) continue;
    // -S wraps as the hardware's subtract does (two's complement in the type's width).
    counter.step = next->opcode() == Opcode::kSubtract ? static_cast<int64_t>(0 - static_cast<uint64_t>(*step)) : *step;
    return counter;
  }
  return std::nullopt;
}

std::vector<std::size_t> WhileEndingLeaves(const hlo::Instruction& loop) {
  const Instruction& condition_root = *loop.GetComputation("condition")->root();
  const Instruction& body_root = *loop.GetComputation("body")->root();
  // What each leaf of the next state is computed from.
  std::vector<std::set<std::size_t>> reads(LeafCount(loop.shape()));
  AssignReads(body_root, 0, reads);
  std::set<std::size_t> deciding = LeavesRead(condition_root);
  std::vector<std::size_t> pending(deciding.begin(), deciding.end());
  while (!pending.empty()) {
    const std::size_t leaf = pending.back();
    pending.pop_back();
    for (std::size_t source : reads.at(leaf)) {
      if (deciding.insert(source).second) pending.push_back(source);
    }
  }
  return {deciding.begin(), deciding.end()};
}

}  // namespace tpusim::compiler
