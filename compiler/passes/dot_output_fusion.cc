#include "compiler/passes/dot_output_fusion.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "compiler/lower/elementwise_expr.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

// A group the element-wise kernel would lower whose members could be an epilogue: element-wise
// operations, constants and broadcasts (what of them an epilogue holds, BuildDotEpilogue says).
bool IsEpilogueCandidate(const KernelGroup& group) {
  if (group.root->shape().is_tuple || !IsElementwiseOpcode(group.root->opcode())) return false;
  return std::all_of(group.members.begin(), group.members.end(), [](const hlo::Instruction* member) {
    return IsElementwiseOpcode(member->opcode()) || member->opcode() == Opcode::kConstant ||
           member->opcode() == Opcode::kBroadcast;
  });
}

}  // namespace

namespace {

const hlo::Instruction* FusedOf(const KernelGroup& group, Opcode opcode) {
  if (!group.fused()) return nullptr;
  const auto found = std::find_if(group.members.begin(), group.members.end(),
                                  [&](const hlo::Instruction* member) { return member->opcode() == opcode; });
  return found == group.members.end() ? nullptr : *found;
}

}  // namespace

const hlo::Instruction* FusedDot(const KernelGroup& group) { return FusedOf(group, Opcode::kDot); }
const hlo::Instruction* FusedConvolution(const KernelGroup& group) { return FusedOf(group, Opcode::kConvolution); }
const hlo::Instruction* FusedContraction(const KernelGroup& group) {
  const hlo::Instruction* dot = FusedDot(group);
  return dot != nullptr ? dot : FusedConvolution(group);
}

std::vector<KernelGroup> FuseDotOutputs(
    std::vector<KernelGroup> groups, const std::vector<const hlo::Instruction*>& schedule,
    const std::function<bool(const KernelGroup& merged, const KernelGroup& consumers)>& fits) {
  if (schedule.empty()) return groups;
  std::unordered_map<const hlo::Instruction*, std::size_t> position;
  std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>> users;
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    position[schedule[i]] = i;
    for (const hlo::Instruction* operand : schedule[i]->operands()) users[operand].push_back(schedule[i]);
  }
  const hlo::Instruction* root = schedule.back()->parent()->root();
  // Dots and convolutions that are kernels of their own.
  std::unordered_set<const hlo::Instruction*> lone_dots;
  for (const KernelGroup& group : groups) {
    const Opcode opcode = group.root->opcode();
    if (!group.fused() && (opcode == Opcode::kDot || opcode == Opcode::kConvolution)) lone_dots.insert(group.root);
  }
  std::unordered_set<const hlo::Instruction*> fused_dots;
  for (KernelGroup& group : groups) {
    if (!IsEpilogueCandidate(group)) continue;
    const std::unordered_set<const hlo::Instruction*> inside(group.members.begin(), group.members.end());
    for (const hlo::Instruction* dot : group.operands) {
      if (!lone_dots.contains(dot) || dot == root || dot->operand(0) == dot->operand(1)) continue;
      const auto& readers = users[dot];
      if (!std::all_of(readers.begin(), readers.end(), [&](const hlo::Instruction* u) { return inside.contains(u); })) {
        continue;
      }
      const auto& operands = group.operands;
      if (std::find(operands.begin(), operands.end(), dot->operand(0)) != operands.end() ||
          std::find(operands.begin(), operands.end(), dot->operand(1)) != operands.end()) {
        continue;
      }
      KernelGroup merged;
      merged.root = group.root;
      merged.members = group.members;
      merged.members.push_back(dot);
      std::sort(merged.members.begin(), merged.members.end(),
                [&](const hlo::Instruction* a, const hlo::Instruction* b) { return position.at(a) < position.at(b); });
      merged.operands = {dot->operand(0), dot->operand(1)};
      for (const hlo::Instruction* operand : operands) {
        if (operand != dot) merged.operands.push_back(operand);
      }
      if (!fits(merged, group)) continue;
      group = std::move(merged);
      fused_dots.insert(dot);
      break;
    }
  }
  std::erase_if(groups, [&](const KernelGroup& group) { return !group.fused() && fused_dots.contains(group.root); });
  return groups;
}

}  // namespace tpusim::compiler
