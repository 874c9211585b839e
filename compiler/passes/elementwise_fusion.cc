#include "compiler/passes/elementwise_fusion.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compiler/lower/array_view.h"
#include "compiler/lower/cost.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/host_offload.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

bool HeldInRegisters(const isa::Shape& shape) {
  return !shape.is_tuple && HeldDomain(shape.element_type).has_value();
}

// A scalar constant or a broadcast of a scalar (constant or not): recomputed in every group. Not a
// broadcast into host memory (host offload): that is a data-movement kernel of its own.
bool IsDuplicable(const hlo::Instruction& x) {
  if (!HeldInRegisters(x.shape()) || InHostMemory(x.shape())) return false;
  if (x.opcode() == Opcode::kConstant) return x.shape().rank() == 0 && x.literal() != nullptr;
  return x.opcode() == Opcode::kBroadcast && x.operand(0)->shape().rank() == 0 &&
         HeldInRegisters(x.operand(0)->shape());
}

// An iota the element-wise kernel computes in its registers (ExprNode::kIota), a 32-bit or bf16
// one: of rank >= 2, or of any rank under a broadcast into rank >= 2 (JAX's `arange(n)[None, :]`,
// the iota of the broadcast's shape along the dim the iota's goes to). Recomputed in every group
// that reads it, as a broadcast of a scalar is.
bool IsComputedIota(const hlo::Instruction& x) {
  if (x.shape().is_tuple || InHostMemory(x.shape())) return false;
  switch (x.shape().element_type) {
    case isa::ElementType::kS32: case isa::ElementType::kU32: case isa::ElementType::kF32: case isa::ElementType::kBF16:
      break;
    default:
      return false;
  }
  if (x.opcode() == Opcode::kIota) return true;  // rank 1 only under such a broadcast: the kernel checks
  return x.opcode() == Opcode::kBroadcast && x.operand_count() == 1 && x.operand(0)->opcode() == Opcode::kIota &&
         x.shape().rank() >= 2 && x.operand(0)->shape().element_type == x.shape().element_type;
}

// The iota a computed iota's values come from: itself, or its broadcast's operand.
const hlo::Instruction* IotaOf(const hlo::Instruction& x) { return x.opcode() == Opcode::kIota ? &x : x.operand(0); }

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
bool IsFusibleArrayBroadcast(const hlo::Instruction& x, const std::vector<int64_t>& consumer_dims) {
  if (x.opcode() != Opcode::kBroadcast || x.operand_count() != 1) return false;
  const isa::Shape& operand = x.operand(0)->shape();
  // A broadcast of a recomputed scalar is duplicable already; an operand of the full rank could
  // be computed inside the group itself. Both stay as they are.
  if (operand.is_tuple || operand.rank() == 0 || operand.rank() >= x.shape().rank() || !operand.layout ||
      !HeldInRegisters(x.shape()) || IsDuplicable(*x.operand(0))) {
    return false;
  }
  if (operand.element_type != x.shape().element_type || operand.layout->memory_space != isa::kMemorySpaceHbm) return false;
  return x.shape().dims == consumer_dims;
}

// A step of an array view (compiler/lower/array_view.h) over an array in HBM: below the view's
// top its dims need not be the consumer's.
bool IsFusibleArrayViewStep(const hlo::Instruction& x) {
  return IsArrayViewStep(x) && HeldInRegisters(x.shape()) && x.operand(0)->shape().layout &&
         !InHostMemory(x.operand(0)->shape());
}

// The top of an array view that a consumer of rank >= 2 reads: the element-wise kernel reads the
// box of the view's source with DMAs into its tiles, and neither the view nor the steps below it
// are written to HBM. A reshape, transpose or slice that is its operand's bytes or a range of them
// (IsAliasingReshape, IsAliasingTranspose, IsAliasingSlice) is read as a plain stream of them,
// which a kernel loops over (a view's DMAs differ per block), unless it tops a longer view.
bool IsFusibleArrayView(const hlo::Instruction& x) {
  if ((IsAliasingReshape(x) || IsAliasingTranspose(x) || IsAliasingSlice(x)) && !IsArrayViewStep(*x.operand(0))) {
    return false;
  }
  return IsFusibleArrayViewStep(x) && x.shape().rank() >= 2 && !InHostMemory(x.shape());
}

// Groups one operation may be computed in (producer duplication): recomputing a chain of
// element-wise operations in each consumer's kernel costs VPU work and re-reads its operands, but
// never writes the chain's result to HBM (MaxText's f32 logits: 4 GiB each for the convert and the
// subtraction of the maximum, read by three reduces and the loss gradient's kernel).
constexpr std::size_t kMaxDuplicates = 4;

}  // namespace

