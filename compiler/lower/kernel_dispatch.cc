#include "compiler/lower/kernel_dispatch.h"

#include <algorithm>

#include "compiler/lower/collective_kernel.h"
#include "compiler/lower/conv_kernel.h"
#include "compiler/lower/data_movement_kernel.h"
#include "compiler/lower/dot_epilogue.h"
#include "compiler/lower/dot_general_kernel.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/lower/elementwise_kernel.h"
#include "compiler/lower/gather_kernel.h"
#include "compiler/lower/megacore.h"
#include "compiler/lower/reduce_kernel.h"
#include "compiler/lower/reduce_window_kernel.h"
#include "compiler/lower/scalar_kernel.h"
#include "compiler/lower/scatter_kernel.h"
#include "compiler/lower/sort_kernel.h"
#include "compiler/lower/topk_kernel.h"
#include "compiler/passes/dot_output_fusion.h"
#include "compiler/passes/host_offload.h"
#include "compiler/passes/unit_reduces.h"

namespace tpusim::compiler {

using hlo::Opcode;

// Whether the group is computed by the element-wise kernel: fused element-wise operations, a
// broadcast of a scalar, or a `fusion` instruction of the module.
bool IsElementwiseGroup(const KernelGroup& group) {
  const hlo::Instruction& root = *group.root;
  if (root.opcode() == Opcode::kReduce) return false;  // a reduce with its operand fused is a reduce kernel
  if (FusedContraction(group) != nullptr) return false;  // a dot or convolution with its epilogue
  return group.fused() || IsElementwiseOpcode(root.opcode()) || root.opcode() == Opcode::kFusion ||
         (root.opcode() == Opcode::kBroadcast && root.operand(0)->shape().rank() == 0);
}

namespace {

// Whether a kernel reads or writes host memory (host offload): the pass allows only byte movers
// there, and the data-movement kernels DMA them over PCIe.
bool TouchesHostMemory(const KernelContext& context) {
  const auto host = [](const DeviceBuffer* buffer) { return buffer != nullptr && buffer->in_host_memory(); };
  for (const auto& operand : context.operands) {
    if (std::any_of(operand.begin(), operand.end(), host)) return true;
  }
  return std::any_of(context.results.begin(), context.results.end(), host);
}

void EmitKernel(KernelContext& context) {
  const hlo::Instruction& instruction = context.instruction;
  if (TouchesHostMemory(context) || IsMoveToHost(instruction) || IsMoveToDevice(instruction)) {
    EmitDataMovementKernel(context);
    return;
  }
  if (IsCollectiveKernelOpcode(instruction.opcode())) {
    EmitCollectiveKernel(context);
    return;
  }
  if (IsScalarCoreGroup(context.group)) {
    EmitScalarKernel(context);
    return;
  }
  if (IsElementwiseGroup(context.group)) {
    EmitElementwiseKernel(context);
    return;
  }
  if (IsDataMovementOpcode(instruction.opcode())) {
    EmitDataMovementKernel(context);
    return;
  }
  // An output fusion is its dot's or convolution's kernel, with the epilogue.
  switch (ContractionOf(context).opcode()) {
    case Opcode::kDot:
      EmitGeneralDotKernel(context);
      return;
    case Opcode::kReduce:
      // What ExpandUnitReduces left: a reducer it cannot write out over arrays.
      if (IsUnitReduce(instruction)) {
        CannotLower(instruction, "it reduces no dim above size 1 with a reducer that is not element-wise (not lowered)");
      }
      EmitReduceKernel(context);
      return;
    case Opcode::kReduceWindow:
      EmitReduceWindowKernel(context);
      return;
    case Opcode::kSort:
      EmitSortKernel(context);
      return;
    case Opcode::kGather:
      EmitGatherKernel(context);
      return;
    case Opcode::kScatter:
      EmitScatterKernel(context);
      return;
    case Opcode::kConvolution:
      EmitConvolutionKernel(context);
      return;
    case Opcode::kTopK:
      EmitTopKKernel(context);
      return;
    default:
      break;
  }
  CannotLower(instruction, "no kernel lowers this operation yet");
}

// Megacore: the TensorCores a kernel splits over. Dot, element-wise and convolution kernels split
// their parallel work (rows or columns, blocks, image groups or channel chunks) where every core
// gets a share worth its fixed costs (DotCoreParts, ElementwiseCoreParts, ConvolutionCoreParts);
// the others run on core 0.
int CorePartsOf(const KernelContext& context) {
  const hlo::Instruction& instruction = context.instruction;
  if (isa::TensorCores(context.options.target) == 1 || TouchesHostMemory(context) ||
      IsMoveToHost(instruction) || IsMoveToDevice(instruction) || IsCollectiveKernelOpcode(instruction.opcode()) ||
      IsScalarCoreGroup(context.group)) {
    return 1;
  }
  if (IsElementwiseGroup(context.group)) return ElementwiseCoreParts(context);
  if (IsDataMovementOpcode(instruction.opcode())) return 1;
  const Opcode kernel = ContractionOf(context).opcode();  // an output fusion: its contraction's
  if (kernel == Opcode::kDot) return GeneralDotCoreParts(context);
  if (kernel == Opcode::kConvolution) return ConvolutionCoreParts(context);
  if (instruction.opcode() == Opcode::kReduce && !IsUnitReduce(instruction)) return ReduceCoreParts(context);
  return 1;
}

}  // namespace

void EmitKernelOnCores(KernelContext& context) {
  EmitOnCores(context.out, CorePartsOf(context), [&](const CorePart& part) {
    context.part = part;
    EmitKernel(context);
  });
}

}  // namespace tpusim::compiler
