// Dot output fusion: a dot whose every user is computed in one element-wise kernel group joins
// that group, and the dot kernel applies the group's operations to its sums as it reads them out
// (compiler/lower/dot_epilogue.h), as XLA's TPU pipeline fuses a dot with its element-wise
// consumers (bias, activation, convert) into one "convolution fusion": the dot's result is never
// written to HBM and read back (a dense layer's bias and relu were a kernel of their own, about
// a third of the layer's time).
//
// A convolution joins its consumers the same way (its epilogue in the MXU convolution kernel's
// stores, compiler/lower/conv_kernel.h).
//
// Runs after element-wise fusion, over its groups. The dot joins where it is a kernel of its own,
// not the computation's root, nothing else in the group reads its operands, and `fits(merged,
// consumers)` says so (compile.cc: the kernel lowers the merged group, output_fusion_trial.h's
// OutputFusionFits, and runs faster than the two kernels: OutputFusionPays). The merged
// group's operands are the dot's lhs and rhs, then the group's others.
#pragma once

#include <functional>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/passes/elementwise_fusion.h"

namespace tpusim::compiler {

// The dot of a dot output fusion group, or nullptr for any other group.
const hlo::Instruction* FusedDot(const KernelGroup& group);
// The convolution of a convolution output fusion group, or nullptr for any other group.
const hlo::Instruction* FusedConvolution(const KernelGroup& group);
// Either of them: the contraction whose epilogue the group is.
const hlo::Instruction* FusedContraction(const KernelGroup& group);

// `fits(merged, consumers)`: whether to make `merged` of the contraction and `consumers`, the
// element-wise group that holds its users.
std::vector<KernelGroup> FuseDotOutputs(
    std::vector<KernelGroup> groups, const std::vector<const hlo::Instruction*>& schedule,
    const std::function<bool(const KernelGroup& merged, const KernelGroup& consumers)>& fits);

}  // namespace tpusim::compiler