bool IsExpensive(const hlo::Instruction& x) {
  return IsTranscendental(x.opcode()) || x.opcode() == Opcode::kDivide || x.opcode() == Opcode::kRemainder;
}

namespace {

// A reduce that the reduce kernel lowers with its operand computed in the kernel (input fusion).
bool IsInputFusibleReduce(const hlo::Instruction& x) {
  if (x.opcode() != Opcode::kReduce || x.operand_count() != 2 || x.shape().is_tuple) return false;
  const isa::Shape& operand = x.operand(0)->shape();
  if (operand.is_tuple || operand.rank() < 2 || InHostMemory(operand) || InHostMemory(x.shape())) return false;
  // The reduce kernel's types; a unit reduce (only size-1 dims reduced) has a kernel of its own.
  switch (operand.element_type) {
    case isa::ElementType::kF32: case isa::ElementType::kBF16: case isa::ElementType::kS32: case isa::ElementType::kU32:
      break;
    default:
      return false;
  }
  for (int64_t d : x.GetIntList("dimensions")) {
    if (d >= 0 && d < operand.rank() && operand.dims[d] != 1) return true;
  }
  return false;
}

// (group root, iota): that group reads the iota from HBM, written by a kernel of its own, where
// computing it in registers too does not fit the group's kernel. Per group: an iota several
// kernels read (Llama's one-hot iota [1,8192,128256], 4.2 GB, which common subexpressions merged
// from the step's embedding lookup and its loss) is computed in registers by those that can, and
// written to HBM only for the others.
using IotaReads = std::set<std::pair<const hlo::Instruction*, const hlo::Instruction*>>;

// The groups, with input fusion into every reduce that allows it except those in `unfused`, row
// folds of every reduce that allows it except those in `unfolded`, and iotas computed in their
// readers' groups except the groups (by root) that `read_iotas` says read an iota from HBM.
std::vector<KernelGroup> Group(const std::vector<const hlo::Instruction*>& schedule,
                               const std::unordered_set<const hlo::Instruction*>& unfused,
                               const std::unordered_set<const hlo::Instruction*>& unfolded,
                               const IotaReads& read_iotas) {
  const auto duplicable = [&](const hlo::Instruction& x) { return IsDuplicable(x) || IsComputedIota(x); };
  // Whether the group rooted at `group` reads computed iota x from HBM instead of computing it.
  const auto reads_iota = [&](const hlo::Instruction* group, const hlo::Instruction& x) {
    return IsComputedIota(x) && read_iotas.contains({group, IotaOf(x)});
  };
  const auto fusing_reduce = [&](const hlo::Instruction& x) { return IsInputFusibleReduce(x) && !unfused.contains(&x); };
  std::unordered_map<const hlo::Instruction*, std::size_t> position;
  std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>> users;
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    position[schedule[i]] = i;
    for (const hlo::Instruction* operand : schedule[i]->operands()) users[operand].push_back(schedule[i]);
  }
  const hlo::Instruction* root = schedule.empty() ? nullptr : schedule.back()->parent()->root();
  // Row statistics broadcast back along their rows (RowFoldReduce): the reduce can be computed in
  // its consumer's kernel where every user of it is such a broadcast (else its result goes to HBM
  // anyway, and the broadcast reads it from there).
  const auto row_fold = [&](const hlo::Instruction& x) -> const hlo::Instruction* {
    const hlo::Instruction* reduce = RowFoldReduce(x);
    if (reduce == nullptr || unfolded.contains(reduce) || reduce == root || !OnlyRowFolded(*reduce, users[reduce])) {
      return nullptr;
    }
    return reduce;
  };

