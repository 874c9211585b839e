#include "compiler/lower/while_state.h"

#include <optional>
#include <set>
#include <unordered_set>
#include <utility>

#include "compiler/passes/tuple_leaves.h"

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

}  // namespace

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
