#include "compiler/passes/elementwise_fusion.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/host_offload.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

bool HeldInRegisters(const isa::Shape& shape) {
  if (shape.is_tuple) return false;
  switch (shape.element_type) {
    case isa::ElementType::kF32: case isa::ElementType::kBF16: case isa::ElementType::kS32:
    case isa::ElementType::kU32: case isa::ElementType::kPred: case isa::ElementType::kS8:
    case isa::ElementType::kU8:
      return true;
    default:
      return false;
  }
}

// A scalar constant or a broadcast of a scalar (constant or not): recomputed in every group. Not a
// broadcast into host memory (host offload): that is a data-movement kernel of its own.
bool IsDuplicable(const hlo::Instruction& x) {
  if (!HeldInRegisters(x.shape()) || InHostMemory(x.shape())) return false;
  if (x.opcode() == Opcode::kConstant) return x.shape().rank() == 0 && x.literal() != nullptr;
  return x.opcode() == Opcode::kBroadcast && x.operand(0)->shape().rank() == 0 &&
         HeldInRegisters(x.operand(0)->shape());
}

bool IsFusibleOp(const hlo::Instruction& x) {
  if (!IsElementwiseOpcode(x.opcode()) || !HeldInRegisters(x.shape())) return false;
  for (const hlo::Instruction* operand : x.operands()) {
    if (!HeldInRegisters(operand->shape())) return false;
  }
  return true;
}

// A broadcast of an array (not a scalar) into `consumer`'s dims: the element-wise kernel loads its
// operand from HBM straight into each block's tiles in the group's shape (replicating DMAs), so
// the broadcast array is never written (so its own layout does not matter). The operand has a lower
// rank than the result, so the result has rank >= 2: the tiled layouts the kernels stream.
bool IsFusibleArrayBroadcast(const hlo::Instruction& x, const hlo::Instruction& consumer) {
  if (x.opcode() != Opcode::kBroadcast || x.operand_count() != 1) return false;
  const isa::Shape& operand = x.operand(0)->shape();
  // A broadcast of a recomputed scalar is duplicable already; an operand of the full rank could
  // be computed inside the group itself. Both stay as they are.
  if (operand.is_tuple || operand.rank() == 0 || operand.rank() >= x.shape().rank() || !operand.layout ||
      !HeldInRegisters(x.shape()) || IsDuplicable(*x.operand(0))) {
    return false;
  }
  if (operand.element_type != x.shape().element_type || operand.layout->memory_space != isa::kMemorySpaceHbm) return false;
  return x.shape().dims == consumer.shape().dims;
}

}  // namespace

std::vector<KernelGroup> FuseElementwise(const std::vector<const hlo::Instruction*>& schedule) {
  std::unordered_map<const hlo::Instruction*, std::size_t> position;
  std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>> users;
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    position[schedule[i]] = i;
    for (const hlo::Instruction* operand : schedule[i]->operands()) users[operand].push_back(schedule[i]);
  }
  const hlo::Instruction* root = schedule.empty() ? nullptr : schedule.back()->parent()->root();

  // Group of each fusible operation: its root. Consumers first, so a producer sees its users'
  // groups.
  std::unordered_map<const hlo::Instruction*, const hlo::Instruction*> group_of;
  for (auto it = schedule.rbegin(); it != schedule.rend(); ++it) {
    const hlo::Instruction* x = *it;
    if (!IsFusibleOp(*x)) continue;
    if (!group_of.contains(x)) group_of[x] = x;
    const hlo::Instruction* group = group_of.at(x);
    for (const hlo::Instruction* operand : x->operands()) {
      if (group_of.contains(operand) || operand == root) continue;
      if (!IsFusibleOp(*operand) && !IsFusibleArrayBroadcast(*operand, *x)) continue;
      if (operand->shape().dims != x->shape().dims) continue;
      const auto& operand_users = users[operand];
      const bool all_inside = std::all_of(operand_users.begin(), operand_users.end(), [&](const hlo::Instruction* u) {
        const auto g = group_of.find(u);
        return g != group_of.end() && g->second == group;
      });
      if (all_inside) group_of[operand] = group;
    }
  }

  // Members: the fused operations, plus the duplicable instructions they read (transitively).
  std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>> members;
  for (const hlo::Instruction* x : schedule) {
    if (group_of.contains(x)) members[group_of.at(x)].push_back(x);
  }
  // Duplicable instructions read by something outside every group, or the root, need a kernel.
  std::unordered_set<const hlo::Instruction*> own_kernel;
  for (const hlo::Instruction* x : schedule) {
    if (!IsDuplicable(*x) || x->opcode() == Opcode::kConstant) continue;
    bool outside = x == root;
    for (const hlo::Instruction* u : users[x]) {
      if (!group_of.contains(u) && !(IsDuplicable(*u))) outside = true;
    }
    if (outside) own_kernel.insert(x);
  }
  for (const hlo::Instruction* x : own_kernel) members[x].push_back(x);
  // Everything else that computes something is a kernel of its own.
  for (const hlo::Instruction* x : schedule) {
    if (group_of.contains(x) || IsDuplicable(*x) || x->opcode() == Opcode::kParameter ||
        x->opcode() == Opcode::kConstant || IsAliasingInstruction(*x)) {
      continue;
    }
    members[x].push_back(x);
  }

  std::vector<KernelGroup> groups;
  for (auto& [group_root, list] : members) {
    KernelGroup group;
    group.root = group_root;
    std::unordered_set<const hlo::Instruction*> inside(list.begin(), list.end());
    // Pull in the duplicable instructions the members read (not into kernels of other kinds).
    const bool elementwise = IsFusibleOp(*group_root) || IsDuplicable(*group_root);
    for (std::size_t i = 0; i < list.size() && elementwise; ++i) {
      for (const hlo::Instruction* operand : list[i]->operands()) {
        if (IsDuplicable(*operand) && !inside.contains(operand)) {
          inside.insert(operand);
          list.push_back(operand);
        }
      }
    }
    std::sort(list.begin(), list.end(), [&](const hlo::Instruction* a, const hlo::Instruction* b) {
      return position.at(a) < position.at(b);
    });
    group.members = list;
    std::unordered_set<const hlo::Instruction*> seen;
    for (const hlo::Instruction* member : group.members) {
      for (const hlo::Instruction* operand : member->operands()) {
        if (!inside.contains(operand) && seen.insert(operand).second) group.operands.push_back(operand);
      }
    }
    groups.push_back(std::move(group));
  }
  std::sort(groups.begin(), groups.end(), [&](const KernelGroup& a, const KernelGroup& b) {
    return position.at(a.root) < position.at(b.root);
  });
  return groups;
}

}  // namespace tpusim::compiler