  // The groups each fusible operation is computed in, by their roots (sorted by position). Consumers
  // first, so a producer sees its users' groups. An operation whose users are in several groups
  // is computed in each (producer duplication), up to kMaxDuplicates groups.
  std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>> groups_of;
  const auto by_position = [&](const hlo::Instruction* a, const hlo::Instruction* b) {
    return position.at(a) < position.at(b);
  };
  for (auto it = schedule.rbegin(); it != schedule.rend(); ++it) {
    const hlo::Instruction* x = *it;
    // A row statistic's broadcast or reduce inside a consumer's group (joined below).
    const hlo::Instruction* folded = row_fold(*x);
    const bool in_consumer = groups_of.contains(x) && groups_of.at(x) != std::vector<const hlo::Instruction*>{x};
    const bool fold_broadcast = folded != nullptr && in_consumer;
    const bool reduce = fusing_reduce(*x) || (x->opcode() == Opcode::kReduce && in_consumer);
    // An array view read inside a consumer's group: the steps below it join that group too.
    const bool view = IsFusibleArrayViewStep(*x) && in_consumer;
    if (!IsFusibleOp(*x) && !reduce && !fold_broadcast && !view) continue;
    if (!groups_of.contains(x)) groups_of[x] = {x};
    // What x computes element by element: its own elements, or a reduce's operand's.
    const std::vector<int64_t>& dims = reduce ? x->operand(0)->shape().dims : x->shape().dims;
    const std::size_t fused_operands = reduce || fold_broadcast || view ? 1 : x->operand_count();
    for (std::size_t i = 0; i < fused_operands; ++i) {
      const hlo::Instruction* operand = x->operand(i);
      if (groups_of.contains(operand) || operand == root) continue;
      // A row fold's reduce joins its broadcasts' group: it is computed there, strip by strip.
      const bool fold_reduce = fold_broadcast && operand == folded;
      if (view) {
        if (!IsFusibleArrayViewStep(*operand)) continue;  // the view's source: read from HBM
      } else {
        if (!fold_reduce && !IsFusibleOp(*operand) && !IsFusibleArrayBroadcast(*operand, dims) &&
            !IsFusibleArrayView(*operand)) {
          continue;
        }
        if (!fold_reduce && operand->shape().dims != dims) continue;
      }
      // Every user must read it element for element inside a group: the union of their groups.
      std::vector<const hlo::Instruction*> union_of_groups;
      bool all_inside = true;
      for (const hlo::Instruction* u : users[operand]) {
        const auto g = groups_of.find(u);
        // A fused reduce reads its operand element for element, its init from HBM; a broadcast of
        // an array reads its operand from HBM into every block (IsFusibleArrayBroadcast).
        // An array view reads a box of its source from HBM: only a step of the view may join it.
        const bool element_for_element = (!fusing_reduce(*u) || (u->operand(0) == operand && u->operand(1) != operand)) &&
                                         !(u->opcode() == Opcode::kBroadcast && !IsDuplicable(*u) && !fold_reduce) &&
                                         !(IsArrayViewStep(*u) && !IsArrayViewStep(*operand));
        if (g == groups_of.end() || !element_for_element) {
          all_inside = false;
          break;
        }
        union_of_groups.insert(union_of_groups.end(), g->second.begin(), g->second.end());
      }
      std::sort(union_of_groups.begin(), union_of_groups.end(), by_position);
      union_of_groups.erase(std::unique(union_of_groups.begin(), union_of_groups.end()), union_of_groups.end());
      const bool duplicate = union_of_groups.size() > 1;
      // A row fold is not duplicated: each copy would read its rows again.
      if (all_inside && (!duplicate || (union_of_groups.size() <= kMaxDuplicates && !IsExpensive(*operand) && !fold_reduce))) {
        groups_of[operand] = union_of_groups;
      }
    }
  }

  // A reduce that fused nothing is a plain reduce kernel, reading its operands from HBM.
  std::unordered_set<const hlo::Instruction*> fused_something;
  for (const auto& [x, groups] : groups_of) {
    for (const hlo::Instruction* group : groups) {
      if (group != x) fused_something.insert(group);
    }
  }
  for (auto it = groups_of.begin(); it != groups_of.end();) {
    const bool own_group = it->second == std::vector<const hlo::Instruction*>{it->first};
    const bool lone_reduce = fusing_reduce(*it->first) && own_group && !fused_something.contains(it->first);
    it = lone_reduce ? groups_of.erase(it) : std::next(it);
  }

  // Members: the fused operations, plus the duplicable instructions they read (transitively).
  std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>> members;
  for (const hlo::Instruction* x : schedule) {
    const auto g = groups_of.find(x);
    if (g == groups_of.end()) continue;
    for (const hlo::Instruction* group : g->second) members[group].push_back(x);
  }
  // Duplicable instructions read by something outside every group, or the root, need a kernel.
  std::unordered_set<const hlo::Instruction*> own_kernel;
  for (const hlo::Instruction* x : schedule) {
    if (!duplicable(*x) || x->opcode() == Opcode::kConstant) continue;
    bool outside = x == root;
    for (const hlo::Instruction* u : users[x]) {
      // A fused reduce reads its init from HBM.
      const bool read_inside = groups_of.contains(u) && !(u->opcode() == Opcode::kReduce && u->operand(1) == x);
      if (!read_inside && !duplicable(*u)) outside = true;
    }
    if (outside) own_kernel.insert(x);
  }
  for (const hlo::Instruction* x : own_kernel) members[x].push_back(x);
  // Everything else that computes something is a kernel of its own.
  for (const hlo::Instruction* x : schedule) {
    if (groups_of.contains(x) || duplicable(*x) || x->opcode() == Opcode::kParameter ||
        x->opcode() == Opcode::kConstant || IsAliasingInstruction(*x)) {
      continue;
    }
    members[x].push_back(x);
  }

