// Element-wise fusion: which instructions of the entry computation run as one kernel, so that
// chains of element-wise operations, broadcasts of scalars and converts do not round-trip through
// HBM (as XLA's loop fusion does). A group is a root and the instructions computed inside its
// kernel; everything else a member reads comes from HBM (the group's operands).
//
// Rules: an element-wise operation (compiler/lower/elementwise_expr.h's list) on types the VPU
// kernels hold (HeldDomain: f32, bf16, f16, s32, u32, s8, u8, pred) joins the group of its
// consumer when every user of it is in that group and it has the consumer's dims. Scalar
// constants and broadcasts of scalars are cheap to recompute, so they join every group that reads
// them (and get a kernel of their own only when something outside a group reads them). A
// broadcast of an array (rank >= 1, into rank >= 2, laid out in the consumer's dim order) joins
// its consumer's group like an element-wise operation: the kernel loads the broadcast's operand
// into its tiles with replicating DMAs, and the broadcast array never exists in HBM. An array view
// (compiler/lower/array_view.h: stride-1 slices and reshapes of size-1 dims, e.g. a dot's output
// split in halves) joins its readers' groups the same way, with the steps below it: the kernel
// reads the box of the view's source with DMAs, and its producer stays outside. Instructions
// written as `fusion` in the HLO are kernels already and are left alone. Groups come in schedule
// order of their roots.
#pragma once

#include <functional>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

struct KernelGroup {
  const hlo::Instruction* root = nullptr;
  std::vector<const hlo::Instruction*> members;   // schedule order, root last; {root} if alone
  std::vector<const hlo::Instruction*> operands;  // values read from outside, in first-use order
  bool fused() const { return members.size() > 1; }
};

// Groups over `schedule` (every instruction of the entry computation, operands first).
// Instructions that need no kernel (parameters, constants read only inside groups, tuples and
// other aliases) belong to no group.
// Input fusion: a reduce (one operand, a type the reduce kernel holds) takes the element-wise
// producers of its operand into its group, as XLA's input fusion does. Row folds: a reduce over
// the lanes whose every user broadcasts it back along its rows (RowFoldReduce: a softmax's
// maximum and sum, a layer norm's mean and variance) joins the group of those broadcasts'
// consumer with its own producers, so the consumer's kernel folds each strip's rows itself and
// the row statistic never goes to HBM (XLA fuses these reductions with their consumers too).
// Iotas of rank >= 2 (32-bit or bf16) are recomputed in every group that reads them, as
// broadcasts of scalars are: the element-wise kernel computes their values in registers
// (ExprNode::kIota), and the iota array is never written. Each of these only when
// `fused_reduce_fits(group)` (the kernel can lower it; null: always); a group that does not goes
// without its row folds, else without its iotas (it reads them from HBM, written by a kernel of
// their own; the other groups that read them still compute them), else without its root
// reduce's producers.
// Operations not duplicated, as XLA's instruction fusion does not duplicate its "expensive" ones:
// on the VPU they take many cycles per vector (the attention block's bf16 exponential, computed
// for two kernels, cost more than writing it once and reading it twice).
bool IsExpensive(const hlo::Instruction& x);

std::vector<KernelGroup> FuseElementwise(const std::vector<const hlo::Instruction*>& schedule,
                                         const std::function<bool(const KernelGroup&)>& fused_reduce_fits = nullptr);

}  // namespace tpusim::compiler