  // The groups of `members` (root -> the instructions computed in it), each with the
  // recomputed instructions its members read pulled in.
  const auto build = [&](std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>> members) {
    std::vector<KernelGroup> groups;
    for (auto& [group_root, list] : members) {
      KernelGroup group;
      group.root = group_root;
      std::unordered_set<const hlo::Instruction*> inside(list.begin(), list.end());
      // Pull in the duplicable instructions the members read (not into kernels of other kinds; a
      // fused reduce's own operands, its init, stay operands).
      const bool reduce = fusing_reduce(*group_root) && list.size() > 1;
      const bool elementwise = IsFusibleOp(*group_root) || duplicable(*group_root) || reduce;
      for (std::size_t i = 0; i < list.size() && elementwise; ++i) {
        if (list[i] == group_root && reduce) continue;
        for (const hlo::Instruction* operand : list[i]->operands()) {
          if (duplicable(*operand) && !reads_iota(group_root, *operand) && !inside.contains(operand)) {
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
      if (reduce) {
        // The reduce kernel reads its init from HBM even where a member recomputes the same value.
        group.operands.push_back(group_root->operand(1));
        seen.insert(group_root->operand(1));
      }
      for (const hlo::Instruction* member : group.members) {
        for (const hlo::Instruction* operand : member->operands()) {
          if (!inside.contains(operand) && seen.insert(operand).second) group.operands.push_back(operand);
        }
      }
      groups.push_back(std::move(group));
    }
    return groups;
  };
  std::vector<KernelGroup> groups = build(members);
  // A recomputed instruction that a group reads from HBM after all (an iota the group cannot
  // hold, itself or as the source of a broadcast it loads) is written by a kernel of its own,
  // which computes it and what it is computed from.
  std::unordered_set<const hlo::Instruction*> roots;
  for (const KernelGroup& group : groups) roots.insert(group.root);
  bool written = false;
  for (const KernelGroup& group : groups) {
    for (const hlo::Instruction* operand : group.operands) {
      if (!duplicable(*operand) || operand->opcode() == Opcode::kConstant || !roots.insert(operand).second) continue;
      members[operand].push_back(operand);
      written = true;
    }
  }
  if (written) groups = build(members);
  std::sort(groups.begin(), groups.end(), [&](const KernelGroup& a, const KernelGroup& b) {
    return position.at(a.root) < position.at(b.root);
  });
  return groups;
}

}  // namespace

std::vector<KernelGroup> FuseElementwise(const std::vector<const hlo::Instruction*>& schedule,
                                         const std::function<bool(const KernelGroup&)>& fused_reduce_fits) {
  // A group with a reduce that would not lower (VMEM, registers) goes without it: its row folds
  // first (their reduces then have kernels of their own, their results read from HBM), else its
  // root reduce, which then reads its operand from HBM while its producers group without it.
  // Each round takes at least one reduce or iota out of a group.
  std::unordered_set<const hlo::Instruction*> unfused;
  std::unordered_set<const hlo::Instruction*> unfolded;
  IotaReads read_iotas;
  while (true) {
    std::vector<KernelGroup> groups = Group(schedule, unfused, unfolded, read_iotas);
    bool changed = false;
    for (const KernelGroup& group : groups) {
      std::vector<const hlo::Instruction*> row_folds;
      std::vector<const hlo::Instruction*> iotas;
      for (const hlo::Instruction* member : group.members) {
        if (member != group.root && member->opcode() == Opcode::kReduce) row_folds.push_back(member);
        if (member->opcode() == Opcode::kIota) iotas.push_back(member);
      }
      const bool root_reduce = group.root->opcode() == Opcode::kReduce;
      const bool asks = root_reduce || !row_folds.empty() || !iotas.empty();
      if (!group.fused() || !asks || !fused_reduce_fits || fused_reduce_fits(group)) continue;
      if (!row_folds.empty()) {
        unfolded.insert(row_folds.begin(), row_folds.end());
      } else if (!iotas.empty()) {
        for (const hlo::Instruction* iota : iotas) read_iotas.insert({group.root, iota});
      } else {
        unfused.insert(group.root);
      }
      changed = true;
    }
    if (!changed) return groups;
  }
}

}  // namespace tpusim::compiler
